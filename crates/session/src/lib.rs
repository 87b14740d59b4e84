//! `walkie-session`: the realtime session's event stream, as a pure core.
//!
//! Why this crate exists: everything the assistant shows, plays, saves and decides about a turn
//! flows through one ordered stream of session events (spec: realtime-events, modelled on
//! pydantic-ai's `RealtimeSession`). Keeping that stream in a sans-IO crate — inputs with the
//! caller's time in, outputs polled, no runtime, no clock, no I/O — makes its ordering rules, its
//! bounded late-iterator buffer and its views testable to the event, and lets the protocol mapping
//! and the turn controller of later issues drive it the same way.
//!
//! The pieces:
//! - [`event`]: the event model (every row of the spec's table), serde for the journal and webview;
//! - [`Session`]: producer inputs ([`Session::push`], [`Session::start_part`],
//!   [`Session::push_delta`], [`Session::end_part`], [`Session::response_done`],
//!   [`Session::park_failure`]) and the consumer's poll API ([`Session::iterate`],
//!   [`Session::poll_event`], [`Session::stop_iterating`]);
//! - [`backlog`]: what is kept while nobody iterates (512 deltas + 512 structural, failures always);
//! - [`views`]: `stream_audio()` / `stream_transcripts()`;
//! - [`audio`]: the playable [`AudioChunk`] and the save-only [`WavSnapshot`];
//! - [`turn`]: the turn controller (push-to-talk, hands-free, barge-in, tool calls) and the
//!   OpenAI Realtime → session mapping that feed the stream.
//!
//! With the `stream` feature, [`stream`] adapts the poll API to `futures_core::Stream`.

pub mod audio;
pub mod backlog;
pub mod error;
pub mod event;
mod parts;
pub mod session;
#[cfg(feature = "stream")]
pub mod stream;
mod tokens;
pub mod transcript;
pub mod turn;
pub mod views;

pub use audio::{AudioChunk, AudioError, DeviceDirection, PlaybackSink, WavSnapshot};
pub use backlog::{BacklogLen, Delivery, DropCounters};
pub use error::{
    FailureSource, IterationError, PushError, SessionFailure, StampedFailure, ViewError,
};
pub use event::*;
pub use session::{
    AUDIO_VIEW_CAPACITY, DEFAULT_OUTPUT_SAMPLE_RATE_HZ, DELTA_RING_CAPACITY, EventIterator,
    ResponseDone, STRUCTURAL_RING_CAPACITY, Session, SessionConfig, TRANSCRIPT_VIEW_CAPACITY,
};
pub use tokens::TokenTotals;
pub use views::{
    AudioView, FinalTranscript, TranscriptItem, TranscriptMode, TranscriptUpdate, TranscriptView,
};
