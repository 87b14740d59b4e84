//! The provider's side of one call, as a pure state machine: client events and received audio
//! frames in, server events and audio frames out. No I/O, no clock: the driver (`call.rs`)
//! feeds it and paces the audio it returns.
//!
//! What it does, honestly: it cannot understand speech, so it answers every turn by playing
//! the user's own audio back, describes the user's audio instead of transcribing it
//! ("[2.4 s of speech]"), and says in its reply transcript what it did.

use std::collections::VecDeque;

use bytes::Bytes;
use serde_json::Value;
use walkie_openai::{
    AudioConfig, AudioFormat, AudioInput, AudioOutput, ClientEvent, ContentPart, DecodeError,
    ErrorDetail, Item, ItemStatus, Modality, Response, ResponseStatus, Role, ServerEvent,
    SessionConfig, SessionKind, decode_client_event,
};

/// Samples of one 20 ms frame at 48 kHz.
pub const FRAME_SAMPLES: u32 = 960;
/// The model name the local provider reports.
pub const LOCAL_MODEL: &str = "walkie-local-echo";
/// The shortest commit the GA server accepts.
const MIN_COMMIT_MS: u64 = 100;

/// One received audio frame as the session keeps it.
#[derive(Clone, Debug)]
pub struct InputFrame {
    /// The Opus packet, played back as received.
    pub opus: Bytes,
    /// Length in 48 kHz samples.
    pub samples: u32,
    /// Whether the frame's energy is above the speech threshold.
    pub voiced: bool,
}

/// What the session asks its driver to do.
#[derive(Clone, Debug, PartialEq)]
pub enum Output {
    /// Send this server event on the data channel, with this `event_id`.
    Event {
        event_id: String,
        event: Box<ServerEvent>,
    },
    /// Send this Opus frame as RTP (the driver paces these, one per 20 ms).
    Audio { opus: Bytes, samples: u32 },
}

impl Output {
    /// The JSON text to send for an event output.
    pub fn to_json(&self) -> Option<String> {
        match self {
            Output::Event { event_id, event } => Some(event.to_json(event_id)),
            Output::Audio { .. } => None,
        }
    }
}

pub struct ProviderSession {
    session: SessionConfig,
    next_id: u64,
    conversation_id: String,
    input: Vec<InputFrame>,
    last_item_id: Option<String>,
    /// The audio of the newest committed turn not yet answered.
    unanswered: Option<Vec<InputFrame>>,
    /// User transcripts to send after the current reply (they arrive late, as from OpenAI).
    pending_transcripts: Vec<(String, String)>,
    /// Frames queued for playback, and the response they belong to.
    playback: VecDeque<InputFrame>,
    playing: Option<String>,
    /// Assistant items with audio, and their length in ms (for truncate).
    assistant_audio_ms: Vec<(String, u64)>,
}

impl ProviderSession {
    pub fn new(call_id: &str) -> Self {
        Self {
            session: default_session(call_id),
            next_id: 0,
            conversation_id: format!("conv_{call_id}"),
            input: Vec::new(),
            last_item_id: None,
            unanswered: None,
            pending_transcripts: Vec::new(),
            playback: VecDeque::new(),
            playing: None,
            assistant_audio_ms: Vec::new(),
        }
    }

    fn id(&mut self, prefix: &str) -> String {
        self.next_id += 1;
        format!("{prefix}_local{:04}", self.next_id)
    }

    fn emit(&mut self, out: &mut Vec<Output>, event: ServerEvent) {
        let event_id = self.id("event");
        out.push(Output::Event {
            event_id,
            event: Box::new(event),
        });
    }

    /// The data channel opened: `session.created` comes first.
    pub fn on_connect(&mut self) -> Vec<Output> {
        let mut out = Vec::new();
        let session = Box::new(self.session.clone());
        self.emit(&mut out, ServerEvent::SessionCreated { session });
        out
    }

    /// One received audio frame. In push-to-talk mode it joins the input buffer.
    pub fn on_audio(&mut self, frame: InputFrame) {
        self.input.push(frame);
    }

    /// Whether a reply is being played out.
    pub fn is_playing(&self) -> bool {
        self.playing.is_some()
    }

