//! The turn controller: the one owner of every turn-lifecycle input.
//!
//! Why one owner: a push-to-talk press, a provider event, the playback position, a device change
//! and a timer can all decide what happens to the same turn (is the assistant audible? is a
//! response active? has the user's utterance been committed?). Split across drivers, those
//! decisions race; here they are one state machine. It is sans-IO like the rest of the crate:
//! every input carries the caller's time (`now_ms`), nothing reads a clock or touches a device,
//! and the outputs are polled, in the order they were decided — client events for the
//! transport, audio commands for the audio driver, hints for the UI — besides the session
//! events in the [`Session`] it owns. That is what lets the tests script a whole conversation
//! in virtual time.
//!
//! The rules it enforces (reference §4, DESIGN rule 1):
//! - `session.update` goes out when the data channel opens, and the key does nothing until
//!   `session.updated` confirms it;
//! - key-down while the assistant is audible is a barge-in: local playback is flushed at once,
//!   `response.cancel` is sent only while a response is active, then `output_audio_buffer.clear`;
//!   then `input_audio_buffer.clear`, and capture opens with the warm-mic pre-roll;
//! - key-up keeps capturing for a tail, then `input_audio_buffer.commit` and `response.create`;
//!   a create never overlaps an active response, it waits for that response's `response.done`;
//! - presses shorter than the minimum are ignored with a hint; a repeated key-down is ignored
//!   and a lost key-up is recovered by the maximum press, so nothing can wedge the controller;
//! - without an echo canceller, nothing the mic picks up while the assistant is audible reaches
//!   the call (half duplex): the mic is gated (silence is sent, and kept as the warm mic's
//!   pre-roll) while the assistant is audible; a push-to-talk press opens the gate, because the
//!   press itself flushes playback; a reply that starts while the key is held is cut like a
//!   key-down barge-in, since gating would mute the user mid-sentence;
//! - hands-free, a server speech start while the assistant is audible is the same barge-in, and
//!   the cut reply records how much was played (`interrupted_at_ms`), sent as
//!   `conversation.item.truncate { audio_end_ms }` where the transport needs it;
//! - the user's speech part starts at their speech start, so it sits before the reply even when
//!   its transcript arrives after `response.done`;
//! - nothing the server fails to send wedges a turn: a reply whose `stopped` never comes ends
//!   [`STOPPED_WATCHDOG_MS`] after its last audio, a response whose `response.done` never comes
//!   (or a create never answered) ends after [`RESPONSE_DONE_WATCHDOG_MS`] of server silence.
//!
//! Its state sits in named parts, each changed only through its own methods: the press and its
//! capture ([`super::press`]), the session's lifecycle ([`super::lifecycle`]), the response
//! ledger ([`super::ledger`]), what the user hears ([`super::audibility`]), which item each open
//! part belongs to ([`super::item_parts`]) and the ordered output ([`super::outbox`]). The
//! OpenAI → session mapping lives in [`super::openai_map`] and uses the same methods.

use std::collections::BTreeMap;

use walkie_openai::{ClientEvent, ServerEvent, decode_server_event};

use crate::audio::{AudioChunk, DeviceDirection};
use crate::event::{
    EnqueuedMessage, EnqueuedMessagesEvent, Part, PartDelta, PartIndex, PartKind,
    RealtimeSessionErrorEvent, SessionEvent, Speaker, UserContent,
};
use crate::session::Session;
use crate::turn::audibility::Audibility;
use crate::turn::config::{NEAR_SPEECH_HOLD_MS, Transport, TurnConfig, TurnMode};
use crate::turn::engine::TurnInput;
use crate::turn::item_parts::{ItemParts, UserSlot};
use crate::turn::ledger::{PairedCreate, ResponseLedger};
use crate::turn::lifecycle::{Lifecycle, LifecycleDue};
use crate::turn::outbox::Outbox;
use crate::turn::output::{
    AudioCommand, ControllerOutput, Diagnostic, ReplyGate, ToolCallRequest, TurnState, UiHint,
};
use crate::turn::press::{Capture, KeyDown, Press, PressDue};
use crate::turn::tools::{ToolContext, ToolError, ToolRegistry, WallClock};
use crate::turn::user_message::{MAX_ITEM_EVENT_BYTES, PartTooLarge, UserMessage, user_items};

/// The most a typed message may take on the wire, as the JSON string that carries it: one
/// data-channel message (64 KiB) then holds it with room for the rest of the event.
pub const MAX_USER_TEXT_BYTES: usize = 32 * 1024;

/// Whether `text` fits in one typed message ([`MAX_USER_TEXT_BYTES`] once escaped for JSON).
pub fn user_text_fits(text: &str) -> bool {
    serde_json::to_string(text).is_ok_and(|json| json.len() <= MAX_USER_TEXT_BYTES)
}

/// Turn watchdog, WebRTC: how long a reply whose response has ended (`response.done`) may stay
/// audible with no audio arriving before the controller stops waiting for
/// `output_audio_buffer.stopped` and ends it as if that had come. Over WebRTC the reply's
/// audio arrives in real time, and the server sends `stopped` as its buffer drains, that is
/// right after the last packet leaves; with the jitter buffer and network that is well under
/// a second. Two seconds without audio means the event was lost; until then hands-free stays
/// gated.
pub const STOPPED_WATCHDOG_MS: u64 = 2_000;

/// Turn watchdog: how long a response may be active (or a `response.create` unanswered) with
/// nothing at all arriving from the server before the controller ends it as incomplete, with a
/// diagnostic and a recoverable session error. A real server streams an active response without
/// pauses (deltas every few tens of milliseconds; the first within a second or two of the
/// create, `response.done` right after the last), so thirty silent seconds are far outside any
/// reply and short enough that a lost `response.done` does not wedge the conversation.
pub const RESPONSE_DONE_WATCHDOG_MS: u64 = 30_000;

/// How long reply audio that came ahead of its reply's start is held before it is taken for
/// the active response's: longer than an SCTP retransmission on a lossy path takes, short
/// enough that a reply whose start was lost is not much delayed.
pub const EARLY_AUDIO_MAX_MS: u64 = 500;

/// Whether a chunk of reply audio holds sound: a sample above [`super::SILENCE_PEAK`] (a call
/// may carry digital or near silence between replies).
pub fn is_sounding(chunk: &AudioChunk) -> bool {
    chunk
        .samples()
        .iter()
        .any(|sample| sample.unsigned_abs() > super::SILENCE_PEAK as u16)
}

/// Who stops a reply at the server on a barge-in: the server itself when its VAD hears the
/// user (hands-free with `interrupt_response`), or the client (`response.cancel`, and over
/// WebRTC `output_audio_buffer.clear`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Canceller {
    Server,
    Client,
}

