//! The session configuration (`session.update` out, `session.created`/`updated` in).
//!
//! A `session.update` changes only the fields present, and `null` is meaningful: it turns a
//! feature off (`turn_detection: null` is push-to-talk). So optional fields that can be cleared
//! are `Option<Option<T>>`: `None` leaves the field as it is, `Some(None)` sends `null`.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use serde_with::rust::double_option;

/// `session.type`: a speech-to-speech session or a transcription-only one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum SessionKind {
    #[default]
    Realtime,
    Transcription,
}

/// What the model answers with. GA allows audio (which carries its transcript) or text, never both.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Modality {
    Audio,
    Text,
}

/// `max_output_tokens`: a number from 1 to 4096, or `"inf"`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum MaxOutputTokens {
    Limit(u32),
    Infinite(InfiniteTokens),
}

/// The literal `"inf"`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum InfiniteTokens {
    #[serde(rename = "inf")]
    Inf,
}

/// The largest session (as JSON) Walkie sends, in a call's creation or a `session.update`.
/// The server restates the whole session in `session.created` and `session.updated` on the
/// data channel, whose messages hold at most 64 KiB (RFC 8841's default `max-message-size`,
/// and Walkie's receive limit); the rest is room for the event's envelope and the fields the
/// server adds. A larger session would end the call at its first event.
pub const MAX_SESSION_BYTES: usize = 60 * 1024;

/// The session as sent in `session.update` and as the server restates it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
pub struct SessionConfig {
    #[serde(rename = "type", default)]
    pub kind: SessionKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_modalities: Option<Vec<Modality>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audio: Option<AudioConfig>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<Tool>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_output_tokens: Option<MaxOutputTokens>,
    /// How hard a reasoning model thinks before it answers (reasoning models only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<Reasoning>,
    /// Whether the model may call several tools at once (reasoning models only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parallel_tool_calls: Option<bool>,
    /// What the server drops when the conversation outgrows the model's context.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub truncation: Option<Truncation>,
    /// Fields this crate does not model (`id`, `expires_at`, `tracing`, `include`, ...), kept so
    /// that a restated session is not silently narrowed.
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
pub struct AudioConfig {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<AudioInput>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<AudioOutput>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
pub struct AudioInput {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<AudioFormat>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "double_option"
    )]
    pub noise_reduction: Option<Option<NoiseReduction>>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "double_option"
    )]
    pub transcription: Option<Option<Transcription>>,
    /// `Some(None)` is `null`: no server VAD, the client commits (push-to-talk).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "double_option"
    )]
    pub turn_detection: Option<Option<TurnDetection>>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
pub struct AudioOutput {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<AudioFormat>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub voice: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speed: Option<f32>,
}

/// The format of audio that travels inside JSON events. Over WebRTC the media goes by RTP
/// (Opus), so this matters little, but the server restates it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AudioFormat {
    #[serde(rename = "type")]
    pub mime: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<u32>,
}

impl AudioFormat {
    pub fn pcm_24khz() -> Self {
        Self {
            mime: "audio/pcm".to_owned(),
            rate: Some(24_000),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NoiseReduction {
    /// `near_field` or `far_field`.
    #[serde(rename = "type")]
    pub kind: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Transcription {
    pub model: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub language: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    /// How long the model waits before it writes (`minimal` … `xhigh`; `gpt-realtime-whisper`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay: Option<String>,
    /// Words or names to expect (`gpt-transcribe`, `gpt-live-transcribe`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keywords: Option<Vec<String>>,
}

/// `reasoning`: `effort` is `minimal`, `low`, `medium`, `high` or `xhigh`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Reasoning {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effort: Option<String>,
}

/// `truncation`: `"auto"` or `"disabled"`, or keep a fraction of the conversation when it
/// outgrows the context, so the turns after a cut reuse the cached input.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Truncation {
    Mode(TruncationMode),
    RetentionRatio(RetentionRatio),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TruncationMode {
    Auto,
    Disabled,
}

/// `{"type": "retention_ratio", "retention_ratio": 0.8}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename = "retention_ratio")]
pub struct RetentionRatio {
    pub retention_ratio: f64,
    /// The server's own limits unless set (kept as the server restated them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_limits: Option<Value>,
}

/// Server-side turn detection (hands-free mode).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum TurnDetection {
    ServerVad {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        threshold: Option<f32>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        prefix_padding_ms: Option<u32>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        silence_duration_ms: Option<u32>,
        #[serde(
            default,
            skip_serializing_if = "Option::is_none",
            with = "double_option"
        )]
        idle_timeout_ms: Option<Option<u32>>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        create_response: Option<bool>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        interrupt_response: Option<bool>,
    },
    SemanticVad {
        /// `low`, `medium`, `high` or `auto`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        eagerness: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        create_response: Option<bool>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        interrupt_response: Option<bool>,
    },
}

/// A function tool the model may call.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Tool {
    Function {
        name: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        description: Option<String>,
        /// JSON Schema of the arguments.
        parameters: Value,
    },
    /// A tool this crate does not model (`mcp`, ...) as the server restated it.
    #[serde(untagged)]
    Other(Value),
}
