//! The turn engines: the Realtime API's turn controller and its mapping, the Live API's
//! engine, and the seam both sit behind ([`TurnEngine`], [`FamilyProfile`]).
//!
//! Why a module of the session crate: the controller decides what the session's events are (when
//! the user's speech part starts, when a reply was interrupted, when a turn is complete), so it
//! sits next to the stream it feeds, and stays as pure as the stream: inputs with the caller's
//! time in, outputs polled, no clock, no I/O, no runtime.
//!
//! Wiring, in one place (the house's one machine shape): every input is a [`TurnInput`] given
//! with the caller's time to [`TurnEngine::handle_input`] (a [`TurnInput::Tick`] when
//! [`TurnEngine::next_deadline_ms`] is due); the outputs come from [`TurnEngine::poll_output`],
//! one queue in causal order of client events with their `event_id` (for the data channel),
//! audio commands (capture, playback flush, mic gate), what the audio driver does with the reply
//! audio it decodes, where the turn stands, hints (for the user), diagnostics (for the log) and
//! the answers to inputs that ask something; and the session events of
//! [`TurnEngine::session_mut`].

mod aside;
mod audibility;
mod config;
mod controller;
mod engine;
mod family;
mod item_parts;
mod ledger;
mod lifecycle;
mod live;
mod openai_map;
mod outbox;
mod output;
mod press;
mod reply_gate;
mod tools;
mod user_message;

pub use aside::{ASIDE_METADATA_KEY, Aside, AsidePurpose, MAX_ASIDE_TEXT_BYTES};
pub use config::{
    DEFAULT_INTERRUPT_HOLD_MS, DEFAULT_MAX_PRESS_MS, DEFAULT_MIN_PRESS_MS, DEFAULT_PRE_ROLL_MS,
    DEFAULT_SESSION_LIMIT_WARNING_MS, DEFAULT_TAIL_MS, LATE_AUDIO_GRACE_MS, NEAR_SPEECH_HOLD_MS,
    PressMode, SESSION_CONFIRM_GRACE_MS, SESSION_LIMIT_MS, Transport, TurnConfig, TurnMode,
    session_limit_warning_ms,
};
pub use controller::{
    ControllerStats, EARLY_AUDIO_MAX_MS, MAX_USER_TEXT_BYTES, RESPONSE_DONE_WATCHDOG_MS,
    STOPPED_WATCHDOG_MS, TurnController, is_sounding, user_text_fits,
};
pub use engine::{TurnEngine, TurnInput, engine_for};
pub use family::{FamilyProfile, HistoryRestore, ProviderFamily};
pub use item_parts::MAX_OPEN_USER_PARTS;
pub use live::{LIVE_AUDIO_QUIET_MS, LIVE_QUIET_MS, LiveTurns, SILENCE_PEAK};
pub use openai_map::MAX_TRANSCRIPT_BYTES;
pub use output::{
    AudioCommand, ControllerOutput, Diagnostic, OutgoingEvent, ReplyAudio, ReplyGate,
    ToolCallRequest, TurnState, UiHint, WireEvent,
};
pub use reply_gate::DecodedReplyAudio;
pub use tools::{
    CURRENT_LOCAL_TIME_TOOL, CurrentLocalTime, DuplicateTool, LocalDateTime, LocalTool,
    MAX_TOOL_ANSWER_BYTES, ToolContext, ToolError, ToolRegistry, WallClock,
};
pub use user_message::{MAX_ITEM_EVENT_BYTES, UserMessage};