    /// Called every 20 ms while [`Self::is_playing`]: the next frame, or, when the queue is
    /// empty, `output_audio_buffer.stopped`.
    pub fn next_playback(&mut self) -> Vec<Output> {
        let mut out = Vec::new();
        match self.playback.pop_front() {
            Some(frame) => out.push(Output::Audio {
                opus: frame.opus,
                samples: frame.samples,
            }),
            None => {
                if let Some(response_id) = self.playing.take() {
                    self.emit(
                        &mut out,
                        ServerEvent::OutputAudioBufferStopped { response_id },
                    );
                }
            }
        }
        out
    }

    /// One text message from the client.
    pub fn on_client_text(&mut self, text: &str) -> Vec<Output> {
        let mut out = Vec::new();
        match decode_client_event(text) {
            Ok((event_id, event)) => self.on_client_event(&mut out, event_id, event),
            Err(error) => {
                let event_id = raw_event_id(text);
                let detail = match &error {
                    DecodeError::BetaShape { .. } => ErrorDetail {
                        kind: "invalid_request_error".to_owned(),
                        code: Some("beta_api_shape_disabled".to_owned()),
                        message: "The Realtime Beta API is no longer supported. Please use /v1/realtime for the GA API.".to_owned(),
                        param: None,
                        event_id,
                    },
                    DecodeError::UnknownClientEvent { event_type } => ErrorDetail {
                        kind: "invalid_request_error".to_owned(),
                        code: Some("invalid_value".to_owned()),
                        message: format!("Invalid value: '{event_type}'. Supported values are client events of the GA Realtime API."),
                        param: Some("type".to_owned()),
                        event_id,
                    },
                    other => ErrorDetail {
                        kind: "invalid_request_error".to_owned(),
                        code: Some("invalid_event".to_owned()),
                        message: other.to_string(),
                        param: None,
                        event_id,
                    },
                };
                self.emit(&mut out, ServerEvent::Error { error: detail });
            }
        }
        out
    }

    fn error(
        &mut self,
        out: &mut Vec<Output>,
        event_id: Option<String>,
        code: &str,
        message: String,
    ) {
        let error = ErrorDetail {
            kind: "invalid_request_error".to_owned(),
            code: Some(code.to_owned()),
            message,
            param: None,
            event_id,
        };
        self.emit(out, ServerEvent::Error { error });
    }

    fn on_client_event(
        &mut self,
        out: &mut Vec<Output>,
        event_id: Option<String>,
        event: ClientEvent,
    ) {
        match event {
            ClientEvent::SessionUpdate { session } => self.update_session(out, event_id, *session),
            ClientEvent::InputAudioBufferClear => {
                self.input.clear();
                self.emit(out, ServerEvent::InputAudioBufferCleared);
            }
            ClientEvent::InputAudioBufferCommit => self.commit(out, event_id),
            ClientEvent::ResponseCreate { .. } => self.respond(out),
            ClientEvent::ResponseCancel { .. } => {
                // Replies are generated at once, so by the time a cancel arrives the response
                // is done — as with OpenAI over WebRTC, where the audio still playing is cut
                // with `output_audio_buffer.clear`.
                self.error(
                    out,
                    event_id,
                    "response_cancel_not_active",
                    "Cancellation failed: no active response found".to_owned(),
                );
            }
            ClientEvent::OutputAudioBufferClear => {
                self.playback.clear();
                if let Some(response_id) = self.playing.take() {
                    self.emit(out, ServerEvent::OutputAudioBufferCleared { response_id });
                }
            }
            ClientEvent::ConversationItemTruncate {
                item_id,
                content_index,
                audio_end_ms,
            } => {
                let known = self
                    .assistant_audio_ms
                    .iter()
                    .find(|(id, _)| *id == item_id)
                    .map(|(_, ms)| *ms);
                match known {
                    Some(length) if audio_end_ms <= length => self.emit(
                        out,
                        ServerEvent::ConversationItemTruncated {
                            item_id,
                            content_index,
                            audio_end_ms,
                        },
                    ),
                    Some(length) => self.error(
                        out,
                        event_id,
                        "invalid_value",
                        format!(
                            "Audio content of {length}ms is already shorter than {audio_end_ms}ms"
                        ),
                    ),
                    None => self.error(
                        out,
                        event_id,
                        "item_truncate_invalid_item_id",
                        format!("Item with item_id not found: {item_id}"),
                    ),
                }
            }
            ClientEvent::InputAudioBufferAppend { .. } => self.error(
                out,
                event_id,
                "unsupported_by_local_provider",
                "The local provider takes audio by RTP over WebRTC, not input_audio_buffer.append."
                    .to_owned(),
            ),
            other => self.error(
                out,
                event_id,
                "unsupported_by_local_provider",
                format!(
                    "The local provider does not implement {} yet.",
                    other.event_type()
                ),
            ),
        }
    }

