//! The Tauri shell: the one place where the webview, the OS and Walkie's core meet.
//!
//! The shell owns no conversation logic. Webview calls (commands) become inputs of the
//! conversation driver ([`conversation`]), which owns the turn controller; the driver's outputs
//! come back to the webview as events: the status line and the transcript (AG-UI events).
//! The history panel's commands are in [`history`].

pub mod conversation;
pub mod history;
mod recording;
mod status;

use std::sync::Mutex;

use tauri::{AppHandle, Emitter, Manager};
use tokio::sync::mpsc;

use conversation::{Command, Provider, Ui};
use history::{CurrentConversation, History};
pub use status::{ConnectionState, STATUS_EVENT, StatusEvent};
use walkie_audio::device::Direction;
use walkie_audio::meter::Level;

/// The event name the webview listens on for AG-UI transcript events.
pub const TRANSCRIPT_EVENT: &str = "walkie://transcript";

/// The event name the webview listens on for microphone and speaker levels.
pub const LEVEL_EVENT: &str = "walkie://level";

/// One meter reading, as the webview reads it.
#[derive(Clone, Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct LevelReading {
    /// `input` (the microphone) or `output` (the speaker).
    direction: &'static str,
    rms_dbfs: f32,
    peak_dbfs: f32,
}

/// Why a command could not do what the webview asked.
#[derive(Debug, thiserror::Error)]
pub enum CommandError {
    /// The conversation task is gone (the app is closing).
    #[error("the conversation has stopped; restart Walkie")]
    ConversationStopped,
}

impl serde::Serialize for CommandError {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.to_string())
    }
}

/// The webview's way to the conversation task.
struct Conversation(mpsc::UnboundedSender<Command>);

impl Conversation {
    fn send(&self, command: Command) -> Result<(), CommandError> {
        self.0
            .send(command)
            .map_err(|_| CommandError::ConversationStopped)
    }
}

/// The latest status, for a page that loads (or reloads) after it was emitted.
#[derive(Default)]
struct LatestStatus(Mutex<Option<SequencedStatus>>);

/// A status with its place in the order of statuses, so the page can tell a stale one.
#[derive(Clone, Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct SequencedStatus {
    seq: u64,
    #[serde(flatten)]
    status: StatusEvent,
}

/// Emits the conversation's outputs to the main window.
struct WindowUi {
    app: AppHandle,
    next_seq: u64,
}

impl Ui for WindowUi {
    fn status(&mut self, status: StatusEvent) {
        self.next_seq += 1;
        let sequenced = SequencedStatus {
            seq: self.next_seq,
            status,
        };
        *self
            .app
            .state::<LatestStatus>()
            .0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(sequenced.clone());
        if let Err(error) = self.app.emit(STATUS_EVENT, sequenced) {
            log::warn!("could not send the status to the window: {error}");
        }
    }

    fn level(&mut self, direction: Direction, level: Level) {
        let reading = LevelReading {
            direction: match direction {
                Direction::Input => "input",
                Direction::Output => "output",
            },
            rms_dbfs: level.rms_dbfs,
            peak_dbfs: level.peak_dbfs,
        };
        // Thirty a second per direction: a lost one is replaced before anyone could see it.
        let _ = self.app.emit(LEVEL_EVENT, reading);
    }

    fn transcript(&mut self, event: &walkie_agui::Event) {
        if let Err(error) = self.app.emit(TRANSCRIPT_EVENT, event) {
            log::warn!("could not send a transcript event to the window: {error}");
        }
    }
}

/// The latest status (`null` before the first): what a page that just loaded should show.
#[tauri::command]
fn status(latest: tauri::State<'_, LatestStatus>) -> Option<SequencedStatus> {
    latest
        .0
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .clone()
}

/// Hang up (if connected) and connect again.
#[tauri::command]
fn connect(conversation: tauri::State<'_, Conversation>) -> Result<(), CommandError> {
    conversation.send(Command::Reconnect)
}

/// The push-to-talk control went down (`pressed == true`) or up.
#[tauri::command]
fn push_to_talk(
    conversation: tauri::State<'_, Conversation>,
    pressed: bool,
) -> Result<(), CommandError> {
    conversation.send(Command::PushToTalk { pressed })
}

/// Builds and runs the app until its last window closes.
pub fn run() {
    tauri::Builder::default()
        .plugin(tauri_plugin_dialog::init())
        .plugin(tauri_plugin_opener::init())
        .setup(|app| {
            let (commands, receiver) = mpsc::unbounded_channel();
            app.manage(Conversation(commands));
            app.manage(LatestStatus::default());
            let current = CurrentConversation::default();
            let history = match walkie_store::default_data_dir() {
                Ok(data_dir) => History::new(&data_dir, current.clone()),
                Err(error) => History::unavailable(error.to_string(), current.clone()),
            };
            if let Err(reason) = history.allow_playback(app.handle()) {
                log::warn!("past turns cannot be played: {reason}");
            }
            let retention = history.retention();
            app.manage(history);
            if let Err(error) = history::apply_retention(app.handle(), retention) {
                log::warn!("the retention setting could not be applied: {error}");
            }
            let ui = WindowUi {
                app: app.handle().clone(),
                next_seq: 0,
            };
            tauri::async_runtime::spawn(conversation::run(
                Provider::from_env(),
                ui,
                receiver,
                current,
            ));
            Ok(())
        })
        .invoke_handler(tauri::generate_handler![
            status,
            connect,
            push_to_talk,
            history::history_list,
            history::history_open,
            history::history_delete,
            history::history_export_markdown,
            history::history_open_folder,
            history::history_retention,
            history::history_set_retention,
        ])
        .run(tauri::generate_context!())
        .expect("the Tauri runtime failed to start or stopped with an error");
}
