//! What the conversation machine asks of the world, in one queue, in causal order: a
//! barge-in's playback flush comes out before the cancel it causes is sent, a transcript's
//! END before the mark that the reply was cut.

use walkie_agui::Event;
use walkie_session::transcript::BridgeNote;
use walkie_session::turn::{AudioCommand, Diagnostic, OutgoingEvent, ToolCallRequest};
use walkie_session::{AudioChunk, StampedEvent};

use walkie_session::DeviceDirection;

use crate::input::LevelReading;
use crate::spending::{Spending, TokenTotals};
use crate::status::StatusEvent;
use crate::tools::ApprovalRequest;

/// One output. The driver carries each to its edge without waiting on it.
#[derive(Debug, Clone)]
pub enum Output {
    /// A client event for the data channel.
    Send(OutgoingEvent),
    /// A command for the audio engine.
    Audio(AudioCommand),
    /// The assistant audio that follows belongs to this item (the engine counts played time
    /// against it).
    BeginItem(String),
    /// Assistant audio to play: a live speech delta (never a snapshot).
    Play(AudioChunk),
    /// A transcript event for the webview (AG-UI).
    Transcript(Event),
    /// The transcript message `message_id` is a reply the user cut off (after its END).
    Interrupted { message_id: String },
    /// The transcript message `message_id` is a recording the user took back, not sent
    /// (after its END).
    Cancelled { message_id: String },
    /// The reply `message_id` was first heard `latency_ms` after the user's turn ended (the
    /// key came up, the provider heard them stop, or their typed message went out): its first
    /// sound played at the device.
    ReplyLatency { message_id: String, latency_ms: u64 },
    /// How the connection is doing now changed (its level or its sentence).
    ConnectionHealth(crate::health::ConnectionHealth),
    /// A response was billed: what the conversation has spent so far.
    Spending(Box<Spending>),
    /// Something to save.
    Record(Record),
    /// The status line changed.
    Status(StatusEvent),
    /// A meter reading.
    Level {
        direction: DeviceDirection,
        level: LevelReading,
    },
    /// Something worth a log line.
    Diagnostic(Diagnostic),
    /// The call dropped: the driver hangs it up and stops its audio. The conversation goes on
    /// in the next call ([`Output::Dial`]).
    HangUpCall,
    /// Place a new call for this conversation, then feed [`crate::Input::Dialled`] or
    /// [`crate::Input::DialFailed`]. For a family that takes the conversation so far when the
    /// call is placed (the Live API's `input`), `history` holds it; otherwise it is empty and
    /// the machine gives it on the data channel.
    Dial { history: Vec<walkie_openai::Item> },
    /// The conversation is over (the status says why); the driver hangs up.
    Ended { reason: String },
    /// Run this call of an outside tool, then feed [`crate::Input::ToolFinished`].
    RunTool(ToolCallRequest),
    /// Show the user this call and ask whether it may run; their answer is
    /// [`crate::Input::ToolDecision`].
    AskApproval(ApprovalRequest),
    /// The card of this call is no longer needed (decided, expired, or its call ended).
    ApprovalClosed { call_id: String },
}

/// What the store saves, at wall time `unix_ms`.
#[derive(Debug, Clone)]
pub enum Record {
    /// A session event, what the transcript bridge made of it, and the AG-UI events it
    /// produced: the very events the webview was sent.
    Event {
        unix_ms: i64,
        event: Box<StampedEvent>,
        note: BridgeNote,
        transcript: Vec<Event>,
    },
    /// Transcript events no session event caused: the messages and run the bridge closed when
    /// the call ended (also sent to the webview).
    Transcript {
        unix_ms: i64,
        transcript: Vec<Event>,
    },
    /// Microphone audio exactly as it was sent.
    UserAudio { unix_ms: i64, chunk: AudioChunk },
    /// The user took the recording of this message back before it was sent (after the
    /// record of its end).
    Cancelled { unix_ms: i64, message_id: String },
    /// A response was billed `tokens` (its own), which cost `cost_usd` at `model`'s prices
    /// (`None`: unknown); or, with `transcribed_seconds`, a transcription of the user's speech
    /// was (its seconds, zero when billed by tokens).
    Billed {
        unix_ms: i64,
        tokens: TokenTotals,
        cost_usd: Option<f64>,
        model: Option<String>,
        transcribed_seconds: Option<f64>,
    },
}