    fn update_session(
        &mut self,
        out: &mut Vec<Output>,
        event_id: Option<String>,
        update: SessionConfig,
    ) {
        let wants_vad = update
            .audio
            .as_ref()
            .and_then(|audio| audio.input.as_ref())
            .and_then(|input| input.turn_detection.as_ref())
            .is_some_and(Option::is_some);
        if wants_vad {
            self.error(
                out,
                event_id,
                "unsupported_by_local_provider",
                "The local provider supports push-to-talk only so far (audio.input.turn_detection: null)."
                    .to_owned(),
            );
            return;
        }
        merge_session(&mut self.session, update);
        let session = Box::new(self.session.clone());
        self.emit(out, ServerEvent::SessionUpdated { session });
    }

    fn transcription_enabled(&self) -> bool {
        self.session
            .audio
            .as_ref()
            .and_then(|audio| audio.input.as_ref())
            .and_then(|input| input.transcription.as_ref())
            .is_some_and(Option::is_some)
    }

    fn commit(&mut self, out: &mut Vec<Output>, event_id: Option<String>) {
        let samples: u64 = self
            .input
            .iter()
            .map(|frame| u64::from(frame.samples))
            .sum();
        let ms = samples * 1000 / 48_000;
        if ms < MIN_COMMIT_MS {
            self.error(
                out,
                event_id,
                "input_audio_buffer_commit_empty",
                format!("Error committing input audio buffer: buffer too small. Expected at least {MIN_COMMIT_MS}ms of audio, but buffer only has {ms}.00ms of audio."),
            );
            return;
        }
        self.flush_transcripts(out);
        let item_id = self.id("item");
        let previous_item_id = self.last_item_id.replace(item_id.clone());
        let item = Item::Message {
            id: Some(item_id.clone()),
            role: Role::User,
            status: Some(ItemStatus::Completed),
            content: vec![ContentPart::InputAudio {
                audio: None,
                transcript: None,
            }],
        };
        self.emit(
            out,
            ServerEvent::InputAudioBufferCommitted {
                item_id: item_id.clone(),
                previous_item_id: previous_item_id.clone(),
            },
        );
        self.emit(
            out,
            ServerEvent::ConversationItemAdded {
                item: item.clone(),
                previous_item_id: previous_item_id.clone(),
            },
        );
        self.emit(
            out,
            ServerEvent::ConversationItemDone {
                item,
                previous_item_id,
            },
        );
        let frames = std::mem::take(&mut self.input);
        if self.transcription_enabled() {
            self.pending_transcripts
                .push((item_id, describe_user_audio(&frames)));
        }
        self.unanswered = Some(frames);
    }

    fn flush_transcripts(&mut self, out: &mut Vec<Output>) {
        for (item_id, transcript) in std::mem::take(&mut self.pending_transcripts) {
            self.emit(
                out,
                ServerEvent::InputTranscriptionCompleted {
                    item_id,
                    content_index: 0,
                    transcript,
                },
            );
        }
    }

