//! Walkie's settings: what the user chose in the settings dialog ([`Settings`], validated in
//! one place and kept in a private file), the API keys ([`secrets`]: the OS keyring or the
//! environment, never a file), and the [`plan`] one connection is made from.
//!
//! Why a crate of its own: none of it needs the window. The shell's commands read and save
//! settings, and its conversation task is handed a plan; both are tested here without Tauri.

pub mod plan;
pub mod prices;
pub mod secrets;
mod settings;
pub mod tool_servers;

pub use settings::*;
