//! The conversation machine: everything the app decides about one conversation and the calls
//! that carry it, as a pure state machine.
//!
//! Why a crate of its own: the turn controller decides what happens to a turn; around it, the
//! app decides what the user reads (the status line and its hints), which assistant item the
//! played audio belongs to, when a reply was cut off, what the transcript and the saved
//! conversation hold, and when a dropped call is dialled again with the conversation so far. Those decisions used to live in the shell's task, out of reach of
//! virtual-time tests. Here they are one machine in str0m's shape: one [`Input`] type fed with
//! the caller's time ([`Conversation::handle_input`]), one ordered [`Output`] queue
//! ([`Conversation::poll_output`]) and the next timer ([`Conversation::next_deadline_ms`]).
//! No clock, no I/O, no threads: the shell's driver reads the clock and carries each output to
//! the call, the audio engine, the store or the webview, and decides nothing itself.

mod conversations;
mod health;
mod input;
mod machine;
mod meters;
mod output;
mod outside_text;
mod preview;
mod redial;
mod restore;
mod spending;
mod status;
mod tools;

pub use conversations::{
    CallPlan, Conversations, ConversationsInput, ConversationsOutput, Placement, Request,
};
pub use health::{ConnectionHealth, HealthLevel, HealthSample, HealthWatch};
pub use input::{EngineInput, Input, LevelReading, ToolServerProblem, TransportInput};
pub use machine::{
    Conversation, ConversationConfig, MAX_TITLE_CHARS, MAX_TITLE_REQUESTS, SLOW_REPLY_MS,
    TITLE_AFTER_TURNS, TITLE_INSTRUCTIONS, TITLE_MAX_OUTPUT_TOKENS,
};
pub use meters::{METER_FLOOR_DBFS, METER_STEP_DB};
pub use output::{LatencySplit, Output, Record, ReplyPlayout, UnixMs};
pub use outside_text::{MAX_OUTSIDE_TEXT_CHARS, outside_text};
pub use preview::{
    LONGEST_PREVIEW_MS, PREVIEW_EVENT_ID, PREVIEW_INSTRUCTIONS, PreviewInput, PreviewOutput,
    VoicePreview,
};
pub use redial::{DialFailure, DialStage, FirstDial, RedialPolicy, Retry};
pub use restore::{
    RESTORE_BUDGET_CHARS, RESTORE_MESSAGE_CHARS, call_setup_history, restore_items,
    restore_items_within,
};
pub use spending::{
    MinutePrices, Prices, Pricing, Rate, SessionBill, SessionSeconds, Spending, SpentBefore,
    TokenTotals, TranscriptionBill,
};
pub use status::{ConnectionState, StatusAction, StatusEvent, headline, sentence};
pub use tools::{
    APPROVAL_TIMEOUT_MS, AUTOMATIC_TOOL_ROUNDS, ApprovalRequest, OutsideTool, ToolPolicy,
};
pub use walkie_session::DeviceDirection;
