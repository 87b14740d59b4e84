//! Server events: every event of the GA reference table, with the legacy (beta) names that
//! still occur recognised as aliases of their GA meaning.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::item::{ContentPart, Item};
use crate::session::{Modality, SessionConfig};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum ServerEvent {
    /// Always the first event after connecting.
    #[serde(rename = "session.created")]
    SessionCreated { session: Box<SessionConfig> },
    #[serde(rename = "session.updated")]
    SessionUpdated { session: Box<SessionConfig> },

    /// Server VAD heard speech begin (hands-free modes only).
    #[serde(rename = "input_audio_buffer.speech_started")]
    SpeechStarted {
        audio_start_ms: u64,
        item_id: String,
    },
    /// Server VAD heard speech end (hands-free modes only).
    #[serde(rename = "input_audio_buffer.speech_stopped")]
    SpeechStopped { audio_end_ms: u64, item_id: String },
    #[serde(rename = "input_audio_buffer.committed")]
    InputAudioBufferCommitted {
        item_id: String,
        #[serde(default)]
        previous_item_id: Option<String>,
    },
    #[serde(rename = "input_audio_buffer.cleared")]
    InputAudioBufferCleared,
    #[serde(rename = "input_audio_buffer.timeout_triggered")]
    InputAudioBufferTimeoutTriggered {
        audio_start_ms: u64,
        audio_end_ms: u64,
        item_id: String,
    },

    /// An item joined the conversation (beta: `conversation.item.created`).
    #[serde(
        rename = "conversation.item.added",
        alias = "conversation.item.created"
    )]
    ConversationItemAdded {
        item: Item,
        #[serde(default)]
        previous_item_id: Option<String>,
    },
    #[serde(rename = "conversation.item.done")]
    ConversationItemDone {
        item: Item,
        #[serde(default)]
        previous_item_id: Option<String>,
    },
    /// A streaming piece of the user's transcript.
    #[serde(rename = "conversation.item.input_audio_transcription.delta")]
    InputTranscriptionDelta {
        item_id: String,
        #[serde(default)]
        content_index: u32,
        /// Empty when the server left it out (the SDK makes it optional): nothing to add.
        #[serde(default)]
        delta: String,
    },
    /// The user's whole transcript. Asynchronous to the response: it may come before or after
    /// the reply, so it is matched by `item_id`, never by arrival order.
    #[serde(rename = "conversation.item.input_audio_transcription.completed")]
    InputTranscriptionCompleted {
        item_id: String,
        #[serde(default)]
        content_index: u32,
        transcript: String,
        /// What the transcription was billed, at the transcription model's prices. A malformed
        /// one reads as none: the transcript matters more than the figure.
        #[serde(
            default,
            deserialize_with = "lenient_transcription_usage",
            skip_serializing_if = "Option::is_none"
        )]
        usage: Option<TranscriptionUsage>,
    },
    #[serde(rename = "conversation.item.input_audio_transcription.failed")]
    InputTranscriptionFailed {
        item_id: String,
        #[serde(default)]
        content_index: u32,
        error: ErrorDetail,
    },
    #[serde(rename = "conversation.item.truncated")]
    ConversationItemTruncated {
        item_id: String,
        content_index: u32,
        audio_end_ms: u64,
    },
    #[serde(rename = "conversation.item.deleted")]
    ConversationItemDeleted { item_id: String },
    #[serde(rename = "conversation.item.retrieved")]
    ConversationItemRetrieved { item: Item },

    #[serde(rename = "response.created")]
    ResponseCreated { response: Response },
    /// Always sent, also for cancelled and failed responses. Generation is faster than
    /// playback: the assistant is still audible until `output_audio_buffer.stopped`.
    #[serde(rename = "response.done")]
    ResponseDone { response: Response },
    #[serde(rename = "response.output_item.added")]
    ResponseOutputItemAdded {
        response_id: String,
        output_index: u32,
        item: Item,
    },
    #[serde(rename = "response.output_item.done")]
    ResponseOutputItemDone {
        response_id: String,
        output_index: u32,
        item: Item,
    },
    #[serde(rename = "response.content_part.added")]
    ResponseContentPartAdded {
        response_id: String,
        item_id: String,
        output_index: u32,
        content_index: u32,
        part: ContentPart,
    },
    #[serde(rename = "response.content_part.done")]
    ResponseContentPartDone {
        response_id: String,
        item_id: String,
        output_index: u32,
        content_index: u32,
        part: ContentPart,
    },
    /// A streaming piece of the assistant's spoken words (beta: `response.audio_transcript.delta`).
    #[serde(
        rename = "response.output_audio_transcript.delta",
        alias = "response.audio_transcript.delta"
    )]
    OutputAudioTranscriptDelta {
        response_id: String,
        item_id: String,
        output_index: u32,
        content_index: u32,
        delta: String,
    },
    #[serde(
        rename = "response.output_audio_transcript.done",
        alias = "response.audio_transcript.done"
    )]
    OutputAudioTranscriptDone {
        response_id: String,
        item_id: String,
        output_index: u32,
        content_index: u32,
        #[serde(default)]
        transcript: String,
    },
    #[serde(rename = "response.output_text.delta", alias = "response.text.delta")]
    OutputTextDelta {
        response_id: String,
        item_id: String,
        output_index: u32,
        content_index: u32,
        delta: String,
    },
    #[serde(rename = "response.output_text.done", alias = "response.text.done")]
    OutputTextDone {
        response_id: String,
        item_id: String,
        output_index: u32,
        content_index: u32,
        #[serde(default)]
        text: String,
    },
    /// Base64 audio inside JSON. Not sent over WebRTC, where audio travels by RTP.
    #[serde(rename = "response.output_audio.delta", alias = "response.audio.delta")]
    OutputAudioDelta {
        response_id: String,
        item_id: String,
        output_index: u32,
        content_index: u32,
        delta: String,
    },
    /// The item's audio is complete (also sent on cancel). Sent over WebRTC too.
    #[serde(rename = "response.output_audio.done", alias = "response.audio.done")]
    OutputAudioDone {
        response_id: String,
        item_id: String,
        output_index: u32,
        content_index: u32,
    },
    #[serde(rename = "response.function_call_arguments.delta")]
    FunctionCallArgumentsDelta {
        response_id: String,
        item_id: String,
        output_index: u32,
        call_id: String,
        delta: String,
    },
    #[serde(rename = "response.function_call_arguments.done")]
    FunctionCallArgumentsDone {
        response_id: String,
        item_id: String,
        output_index: u32,
        call_id: String,
        #[serde(default)]
        name: Option<String>,
        arguments: String,
    },

    /// The server began playing a response's audio (WebRTC/SIP only): the assistant is audible.
    #[serde(rename = "output_audio_buffer.started")]
    OutputAudioBufferStarted { response_id: String },
    /// The server's output buffer drained: the real "assistant finished speaking".
    #[serde(rename = "output_audio_buffer.stopped")]
    OutputAudioBufferStopped { response_id: String },
    /// The output buffer was cut (barge-in or `output_audio_buffer.clear`).
    #[serde(rename = "output_audio_buffer.cleared")]
    OutputAudioBufferCleared { response_id: String },

    #[serde(rename = "rate_limits.updated")]
    RateLimitsUpdated { rate_limits: Vec<RateLimit> },
    /// Most errors are recoverable: the session stays open.
    #[serde(rename = "error")]
    Error { error: ErrorDetail },

    /// An event type this crate does not know. Kept whole, so it can be logged and ignored
    /// without ending the session. Never produced by serde: see [`crate::decode_server_event`].
    #[serde(skip)]
    Unknown(UnknownEvent),
}

