//! What one connection needs, resolved from the settings and the keys: which provider with
//! which credentials, the session to ask for, how turns are taken, which devices to open and
//! where to save.
//!
//! Why a separate step: the conversation task must never wait on D-Bus (the keyring) or read
//! files, so everything is resolved beforehand, off the async threads, into one value the task
//! just uses. A provider that cannot be used (no key) is a plan too: the task shows why.

use std::path::PathBuf;

use walkie_audio::engine::EngineConfig;
use walkie_openai::{
    AudioConfig, AudioInput, AudioOutput, Modality, SessionConfig, Transcription, TurnDetection,
};
use walkie_rtc::{Auth, Endpoint};
use walkie_session::turn::{PressMode, TurnMode};

use crate::secrets::{self, ApiKey, KeyAccount};
use crate::settings::{self, ProviderKind, Settings};

/// Which provider to talk to, with what it needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Provider {
    /// The provider built into the app, served on 127.0.0.1: the offline default.
    Local,
    /// OpenAI Realtime with a standard or ephemeral key.
    OpenAi { api_key: ApiKey },
    /// Azure OpenAI.
    Azure {
        resource_url: String,
        deployment: String,
        api_key: ApiKey,
    },
    /// A compatible server at a base URL, with or without a key.
    Custom {
        base_url: String,
        api_key: Option<ApiKey>,
    },
}

impl Provider {
    /// How the status line names it.
    pub fn label(&self) -> String {
        match self {
            Provider::Local => "the local provider".to_owned(),
            Provider::OpenAi { .. } => "OpenAI".to_owned(),
            Provider::Azure { .. } => "Azure OpenAI".to_owned(),
            Provider::Custom { base_url, .. } => url_host(base_url),
        }
    }

    /// Where to place the call. `local_base_url` is the running local provider's address.
    pub fn endpoint(&self, local_base_url: Option<&str>) -> Result<Endpoint, String> {
        let endpoint = match self {
            Provider::Local => Endpoint::custom(
                local_base_url.expect("the local provider is started before its endpoint"),
                Auth::None,
            ),
            Provider::OpenAi { api_key } => Endpoint::openai(api_key.expose()),
            Provider::Azure {
                resource_url,
                deployment,
                api_key,
            } => Endpoint::azure(resource_url, api_key.expose(), deployment.as_str()),
            Provider::Custom { base_url, api_key } => Endpoint::custom(
                base_url,
                match api_key {
                    Some(key) => Auth::Bearer(key.expose().to_owned()),
                    None => Auth::None,
                },
            ),
        };
        endpoint.map_err(|error| error.to_string())
    }
}

fn url_host(url: &str) -> String {
    url.split("://")
        .nth(1)
        .and_then(|rest| rest.split(['/', ':']).next())
        .filter(|host| !host.is_empty())
        .unwrap_or(url)
        .to_owned()
}

/// Push-to-talk (hold or toggle) or hands-free, as the settings say. Hands-free asks the
/// server's VAD to answer and to interrupt a reply when the user speaks.
pub fn turn_mode(settings: &Settings) -> TurnMode {
    if settings.hands_free {
        TurnMode::HandsFree(TurnDetection::ServerVad {
            threshold: None,
            prefix_padding_ms: None,
            silence_duration_ms: None,
            idle_timeout_ms: None,
            create_response: Some(true),
            interrupt_response: Some(true),
        })
    } else {
        TurnMode::PushToTalk(match settings.press_mode {
            settings::PressMode::Hold => PressMode::Hold,
            settings::PressMode::Toggle => PressMode::Toggle,
        })
    }
}

/// Everything a connection is made from.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The provider, or why none can be used (shown to the user; nothing is dialled).
    pub provider: Result<Provider, String>,
    pub session: SessionConfig,
    pub mode: TurnMode,
    pub tail_ms: u64,
    pub pre_roll_ms: u64,
    pub engine: EngineConfig,
    /// Where conversations are saved, or why there is nowhere.
    pub data_dir: Result<PathBuf, String>,
}

impl Plan {
    /// Resolves the settings against the keyring and the environment. Blocks on the keyring:
    /// call it off the async threads. `data_dir` is the folder chosen when the app started
    /// (the history panel reads the same one; a new choice takes effect at the next start).
    pub fn resolve(settings: &Settings, data_dir: Result<PathBuf, String>) -> Plan {
        Plan {
            provider: provider(settings),
            session: session(settings),
            mode: turn_mode(settings),
            tail_ms: u64::from(settings.push_to_talk_tail_ms),
            pre_roll_ms: u64::from(settings.pre_roll_ms),
            engine: EngineConfig {
                input_device: non_empty(&settings.input_device),
                output_device: non_empty(&settings.output_device),
                pre_roll_ms: settings.pre_roll_ms,
                privacy_mic: !settings.warm_mic,
                ..EngineConfig::default()
            },
            data_dir,
        }
    }
}

