//! The user's settings: what they chose in the settings dialog, kept in the platform config
//! directory (`~/.config/walkie/settings.json` on Linux; `WALKIE_CONFIG_DIR` overrides it).
//!
//! Why a file of our own and not a plugin store: the settings are few, typed, validated in one
//! place and read before the first window exists. The file never holds a secret: API keys live
//! in the OS keyring ([`crate::secrets`]). Writes go to a temporary file that is synced and then
//! renamed over the old one, so a crash leaves either the old settings or the new, never half.
//! A file that cannot be read is never overwritten: it is moved aside and the user is told.
//! The folder Walkie creates and the file are the user's alone (0700 and 0600 on Unix).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use walkie_session::turn::PressMode;
use walkie_store::files::{create_private_dir_all, create_private_file};

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

/// How a call to a compatible server is placed (`POST /v1/realtime/calls`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CallFormChoice {
    /// The documented multipart form (the offer and the session together), and the raw offer
    /// where the server refuses it with 415 (remembered for that address until Walkie quits).
    #[default]
    Automatic,
    /// The multipart form only: a refusal is reported, not worked around.
    Multipart,
    /// The raw offer alone (`application/sdp`): the server's own defaults until the session is
    /// configured on the data channel, and the server's model.
    RawSdp,
}

/// Which of the server's voice detections ends a hands-free turn.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum VoiceDetection {
    /// `server_vad`: silence ends the turn (with an optional idle timeout).
    #[default]
    ServerVad,
    /// `semantic_vad`: the model judges whether the user has finished.
    SemanticVad,
}

/// How quickly semantic voice detection answers (`eagerness`): `low`, `medium` and `high`
/// wait at most 8, 4 and 2 s; `auto` is `medium`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Eagerness {
    Low,
    Medium,
    High,
    #[default]
    Auto,
}

impl Eagerness {
    pub fn as_str(self) -> &'static str {
        match self {
            Eagerness::Low => "low",
            Eagerness::Medium => "medium",
            Eagerness::High => "high",
            Eagerness::Auto => "auto",
        }
    }
}

/// The server's input noise reduction (`audio.input.noise_reduction`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NoiseReduction {
    /// For close-talking microphones (headsets).
    NearField,
    /// For laptop and conference-room microphones.
    FarField,
    /// None (the API's default).
    #[default]
    Off,
}

/// How much a model puts into it: a reasoning model's thinking (`reasoning.effort`), or how
/// long a transcription model waits before it writes (`delay`). The same five steps in both.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Effort {
    Minimal,
    Low,
    Medium,
    High,
    Xhigh,
}

impl Effort {
    pub fn as_str(self) -> &'static str {
        match self {
            Effort::Minimal => "minimal",
            Effort::Low => "low",
            Effort::Medium => "medium",
            Effort::High => "high",
            Effort::Xhigh => "xhigh",
        }
    }
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
    /// How a call to that server is placed.
    pub custom_call_form: CallFormChoice,
    pub model: String,
    pub voice: String,
    pub instructions: String,
    /// The model transcribing the user's speech; empty turns user transcripts off.
    pub transcription_model: String,
    /// How hard a reasoning model thinks before it answers; `None`: the model's default.
    /// Sent to reasoning models only.
    pub reasoning_effort: Option<Effort>,
    /// A reasoning model may call several tools at once.
    pub parallel_tool_calls: bool,
    /// When the conversation outgrows the model's context, keep this fraction of it (fewer,
    /// larger cuts: the turns after one reuse the cached input). `None`: the server's own
    /// truncation.
    pub truncation_retention_ratio: Option<f64>,
    /// How fast the assistant speaks (1 is normal).
    pub speech_speed: f64,
    /// How long the transcription model waits before it writes; `None`: its default. Sent to
    /// the models that take one only.
    pub transcription_delay: Option<Effort>,
    /// Words or names the transcription should expect (the models that take them only).
    pub transcription_keywords: Vec<String>,
    pub press_mode: PressMode,
    /// The server's voice detection ends turns instead of a key.
    pub hands_free: bool,
    /// A typed message is answered in text alone (no voice); a spoken turn still aloud.
    pub typed_replies_in_text: bool,
    /// Which voice detection, hands-free.
    pub voice_detection: VoiceDetection,
    /// Semantic voice detection only.
    pub eagerness: Eagerness,
    /// Server voice detection only: after this long without speech following a reply, the
    /// model speaks up again. `None`: it waits.
    pub idle_timeout_ms: Option<u32>,
    /// GPT-Live only: after this many seconds of quiet the session pauses (billed at the lower
    /// paused rate) until speech wakes it. `None`: it never pauses.
    pub live_idle_timeout_s: Option<u32>,
    /// GPT-Live only: the model its Responses delegation runs Walkie's tools with.
    pub live_tools_model: String,
    pub noise_reduction: NoiseReduction,
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
    /// Cancel the speaker's echo (and steady noise) in what the microphone sends: talking over
    /// a reply works on speakers, hands-free. Off: the microphone is muted while a reply plays
    /// (a headset does not need more).
    pub echo_cancellation: bool,
    /// Hands-free on speakers: once the echo canceller has learnt the room, the user's voice
    /// stops a reply (the microphone is not muted while one plays). Needs echo cancellation.
    pub voice_barge_in: bool,
    /// Chosen devices by id; empty for the system default.
    pub input_device: String,
    pub output_device: String,
    /// Where conversations are saved; empty for the platform's data folder.
    pub data_folder: String,
    /// Closing the window hides it in the tray and the call goes on (where a tray shows).
    pub close_to_tray: bool,
    /// Walkie starts, hidden in the tray, when the user logs in (an XDG autostart entry).
    pub start_on_login: bool,
    /// Delete conversations older than this many days at start; `None` keeps them all.
    pub retention_days: Option<u32>,
    /// What of each conversation is saved, from the next conversation on.
    pub saved: walkie_store::Saved,
    /// A conversation is named by the model, asked beside it after a few turns (a few tokens,
    /// billed); otherwise by its first words.
    pub ask_for_titles: bool,
    /// How long the provider lets a session last (OpenAI: 60 minutes). Walkie renews the
    /// session at a quiet moment before it; a new value applies from the next call.
    pub session_limit_minutes: u32,
    /// What one conversation may cost, in US dollars (at the model's published prices): at
    /// 80 % the window says so, and once spent the call ends after the reply under way. `None`:
    /// no budget. A new value applies at once, to the conversation under way too.
    pub budget_usd: Option<f64>,
    /// What each model costs, per million tokens: the published prices unless edited.
    pub prices: Vec<crate::prices::PriceRow>,
    /// What each model billed by duration costs, per minute.
    pub minute_prices: Vec<crate::prices::MinutePriceRow>,
    /// The day of the published prices the tables were last brought up to
    /// ([`crate::prices::PUBLISHED_ON`]); empty in a file from before there was one.
    #[serde(default)]
    pub published_prices_of: String,
    /// Deprecated models the user chose knowing it (saved in the dialog while it warned): not
    /// moved to their replacement at the next start.
    pub kept_deprecated_models: Vec<String>,
    /// The MCP servers whose tools the assistant may use, and what each tool may do.
    pub tool_servers: Vec<crate::tool_servers::ToolServer>,
    /// How many rounds of calls of tools allowed always may run one after another without the
    /// user; past it, the next call asks first.
    pub automatic_tool_rounds: u32,
}

