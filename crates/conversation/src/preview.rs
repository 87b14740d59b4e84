//! Hear this voice: one short reply in the voice the settings form names, on a call of its own,
//! as a one-shot machine.
//!
//! Why a machine: when the reply is all heard, when the preview gives up, and what the form is
//! told are decisions, tested here in virtual time. The shell places the call the way every call
//! is placed (its one dialler, its one [`crate::DialFailure`]), feeds what the call and the audio
//! engine report, and carries what this says; it interprets nothing. The reply is out of band
//! (`conversation: "none"`): it joins no conversation, not even the preview call's own.

use std::collections::VecDeque;

use walkie_openai::{ClientEvent, Modality, ResponseConfig, ServerEvent};
use walkie_session::AudioChunk;
use walkie_session::turn::is_sounding;

/// What the model is asked to say.
pub const PREVIEW_INSTRUCTIONS: &str =
    "Say, in one short friendly sentence and nothing else, that this is how you sound.";
/// Once its reply is asked for, a preview ends by itself after this long, however it is going
/// (placing the call and hanging up are bounded by the call's own timeouts).
pub const LONGEST_PREVIEW_MS: u64 = 30_000;
/// Decoded call audio is 48 kHz mono.
const CALL_SAMPLES_PER_SECOND: f64 = 48_000.0;
/// The `event_id` the reply is asked for under.
pub const PREVIEW_EVENT_ID: &str = "walkie_voice_preview";

/// What the preview is told, with the caller's time (monotonic ms) beside it.
#[derive(Debug, Clone, PartialEq)]
pub enum PreviewInput {
    /// The call answered and its data channel is open: the reply is asked for.
    Answered,
    /// A data-channel message from the provider.
    ServerText(String),
    /// The audio engine decoded reply audio (48 kHz mono), which it plays from the first
    /// sound on.
    AssistantAudio(AudioChunk),
    /// The speaker's queue ran dry.
    Drained,
    /// The speaker could not be opened.
    SpeakerUnavailable {
        /// The device's own words.
        reason: String,
    },
    /// The call ended; `reason` as a phrase ("the provider closed the call"), if known.
    CallEnded {
        /// Why, as a phrase.
        reason: Option<String>,
    },
    /// The user stopped it (or started another).
    Stop,
    /// Time passed (due at [`VoicePreview::next_deadline_ms`]).
    Tick,
}

/// What the preview decided, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum PreviewOutput {
    /// A client event for the data channel, under this `event_id`.
    Send {
        /// The event.
        event: ClientEvent,
        /// Its id.
        event_id: &'static str,
    },
    /// The preview is over: hang up, and give the form this answer (`Err`: it failed, and the
    /// sentence says what to do).
    Finished(Result<String, String>),
}

/// One preview of one voice. See the module documentation.
#[derive(Debug)]
pub struct VoicePreview {
    voice: String,
    provider: String,
    outputs: VecDeque<PreviewOutput>,
    /// When the reply was asked for; the preview gives up [`LONGEST_PREVIEW_MS`] after.
    asked_at_ms: Option<u64>,
    transcript: String,
    /// Reply audio the speaker was given (from its first sound on), in samples at 48 kHz.
    played_samples: u64,
    /// The provider has sent the whole reply (its audio ended, or the response is done before
    /// any of it played).
    all_sent: bool,
    finished: bool,
}

impl VoicePreview {
    /// A preview of `voice` from the provider called `provider` (its label, for sentences).
    pub fn new(voice: impl Into<String>, provider: impl Into<String>) -> Self {
        Self {
            voice: voice.into(),
            provider: provider.into(),
            outputs: VecDeque::new(),
            asked_at_ms: None,
            transcript: String::new(),
            played_samples: 0,
            all_sent: false,
            finished: false,
        }
    }

