//! OpenAI's Live API (GPT-Live) as typed events: the JSON body that places a call over WebRTC,
//! what Walkie sends on the data channel, and what it receives.
//!
//! Why beside the Realtime types and not inside them: it is another protocol with other rules
//! (the model owns turn-taking, the client mutes and unmutes its input, transcripts come as
//! deltas with no done events, voice and instructions are fixed at start, usage is counted in
//! seconds), so its events are a union of their own; what the two families share is the call's
//! transport and the decoding rules. Those rules are the Realtime types' own: unknown event types
//! are kept raw ([`LiveServerEvent::Unknown`]) so a newer server never ends a session, a known
//! event missing a field Walkie reads is a [`DecodeError::Schema`], and a session snapshot Walkie
//! cannot read never loses the event that carried it.
//!
//! The shapes are read from openai-python 3.63.0's `openai/types/live/`; the oracle
//! (scripts/oracle/) feeds SDK-built instances of every server event type through
//! [`decode_live_server_event`] and compares the model and voice lists with the SDK's literals.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::decode::{DecodeError, encode_with_id, probe_type, schema_error, value_of};
use crate::server::UnknownEvent;

/// The Live models the SDK names (`MediaSessionConfigParam.model`), in its order.
pub const LIVE_MODELS: &[&str] = &["gpt-live-1", "gpt-live-1.1"];

/// The Live API's built-in voices (`types/live/built_in_voice.py`), alphabetically. More than
/// the Realtime API's: the two lists are not interchangeable.
pub const LIVE_VOICES: &[&str] = &[
    "alloy", "ash", "ballad", "beacon", "bossa", "cedar", "cinder", "coral", "delta", "echo",
    "gleam", "marin", "meridian", "quartz", "ripple", "sage", "shida", "shimmer", "stone", "tempo",
    "verse", "vesper", "willow",
];

/// Whether `model` is served by the Live API: one the SDK names, or a newer `gpt-live-…`.
pub fn is_live_model(model: &str) -> bool {
    let model = model.trim();
    LIVE_MODELS.contains(&model) || model.starts_with("gpt-live-")
}

/// The voice a Live session speaks in when none is chosen (the SDK: "Defaults to `marin`").
pub const LIVE_DEFAULT_VOICE: &str = "marin";

/// The most messages `input` may give a session at start (the SDK: "at most 128 messages").
pub const MAX_INITIAL_MESSAGES: usize = 128;

/// The body of `POST /v1/live/sessions`: the session and the caller's SDP offer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LiveCreateRequest {
    pub session: LiveSessionConfig,
    pub transport: WebRtcTransport,
}

/// `{"type": "webrtc", "sdp": …}`: the offer in a request, the answer in a response.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename = "webrtc")]
pub struct WebRtcTransport {
    pub sdp: String,
}

/// What `POST /v1/live/sessions` answers: the new session's id and the answer SDP.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LiveCreateResponse {
    pub session: CreatedSession,
    pub transport: WebRtcTransport,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CreatedSession {
    pub id: String,
}

/// A Live session's configuration: what a call starts with, and the snapshot the server
/// resolves it to (`session.started`, `session.updated`, `session.closed`). Only `model` is
/// required to start one; the snapshot's own fields (`id`, `expires_at`, `status`) and those
/// Walkie does not set (`client`, `store`, `triggers`, `safety_identifier`) are kept in
/// `other`, so a snapshot restated is never narrowed.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LiveSessionConfig {
    #[serde(default)]
    pub model: String,
    /// Fixed at start: `session.instructions.append` adds to them during the session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audio: Option<LiveAudio>,
    /// The conversation so far, text only, given before the session starts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<Vec<InitialItem>>,
    /// Inference starts, and starts again after a pause, when the microphone hears speech.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wake_policy: Option<WakePolicy>,
    /// Whole seconds of quiet after which a session with a wake policy pauses inference.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_timeout_s: Option<u32>,
    /// Who runs the work the model delegates: absent or `{"type": "client"}` is the app.
    /// Kept as sent: the Responses and Decisions backends are not Walkie's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delegation: Option<Value>,
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LiveAudio {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<LiveAudioOutput>,
    /// Only a primary WebSocket sets it; WebRTC negotiates its media format.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<Value>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LiveAudioOutput {
    /// Fixed at start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub voice: Option<LiveVoice>,
}