    fn respond(&mut self, out: &mut Vec<Output>) {
        let frames = self.unanswered.take().unwrap_or_default();
        let samples: u64 = frames.iter().map(|frame| u64::from(frame.samples)).sum();
        let audio_ms = samples * 1000 / 48_000;
        let transcript = if frames.is_empty() {
            "This is Walkie's local provider. There was no new audio from you to play back."
                .to_owned()
        } else {
            format!(
                "This is Walkie's local provider. I can't understand speech, so I played your {:.1} seconds of audio back to you.",
                audio_ms as f64 / 1000.0
            )
        };

        let response_id = self.id("resp");
        let item_id = self.id("item");
        let previous_item_id = self.last_item_id.replace(item_id.clone());
        let mut response = Response {
            id: response_id.clone(),
            status: ResponseStatus::InProgress,
            status_details: None,
            output: vec![],
            conversation_id: Some(self.conversation_id.clone()),
            output_modalities: Some(vec![Modality::Audio]),
            usage: None,
            metadata: None,
        };
        self.emit(
            out,
            ServerEvent::ResponseCreated {
                response: response.clone(),
            },
        );
        let in_progress = Item::Message {
            id: Some(item_id.clone()),
            role: Role::Assistant,
            status: Some(ItemStatus::InProgress),
            content: vec![],
        };
        self.emit(
            out,
            ServerEvent::ResponseOutputItemAdded {
                response_id: response_id.clone(),
                output_index: 0,
                item: in_progress.clone(),
            },
        );
        self.emit(
            out,
            ServerEvent::ConversationItemAdded {
                item: in_progress,
                previous_item_id,
            },
        );
        self.emit(
            out,
            ServerEvent::ResponseContentPartAdded {
                response_id: response_id.clone(),
                item_id: item_id.clone(),
                output_index: 0,
                content_index: 0,
                part: ContentPart::OutputAudio {
                    transcript: Some(String::new()),
                },
            },
        );
        if !frames.is_empty() {
            self.emit(
                out,
                ServerEvent::OutputAudioBufferStarted {
                    response_id: response_id.clone(),
                },
            );
        }
        for delta in transcript_deltas(&transcript) {
            self.emit(
                out,
                ServerEvent::OutputAudioTranscriptDelta {
                    response_id: response_id.clone(),
                    item_id: item_id.clone(),
                    output_index: 0,
                    content_index: 0,
                    delta,
                },
            );
        }
        self.emit(
            out,
            ServerEvent::OutputAudioDone {
                response_id: response_id.clone(),
                item_id: item_id.clone(),
                output_index: 0,
                content_index: 0,
            },
        );
        self.emit(
            out,
            ServerEvent::OutputAudioTranscriptDone {
                response_id: response_id.clone(),
                item_id: item_id.clone(),
                output_index: 0,
                content_index: 0,
                transcript: transcript.clone(),
            },
        );
        let part = ContentPart::OutputAudio {
            transcript: Some(transcript),
        };
        self.emit(
            out,
            ServerEvent::ResponseContentPartDone {
                response_id: response_id.clone(),
                item_id: item_id.clone(),
                output_index: 0,
                content_index: 0,
                part: part.clone(),
            },
        );
        let done_item = Item::Message {
            id: Some(item_id.clone()),
            role: Role::Assistant,
            status: Some(ItemStatus::Completed),
            content: vec![part],
        };
        self.emit(
            out,
            ServerEvent::ResponseOutputItemDone {
                response_id: response_id.clone(),
                output_index: 0,
                item: done_item.clone(),
            },
        );
        response.status = ResponseStatus::Completed;
        response.output = vec![done_item];
        self.emit(out, ServerEvent::ResponseDone { response });
        self.flush_transcripts(out);

        self.assistant_audio_ms.push((item_id, audio_ms));
        if !frames.is_empty() {
            // A new reply replaces what was still playing.
            if let Some(previous) = self.playing.take() {
                self.playback.clear();
                self.emit(
                    out,
                    ServerEvent::OutputAudioBufferCleared {
                        response_id: previous,
                    },
                );
            }
            self.playback.extend(frames);
            self.playing = Some(response_id);
        }
    }
}

fn raw_event_id(text: &str) -> Option<String> {
    serde_json::from_str::<Value>(text)
        .ok()?
        .get("event_id")?
        .as_str()
        .map(str::to_owned)
}

