//! The settings dialog's commands: the settings in force, saving them (validated, atomically)
//! and applying a change to the running conversation, the API keys in the OS keyring, and the
//! device lists for the pickers. The settings themselves (fields, validation, the file) are in
//! [`crate::settings`]; the keys' storage is in [`crate::secrets`].

use std::sync::Mutex;

use tauri::AppHandle;
use walkie_audio::device::Direction;

use crate::conversation::Command;
use crate::plan::Plan;
use crate::secrets::{self, KeyAccount, KeySummary};
use crate::settings::{self, Settings, SettingsFile};
use crate::{CommandError, Conversation, shortcut};

/// The settings in force and where they live.
pub(crate) struct SettingsState {
    pub(crate) file: SettingsFile,
    pub(crate) current: Mutex<Settings>,
    /// The data folder chosen at start, used until the next start.
    pub(crate) data_dir: Result<std::path::PathBuf, String>,
    /// Something the user should read once about their settings (a damaged file set aside).
    pub(crate) notice: Mutex<Option<String>>,
}

impl SettingsState {
    pub(crate) fn current(&self) -> Settings {
        self.current
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }
}

/// What the settings dialog shows: the settings, what it may know of the keys, and its lists.
#[derive(Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SettingsView {
    settings: Settings,
    keys: Vec<KeySummary>,
    voices: &'static [&'static str],
    config_file: String,
    /// The data folder in use (chosen at start: the setting, or the default when it is empty).
    data_folder_in_use: Option<String>,
    notice: Option<String>,
}

const ACCOUNTS: [KeyAccount; 3] = [KeyAccount::OpenAi, KeyAccount::Azure, KeyAccount::Custom];

/// Runs keyring (D-Bus) work off the async threads.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, CommandError> {
    tauri::async_runtime::spawn_blocking(work)
        .await
        .map_err(|error| CommandError::Background(error.to_string()))
}

async fn settings_view(state: &SettingsState) -> Result<SettingsView, CommandError> {
    let settings = state.current();
    let keys = blocking(|| ACCOUNTS.map(secrets::summary).to_vec()).await?;
    Ok(SettingsView {
        data_folder_in_use: state
            .data_dir
            .as_ref()
            .ok()
            .map(|dir| dir.display().to_string()),
        settings,
        keys,
        voices: settings::VOICES,
        config_file: state.file.path().display().to_string(),
        notice: state
            .notice
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .take(),
    })
}

/// The settings dialog opened.
#[tauri::command]
pub(crate) async fn get_settings(
    state: tauri::State<'_, SettingsState>,
) -> Result<SettingsView, CommandError> {
    settings_view(&state).await
}

/// The user saved the settings dialog: validate, persist, and apply.
#[tauri::command]
pub(crate) async fn save_settings(
    app: AppHandle,
    state: tauri::State<'_, SettingsState>,
    conversation: tauri::State<'_, Conversation>,
    settings: Settings,
) -> Result<SettingsView, CommandError> {
    let before = state.current();
    if before.global_shortcut != settings.global_shortcut {
        shortcut::register(&app, &before.global_shortcut, &settings.global_shortcut)?;
    }
    if let Err(error) = state.file.save(&settings) {
        // Put the shortcut back as it was: nothing of a refused save takes effect.
        let _ = shortcut::register(&app, &settings.global_shortcut, &before.global_shortcut);
        return Err(error.into());
    }
    *state
        .current
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner()) = settings.clone();
    log::info!("settings saved to {}", state.file.path().display());
    if before.needs_reconnect(&settings) {
        let data_dir = state.data_dir.clone();
        let plan = blocking(move || Plan::resolve(&settings, data_dir)).await?;
        conversation.send(Command::Apply(Box::new(plan)))?;
    } else if before.turn_mode_changed(&settings) {
        conversation.send(Command::SetTurnMode(crate::plan::turn_mode(&settings)))?;
    }
    settings_view(&state).await
}

