//! AG-UI text messages: the transcript's wire format (events, verifier, assembler, writer).
//!
//! The crate is being built; this is its place in the workspace.
