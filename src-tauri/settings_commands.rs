//! The settings dialog's commands: the settings in force, saving them (validated, atomically)
//! and applying a change to the running conversation, the API keys in the OS keyring, and the
//! device lists for the pickers. The settings themselves (fields, validation, the file) are in
//! [`crate::settings`]; the keys' storage is in [`crate::secrets`].

use std::sync::Mutex;

use tauri::AppHandle;
use walkie_audio::device::DeviceDirection;

use crate::conversation::Command;
use crate::plan::Plan;
use crate::secrets::{self, KeyAccount, KeySummary};
use crate::settings::{self, InvalidSetting, Settings, SettingsFile};
use crate::{CommandError, Conversation, shortcut};

/// The settings in force and where they live.
pub(crate) struct SettingsState {
    pub(crate) file: SettingsFile,
    pub(crate) current: Mutex<Settings>,
    /// The data folder chosen at start, used until the next start.
    pub(crate) data_dir: Result<std::path::PathBuf, crate::plan::PlanError>,
    /// Something the user should read once about their settings (a damaged file set aside).
    pub(crate) notice: Mutex<Option<String>>,
    /// What the user should read once in the window about settings brought up to date (a
    /// model moved off one that shuts down): the first conversation shows it.
    pub(crate) migrated: Mutex<Option<String>>,
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
    /// The model names the official SDK lists (the field stays free text).
    models: &'static [&'static str],
    /// GPT-Live's models (the Live API), and the voices they take.
    live_models: &'static [&'static str],
    live_voices: &'static [&'static str],
    transcription_models: &'static [&'static str],
    /// The names the provider shuts down, with when and what replaces each.
    deprecated_models: &'static [walkie_openai::names::Deprecation],
    /// The models that take a reasoning effort and parallel tool calls.
    reasoning_models: &'static [&'static str],
    /// The transcription models that take a delay, and those that take words to expect.
    transcription_delay_models: &'static [&'static str],
    transcription_keyword_models: &'static [&'static str],
    /// The providers' published prices, for "Published prices" in the price tables.
    published_prices: Vec<walkie_settings::prices::PriceRow>,
    published_minute_prices: Vec<walkie_settings::prices::MinutePriceRow>,
    config_file: String,
    /// Where the global shortcut is heard in this session.
    shortcut_reach: crate::desktop::ShortcutReach,
    /// The keys the desktop bound for Walkie, in its words, where its portal holds the key.
    shortcut_trigger: Option<String>,
    /// Whether a tray shows Walkie here (else closing to the tray quits).
    tray_shows: bool,
    /// The data folder in use (chosen at start: the setting, or the default when it is empty).
    data_folder_in_use: Option<String>,
    notice: Option<String>,
    /// Why no key can be saved here (no secret store answers); `None` when one can.
    keyring_missing: Option<String>,
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

async fn settings_view(
    app: &AppHandle,
    state: &SettingsState,
) -> Result<SettingsView, CommandError> {
    let portal_key =
        tauri::Manager::try_state::<crate::shortcut::PortalKey>(app).map(|key| key.state());
    let (shortcut_reach, shortcut_trigger) = crate::desktop::shortcut_reach(
        std::env::var("WAYLAND_DISPLAY").ok().as_deref(),
        std::env::var("XDG_SESSION_TYPE").ok().as_deref(),
        portal_key,
    );
    let settings = state.current();
    let (keys, keyring_missing) = blocking(|| {
        (
            ACCOUNTS.map(secrets::summary).to_vec(),
            secrets::keyring_unavailable(),
        )
    })
    .await?;
    Ok(SettingsView {
        keyring_missing,
        data_folder_in_use: state
            .data_dir
            .as_ref()
            .ok()
            .map(|dir| dir.display().to_string()),
        settings,
        keys,
        voices: walkie_openai::names::VOICES,
        models: walkie_openai::names::REALTIME_MODELS,
        live_models: walkie_openai::live::LIVE_MODELS,
        live_voices: walkie_openai::live::LIVE_VOICES,
        transcription_models: walkie_openai::names::TRANSCRIPTION_MODELS,
        deprecated_models: walkie_openai::names::DEPRECATED_MODELS,
        reasoning_models: walkie_openai::names::REASONING_MODELS,
        transcription_delay_models: walkie_openai::names::TRANSCRIPTION_DELAY_MODELS,
        transcription_keyword_models: walkie_openai::names::TRANSCRIPTION_KEYWORD_MODELS,
        published_prices: walkie_settings::prices::published_prices(),
        published_minute_prices: walkie_settings::prices::published_minute_prices(),
        config_file: state.file.path().display().to_string(),
        tray_shows: crate::desktop::tray_shows().await,
        shortcut_reach,
        shortcut_trigger,
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
    app: AppHandle,
    state: tauri::State<'_, SettingsState>,
) -> Result<SettingsView, CommandError> {
    settings_view(&app, &state).await
}

/// Why the settings dialog's Save did nothing: the fields at fault (every one, each with its
/// label and what to do), or another failure. Sent as a [`crate::WebviewError`].
#[derive(Debug)]
pub(crate) enum SaveError {
    Fields(Vec<InvalidSetting>),
    Other(CommandError),
}

impl From<CommandError> for SaveError {
    fn from(error: CommandError) -> Self {
        SaveError::Other(error)
    }
}

impl From<settings::SettingsError> for SaveError {
    fn from(error: settings::SettingsError) -> Self {
        SaveError::Other(error.into())
    }
}

impl serde::Serialize for SaveError {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            SaveError::Fields(problems) => crate::WebviewError {
                message: match problems.as_slice() {
                    [one] => one.to_string(),
                    many => format!("{} settings need a change", many.len()),
                },
                field: problems.first().map(|problem| problem.field),
                problems,
            },
            SaveError::Other(other) => crate::WebviewError {
                field: other.field(),
                ..crate::WebviewError::said(other)
            },
        }
        .serialize(serializer)
    }
}