/// A built-in voice by name, or a custom voice by its id.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum LiveVoice {
    Named(String),
    Custom { id: String },
}

/// `{"type": "speech", "vad_threshold": 0.5}`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename = "speech")]
pub struct WakePolicy {
    /// 0 to 1; the server's default is 0.5. Higher needs stronger evidence of speech.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vad_threshold: Option<f64>,
}

/// One message of the history a session starts with: one text part.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct InitialItem {
    #[serde(rename = "type", default)]
    pub kind: MessageKind,
    pub role: InitialRole,
    pub content: Vec<InitialText>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
}

impl InitialItem {
    /// A finished message of `role` saying `text`, with the content part its role takes.
    pub fn message(role: InitialRole, text: impl Into<String>) -> Self {
        let kind = match role {
            InitialRole::Assistant => TextKind::OutputText,
            InitialRole::Developer | InitialRole::User => TextKind::InputText,
        };
        Self {
            kind: MessageKind::Message,
            role,
            content: vec![InitialText {
                kind,
                text: text.into(),
            }],
            id: None,
            status: None,
        }
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MessageKind {
    #[default]
    Message,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum InitialRole {
    Developer,
    User,
    Assistant,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct InitialText {
    #[serde(rename = "type")]
    pub kind: TextKind,
    pub text: String,
}

/// `input_text` for developer and user messages; `output_text` (or `text`) for the assistant's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TextKind {
    InputText,
    OutputText,
    Text,
}

/// What Walkie sends on a Live call's data channel. The Live API has 15 client events; these
/// are the ones a WebRTC client with client delegation uses (`session.start` and
/// `session.input_audio.append` are a WebSocket's, the Responses and Decisions events their
/// backends', fixtures a telephony app's).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum LiveClientEvent {
    /// Changes a running session's delegation settings (and transcript triggers); the model,
    /// the instructions, the audio and the startup input are fixed at start.
    #[serde(rename = "session.update")]
    SessionUpdate { session: Value },
    /// The model hears silence from now on; answered by `session.input_audio.muted`.
    #[serde(rename = "session.input_audio.mute")]
    Mute,
    /// The model hears the microphone again; answered by `session.input_audio.unmuted`.
    #[serde(rename = "session.input_audio.unmute")]
    Unmute,
    /// Developer instructions added while the session runs (≤ 500 tokens each).
    #[serde(rename = "session.instructions.append")]
    InstructionsAppend {
        content: String,
        /// Required and nullable: null is general context, an id answers that delegation.
        delegation_id: Option<String>,
    },
    /// Silent context for the model (≤ 500 tokens): it does not ask for speech.
    #[serde(rename = "session.thinking.append")]
    ThinkingAppend {
        content: String,
        delegation_id: Option<String>,
    },
    /// Context the model may say to the user (≤ 500 tokens): a delegation's result.
    #[serde(rename = "session.commentary.append")]
    CommentaryAppend {
        content: String,
        delegation_id: Option<String>,
    },
    /// Ends the session; the server answers with `session.closed`.
    #[serde(rename = "session.close")]
    Close,
    /// An input item for the Responses backend a task was delegated to: here a function
    /// call's output (`{"type": "function_call_output", "call_id", "output"}`).
    #[serde(rename = "response.item.create")]
    ResponseItemCreate { item: Value },
    /// Asks the Responses backend to go on with a delegated response that waited for tool
    /// results.
    #[serde(rename = "response.create")]
    ResponseCreate,
}

/// The client event types [`decode_live_client_event`] reads.
const LIVE_CLIENT_EVENT_TYPES: &[&str] = &[
    "session.update",
    "session.input_audio.mute",
    "session.input_audio.unmute",
    "session.instructions.append",
    "session.thinking.append",
    "session.commentary.append",
    "session.close",
    "response.item.create",
    "response.create",
];

impl LiveClientEvent {
    /// The wire name, as in the `type` field.
    pub fn event_type(&self) -> &'static str {
        match self {
            LiveClientEvent::SessionUpdate { .. } => "session.update",
            LiveClientEvent::Mute => "session.input_audio.mute",
            LiveClientEvent::Unmute => "session.input_audio.unmute",
            LiveClientEvent::InstructionsAppend { .. } => "session.instructions.append",
            LiveClientEvent::ThinkingAppend { .. } => "session.thinking.append",
            LiveClientEvent::CommentaryAppend { .. } => "session.commentary.append",
            LiveClientEvent::Close => "session.close",
            LiveClientEvent::ResponseItemCreate { .. } => "response.item.create",
            LiveClientEvent::ResponseCreate => "response.create",
        }
    }

    /// The JSON text sent on the data channel.
    pub fn to_json(&self, event_id: Option<&str>) -> String {
        encode_with_id(self, event_id)
    }
}

/// What a Live call's data channel brings.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum LiveServerEvent {
    /// The session runs, configured as `session` (with the server's defaults filled in).
    #[serde(rename = "session.started")]
    SessionStarted { session: LiveSessionConfig },
    #[serde(rename = "session.updated")]
    SessionUpdated { session: LiveSessionConfig },
    /// The idle timeout paused inference: the call and the history stay; speech wakes it.
    #[serde(rename = "session.paused")]
    SessionPaused,
    /// Speech woke inference (also after the first wake of a session with a wake policy).
    #[serde(rename = "session.resumed")]
    SessionResumed,
    #[serde(rename = "session.input_audio.muted")]
    InputAudioMuted,
    #[serde(rename = "session.input_audio.unmuted")]
    InputAudioUnmuted,
    /// A piece of what the user said, at `start_ms`..`end_ms` of the session's timeline. No
    /// event says a turn is done.
    #[serde(rename = "session.input_transcript.delta")]
    InputTranscriptDelta {
        delta: String,
        start_ms: i64,
        end_ms: i64,
    },
    /// A piece of what the model said, as for the user's.
    #[serde(rename = "session.output_transcript.delta")]
    OutputTranscriptDelta {
        delta: String,
        start_ms: i64,
        end_ms: i64,
    },
    #[serde(rename = "session.instructions.appended")]
    InstructionsAppended { start_ms: i64, end_ms: i64 },
    #[serde(rename = "session.thinking.appended")]
    ThinkingAppended { start_ms: i64, end_ms: i64 },
    #[serde(rename = "session.commentary.appended")]
    CommentaryAppended { start_ms: i64, end_ms: i64 },
    /// The model handed work to `delegation.target`; the task itself is in the conversation.
    #[serde(rename = "session.delegation.created")]
    DelegationCreated {
        delegation: Delegation,
        offset_ms: i64,
    },
    /// The session's billable time so far (cumulative: never summed across events).
    #[serde(rename = "session.usage.updated")]
    UsageUpdated {
        usage: LiveUsage,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        context_window: Option<ContextWindow>,
    },
    /// The session has ended and been finalised. The snapshot it carries is not read, so a
    /// close is never lost over it.
    #[serde(rename = "session.closed")]
    SessionClosed {
        reason: CloseReason,
        #[serde(
            default,
            deserialize_with = "lenient_usage",
            skip_serializing_if = "Option::is_none"
        )]
        usage: Option<LiveUsage>,
    },
    /// One streaming event of the Responses backend a task was delegated to (a function call
    /// it makes, its output, its end), kept as the Responses API sent it.
    #[serde(rename = "response.event")]
    ResponseEvent {
        event: Value,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        delegation_id: Option<String>,
    },
    #[serde(rename = "error")]
    Error { error: LiveError },
    /// A notice (such as the data channel's event permissions); nothing to act on.
    #[serde(rename = "info")]
    Info { code: String, message: String },

    /// An event type this module does not model: kept whole, logged and ignored. Never
    /// produced by serde: see [`decode_live_server_event`].
    #[serde(skip)]
    Unknown(UnknownEvent),
}

