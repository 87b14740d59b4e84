//! Typed errors and failures.
//!
//! Why two families: a [`PushError`] is the producer's mistake (an ordering invariant it broke); the
//! session refuses the input, changes nothing, and carries on. A [`SessionFailure`] is something the
//! consumer must hear about (a tool crashed, the upstream died, a fatal provider error): it is parked
//! in the stream outside both rings, never dropped, and delivered exactly once.

use serde::{Deserialize, Serialize};

use crate::event::{PartIndex, PartKind, Speaker};

/// An input the session refused because it breaks the event stream's ordering rules.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PushError {
    /// The session was closed.
    #[error("the session is closed and accepts no more events")]
    Closed,
    /// A part start must use a fresh index, greater than every index used before.
    #[error("part start uses index {index}, but indices below {next_index} are already taken")]
    PartIndexNotFresh {
        /// The index given.
        index: PartIndex,
        /// The smallest index still free.
        next_index: PartIndex,
    },
    /// A delta for a part that never started.
    #[error("delta for part {index}, which never started")]
    DeltaBeforeStart {
        /// The index given.
        index: PartIndex,
    },
    /// A delta for a part that already ended.
    #[error("delta for part {index}, which already ended")]
    DeltaAfterEnd {
        /// The index given.
        index: PartIndex,
    },
    /// An end for a part that never started.
    #[error("end of part {index}, which never started")]
    EndBeforeStart {
        /// The index given.
        index: PartIndex,
    },
    /// A second end for the same part.
    #[error("end of part {index}, which already ended")]
    EndAfterEnd {
        /// The index given.
        index: PartIndex,
    },
    /// A delta of another kind than its part (e.g. text into speech).
    #[error("{delta_kind:?} delta for part {index}, which is a {part_kind:?} part")]
    DeltaKindMismatch {
        /// The part.
        index: PartIndex,
        /// What the part is.
        part_kind: PartKind,
        /// What the delta is for.
        delta_kind: PartKind,
    },
    /// A part ended as a different kind than it started.
    #[error("part {index} started as {started:?} but ended as {ended:?}")]
    EndKindMismatch {
        /// The part.
        index: PartIndex,
        /// Kind at start.
        started: PartKind,
        /// Kind at end.
        ended: PartKind,
    },
    /// A speech delta or end names another speaker than the part's start.
    #[error("part {index} is {part_speaker:?} speech, but this names {given_speaker:?}")]
    SpeakerMismatch {
        /// The part.
        index: PartIndex,
        /// The speaker at start.
        part_speaker: Speaker,
        /// The speaker given.
        given_speaker: Speaker,
    },
    /// A speech delta with neither audio nor transcript.
    #[error("speech delta for part {index} carries neither audio nor transcript")]
    EmptySpeechDelta {
        /// The part.
        index: PartIndex,
    },
    /// Only the session emits turn completion (use `response_done`).
    #[error(
        "RealtimeTurnCompleteEvent is emitted by the session itself; report response_done instead"
    )]
    TurnCompleteIsSessionOwned,
    /// A tool call id already executing.
    #[error("tool call {tool_call_id:?} is already executing")]
    DuplicateToolCall {
        /// The id.
        tool_call_id: String,
    },
    /// A result for a call that is not executing.
    #[error("tool result for call {tool_call_id:?}, which is not executing")]
    ToolResultWithoutCall {
        /// The id.
        tool_call_id: String,
    },
    /// An interruption recorded for a part that never started.
    #[error("interruption of part {index}, which never started")]
    InterruptBeforeStart {
        /// The index given.
        index: PartIndex,
    },
    /// An interruption recorded for a part that already ended.
    #[error("interruption of part {index}, which already ended")]
    InterruptAfterEnd {
        /// The index given.
        index: PartIndex,
    },
    /// Only speech is played, so only a speech part can be interrupted.
    #[error("interruption of part {index}, which is a {part_kind:?} part, not speech")]
    InterruptNotSpeech {
        /// The part.
        index: PartIndex,
        /// What the part is.
        part_kind: PartKind,
    },
    /// Output speech started while it was already audible.
    #[error("output speech start while the assistant is already audible")]
    OutputSpeechAlreadyStarted,
    /// Output speech ended while nothing was audible.
    #[error("output speech end while the assistant is not audible")]
    OutputSpeechEndWithoutStart,
}

/// Where a parked failure came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "source", rename_all = "snake_case")]
pub enum FailureSource {
    /// A local tool raised an unhandled error.
    Tool {
        /// The call that failed.
        tool_call_id: String,
        /// The tool's name.
        tool_name: String,
    },
    /// The upstream connection failed (closed, reconnect budget exhausted).
    Upstream,
    /// The provider reported a non-recoverable error.
    FatalProviderError {
        /// The provider's error type.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error_type: Option<String>,
        /// The provider's error code.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        code: Option<String>,
    },
}

/// A failure waiting for the consumer: never dropped, delivered exactly once.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionFailure {
    /// Where it came from.
    #[serde(flatten)]
    pub source: FailureSource,
    /// What happened.
    pub message: String,
}

/// A failure as delivered, with its place in the stream.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StampedFailure {
    /// Position in the session's stream (shared with events).
    pub seq: u64,
    /// Session time when it was parked.
    pub at_ms: u64,
    /// The failure.
    pub failure: SessionFailure,
}

/// Misuse of the consumer side of the stream.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IterationError {
    /// Only one iterator may be active at a time.
    #[error("this realtime session is already being iterated")]
    AlreadyIterating,
    /// The session was closed.
    #[error("this realtime session is closed and cannot be iterated")]
    Closed,
    /// The iterator was stopped (or another one replaced it after it stopped).
    #[error("iterator {iterator} is not the active iterator")]
    NotActive {
        /// The stale iterator's id.
        iterator: u64,
    },
}

/// Misuse of a view.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ViewError {
    /// The view was closed (or the session was).
    #[error("view {view} is closed")]
    Closed {
        /// The view's id.
        view: u32,
    },
    /// The view id does not belong to this session.
    #[error("no view {view} in this session")]
    Unknown {
        /// The view's id.
        view: u32,
    },
}
