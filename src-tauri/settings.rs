//! The user's settings: what they chose in the settings dialog, kept in the platform config
//! directory (`~/.config/walkie/settings.json` on Linux; `WALKIE_CONFIG_DIR` overrides it).
//!
//! Why a file of our own and not a plugin store: the settings are few, typed, validated in one
//! place and read before the first window exists. The file never holds a secret: API keys live
//! in the OS keyring ([`crate::secrets`]). Writes go to a temporary file that is synced and then
//! renamed over the old one, so a crash leaves either the old settings or the new, never half.
//! A file that cannot be read is never overwritten: it is moved aside and the user is told.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// Where the config directory is taken from when set (tests give each run its own).
pub const CONFIG_DIR_ENV: &str = "WALKIE_CONFIG_DIR";

const FILE_NAME: &str = "settings.json";

/// Which realtime provider a conversation talks to.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProviderKind {
    /// OpenAI when an OpenAI key is available (keyring or `OPENAI_API_KEY`), else the local
    /// provider: a first start works offline and a key is picked up without a visit here.
    #[default]
    Automatic,
    /// The provider built into Walkie, served on 127.0.0.1.
    Local,
    /// OpenAI Realtime.
    #[serde(rename = "openai")]
    OpenAi,
    /// Azure OpenAI: a resource URL and a deployment.
    Azure,
    /// Any server speaking the OpenAI Realtime WebRTC protocol at a base URL.
    Custom,
}

/// How the push-to-talk controls (button, Space, global shortcut) behave.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PressMode {
    /// Talk while held.
    #[default]
    Hold,
    /// One press starts talking, the next sends.
    Toggle,
}

/// Everything the settings dialog edits. Unknown fields in the file are ignored and missing
/// ones take their defaults, so an older or newer Walkie can read the file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Settings {
    pub provider: ProviderKind,
    /// `https://{name}.openai.azure.com`
    pub azure_resource_url: String,
    pub azure_deployment: String,
    /// The part before `/v1/realtime/calls`.
    pub custom_base_url: String,
    pub model: String,
    pub voice: String,
    pub instructions: String,
    /// The model transcribing the user's speech; empty turns user transcripts off.
    pub transcription_model: String,
    pub press_mode: PressMode,
    /// The server's voice detection ends turns instead of a key.
    pub hands_free: bool,
    /// A shortcut that works while another window has focus, e.g. `Ctrl+Alt+Space`; empty for
    /// none.
    pub global_shortcut: String,
    /// Audio kept after the key is released, so the last syllable is sent.
    pub push_to_talk_tail_ms: u32,
    /// Audio from before the press that is sent with it (warm mic only).
    pub pre_roll_ms: u32,
    /// Keep the microphone open between presses so the first word is never clipped. Off: the
    /// microphone opens on the press (private, may clip the first syllable).
    pub warm_mic: bool,
    /// Chosen devices by id; empty for the system default.
    pub input_device: String,
    pub output_device: String,
    /// Where conversations are saved; empty for the platform's data folder.
    pub data_folder: String,
    /// Delete conversations older than this many days at start; `None` keeps them all.
    pub retention_days: Option<u32>,
}

/// The limits the dialog enforces, here so the file cannot bypass them.
pub const TAIL_RANGE_MS: std::ops::RangeInclusive<u32> = 0..=2_000;
pub const PRE_ROLL_RANGE_MS: std::ops::RangeInclusive<u32> = 0..=2_000;
pub const RETENTION_RANGE_DAYS: std::ops::RangeInclusive<u32> = 1..=36_500;
pub const INSTRUCTIONS_MAX_CHARS: usize = 20_000;

/// The voices the GA Realtime models speak with.
pub const VOICES: &[&str] = &[
    "alloy", "ash", "ballad", "cedar", "coral", "echo", "marin", "sage", "shimmer", "verse",
];