    /// Takes one input at `now_ms`; what it decided is polled from [`Self::poll_output`].
    /// Nothing is taken once the preview is finished.
    pub fn handle_input(&mut self, input: PreviewInput, now_ms: u64) {
        if self.finished {
            return;
        }
        match input {
            PreviewInput::Answered => self.ask(now_ms),
            PreviewInput::ServerText(text) => self.server_text(&text),
            PreviewInput::AssistantAudio(chunk) => {
                if self.played_samples > 0 || is_sounding(&chunk) {
                    self.played_samples += chunk.samples().len() as u64;
                }
            }
            PreviewInput::Drained if self.all_sent && self.played_samples > 0 => self.played(),
            PreviewInput::Drained => {}
            PreviewInput::SpeakerUnavailable { reason } => self.failed(format!(
                "The speaker could not be opened ({reason}): choose another in Settings."
            )),
            PreviewInput::CallEnded { .. } if self.played_samples > 0 => self.played(),
            PreviewInput::CallEnded { reason } => self.failed(match reason {
                Some(reason) => format!("The call ended before the reply ({reason}): try again."),
                None => "The call ended before the reply: try again.".to_owned(),
            }),
            PreviewInput::Stop => self.finish(Ok("Stopped.".to_owned())),
            PreviewInput::Tick => {
                let due = self
                    .next_deadline_ms()
                    .is_some_and(|due_ms| now_ms >= due_ms);
                if due && self.played_samples > 0 {
                    self.played();
                } else if due {
                    self.failed(
                        "No audio came within 30 seconds: try again, or check the provider's \
                         status page."
                            .to_owned(),
                    );
                }
            }
        }
    }

    /// The next output.
    pub fn poll_output(&mut self) -> Option<PreviewOutput> {
        self.outputs.pop_front()
    }

    /// When a [`PreviewInput::Tick`] is next due: when the preview gives up.
    pub fn next_deadline_ms(&self) -> Option<u64> {
        self.asked_at_ms
            .filter(|_| !self.finished)
            .map(|asked_at_ms| asked_at_ms.saturating_add(LONGEST_PREVIEW_MS))
    }

    fn ask(&mut self, now_ms: u64) {
        if self.asked_at_ms.is_some() {
            return;
        }
        self.asked_at_ms = Some(now_ms);
        let event = ClientEvent::ResponseCreate {
            response: Some(ResponseConfig {
                conversation: Some("none".to_owned()),
                output_modalities: Some(vec![Modality::Audio]),
                instructions: Some(PREVIEW_INSTRUCTIONS.to_owned()),
                ..ResponseConfig::default()
            }),
        };
        self.outputs.push_back(PreviewOutput::Send {
            event,
            event_id: PREVIEW_EVENT_ID,
        });
    }

    fn server_text(&mut self, text: &str) {
        // The preview is only its reply: other events, and text Walkie cannot read, change
        // nothing here.
        match walkie_openai::decode_server_event(text) {
            Ok(ServerEvent::OutputAudioTranscriptDelta { delta, .. }) => {
                self.transcript.push_str(&delta);
            }
            Ok(ServerEvent::OutputAudioBufferStopped { .. }) => self.all_sent = true,
            // Done before any audio played: the rest is what is in flight.
            Ok(ServerEvent::ResponseDone { .. }) if self.played_samples == 0 => {
                self.all_sent = true;
            }
            Ok(ServerEvent::Error { error }) => self.failed(format!(
                "The provider refused the reply: {}",
                crate::outside_text(&error.message, crate::MAX_OUTSIDE_TEXT_CHARS)
            )),
            _ => {}
        }
    }

    /// The reply played: how much of it, and what it said.
    fn played(&mut self) {
        let seconds = self.played_samples as f64 / CALL_SAMPLES_PER_SECOND;
        let said = self.transcript.trim();
        let voice = &self.voice;
        let answer = if said.is_empty() {
            format!("Played {seconds:.1} s of {voice}.")
        } else {
            format!(
                "{voice} ({seconds:.1} s): “{}”",
                crate::outside_text(said, crate::MAX_OUTSIDE_TEXT_CHARS)
            )
        };
        self.finish(Ok(answer));
    }

    fn failed(&mut self, why: String) {
        let answer = format!(
            "The preview of {} from {} failed. {why}",
            self.voice, self.provider
        );
        self.finish(Err(answer));
    }

    fn finish(&mut self, answer: Result<String, String>) {
        self.finished = true;
        self.outputs.push_back(PreviewOutput::Finished(answer));
    }
}