/// A server event of a type this crate does not model, as received.
#[derive(Clone, Debug, PartialEq)]
pub struct UnknownEvent {
    pub event_type: String,
    pub raw: Value,
}

/// The wire names [`ServerEvent`] decodes, GA names first, then the legacy aliases.
pub(crate) const KNOWN_SERVER_EVENT_TYPES: &[&str] = &[
    "session.created",
    "session.updated",
    "input_audio_buffer.speech_started",
    "input_audio_buffer.speech_stopped",
    "input_audio_buffer.committed",
    "input_audio_buffer.cleared",
    "input_audio_buffer.timeout_triggered",
    "conversation.item.added",
    "conversation.item.done",
    "conversation.item.input_audio_transcription.delta",
    "conversation.item.input_audio_transcription.completed",
    "conversation.item.input_audio_transcription.failed",
    "conversation.item.truncated",
    "conversation.item.deleted",
    "conversation.item.retrieved",
    "response.created",
    "response.done",
    "response.output_item.added",
    "response.output_item.done",
    "response.content_part.added",
    "response.content_part.done",
    "response.output_audio_transcript.delta",
    "response.output_audio_transcript.done",
    "response.output_text.delta",
    "response.output_text.done",
    "response.output_audio.delta",
    "response.output_audio.done",
    "response.function_call_arguments.delta",
    "response.function_call_arguments.done",
    "output_audio_buffer.started",
    "output_audio_buffer.stopped",
    "output_audio_buffer.cleared",
    "rate_limits.updated",
    "error",
    // legacy (beta) names, read as their GA meaning
    "conversation.item.created",
    "response.audio_transcript.delta",
    "response.audio_transcript.done",
    "response.text.delta",
    "response.text.done",
    "response.audio.delta",
    "response.audio.done",
];