/// The limits the dialog enforces, here so the file cannot bypass them.
pub const TAIL_RANGE_MS: std::ops::RangeInclusive<u32> = 0..=2_000;
pub const PRE_ROLL_RANGE_MS: std::ops::RangeInclusive<u32> = 0..=2_000;
pub const RETENTION_RANGE_DAYS: std::ops::RangeInclusive<u32> = 1..=36_500;
/// At least one round of always-allowed calls (else "Always allow" would ask), at most 50.
pub const AUTOMATIC_TOOL_ROUNDS_RANGE: std::ops::RangeInclusive<u32> = 1..=50;
/// Shorter than 2 minutes would spend a session renewing it; 4 hours is past any provider's.
pub const SESSION_LIMIT_RANGE_MINUTES: std::ops::RangeInclusive<u32> = 2..=240;
pub const INSTRUCTIONS_MAX_CHARS: usize = 20_000;
/// The API's bounds for `audio.output.speed`.
pub const SPEECH_SPEED_RANGE: std::ops::RangeInclusive<f64> = 0.25..=1.5;
/// Keeping less than a tenth would cut nearly everything each time; all of it is no cut.
pub const RETENTION_RATIO_RANGE: std::ops::RangeInclusive<f64> = 0.1..=0.95;
/// Words to expect: a short list of short words is what helps a transcription.
pub const KEYWORDS_MAX: usize = 50;
pub const KEYWORD_MAX_CHARS: usize = 60;
/// A cent to ten thousand dollars a conversation.
pub const BUDGET_RANGE_USD: std::ops::RangeInclusive<f64> = 0.01..=10_000.0;
/// The model GPT-Live hands the work of Walkie's tools to (its Responses delegation), by
/// default: a small current one from the SDK's list.
pub const DEFAULT_LIVE_TOOLS_MODEL: &str = "gpt-5.4-mini";
/// How long a quiet GPT-Live session runs before it pauses, by default: a minute.
pub const DEFAULT_LIVE_IDLE_TIMEOUT_S: u32 = 60;
/// The pauses after quiet that make sense: long enough not to pause mid-thought, at most an
/// hour (a session lasts at most that).
pub const LIVE_IDLE_TIMEOUT_RANGE_S: std::ops::RangeInclusive<u32> = 5..=3_600;
/// Walkie's bounds for the idle timeout (the API documents none): shorter would talk over a
/// user who is thinking, longer is better served by waiting.
pub const IDLE_TIMEOUT_RANGE_MS: std::ops::RangeInclusive<u32> = 5_000..=30_000;
/// The instructions travel back in `session.created`/`session.updated`, one data-channel
/// message of at most 64 KiB with the rest of the session (`walkie_rtc::MAX_SESSION_BYTES`);
/// this leaves room for the tools and the other fields.
pub const INSTRUCTIONS_MAX_BYTES: usize = 48 * 1024;

impl Settings {
    /// The retention chosen, as the history applies it. Validation keeps zero days out of the
    /// settings; a file edited by hand to zero keeps everything rather than delete it all.
    pub fn retention(&self) -> walkie_store::Retention {
        walkie_store::Retention::try_from(self.retention_days).unwrap_or_default()
    }
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            provider: ProviderKind::Automatic,
            azure_resource_url: String::new(),
            azure_deployment: String::new(),
            custom_base_url: String::new(),
            custom_call_form: CallFormChoice::Automatic,
            model: walkie_openai::names::DEFAULT_REALTIME_MODEL.to_owned(),
            voice: "marin".to_owned(),
            instructions: "You are Walkie, a concise and friendly voice assistant on the user's \
                           desktop."
                .to_owned(),
            transcription_model: walkie_openai::names::DEFAULT_TRANSCRIPTION_MODEL.to_owned(),
            reasoning_effort: None,
            parallel_tool_calls: true,
            truncation_retention_ratio: None,
            speech_speed: 1.0,
            transcription_delay: None,
            transcription_keywords: Vec::new(),
            press_mode: PressMode::Hold,
            hands_free: false,
            typed_replies_in_text: false,
            voice_detection: VoiceDetection::ServerVad,
            eagerness: Eagerness::Auto,
            idle_timeout_ms: None,
            live_idle_timeout_s: Some(DEFAULT_LIVE_IDLE_TIMEOUT_S),
            live_tools_model: DEFAULT_LIVE_TOOLS_MODEL.to_owned(),
            noise_reduction: NoiseReduction::Off,
            global_shortcut: String::new(),
            push_to_talk_tail_ms: walkie_session::turn::DEFAULT_TAIL_MS as u32,
            pre_roll_ms: walkie_session::turn::DEFAULT_PRE_ROLL_MS as u32,
            warm_mic: true,
            echo_cancellation: true,
            voice_barge_in: false,
            input_device: String::new(),
            output_device: String::new(),
            data_folder: String::new(),
            close_to_tray: false,
            start_on_login: false,
            retention_days: None,
            saved: walkie_store::Saved::Everything,
            ask_for_titles: true,
            session_limit_minutes: 60,
            automatic_tool_rounds: walkie_conversation::AUTOMATIC_TOOL_ROUNDS,
            budget_usd: None,
            prices: crate::prices::published_prices(),
            minute_prices: crate::prices::published_minute_prices(),
            published_prices_of: crate::prices::PUBLISHED_ON.to_owned(),
            kept_deprecated_models: Vec::new(),
            tool_servers: Vec::new(),
        }
    }
}

/// A setting that cannot be used, named so the dialog can point at it. Its text is the
/// field's label as the dialog shows it and one line saying what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize)]
#[serde(rename_all = "camelCase")]
#[error("{label}: {reason}")]
pub struct InvalidSetting {
    /// The field's name as in [`Settings`] (camelCase), e.g. `customBaseUrl`.
    pub field: &'static str,
    /// The field's label in the settings dialog, e.g. "Server address".
    pub label: &'static str,
    pub reason: String,
}

impl InvalidSetting {
    fn new(field: &'static str, reason: impl Into<String>) -> Self {
        Self {
            field,
            label: label(field),
            reason: reason.into(),
        }
    }
}