impl Default for Settings {
    fn default() -> Self {
        Self {
            provider: ProviderKind::Automatic,
            azure_resource_url: String::new(),
            azure_deployment: String::new(),
            custom_base_url: String::new(),
            model: "gpt-realtime".to_owned(),
            voice: "marin".to_owned(),
            instructions: "You are Walkie, a concise and friendly voice assistant on the user's \
                           desktop."
                .to_owned(),
            transcription_model: "gpt-4o-mini-transcribe".to_owned(),
            press_mode: PressMode::Hold,
            hands_free: false,
            global_shortcut: String::new(),
            push_to_talk_tail_ms: walkie_session::turn::DEFAULT_TAIL_MS as u32,
            pre_roll_ms: walkie_session::turn::DEFAULT_PRE_ROLL_MS as u32,
            warm_mic: true,
            input_device: String::new(),
            output_device: String::new(),
            data_folder: String::new(),
            retention_days: None,
        }
    }
}

/// A setting that cannot be used, named so the dialog can point at it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize)]
#[serde(rename_all = "camelCase")]
#[error("{field}: {reason}")]
pub struct InvalidSetting {
    /// The field's name as in [`Settings`] (camelCase), e.g. `customBaseUrl`.
    pub field: &'static str,
    pub reason: String,
}

impl InvalidSetting {
    fn new(field: &'static str, reason: impl Into<String>) -> Self {
        Self {
            field,
            reason: reason.into(),
        }
    }
}

impl Settings {
    /// Checks every field; the first problem found is returned.
    pub fn validate(&self) -> Result<(), InvalidSetting> {
        let url_field = match self.provider {
            ProviderKind::Azure => Some(("azureResourceUrl", &self.azure_resource_url)),
            ProviderKind::Custom => Some(("customBaseUrl", &self.custom_base_url)),
            _ => None,
        };
        if let Some((field, url)) = url_field {
            check_base_url(url).map_err(|reason| InvalidSetting::new(field, reason))?;
        }
        if self.provider == ProviderKind::Azure && self.azure_deployment.trim().is_empty() {
            return Err(InvalidSetting::new(
                "azureDeployment",
                "Azure needs the name of the realtime deployment",
            ));
        }
        if self.model.trim().is_empty() {
            return Err(InvalidSetting::new("model", "name the realtime model"));
        }
        if self.voice.trim().is_empty() {
            return Err(InvalidSetting::new("voice", "choose a voice"));
        }
        if self.instructions.chars().count() > INSTRUCTIONS_MAX_CHARS {
            return Err(InvalidSetting::new(
                "instructions",
                format!("at most {INSTRUCTIONS_MAX_CHARS} characters"),
            ));
        }
        if !TAIL_RANGE_MS.contains(&self.push_to_talk_tail_ms) {
            return Err(InvalidSetting::new(
                "pushToTalkTailMs",
                format!(
                    "{} ms is outside {}–{} ms",
                    self.push_to_talk_tail_ms,
                    TAIL_RANGE_MS.start(),
                    TAIL_RANGE_MS.end()
                ),
            ));
        }
        if !PRE_ROLL_RANGE_MS.contains(&self.pre_roll_ms) {
            return Err(InvalidSetting::new(
                "preRollMs",
                format!(
                    "{} ms is outside {}–{} ms",
                    self.pre_roll_ms,
                    PRE_ROLL_RANGE_MS.start(),
                    PRE_ROLL_RANGE_MS.end()
                ),
            ));
        }
        if let Some(days) = self.retention_days
            && !RETENTION_RANGE_DAYS.contains(&days)
        {
            return Err(InvalidSetting::new(
                "retentionDays",
                format!(
                    "keep conversations between 1 and {} days",
                    RETENTION_RANGE_DAYS.end()
                ),
            ));
        }
        if !self.data_folder.is_empty() && !Path::new(&self.data_folder).is_absolute() {
            return Err(InvalidSetting::new(
                "dataFolder",
                "give the full path of a folder (starting with /)",
            ));
        }
        if !self.global_shortcut.trim().is_empty() {
            let shortcut = self
                .global_shortcut
                .trim()
                .parse::<tauri_plugin_global_shortcut::Shortcut>()
                .map_err(|error| {
                    InvalidSetting::new(
                        "globalShortcut",
                        format!("{error} (write it like Ctrl+Alt+Space)"),
                    )
                })?;
            // A bare key would be taken from every other application.
            if shortcut.mods.is_empty() {
                return Err(InvalidSetting::new(
                    "globalShortcut",
                    "add Ctrl, Alt, Shift or Super, or it would take the key from every other \
                     application",
                ));
            }
        }
        Ok(())
    }