/// Counters for the status line and the tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ControllerStats {
    /// Server events of unknown types, ignored.
    pub unknown_events: u64,
    /// Data-channel messages that could not be decoded.
    pub undecodable_events: u64,
    /// Events the session refused (see [`Diagnostic::SessionRefused`]).
    pub refused_session_events: u64,
    /// Assistant audio chunks dropped because their reply had been cut (barge-in stragglers),
    /// or held ahead of a reply that never came.
    pub dropped_audio_chunks: u64,
    /// Silent chunks received while no reply was audible (a server that sends silence between
    /// replies), not taken for anyone's speech.
    pub silent_audio_chunks: u64,
    /// Sounding chunks that arrived before the events that place them (their reply's start):
    /// held, then played in order once those came.
    pub early_audio_chunks: u64,
    /// Hints and diagnostics dropped because nobody polled them.
    pub dropped_notes: u64,
}

/// The turn controller (sans-IO). See the module documentation.
#[derive(Debug)]
pub struct TurnController {
    pub(super) config: TurnConfig,
    pub(super) tools: ToolRegistry,
    pub(super) session: Session,

    /// Everything for the world, in the order it was decided (see [`ControllerOutput`]).
    outbox: Outbox,
    pub(super) stats: ControllerStats,
    /// Reply audio that came before the data-channel events that place it (a lost SCTP packet
    /// is resent while RTP flows on), and when the first of it came: played once its reply
    /// starts, or after [`EARLY_AUDIO_MAX_MS`] as the active response's.
    early_audio: Vec<AudioChunk>,
    early_audio_since_ms: Option<u64>,
    /// The provider's input buffer may hold audio sent since the last commit or clear. A press
    /// clears it only then: a clear with nothing to clear can be resent by SCTP after the
    /// press's own audio (RTP) has arrived, and wipe the turn.
    input_buffer_dirty: bool,

    /// Opened, confirmed, transcribing, near its cap.
    pub(super) lifecycle: Lifecycle,

    press: Press,
    capture: Capture,
    /// A turn mode asked for while a turn was under way: it applies when the turn ends.
    pending_mode: Option<TurnMode>,
    /// Hands-free: the server's VAD heard speech start and has not committed it yet.
    vad_utterance_open: bool,

    /// What was asked of the server about responses, and what it answered.
    pub(super) responses: ResponseLedger,
    /// What the user hears of the assistant, and what a barge-in cut.
    pub(super) audibility: Audibility,
    /// Which provider item each open part belongs to.
    pub(super) parts: ItemParts,

    /// Calls of outside tools asked of the caller and not yet answered, by call id (with the
    /// tool's name): the reply waits for all of them.
    pub(super) outside_calls: BTreeMap<String, String>,
    /// Every call was answered while a response was still active (it may make more calls):
    /// the reply is asked for when it ends.
    pub(super) tool_reply_owed: bool,

    /// The user's last turn was typed (not spoken): its answer may be text alone.
    last_turn_typed: bool,
    /// The create waiting for the active response to end asks for text alone.
    queued_create_text_only: bool,

    /// The latest time an input carried (the controller's "now").
    latest_ms: u64,
    /// When the server last sent anything, or a `response.create` went out: the
    /// [`RESPONSE_DONE_WATCHDOG_MS`] bound counts from here.
    response_activity_ms: u64,
    wall_clock: Option<(u64, WallClock)>,
    /// The reply is held for the user the microphone heard start talking over it, until the
    /// provider's speech start confirms it or this time passes ([`NEAR_SPEECH_HOLD_MS`]).
    held_until_ms: Option<u64>,
    /// Questions put beside the conversation and not answered yet.
    pub(super) asides: super::aside::Asides,
}

impl TurnController {
    /// A controller with a fresh default [`Session`].
    pub fn new(config: TurnConfig, tools: ToolRegistry) -> Self {
        Self::with_session(config, tools, Session::default())
    }

    /// A controller that feeds this session.
    pub fn with_session(config: TurnConfig, tools: ToolRegistry, session: Session) -> Self {
        Self {
            config,
            tools,
            session,
            outbox: Outbox::default(),
            stats: ControllerStats::default(),
            early_audio: Vec::new(),
            early_audio_since_ms: None,
            input_buffer_dirty: false,
            lifecycle: Lifecycle::default(),
            press: Press::Idle,
            capture: Capture::default(),
            pending_mode: None,
            vad_utterance_open: false,
            responses: ResponseLedger::default(),
            audibility: Audibility::default(),
            parts: ItemParts::default(),
            outside_calls: BTreeMap::new(),
            tool_reply_owed: false,
            last_turn_typed: false,
            queued_create_text_only: false,
            latest_ms: 0,
            response_activity_ms: 0,
            wall_clock: None,
            held_until_ms: None,
            asides: super::aside::Asides::default(),
        }
    }

    // ----------------------------------------------------------------------------------------
    // Inputs
    // ----------------------------------------------------------------------------------------

    /// Takes one input at `now_ms`: the one way in. What it decided is polled from
    /// [`Self::poll_output`] (and the session's events from [`Self::session_mut`]).
    pub fn handle_input(&mut self, input: TurnInput, now_ms: u64) {
        match input {
            TurnInput::ChannelOpened => self.data_channel_open(now_ms),
            TurnInput::ChannelClosed => self.data_channel_closed(now_ms),
            TurnInput::ConversationSoFar(items) => self.restore_items(items),
            TurnInput::TypedRepliesInText(in_text) => self.set_typed_replies_in_text(in_text),
            TurnInput::SetTurnMode(mode) => self.set_turn_mode(mode, now_ms),
            TurnInput::KeyDown => self.push_to_talk_down(now_ms),
            TurnInput::KeyUp => self.push_to_talk_up(now_ms),
            TurnInput::CancelPress => self.cancel_press(now_ms),
            TurnInput::UserMessage(message) => self.send_user_message(&message, now_ms),
            TurnInput::ServerText(text) => self.server_text(&text, now_ms),
            TurnInput::ToolFinished { call_id, result } => {
                self.tool_finished(&call_id, result, now_ms)
            }
            TurnInput::AssistantAudio(chunk) => self.assistant_audio(chunk, now_ms),
            TurnInput::PlaybackProgress { item_id, played_ms } => {
                self.playback_progress(&item_id, played_ms)
            }
            TurnInput::PlaybackDrained => self.playback_drained(now_ms),
            TurnInput::DeviceChanged(device) => self.device_changed(device, now_ms),
            TurnInput::EchoCancelled { converged } => self.echo_cancelled(converged, now_ms),
            TurnInput::NearSpeech => self.near_speech(now_ms),
            TurnInput::WallClock(clock) => self.wall_clock(now_ms, clock),
            TurnInput::Aside(aside) => {
                self.advance(now_ms);
                self.ask_aside(aside);
            }
            TurnInput::Tick => self.advance(now_ms),
        }
    }

    /// The data channel opened: configure the session. The key stays gated until
    /// `session.updated`. The provider's session cap is counted from the first opening.
    fn data_channel_open(&mut self, now_ms: u64) {
        self.advance(now_ms);
        // A new session's input buffer is empty.
        self.input_buffer_dirty = self.capture.is_open();
        self.outbox.channel_opened();
        self.lifecycle.opened(now_ms);
        self.send_session_update();
    }

    /// Puts items into the provider's conversation, in order, after what it already holds:
    /// the conversation so far, when a new session carries it on. They go out after the
    /// `session.update` sent when the channel opens, and before any turn.
    fn restore_items(&mut self, items: Vec<walkie_openai::Item>) {
        for item in items {
            self.send(ClientEvent::ConversationItemCreate {
                previous_item_id: None,
                item,
            });
        }
    }

