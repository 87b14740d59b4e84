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
use crate::session::Session;
use crate::turn::controller::TurnController;
use crate::turn::family::FamilyProfile;
use crate::turn::output::ControllerOutput;
use crate::turn::tools::{ToolError, WallClock};
use crate::turn::user_message::UserMessage;
use crate::turn::{TurnMode, family::ProviderFamily};

/// What a turn engine is told, each with the caller's time (`now_ms`, monotonic, the session's
/// clock) beside it in [`TurnEngine::handle_input`].
#[derive(Debug, Clone, PartialEq)]
pub enum TurnInput {
    /// The data channel opened.
    ChannelOpened,
    /// The data channel closed: capture stops, the key is gated, unsent events are dropped.
    ChannelClosed,
    /// The conversation so far, for a family that takes it over the data channel
    /// ([`super::HistoryRestore::OverDataChannel`]); others ignore it. It goes out after the
    /// session's configuration and before any turn.
    ConversationSoFar(Vec<walkie_openai::Item>),
    /// Typed messages are answered in text alone (`true`), or as the session says.
    TypedRepliesInText(bool),
    /// Push-to-talk (hold or toggle) or hands-free, from the end of the turn under way
    /// ([`super::TurnState::press`] says when it applies).
    SetTurnMode(TurnMode),
    /// The talk key went down (hold) or was pressed (toggle).
    KeyDown,
    /// The talk key went up.
    KeyUp,
    /// The press under way is taken back (Escape); [`ControllerOutput::PressCancelled`] names
    /// the user part it opened, if it opened one.
    CancelPress,
    /// A typed message (and pictures); [`ControllerOutput::MessageSent`] says it went out.
    UserMessage(UserMessage),
    /// A data-channel message from the provider.
    ServerText(String),
    /// The answer to a [`ControllerOutput::ToolCall`].
    ToolFinished {
        /// The call answered.
        call_id: String,
        /// What the tool gave, or why it gave nothing.
        result: Result<serde_json::Value, ToolError>,
    },
    /// Decoded assistant audio (RTP).
    AssistantAudio(AudioChunk),
    /// The speaker played `played_ms` of `item_id` so far.
    PlaybackProgress {
        /// The assistant item played.
        item_id: String,
        /// How much of it, from its start.
        played_ms: u64,
    },
    /// The speaker's queue ran dry.
    PlaybackDrained,
    /// An audio device changed.
    DeviceChanged(DeviceDirection),
    /// The echo canceller converged (`true`) or no longer holds.
    EchoCancelled {
        /// Whether it holds now.
        converged: bool,
    },
    /// The microphone heard the user start talking.
    NearSpeech,
    /// The wall clock at this input's time, for tools.
    WallClock(WallClock),
    /// A question put to the model beside the conversation; answered by
    /// [`ControllerOutput::AsideAnswered`] or [`ControllerOutput::AsideFailed`].
    Aside(super::Aside),
    /// Time passed (due at [`TurnEngine::next_deadline_ms`]); every other input runs the
    /// timers due by its time first too.
    Tick,
}

/// One call's turn machine, sans-IO, in the house's one shape: inputs carry the caller's time,
/// outputs are polled in the order they were decided. See the module documentation.
pub trait TurnEngine: std::fmt::Debug + Send {
    /// What this engine's provider sends and expects.
    fn profile(&self) -> FamilyProfile;
    /// Takes one input at `now_ms`; what it decided is polled from [`Self::poll_output`].
    fn handle_input(&mut self, input: TurnInput, now_ms: u64);
    /// When a [`TurnInput::Tick`] is next due.
    fn next_deadline_ms(&self) -> Option<u64>;
    /// The next output.
    fn poll_output(&mut self) -> Option<ControllerOutput>;
    /// The session the engine feeds (its events are the second thing a driver reads).
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
    fn handle_input(&mut self, input: TurnInput, now_ms: u64) {
        TurnController::handle_input(self, input, now_ms)
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
