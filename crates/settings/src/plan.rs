//! What one connection needs, resolved from the settings and the keys: which provider with
//! which credentials, the session to ask for, how turns are taken, which devices to open and
//! where to save.
//!
//! Why a separate step: the conversation task must never wait on D-Bus (the keyring) or read
//! files, so everything is resolved beforehand, off the async threads, into one value the task
//! just uses. A provider that cannot be used (no key) is a plan too: the task shows why.

use std::path::PathBuf;

use walkie_audio::engine::EngineConfig;
use walkie_conversation::{ConversationConfig, DialFailure, RedialPolicy, Retry};
use walkie_openai::live::{
    InitialItem, InitialRole, LiveAudio, LiveAudioOutput, LiveSessionConfig, LiveVoice, WakePolicy,
};
use walkie_openai::{
    AudioConfig, AudioInput, AudioOutput, Modality, NoiseReduction, SessionConfig, Transcription,
    TurnDetection,
};
use walkie_rtc::{Auth, CallConfig, Endpoint, RtcError};
use walkie_session::turn::{
    ProviderFamily, ToolRegistry, TurnConfig, TurnMode, session_limit_warning_ms,
};

use crate::secrets::{self, ApiKey, KeyAccount};
use crate::settings::{self, CallFormChoice, ProviderKind, Settings};

/// Why a plan has no provider to call or nowhere to save. Each says, in its one line, what the
/// user does next.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    /// The chosen provider needs an API key and none is stored or set.
    #[error("no API key for {provider}: add one in Settings{}{}",
        variable.map(|name| format!(" or set {name}")).unwrap_or_default(),
        keyring_problem.as_ref().map(|problem| format!(" ({problem})")).unwrap_or_default())]
    NoApiKey {
        /// The provider's name as the window says it.
        provider: &'static str,
        /// The environment variable that may carry the key instead.
        variable: Option<&'static str>,
        /// Why the keyring could not be read, when it could not.
        keyring_problem: Option<String>,
    },
    /// An address field holds a user name or password.
    #[error(
        "the {} in Settings contains a user name or password: remove the part before @ and put the key in the API key field",
        settings::label(field)
    )]
    CredentialsInUrl {
        /// The settings field (its webview name).
        field: &'static str,
    },
    /// The provider's address cannot be called.
    #[error("{0}")]
    Endpoint(String),
    /// No folder to save conversations into.
    #[error("no folder to save into: {0}")]
    NoDataFolder(String),
}

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
        call_form: CallFormChoice,
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

    /// Where to place the call. `local` is the running local provider's endpoint (its address
    /// and the token it made for this run), used when the provider is the local one.
    pub fn endpoint(&self, local: Option<Endpoint>) -> Result<Endpoint, PlanError> {
        let endpoint = match self {
            Provider::Local => {
                let local = local.expect("the local provider is started before its endpoint");
                return Ok(local.named(self.label()));
            }
            Provider::OpenAi { api_key } => Endpoint::openai(api_key.expose()),
            Provider::Azure {
                resource_url,
                deployment,
                api_key,
            } => Endpoint::azure(resource_url, api_key.expose(), deployment.as_str()),
            Provider::Custom {
                base_url,
                api_key,
                call_form,
            } => Endpoint::custom(
                base_url,
                match api_key {
                    Some(key) => Auth::Bearer(key.expose().to_owned()),
                    None => Auth::None,
                },
            )
            .map(|endpoint| match call_form {
                CallFormChoice::Automatic => endpoint,
                CallFormChoice::Multipart => endpoint.with_form(walkie_rtc::CallForm::Multipart),
                CallFormChoice::RawSdp => endpoint.with_form(walkie_rtc::CallForm::RawSdp),
            }),
        };
        endpoint.map_err(|error| match (&error, self) {
            (RtcError::CredentialsInUrl { .. }, Provider::Azure { .. }) => {
                PlanError::CredentialsInUrl {
                    field: "azureResourceUrl",
                }
            }
            (RtcError::CredentialsInUrl { .. }, Provider::Custom { .. }) => {
                PlanError::CredentialsInUrl {
                    field: "customBaseUrl",
                }
            }
            _ => PlanError::Endpoint(error.to_string()),
        })
    }
}

