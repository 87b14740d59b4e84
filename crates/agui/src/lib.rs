//! AG-UI text messages: the wire format of Walkie's transcripts (DESIGN.md rule 3).
//!
//! Both sides' transcripts reach the webview and the store as AG-UI text-message events, and an
//! invalid sequence is an error, never silently mended. This crate is the whole protocol, pure
//! (no I/O, no clock, no async runtime): time and ids come in as arguments.
//!
//! * [`event`]: the events and their strict wire decoding ([`Event`]).
//! * [`expand`]: TEXT_MESSAGE_CHUNK expansion into START / CONTENT / END ([`ChunkExpander`]).
//! * [`verify`]: the incremental verifier, consumer and strict modes ([`Verifier`]).
//! * [`assemble`]: the reducer that builds the typed history ([`Assembler`], [`Message`]).
//! * [`stream`]: the four stages fused per event ([`Consumer`]), as `agui-verify` runs them.
//! * [`writer`]: the producer, from speech and transcript signals to events ([`TranscriptWriter`]).
//!
//! Spec: `../shared/spec/text-messages.en.md`; rules: `../shared/reference/ag-ui-text-messages.md`.

pub mod assemble;
pub mod event;
pub mod expand;
mod id_index;
pub mod message;
pub mod stream;
pub mod synthetic;
mod text_event;
pub mod verify;
pub mod violation;
pub mod writer;

pub use assemble::Assembler;
pub use event::{Event, JsonObject, OtherEvent, OtherKind, Role, SchemaError};
pub use expand::{ChunkExpander, Op};
pub use message::{
    AssistantMessage, DeveloperMessage, Message, OtherMessage, SystemMessage, UserMessage,
};
pub use stream::{Consumer, violation_json};
pub use verify::{Mode, Verifier};
pub use violation::{Rule, Violation};
pub use writer::{EarlierMessage, Speaker, TimestampMs, TranscriptInput, TranscriptWriter, TurnId};
