//! The outbox: everything the controller decided for the world, in one queue in the order it
//! was decided (client events, audio commands, hints, diagnostics), and the client events'
//! ids. Hints and diagnostics are bounded while nobody polls (the oldest gives way); client
//! events, audio commands and what a response was billed never are. Client events are queued only while the data channel
//! is open: one sent to a session that no longer exists is dropped.

use std::collections::VecDeque;

use walkie_openai::Usage;

use crate::turn::output::{
    AudioCommand, ControllerOutput, OutgoingEvent, ReplyAudio, ReplyGate, ToolCallRequest,
    TurnState, WireEvent,
};

/// Client event ids remembered for matching a server `error` to the request that caused it.
const REMEMBERED_EVENT_IDS: usize = 128;
/// Hints and diagnostics kept while nobody polls (the oldest note is dropped first).
const NOTE_CAPACITY: usize = 320;

/// See the module documentation.
#[derive(Debug)]
pub(super) struct Outbox {
    outputs: VecDeque<ControllerOutput>,
    /// How many of `outputs` are hints and diagnostics.
    queued_notes: usize,
    next_event_number: u64,
    sent: VecDeque<(String, &'static str)>,
    channel_open: bool,
    /// What the audio driver was last told to do with the reply audio it decodes.
    reply_audio: ReplyAudio,
    /// Where the turn stood when last told; `None` before the first poll.
    turn_state: Option<TurnState>,
}

impl Default for Outbox {
    fn default() -> Self {
        Self {
            outputs: VecDeque::new(),
            queued_notes: 0,
            next_event_number: 1,
            sent: VecDeque::new(),
            channel_open: false,
            reply_audio: ReplyAudio::default(),
            turn_state: None,
        }
    }
}

impl Outbox {
    /// The data channel opened: client events are queued from now on.
    pub fn channel_opened(&mut self) {
        self.channel_open = true;
    }

    /// The data channel closed: the client events still queued are dropped, and later ones
    /// are not queued.
    pub fn channel_closed(&mut self) {
        self.channel_open = false;
        self.outputs
            .retain(|output| !matches!(output, ControllerOutput::Send(_)));
    }

    /// Whether client events go out.
    pub fn is_open(&self) -> bool {
        self.channel_open
    }

    /// Queues a client event under a fresh id and returns the id (remembered either way).
    pub fn send(&mut self, event: impl Into<WireEvent>) -> String {
        let event: WireEvent = event.into();
        let event_id = format!("walkie_{}", self.next_event_number);
        self.next_event_number += 1;
        if self.sent.len() == REMEMBERED_EVENT_IDS {
            self.sent.pop_front();
        }
        self.sent.push_back((event_id.clone(), event.event_type()));
        if self.channel_open {
            self.outputs
                .push_back(ControllerOutput::Send(OutgoingEvent {
                    event_id: event_id.clone(),
                    event,
                }));
        }
        event_id
    }

    /// The type of a client event sent under this id, while remembered.
    pub fn sent_event_type(&self, event_id: &str) -> Option<&'static str> {
        self.sent
            .iter()
            .rev()
            .find(|(id, _)| id == event_id)
            .map(|(_, kind)| *kind)
    }

    pub fn command(&mut self, command: AudioCommand) {
        if command == AudioCommand::FlushPlayback {
            // The driver drops reply audio after a flush until told otherwise.
            self.reply_audio = ReplyAudio {
                gate: ReplyGate::Drop,
                item_id: None,
            };
        }
        self.outputs.push_back(ControllerOutput::Audio(command));
    }

    /// Tells where the turn stands, if that changed since it was last told.
    pub fn turn_state(&mut self, state: TurnState) {
        if self.turn_state != Some(state) {
            self.turn_state = Some(state);
            self.outputs.push_back(ControllerOutput::TurnState(state));
        }
    }

    /// Tells the audio driver what to do with the reply audio it decodes, if that changed
    /// since it was last told (no allocation when it did not). Audio that is dropped counts
    /// against no item.
    pub fn reply_audio(&mut self, gate: ReplyGate, item_id: Option<&str>) {
        let item_id = item_id.filter(|_| gate != ReplyGate::Drop);
        let told = &self.reply_audio;
        if told.gate == gate && told.item_id.as_deref() == item_id {
            return;
        }
        self.reply_audio = ReplyAudio {
            gate,
            item_id: item_id.map(str::to_owned),
        };
        self.outputs
            .push_back(ControllerOutput::ReplyAudio(self.reply_audio.clone()));
    }