/// The Live server event types the decoder models.
const KNOWN_LIVE_SERVER_EVENT_TYPES: &[&str] = &[
    "session.started",
    "session.updated",
    "session.paused",
    "session.resumed",
    "session.input_audio.muted",
    "session.input_audio.unmuted",
    "session.input_transcript.delta",
    "session.output_transcript.delta",
    "session.instructions.appended",
    "session.thinking.appended",
    "session.commentary.appended",
    "session.delegation.created",
    "session.usage.updated",
    "session.closed",
    "response.event",
    "error",
    "info",
];

/// Live server event types left raw on purpose: none of them reaches a WebRTC client that runs
/// its own delegations. The oracle fails on any other type the decoder keeps raw.
pub const KEPT_RAW_LIVE_SERVER_EVENT_TYPES: &[&str] = &[
    // The Decisions backend's stream and items; Walkie delegates to itself.
    "decision.event",
    "decision.item.created",
    "decision.item.deleted",
    // Reflected input audio, for sideband observers only.
    "session.input_audio.append",
    // Audio as base64 on a primary WebSocket; over WebRTC the audio is RTP.
    "session.output_audio.delta",
    // Audio fixtures (hold music, prompts) Walkie never plays.
    "session.output_audio.fixture.playing",
    "session.output_audio.fixture.played",
    // SIP calls' events, for sideband observers; Walkie calls over WebRTC.
    "transport.dtmf.received",
    "transport.dtmf.send",
    "transport.dtmf.sent",
    "transport.ringing",
    "transport.answered",
    "transport.failed",
];