/// The honest user transcript: how long the speech lasted (first to last voiced frame), or
/// that there was none.
pub fn describe_user_audio(frames: &[InputFrame]) -> String {
    let first = frames.iter().position(|frame| frame.voiced);
    let last = frames.iter().rposition(|frame| frame.voiced);
    match (first, last) {
        (Some(first), Some(last)) => {
            let samples: u64 = frames[first..=last]
                .iter()
                .map(|frame| u64::from(frame.samples))
                .sum();
            format!("[{:.1} s of speech]", samples as f64 / 48_000.0)
        }
        _ => {
            let samples: u64 = frames.iter().map(|frame| u64::from(frame.samples)).sum();
            format!("[{:.1} s of silence]", samples as f64 / 48_000.0)
        }
    }
}

/// The transcript in a few streamed pieces, word boundaries kept.
fn transcript_deltas(transcript: &str) -> Vec<String> {
    let words: Vec<&str> = transcript.split_inclusive(' ').collect();
    words.chunks(4).map(|chunk| chunk.concat()).collect()
}

fn default_session(call_id: &str) -> SessionConfig {
    let mut other = serde_json::Map::new();
    other.insert("id".to_owned(), Value::String(format!("sess_{call_id}")));
    other.insert(
        "object".to_owned(),
        Value::String("realtime.session".to_owned()),
    );
    SessionConfig {
        kind: SessionKind::Realtime,
        model: Some(LOCAL_MODEL.to_owned()),
        instructions: Some(String::new()),
        output_modalities: Some(vec![Modality::Audio]),
        audio: Some(AudioConfig {
            input: Some(AudioInput {
                format: Some(AudioFormat::pcm_24khz()),
                noise_reduction: Some(None),
                transcription: Some(None),
                turn_detection: Some(None),
            }),
            output: Some(AudioOutput {
                format: Some(AudioFormat::pcm_24khz()),
                voice: Some("echo-of-you".to_owned()),
                speed: Some(1.0),
            }),
        }),
        tools: Some(vec![]),
        tool_choice: Some(Value::String("auto".to_owned())),
        max_output_tokens: None,
        other,
    }
}