    /// The data channel closed: capture stops, the key is gated again, unsent events are dropped
    /// (they would go to a session that no longer exists).
    fn data_channel_closed(&mut self, now_ms: u64) {
        self.advance(now_ms);
        self.drop_early_audio();
        self.lifecycle.closed();
        self.outbox.channel_closed();
        self.press = Press::Idle;
        self.vad_utterance_open = false;
        self.close_capture();
        self.set_mic_gate(false);
        // Nobody is left to confirm a held reply.
        self.release_hold();
        self.responses.channel_closed();
        // An answer could only go to the session that asked: the calls end with it.
        self.outside_calls.clear();
        self.tool_reply_owed = false;
        self.asides_unanswered();
        self.finish_pending_response(now_ms);
        self.apply_pending_mode();
    }

    /// Switches between push-to-talk (hold or toggle) and hands-free during a call, keeping
    /// the conversation: the session's turn detection is updated, not the session replaced.
    ///
    /// A turn under way ends in the mode it began in (a press, its tail, or an utterance the
    /// server's VAD has heard and not yet committed); the switch follows when it ends. Then
    /// `session.update` goes out with the new turn detection, and capture opens for
    /// hands-free or closes for push-to-talk. Until the server has applied the update, VAD
    /// events it still sends under the old mode are ignored with a diagnostic.
    /// Typed messages are answered in text alone (`true`) or as the session says, from the
    /// next `response.create` on.
    fn set_typed_replies_in_text(&mut self, in_text: bool) {
        self.config.typed_replies_in_text = in_text;
    }

    fn set_turn_mode(&mut self, mode: TurnMode, now_ms: u64) {
        self.advance(now_ms);
        self.pending_mode = Some(mode);
        self.apply_pending_mode();
    }

    /// The turn mode asked for, if it is still waiting for the turn under way to end.
    pub fn pending_turn_mode(&self) -> Option<&TurnMode> {
        self.pending_mode.as_ref()
    }

    /// The push-to-talk key went down (hold mode), or was pressed (toggle mode).
    fn push_to_talk_down(&mut self, now_ms: u64) {
        self.advance(now_ms);
        let TurnMode::PushToTalk(press_mode) = self.config.mode else {
            // Hands-free: the key is not a turn control, but it stops a reply the user does
            // not want to talk over (the client cancels it: the server only does so for speech).
            if self.lifecycle.is_confirmed() && self.barge_in_with(now_ms, Canceller::Client) {
                return;
            }
            return self.diagnose(Diagnostic::Ignored {
                event_type: "push_to_talk_down".to_owned(),
                reason: "the controller is in hands-free mode",
            });
        };
        if !self.lifecycle.is_confirmed() {
            return self.hint(UiHint::NotReady);
        }
        match self.press.key_down(press_mode) {
            KeyDown::Begins => self.begin_press(now_ms),
            KeyDown::Repeats => self.diagnose(Diagnostic::RepeatedKeyDown),
            KeyDown::Releases => self.release(now_ms),
            // Pressed again within the tail: the same utterance goes on.
            KeyDown::GoesOn { down_at_ms } => {
                self.press = Press::Held {
                    down_at_ms,
                    speech_started: true,
                    stopped_reply: false,
                };
            }
        }
    }

    /// The push-to-talk key went up. In toggle mode it ends only a tap that stopped a reply
    /// (a press held long enough to count goes on until the next press); ignored when no
    /// press is in progress.
    fn push_to_talk_up(&mut self, now_ms: u64) {
        self.advance(now_ms);
        if let TurnMode::PushToTalk(press_mode) = self.config.mode
            && self.press.released_by_key_up(press_mode)
        {
            self.release(now_ms);
        }
    }

    /// The user takes the press under way back (Escape) before it is sent: capture stops,
    /// what the provider buffered is cleared, and no commit or response follows. The user's
    /// speech part the press opened ends with no transcript; its index is returned, so the
    /// message it became can be marked ([`ControllerOutput::PressCancelled`]). Nothing
    /// happens when no press is under way (held, or in its tail); in hands-free mode the
    /// provider, not a press, decides what is sent.
    fn cancel_press(&mut self, now_ms: u64) {
        self.advance(now_ms);
        let (opened_part, speaking) = match self.press {
            Press::Idle => return,
            Press::Held { speech_started, .. } => (speech_started, speech_started),
            // The key-up already ended the user's speech.
            Press::Tail { .. } => (true, false),
        };
        self.press = Press::Idle;
        self.close_capture();
        self.send(ClientEvent::InputAudioBufferClear);
        if speaking {
            self.emit(SessionEvent::InputSpeechEnd(Box::default()), now_ms);
        }
        let cancelled = opened_part
            .then(|| self.end_uncommitted_user_part(now_ms))
            .flatten();
        self.apply_pending_mode();
        if let Some(part) = cancelled {
            self.outbox.answer(ControllerOutput::PressCancelled(part));
        }
    }

    /// The user wrote a message during the call: its text and pictures join the conversation
    /// as the user's (`conversation.item.create` with `input_image` and `input_text` parts, as
    /// few items as fit the data channel: see [`user_message`](super::user_message)). When it
    /// has text, a reply is asked for: at once when none is active, else when the active one
    /// ends (a reply under way is not cut, as a press would cut it). Pictures alone ask for
    /// none: the user goes on to ask about them, typing or speaking. The session reports the
    /// message delivered ([`SessionEvent::EnqueuedMessages`], under the id of the last event
    /// that carried it), so the transcript shows it as the user's message in an exchange of
    /// its own. [`ControllerOutput::MessageSent`] says it went out: not before the session is
    /// set up ([`UiHint::NotReady`]), not when empty, not when its text is longer than
    /// [`MAX_USER_TEXT_BYTES`] ([`UiHint::TextTooLong`]) or a picture larger than an item
    /// holds ([`UiHint::PictureTooLarge`]).
    fn send_user_message(&mut self, message: &UserMessage, now_ms: u64) {
        self.advance(now_ms);
        if message.is_empty() {
            return;
        }
        let text = message.text.trim();
        if !user_text_fits(text) {
            self.hint(UiHint::TextTooLong {
                max_bytes: MAX_USER_TEXT_BYTES,
            });
            return;
        }
        let items = match user_items(message) {
            Ok(items) => items,
            Err(PartTooLarge { bytes }) => {
                self.hint(UiHint::PictureTooLarge {
                    bytes,
                    max_bytes: MAX_ITEM_EVENT_BYTES,
                });
                return;
            }
        };
        if !self.lifecycle.is_confirmed() {
            self.hint(UiHint::NotReady);
            return;
        }
        let mut enqueue_id = String::new();
        for item in items {
            enqueue_id = self.send(ClientEvent::ConversationItemCreate {
                previous_item_id: None,
                item,
            });
        }
        if !text.is_empty() {
            self.last_turn_typed = true;
            self.request_response();
        }
        let parts = message
            .pictures
            .iter()
            .cloned()
            .map(UserContent::Image)
            .chain((!text.is_empty()).then(|| UserContent::Text {
                content: text.to_owned(),
            }))
            .collect();
        let delivered = EnqueuedMessagesEvent {
            enqueue_id,
            messages: vec![EnqueuedMessage { parts }],
        };
        self.emit(SessionEvent::EnqueuedMessages(Box::new(delivered)), now_ms);
        self.outbox.answer(ControllerOutput::MessageSent);
    }

