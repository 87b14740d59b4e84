//! The seam between the conversation and a provider family: one interface every family's turn
//! machine offers, whatever its wire.
//!
//! Why a trait: the conversation machine decides the status line, the store's records, redials
//! and renewals, and none of that depends on the protocol. It feeds a turn engine the user's
//! key, the call's data-channel text, the audio engine's reports and the time, and polls it for
//! [`ControllerOutput`]s and session events; where the turn stands comes in those outputs
//! ([`super::TurnState`]), so nothing above asks an engine about its state.
//! [`TurnController`] is the Realtime API's engine, [`LiveTurns`](super::LiveTurns) the Live
//! API's; a third family (a WebSocket provider, a local model server) implements this trait,
//! declares its [`FamilyProfile`], and needs nothing else changed above it.

use crate::audio::{AudioChunk, DeviceDirection};
use crate::event::PartIndex;
use crate::session::Session;
use crate::turn::controller::TurnController;
use crate::turn::family::FamilyProfile;
use crate::turn::output::ControllerOutput;
use crate::turn::tools::{ToolError, WallClock};
use crate::turn::user_message::UserMessage;
use crate::turn::{TurnMode, family::ProviderFamily};

/// One call's turn machine, sans-IO: inputs carry the caller's time, outputs are polled in the
/// order they were decided. See the module documentation.
pub trait TurnEngine: std::fmt::Debug + Send {
    /// What this engine's provider sends and expects.
    fn profile(&self) -> FamilyProfile;

    /// The data channel opened.
    fn data_channel_open(&mut self, now_ms: u64);
    /// The data channel closed: capture stops, the key is gated, unsent events are dropped.
    fn data_channel_closed(&mut self, now_ms: u64);
    /// The conversation so far, for a family that takes it over the data channel
    /// ([`super::HistoryRestore::OverDataChannel`]); others ignore it.
    fn restore_items(&mut self, items: Vec<walkie_openai::Item>);
    /// Typed messages are answered in text alone, or as the session says.
    fn set_typed_replies_in_text(&mut self, in_text: bool);
    /// Push-to-talk (hold or toggle) or hands-free, from the end of the turn under way
    /// ([`super::TurnState::press`] says when it applies).
    fn set_turn_mode(&mut self, mode: TurnMode, now_ms: u64);

    /// The talk key went down (hold) or was pressed (toggle).
    fn push_to_talk_down(&mut self, now_ms: u64);
    /// The talk key went up.
    fn push_to_talk_up(&mut self, now_ms: u64);
    /// The press under way is taken back (Escape): the user part it opened, if any.
    fn cancel_press(&mut self, now_ms: u64) -> Option<PartIndex>;
    /// A typed message (and pictures); whether it went out.
    fn send_user_message(&mut self, message: &UserMessage, now_ms: u64) -> bool;
    /// A data-channel message from the provider.
    fn server_text(&mut self, text: &str, now_ms: u64);
    /// The answer to a [`ControllerOutput::ToolCall`].
    fn tool_finished(
        &mut self,
        call_id: &str,
        result: Result<serde_json::Value, ToolError>,
        now_ms: u64,
    );

    /// Decoded assistant audio (RTP).
    fn assistant_audio(&mut self, chunk: AudioChunk, now_ms: u64);
    /// The speaker played `played_ms` of `item_id` so far.
    fn playback_progress(&mut self, item_id: &str, played_ms: u64);
    /// The speaker's queue ran dry.
    fn playback_drained(&mut self, now_ms: u64);
    /// An audio device changed.
    fn device_changed(&mut self, device: DeviceDirection, now_ms: u64);
    /// The echo canceller converged (`true`) or no longer holds.
    fn echo_cancelled(&mut self, converged: bool, now_ms: u64);
    /// The microphone heard the user start talking.
    fn near_speech(&mut self, now_ms: u64);
    /// The wall clock at session time `now_ms`, for tools.
    fn wall_clock(&mut self, now_ms: u64, clock: WallClock);
    /// Time passed.
    fn tick(&mut self, now_ms: u64);
    /// When [`Self::tick`] is next due.
    fn next_deadline_ms(&self) -> Option<u64>;

