//! The Tauri shell: the one place where the webview, the OS and Walkie's core meet.
//!
//! The shell owns no conversation logic. Webview calls (commands) become inputs of the
//! conversation driver ([`conversation`]), which owns the turn controller; the driver's outputs
//! come back to the webview as events: the status line and the transcript (AG-UI events).
//! The history panel's commands are in [`history`], the settings dialog's in
//! [`settings_commands`].

pub mod conversation;
pub mod desktop;
pub mod history;
pub mod plan;
mod recording;
pub mod secrets;
pub mod settings;
mod settings_commands;
mod status;

use std::sync::Mutex;

use tauri::{AppHandle, Emitter, Manager};
use tokio::sync::mpsc;

use conversation::{Command, Ui};
use history::{CurrentConversation, History, RetentionPolicy};
use plan::Plan;
use settings_commands::{SettingsState, load_settings};
pub use status::{ConnectionState, STATUS_EVENT, StatusEvent};
use walkie_audio::device::Direction;
use walkie_audio::meter::Level;

/// The event name the webview listens on for AG-UI transcript events.
pub const TRANSCRIPT_EVENT: &str = "walkie://transcript";

/// The event name the webview listens on for replies cut off by the user (the message id).
pub const INTERRUPTED_EVENT: &str = "walkie://interrupted";

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