    /// Ends the user part of the press not yet committed (the newest with no item and no
    /// commit), if there is one, and says which it was.
    fn end_uncommitted_user_part(&mut self, now_ms: u64) -> Option<PartIndex> {
        let slot = self.parts.uncommitted_user_slot()?;
        Some(self.end_user_part(slot, now_ms))
    }

    /// A data-channel message. Text that is not a server event becomes a recoverable session
    /// error and a diagnostic; the controller goes on.
    fn server_text(&mut self, text: &str, now_ms: u64) {
        match decode_server_event(text) {
            Ok(event) => self.server_event(event, now_ms),
            Err(error) => {
                self.advance(now_ms);
                self.response_activity_ms = now_ms;
                self.stats.undecodable_events += 1;
                let code = decode_error_code(&error);
                self.emit(
                    SessionEvent::SessionError(Box::new(RealtimeSessionErrorEvent {
                        message: error.to_string(),
                        error_type: Some("undecodable_server_event".to_owned()),
                        code: Some(code.to_owned()),
                        recoverable: true,
                    })),
                    now_ms,
                );
                self.diagnose(Diagnostic::Undecodable(error));
            }
        }
    }

    /// A decoded server event.
    fn server_event(&mut self, event: ServerEvent, now_ms: u64) {
        self.advance(now_ms);
        if self.aside_event(&event) {
            return;
        }
        self.response_activity_ms = now_ms;
        if matches!(
            event,
            ServerEvent::OutputAudioBufferStarted { .. }
                | ServerEvent::OutputAudioDelta { .. }
                | ServerEvent::OutputAudioTranscriptDelta { .. }
        ) {
            self.lifecycle.assistant_audio_started();
        }
        self.map_server_event(event, now_ms);
    }

    /// Decoded assistant audio (RTP over WebRTC), to be played: it becomes an assistant speech
    /// delta. Audio of a reply cut by a barge-in is dropped.
    ///
    /// Over WebRTC the data channel says when a reply is audible (`output_audio_buffer.started`)
    /// and which item its audio belongs to; while no reply is, silence is nobody's speech
    /// (a server may send it between replies) and sound is held until those events come,
    /// which a lost SCTP packet delays while RTP flows on.
    fn assistant_audio(&mut self, chunk: AudioChunk, now_ms: u64) {
        self.advance(now_ms);
        let sounding = is_sounding(&chunk);
        if self.config.transport == Transport::WebRtc && !self.audibility.is_audible() {
            if !sounding && self.early_audio.is_empty() {
                self.stats.silent_audio_chunks += 1;
                return;
            }
            if self.audibility.admits_audio() {
                // The model has spoken, whenever it is heard: the voice is fixed from now.
                self.lifecycle.assistant_audio_started();
                self.stats.early_audio_chunks += 1;
                self.early_audio.push(chunk);
                self.early_audio_since_ms.get_or_insert(now_ms);
                self.release_overdue_early_audio(now_ms);
                return;
            }
        }
        self.take_assistant_audio(chunk, sounding, now_ms);
    }

    fn take_assistant_audio(&mut self, chunk: AudioChunk, sounding: bool, now_ms: u64) {
        self.response_activity_ms = now_ms;
        self.audibility.output_active(now_ms);
        self.lifecycle.assistant_audio_started();
        if sounding {
            // Only sound keeps a reply that said it stopped going: silence may never end.
            self.audibility.audio_arrived(now_ms);
        }
        self.push_assistant_audio(chunk, now_ms);
    }

    /// Plays the held reply audio now that its reply is audible.
    fn release_early_audio(&mut self, now_ms: u64) {
        self.early_audio_since_ms = None;
        for chunk in std::mem::take(&mut self.early_audio) {
            let sounding = is_sounding(&chunk);
            self.take_assistant_audio(chunk, sounding, now_ms);
        }
    }

    /// Held audio whose reply's start has not come in [`EARLY_AUDIO_MAX_MS`] is the active
    /// response's (its start was lost with the call's data channel, or is very late); with no
    /// response active it belongs to nobody and is dropped.
    fn release_overdue_early_audio(&mut self, now_ms: u64) {
        let Some(since_ms) = self.early_audio_since_ms else {
            return;
        };
        if now_ms.saturating_sub(since_ms) < EARLY_AUDIO_MAX_MS {
            return;
        }
        match self.responses.active().map(str::to_owned) {
            Some(response_id) if !self.is_cut(&response_id) => {
                self.output_became_audible(response_id, now_ms);
            }
            _ => self.drop_early_audio(),
        }
    }

    /// Held audio that will never be played (a barge-in, the call's end).
    pub(super) fn drop_early_audio(&mut self) {
        self.stats.dropped_audio_chunks += self.early_audio.len() as u64;
        self.early_audio.clear();
        self.early_audio_since_ms = None;
    }

    /// The audio driver played `played_ms` of the assistant item `item_id` so far.
    fn playback_progress(&mut self, item_id: &str, played_ms: u64) {
        self.audibility.played(item_id, played_ms);
    }

    /// The local playback queue ran dry. Over WebSocket this is the end of the assistant being
    /// audible (over WebRTC `output_audio_buffer.stopped` says so).
    fn playback_drained(&mut self, now_ms: u64) {
        self.advance(now_ms);
        if self.config.transport == Transport::WebSocket && self.audibility.is_audible() {
            self.output_became_inaudible(now_ms);
        }
    }

    /// An audio device changed. A new microphone while capturing is reopened (no pre-roll: the
    /// warm buffer belongs to the old device).
    fn device_changed(&mut self, device: DeviceDirection, now_ms: u64) {
        self.advance(now_ms);
        if device == DeviceDirection::Input && self.capture.is_open() {
            self.command(AudioCommand::CloseCapture);
            self.command(AudioCommand::OpenCapture { pre_roll_ms: 0 });
            self.diagnose(Diagnostic::CaptureReopened);
        }
    }

    /// The uplink's echo canceller has converged on the echo path (`true`), or no longer
    /// holds (`false`: a new device, a new path to learn). While it holds, nothing is gated:
    /// the user can talk over a reply and the server's voice detection hears them; until then,
    /// and without one, the mic is gated while the assistant is audible (half duplex).
    fn echo_cancelled(&mut self, converged: bool, now_ms: u64) {
        self.advance(now_ms);
        if self.config.echo_canceller == converged {
            return;
        }
        self.config.echo_canceller = converged;
        if converged {
            self.set_mic_gate(false);
        } else if self.audibility.is_audible() && !matches!(self.press, Press::Held { .. }) {
            self.set_mic_gate(true);
        }
    }