    /// The next output.
    fn poll_output(&mut self) -> Option<ControllerOutput>;
    /// The session the engine feeds.
    fn session_mut(&mut self) -> &mut Session;
}

/// The engine for a call of the family `config` names.
pub fn engine_for(config: super::TurnConfig, tools: super::ToolRegistry) -> Box<dyn TurnEngine> {
    match config.family {
        ProviderFamily::Realtime => Box::new(TurnController::new(config, tools)),
        ProviderFamily::Live => Box::new(super::LiveTurns::new(config, tools)),
    }
}

impl TurnEngine for TurnController {
    fn profile(&self) -> FamilyProfile {
        ProviderFamily::Realtime.profile()
    }
    fn data_channel_open(&mut self, now_ms: u64) {
        TurnController::data_channel_open(self, now_ms)
    }
    fn data_channel_closed(&mut self, now_ms: u64) {
        TurnController::data_channel_closed(self, now_ms)
    }
    fn restore_items(&mut self, items: Vec<walkie_openai::Item>) {
        TurnController::restore_items(self, items)
    }
    fn set_typed_replies_in_text(&mut self, in_text: bool) {
        TurnController::set_typed_replies_in_text(self, in_text)
    }
    fn set_turn_mode(&mut self, mode: TurnMode, now_ms: u64) {
        TurnController::set_turn_mode(self, mode, now_ms)
    }
    fn push_to_talk_down(&mut self, now_ms: u64) {
        TurnController::push_to_talk_down(self, now_ms)
    }
    fn push_to_talk_up(&mut self, now_ms: u64) {
        TurnController::push_to_talk_up(self, now_ms)
    }
    fn cancel_press(&mut self, now_ms: u64) -> Option<PartIndex> {
        TurnController::cancel_press(self, now_ms)
    }
    fn send_user_message(&mut self, message: &UserMessage, now_ms: u64) -> bool {
        TurnController::send_user_message(self, message, now_ms)
    }
    fn server_text(&mut self, text: &str, now_ms: u64) {
        TurnController::server_text(self, text, now_ms)
    }
    fn tool_finished(
        &mut self,
        call_id: &str,
        result: Result<serde_json::Value, ToolError>,
        now_ms: u64,
    ) {
        TurnController::tool_finished(self, call_id, result, now_ms)
    }
    fn assistant_audio(&mut self, chunk: AudioChunk, now_ms: u64) {
        TurnController::assistant_audio(self, chunk, now_ms)
    }
    fn playback_progress(&mut self, item_id: &str, played_ms: u64) {
        TurnController::playback_progress(self, item_id, played_ms)
    }
    fn playback_drained(&mut self, now_ms: u64) {
        TurnController::playback_drained(self, now_ms)
    }
    fn device_changed(&mut self, device: DeviceDirection, now_ms: u64) {
        TurnController::device_changed(self, device, now_ms)
    }
    fn echo_cancelled(&mut self, converged: bool, now_ms: u64) {
        TurnController::echo_cancelled(self, converged, now_ms)
    }
    fn near_speech(&mut self, now_ms: u64) {
        TurnController::near_speech(self, now_ms)
    }
    fn wall_clock(&mut self, now_ms: u64, clock: WallClock) {
        TurnController::wall_clock(self, now_ms, clock)
    }
    fn tick(&mut self, now_ms: u64) {
        TurnController::tick(self, now_ms)
    }
    fn next_deadline_ms(&self) -> Option<u64> {
        TurnController::next_deadline_ms(self)
    }
    fn poll_output(&mut self) -> Option<ControllerOutput> {
        TurnController::poll_output(self)
    }
    fn session_mut(&mut self) -> &mut Session {
        TurnController::session_mut(self)
    }
}
