//! Exiting without losing the conversation: closing the window, the tray's Quit and a SIGTERM
//! or SIGINT (logging out, `kill`, a service manager, Ctrl+C in a terminal) all hang up the
//! call and close the conversation on disk (its close record, transcripts and WAV headers)
//! before the process ends.
//!
//! Why the exit is held back: Tauri ends the process with `std::process::exit` as soon as its
//! event loop stops, and nothing still running on a task or a thread (the conversation, the
//! recording thread) gets to finish. So the first exit request is prevented, the conversation
//! is closed while the event loop keeps running (the conversation's last status still reaches
//! the tray, which is updated on the main thread), and the exit is asked for again when the
//! conversation has ended, or after [`CLOSE_TIMEOUT`] so that a stuck disk or provider never
//! keeps Walkie from quitting.

use std::sync::Mutex;
use std::time::Duration;

use tauri::{AppHandle, ExitRequestApi, Manager};

use crate::Conversation;

/// The longest an exit waits for the conversation to close.
pub const CLOSE_TIMEOUT: Duration = Duration::from_secs(2);

/// Where the app is on its way out.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Phase {
    #[default]
    Running,
    /// The conversation is being closed; the exit comes when it is.
    Closing,
    /// Closed (or given up on): the next exit request goes through.
    Closed,
}

/// The app's way out, as a managed state.
#[derive(Default)]
pub struct Closing(Mutex<Phase>);

/// Handles Tauri's `ExitRequested` (the last window closed: `code` is `None`; `AppHandle::exit`
/// from the tray or a signal: `Some`). The first one is held back while the conversation
/// closes; the exit that follows goes through.
pub fn on_exit_requested(app: &AppHandle, code: Option<i32>, api: &ExitRequestApi) {
    let Some(closing) = app.try_state::<Closing>() else {
        return;
    };
    let mut phase = closing
        .0
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    match *phase {
        Phase::Closed => return,
        Phase::Closing => {
            api.prevent_exit();
            return;
        }
        Phase::Running => {
            api.prevent_exit();
            *phase = Phase::Closing;
        }
    }
    drop(phase);
    log::info!("exiting: closing the conversation first");
    let app = app.clone();
    tauri::async_runtime::spawn(async move {
        let ended = app.state::<Conversation>().close();
        if tokio::time::timeout(CLOSE_TIMEOUT, ended).await.is_err() {
            log::warn!("the conversation did not close within {CLOSE_TIMEOUT:?}; exiting anyway");
        }
        *app.state::<Closing>()
            .0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = Phase::Closed;
        app.exit(code.unwrap_or(0));
    });
}

/// A SIGTERM or SIGINT ends Walkie the way its tray's Quit does: through
/// [`on_exit_requested`], so the conversation is closed and the window's state saved instead
/// of the process vanishing mid-write.
#[cfg(unix)]
pub fn exit_on_signals(app: AppHandle) {
    use tokio::signal::unix::{SignalKind, signal};
    for (kind, name) in [
        (SignalKind::terminate(), "SIGTERM"),
        (SignalKind::interrupt(), "SIGINT"),
    ] {
        let app = app.clone();
        tauri::async_runtime::spawn(async move {
            match signal(kind) {
                Ok(mut received) => {
                    if received.recv().await.is_some() {
                        log::info!("asked to end ({name}): closing");
                        app.exit(0);
                    }
                }
                Err(error) => log::warn!("{name} cannot be handled: {error}"),
            }
        });
    }
}

/// Where there are no Unix signals, Ctrl+C in the terminal ends Walkie as Quit does.
#[cfg(not(unix))]
pub fn exit_on_signals(app: AppHandle) {
    tauri::async_runtime::spawn(async move {
        match tokio::signal::ctrl_c().await {
            Ok(()) => {
                log::info!("asked to end (Ctrl+C): closing");
                app.exit(0);
            }
            Err(error) => log::warn!("Ctrl+C cannot be handled: {error}"),
        }
    });
}