/// A response as `response.created` / `response.done` describe it. Walkie reads its `id`,
/// `status` and `status_details`; the rest is read leniently (unknown output items are kept as
/// [`Item::Other`], unknown modalities drop the list) so that the event that ends a response is
/// never lost over a field Walkie does not use.
#[serde_with::serde_as]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Response {
    /// Empty when the server left it out (the SDK makes every field of a response optional):
    /// the event is then about the active response, there being one at a time.
    #[serde(default)]
    pub id: String,
    pub status: ResponseStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_details: Option<StatusDetails>,
    #[serde(default)]
    pub output: Vec<Item>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversation_id: Option<String>,
    #[serde_as(as = "serde_with::DefaultOnError")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_modalities: Option<Vec<Modality>>,
    /// What the response was billed (set on `response.done`). A malformed one reads as none:
    /// the figures are for the user's information, the event that ends the response is not.
    #[serde_as(deserialize_as = "serde_with::DefaultOnError<Option<UsageObject>>")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Value>,
}

/// A response's token counts, as the SDK's `RealtimeResponseUsage` has them; every figure is
/// optional there, so here too. Cached input tokens are a part of the input tokens, not more.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Usage {
    pub total_tokens: Option<u64>,
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
    pub input_token_details: Option<InputTokenDetails>,
    pub output_token_details: Option<OutputTokenDetails>,
}

/// Reads a [`Usage`] from a JSON object only: serde would read a list by position, and
/// `[1, 2]` is no usage of 1 token in total and 2 in.
struct UsageObject;

impl<'de> serde_with::DeserializeAs<'de, Usage> for UsageObject {
    fn deserialize_as<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Usage, D::Error> {
        use serde::de::Error as _;
        fn holds_a_list(value: &Value) -> bool {
            match value {
                Value::Array(_) => true,
                Value::Object(fields) => fields.values().any(holds_a_list),
                _ => false,
            }
        }
        let value = Value::deserialize(deserializer)?;
        if holds_a_list(&value) {
            return Err(D::Error::custom(
                "a usage holds numbers in objects, never a list",
            ));
        }
        Usage::deserialize(value).map_err(D::Error::custom)
    }
}

/// What one transcription of the user's audio was billed: tokens for the models billed by
/// token, seconds of audio for those billed by duration (the SDK's two `Usage` variants).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum TranscriptionUsage {
    Tokens {
        #[serde(default)]
        input_tokens: u64,
        #[serde(default)]
        output_tokens: u64,
        #[serde(default)]
        total_tokens: u64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        input_token_details: Option<TranscriptionTokenDetails>,
    },
    Duration {
        seconds: f64,
    },
}

/// A token-billed transcription's input tokens by modality.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct TranscriptionTokenDetails {
    pub audio_tokens: Option<u64>,
    pub text_tokens: Option<u64>,
}

fn lenient_transcription_usage<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<TranscriptionUsage>, D::Error> {
    let value = Value::deserialize(deserializer)?;
    Ok(serde_json::from_value::<TranscriptionUsage>(value)
        .ok()
        .filter(|usage| match usage {
            TranscriptionUsage::Duration { seconds } => seconds.is_finite() && *seconds >= 0.0,
            TranscriptionUsage::Tokens { .. } => true,
        }))
}

/// The input tokens by modality, and how many of them were cached.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct InputTokenDetails {
    pub text_tokens: Option<u64>,
    pub audio_tokens: Option<u64>,
    pub image_tokens: Option<u64>,
    pub cached_tokens: Option<u64>,
    pub cached_tokens_details: Option<CachedTokenDetails>,
}