fn field_problem(field: &'static str, label: &'static str, reason: String) -> SaveError {
    SaveError::Fields(vec![InvalidSetting {
        field,
        label,
        reason,
    }])
}

/// A key typed into the dialog, saved with the settings. Its Debug names the account only.
#[derive(serde::Deserialize)]
pub(crate) struct TypedKey {
    account: KeyAccount,
    key: String,
}

impl std::fmt::Debug for TypedKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TypedKey")
            .field("account", &self.account)
            .finish_non_exhaustive()
    }
}

/// Every problem with `settings`, without saving (for a form whose own checks found more).
#[tauri::command]
pub(crate) fn check_settings(settings: Settings) -> Vec<InvalidSetting> {
    settings.problems()
}

/// The plan of what the form holds, with the key typed there (if any) in place of the saved
/// one; every field at fault is refused first. Nothing is saved.
pub(crate) async fn form_plan(
    state: &SettingsState,
    settings: Settings,
    key: Option<TypedKey>,
) -> Result<Plan, SaveError> {
    let problems = settings.problems();
    if !problems.is_empty() {
        return Err(SaveError::Fields(problems));
    }
    let typed = key
        .map(|TypedKey { account, key }| (account, secrets::ApiKey::given(key.trim())))
        .filter(|(_, key)| !key.expose().is_empty());
    let data_dir = state.data_dir.clone();
    Ok(blocking(move || {
        let mut plan = Plan::resolve(&settings, data_dir);
        plan.provider = crate::plan::provider_with_typed_key(&settings, typed);
        plan
    })
    .await?)
}

/// Places a call to the provider the form names (with the key typed there, if any), without
/// saving anything and without touching the call under way, and hangs up once it is open. The
/// answer is a sentence for the form; a refusal is the sentence the status line would show.
#[tauri::command]
pub(crate) async fn test_connection(
    state: tauri::State<'_, SettingsState>,
    dialler: tauri::State<'_, crate::dialler::Dialler>,
    settings: Settings,
    key: Option<TypedKey>,
) -> Result<String, SaveError> {
    let plan = form_plan(&state, settings, key).await?;
    let provider = plan
        .provider
        .clone()
        .map_err(|error| CommandError::TestCall(format!("Not tested: {error}.")))?;
    if matches!(provider, crate::plan::Provider::Local) {
        return Ok("The local provider runs inside Walkie: there is nothing to test.".to_owned());
    }
    let automatic = provider
        .endpoint(None)
        .map_err(|error| CommandError::TestCall(format!("Not tested: {error}.")))?
        .form()
        == walkie_rtc::CallForm::Automatic;
    let started = std::time::Instant::now();
    match dialler
        .inner()
        .clone()
        .connect(plan, Vec::new(), false)
        .await
    {
        Ok(call) => {
            let connected_ms = started.elapsed().as_millis();
            let form = call.form();
            if let Err(error) = call.hangup().await {
                log::info!("the test call did not hang up cleanly: {error}");
            }
            // A server that refused the documented form is worth a word: its own model
            // answers, whatever the settings name.
            let refused_multipart = automatic && form == walkie_rtc::CallForm::RawSdp;
            Ok(format!(
                "{} answered: a call connected in {connected_ms} ms, and was hung up.{}",
                provider.label(),
                if refused_multipart {
                    " It takes the offer alone, so its own model answers."
                } else {
                    ""
                }
            ))
        }
        Err(failure) => Err(CommandError::TestCall(format!(
            "The test call to {} failed. {}",
            provider.label(),
            failure.sentence
        ))
        .into()),
    }
}