/// Why a command could not do what the webview asked. Serialised as `{ message, field }`, so
/// the settings dialog can point at the field at fault.
#[derive(Debug, thiserror::Error)]
pub enum CommandError {
    /// The conversation task is gone (the app is closing).
    #[error("the conversation has stopped; restart Walkie")]
    ConversationStopped,
    #[error(transparent)]
    Settings(#[from] settings::SettingsError),
    #[error(transparent)]
    Secret(#[from] secrets::SecretError),
    #[error("the global shortcut {shortcut} could not be registered: {reason}")]
    Shortcut { shortcut: String, reason: String },
    #[error("could not copy: {0}")]
    Clipboard(String),
    #[error("a background task failed: {0}")]
    Background(String),
}

impl serde::Serialize for CommandError {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let field = match self {
            CommandError::Settings(settings::SettingsError::Invalid(invalid)) => {
                Some(invalid.field)
            }
            CommandError::Shortcut { .. } => Some("globalShortcut"),
            _ => None,
        };
        let mut error = serializer.serialize_struct("CommandError", 2)?;
        error.serialize_field("message", &self.to_string())?;
        error.serialize_field("field", &field)?;
        error.end()
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
        if let Some(tray) = self.app.try_state::<desktop::Tray>() {
            tray.follow(status.state);
        }
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

    fn interrupted(&mut self, message_id: &str) {
        if let Err(error) = self.app.emit(INTERRUPTED_EVENT, message_id) {
            log::warn!("could not mark a reply as interrupted in the window: {error}");
        }
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

/// Puts text (a message or the whole transcript) on the system clipboard.
#[tauri::command]
fn copy_text(app: AppHandle, text: String) -> Result<(), CommandError> {
    use tauri_plugin_clipboard_manager::ClipboardExt;
    app.clipboard()
        .write_text(text)
        .map_err(|error| CommandError::Clipboard(error.to_string()))
}

/// The log: a rotating file in the platform log dir (`WALKIE_LOG_DIR` overrides it), plus
/// stderr. Nothing logged ever includes a key ([`secrets`] makes sure of it).
fn log_plugin() -> tauri::plugin::TauriPlugin<tauri::Wry> {
    use tauri_plugin_log::{RotationStrategy, Target, TargetKind};
    let file = match std::env::var_os("WALKIE_LOG_DIR") {
        Some(dir) if !dir.is_empty() => TargetKind::Folder {
            path: dir.into(),
            file_name: Some("walkie".to_owned()),
        },
        _ => TargetKind::LogDir {
            file_name: Some("walkie".to_owned()),
        },
    };
    tauri_plugin_log::Builder::new()
        .clear_targets()
        .targets([Target::new(file), Target::new(TargetKind::Stderr)])
        // Walkie's own reports at info; libraries (WebRTC, PulseAudio) only when they warn.
        .level(log::LevelFilter::Warn)
        .level_for("walkie", log::LevelFilter::Info)
        .level_for("walkie_app", log::LevelFilter::Info)
        .level_for("walkie_audio", log::LevelFilter::Info)
        .level_for("walkie_local", log::LevelFilter::Info)
        .level_for("walkie_rtc", log::LevelFilter::Info)
        .level_for("walkie_store", log::LevelFilter::Info)
        .max_file_size(1_000_000)
        .rotation_strategy(RotationStrategy::KeepSome(5))
        .build()
}

/// The retention the settings hold, as the history applies it.
fn retention_policy(retention_days: Option<u32>) -> RetentionPolicy {
    match retention_days {
        Some(days) => RetentionPolicy::KeepDays { days },
        None => RetentionPolicy::Forever,
    }
}

/// Saves a retention chosen in the history panel with the other settings.
pub(crate) fn persist_retention(
    app: &AppHandle,
    policy: RetentionPolicy,
) -> Result<(), settings::SettingsError> {
    let state = app.state::<SettingsState>();
    let mut settings = state.current();
    settings.retention_days = match policy {
        RetentionPolicy::Forever => None,
        RetentionPolicy::KeepDays { days } => Some(days),
    };
    state.file.save(&settings)?;
    *state
        .current
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner()) = settings;
    Ok(())
}

/// Builds and runs the app until its last window closes.
pub fn run() {
    let (file, settings, notice) = load_settings();
    let initial_shortcut = settings.global_shortcut.clone();
    let config_dir = file
        .path()
        .parent()
        .expect("the settings file is in a folder")
        .to_path_buf();
    let state = SettingsState {
        file,
        data_dir: plan::data_dir(&settings),
        current: Mutex::new(settings),
        notice: Mutex::new(notice),
    };
    tauri::Builder::default()
        .plugin(desktop::single_instance())
        .plugin(log_plugin())
        .plugin(shortcut::plugin())
        .plugin(desktop::window_state(&config_dir))
        .plugin(tauri_plugin_dialog::init())
        .plugin(tauri_plugin_opener::init())
        .plugin(tauri_plugin_clipboard_manager::init())
        .manage(state)
        .on_window_event(|window, event| {
            if matches!(
                event,
                tauri::WindowEvent::Resized(_) | tauri::WindowEvent::Moved(_)
            ) {
                desktop::save_window_state_soon(window.app_handle());
            }
        })
        .setup(move |app| {
            let (commands, receiver) = mpsc::unbounded_channel();
            app.manage(Conversation(commands));
            app.manage(LatestStatus::default());
            if let Err(error) = shortcut::register(app.handle(), "", &initial_shortcut) {
                log::warn!("{error}");
            }
            match desktop::Tray::create(app.handle()) {
                Ok(tray) => {
                    app.manage(tray);
                }
                Err(error) => log::warn!("no tray icon: {error}"),
            }
            desktop::exit_on_terminate(app.handle().clone());
            let settings = app.state::<SettingsState>().current();
            let data_dir = app.state::<SettingsState>().data_dir.clone();
            let current = CurrentConversation::default();
            let history = match &data_dir {
                Ok(data_dir) => History::new(data_dir, current.clone()),
                Err(reason) => History::unavailable(reason.clone(), current.clone()),
            };
            if let Err(reason) = history.allow_playback(app.handle()) {
                log::warn!("past turns cannot be played: {reason}");
            }
            app.manage(history);
            let retention = retention_policy(settings.retention_days);
            if let Err(error) = history::apply_retention(app.handle(), retention) {
                log::warn!("the retention setting could not be applied: {error}");
            }
            let ui = WindowUi {
                app: app.handle().clone(),
                next_seq: 0,
            };
            tauri::async_runtime::spawn(async move {
                let plan = tauri::async_runtime::spawn_blocking(move || {
                    Plan::resolve(&settings, data_dir)
                })
                .await
                .expect("resolving the settings does not panic");
                conversation::run(plan, ui, receiver, current).await;
            });
            Ok(())
        })
        .invoke_handler(tauri::generate_handler![
            status,
            connect,
            push_to_talk,
            copy_text,
            settings_commands::get_settings,
            settings_commands::list_devices,
            settings_commands::save_settings,
            settings_commands::set_api_key,
            settings_commands::forget_api_key,
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

/// The global push-to-talk shortcut: works while another window has focus.
mod shortcut {
    use tauri::{AppHandle, Manager};
    use tauri_plugin_global_shortcut::{GlobalShortcutExt, Shortcut, ShortcutState};

    use crate::conversation::Command;
    use crate::{CommandError, Conversation};

    /// The plugin, with one handler: the shortcut going down and up is the push-to-talk
    /// control going down and up (toggle mode ignores the up in the turn controller).
    pub fn plugin() -> tauri::plugin::TauriPlugin<tauri::Wry> {
        tauri_plugin_global_shortcut::Builder::new()
            .with_handler(|app, _shortcut, event| {
                let pressed = event.state() == ShortcutState::Pressed;
                if let Some(conversation) = app.try_state::<Conversation>() {
                    let _ = conversation.send(Command::PushToTalk { pressed });
                }
            })
            .build()
    }

    /// Replaces the registered shortcut `old` with `new` (either may be empty for none).
    pub fn register(app: &AppHandle, old: &str, new: &str) -> Result<(), CommandError> {
        let shortcuts = app.global_shortcut();
        let failed = |shortcut: &str, reason: String| CommandError::Shortcut {
            shortcut: shortcut.to_owned(),
            reason,
        };
        if !old.trim().is_empty()
            && let Ok(old) = old.trim().parse::<Shortcut>()
        {
            let _ = shortcuts.unregister(old);
        }
        if new.trim().is_empty() {
            return Ok(());
        }
        let parsed = new
            .trim()
            .parse::<Shortcut>()
            .map_err(|error| failed(new, error.to_string()))?;
        shortcuts
            .register(parsed)
            .map_err(|error| failed(new, error.to_string()))?;
        log::info!("global push-to-talk shortcut: {new}");
        Ok(())
    }
}