/// The cached input tokens by modality.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct CachedTokenDetails {
    pub text_tokens: Option<u64>,
    pub audio_tokens: Option<u64>,
    pub image_tokens: Option<u64>,
}

/// The output tokens by modality.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct OutputTokenDetails {
    pub text_tokens: Option<u64>,
    pub audio_tokens: Option<u64>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResponseStatus {
    InProgress,
    Completed,
    Cancelled,
    Failed,
    Incomplete,
}

/// Why a response ended other than completed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StatusDetails {
    /// `cancelled`, `incomplete` or `failed` (empty when the server left it out).
    #[serde(rename = "type", default)]
    pub kind: String,
    /// `turn_detected`, `client_cancelled`, `max_output_tokens`, `content_filter`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<Value>,
}

/// One rate limit (`requests` or `tokens`). Every field is optional, as in the SDK, so a
/// partial entry never loses the event (absent stays absent, never a made-up zero).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RateLimit {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remaining: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reset_seconds: Option<f64>,
}

/// The body of an `error` event (and of a failed transcription). `type` and `message` read as
/// empty when absent: the SDK makes every field of a failed transcription's error optional,
/// and an error without a message is still an error to report.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorDetail {
    #[serde(rename = "type", default)]
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    #[serde(default)]
    pub message: String,
    /// The offending parameter. The GA error shape always carries it (`"param": null` when
    /// none), so it is always written; reading accepts it absent as well as null.
    #[serde(default)]
    pub param: Option<String>,
    /// The `event_id` of the client event that failed, when it carried one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event_id: Option<String>,
}

/// Error codes after which the session cannot go on. Everything else leaves it usable: the
/// reference says of the `error` event that "most errors are recoverable and the session will
/// stay open", and agents-js keeps its session open on any `error`. So the list is short and
/// explicit:
/// - `session_expired`: the session hit its maximum duration ("Your session hit the maximum
///   duration of 60 minutes"); the server closes it;
/// - `beta_api_shape_disabled`: the session was opened in the retired beta shape; nothing sent
///   on it will work;
/// - `invalid_api_key`, `insufficient_quota`: the key or the account cannot pay for more; every
///   further request fails the same way.
///
/// A closed data channel is not an `error` event: the transport reports it.
const FATAL_ERROR_CODES: &[&str] = &[
    "session_expired",
    "beta_api_shape_disabled",
    "invalid_api_key",
    "insufficient_quota",
];

/// The message of a session that reached its maximum duration, for servers that send it
/// without the `session_expired` code.
const SESSION_EXPIRED_MESSAGE: &str = "Your session hit the maximum duration";

impl ErrorDetail {
    /// Whether the session can go on after this error: yes, unless the code is one of the
    /// few that end it (`session_expired`, `beta_api_shape_disabled`, `invalid_api_key`,
    /// `insufficient_quota`) or the message says the session hit its maximum duration. An
    /// error the client does not know is a notice, not the end of the call.
    pub fn is_recoverable(&self) -> bool {
        let fatal_code = self
            .code
            .as_deref()
            .is_some_and(|code| FATAL_ERROR_CODES.contains(&code));
        !fatal_code && !self.message.starts_with(SESSION_EXPIRED_MESSAGE)
    }
}