/// The data folder the settings name, else `WALKIE_DATA_DIR`, else the platform's.
pub fn data_dir(settings: &Settings) -> Result<PathBuf, String> {
    match non_empty(&settings.data_folder) {
        Some(folder) => Ok(PathBuf::from(folder)),
        None => walkie_store::default_data_dir()
            .map_err(|error| format!("no folder to save into: {error}")),
    }
}

fn non_empty(text: &str) -> Option<String> {
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_owned())
}

fn provider(settings: &Settings) -> Result<Provider, String> {
    let required = |account: KeyAccount, provider_name: &str| {
        let (key, _, problem) = secrets::key_in_use(account);
        key.ok_or_else(|| {
            let mut reason = format!("no API key for {provider_name}: add one in Settings");
            if let Some(variable) = account.environment_variable() {
                reason.push_str(&format!(" or set {variable}"));
            }
            if let Some(problem) = problem {
                reason.push_str(&format!(" ({problem})"));
            }
            reason
        })
    };
    match settings.provider {
        ProviderKind::Automatic => match secrets::key_in_use(KeyAccount::OpenAi).0 {
            Some(api_key) => Ok(Provider::OpenAi { api_key }),
            None => Ok(Provider::Local),
        },
        ProviderKind::Local => Ok(Provider::Local),
        ProviderKind::OpenAi => Ok(Provider::OpenAi {
            api_key: required(KeyAccount::OpenAi, "OpenAI")?,
        }),
        ProviderKind::Azure => Ok(Provider::Azure {
            resource_url: settings.azure_resource_url.trim().to_owned(),
            deployment: settings.azure_deployment.trim().to_owned(),
            api_key: required(KeyAccount::Azure, "Azure OpenAI")?,
        }),
        ProviderKind::Custom => Ok(Provider::Custom {
            base_url: settings.custom_base_url.trim().to_owned(),
            api_key: secrets::key_in_use(KeyAccount::Custom).0,
        }),
    }
}

/// The session Walkie asks for: spoken replies in the chosen voice, the user's speech
/// transcribed unless transcription is off.
fn session(settings: &Settings) -> SessionConfig {
    let transcription = non_empty(&settings.transcription_model).map(|model| Transcription {
        model,
        language: None,
        prompt: None,
    });
    SessionConfig {
        model: Some(settings.model.trim().to_owned()),
        instructions: non_empty(&settings.instructions),
        output_modalities: Some(vec![Modality::Audio]),
        audio: Some(AudioConfig {
            input: Some(AudioInput {
                transcription: Some(transcription),
                ..AudioInput::default()
            }),
            output: Some(AudioOutput {
                voice: Some(settings.voice.trim().to_owned()),
                ..AudioOutput::default()
            }),
        }),
        ..SessionConfig::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_custom_provider_is_named_by_its_host() {
        assert_eq!(
            url_host("https://realtime.example.com:8443/v1"),
            "realtime.example.com"
        );
        assert_eq!(url_host("not a url"), "not a url");
    }

    #[test]
    fn the_session_carries_the_chosen_voice_model_and_transcription() {
        let settings = Settings {
            model: "gpt-realtime-mini".to_owned(),
            voice: "cedar".to_owned(),
            transcription_model: String::new(),
            ..Settings::default()
        };
        let session = session(&settings);
        assert_eq!(session.model.as_deref(), Some("gpt-realtime-mini"));
        let audio = session.audio.unwrap();
        assert_eq!(audio.output.unwrap().voice.as_deref(), Some("cedar"));
        // Transcription off is sent as an explicit null, not left out.
        assert_eq!(audio.input.unwrap().transcription, Some(None));
    }

    #[test]
    fn the_local_provider_needs_no_key() {
        let plan = Plan::resolve(
            &Settings {
                provider: ProviderKind::Local,
                warm_mic: false,
                hands_free: true,
                ..Settings::default()
            },
            Ok(PathBuf::from("/tmp/walkie-data")),
        );
        assert_eq!(plan.provider, Ok(Provider::Local));
        assert!(plan.engine.privacy_mic);
        assert!(matches!(plan.mode, TurnMode::HandsFree(_)));
        assert_eq!(plan.data_dir, Ok(PathBuf::from("/tmp/walkie-data")));
    }
}