/// The label the settings dialog (ui/index.html) shows for a field, for messages about it.
pub fn label(field: &str) -> &'static str {
    match field {
        "provider" => "Talk to",
        "azureResourceUrl" => "Azure resource URL",
        "azureDeployment" => "Azure deployment",
        "customBaseUrl" => "Server address",
        "customCallForm" => "Place the call with",
        "model" => "Model",
        "voice" => "Voice",
        "instructions" => "Instructions",
        "transcriptionModel" => "Transcribe my speech with",
        "reasoningEffort" => "Reasoning effort",
        "parallelToolCalls" => "Let the model use several tools at once",
        "truncationRetentionRatio" => "When the conversation gets too long",
        "speechSpeed" => "Speaking speed",
        "transcriptionDelay" => "Transcription delay",
        "transcriptionKeywords" => "Words to expect",
        "minutePrices" => "Prices per minute (US$)",
        "noiseReduction" => "Noise reduction",
        "voiceDetection" => "Hands-free: your turn ends",
        "eagerness" => "When you sound finished, answer",
        "idleTimeoutMs" => "Speak up after a silence of (ms)",
        "liveIdleTimeoutS" => "GPT-Live: pause after a quiet of (seconds)",
        "liveToolsModel" => "GPT-Live: tools run by (model)",
        "pressMode" => "The talk button",
        "globalShortcut" => "Shortcut in other apps",
        "pushToTalkTailMs" => "Keep listening after you let go (ms)",
        "preRollMs" => "Include audio from before the press (ms)",
        "warmMic" => "Keep the microphone open between turns",
        "echoCancellation" => "Cancel the speaker's echo",
        "voiceBargeIn" => "Interrupt a reply by speaking",
        "typedRepliesInText" => "Answer typed messages in text",
        "inputDevice" => "Microphone",
        "outputDevice" => "Speaker",
        "dataFolder" => "Save conversations in",
        "closeToTray" => "Closing the window keeps Walkie in the tray",
        "startOnLogin" => "Start Walkie when you log in",
        "retentionDays" => "Keep conversations",
        "saved" => "Save",
        "askForTitles" => "Name each conversation by asking the model",
        "sessionLimitMinutes" => "The provider ends a session after (minutes)",
        "budgetUsd" => "Budget per conversation (US$)",
        "prices" => "Prices per million tokens (US$)",
        "toolServers" => "Tool servers (MCP)",
        "automaticToolRounds" => "Tool rounds without asking",
        _ => "A setting",
    }
}

impl Settings {
    /// Checks every field; the first problem found is returned.
    pub fn validate(&self) -> Result<(), InvalidSetting> {
        match self.problems().into_iter().next() {
            Some(problem) => Err(problem),
            None => Ok(()),
        }
    }

    /// Every field that cannot be used, in the dialog's order, so all can be shown at once.
    pub fn problems(&self) -> Vec<InvalidSetting> {
        let mut problems = Vec::new();
        let mut refuse = |field, reason: String| problems.push(InvalidSetting::new(field, reason));
        let url_field = match self.provider {
            ProviderKind::Azure => Some(("azureResourceUrl", &self.azure_resource_url)),
            ProviderKind::Custom => Some(("customBaseUrl", &self.custom_base_url)),
            _ => None,
        };
        if let Some((field, url)) = url_field
            && let Err(reason) = check_base_url(url)
        {
            refuse(field, reason);
        }
        if self.provider == ProviderKind::Azure && self.azure_deployment.trim().is_empty() {
            refuse(
                "azureDeployment",
                "enter the name of your realtime deployment (from the Azure portal)".into(),
            );
        }
        if self.model.trim().is_empty() {
            refuse("model", "enter a model name, e.g. gpt-realtime-2.1".into());
        }
        if self.voice.trim().is_empty() {
            refuse("voice", "choose a voice from the list".into());
        } else if walkie_openai::live::is_live_model(&self.model)
            && !walkie_openai::live::LIVE_VOICES.contains(&self.voice.trim())
        {
            refuse(
                "voice",
                format!(
                    "GPT-Live has voices of its own; choose one from the list (it speaks in {} \
                     unless told otherwise)",
                    walkie_openai::live::LIVE_DEFAULT_VOICE
                ),
            );
        }
        if walkie_openai::live::is_live_model(&self.model)
            && self.live_tools_model.trim().is_empty()
        {
            refuse(
                "liveToolsModel",
                format!("enter a model name, e.g. {DEFAULT_LIVE_TOOLS_MODEL}"),
            );
        }
        if let Some(seconds) = self.live_idle_timeout_s
            && !LIVE_IDLE_TIMEOUT_RANGE_S.contains(&seconds)
        {
            refuse(
                "liveIdleTimeoutS",
                format!(
                    "enter {} to {} seconds, or leave it empty never to pause",
                    LIVE_IDLE_TIMEOUT_RANGE_S.start(),
                    LIVE_IDLE_TIMEOUT_RANGE_S.end()
                ),
            );
        }
        let instructions_chars = self.instructions.chars().count();
        if instructions_chars > INSTRUCTIONS_MAX_CHARS {
            refuse(
                "instructions",
                format!(
                    "shorten them to {INSTRUCTIONS_MAX_CHARS} characters or fewer (now \
                     {instructions_chars})"
                ),
            );
        } else if self.instructions.len() > INSTRUCTIONS_MAX_BYTES {
            // Characters outside ASCII take 2 to 4 bytes each, and a call carries the
            // instructions in one 64 KiB message.
            refuse(
                "instructions",
                format!(
                    "shorten them to {} KiB of text or less (now {} KiB): a call carries them \
                     in one 64 KiB message",
                    INSTRUCTIONS_MAX_BYTES / 1024,
                    self.instructions.len().div_ceil(1024)
                ),
            );
        }
        if let Some(idle_ms) = self.idle_timeout_ms {
            if self.voice_detection == VoiceDetection::SemanticVad {
                refuse(
                    "idleTimeoutMs",
                    "leave it empty, or end turns \"after a short silence\": only then can \
                     Walkie speak up after one"
                        .into(),
                );
            } else if !IDLE_TIMEOUT_RANGE_MS.contains(&idle_ms) {
                let too = if idle_ms < *IDLE_TIMEOUT_RANGE_MS.start() {
                    "short"
                } else {
                    "long"
                };
                refuse(
                    "idleTimeoutMs",
                    format!(
                        "{idle_ms} ms is too {too}; enter {} to {} ms, or leave it empty to wait \
                         for you",
                        IDLE_TIMEOUT_RANGE_MS.start(),
                        IDLE_TIMEOUT_RANGE_MS.end()
                    ),
                );
            }
        }
        if let Some(reason) = out_of_range_ms(self.push_to_talk_tail_ms, &TAIL_RANGE_MS) {
            refuse("pushToTalkTailMs", reason);
        }
        if let Some(reason) = out_of_range_ms(self.pre_roll_ms, &PRE_ROLL_RANGE_MS) {
            refuse("preRollMs", reason);
        }
        if !AUTOMATIC_TOOL_ROUNDS_RANGE.contains(&self.automatic_tool_rounds) {
            refuse(
                "automaticToolRounds",
                format!(
                    "enter {} to {} rounds (8 is Walkie's default)",
                    AUTOMATIC_TOOL_ROUNDS_RANGE.start(),
                    AUTOMATIC_TOOL_ROUNDS_RANGE.end()
                ),
            );
        }
        if !SESSION_LIMIT_RANGE_MINUTES.contains(&self.session_limit_minutes) {
            refuse(
                "sessionLimitMinutes",
                format!(
                    "{} is not a limit Walkie can renew before; enter {} to {} minutes (OpenAI's is 60)",
                    self.session_limit_minutes,
                    SESSION_LIMIT_RANGE_MINUTES.start(),
                    SESSION_LIMIT_RANGE_MINUTES.end()
                ),
            );
        }
        if !SPEECH_SPEED_RANGE.contains(&self.speech_speed) {
            refuse(
                "speechSpeed",
                format!(
                    "enter {} to {} (1 is normal)",
                    SPEECH_SPEED_RANGE.start(),
                    SPEECH_SPEED_RANGE.end()
                ),
            );
        }
        if let Some(ratio) = self.truncation_retention_ratio
            && !RETENTION_RATIO_RANGE.contains(&ratio)
        {
            refuse(
                "truncationRetentionRatio",
                format!(
                    "choose a share to keep from {} to {} %, or let the server drop the oldest \
                     messages as needed",
                    RETENTION_RATIO_RANGE.start() * 100.0,
                    RETENTION_RATIO_RANGE.end() * 100.0
                ),
            );
        }
        if self.transcription_keywords.len() > KEYWORDS_MAX {
            refuse(
                "transcriptionKeywords",
                format!(
                    "list at most {KEYWORDS_MAX} words (now {}): the ones most often misheard",
                    self.transcription_keywords.len()
                ),
            );
        } else if let Some(long) = self
            .transcription_keywords
            .iter()
            .find(|word| word.trim().is_empty() || word.chars().count() > KEYWORD_MAX_CHARS)
        {
            refuse(
                "transcriptionKeywords",
                if long.trim().is_empty() {
                    "remove the empty word between two commas".to_owned()
                } else {
                    format!("shorten \"{long}\" to {KEYWORD_MAX_CHARS} characters or fewer")
                },
            );
        }
        if let Some(problem) = crate::prices::price_table_problem(&self.prices) {
            refuse("prices", problem);
        }
        if let Some(problem) = crate::prices::minute_price_table_problem(&self.minute_prices) {
            refuse("minutePrices", problem);
        }
        if let Some(problem) = crate::tool_servers::tool_servers_problem(&self.tool_servers) {
            refuse("toolServers", problem);
        }
        if let Some(budget_usd) = self.budget_usd
            && !BUDGET_RANGE_USD.contains(&budget_usd)
        {
            refuse(
                "budgetUsd",
                format!(
                    "enter an amount from {} to {} dollars, or leave it empty for no budget",
                    BUDGET_RANGE_USD.start(),
                    BUDGET_RANGE_USD.end()
                ),
            );
        }
        if let Some(days) = self.retention_days
            && !RETENTION_RANGE_DAYS.contains(&days)
        {
            refuse(
                "retentionDays",
                format!(
                    "choose between 1 and {} days, or forever",
                    RETENTION_RANGE_DAYS.end()
                ),
            );
        }
        if !self.data_folder.is_empty() && !Path::new(&self.data_folder).is_absolute() {
            refuse(
                "dataFolder",
                "enter the folder's full path (starting with /) or use Browse…".into(),
            );
        }
        if let Err(reason) = check_shortcut(&self.global_shortcut) {
            refuse("globalShortcut", reason);
        }
        problems
    }