impl Provider {
    /// Why a call to this provider failed with `error`, and whether calling again may help —
    /// the one rule for a first call, a redial and new settings' call. What passes: the
    /// network, a timeout, the provider's 5xx, a rate limit (not an empty quota), a connection
    /// that failed after the answer. A server that cannot be reached at an address the user
    /// typed (a compatible server, an Azure resource) is more likely a wrong address than a
    /// network down, unless it has answered before (`answered_before`: a redial); OpenAI's own
    /// address is never wrong.
    pub fn dial_failure(&self, error: &RtcError, answered_before: bool) -> DialFailure {
        let typed_address = matches!(self, Provider::Azure { .. } | Provider::Custom { .. });
        let unreachable = matches!(
            error,
            RtcError::Network { .. } | RtcError::ConnectionFailed(_) | RtcError::Io(_)
        );
        let retry = if error.is_transient() && (answered_before || !(typed_address && unreachable))
        {
            Retry::Later {
                after_ms: error.retry_after().map(|wait| wait.as_millis() as u64),
            }
        } else {
            Retry::Never
        };
        DialFailure::refused(error.user_sentence(), retry).with_details(error.to_string())
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

/// A setting the window changes without a new call: kept by the plan for its next calls and
/// told to the conversation under way.
#[derive(Clone, Debug)]
pub enum PlanChange {
    /// Push-to-talk (hold or toggle) or hands-free.
    TurnMode(TurnMode),
    /// Typed messages are answered in text alone.
    TypedRepliesInText(bool),
    /// How many rounds of always-allowed tool calls run without asking.
    AutomaticToolRounds(u32),
    /// How long the provider lets a session last: the next calls renew theirs before it.
    SessionLimit {
        /// The limit, in milliseconds.
        session_limit_ms: u64,
    },
    /// The price tables and the budget.
    Costing {
        prices: Vec<crate::prices::PriceRow>,
        minute_prices: Vec<crate::prices::MinutePriceRow>,
        budget_usd: Option<f64>,
    },
}

impl walkie_conversation::CallPlan for Plan {
    type Change = PlanChange;

    fn provider_label(&self) -> Option<String> {
        self.provider.as_ref().ok().map(Provider::label)
    }

    fn keep(&mut self, change: &PlanChange) -> Option<walkie_conversation::Input> {
        use walkie_conversation::Input;
        Some(match change.clone() {
            PlanChange::TurnMode(mode) => {
                self.mode = mode.clone();
                Input::SetTurnMode(mode)
            }
            PlanChange::TypedRepliesInText(in_text) => {
                self.typed_replies_in_text = in_text;
                Input::SetTypedRepliesInText(in_text)
            }
            PlanChange::AutomaticToolRounds(rounds) => {
                self.automatic_tool_rounds = rounds;
                Input::SetAutomaticToolRounds(rounds)
            }
            // The call under way keeps the session it was given.
            PlanChange::SessionLimit { session_limit_ms } => {
                self.session_limit_ms = session_limit_ms;
                return None;
            }
            PlanChange::Costing {
                prices,
                minute_prices,
                budget_usd,
            } => {
                self.prices = prices;
                self.minute_prices = minute_prices;
                self.budget_usd = budget_usd;
                Input::SetCosting {
                    pricing: self.pricing(),
                    transcription_pricing: self.transcription_pricing(),
                    budget_usd,
                }
            }
        })
    }

    fn notice_shown(&mut self) {
        self.settings_notice = None;
    }
}

/// Push-to-talk (hold or toggle) or hands-free, as the settings say. Hands-free asks the
/// server's voice detection (silence-based with its idle timeout, or semantic with its
/// eagerness) to answer and to interrupt a reply when the user speaks.
pub fn turn_mode(settings: &Settings) -> TurnMode {
    if settings.hands_free {
        TurnMode::HandsFree(match settings.voice_detection {
            settings::VoiceDetection::ServerVad => TurnDetection::ServerVad {
                threshold: None,
                prefix_padding_ms: None,
                silence_duration_ms: None,
                idle_timeout_ms: settings.idle_timeout_ms.map(Some),
                create_response: Some(true),
                interrupt_response: Some(true),
            },
            settings::VoiceDetection::SemanticVad => TurnDetection::SemanticVad {
                eagerness: Some(settings.eagerness.as_str().to_owned()),
                create_response: Some(true),
                interrupt_response: Some(true),
            },
        })
    } else {
        TurnMode::PushToTalk(settings.press_mode)
    }
}

/// Everything a connection is made from.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The provider, or why none can be used (shown to the user; nothing is dialled).
    pub provider: Result<Provider, PlanError>,
    pub session: SessionConfig,
    pub mode: TurnMode,
    pub tail_ms: u64,
    pub pre_roll_ms: u64,
    /// How long the provider lets a session last; the session is renewed before it.
    pub session_limit_ms: u64,
    /// GPT-Live: the seconds of quiet after which the session pauses (`None`: never).
    pub live_idle_timeout_s: Option<u32>,
    /// GPT-Live: the model its Responses delegation runs Walkie's tools with.
    pub live_tools_model: String,
    /// GPT-Live: the tool servers' tools, declared when the call is placed (the driver sets
    /// them once the servers answer; a Realtime call declares them on its data channel).
    pub live_outside_tools: Vec<walkie_openai::Tool>,
    pub engine: EngineConfig,
    /// Where conversations are saved, or why there is nowhere.
    pub data_dir: Result<PathBuf, PlanError>,
    /// The user's voice may interrupt a reply (with echo cancellation on).
    pub voice_barge_in: bool,
    /// What one conversation may cost, in US dollars.
    pub budget_usd: Option<f64>,
    /// How many rounds of always-allowed tool calls run without asking.
    pub automatic_tool_rounds: u32,
    /// A typed message is answered in text alone.
    pub typed_replies_in_text: bool,
    /// What each model costs, per million tokens and per minute.
    pub prices: Vec<crate::prices::PriceRow>,
    pub minute_prices: Vec<crate::prices::MinutePriceRow>,
    /// What the user should read once about their settings (a model moved off one that shuts
    /// down): the plan's first conversation shows it.
    pub settings_notice: Option<String>,
    /// The MCP servers listed in the settings (the enabled ones are started).
    pub tool_servers: Vec<crate::tool_servers::ToolServer>,
    /// The model may be asked to name a conversation (the user's choice, and the
    /// conversation is saved).
    pub ask_title: bool,
}

impl Plan {
    /// The provider's name as the status line says it (empty when there is none).
    pub fn provider_label(&self) -> String {
        self.provider
            .as_ref()
            .map(Provider::label)
            .unwrap_or_default()
    }

