//! The OpenAI Realtime protocol (GA) as typed events: what Walkie sends on the `oai-events`
//! data channel and what it receives; and, in [`live`], OpenAI's Live API (GPT-Live).
//!
//! Why a crate of its own: the protocol is the contract with the provider, and it is shared by
//! both ends Walkie runs — the client (the app) and the local provider (the test bench and the
//! offline default). Keeping it pure (no I/O, no clock, no async runtime) lets both ends and the
//! turn controller be tested with scripted event sequences alone.
//!
//! Decoding is lenient where the provider is allowed to grow (unknown fields are ignored,
//! unknown event types are kept as [`ServerEvent::Unknown`], unknown items, content parts and
//! tools are kept raw as `Other`) and strict where a mistake would hide a bug (a known event
//! with a missing field Walkie reads is a [`DecodeError::Schema`]). An event that ends
//! something (`response.done`, `output_audio_buffer.stopped`, ...) or confirms the session is
//! never lost over a field Walkie does not read: see `decode/fallback.rs`. Legacy (beta)
//! event names are recognised on receipt and mapped to their GA meaning; beta shapes are never
//! produced.

mod client;
mod decode;
mod item;
pub mod live;
pub mod names;
mod server;
mod session;

pub use client::{ClientEvent, ResponseConfig};
pub use decode::{DecodeError, TextPosition, decode_client_event, decode_server_event};
pub use item::{ContentPart, ImageDetail, Item, ItemStatus, Role};
pub use server::KEPT_RAW_SERVER_EVENT_TYPES;
pub use server::{
    CachedTokenDetails, ErrorDetail, InputTokenDetails, OutputTokenDetails, RateLimit, Response,
    ResponseStatus, ServerEvent, StatusDetails, TranscriptionTokenDetails, TranscriptionUsage,
    UnknownEvent, Usage,
};
pub use session::{
    AudioConfig, AudioFormat, AudioInput, AudioOutput, InfiniteTokens, MAX_SESSION_BYTES,
    MaxOutputTokens, Modality, NoiseReduction, Reasoning, RetentionRatio, SessionConfig,
    SessionKind, Tool, Transcription, Truncation, TruncationMode, TurnDetection,
};
