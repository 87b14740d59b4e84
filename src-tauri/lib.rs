//! The Tauri shell: the one place where the webview, the OS and Walkie's core meet.
//!
//! The shell owns no conversation logic. It turns webview calls (commands) into inputs for the
//! core and the core's outputs into webview events. Today there is no session yet, so the shell
//! answers honestly that nothing is connected; the session, transport and audio drivers plug in
//! here as they land.

mod status;

use tauri::{AppHandle, Emitter};

pub use status::{ConnectionState, STATUS_EVENT, StatusEvent};

/// Why a command could not do what the webview asked.
#[derive(Debug, thiserror::Error)]
pub enum CommandError {
    /// The event carrying the answer could not be delivered to the window.
    #[error("could not send the {event} event to the window: {reason}")]
    Emit { event: &'static str, reason: String },
}

impl serde::Serialize for CommandError {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.to_string())
    }
}

fn emit_status(app: &AppHandle, status: StatusEvent) -> Result<(), CommandError> {
    app.emit(STATUS_EVENT, status)
        .map_err(|error| CommandError::Emit {
            event: STATUS_EVENT,
            reason: error.to_string(),
        })
}

/// The webview asks for a session. With no provider in this build the answer, sent as a status
/// event like every later state change, is that nothing can connect yet.
#[tauri::command]
fn connect(app: AppHandle) -> Result<(), CommandError> {
    emit_status(&app, StatusEvent::connecting())?;
    emit_status(&app, StatusEvent::no_provider())
}

/// The push-to-talk control went down (`pressed == true`) or up. Without a session there is
/// nothing to capture for; the status line says so instead of pretending to listen.
#[tauri::command]
fn push_to_talk(app: AppHandle, pressed: bool) -> Result<(), CommandError> {
    if pressed {
        emit_status(&app, StatusEvent::talk_without_session())
    } else {
        Ok(())
    }
}

/// Builds and runs the app until its last window closes.
pub fn run() {
    tauri::Builder::default()
        .invoke_handler(tauri::generate_handler![connect, push_to_talk])
        .run(tauri::generate_context!())
        .expect("the Tauri runtime failed to start or stopped with an error");
}