    /// Hands-free, with the echo canceller trusted: the microphone heard someone start talking
    /// while the reply plays. The reply is held at once (not dropped: a cough or a voice in
    /// the room is not a barge-in) until the provider's `speech_started` cuts it, or for
    /// [`NEAR_SPEECH_HOLD_MS`], after which it goes on where it stopped.
    fn near_speech(&mut self, now_ms: u64) {
        self.advance(now_ms);
        if self.config.echo_canceller
            && self.config.mode.server_interrupts()
            && self.audibility.is_audible()
            && self.held_until_ms.is_none()
        {
            self.held_until_ms = Some(now_ms.saturating_add(NEAR_SPEECH_HOLD_MS));
            self.command(AudioCommand::HoldPlayback { held: true });
        }
    }

    /// The shell's wall-clock reading at session time `now_ms`, for tools that need the date.
    fn wall_clock(&mut self, now_ms: u64, clock: WallClock) {
        self.advance(now_ms);
        self.wall_clock = Some((now_ms, clock));
    }

    /// When the next timer is due, so the driver knows when a [`TurnInput::Tick`] is due (qualifying a press, the tail,
    /// the maximum press, the session-limit warnings).
    pub fn next_deadline_ms(&self) -> Option<u64> {
        [
            self.press.deadline_ms(&self.config),
            self.lifecycle.deadline_ms(&self.config),
            self.audibility.late_audio_until_ms(),
            self.early_audio_since_ms
                .map(|since_ms| since_ms + EARLY_AUDIO_MAX_MS),
            self.stopped_watchdog_at(),
            self.response_watchdog_at(),
            self.held_until_ms,
        ]
        .into_iter()
        .flatten()
        .min()
    }

    // ----------------------------------------------------------------------------------------
    // Outputs
    // ----------------------------------------------------------------------------------------

    /// The next output, in the order the controller decided them: a barge-in's
    /// [`AudioCommand::FlushPlayback`] comes before its `response.cancel`. Client events are
    /// queued only while the data channel is open, and dropped when it closes.
    pub fn poll_output(&mut self) -> Option<ControllerOutput> {
        let state = self.turn_state();
        self.outbox.turn_state(state);
        let gate = self.reply_gate();
        self.outbox.reply_audio(gate, self.audibility.audio_item());
        self.outbox.pop()
    }

    /// Where the turn stands now (told in the outputs as it changes).
    pub fn turn_state(&self) -> TurnState {
        TurnState {
            ready: self.is_ready(),
            capturing: self.is_capturing(),
            assistant_audible: self.is_assistant_audible(),
            replying: self.responses.active().is_some(),
            awaits_reply: self.awaits_reply(),
            waiting_tool_calls: !self.outside_calls.is_empty(),
            press: self.config.mode.press_mode(),
        }
    }

    /// Whether the reply audio the driver decodes is heard now ([`super::ReplyAudio`]): not a cut
    /// reply's stragglers, nor a reply starting under a held key in half duplex (it is cut
    /// once its start comes); the audible reply's silences too; between replies, from the
    /// next one's first sound.
    fn reply_gate(&self) -> ReplyGate {
        let cut_under_key = !self.config.echo_canceller
            && matches!(self.config.mode, TurnMode::PushToTalk(_))
            && matches!(self.press, Press::Held { .. });
        if !self.audibility.admits_audio() || cut_under_key {
            ReplyGate::Drop
        } else if self.audibility.is_audible() {
            ReplyGate::Play
        } else {
            ReplyGate::FromSound
        }
    }

    /// The session the controller feeds: iterate it for the session events.
    pub fn session(&self) -> &Session {
        &self.session
    }

    /// The session, mutably (iteration, views).
    pub fn session_mut(&mut self) -> &mut Session {
        &mut self.session
    }

    /// The settings.
    pub fn config(&self) -> &TurnConfig {
        &self.config
    }

    /// The counters.
    pub fn stats(&self) -> ControllerStats {
        self.stats
    }

    /// Whether `session.updated` confirmed the configuration (the key works).
    pub fn is_ready(&self) -> bool {
        self.lifecycle.is_confirmed()
    }

    /// Whether capture is open.
    pub fn is_capturing(&self) -> bool {
        self.capture.is_open()
    }

    /// Whether the user hears the assistant now.
    pub fn is_assistant_audible(&self) -> bool {
        self.audibility.is_audible()
    }

    /// The response in progress on the server, if any.
    pub fn active_response_id(&self) -> Option<&str> {
        self.responses.active()
    }

    /// Whether a reply is owed: one is active, or asked for and not created yet (sent or
    /// queued). A turn's transcription may be billed in that gap.
    pub fn awaits_reply(&self) -> bool {
        self.responses.awaits_server() || self.responses.create_is_queued()
    }

    // ----------------------------------------------------------------------------------------
    // Push-to-talk
    // ----------------------------------------------------------------------------------------

    fn begin_press(&mut self, now_ms: u64) {
        let stopped_reply = self.barge_in(now_ms);
        if self.input_buffer_dirty {
            self.send(ClientEvent::InputAudioBufferClear);
        }
        self.open_capture(self.config.pre_roll_ms);
        self.press = Press::Held {
            down_at_ms: now_ms,
            speech_started: false,
            stopped_reply,
        };
        if Press::counts_after_ms(&self.config, stopped_reply) == 0 {
            self.start_user_speech_at_press(now_ms);
        }
    }

    /// The press counts: the user's speech starts, stamped at key-down.
    fn start_user_speech_at_press(&mut self, down_at_ms: u64) {
        self.press = Press::Held {
            down_at_ms,
            speech_started: true,
            stopped_reply: false,
        };
        self.emit(SessionEvent::InputSpeechStart(Box::default()), down_at_ms);
        self.open_user_part(None, down_at_ms);
    }

    fn release(&mut self, now_ms: u64) {
        let Press::Held {
            down_at_ms,
            speech_started,
            stopped_reply,
        } = self.press
        else {
            return;
        };
        let held_ms = now_ms.saturating_sub(down_at_ms);
        if !speech_started && held_ms < Press::counts_after_ms(&self.config, stopped_reply) {
            self.press = Press::Idle;
            self.close_capture();
            // A tap that stopped a reply did what it was for; any other short press is told.
            if stopped_reply {
                self.send(ClientEvent::InputAudioBufferClear);
            } else {
                self.hint(UiHint::PressTooShort {
                    held_ms,
                    min_press_ms: self.config.min_press_ms,
                });
            }
            return self.apply_pending_mode();
        }
        if !speech_started {
            self.start_user_speech_at_press(down_at_ms);
        }
        self.emit(SessionEvent::InputSpeechEnd(Box::default()), now_ms);
        let ends_at_ms = now_ms.saturating_add(self.config.tail_ms);
        self.press = Press::Tail {
            down_at_ms,
            ends_at_ms,
        };
        if self.config.tail_ms == 0 {
            self.finish_tail();
        }
    }

    /// The tail is over: the utterance is committed and a response is asked for (now, or after
    /// the active response is done).
    fn finish_tail(&mut self) {
        self.last_turn_typed = false;
        self.press = Press::Idle;
        self.close_capture();
        let commit_event_id = self.send(ClientEvent::InputAudioBufferCommit);
        self.parts.user_committed(&commit_event_id);
        let create = self.request_response();
        self.responses.committed(commit_event_id, create);
        self.apply_pending_mode();
    }