    /// Whether a change from `self` to `other` needs a new connection to take effect (the
    /// provider, the session or the audio devices changed). The data folder takes effect at the
    /// next start, so the history and the recorder never look at two different folders. The
    /// turn mode does not need one ([`Self::turn_mode_changed`]): the call switches in place.
    pub fn needs_reconnect(&self, other: &Settings) -> bool {
        let connection = |s: &Settings| {
            (
                (
                    s.provider,
                    s.azure_resource_url.clone(),
                    s.azure_deployment.clone(),
                    s.custom_base_url.clone(),
                ),
                s.model.clone(),
                s.voice.clone(),
                s.instructions.clone(),
                s.transcription_model.clone(),
                (s.push_to_talk_tail_ms, s.pre_roll_ms, s.warm_mic),
                (s.input_device.clone(), s.output_device.clone()),
            )
        };
        connection(self) != connection(other)
    }

    /// Whether push-to-talk (hold or toggle) or hands-free changed: the call in progress
    /// switches without hanging up, so the provider keeps the conversation.
    pub fn turn_mode_changed(&self, other: &Settings) -> bool {
        (self.press_mode, self.hands_free) != (other.press_mode, other.hands_free)
    }
}

/// A base URL a call can be placed to: https anywhere, plain http only on this machine.
fn check_base_url(url: &str) -> Result<(), String> {
    if url.trim().is_empty() {
        return Err("enter the server's address, e.g. https://example.com".to_owned());
    }
    walkie_rtc::Endpoint::custom(url.trim(), walkie_rtc::Auth::None)
        .map(|_| ())
        .map_err(|error| error.to_string())
}

/// Why settings could not be read or saved.
#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    #[error("no config folder: set {CONFIG_DIR_ENV} or HOME")]
    NoConfigDir,
    #[error("could not read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("could not save {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(transparent)]
    Invalid(#[from] InvalidSetting),
}

/// What loading found, besides the settings: a file that had to be set aside.
#[derive(Debug)]
pub struct Loaded {
    pub settings: Settings,
    /// The unreadable file was moved here and defaults are in use; the user should know.
    pub set_aside: Option<(PathBuf, String)>,
}

/// The settings file in one config directory.
#[derive(Debug, Clone)]
pub struct SettingsFile {
    path: PathBuf,
}

impl SettingsFile {
    /// `WALKIE_CONFIG_DIR` when set, else the platform's config dir + `walkie`.
    pub fn locate() -> Result<Self, SettingsError> {
        let dir = match std::env::var_os(CONFIG_DIR_ENV) {
            Some(dir) if !dir.is_empty() => PathBuf::from(dir),
            _ => dirs::config_dir()
                .ok_or(SettingsError::NoConfigDir)?
                .join("walkie"),
        };
        Ok(Self::in_dir(dir))
    }