/// The user saved the settings dialog: validate every field, save the typed key (if any) in
/// the keyring, persist, and apply.
#[tauri::command]
pub(crate) async fn save_settings(
    app: AppHandle,
    state: tauri::State<'_, SettingsState>,
    conversation: tauri::State<'_, Conversation>,
    mut settings: Settings,
    key: Option<TypedKey>,
) -> Result<SettingsView, SaveError> {
    // Saved while the dialog warned of their shutdown: the user chose them knowing.
    settings.keep_chosen_deprecated();
    let problems = settings.problems();
    if !problems.is_empty() {
        return Err(SaveError::Fields(problems));
    }
    let before = state.current();
    if before.global_shortcut != settings.global_shortcut
        && let Err(error) =
            shortcut::register(&app, &before.global_shortcut, &settings.global_shortcut)
    {
        log::warn!("{error}");
        return Err(field_problem(
            "globalShortcut",
            settings::label("globalShortcut"),
            "the system would not give this shortcut to Walkie (another app may hold it); \
             choose another, e.g. Ctrl+Alt+Space"
                .to_owned(),
        ));
    }
    let key_account = match key {
        Some(TypedKey { account, key }) => {
            match blocking(move || secrets::store_key(account, &key)).await? {
                Ok(_) => {
                    log::info!("an API key for {account:?} was saved in the keyring");
                    Some(account)
                }
                Err(error) => {
                    let _ = shortcut::register(
                        &app,
                        &settings.global_shortcut,
                        &before.global_shortcut,
                    );
                    return Err(field_problem("apiKey", "API key", error.to_string()));
                }
            }
        }
        None => None,
    };
    if before.start_on_login != settings.start_on_login {
        let enabled = settings.start_on_login;
        if let Err(error) = blocking(move || crate::autostart::set(enabled)).await? {
            log::warn!("start on login: {error}");
            let _ = shortcut::register(&app, &settings.global_shortcut, &before.global_shortcut);
            return Err(field_problem(
                "startOnLogin",
                settings::label("startOnLogin"),
                format!("{error}; check that folder's permissions, or leave this off"),
            ));
        }
        log::info!("start on login {}", if enabled { "on" } else { "off" });
    }
    if let Err(error) = state.file.save(&settings) {
        // Put the shortcut and the login entry back as they were. A key stored just before
        // stays in the keyring: it is what the user typed, and the next save finds it there.
        let _ = shortcut::register(&app, &settings.global_shortcut, &before.global_shortcut);
        if before.start_on_login != settings.start_on_login {
            let enabled = before.start_on_login;
            let _ = blocking(move || crate::autostart::set(enabled)).await;
        }
        return Err(error.into());
    }
    *state
        .current
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner()) = settings.clone();
    log::info!("settings saved to {}", state.file.path().display());
    let change = before.change_to(&settings);
    if change.new_call {
        let data_dir = state.data_dir.clone();
        let plan = blocking(move || Plan::resolve(&settings, data_dir)).await?;
        conversation.send(Command::Apply(Box::new(plan)))?;
    } else {
        if change.turn_mode {
            conversation.send(Command::SetTurnMode(crate::plan::turn_mode(&settings)))?;
        }
        if change.costing {
            conversation.send(Command::SetCosting {
                prices: settings.prices.clone(),
                minute_prices: settings.minute_prices.clone(),
                budget_usd: settings.budget_usd,
            })?;
        }
        if change.tool_rounds {
            conversation.send(Command::SetAutomaticToolRounds(
                settings.automatic_tool_rounds,
            ))?;
        }
        if change.next_calls {
            conversation.send(Command::SetSessionLimit {
                session_limit_ms: u64::from(settings.session_limit_minutes) * 60_000,
            })?;
        }
        if change.typed_replies {
            conversation.send(Command::SetTypedRepliesInText(
                settings.typed_replies_in_text,
            ))?;
        }
        if let Some(account) = key_account {
            apply_key_change(&state, &conversation, account).await?;
        }
    }
    Ok(settings_view(&app, &state).await?)
}

/// The hands-free switch beside the talk control was flipped: that setting alone is saved (the
/// dialog's other fields, valid or not, are neither read nor saved again), and the call under
/// way switches at once.
#[tauri::command]
pub(crate) async fn set_turn_mode(
    app: AppHandle,
    state: tauri::State<'_, SettingsState>,
    conversation: tauri::State<'_, Conversation>,
    hands_free: bool,
) -> Result<SettingsView, CommandError> {
    let (before, settings) = {
        let mut current = state
            .current
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let before = current.clone();
        let settings = Settings {
            hands_free,
            ..before.clone()
        };
        state.file.save(&settings)?;
        *current = settings.clone();
        (before, settings)
    };
    log::info!("hands-free {}", if hands_free { "on" } else { "off" });
    let change = before.change_to(&settings);
    if change.new_call {
        let data_dir = state.data_dir.clone();
        let plan = blocking(move || Plan::resolve(&settings, data_dir)).await?;
        conversation.send(Command::Apply(Box::new(plan)))?;
    } else if change.turn_mode {
        conversation.send(Command::SetTurnMode(crate::plan::turn_mode(&settings)))?;
    }
    settings_view(&app, &state).await
}