    // ----------------------------------------------------------------------------------------
    // Switching turn modes
    // ----------------------------------------------------------------------------------------

    fn turn_under_way(&self) -> bool {
        self.press != Press::Idle || self.vad_utterance_open
    }

    /// Carries out a pending [`Self::set_turn_mode`] once no turn is under way.
    pub(super) fn apply_pending_mode(&mut self) {
        if self.pending_mode.is_none() || self.turn_under_way() {
            return;
        }
        let Some(mode) = self.pending_mode.take() else {
            return;
        };
        if mode == self.config.mode {
            return;
        }
        let was_hands_free = matches!(self.config.mode, TurnMode::HandsFree(_));
        self.config.mode = mode;
        let hands_free = matches!(self.config.mode, TurnMode::HandsFree(_));
        if was_hands_free == hands_free && !hands_free {
            // Hold and toggle differ only in how key-ups count: the server is not told.
            return;
        }
        if self.outbox.is_open() {
            self.send_session_update();
        }
        if self.lifecycle.is_confirmed() {
            if hands_free {
                self.open_capture(0);
            } else {
                self.close_capture();
            }
        }
    }

    // ----------------------------------------------------------------------------------------
    // Shared machinery (also used by the mapping)
    // ----------------------------------------------------------------------------------------

    /// Ask for a response: sent now when none is active or being created, queued otherwise and
    /// sent at the next `response.done`.
    pub(super) fn request_response(&mut self) -> PairedCreate {
        let text_only = self.config.typed_replies_in_text && self.last_turn_typed;
        if self.responses.can_create() {
            let event_id = self.send(ClientEvent::ResponseCreate {
                response: text_only.then(text_only_response),
            });
            self.responses.create_sent(event_id.clone());
            self.response_activity_ms = self.latest_ms;
            PairedCreate::Sent(event_id)
        } else {
            // Creates that wait are answered by one response: in text only if all asked so.
            self.queued_create_text_only = if self.responses.create_is_queued() {
                self.queued_create_text_only && text_only
            } else {
                text_only
            };
            self.responses.queue_create();
            PairedCreate::Queued
        }
    }

    /// Send the queued `response.create`, if one waits and nothing is active any more.
    pub(super) fn flush_queued_create(&mut self) {
        if self.responses.take_queued_create() {
            let text_only = std::mem::take(&mut self.queued_create_text_only);
            let event_id = self.send(ClientEvent::ResponseCreate {
                response: text_only.then(text_only_response),
            });
            self.responses.queued_create_sent(event_id);
            self.response_activity_ms = self.latest_ms;
        }
    }

    /// The user interrupts: if the assistant is audible, flush local playback at once, record how
    /// much was heard, and tell the server (cancel / clear / truncate as the mode and transport
    /// need). Returns whether it was a barge-in.
    pub(super) fn barge_in(&mut self, now_ms: u64) -> bool {
        let canceller = if self.config.mode.server_interrupts() {
            Canceller::Server
        } else {
            Canceller::Client
        };
        self.barge_in_with(now_ms, canceller)
    }

    /// As [`Self::barge_in`], with who cancels the reply at the server said outright.
    fn barge_in_with(&mut self, now_ms: u64, canceller: Canceller) -> bool {
        let Some(cut) = self.audibility.cut() else {
            return false;
        };
        self.command(AudioCommand::FlushPlayback);
        // The flush ends a hold.
        self.held_until_ms = None;
        if let Some(index) = self.parts.assistant_speech()
            && let Err(error) = self.session.mark_interrupted(index, cut.played_ms)
        {
            self.refused(error);
        }
        self.output_became_inaudible(now_ms);

        let server_cancels = canceller == Canceller::Server;
        let mut cancelled = false;
        if !server_cancels && let Some(active) = self.responses.cancel_due() {
            self.send(super::openai_map::cancel_of(&active));
            cancelled = true;
        }
        match self.config.transport {
            Transport::WebRtc => {
                if !server_cancels || cancelled {
                    self.send(ClientEvent::OutputAudioBufferClear);
                }
            }
            Transport::WebSocket => {
                if let Some(item_id) = cut.item_id {
                    self.send(ClientEvent::ConversationItemTruncate {
                        item_id,
                        content_index: 0,
                        audio_end_ms: cut.played_ms,
                    });
                }
            }
        }
        true
    }

    /// The assistant is audible (output started): session event, and the mic gate without AEC.
    pub(super) fn output_became_audible(&mut self, response_id: String, now_ms: u64) {
        self.audibility.became_audible(response_id, now_ms);
        if !self.session.is_output_audible() {
            self.emit(SessionEvent::OutputSpeechStart, now_ms);
        }
        if self.config.echo_canceller {
            self.release_early_audio(now_ms);
            return;
        }
        match (&self.config.mode, self.press) {
            // Half duplex in push-to-talk: a reply that starts while the user holds the key
            // would either be sent back into the call or mute the user; the press wins, as a
            // key-down while the assistant is audible does.
            (TurnMode::PushToTalk(_), Press::Held { .. }) => {
                self.barge_in(now_ms);
            }
            // Otherwise the mic is gated while the assistant is audible: in hands-free mode, in
            // a push-to-talk tail, and between presses, so the warm mic's pre-roll that a press
            // sends holds silence, not the assistant.
            _ => self.set_mic_gate(true),
        }
        // After a barge-in the cut reply's audio is refused, the held audio with it.
        self.release_early_audio(now_ms);
    }

    /// The assistant stopped being audible (drained, cleared, or flushed by a barge-in).
    /// The server sent the last of the reply's audio (`output_audio_buffer.stopped`). Over
    /// WebRTC its last packets may still be in flight or in the jitter buffer: the reply ends
    /// once [`crate::turn::LATE_AUDIO_GRACE_MS`] pass without audio.
    pub(super) fn output_stopped(&mut self, now_ms: u64) {
        if self.config.transport == Transport::WebRtc && self.audibility.is_audible() {
            self.audibility.await_late_audio(now_ms);
        } else {
            self.output_became_inaudible(now_ms);
        }
    }

    pub(super) fn output_became_inaudible(&mut self, now_ms: u64) {
        self.audibility.became_inaudible();
        self.release_hold();
        if self.session.is_output_audible() {
            self.emit(SessionEvent::OutputSpeechEnd, now_ms);
        }
        self.set_mic_gate(false);
        self.finish_pending_response(now_ms);
    }

    /// Carries out a `response.done` that waited for the reply's audio to stop.
    pub(super) fn finish_pending_response(&mut self, now_ms: u64) {
        if self.audibility.take_deferred_done() {
            self.finish_response(now_ms);
        }
    }

    /// The reply is over: its open parts close, and the session completes the turn unless a
    /// tool is still to run.
    pub(super) fn finish_response(&mut self, now_ms: u64) {
        // The session ends the reply's open parts itself at its terminal.
        self.parts.assistant_closed();
        if let Err(error) = self.session.response_done(now_ms) {
            self.refused(error);
        }
    }