/// Who a delegation went to, and its id (what a client's answer names).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Delegation {
    pub id: String,
    pub target: DelegationTarget,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_id: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DelegationTarget {
    Client,
    Responses,
    Decisions,
    /// A target newer than this module.
    #[serde(other)]
    Other,
}

/// A session's billable time so far, in seconds: the active and paused parts where the call
/// reports them (WebRTC), which add up to `seconds`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LiveUsage {
    pub seconds: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_seconds: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paused_seconds: Option<u64>,
}

/// How full the model's context is: its active tokens over its limit.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ContextWindow {
    pub usage_ratio: f64,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CloseReason {
    /// The client asked (`session.close`, a hang-up).
    CloseRequested,
    /// The session's time limit.
    Expired,
    /// A safety filter ended it.
    Content,
    RemoteHangup,
    ConnectionLost,
    /// A reason newer than this module.
    #[serde(other)]
    Other,
}

/// What went wrong; most errors leave the session open.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LiveError {
    pub code: String,
    pub message: String,
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub param: Option<String>,
    /// The client event that caused it, when it carried an `event_id`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_event_id: Option<String>,
}

/// A usage Walkie cannot read is none: the close it came with matters more.
fn lenient_usage<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<LiveUsage>, D::Error> {
    let value = Value::deserialize(deserializer)?;
    Ok(serde_json::from_value::<LiveUsage>(value)
        .ok()
        .filter(|usage| usage.seconds.is_finite() && usage.seconds >= 0.0))
}