    /// The protocol a call of this plan speaks: the Live API for a GPT-Live model, else the
    /// Realtime API.
    pub fn family(&self) -> ProviderFamily {
        match self.session.model.as_deref() {
            Some(model) if walkie_openai::live::is_live_model(model) => ProviderFamily::Live,
            _ => ProviderFamily::Realtime,
        }
    }

    /// How the turn controller takes turns in a call of this plan.
    pub fn turn_config(&self) -> TurnConfig {
        TurnConfig {
            family: self.family(),
            mode: self.mode.clone(),
            tail_ms: self.tail_ms,
            pre_roll_ms: self.pre_roll_ms,
            session_limit_ms: self.session_limit_ms,
            session_limit_warning_ms: session_limit_warning_ms(self.session_limit_ms),
            typed_replies_in_text: self.typed_replies_in_text,
            ..TurnConfig::push_to_talk(self.session.clone())
        }
    }

    /// How a conversation of this plan is set up: its turns, its provider's name, the thread
    /// id of its transcript, the seed of its redial jitter, and the tool servers' tools.
    pub fn conversation_config(
        &self,
        thread_id: String,
        jitter_seed: u64,
        outside_tools: Vec<walkie_conversation::OutsideTool>,
    ) -> ConversationConfig {
        ConversationConfig {
            turn: self.turn_config(),
            provider_label: self.provider_label(),
            thread_id,
            redial: RedialPolicy::default(),
            jitter_seed,
            voice_barge_in: self.voice_barge_in,
            pricing: self.pricing(),
            transcription_pricing: self.transcription_pricing(),
            budget_usd: self.budget_usd,
            outside_tools,
            automatic_tool_rounds: self.automatic_tool_rounds,
            settings_notice: self.settings_notice.clone(),
            // The built-in demo cannot read what was said, and GPT-Live answers nothing beside
            // the conversation: their conversations keep their first words.
            ask_title: self.ask_title
                && self.family() == ProviderFamily::Realtime
                && !matches!(self.provider, Ok(Provider::Local)),
        }
    }

    /// The prices this plan's model is costed at, from its price tables: per minute for a model
    /// billed by duration, else per million tokens (`free` on the local provider, which bills
    /// nothing).
    pub fn pricing(&self) -> Option<walkie_conversation::Pricing> {
        let model = self.session.model.as_deref()?;
        let free = matches!(self.provider, Ok(Provider::Local));
        crate::prices::model_pricing_for(model, free, &self.minute_prices, &self.prices)
    }

    /// The prices the transcriptions of the user's speech are costed at: the transcription
    /// model's row per minute, else its row per million tokens (`free` on the local provider).
    pub fn transcription_pricing(&self) -> Option<walkie_conversation::Pricing> {
        let model = self
            .session
            .audio
            .as_ref()?
            .input
            .as_ref()?
            .transcription
            .as_ref()?
            .as_ref()?
            .model
            .as_str();
        let free = matches!(self.provider, Ok(Provider::Local));
        crate::prices::model_pricing_for(model, free, &self.minute_prices, &self.prices)
    }