    /// What changing the settings from `self` to `after` asks of the conversation, by when
    /// each setting takes effect. The settings are grouped here by that, every field named (no
    /// `..`), so a new setting does not compile until it is placed in a group.
    pub fn change_to(&self, after: &Settings) -> SettingsChange {
        let groups = |settings: &Settings| {
            let Settings {
                // A new call: the provider, the session it is placed with, the audio devices
                // and what the engine does with them, the tools declared.
                provider,
                azure_resource_url,
                azure_deployment,
                custom_base_url,
                custom_call_form,
                model,
                voice,
                instructions,
                live_tools_model,
                transcription_model,
                noise_reduction,
                reasoning_effort,
                parallel_tool_calls,
                truncation_retention_ratio,
                speech_speed,
                transcription_delay,
                transcription_keywords,
                push_to_talk_tail_ms,
                pre_roll_ms,
                warm_mic,
                echo_cancellation,
                voice_barge_in,
                input_device,
                output_device,
                tool_servers,
                // The call switches in place: how turns end.
                press_mode,
                hands_free,
                voice_detection,
                eagerness,
                idle_timeout_ms,
                live_idle_timeout_s,
                // In place: how typed messages are answered.
                typed_replies_in_text,
                // At once, for the conversation under way too: what it costs.
                budget_usd,
                prices,
                minute_prices,
                // The next calls: when they renew their session.
                session_limit_minutes,
                // At once, for the conversation under way too: what tools may do unasked.
                automatic_tool_rounds,
                // Not the conversation's: the next start (`data_folder`: the history and the
                // recorder never look at two folders), the app's own commands (the shortcut,
                // the tray, the login entry), the history's clean-up, and the file's own
                // bookkeeping.
                data_folder: _,
                global_shortcut: _,
                close_to_tray: _,
                start_on_login: _,
                retention_days: _,
                // The next conversation's: what of it is saved, and how it is named.
                saved: _,
                ask_for_titles: _,
                published_prices_of: _,
                kept_deprecated_models: _,
            } = settings.clone();
            let new_call = (
                (
                    provider,
                    azure_resource_url,
                    azure_deployment,
                    custom_base_url,
                    custom_call_form,
                ),
                (
                    model,
                    voice,
                    instructions,
                    live_tools_model,
                    transcription_model,
                    noise_reduction,
                ),
                (
                    reasoning_effort,
                    parallel_tool_calls,
                    truncation_retention_ratio.map(f64::to_bits),
                    speech_speed.to_bits(),
                    transcription_delay,
                    transcription_keywords,
                ),
                (
                    push_to_talk_tail_ms,
                    pre_roll_ms,
                    warm_mic,
                    echo_cancellation,
                    voice_barge_in,
                ),
                (input_device, output_device, tool_servers),
            );
            let turn_mode = (
                press_mode,
                hands_free,
                voice_detection,
                eagerness,
                idle_timeout_ms,
                live_idle_timeout_s,
            );
            let costing = (budget_usd.map(f64::to_bits), prices, minute_prices);
            let next_calls = session_limit_minutes;
            (
                new_call,
                turn_mode,
                typed_replies_in_text,
                costing,
                next_calls,
                automatic_tool_rounds,
            )
        };
        let (before, after) = (groups(self), groups(after));
        SettingsChange {
            new_call: before.0 != after.0,
            turn_mode: before.1 != after.1,
            typed_replies: before.2 != after.2,
            costing: before.3 != after.3,
            next_calls: before.4 != after.4,
            tool_rounds: before.5 != after.5,
        }
    }
}