    /// Queues what a response was billed: never dropped, it is money.
    pub fn billed(&mut self, usage: Usage) {
        self.outputs.push_back(ControllerOutput::Billed(usage));
    }

    /// Queues what a transcription was billed: never dropped either.
    pub fn transcribed(&mut self, usage: walkie_openai::TranscriptionUsage) {
        self.outputs.push_back(ControllerOutput::Transcribed(usage));
    }

    /// Queues a session's cumulative duration: never dropped either.
    pub fn session_time(&mut self, active_seconds: f64, paused_seconds: f64) {
        self.outputs.push_back(ControllerOutput::SessionTime {
            active_seconds,
            paused_seconds,
        });
    }

    /// Queues the provider's rate limits.
    pub fn rate_limits(&mut self, limits: Vec<walkie_openai::RateLimit>) {
        self.outputs.push_back(ControllerOutput::RateLimits(limits));
    }

    /// Queues a call of an outside tool: never dropped, the reply waits for its answer.
    pub fn tool_call(&mut self, request: ToolCallRequest) {
        self.outputs.push_back(ControllerOutput::ToolCall(request));
    }

    /// Queues the answer to an input ([`ControllerOutput::PressCancelled`],
    /// [`ControllerOutput::MessageSent`]): never dropped.
    pub fn answer(&mut self, answer: ControllerOutput) {
        self.outputs.push_back(answer);
    }

    /// Queues a hint or diagnostic; when too many wait, the oldest of them gives way.
    /// Returns whether one was dropped.
    pub fn note(&mut self, note: ControllerOutput) -> bool {
        let mut dropped = false;
        if self.queued_notes == NOTE_CAPACITY
            && let Some(oldest) = self.outputs.iter().position(is_note)
        {
            self.outputs.remove(oldest);
            self.queued_notes -= 1;
            dropped = true;
        }
        self.queued_notes += 1;
        self.outputs.push_back(note);
        dropped
    }

    /// The next output, in the order decided.
    pub fn pop(&mut self) -> Option<ControllerOutput> {
        let output = self.outputs.pop_front()?;
        if is_note(&output) {
            self.queued_notes -= 1;
        }
        Some(output)
    }
}

fn is_note(output: &ControllerOutput) -> bool {
    matches!(
        output,
        ControllerOutput::Hint(_) | ControllerOutput::Diagnostic(_)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::turn::output::{Diagnostic, UiHint};
    use walkie_openai::ClientEvent;

    #[test]
    fn client_events_wait_for_an_open_channel_and_a_closed_one_drops_them() {
        let mut outbox = Outbox::default();
        let early = outbox.send(ClientEvent::InputAudioBufferClear);
        assert_eq!(
            outbox.pop().map(|_| ()),
            None,
            "nothing goes out before the channel opens"
        );
        assert_eq!(
            outbox.sent_event_type(&early),
            Some("input_audio_buffer.clear")
        );
        outbox.channel_opened();
        outbox.send(ClientEvent::InputAudioBufferCommit);
        outbox.command(AudioCommand::CloseCapture);
        outbox.channel_closed();
        assert!(
            matches!(
                outbox.pop(),
                Some(ControllerOutput::Audio(AudioCommand::CloseCapture))
            ),
            "the audio command stays, the event for the closed channel is gone"
        );
        assert!(outbox.pop().is_none());
    }

    #[test]
    fn notes_are_bounded_and_the_oldest_gives_way() {
        let mut outbox = Outbox::default();
        outbox.command(AudioCommand::FlushPlayback);
        let dropped = (0..NOTE_CAPACITY + 3)
            .filter(|_| outbox.note(ControllerOutput::Hint(UiHint::NothingHeard)))
            .count();
        assert_eq!(dropped, 3);
        outbox.note(ControllerOutput::Diagnostic(Diagnostic::RepeatedKeyDown));
        assert!(
            matches!(
                outbox.pop(),
                Some(ControllerOutput::Audio(AudioCommand::FlushPlayback))
            ),
            "commands are never dropped for notes"
        );
        let rest: Vec<_> = std::iter::from_fn(|| outbox.pop()).collect();
        assert_eq!(rest.len(), NOTE_CAPACITY);
        assert!(matches!(rest.last(), Some(ControllerOutput::Diagnostic(_))));
    }
}