impl LiveServerEvent {
    /// The wire name, as in the `type` field (for unknown events, the name as received).
    pub fn event_type(&self) -> &str {
        match self {
            LiveServerEvent::SessionStarted { .. } => "session.started",
            LiveServerEvent::SessionUpdated { .. } => "session.updated",
            LiveServerEvent::SessionPaused => "session.paused",
            LiveServerEvent::SessionResumed => "session.resumed",
            LiveServerEvent::InputAudioMuted => "session.input_audio.muted",
            LiveServerEvent::InputAudioUnmuted => "session.input_audio.unmuted",
            LiveServerEvent::InputTranscriptDelta { .. } => "session.input_transcript.delta",
            LiveServerEvent::OutputTranscriptDelta { .. } => "session.output_transcript.delta",
            LiveServerEvent::InstructionsAppended { .. } => "session.instructions.appended",
            LiveServerEvent::ThinkingAppended { .. } => "session.thinking.appended",
            LiveServerEvent::CommentaryAppended { .. } => "session.commentary.appended",
            LiveServerEvent::DelegationCreated { .. } => "session.delegation.created",
            LiveServerEvent::UsageUpdated { .. } => "session.usage.updated",
            LiveServerEvent::SessionClosed { .. } => "session.closed",
            LiveServerEvent::Error { .. } => "error",
            LiveServerEvent::Info { .. } => "info",
            LiveServerEvent::ResponseEvent { .. } => "response.event",
            LiveServerEvent::Unknown(unknown) => &unknown.event_type,
        }
    }

    /// The JSON text the local provider sends. An unknown event is sent back as received.
    pub fn to_json(&self, event_id: &str) -> String {
        match self {
            LiveServerEvent::Unknown(unknown) => unknown.raw.to_string(),
            known => encode_with_id(known, Some(event_id)),
        }
    }
}

/// Decodes one Live server event. Unknown types come back as [`LiveServerEvent::Unknown`]. A
/// `session.started` or `session.updated` whose snapshot does not read as
/// [`LiveSessionConfig`] still arrives, its snapshot kept whole in `other`: the session's start
/// is never lost over a field of it.
pub fn decode_live_server_event(text: &str) -> Result<LiveServerEvent, DecodeError> {
    let event_type = probe_type(text)?;
    if !KNOWN_LIVE_SERVER_EVENT_TYPES.contains(&event_type.as_ref()) {
        let raw = value_of(&event_type, text)?;
        return Ok(LiveServerEvent::Unknown(UnknownEvent {
            event_type: event_type.into_owned(),
            raw,
        }));
    }
    serde_json::from_str(text).or_else(|error| {
        snapshot_kept_whole(&event_type, text).ok_or_else(|| schema_error(&event_type, text, error))
    })
}

/// A session event whose snapshot is an object this module cannot read, with the snapshot kept
/// in `other`.
fn snapshot_kept_whole(event_type: &str, text: &str) -> Option<LiveServerEvent> {
    let Value::Object(snapshot) = serde_json::from_str::<Value>(text)
        .ok()?
        .get("session")?
        .clone()
    else {
        return None;
    };
    let session = LiveSessionConfig {
        model: snapshot
            .get("model")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned(),
        other: snapshot,
        ..LiveSessionConfig::default()
    };
    match event_type {
        "session.started" => Some(LiveServerEvent::SessionStarted { session }),
        "session.updated" => Some(LiveServerEvent::SessionUpdated { session }),
        _ => None,
    }
}