    /// Lets a held reply go on (or the speaker play what comes next).
    fn release_hold(&mut self) {
        if self.held_until_ms.take().is_some() {
            self.command(AudioCommand::HoldPlayback { held: false });
        }
    }

    fn set_mic_gate(&mut self, gated: bool) {
        if self.capture.set_gated(gated) {
            self.command(AudioCommand::GateMic { gated });
        }
    }

    fn open_capture(&mut self, pre_roll_ms: u64) {
        // What is sent from now on lands in the provider's input buffer.
        self.input_buffer_dirty = true;
        if self.capture.set_open(true) {
            self.command(AudioCommand::OpenCapture { pre_roll_ms });
        }
    }

    fn close_capture(&mut self) {
        if self.capture.set_open(false) {
            self.command(AudioCommand::CloseCapture);
        }
    }

    pub(super) fn push_assistant_audio(&mut self, chunk: AudioChunk, now_ms: u64) {
        if !self.audibility.admits_audio() {
            self.stats.dropped_audio_chunks += 1;
            return;
        }
        if self.config.transport == Transport::WebSocket && !self.audibility.is_audible() {
            let response_id = self.responses.active().unwrap_or_default().to_owned();
            self.output_became_audible(response_id, now_ms);
            if !self.audibility.admits_audio() {
                // It started under a held key and was cut at once (half duplex).
                self.stats.dropped_audio_chunks += 1;
                return;
            }
        }
        let item_id = self.audibility.audio_item().map(str::to_owned);
        if let Some(index) = self.assistant_part_for(item_id.as_deref(), PartKind::Speech, now_ms) {
            let delta = PartDelta::assistant_audio(chunk);
            if let Err(error) = self.session.push_delta(index, delta, now_ms) {
                self.refused(error);
            }
        }
    }

    /// The open assistant part for this item and kind, starting one (and ending a different one)
    /// as needed.
    pub(super) fn assistant_part_for(
        &mut self,
        item_id: Option<&str>,
        kind: PartKind,
        now_ms: u64,
    ) -> Option<PartIndex> {
        if let Some(index) = self.parts.assistant_for(item_id, kind) {
            return Some(index);
        }
        self.end_assistant_part(now_ms);
        let part = match kind {
            PartKind::Text => Part::text(),
            PartKind::Speech | PartKind::ToolCall => Part::speech(Speaker::Assistant),
        };
        match self.session.start_part(part, now_ms) {
            Ok(index) => {
                self.parts.assistant_opened(index, kind, item_id);
                Some(index)
            }
            Err(error) => {
                self.refused(error);
                None
            }
        }
    }

    pub(super) fn end_assistant_part(&mut self, now_ms: u64) {
        if let Some(index) = self.parts.assistant_closed()
            && let Err(error) = self.session.end_part(index, now_ms)
        {
            self.refused(error);
        }
    }

    /// Open a user speech part (at the user's speech start). At most
    /// [`crate::turn::MAX_OPEN_USER_PARTS`] stay open: the oldest, whose transcript never came,
    /// ends to make room, so a provider inventing item ids cannot open parts (and the store's
    /// files) without bound.
    pub(super) fn open_user_part(
        &mut self,
        item_id: Option<String>,
        now_ms: u64,
    ) -> Option<UserSlot> {
        if self.parts.user_parts_full() {
            self.diagnose(Diagnostic::Ignored {
                event_type: "conversation.item".to_owned(),
                reason: "too many user items open: the oldest one's transcript is no longer awaited",
            });
            self.end_user_part(0, now_ms);
        }
        match self.session.start_part(Part::speech(Speaker::User), now_ms) {
            Ok(index) => Some(self.parts.user_opened(index, item_id)),
            Err(error) => {
                self.refused(error);
                None
            }
        }
    }

    /// End the user part at `slot` (its item is remembered so a late duplicate is not
    /// reopened); its index.
    pub(super) fn end_user_part(&mut self, slot: UserSlot, now_ms: u64) -> PartIndex {
        let index = self.parts.user_ended(slot);
        if let Err(error) = self.session.end_part(index, now_ms) {
            self.refused(error);
        }
        index
    }

    pub(super) fn tool_context(&self, now_ms: u64) -> ToolContext {
        super::tools::tool_context(now_ms, self.wall_clock)
    }

    /// `session.update` with the configured session: never `model`, `voice` only before the
    /// first assistant audio (see [`TurnConfig::session_update`]).
    fn send_session_update(&mut self) {
        let session = self
            .config
            .session_update(self.tools.definitions(), self.lifecycle.voice_can_change());
        self.send(ClientEvent::SessionUpdate {
            session: Box::new(session),
        });
    }

    /// Queue a client event under a fresh id; returns the id. While the data channel is
    /// closed the event is not queued: it would go to a session that no longer exists.
    pub(super) fn send(&mut self, event: ClientEvent) -> String {
        if matches!(
            event,
            ClientEvent::InputAudioBufferClear | ClientEvent::InputAudioBufferCommit
        ) {
            self.input_buffer_dirty = false;
        }
        self.outbox.send(event)
    }