impl ServerEvent {
    /// The GA wire name, as in the `type` field (for unknown events, the name as received).
    pub fn event_type(&self) -> &str {
        match self {
            ServerEvent::SessionCreated { .. } => "session.created",
            ServerEvent::SessionUpdated { .. } => "session.updated",
            ServerEvent::SpeechStarted { .. } => "input_audio_buffer.speech_started",
            ServerEvent::SpeechStopped { .. } => "input_audio_buffer.speech_stopped",
            ServerEvent::InputAudioBufferCommitted { .. } => "input_audio_buffer.committed",
            ServerEvent::InputAudioBufferCleared => "input_audio_buffer.cleared",
            ServerEvent::InputAudioBufferTimeoutTriggered { .. } => {
                "input_audio_buffer.timeout_triggered"
            }
            ServerEvent::ConversationItemAdded { .. } => "conversation.item.added",
            ServerEvent::ConversationItemDone { .. } => "conversation.item.done",
            ServerEvent::InputTranscriptionDelta { .. } => {
                "conversation.item.input_audio_transcription.delta"
            }
            ServerEvent::InputTranscriptionCompleted { .. } => {
                "conversation.item.input_audio_transcription.completed"
            }
            ServerEvent::InputTranscriptionFailed { .. } => {
                "conversation.item.input_audio_transcription.failed"
            }
            ServerEvent::ConversationItemTruncated { .. } => "conversation.item.truncated",
            ServerEvent::ConversationItemDeleted { .. } => "conversation.item.deleted",
            ServerEvent::ConversationItemRetrieved { .. } => "conversation.item.retrieved",
            ServerEvent::ResponseCreated { .. } => "response.created",
            ServerEvent::ResponseDone { .. } => "response.done",
            ServerEvent::ResponseOutputItemAdded { .. } => "response.output_item.added",
            ServerEvent::ResponseOutputItemDone { .. } => "response.output_item.done",
            ServerEvent::ResponseContentPartAdded { .. } => "response.content_part.added",
            ServerEvent::ResponseContentPartDone { .. } => "response.content_part.done",
            ServerEvent::OutputAudioTranscriptDelta { .. } => {
                "response.output_audio_transcript.delta"
            }
            ServerEvent::OutputAudioTranscriptDone { .. } => {
                "response.output_audio_transcript.done"
            }
            ServerEvent::OutputTextDelta { .. } => "response.output_text.delta",
            ServerEvent::OutputTextDone { .. } => "response.output_text.done",
            ServerEvent::OutputAudioDelta { .. } => "response.output_audio.delta",
            ServerEvent::OutputAudioDone { .. } => "response.output_audio.done",
            ServerEvent::FunctionCallArgumentsDelta { .. } => {
                "response.function_call_arguments.delta"
            }
            ServerEvent::FunctionCallArgumentsDone { .. } => {
                "response.function_call_arguments.done"
            }
            ServerEvent::OutputAudioBufferStarted { .. } => "output_audio_buffer.started",
            ServerEvent::OutputAudioBufferStopped { .. } => "output_audio_buffer.stopped",
            ServerEvent::OutputAudioBufferCleared { .. } => "output_audio_buffer.cleared",
            ServerEvent::RateLimitsUpdated { .. } => "rate_limits.updated",
            ServerEvent::Error { .. } => "error",
            ServerEvent::Unknown(unknown) => &unknown.event_type,
        }
    }
}

/// GA server event types Walkie does not model on purpose: they reach the caller as
/// [`ServerEvent::Unknown`], kept whole, and are logged and ignored. The oracle
/// (scripts/oracle/) checks that every other type of the SDK's server-event union is decoded.
pub const KEPT_RAW_SERVER_EVENT_TYPES: &[&str] = &[
    // Walkie has one conversation per call and never reads its id.
    "conversation.created",
    // DTMF keypresses arrive on SIP calls only; Walkie calls over WebRTC.
    "input_audio_buffer.dtmf_event_received",
    // Diarized transcription segments; Walkie's transcription models send plain deltas.
    "conversation.item.input_audio_transcription.segment",
    // MCP tools run on the server; Walkie configures no MCP servers, so these are progress only.
    "mcp_list_tools.in_progress",
    "mcp_list_tools.completed",
    "mcp_list_tools.failed",
    "response.mcp_call_arguments.delta",
    "response.mcp_call_arguments.done",
    "response.mcp_call.in_progress",
    "response.mcp_call.completed",
    "response.mcp_call.failed",
];

#[cfg(test)]
mod kept_raw_tests {
    use super::{KEPT_RAW_SERVER_EVENT_TYPES, KNOWN_SERVER_EVENT_TYPES, ServerEvent};

    #[test]
    fn every_type_kept_raw_on_purpose_is_one_the_decoder_does_not_model() {
        for event_type in KEPT_RAW_SERVER_EVENT_TYPES {
            assert!(
                !KNOWN_SERVER_EVENT_TYPES.contains(event_type),
                "{event_type} is modelled"
            );
            let text = format!(r#"{{"type":"{event_type}","event_id":"event_1"}}"#);
            match crate::decode_server_event(&text) {
                Ok(ServerEvent::Unknown(unknown)) => assert_eq!(unknown.event_type, *event_type),
                other => panic!("{event_type} decoded as {other:?}"),
            }
        }
    }
}