/// Applies the fields present in `update` (GA semantics: absent = unchanged; the model and
/// the session type stay).
fn merge_session(current: &mut SessionConfig, update: SessionConfig) {
    if update.instructions.is_some() {
        current.instructions = update.instructions;
    }
    if update.output_modalities.is_some() {
        current.output_modalities = update.output_modalities;
    }
    if update.tools.is_some() {
        current.tools = update.tools;
    }
    if update.tool_choice.is_some() {
        current.tool_choice = update.tool_choice;
    }
    if update.max_output_tokens.is_some() {
        current.max_output_tokens = update.max_output_tokens;
    }
    for (key, value) in update.other {
        if key != "id" && key != "object" {
            current.other.insert(key, value);
        }
    }
    if let Some(audio) = update.audio {
        let target = current.audio.get_or_insert_with(AudioConfig::default);
        if let Some(input) = audio.input {
            let into = target.input.get_or_insert_with(AudioInput::default);
            if input.format.is_some() {
                into.format = input.format;
            }
            if input.noise_reduction.is_some() {
                into.noise_reduction = input.noise_reduction;
            }
            if input.transcription.is_some() {
                into.transcription = input.transcription;
            }
            if input.turn_detection.is_some() {
                into.turn_detection = input.turn_detection;
            }
        }
        if let Some(output) = audio.output {
            let into = target.output.get_or_insert_with(AudioOutput::default);
            if output.format.is_some() {
                into.format = output.format;
            }
            if output.voice.is_some() {
                into.voice = output.voice;
            }
            if output.speed.is_some() {
                into.speed = output.speed;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frames(voiced: &[bool]) -> Vec<InputFrame> {
        voiced
            .iter()
            .enumerate()
            .map(|(i, voiced)| InputFrame {
                opus: Bytes::from(vec![i as u8]),
                samples: FRAME_SAMPLES,
                voiced: *voiced,
            })
            .collect()
    }

    fn types(outputs: &[Output]) -> Vec<String> {
        outputs
            .iter()
            .filter_map(|output| match output {
                Output::Event { event, .. } => Some(event.event_type().to_owned()),
                Output::Audio { .. } => None,
            })
            .collect()
    }

    #[test]
    fn user_audio_is_described_not_transcribed() {
        let mut voiced = vec![false; 10];
        voiced.extend([true; 120]);
        voiced.extend([false; 10]);
        assert_eq!(describe_user_audio(&frames(&voiced)), "[2.4 s of speech]");
        assert_eq!(
            describe_user_audio(&frames(&[false; 50])),
            "[1.0 s of silence]"
        );
    }

    #[test]
    fn a_push_to_talk_turn_follows_the_ga_sequence_and_echoes_the_audio() {
        let mut session = ProviderSession::new("rtc_test");
        assert_eq!(types(&session.on_connect()), ["session.created"]);
        let update = r#"{"type":"session.update","session":{"type":"realtime","audio":{"input":{"transcription":{"model":"whisper-1"},"turn_detection":null}}}}"#;
        assert_eq!(types(&session.on_client_text(update)), ["session.updated"]);
        assert_eq!(
            types(&session.on_client_text(r#"{"type":"input_audio_buffer.clear"}"#)),
            ["input_audio_buffer.cleared"]
        );
        let sent = frames(&[true; 20]);
        for frame in sent.clone() {
            session.on_audio(frame);
        }
        let mut outputs = session.on_client_text(r#"{"type":"input_audio_buffer.commit"}"#);
        outputs.extend(session.on_client_text(r#"{"type":"response.create"}"#));
        let got = types(&outputs);
        assert_eq!(
            got[..4],
            [
                "input_audio_buffer.committed",
                "conversation.item.added",
                "conversation.item.done",
                "response.created"
            ]
        );
        assert_eq!(
            got[got.len() - 7..],
            [
                "response.output_audio_transcript.delta",
                "response.output_audio.done",
                "response.output_audio_transcript.done",
                "response.content_part.done",
                "response.output_item.done",
                "response.done",
                "conversation.item.input_audio_transcription.completed",
            ]
        );
        assert!(session.is_playing());
        let mut played = Vec::new();
        loop {
            let next = session.next_playback();
            match next.as_slice() {
                [Output::Audio { opus, .. }] => played.push(opus.clone()),
                [Output::Event { event, .. }] => {
                    assert_eq!(event.event_type(), "output_audio_buffer.stopped");
                    break;
                }
                other => panic!("unexpected playback output {other:?}"),
            }
        }
        let expected: Vec<Bytes> = sent.into_iter().map(|frame| frame.opus).collect();
        assert_eq!(played, expected, "the reply is the user's own audio");
        assert!(!session.is_playing());
    }

    fn only_error(out: &[Output]) -> &ErrorDetail {
        let [Output::Event { event, .. }] = out else {
            panic!("expected exactly one event, got {out:?}");
        };
        let ServerEvent::Error { error } = event.as_ref() else {
            panic!("expected an error event, got {event:?}");
        };
        error
    }

    #[test]
    fn errors_are_the_real_ones() {
        let mut session = ProviderSession::new("rtc_test");
        let beta = r#"{"type":"session.update","event_id":"e1","session":{"modalities":["audio"],"voice":"alloy"}}"#;
        let out = session.on_client_text(beta);
        let error = only_error(&out);
        assert_eq!(error.code.as_deref(), Some("beta_api_shape_disabled"));
        assert_eq!(error.event_id.as_deref(), Some("e1"));

        let out = session.on_client_text(r#"{"type":"input_audio_buffer.commit"}"#);
        assert_eq!(
            only_error(&out).code.as_deref(),
            Some("input_audio_buffer_commit_empty")
        );

        let out = session.on_client_text("{not json");
        assert_eq!(only_error(&out).code.as_deref(), Some("invalid_event"));

        let vad = r#"{"type":"session.update","session":{"type":"realtime","audio":{"input":{"turn_detection":{"type":"server_vad"}}}}}"#;
        let out = session.on_client_text(vad);
        assert_eq!(
            only_error(&out).code.as_deref(),
            Some("unsupported_by_local_provider"),
            "hands-free mode is refused, not silently accepted"
        );
    }
}