    /// Resolves the settings against the keyring and the environment. Blocks on the keyring:
    /// call it off the async threads. `data_dir` is the folder chosen when the app started
    /// (the history panel reads the same one; a new choice takes effect at the next start).
    pub fn resolve(settings: &Settings, data_dir: Result<PathBuf, PlanError>) -> Plan {
        Plan {
            provider: provider(settings),
            session: session(settings),
            mode: turn_mode(settings),
            tail_ms: u64::from(settings.push_to_talk_tail_ms),
            pre_roll_ms: u64::from(settings.pre_roll_ms),
            session_limit_ms: u64::from(settings.session_limit_minutes) * 60_000,
            live_idle_timeout_s: settings.live_idle_timeout_s,
            live_tools_model: settings.live_tools_model.trim().to_owned(),
            live_outside_tools: Vec::new(),
            engine: EngineConfig {
                input_device: non_empty(&settings.input_device),
                output_device: non_empty(&settings.output_device),
                pre_roll_ms: settings.pre_roll_ms,
                privacy_mic: !settings.warm_mic,
                echo_cancellation: settings.echo_cancellation,
                ..EngineConfig::default()
            },
            data_dir,
            voice_barge_in: settings.voice_barge_in && settings.echo_cancellation,
            budget_usd: settings.budget_usd,
            automatic_tool_rounds: settings.automatic_tool_rounds,
            typed_replies_in_text: settings.typed_replies_in_text,
            prices: settings.prices.clone(),
            minute_prices: settings.minute_prices.clone(),
            settings_notice: None,
            tool_servers: settings.tool_servers.clone(),
            ask_title: settings.ask_for_titles && settings.saved != walkie_store::Saved::Nothing,
        }
    }
}

impl Plan {
    /// How to place a call to `endpoint`: created with the session the first `session.update`
    /// then restates (same turn detection, same built-in tools), `model` included — the only
    /// place it is sent.
    pub fn call_config(&self, endpoint: Endpoint) -> CallConfig {
        self.call_config_with_history(endpoint, Vec::new())
    }

    /// As [`Self::call_config`], for a new session that carries a conversation on. A Live
    /// session is given the conversation so far (`history`, from
    /// [`walkie_conversation::restore_items_within`]) as its `input`; a Realtime one is given
    /// it on the data channel once it opens, so `history` is not used.
    pub fn call_config_with_history(
        &self,
        endpoint: Endpoint,
        history: Vec<walkie_openai::Item>,
    ) -> CallConfig {
        match self.family() {
            ProviderFamily::Realtime => {
                let tools = ToolRegistry::with_builtins().definitions();
                CallConfig::new(endpoint).with_session(self.turn_config().call_session(tools))
            }
            ProviderFamily::Live => {
                CallConfig::new(endpoint).with_live_session(self.live_session(history))
            }
        }
    }

    /// The session a GPT-Live call starts with: the model, the voice and the instructions
    /// (fixed for the session), the conversation so far, and the wake policy: inference waits
    /// for speech, and pauses after the quiet the settings allow.
    pub fn live_session(&self, history: Vec<walkie_openai::Item>) -> LiveSessionConfig {
        let voice = self
            .session
            .audio
            .as_ref()
            .and_then(|audio| audio.output.as_ref())
            .and_then(|output| output.voice.clone());
        let input: Vec<InitialItem> = history.into_iter().filter_map(initial_item).collect();
        LiveSessionConfig {
            model: self.session.model.clone().unwrap_or_default(),
            instructions: self.session.instructions.clone(),
            audio: voice.map(|voice| LiveAudio {
                output: Some(LiveAudioOutput {
                    voice: Some(LiveVoice::Named(voice)),
                }),
                format: None,
            }),
            input: (!input.is_empty()).then_some(input),
            wake_policy: Some(WakePolicy {
                vad_threshold: None,
            }),
            idle_timeout_s: self.live_idle_timeout_s,
            delegation: self.live_delegation(),
            ..LiveSessionConfig::default()
        }
    }