/// What a change of the settings asks of the conversation ([`Settings::change_to`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SettingsChange {
    /// A new call is needed (make-before-break); the other changes then come with it.
    pub new_call: bool,
    /// Push-to-talk (hold or toggle), hands-free, or how voices are detected: the call under
    /// way switches in place, so the provider keeps the conversation.
    pub turn_mode: bool,
    /// Whether typed messages are answered in text alone: in place.
    pub typed_replies: bool,
    /// The prices or the budget: at once, for the conversation under way too.
    pub costing: bool,
    /// What only the next calls take (the session limit): kept for them, the call under way
    /// goes on as it was placed.
    pub next_calls: bool,
    /// How many rounds of tool calls run without asking: at once.
    pub tool_rounds: bool,
}

/// What [`Settings::migrate`] did: whether the settings changed (and should be saved), and the
/// one line the user should read about it, if any.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Migration {
    pub changed: bool,
    pub notice: Option<String>,
}

impl Settings {
    /// Brings settings saved by an older Walkie up to date, once: a model the provider shuts
    /// down moves to its replacement unless the user chose it knowing
    /// ([`Self::kept_deprecated_models`]), and the price tables gain what was published since.
    /// The notice says what moved and why; for a kept model, when it stops answering.
    pub fn migrate(&mut self) -> Migration {
        let mut migration = Migration::default();
        let mut moved = Vec::new();
        let mut kept = Vec::new();
        for field in [&mut self.model, &mut self.transcription_model] {
            let Some(known) = walkie_openai::names::deprecation(field) else {
                continue;
            };
            if self
                .kept_deprecated_models
                .iter()
                .any(|model| model == known.model)
            {
                kept.push(known);
            } else {
                *field = known.replacement.to_owned();
                moved.push(known);
            }
        }
        // A kept name that is no longer in use is no longer a choice to honour.
        let in_use = [
            self.model.trim().to_owned(),
            self.transcription_model.trim().to_owned(),
        ];
        let kept_before = self.kept_deprecated_models.len();
        self.kept_deprecated_models
            .retain(|model| in_use.contains(model));
        let published_of = std::mem::replace(
            &mut self.published_prices_of,
            crate::prices::PUBLISHED_ON.to_owned(),
        );
        let prices = crate::prices::bring_up_to_date(
            &mut self.prices,
            &crate::prices::published_prices(),
            &published_of,
        );
        let minute_prices = crate::prices::bring_up_to_date(
            &mut self.minute_prices,
            &crate::prices::published_minute_prices(),
            &published_of,
        );
        migration.changed = !moved.is_empty()
            || kept_before != self.kept_deprecated_models.len()
            || published_of != self.published_prices_of
            || prices
            || minute_prices;
        migration.notice = moved_notice(&moved).or_else(|| kept_notice(&kept));
        migration
    }

    /// The user saved the dialog while it warned of these models' shutdown: they are kept at
    /// the next start instead of being moved.
    pub fn keep_chosen_deprecated(&mut self) {
        self.kept_deprecated_models = [&self.model, &self.transcription_model]
            .into_iter()
            .filter_map(|model| walkie_openai::names::deprecation(model))
            .map(|known| known.model.to_owned())
            .collect();
    }
}

/// "New models: OpenAI shuts down gpt-realtime on 2027-01-20 and …, so Walkie now uses
/// gpt-realtime-2.1 and …; Open Settings to choose others."
fn moved_notice(moved: &[&walkie_openai::names::Deprecation]) -> Option<String> {
    let (first, rest) = moved.split_first()?;
    let mut shut = format!("{} on {}", first.model, first.shutdown_on);
    let mut now = first.replacement.to_owned();
    for known in rest {
        shut += &format!(" and {} on {}", known.model, known.shutdown_on);
        now += &format!(" and {}", known.replacement);
    }
    use walkie_conversation::headline::{NEW_MODEL, NEW_MODELS};
    let (headline, others) = if rest.is_empty() {
        (NEW_MODEL, "another")
    } else {
        (NEW_MODELS, "others")
    };
    Some(format!(
        "{headline}: OpenAI shuts down {shut}, so Walkie now uses {now}; Open Settings to choose \
         {others}."
    ))
}

fn kept_notice(kept: &[&walkie_openai::names::Deprecation]) -> Option<String> {
    let (first, rest) = kept.split_first()?;
    let mut which = format!(
        "{}, which you chose, stops answering on {}",
        first.model, first.shutdown_on
    );
    for known in rest {
        which += &format!(" and {} on {}", known.model, known.shutdown_on);
    }
    Some(format!(
        "{}: {which}; choose another in Settings before then.",
        walkie_conversation::headline::MODEL_SHUTS_DOWN
    ))
}

fn out_of_range_ms(value_ms: u32, range: &std::ops::RangeInclusive<u32>) -> Option<String> {
    (!range.contains(&value_ms)).then(|| {
        format!(
            "{value_ms} ms is too long; enter {} to {} ms",
            range.start(),
            range.end()
        )
    })
}

/// A base URL a call can be placed to: https anywhere, plain http only on this machine, never
/// with a user name or password in it. The reason says in plain words what to type instead.
fn check_base_url(url: &str) -> Result<(), String> {
    const EXAMPLE: &str = "enter a full address starting with https://, e.g. https://example.com";
    if url.trim().is_empty() {
        return Err(EXAMPLE.to_owned());
    }
    match walkie_rtc::Endpoint::custom(url.trim(), walkie_rtc::Auth::None) {
        Ok(_) => Ok(()),
        Err(walkie_rtc::RtcError::InsecureUrl { .. }) => {
            Err("use https:// (plain http:// is only for a server on this computer)".to_owned())
        }
        Err(walkie_rtc::RtcError::CredentialsInUrl { .. }) => Err(
            "remove the user name and password (the part before @); put the key in the API key field"
                .to_owned(),
        ),
        Err(walkie_rtc::RtcError::InvalidUrl { reason, .. }) if reason.contains("query") => {
            Err("remove the part from ? or # on; give only the server's address".to_owned())
        }
        Err(_) => Err(EXAMPLE.to_owned()),
    }
}

/// The shortcut parser's error type (global-hotkey's, as the app's shortcut plugin parses).
type ShortcutParseError = global_hotkey::hotkey::HotKeyParseError;

fn is_modifier(token: &str) -> bool {
    matches!(
        token.trim().to_uppercase().as_str(),
        "CTRL" | "CONTROL" | "ALT" | "OPTION" | "SHIFT" | "SUPER" | "CMD" | "COMMAND"
    )
}