/// Asks for a folder to save conversations in (the system's folder picker, starting at
/// `current` when it exists). Returns the folder chosen, or `None` when the user cancelled.
#[tauri::command]
pub(crate) async fn choose_data_folder(
    app: AppHandle,
    current: Option<String>,
) -> Result<Option<String>, CommandError> {
    use tauri::Manager;
    use tauri_plugin_dialog::DialogExt;
    let (answer, chosen) = tokio::sync::oneshot::channel();
    let mut dialog = app.dialog().file().set_title("Save conversations in");
    if let Some(current) = current.map(std::path::PathBuf::from)
        && current.is_dir()
    {
        dialog = dialog.set_directory(current);
    }
    if let Some(window) = app.get_webview_window("main") {
        dialog = dialog.set_parent(&window);
    }
    dialog.pick_folder(move |path| {
        let _ = answer.send(path);
    });
    let Some(path) = chosen.await.ok().flatten() else {
        return Ok(None);
    };
    let path = path
        .into_path()
        .map_err(|_| CommandError::Background("the folder picker gave no folder path".into()))?;
    Ok(Some(path.display().to_string()))
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

/// Whether an input device is a loopback of a speaker ("Monitor of …" in PulseAudio and
/// PipeWire: a source named `<sink>.monitor`), which hears the computer, not the user.
fn is_speaker_monitor(id: &str) -> bool {
    id.strip_prefix("pulseaudio:")
        .is_some_and(|name| name.ends_with(".monitor"))
}

/// The microphones and speakers there are now. Speaker monitors are not offered as
/// microphones, unless one is the saved choice (so opening the dialog never loses it).
#[tauri::command]
pub(crate) async fn list_devices(
    state: tauri::State<'_, SettingsState>,
) -> Result<DeviceList, CommandError> {
    let chosen_input = state.current().input_device;
    blocking(move || {
        let mut list = DeviceList::default();
        for (direction, into) in [
            (DeviceDirection::Input, &mut list.inputs),
            (DeviceDirection::Output, &mut list.outputs),
        ] {
            match walkie_audio::device::list_devices(direction) {
                Ok(devices) => into.extend(
                    devices
                        .into_iter()
                        .filter(|device| {
                            direction == DeviceDirection::Output
                                || !is_speaker_monitor(&device.id)
                                || device.id == chosen_input
                        })
                        .map(|device| DeviceChoice {
                            id: device.id,
                            name: device.name,
                            is_default: device.is_default,
                        }),
                ),
                Err(error) => list.problem = Some(error.to_string()),
            }
        }
        list
    })
    .await
}

/// The settings at start: the file's (brought up to date, with the line that says what
/// changed), or the defaults with a notice when it was unreadable.
pub(crate) fn load_settings() -> (SettingsFile, Settings, Option<String>, Option<String>) {
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
                None,
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
            (file, loaded.settings, notice, loaded.migrated)
        }
        Err(error) => {
            let notice = format!("{error}; the defaults are in use for now");
            (file, Settings::default(), Some(notice), None)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn speaker_monitors_are_told_from_microphones() {
        assert!(is_speaker_monitor("pulseaudio:mic.monitor"));
        assert!(is_speaker_monitor(
            "pulseaudio:alsa_output.pci-0000_00_1f.3.analog-stereo.monitor"
        ));
        assert!(!is_speaker_monitor(
            "pulseaudio:alsa_input.pci-0000_00_1f.3.analog-stereo"
        ));
        assert!(!is_speaker_monitor("alsa:monitor"));
    }

    #[test]
    fn refused_fields_reach_the_dialog_as_a_list_with_their_labels() {
        let problems = Settings {
            model: String::new(),
            pre_roll_ms: 9_000,
            ..Settings::default()
        }
        .problems();
        let json = serde_json::to_value(SaveError::Fields(problems)).unwrap();
        assert_eq!(json["message"], "2 settings need a change");
        assert_eq!(json["field"], "model");
        assert_eq!(json["problems"][1]["field"], "preRollMs");
        assert_eq!(
            json["problems"][1]["label"],
            "Include audio from before the press (ms)"
        );
        assert_eq!(
            json["problems"][1]["reason"],
            "9000 ms is too long; enter 0 to 2000 ms"
        );
    }
}