/// Reconnects with the key now in use if the provider in use takes keys from `account`.
async fn apply_key_change(
    state: &SettingsState,
    conversation: &Conversation,
    account: KeyAccount,
) -> Result<(), CommandError> {
    let settings = state.current();
    let affected = match settings.provider {
        settings::ProviderKind::Automatic | settings::ProviderKind::OpenAi => {
            account == KeyAccount::OpenAi
        }
        settings::ProviderKind::Azure => account == KeyAccount::Azure,
        settings::ProviderKind::Custom => account == KeyAccount::Custom,
        settings::ProviderKind::Local => false,
    };
    if affected {
        let data_dir = state.data_dir.clone();
        let plan = blocking(move || Plan::resolve(&settings, data_dir)).await?;
        conversation.send(Command::Apply(Box::new(plan)))?;
    }
    Ok(())
}

/// Saves a key the user typed in the OS keyring. Only a summary comes back.
#[tauri::command]
pub(crate) async fn set_api_key(
    state: tauri::State<'_, SettingsState>,
    conversation: tauri::State<'_, Conversation>,
    account: KeyAccount,
    key: String,
) -> Result<KeySummary, CommandError> {
    let summary = blocking(move || secrets::store_key(account, &key)).await??;
    log::info!("an API key for {account:?} was saved in the keyring");
    apply_key_change(&state, &conversation, account).await?;
    Ok(summary)
}

/// Removes a key from the OS keyring.
#[tauri::command]
pub(crate) async fn forget_api_key(
    state: tauri::State<'_, SettingsState>,
    conversation: tauri::State<'_, Conversation>,
    account: KeyAccount,
) -> Result<KeySummary, CommandError> {
    let summary = blocking(move || secrets::forget_key(account)).await??;
    log::info!("the API key for {account:?} was removed from the keyring");
    apply_key_change(&state, &conversation, account).await?;
    Ok(summary)
}

/// A microphone or speaker as the pickers list it.
#[derive(Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct DeviceChoice {
    id: String,
    name: String,
    is_default: bool,
}

/// The devices the pickers offer.
#[derive(Debug, Default, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct DeviceList {
    inputs: Vec<DeviceChoice>,
    outputs: Vec<DeviceChoice>,
    /// Why a list is empty when the sound system could not be asked.
    problem: Option<String>,
}

/// The microphones and speakers there are now.
#[tauri::command]
pub(crate) async fn list_devices() -> Result<DeviceList, CommandError> {
    blocking(|| {
        let mut list = DeviceList::default();
        for (direction, into) in [
            (Direction::Input, &mut list.inputs),
            (Direction::Output, &mut list.outputs),
        ] {
            match walkie_audio::device::list_devices(direction) {
                Ok(devices) => into.extend(devices.into_iter().map(|device| DeviceChoice {
                    id: device.id,
                    name: device.name,
                    is_default: device.is_default,
                })),
                Err(error) => list.problem = Some(error.to_string()),
            }
        }
        list
    })
    .await
}

/// The settings at start: the file's, or the defaults with a notice when it was unreadable.
pub(crate) fn load_settings() -> (SettingsFile, Settings, Option<String>) {
    let now_unix_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|since| since.as_millis() as i64)
        .unwrap_or_default();
    let file = match SettingsFile::locate() {
        Ok(file) => file,
        Err(error) => {
            // No home: settings live for this run only.
            let file = SettingsFile::in_dir(std::env::temp_dir().join("walkie"));
            return (
                file,
                Settings::default(),
                Some(format!("{error}; settings will not be kept")),
            );
        }
    };
    match file.load(now_unix_ms) {
        Ok(loaded) => {
            let notice = loaded.set_aside.map(|(aside, problem)| {
                format!(
                    "Your settings file could not be read ({problem}), so the defaults are in \
                     use. The old file was kept as {}.",
                    aside.display()
                )
            });
            (file, loaded.settings, notice)
        }
        Err(error) => {
            let notice = format!("{error}; the defaults are in use for now");
            (file, Settings::default(), Some(notice))
        }
    }
}