    /// The type of a client event we sent under this id, while remembered.
    pub(super) fn sent_event_type(&self, event_id: &str) -> Option<&'static str> {
        self.outbox.sent_event_type(event_id)
    }

    /// Push a session event; a refusal becomes a diagnostic (never a panic).
    pub(super) fn emit(&mut self, event: SessionEvent, now_ms: u64) {
        if let Err(error) = self.session.push(event, now_ms) {
            self.refused(error);
        }
    }

    pub(super) fn refused(&mut self, error: crate::error::PushError) {
        self.stats.refused_session_events += 1;
        self.diagnose(Diagnostic::SessionRefused(error));
    }

    pub(super) fn hint(&mut self, hint: UiHint) {
        self.note(ControllerOutput::Hint(hint));
    }

    /// Queues the answer to an input: never dropped.
    pub(super) fn answer(&mut self, answer: ControllerOutput) {
        self.outbox.answer(answer);
    }

    pub(super) fn billed(&mut self, usage: walkie_openai::Usage) {
        self.outbox.billed(usage);
    }

    pub(super) fn transcribed(&mut self, usage: walkie_openai::TranscriptionUsage) {
        self.outbox.transcribed(usage);
    }

    pub(super) fn rate_limits(&mut self, limits: Vec<walkie_openai::RateLimit>) {
        self.outbox.rate_limits(limits);
    }

    pub(super) fn request_tool_call(&mut self, request: ToolCallRequest) {
        self.outbox.tool_call(request);
    }

    /// The answer to a [`ControllerOutput::ToolCall`]: what the tool gave (or why it gave
    /// nothing: a denial, a crash, a timeout, each said to the model as an error) goes to the
    /// model, and once no other call waits, the reply is asked for. An answer for a call not
    /// waiting (answered already, or from a session that ended) is ignored.
    fn tool_finished(
        &mut self,
        call_id: &str,
        result: Result<serde_json::Value, ToolError>,
        now_ms: u64,
    ) {
        self.advance(now_ms);
        let Some(tool_name) = self.outside_calls.remove(call_id) else {
            return self.diagnose(Diagnostic::Ignored {
                event_type: "tool result".to_owned(),
                reason: "no call of this id waits for an answer",
            });
        };
        let (content, outcome) = super::tools::tool_answer(result);
        self.answer_tool_call(call_id.to_owned(), tool_name, content, outcome, now_ms);
    }

    /// The calls of outside tools still waiting for their answer (call id, tool name).
    pub fn waiting_tool_calls(&self) -> impl Iterator<Item = (&str, &str)> {
        self.outside_calls
            .iter()
            .map(|(call_id, name)| (call_id.as_str(), name.as_str()))
    }

    pub(super) fn diagnose(&mut self, diagnostic: Diagnostic) {
        self.note(ControllerOutput::Diagnostic(diagnostic));
    }

    fn command(&mut self, command: AudioCommand) {
        self.outbox.command(command);
    }

    /// Queue a hint or diagnostic; when too many wait, the oldest of them gives way.
    fn note(&mut self, note: ControllerOutput) {
        if self.outbox.note(note) {
            self.stats.dropped_notes += 1;
        }
    }

    /// `session.updated` arrived for the first time since the channel opened.
    pub(super) fn session_confirmed_now(&mut self) {
        self.lifecycle.confirmed();
        self.hint(UiHint::Ready);
        if matches!(self.config.mode, TurnMode::HandsFree(_)) {
            self.open_capture(0);
        }
    }

    // ----------------------------------------------------------------------------------------
    // Timers
    // ----------------------------------------------------------------------------------------

    /// When the reply that is still audible after its response ended stops being waited for.
    fn stopped_watchdog_at(&self) -> Option<u64> {
        (self.config.transport == Transport::WebRtc
            && self.audibility.is_audible()
            && self.responses.active().is_none()
            && self.audibility.late_audio_until_ms().is_none())
        .then(|| {
            self.audibility
                .output_activity_ms()
                .saturating_add(STOPPED_WATCHDOG_MS)
        })
    }

    /// When an active response (or an unanswered create) that the server went silent on ends.
    fn response_watchdog_at(&self) -> Option<u64> {
        self.responses.awaits_server().then(|| {
            self.response_activity_ms
                .saturating_add(RESPONSE_DONE_WATCHDOG_MS)
        })
    }

    /// The server went silent on the active response: it ends as incomplete, as if its
    /// `response.done` had come (a create never answered is forgotten), so the next turn can
    /// be asked for.
    fn end_silent_response(&mut self, now_ms: u64) {
        let waited_ms = now_ms.saturating_sub(self.response_activity_ms);
        let response_id = self.responses.active().map(str::to_owned);
        self.diagnose(Diagnostic::ResponseDoneMissing {
            response_id: response_id.clone(),
            waited_ms,
        });
        let what = match &response_id {
            Some(id) if id.is_empty() => "the active response got no response.done".to_owned(),
            Some(id) => format!("response {id} got no response.done"),
            None => "response.create got no response.created".to_owned(),
        };
        self.emit(
            SessionEvent::SessionError(Box::new(RealtimeSessionErrorEvent {
                message: format!("{what} within {waited_ms} ms of silence; it was ended"),
                error_type: Some("turn_watchdog".to_owned()),
                code: Some("response_done_missing".to_owned()),
                recoverable: true,
            })),
            now_ms,
        );
        self.response_activity_ms = now_ms;
        match response_id {
            Some(id) => self.on_response_done(
                walkie_openai::Response {
                    id,
                    status: walkie_openai::ResponseStatus::Incomplete,
                    status_details: None,
                    output: Vec::new(),
                    conversation_id: None,
                    output_modalities: None,
                    usage: None,
                    metadata: None,
                },
                now_ms,
            ),
            None => {
                self.responses.create_unanswered();
                self.flush_queued_create();
            }
        }
    }

    /// Run every timer due by `now_ms`, each at its own deadline.
    fn advance(&mut self, now_ms: u64) {
        self.latest_ms = self.latest_ms.max(now_ms);
        while let Some(due) = self.press.due(&self.config, now_ms) {
            match due {
                PressDue::Counts { down_at_ms } => self.start_user_speech_at_press(down_at_ms),
                PressDue::Overlong { released_at_ms } => {
                    self.hint(UiHint::ReleasedAutomatically {
                        held_ms: self.config.max_press_ms,
                    });
                    self.release(released_at_ms);
                }
                PressDue::TailOver => self.finish_tail(),
            }
        }
        if self
            .audibility
            .late_audio_until_ms()
            .is_some_and(|until_ms| now_ms >= until_ms)
        {
            self.output_became_inaudible(now_ms);
        }
        self.release_overdue_early_audio(now_ms);
        if self
            .held_until_ms
            .is_some_and(|until_ms| now_ms >= until_ms)
        {
            self.diagnose(Diagnostic::NearSpeechUnconfirmed {
                held_ms: NEAR_SPEECH_HOLD_MS,
            });
            self.release_hold();
        }
        if let Some(at_ms) = self.stopped_watchdog_at()
            && now_ms >= at_ms
        {
            self.diagnose(Diagnostic::StoppedMissing {
                response_id: self.audibility.audible().unwrap_or_default().to_owned(),
                waited_ms: at_ms.saturating_sub(self.audibility.output_activity_ms()),
            });
            self.output_became_inaudible(at_ms);
        }
        if let Some(at_ms) = self.response_watchdog_at()
            && now_ms >= at_ms
        {
            self.end_silent_response(at_ms);
        }
        while let Some(due) = self.lifecycle.poll_due(&self.config, now_ms) {
            match due {
                LifecycleDue::ConfirmationOverdue { waited_ms } => {
                    self.diagnose(Diagnostic::SessionNotConfirmed { waited_ms });
                    self.session_confirmed_now();
                }
                LifecycleDue::LimitNear { remaining_ms } => {
                    self.hint(UiHint::SessionEndingSoon { remaining_ms })
                }
                LifecycleDue::LimitReached => self.hint(UiHint::SessionLimitReached),
            }
        }
    }

    // ----------------------------------------------------------------------------------------
    // The mapping's view of the turn
    // ----------------------------------------------------------------------------------------

    /// Hands-free: the server's VAD heard the user start an utterance.
    pub(super) fn utterance_heard(&mut self) {
        self.vad_utterance_open = true;
        self.last_turn_typed = false;
    }

    /// The server committed the utterance under way: a mode switch may go ahead.
    pub(super) fn utterance_committed(&mut self) {
        self.vad_utterance_open = false;
        self.apply_pending_mode();
    }
}

/// The code a session error gives a data-channel message that could not be decoded.
pub(super) fn decode_error_code(error: &walkie_openai::DecodeError) -> &'static str {
    match error {
        walkie_openai::DecodeError::Syntax { .. } => "malformed_json",
        walkie_openai::DecodeError::Schema { .. } => "schema_mismatch",
        walkie_openai::DecodeError::Unrepresentable { .. } => "unrepresentable_json",
        _ => "not_an_event",
    }
}

/// A `response.create`'s settings for an answer in text alone.
fn text_only_response() -> walkie_openai::ResponseConfig {
    walkie_openai::ResponseConfig {
        output_modalities: Some(vec![walkie_openai::Modality::Text]),
        ..walkie_openai::ResponseConfig::default()
    }
}