    /// Where GPT-Live hands the work of Walkie's tools: a Responses backend running
    /// `live_tools_model` with the built-in tools and the tool servers' as function tools,
    /// whose calls come back on the data channel to be run here (`None` without tools).
    fn live_delegation(&self) -> Option<serde_json::Value> {
        let tools: Vec<serde_json::Value> = ToolRegistry::with_builtins()
            .definitions()
            .into_iter()
            .chain(self.live_outside_tools.iter().cloned())
            .filter_map(|tool| match tool {
                walkie_openai::Tool::Function {
                    name,
                    description,
                    parameters,
                } => Some(serde_json::json!({
                    "type": "function",
                    "name": name,
                    "description": description,
                    "parameters": parameters,
                })),
                walkie_openai::Tool::Other(_) => None,
            })
            .collect();
        (!tools.is_empty()).then(|| {
            serde_json::json!({
                "type": "responses",
                "responses": { "model": self.live_tools_model, "tools": tools },
            })
        })
    }
}

/// A restored message as a Live session's history takes it: one text part, a system note as
/// the developer's. Anything but a text message has no place there.
fn initial_item(item: walkie_openai::Item) -> Option<InitialItem> {
    let walkie_openai::Item::Message { role, content, .. } = item else {
        return None;
    };
    let text = content.into_iter().find_map(|part| match part {
        walkie_openai::ContentPart::InputText { text }
        | walkie_openai::ContentPart::OutputText { text } => Some(text),
        _ => None,
    })?;
    let role = match role {
        walkie_openai::Role::User => InitialRole::User,
        walkie_openai::Role::Assistant => InitialRole::Assistant,
        walkie_openai::Role::System => InitialRole::Developer,
    };
    Some(InitialItem::message(role, text))
}

/// The data folder the settings name, else `WALKIE_DATA_DIR`, else the platform's.
pub fn data_dir(settings: &Settings) -> Result<PathBuf, PlanError> {
    match non_empty(&settings.data_folder) {
        Some(folder) => Ok(PathBuf::from(folder)),
        None => walkie_store::default_data_dir()
            .map_err(|error| PlanError::NoDataFolder(error.to_string())),
    }
}

fn non_empty(text: &str) -> Option<String> {
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_owned())
}

fn provider(settings: &Settings) -> Result<Provider, PlanError> {
    provider_with(settings, None)
}

/// The provider the settings name, with `typed` (a key the user typed and has not saved)
/// used for its account instead of the keyring's or the environment's.
pub fn provider_with_typed_key(
    settings: &Settings,
    typed: Option<(KeyAccount, ApiKey)>,
) -> Result<Provider, PlanError> {
    provider_with(settings, typed)
}

fn provider_with(
    settings: &Settings,
    typed: Option<(KeyAccount, ApiKey)>,
) -> Result<Provider, PlanError> {
    let key_in_use = |account: KeyAccount| match &typed {
        Some((typed_account, key)) if *typed_account == account => (Some(key.clone()), None),
        _ => {
            let (key, _, problem) = secrets::key_in_use(account);
            (key, problem)
        }
    };
    let required = |account: KeyAccount, provider: &'static str| {
        let (key, problem) = key_in_use(account);
        key.ok_or_else(|| PlanError::NoApiKey {
            provider,
            variable: account.environment_variable(),
            keyring_problem: problem.map(|problem| problem.to_string()),
        })
    };
    match settings.provider {
        ProviderKind::Automatic => match key_in_use(KeyAccount::OpenAi).0 {
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
            api_key: key_in_use(KeyAccount::Custom).0,
            call_form: settings.custom_call_form,
        }),
    }
}