/// A global shortcut Walkie can register, or one line saying why not and what to try. The
/// parser's own messages (which ask to report a bug upstream) are not passed on.
/// Shortcuts every app (or the desktop) already means something by: held by Walkie in every
/// app, they would stop working there.
const RESERVED_SHORTCUTS: &[(&str, &str)] = &[
    ("Ctrl+C", "copy"),
    ("Ctrl+X", "cut"),
    ("Ctrl+V", "paste"),
    ("Ctrl+Z", "undo"),
    ("Ctrl+Y", "redo"),
    ("Ctrl+Shift+Z", "redo"),
    ("Ctrl+A", "select everything"),
    ("Ctrl+S", "save"),
    ("Ctrl+Shift+C", "copy in a terminal"),
    ("Ctrl+Shift+V", "paste in a terminal"),
    ("Alt+Tab", "switch windows"),
    ("Alt+F4", "close a window"),
];

pub fn check_shortcut(shortcut: &str) -> Result<(), String> {
    const TRY: &str = "try e.g. Ctrl+Alt+Space";
    let shortcut = shortcut.trim();
    if shortcut.is_empty() {
        return Ok(());
    }
    let why = match shortcut.parse::<global_hotkey::hotkey::HotKey>() {
        Ok(parsed) if parsed.mods.is_empty() => {
            // A bare key would be taken from every other application.
            "a key alone would be taken from every other app, so add Ctrl, Alt, Shift or \
             Super"
                .to_owned()
        }
        Ok(parsed) => match RESERVED_SHORTCUTS.iter().find(|(reserved, _)| {
            reserved.parse::<global_hotkey::hotkey::HotKey>().ok() == Some(parsed)
        }) {
            Some((reserved, what)) => {
                format!("{reserved} is what every app uses to {what}, and Walkie would take it")
            }
            None => return Ok(()),
        },
        Err(ShortcutParseError::UnsupportedKey(key)) if is_modifier(&key) => {
            "add one key after the modifiers".to_owned()
        }
        Err(ShortcutParseError::UnsupportedKey(key)) => {
            format!("\"{}\" is not a key name it knows", key.trim())
        }
        Err(ShortcutParseError::EmptyToken(_)) => "a + has no key after it".to_owned(),
        Err(ShortcutParseError::InvalidFormat(_)) => {
            "write the modifiers first and one key last".to_owned()
        }
    };
    Err(format!("Not a shortcut Walkie can use: {why}; {TRY}"))
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

/// What loading found, besides the settings: a file that had to be set aside, or settings an
/// older Walkie saved that were brought up to date.
#[derive(Debug)]
pub struct Loaded {
    pub settings: Settings,
    /// The unreadable file was moved here and defaults are in use; the user should know.
    pub set_aside: Option<(PathBuf, String)>,
    /// What the user should read about the settings brought up to date (a model moved off one
    /// that shuts down, or one they kept that will).
    pub migrated: Option<String>,
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
                    migrated: None,
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
            Ok(mut settings) => match settings.validate() {
                Ok(()) => {
                    let migration = settings.migrate();
                    // Saved at once, so it happens once; if the file cannot be written now,
                    // the next start brings it up to date again.
                    if migration.changed
                        && let Err(error) = self.save(&settings)
                    {
                        log::warn!("the settings brought up to date were not saved: {error}");
                    }
                    return Ok(Loaded {
                        settings,
                        set_aside: None,
                        migrated: migration.notice,
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
            migrated: None,
        })
    }

    /// Validates and saves, atomically: a temporary file is written, synced and renamed. The
    /// folder (when created) and the file are private: 0700 and 0600 on Unix.
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
        create_private_dir_all(dir).map_err(write_error)?;
        let json = serde_json::to_vec_pretty(settings)
            .expect("settings are plain strings, numbers and booleans");
        let temporary = self.path.with_file_name(format!("{FILE_NAME}.saving"));
        // A temporary file left by a crash may carry other permissions: start afresh.
        let _ = std::fs::remove_file(&temporary);
        let mut file = create_private_file(&temporary).map_err(write_error)?;
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
    fn a_gpt_live_model_takes_only_its_own_voices_and_a_pause_from_5_seconds_to_an_hour() {
        let live = Settings {
            model: "gpt-live-1.1".to_owned(),
            voice: "vesper".to_owned(),
            ..Settings::default()
        };
        assert_eq!(live.validate(), Ok(()));
        let refused_fields = |settings: Settings| -> Vec<&'static str> {
            settings
                .problems()
                .into_iter()
                .map(|invalid| invalid.field)
                .collect()
        };
        assert_eq!(
            refused_fields(Settings {
                voice: "onyx".to_owned(),
                ..live.clone()
            }),
            ["voice"]
        );
        assert_eq!(
            refused_fields(Settings {
                live_idle_timeout_s: Some(2),
                ..live.clone()
            }),
            ["liveIdleTimeoutS"]
        );
        assert_eq!(
            refused_fields(Settings {
                live_tools_model: " ".to_owned(),
                ..live.clone()
            }),
            ["liveToolsModel"]
        );
        assert_eq!(
            Settings {
                live_idle_timeout_s: None,
                ..live
            }
            .validate(),
            Ok(())
        );
    }

    #[test]
    fn a_file_naming_models_that_shut_down_moves_them_once_and_says_so() {
        let dir = temporary_dir("migrate");
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("settings.json");
        // A file as a Walkie of 2025 saved it: the models of then, no date of its prices.
        std::fs::write(
            &path,
            r#"{"model":"gpt-realtime","transcriptionModel":"whisper-1","voice":"cedar"}"#,
        )
        .unwrap();
        let loaded = SettingsFile::in_dir(&dir).load(0).unwrap();
        assert_eq!(
            loaded.migrated.as_deref(),
            Some(
                "New models: OpenAI shuts down gpt-realtime on 2027-01-20 and whisper-1 on \
                 2027-02-26, so Walkie now uses gpt-realtime-2.1 and gpt-realtime-whisper; Open \
                 Settings to choose others."
            )
        );
        assert_eq!(loaded.settings.model, "gpt-realtime-2.1");
        assert_eq!(loaded.settings.voice, "cedar", "nothing else moves");
        assert!(
            loaded
                .settings
                .prices
                .iter()
                .any(|row| row.model == "gpt-realtime-2.1")
        );
        // Saved at once: the next start finds nothing to move and says nothing.
        let again = SettingsFile::in_dir(&dir).load(0).unwrap();
        assert_eq!(again.migrated, None);
        assert_eq!(again.settings, loaded.settings);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_model_that_shuts_down_chosen_knowing_is_kept_and_its_date_said_at_each_start() {
        let mut settings = Settings {
            model: "gpt-realtime-mini".to_owned(),
            ..Settings::default()
        };
        settings.keep_chosen_deprecated();
        assert_eq!(settings.kept_deprecated_models, ["gpt-realtime-mini"]);
        for _start in 0..2 {
            let migration = settings.migrate();
            assert_eq!(settings.model, "gpt-realtime-mini");
            assert_eq!(
                migration.notice.as_deref(),
                Some(
                    "Model shuts down: gpt-realtime-mini, which you chose, stops answering on \
                     2027-01-20; choose another in Settings before then."
                )
            );
        }
        // Another model chosen later: the old choice is no longer one to honour.
        settings.model = "gpt-realtime-2.1".to_owned();
        assert!(settings.migrate().changed);
        assert!(settings.kept_deprecated_models.is_empty());
        settings.model = "gpt-realtime-mini".to_owned();
        settings.migrate();
        assert_eq!(settings.model, "gpt-realtime-2.1-mini", "moved, not kept");
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
            saved: walkie_store::Saved::TranscriptsOnly,
            global_shortcut: "Ctrl+Alt+Space".to_owned(),
            session_limit_minutes: 30,
            ..Settings::default()
        };
        file.save(&settings).unwrap();
        assert_eq!(file.load(0).unwrap().settings, settings);
        assert!(!dir.join("settings.json.saving").exists());
    }

    #[cfg(unix)]
    #[test]
    fn the_settings_folder_and_file_are_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = temporary_dir("private").join("config");
        let file = SettingsFile::in_dir(&dir);
        file.save(&Settings::default()).unwrap();
        let mode = |path: &Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&dir), 0o700, "the folder");
        assert_eq!(mode(file.path()), 0o600, "the file");
        // A save over a file left readable by others makes it private too.
        std::fs::set_permissions(file.path(), std::fs::Permissions::from_mode(0o644)).unwrap();
        file.save(&Settings::default()).unwrap();
        assert_eq!(mode(file.path()), 0o600, "the file after a second save");
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
        assert!(
            problem.starts_with("Keep listening after you let go (ms):"),
            "{problem}"
        );
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
    fn voice_detection_settings_are_checked_with_the_field_named() {
        let too_short = Settings {
            idle_timeout_ms: Some(1_000),
            ..Settings::default()
        };
        let error = too_short.validate().expect_err("1 s is too short");
        assert_eq!(error.field, "idleTimeoutMs");
        assert!(error.reason.contains("5000"), "{}", error.reason);
        let with_semantic = Settings {
            idle_timeout_ms: Some(10_000),
            voice_detection: VoiceDetection::SemanticVad,
            ..Settings::default()
        };
        let error = with_semantic
            .validate()
            .expect_err("semantic VAD has no idle timeout");
        assert_eq!(error.field, "idleTimeoutMs");
        let fine = Settings {
            idle_timeout_ms: Some(10_000),
            voice_detection: VoiceDetection::ServerVad,
            noise_reduction: NoiseReduction::FarField,
            ..Settings::default()
        };
        assert_eq!(fine.validate(), Ok(()));
    }

    #[test]
    fn voice_detection_settings_are_written_as_the_api_names_them() {
        let settings = Settings {
            hands_free: true,
            voice_detection: VoiceDetection::SemanticVad,
            eagerness: Eagerness::Low,
            noise_reduction: NoiseReduction::NearField,
            ..Settings::default()
        };
        let json = serde_json::to_value(&settings).expect("settings serialise");
        assert_eq!(json["voiceDetection"], "semantic_vad");
        assert_eq!(json["eagerness"], "low");
        assert_eq!(json["noiseReduction"], "near_field");
        assert_eq!(json["idleTimeoutMs"], serde_json::Value::Null);
        let back: Settings = serde_json::from_value(json).expect("they read back");
        assert_eq!(back, settings);
        assert!(
            serde_json::from_value::<Settings>(serde_json::json!({"eagerness": "eager"})).is_err(),
            "an unknown eagerness is refused"
        );
    }

    #[test]
    fn a_voice_detection_change_switches_the_call_and_noise_reduction_reconnects() {
        let base = Settings::default();
        let eager = Settings {
            eagerness: Eagerness::High,
            ..base.clone()
        };
        let change = base.change_to(&eager);
        assert!(change.turn_mode);
        assert!(!change.new_call);
        let quieter = Settings {
            noise_reduction: NoiseReduction::FarField,
            ..base.clone()
        };
        assert!(base.change_to(&quieter).new_call);
    }

    #[test]
    fn the_default_model_and_voice_are_among_those_offered() {
        let defaults = Settings::default();
        assert!(walkie_openai::names::REALTIME_MODELS.contains(&defaults.model.as_str()));
        assert!(walkie_openai::names::VOICES.contains(&defaults.voice.as_str()));
    }

    #[test]
    fn instructions_that_would_not_fit_a_call_message_are_refused() {
        // 19,000 characters is under the character limit, but at 3 bytes each too large.
        let settings = Settings {
            instructions: "語".repeat(19_000),
            ..Settings::default()
        };
        let error = settings.validate().expect_err("57 KiB of instructions");
        assert_eq!(error.field, "instructions");
        assert!(error.reason.contains("48 KiB"), "{}", error.reason);
        let fits = Settings {
            instructions: "語".repeat(16_000),
            ..Settings::default()
        };
        assert_eq!(fits.validate(), Ok(()));
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
                    session_limit_minutes: 1,
                    ..Settings::default()
                },
                "sessionLimitMinutes",
            ),
            (
                Settings {
                    session_limit_minutes: 241,
                    ..Settings::default()
                },
                "sessionLimitMinutes",
            ),
            (
                Settings {
                    automatic_tool_rounds: 0,
                    ..Settings::default()
                },
                "automaticToolRounds",
            ),
            (
                Settings {
                    automatic_tool_rounds: 51,
                    ..Settings::default()
                },
                "automaticToolRounds",
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
                    budget_usd: Some(0.0),
                    ..Settings::default()
                },
                "budgetUsd",
            ),
            (
                Settings {
                    budget_usd: Some(1e9),
                    ..Settings::default()
                },
                "budgetUsd",
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
    fn every_bad_field_is_reported_at_once_with_its_label_and_what_to_do() {
        let settings = Settings {
            provider: ProviderKind::Custom,
            custom_base_url: "http://example.com".to_owned(),
            pre_roll_ms: 5_000,
            global_shortcut: "Ctrl+Banana".to_owned(),
            ..Settings::default()
        };
        let problems = settings.problems();
        let fields: Vec<_> = problems.iter().map(|problem| problem.field).collect();
        assert_eq!(fields, ["customBaseUrl", "preRollMs", "globalShortcut"]);
        let texts: Vec<_> = problems.iter().map(ToString::to_string).collect();
        assert_eq!(
            texts,
            [
                "Server address: use https:// (plain http:// is only for a server on this \
                 computer)",
                "Include audio from before the press (ms): 5000 ms is too long; enter 0 to \
                 2000 ms",
                "Shortcut in other apps: Not a shortcut Walkie can use: \"Banana\" is not a key \
                 name it knows; try e.g. Ctrl+Alt+Space",
            ]
        );
        assert_eq!(settings.validate(), Err(problems[0].clone()));
    }

    #[test]
    fn the_session_fields_are_reported_with_the_others_at_once_in_plain_words() {
        let settings = Settings {
            instructions: "語".repeat(19_000),
            voice_detection: VoiceDetection::SemanticVad,
            idle_timeout_ms: Some(10_000),
            pre_roll_ms: 5_000,
            ..Settings::default()
        };
        let texts: Vec<_> = settings
            .problems()
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            texts,
            [
                "Instructions: shorten them to 48 KiB of text or less (now 56 KiB): a call \
                 carries them in one 64 KiB message",
                "Speak up after a silence of (ms): leave it empty, or end turns \"after a short \
                 silence\": only then can Walkie speak up after one",
                "Include audio from before the press (ms): 5000 ms is too long; enter 0 to \
                 2000 ms",
            ]
        );
        let too_long = Settings {
            idle_timeout_ms: Some(60_000),
            ..Settings::default()
        };
        assert_eq!(
            too_long.validate().map_err(|problem| problem.to_string()),
            Err(
                "Speak up after a silence of (ms): 60000 ms is too long; enter 5000 to 30000 \
                 ms, or leave it empty to wait for you"
                    .to_owned()
            )
        );
    }

    #[test]
    fn a_shortcut_error_is_a_plain_sentence_without_the_parsers_bug_report_link() {
        for (typed, why) in [
            ("Ctrl+Banana", "\"Banana\" is not a key name it knows"),
            ("Banana", "\"Banana\" is not a key name it knows"),
            ("Ctrl++", "a + has no key after it"),
            ("Ctrl+A+B", "write the modifiers first and one key last"),
            ("Ctrl", "add one key after the modifiers"),
            ("Ctrl+Alt", "write the modifiers first and one key last"),
            (
                "F9",
                "a key alone would be taken from every other app, so add Ctrl, Alt, Shift or Super",
            ),
        ] {
            let error = check_shortcut(typed).unwrap_err();
            assert_eq!(
                error,
                format!("Not a shortcut Walkie can use: {why}; try e.g. Ctrl+Alt+Space"),
                "{typed}"
            );
            assert!(!error.contains("github"), "{error}");
        }
        for good in ["", "  ", "Ctrl+Alt+Space", "Super+Shift+W"] {
            assert_eq!(check_shortcut(good), Ok(()), "{good}");
        }
    }

    #[test]
    fn a_shortcut_every_app_uses_is_refused_saying_what_it_does_there() {
        for (typed, what) in [
            ("Ctrl+C", "copy"),
            ("control+c", "copy"),
            ("Ctrl+V", "paste"),
            ("Ctrl+Shift+V", "paste in a terminal"),
            ("Alt+F4", "close a window"),
        ] {
            let error = check_shortcut(typed).expect_err(typed);
            assert!(
                error.contains(&format!(
                    "is what every app uses to {what}, and Walkie would take it"
                )),
                "{typed}: {error}"
            );
            assert!(error.ends_with("try e.g. Ctrl+Alt+Space"), "{error}");
        }
        assert_eq!(
            check_shortcut("Ctrl+Alt+C"),
            Ok(()),
            "with another modifier it is free"
        );
    }

    #[test]
    fn every_shortcut_the_field_records_from_pressed_keys_is_one_walkie_can_register() {
        // What ui/settings.js `shortcutFromKeys` writes: modifiers, then the key's code with
        // "Key"/"Digit" dropped.
        for pressed in [
            "Ctrl+Alt+Space",
            "Ctrl+Shift+K",
            "Super+1",
            "Alt+F9",
            "Ctrl+ArrowUp",
            "Ctrl+Backquote",
            "Shift+Alt+Enter",
            "Ctrl+Backspace",
            "Ctrl+Numpad5",
        ] {
            assert_eq!(check_shortcut(pressed), Ok(()), "{pressed}");
        }
    }

    #[test]
    fn every_label_in_errors_is_the_one_the_dialog_shows() {
        let page = include_str!("../../../ui/index.html");
        for field in [
            "azureResourceUrl",
            "azureDeployment",
            "customBaseUrl",
            "customCallForm",
            "model",
            "voice",
            "instructions",
            "transcriptionModel",
            "noiseReduction",
            "voiceDetection",
            "eagerness",
            "idleTimeoutMs",
            "pushToTalkTailMs",
            "preRollMs",
            "dataFolder",
            "globalShortcut",
        ] {
            let shown = format!(">{}<", label(field));
            assert!(page.contains(&shown), "ui/index.html has no label {shown}");
        }
    }

    #[test]
    fn an_address_with_a_user_name_or_password_is_refused_naming_the_field() {
        let custom = Settings {
            provider: ProviderKind::Custom,
            custom_base_url: "https://walkie:pa55word@realtime.example.com".to_owned(),
            ..Settings::default()
        };
        let azure = Settings {
            provider: ProviderKind::Azure,
            azure_resource_url: "https://walkie@res.openai.azure.com".to_owned(),
            azure_deployment: "my-deployment".to_owned(),
            ..Settings::default()
        };
        for (settings, field, label) in [
            (custom, "customBaseUrl", "Server address"),
            (azure, "azureResourceUrl", "Azure resource URL"),
        ] {
            let error = settings.validate().unwrap_err();
            assert_eq!((error.field, error.label), (field, label), "{error}");
            assert_eq!(
                error.reason,
                "remove the user name and password (the part before @); put the key in the API \
                 key field"
            );
            assert!(!error.to_string().contains("pa55word"), "{error}");
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
        assert_eq!(
            before.change_to(&retention),
            SettingsChange::default(),
            "neither the call nor the conversation is told"
        );
        let voice = Settings {
            voice: "ash".to_owned(),
            ..before.clone()
        };
        assert!(before.change_to(&voice).new_call);
    }

    #[test]
    fn typed_replies_and_costs_change_in_place_each_told_on_its_own() {
        let before = Settings::default();
        let in_text = Settings {
            typed_replies_in_text: !before.typed_replies_in_text,
            ..before.clone()
        };
        assert_eq!(
            before.change_to(&in_text),
            SettingsChange {
                typed_replies: true,
                ..SettingsChange::default()
            }
        );
        let budget = Settings {
            budget_usd: Some(2.5),
            ..before.clone()
        };
        let mut repriced = before.clone();
        repriced.prices[0].prices.audio_in += 1.0;
        for after in [&budget, &repriced] {
            assert_eq!(
                before.change_to(after),
                SettingsChange {
                    costing: true,
                    ..SettingsChange::default()
                }
            );
        }
        let rounds = Settings {
            automatic_tool_rounds: 3,
            ..before.clone()
        };
        assert_eq!(
            before.change_to(&rounds),
            SettingsChange {
                tool_rounds: true,
                ..SettingsChange::default()
            },
            "the conversation under way takes the round bound"
        );
        let renewal = Settings {
            session_limit_minutes: before.session_limit_minutes + 5,
            ..before.clone()
        };
        assert_eq!(
            before.change_to(&renewal),
            SettingsChange {
                next_calls: true,
                ..SettingsChange::default()
            },
            "the next calls take the session limit"
        );
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
            let change = before.change_to(after);
            assert!(!change.new_call);
            assert!(change.turn_mode);
        }
        assert_eq!(before.change_to(&before.clone()), SettingsChange::default());
    }
}