/// Decodes one Live client event, as the local provider receives it: the events a WebRTC client
/// with client delegation sends, nothing else. Returns the client's `event_id`, if any.
pub fn decode_live_client_event(
    text: &str,
) -> Result<(Option<String>, LiveClientEvent), DecodeError> {
    let event_type = probe_type(text)?;
    let raw = value_of(&event_type, text)?;
    if !LIVE_CLIENT_EVENT_TYPES.contains(&event_type.as_ref()) {
        return Err(DecodeError::UnknownClientEvent {
            event_type: event_type.into_owned(),
        });
    }
    let event_id = raw
        .get("event_id")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let event =
        serde_json::from_value(raw).map_err(|error| schema_error(&event_type, text, error))?;
    Ok((event_id, event))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_type_kept_raw_on_purpose_is_one_the_decoder_does_not_model() {
        for event_type in KEPT_RAW_LIVE_SERVER_EVENT_TYPES {
            assert!(
                !KNOWN_LIVE_SERVER_EVENT_TYPES.contains(event_type),
                "{event_type}"
            );
            let text = format!(r#"{{"type":"{event_type}","event_id":"e"}}"#);
            match decode_live_server_event(&text) {
                Ok(LiveServerEvent::Unknown(unknown)) => {
                    assert_eq!(unknown.event_type, *event_type)
                }
                other => panic!("{event_type}: {other:?}"),
            }
        }
    }

    #[test]
    fn every_client_event_names_the_type_it_is_sent_as() {
        let events = [
            LiveClientEvent::SessionUpdate {
                session: serde_json::json!({"delegation": {"type": "client"}}),
            },
            LiveClientEvent::Mute,
            LiveClientEvent::Unmute,
            LiveClientEvent::InstructionsAppend {
                content: "Be brief.".to_owned(),
                delegation_id: None,
            },
            LiveClientEvent::ThinkingAppend {
                content: "The user is in Lisbon.".to_owned(),
                delegation_id: None,
            },
            LiveClientEvent::CommentaryAppend {
                content: "It is 10:42.".to_owned(),
                delegation_id: Some("del_1".to_owned()),
            },
            LiveClientEvent::Close,
            LiveClientEvent::ResponseItemCreate {
                item: serde_json::json!({"type": "function_call_output", "call_id": "c", "output": "{}"}),
            },
            LiveClientEvent::ResponseCreate,
        ];
        assert_eq!(events.len(), LIVE_CLIENT_EVENT_TYPES.len());
        for event in events {
            let json: Value = serde_json::from_str(&event.to_json(None)).expect("JSON");
            assert_eq!(json["type"], event.event_type());
            assert!(LIVE_CLIENT_EVENT_TYPES.contains(&event.event_type()));
        }
    }

    #[test]
    fn every_modelled_type_names_itself_back() {
        for event_type in KNOWN_LIVE_SERVER_EVENT_TYPES {
            // The smallest instance of each: its required fields, with plausible values.
            let text = match *event_type {
                "session.started" | "session.updated" => {
                    format!(r#"{{"type":"{event_type}","session":{{"model":"gpt-live-1.1"}}}}"#)
                }
                "session.input_transcript.delta" | "session.output_transcript.delta" => {
                    format!(r#"{{"type":"{event_type}","delta":"hi","start_ms":0,"end_ms":10}}"#)
                }
                "session.instructions.appended"
                | "session.thinking.appended"
                | "session.commentary.appended" => {
                    format!(r#"{{"type":"{event_type}","start_ms":0,"end_ms":0}}"#)
                }
                "session.delegation.created" => format!(
                    r#"{{"type":"{event_type}","delegation":{{"id":"d","target":"client","type":"delegation"}},"offset_ms":5}}"#
                ),
                "session.usage.updated" => {
                    format!(r#"{{"type":"{event_type}","usage":{{"seconds":3}}}}"#)
                }
                "session.closed" => format!(
                    r#"{{"type":"{event_type}","reason":"expired","session":{{}},"usage":{{"seconds":3}}}}"#
                ),
                "error" => format!(
                    r#"{{"type":"{event_type}","error":{{"code":"c","message":"m","type":"t"}}}}"#
                ),
                "info" => format!(r#"{{"type":"{event_type}","code":"c","message":"m"}}"#),
                "response.event" => format!(
                    r#"{{"type":"{event_type}","event":{{"type":"response.created"}},"delegation_id":"d"}}"#
                ),
                _ => format!(r#"{{"type":"{event_type}"}}"#),
            };
            let event = decode_live_server_event(&text).unwrap_or_else(|error| {
                panic!("{event_type}: {error}");
            });
            assert_eq!(event.event_type(), *event_type);
            assert!(
                !matches!(event, LiveServerEvent::Unknown(_)),
                "{event_type}"
            );
            // And what the local provider sends of it reads back the same.
            assert_eq!(
                decode_live_server_event(&event.to_json("e1")).unwrap(),
                event
            );
        }
    }

    #[test]
    fn a_transcript_delta_without_its_times_is_a_schema_error_naming_the_type() {
        let error =
            decode_live_server_event(r#"{"type":"session.output_transcript.delta","delta":"a"}"#)
                .unwrap_err();
        assert!(
            matches!(&error, DecodeError::Schema { event_type, .. } if event_type == "session.output_transcript.delta"),
            "{error}"
        );
    }

    #[test]
    fn a_session_snapshot_of_another_shape_still_starts_the_session() {
        let text = r#"{"type":"session.started","session":{"model":"gpt-live-1.1","audio":{"output":{"voice":42}},"input":"new"}}"#;
        match decode_live_server_event(text).unwrap() {
            LiveServerEvent::SessionStarted { session } => {
                assert_eq!(session.model, "gpt-live-1.1");
                assert_eq!(session.other["input"], "new");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_close_with_a_usage_walkie_cannot_read_is_still_a_close() {
        let text = r#"{"type":"session.closed","reason":"a_new_reason","session":{"x":1},"usage":{"seconds":"many"}}"#;
        assert_eq!(
            decode_live_server_event(text).unwrap(),
            LiveServerEvent::SessionClosed {
                reason: CloseReason::Other,
                usage: None
            }
        );
    }

    #[test]
    fn client_events_carry_their_id_and_a_required_null_delegation() {
        let text = LiveClientEvent::CommentaryAppend {
            content: "It is 10:42.".to_owned(),
            delegation_id: None,
        }
        .to_json(Some("evt_1"));
        assert_eq!(
            serde_json::from_str::<Value>(&text).unwrap(),
            serde_json::json!({
                "event_id": "evt_1",
                "type": "session.commentary.append",
                "content": "It is 10:42.",
                "delegation_id": null
            })
        );
        assert_eq!(
            decode_live_client_event(&text).unwrap(),
            (
                Some("evt_1".to_owned()),
                LiveClientEvent::CommentaryAppend {
                    content: "It is 10:42.".to_owned(),
                    delegation_id: None
                }
            )
        );
        assert_eq!(
            LiveClientEvent::Mute.to_json(None),
            r#"{"type":"session.input_audio.mute"}"#
        );
        assert!(matches!(
            decode_live_client_event(r#"{"type":"session.start","session":{}}"#),
            Err(DecodeError::UnknownClientEvent { .. })
        ));
    }

    #[test]
    fn a_call_body_holds_the_session_and_the_offer_as_the_sdk_shapes_them() {
        let body = LiveCreateRequest {
            session: LiveSessionConfig {
                model: "gpt-live-1.1".to_owned(),
                instructions: Some("Be brief.".to_owned()),
                audio: Some(LiveAudio {
                    output: Some(LiveAudioOutput {
                        voice: Some(LiveVoice::Named("marin".to_owned())),
                    }),
                    format: None,
                }),
                input: Some(vec![
                    InitialItem::message(InitialRole::User, "Hello"),
                    InitialItem::message(InitialRole::Assistant, "Hi!"),
                ]),
                wake_policy: Some(WakePolicy::default()),
                idle_timeout_s: Some(30),
                ..LiveSessionConfig::default()
            },
            transport: WebRtcTransport {
                sdp: "v=0\r\n".to_owned(),
            },
        };
        assert_eq!(
            serde_json::to_value(&body).unwrap(),
            serde_json::json!({
                "session": {
                    "model": "gpt-live-1.1",
                    "instructions": "Be brief.",
                    "audio": {"output": {"voice": "marin"}},
                    "input": [
                        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Hello"}]},
                        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Hi!"}]}
                    ],
                    "wake_policy": {"type": "speech"},
                    "idle_timeout_s": 30
                },
                "transport": {"type": "webrtc", "sdp": "v=0\r\n"}
            })
        );
        let answer: LiveCreateResponse = serde_json::from_str(
            r#"{"session":{"id":"live_1"},"transport":{"type":"webrtc","sdp":"v=0"}}"#,
        )
        .unwrap();
        assert_eq!(answer.session.id, "live_1");
    }
}