/// The session Walkie asks for: spoken replies in the chosen voice and speed, the user's
/// speech transcribed unless transcription is off. A control a model does not take (a
/// reasoning effort for a model that does not reason, a delay for a transcription model
/// without one) is left out, so a setting kept from another model never fails a call.
fn session(settings: &Settings) -> SessionConfig {
    use walkie_openai::names;
    let transcription = non_empty(&settings.transcription_model).map(|model| Transcription {
        delay: settings
            .transcription_delay
            .filter(|_| names::takes_transcription_delay(&model))
            .map(|delay| delay.as_str().to_owned()),
        keywords: Some(
            settings
                .transcription_keywords
                .iter()
                .map(|word| word.trim().to_owned())
                .filter(|word| !word.is_empty())
                .collect::<Vec<_>>(),
        )
        .filter(|words| !words.is_empty() && names::takes_transcription_keywords(&model)),
        model,
        ..Transcription::default()
    });
    let model = settings.model.trim().to_owned();
    let reasons = names::is_reasoning_model(&model);
    SessionConfig {
        reasoning: settings.reasoning_effort.filter(|_| reasons).map(|effort| {
            walkie_openai::Reasoning {
                effort: Some(effort.as_str().to_owned()),
            }
        }),
        parallel_tool_calls: reasons.then_some(settings.parallel_tool_calls),
        truncation: settings.truncation_retention_ratio.map(|ratio| {
            walkie_openai::Truncation::RetentionRatio(walkie_openai::RetentionRatio {
                retention_ratio: ratio,
                token_limits: None,
            })
        }),
        model: Some(model),
        instructions: non_empty(&settings.instructions),
        output_modalities: Some(vec![Modality::Audio]),
        audio: Some(AudioConfig {
            input: Some(AudioInput {
                transcription: Some(transcription),
                // Off is an explicit null: a restated session cannot keep an old choice.
                noise_reduction: Some(match settings.noise_reduction {
                    settings::NoiseReduction::NearField => Some(NoiseReduction {
                        kind: "near_field".to_owned(),
                    }),
                    settings::NoiseReduction::FarField => Some(NoiseReduction {
                        kind: "far_field".to_owned(),
                    }),
                    settings::NoiseReduction::Off => None,
                }),
                ..AudioInput::default()
            }),
            output: Some(AudioOutput {
                voice: Some(settings.voice.trim().to_owned()),
                // Normal speed is the API's default: not sent.
                speed: Some(settings.speech_speed as f32).filter(|speed| *speed != 1.0),
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
    fn a_new_session_limit_is_kept_for_the_next_calls_and_the_call_under_way_is_not_told() {
        use walkie_conversation::CallPlan;
        let mut plan = Plan::resolve(&Settings::default(), Ok(PathBuf::from("/tmp/w")));
        let said = plan.keep(&PlanChange::SessionLimit {
            session_limit_ms: 30 * 60_000,
        });
        assert!(said.is_none(), "{said:?}");
        assert_eq!(plan.session_limit_ms, 30 * 60_000);
        let said = plan.keep(&PlanChange::TypedRepliesInText(true));
        assert!(
            matches!(
                said,
                Some(walkie_conversation::Input::SetTypedRepliesInText(true))
            ),
            "{said:?}"
        );
    }

    #[test]
    fn a_refused_call_offers_the_settings_when_they_are_at_fault_and_calling_again_otherwise() {
        use walkie_rtc::{HttpFailure, Stage};
        let openai = Provider::OpenAi {
            api_key: ApiKey::given("sk-walkie-fake"),
        };
        let custom = Provider::Custom {
            base_url: "https://realtime.example.com".to_owned(),
            api_key: None,
            call_form: CallFormChoice::Automatic,
        };
        let failure = |status| HttpFailure {
            provider: "OpenAI".to_owned(),
            stage: Stage::Signalling,
            status,
            code: None,
            message: String::new(),
        };
        let unreachable = || RtcError::Network {
            stage: Stage::Signalling,
            message: "dns error".to_owned(),
            cause: "failed to lookup address information".to_owned(),
        };
        let later = Retry::Later { after_ms: None };
        let first_call =
            |provider: &Provider, error: &RtcError| provider.dial_failure(error, false);
        let redial = |provider: &Provider, error: &RtcError| provider.dial_failure(error, true);
        assert_eq!(
            first_call(&openai, &RtcError::KeyRefused(failure(401))).retry,
            Retry::Never
        );
        assert_eq!(
            redial(&openai, &RtcError::KeyRefused(failure(401))).retry,
            Retry::Never,
            "a refused key is refused again"
        );
        assert_eq!(
            first_call(&openai, &RtcError::ServerError(failure(503))).retry,
            later
        );
        assert_eq!(first_call(&openai, &unreachable()).retry, later);
        assert_eq!(
            first_call(&custom, &unreachable()).retry,
            Retry::Never,
            "an address the user typed that cannot be reached is most likely mistyped"
        );
        assert_eq!(
            redial(&custom, &unreachable()).retry,
            later,
            "unless it answered a moment ago"
        );
        assert_eq!(
            first_call(&custom, &RtcError::ServerError(failure(500))).retry,
            later
        );
        let refused = first_call(&openai, &RtcError::KeyRefused(failure(401)));
        assert_eq!(
            refused.sentence,
            RtcError::KeyRefused(failure(401)).user_sentence()
        );
        assert_eq!(
            refused.details,
            Some(RtcError::KeyRefused(failure(401)).to_string())
        );
    }

    #[test]
    fn a_rate_limit_is_called_again_after_the_providers_wait_and_an_empty_quota_is_not() {
        use walkie_rtc::{HttpFailure, Stage};
        let openai = Provider::OpenAi {
            api_key: ApiKey::given("sk-walkie-fake"),
        };
        let limited = |code: Option<&str>| RtcError::RateLimited {
            failure: HttpFailure {
                provider: "OpenAI".to_owned(),
                stage: Stage::Signalling,
                status: 429,
                code: code.map(str::to_owned),
                message: String::new(),
            },
            retry_after: Some(std::time::Duration::from_secs(7)),
        };
        assert_eq!(
            openai.dial_failure(&limited(None), false).retry,
            Retry::Later {
                after_ms: Some(7_000)
            }
        );
        assert_eq!(
            openai
                .dial_failure(&limited(Some("insufficient_quota")), true)
                .retry,
            Retry::Never
        );
    }

    #[test]
    fn a_custom_provider_is_named_by_its_host() {
        assert_eq!(
            url_host("https://realtime.example.com:8443/v1"),
            "realtime.example.com"
        );
        assert_eq!(url_host("not a url"), "not a url");
    }

    #[test]
    fn a_missing_key_says_where_to_add_it_and_which_variable_may_carry_it() {
        let error = PlanError::NoApiKey {
            provider: "OpenAI",
            variable: KeyAccount::OpenAi.environment_variable(),
            keyring_problem: Some("the keyring is locked".to_owned()),
        };
        assert_eq!(
            error.to_string(),
            "no API key for OpenAI: add one in Settings or set OPENAI_API_KEY (the keyring is locked)"
        );
        let bare = PlanError::NoApiKey {
            provider: "a compatible server",
            variable: None,
            keyring_problem: None,
        };
        assert_eq!(
            bare.to_string(),
            "no API key for a compatible server: add one in Settings"
        );
    }

    #[test]
    fn a_compatible_server_is_called_in_the_form_the_settings_choose() {
        let form = |call_form| {
            Provider::Custom {
                base_url: "https://realtime.example.com".to_owned(),
                api_key: Some(ApiKey::given("sk-server")),
                call_form,
            }
            .endpoint(None)
            .expect("a valid address")
            .form()
        };
        assert_eq!(
            form(CallFormChoice::Automatic),
            walkie_rtc::CallForm::Automatic
        );
        assert_eq!(
            form(CallFormChoice::Multipart),
            walkie_rtc::CallForm::Multipart
        );
        assert_eq!(form(CallFormChoice::RawSdp), walkie_rtc::CallForm::RawSdp);
        let file: Settings = serde_json::from_str(r#"{"customCallForm":"raw_sdp"}"#)
            .expect("the setting's file spelling");
        assert_eq!(file.custom_call_form, CallFormChoice::RawSdp);
        assert_eq!(
            Settings::default().custom_call_form,
            CallFormChoice::Automatic
        );
    }

    #[test]
    fn connect_refuses_an_address_with_a_password_naming_the_field() {
        let custom = Provider::Custom {
            base_url: "https://walkie:pa55word@realtime.example.com".to_owned(),
            api_key: None,
            call_form: CallFormChoice::Automatic,
        };
        let error = custom.endpoint(None).unwrap_err();
        assert_eq!(
            error,
            PlanError::CredentialsInUrl {
                field: "customBaseUrl"
            }
        );
        let reason = error.to_string();
        assert_eq!(
            reason,
            "the Server address in Settings contains a user name or password: remove the part before @ and put the key in the API key field"
        );
        assert!(!reason.contains("pa55word"), "{reason}");
    }

    #[test]
    fn the_local_provider_is_called_with_its_per_launch_token() {
        let local = Endpoint::custom("http://127.0.0.1:9", Auth::Bearer("per-launch".to_owned()))
            .expect("a loopback endpoint");
        let endpoint = Provider::Local
            .endpoint(Some(local))
            .expect("the local endpoint");
        assert_eq!(endpoint.name(), "the local provider");
        assert_eq!(endpoint.form(), walkie_rtc::CallForm::Automatic);
        assert!(
            !format!("{endpoint:?}").contains("per-launch"),
            "{endpoint:?}"
        );
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
    fn a_gpt_live_model_places_a_live_call_with_its_voice_wake_policy_and_the_conversation_so_far()
    {
        let plan = Plan::resolve(
            &Settings {
                provider: ProviderKind::Local,
                model: "gpt-live-1.1".to_owned(),
                voice: "cedar".to_owned(),
                instructions: "Be brief.".to_owned(),
                live_idle_timeout_s: Some(45),
                ..Settings::default()
            },
            Ok(PathBuf::from("/tmp/walkie-data")),
        );
        assert_eq!(plan.family(), ProviderFamily::Live);
        assert_eq!(plan.turn_config().family, ProviderFamily::Live);
        let endpoint = Endpoint::custom("http://127.0.0.1:9", Auth::Bearer("t".to_owned()))
            .expect("a loopback endpoint");
        let history = vec![
            walkie_openai::Item::Message {
                id: None,
                role: walkie_openai::Role::User,
                status: None,
                content: vec![walkie_openai::ContentPart::InputText {
                    text: "My cat is Miso.".to_owned(),
                }],
            },
            walkie_openai::Item::Message {
                id: None,
                role: walkie_openai::Role::Assistant,
                status: None,
                content: vec![walkie_openai::ContentPart::OutputText {
                    text: "A lovely name.".to_owned(),
                }],
            },
        ];
        let config = plan.call_config_with_history(endpoint, history);
        let live = config.live_session.expect("a Live session");
        assert_eq!(live.model, "gpt-live-1.1");
        assert_eq!(live.instructions.as_deref(), Some("Be brief."));
        assert_eq!(
            live.audio.and_then(|audio| audio.output?.voice),
            Some(LiveVoice::Named("cedar".to_owned()))
        );
        assert_eq!(live.idle_timeout_s, Some(45));
        let delegation = live
            .delegation
            .expect("tools go through a Responses delegation");
        assert_eq!(delegation["type"], "responses");
        assert_eq!(
            delegation["responses"]["model"],
            crate::settings::DEFAULT_LIVE_TOOLS_MODEL
        );
        assert_eq!(
            delegation["responses"]["tools"][0]["name"],
            walkie_session::turn::CURRENT_LOCAL_TIME_TOOL
        );
        assert!(live.wake_policy.is_some(), "speech wakes a paused session");
        assert_eq!(
            live.input,
            Some(vec![
                InitialItem::message(InitialRole::User, "My cat is Miso."),
                InitialItem::message(InitialRole::Assistant, "A lovely name."),
            ])
        );
        // A Realtime model's call is the multipart one, history or not.
        let realtime = Plan::resolve(&Settings::default(), Ok(PathBuf::from("/tmp/w")));
        assert_eq!(realtime.family(), ProviderFamily::Realtime);
        let endpoint = Endpoint::custom("http://127.0.0.1:9", Auth::Bearer("t".to_owned()))
            .expect("a loopback endpoint");
        assert!(
            realtime
                .call_config_with_history(endpoint, Vec::new())
                .live_session
                .is_none()
        );
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

    #[test]
    fn the_call_is_created_with_the_model_voice_turn_detection_and_tools() {
        let plan = Plan::resolve(
            &Settings {
                provider: ProviderKind::Local,
                model: "gpt-realtime-mini".to_owned(),
                voice: "cedar".to_owned(),
                hands_free: false,
                ..Settings::default()
            },
            Ok(PathBuf::from("/tmp/walkie-data")),
        );
        let local = Endpoint::custom("http://127.0.0.1:9", Auth::Bearer("per-launch".to_owned()))
            .expect("a loopback endpoint");
        let endpoint = Provider::Local
            .endpoint(Some(local))
            .expect("a loopback endpoint");
        assert_eq!(endpoint.name(), "the local provider");
        let config = plan.call_config(endpoint);
        let session = serde_json::to_value(&config.session).expect("a session serialises");
        assert_eq!(session["type"], "realtime");
        assert_eq!(session["model"], "gpt-realtime-mini");
        assert_eq!(session["audio"]["output"]["voice"], "cedar");
        assert_eq!(
            session["audio"]["input"]["turn_detection"],
            serde_json::Value::Null
        );
        assert!(
            session["tools"]
                .as_array()
                .is_some_and(|tools| !tools.is_empty()),
            "the built-in tools come with the call: {session}"
        );
    }

    #[test]
    fn hands_free_asks_for_the_chosen_voice_detection() {
        let semantic = turn_mode(&Settings {
            hands_free: true,
            voice_detection: settings::VoiceDetection::SemanticVad,
            eagerness: settings::Eagerness::High,
            ..Settings::default()
        });
        let TurnMode::HandsFree(detection) = semantic else {
            panic!("hands-free is a server turn detection");
        };
        assert_eq!(
            serde_json::to_value(&detection).expect("JSON"),
            serde_json::json!({"type": "semantic_vad", "eagerness": "high",
                               "create_response": true, "interrupt_response": true})
        );
        let server = turn_mode(&Settings {
            hands_free: true,
            idle_timeout_ms: Some(12_000),
            ..Settings::default()
        });
        let TurnMode::HandsFree(detection) = server else {
            panic!("hands-free is a server turn detection");
        };
        assert_eq!(
            serde_json::to_value(&detection).expect("JSON"),
            serde_json::json!({"type": "server_vad", "idle_timeout_ms": 12_000,
                               "create_response": true, "interrupt_response": true})
        );
    }

    #[test]
    fn noise_reduction_is_sent_as_chosen_and_off_as_null() {
        let input = |choice| {
            let session = session(&Settings {
                noise_reduction: choice,
                ..Settings::default()
            });
            serde_json::to_value(&session).expect("JSON")["audio"]["input"].clone()
        };
        assert_eq!(
            input(settings::NoiseReduction::FarField)["noise_reduction"],
            serde_json::json!({"type": "far_field"})
        );
        assert_eq!(
            input(settings::NoiseReduction::NearField)["noise_reduction"],
            serde_json::json!({"type": "near_field"})
        );
        let off = input(settings::NoiseReduction::Off);
        assert!(
            off.as_object()
                .is_some_and(|input| input.get("noise_reduction") == Some(&serde_json::Value::Null)),
            "{off}"
        );
    }
}