    pub fn in_dir(dir: impl Into<PathBuf>) -> Self {
        Self {
            path: dir.into().join(FILE_NAME),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Reads the settings. No file yet: the defaults. A file that is not valid settings is
    /// moved aside (`settings.json.unreadable-<unix ms>`), never overwritten, and the defaults
    /// are used.
    pub fn load(&self, now_unix_ms: i64) -> Result<Loaded, SettingsError> {
        let text = match std::fs::read_to_string(&self.path) {
            Ok(text) => text,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                return Ok(Loaded {
                    settings: Settings::default(),
                    set_aside: None,
                });
            }
            Err(source) => {
                return Err(SettingsError::Read {
                    path: self.path.clone(),
                    source,
                });
            }
        };
        let problem = match serde_json::from_str::<Settings>(&text) {
            Ok(settings) => match settings.validate() {
                Ok(()) => {
                    return Ok(Loaded {
                        settings,
                        set_aside: None,
                    });
                }
                Err(invalid) => invalid.to_string(),
            },
            Err(error) => error.to_string(),
        };
        let aside = self
            .path
            .with_file_name(format!("{FILE_NAME}.unreadable-{now_unix_ms}"));
        std::fs::rename(&self.path, &aside).map_err(|source| SettingsError::Write {
            path: aside.clone(),
            source,
        })?;
        Ok(Loaded {
            settings: Settings::default(),
            set_aside: Some((aside, problem)),
        })
    }

    /// Validates and saves, atomically: a temporary file is written, synced and renamed.
    pub fn save(&self, settings: &Settings) -> Result<(), SettingsError> {
        use std::io::Write;
        settings.validate()?;
        let write_error = |source| SettingsError::Write {
            path: self.path.clone(),
            source,
        };
        let dir = self
            .path
            .parent()
            .expect("the settings path is a file name joined to a directory");
        std::fs::create_dir_all(dir).map_err(write_error)?;
        let json = serde_json::to_vec_pretty(settings)
            .expect("settings are plain strings, numbers and booleans");
        let temporary = self.path.with_file_name(format!("{FILE_NAME}.saving"));
        let mut file = std::fs::File::create(&temporary).map_err(write_error)?;
        file.write_all(&json).map_err(write_error)?;
        file.sync_all().map_err(write_error)?;
        drop(file);
        std::fs::rename(&temporary, &self.path).map_err(write_error)?;
        // The rename is durable once the directory is synced.
        if let Ok(dir) = std::fs::File::open(dir) {
            let _ = dir.sync_all();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temporary_dir(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("walkie-settings-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    #[test]
    fn a_first_start_gets_the_defaults_and_creates_nothing() {
        let dir = temporary_dir("first");
        let loaded = SettingsFile::in_dir(&dir).load(0).unwrap();
        assert_eq!(loaded.settings, Settings::default());
        assert!(loaded.set_aside.is_none());
        assert!(!dir.exists());
    }

    #[test]
    fn saved_settings_read_back_equal() {
        let dir = temporary_dir("roundtrip");
        let file = SettingsFile::in_dir(&dir);
        let settings = Settings {
            provider: ProviderKind::Custom,
            custom_base_url: "https://realtime.example.com/proxy".to_owned(),
            voice: "cedar".to_owned(),
            push_to_talk_tail_ms: 450,
            warm_mic: false,
            retention_days: Some(30),
            global_shortcut: "Ctrl+Alt+Space".to_owned(),
            ..Settings::default()
        };
        file.save(&settings).unwrap();
        assert_eq!(file.load(0).unwrap().settings, settings);
        assert!(!dir.join("settings.json.saving").exists());
    }

    #[test]
    fn a_damaged_file_is_set_aside_not_overwritten() {
        let dir = temporary_dir("damaged");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("settings.json"), "{\"voice\": \"marin\",").unwrap();
        let loaded = SettingsFile::in_dir(&dir).load(1234).unwrap();
        assert_eq!(loaded.settings, Settings::default());
        let (aside, problem) = loaded.set_aside.expect("the damaged file was set aside");
        assert_eq!(aside, dir.join("settings.json.unreadable-1234"));
        assert_eq!(
            std::fs::read_to_string(&aside).unwrap(),
            "{\"voice\": \"marin\","
        );
        assert!(problem.contains("EOF"), "{problem}");
        assert!(!dir.join("settings.json").exists());
    }

    #[test]
    fn a_file_with_an_invalid_value_is_set_aside_and_names_the_field() {
        let dir = temporary_dir("invalid");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("settings.json"), r#"{"pushToTalkTailMs": 99999}"#).unwrap();
        let loaded = SettingsFile::in_dir(&dir).load(7).unwrap();
        let (_, problem) = loaded.set_aside.unwrap();
        assert!(problem.starts_with("pushToTalkTailMs:"), "{problem}");
    }

    #[test]
    fn unknown_fields_are_ignored_and_missing_ones_defaulted() {
        let dir = temporary_dir("partial");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("settings.json"),
            r#"{"voice": "sage", "fromTheFuture": true}"#,
        )
        .unwrap();
        let loaded = SettingsFile::in_dir(&dir).load(0).unwrap();
        assert_eq!(loaded.settings.voice, "sage");
        assert_eq!(loaded.settings.model, Settings::default().model);
        assert!(loaded.set_aside.is_none());
    }

    #[test]
    fn invalid_settings_are_refused_with_the_field_named() {
        let cases = [
            (
                Settings {
                    provider: ProviderKind::Custom,
                    custom_base_url: "http://example.com".to_owned(),
                    ..Settings::default()
                },
                "customBaseUrl",
            ),
            (
                Settings {
                    provider: ProviderKind::Azure,
                    azure_resource_url: "https://x.openai.azure.com".to_owned(),
                    ..Settings::default()
                },
                "azureDeployment",
            ),
            (
                Settings {
                    pre_roll_ms: 5_000,
                    ..Settings::default()
                },
                "preRollMs",
            ),
            (
                Settings {
                    retention_days: Some(0),
                    ..Settings::default()
                },
                "retentionDays",
            ),
            (
                Settings {
                    data_folder: "relative/folder".to_owned(),
                    ..Settings::default()
                },
                "dataFolder",
            ),
            (
                Settings {
                    global_shortcut: "Ctrl+Banana".to_owned(),
                    ..Settings::default()
                },
                "globalShortcut",
            ),
            (
                Settings {
                    global_shortcut: "F9".to_owned(),
                    ..Settings::default()
                },
                "globalShortcut",
            ),
            (
                Settings {
                    model: " ".to_owned(),
                    ..Settings::default()
                },
                "model",
            ),
        ];
        for (settings, field) in cases {
            let error = settings.validate().unwrap_err();
            assert_eq!(error.field, field, "{error}");
            let dir = temporary_dir(field);
            assert!(SettingsFile::in_dir(&dir).save(&settings).is_err());
            assert!(!dir.join("settings.json").exists());
        }
    }

    #[test]
    fn plain_http_is_accepted_only_on_this_machine() {
        let local = Settings {
            provider: ProviderKind::Custom,
            custom_base_url: "http://127.0.0.1:8080".to_owned(),
            ..Settings::default()
        };
        assert_eq!(local.validate(), Ok(()));
    }

    #[test]
    fn only_connection_changes_need_a_new_connection() {
        let before = Settings::default();
        let retention = Settings {
            retention_days: Some(7),
            global_shortcut: "Ctrl+Alt+W".to_owned(),
            ..before.clone()
        };
        assert!(!before.needs_reconnect(&retention));
        let voice = Settings {
            voice: "ash".to_owned(),
            ..before.clone()
        };
        assert!(before.needs_reconnect(&voice));
    }

    #[test]
    fn switching_to_hands_free_or_toggle_keeps_the_connection_and_is_told_apart() {
        let before = Settings::default();
        let hands_free = Settings {
            hands_free: true,
            ..before.clone()
        };
        let toggle = Settings {
            press_mode: PressMode::Toggle,
            ..before.clone()
        };
        for after in [&hands_free, &toggle] {
            assert!(!before.needs_reconnect(after));
            assert!(before.turn_mode_changed(after));
        }
        assert!(!before.turn_mode_changed(&before.clone()));
    }
}
