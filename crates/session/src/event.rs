//! The session's event vocabulary: one Rust type per row of the spec's event table.
//!
//! Why these shapes: the first eight events are the ones a text agent's streaming run yields
//! (parts, tool activity, enqueued messages), so code that renders parts or logs tool calls works on
//! a session unchanged; the `Realtime*` events exist only in a live session. Every event is serde
//! with an `event_kind` discriminator named as in pydantic-ai, because the same values are written to
//! the journal and sent to the webview.
//!
//! Rare, large events are boxed so that [`SessionEvent`] stays small: the hot path moves audio
//! deltas, and each queued event is one enum value.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

pub use walkie_picture::Picture;

use crate::audio::{AudioChunk, WavSnapshot};

/// Identifies a part in the stream. Session-unique and monotonic, shared by the user and
/// assistant sides: it names a part, not a slot in a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct PartIndex(pub u32);

impl std::fmt::Display for PartIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// Who is speaking in a speech part.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Speaker {
    /// The person at the microphone.
    User,
    /// The model.
    Assistant,
}

/// The kind of a part, used in errors and for classification.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PartKind {
    /// A speech part (either speaker).
    Speech,
    /// A text part (text output modality).
    Text,
    /// A tool-call part.
    ToolCall,
}

/// A content part of the conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "part_kind", rename_all = "snake_case")]
pub enum Part {
    /// Speech of either speaker.
    Speech(SpeechPart),
    /// Text output.
    Text(TextPart),
    /// A complete tool call.
    ToolCall(Box<ToolCallPart>),
}

impl Part {
    /// This part's kind.
    pub fn kind(&self) -> PartKind {
        match self {
            Part::Speech(_) => PartKind::Speech,
            Part::Text(_) => PartKind::Text,
            Part::ToolCall(_) => PartKind::ToolCall,
        }
    }

    /// An empty speech part, as a speech part starts.
    pub fn speech(speaker: Speaker) -> Self {
        Part::Speech(SpeechPart::empty(speaker))
    }

    /// An empty text part, as a text part starts.
    pub fn text() -> Self {
        Part::Text(TextPart::default())
    }

    /// A tool-call part.
    pub fn tool_call(call: ToolCallPart) -> Self {
        Part::ToolCall(Box::new(call))
    }
}

/// Speech: the transcript so far (or final), and retained audio on a finished part.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpeechPart {
    /// Who speaks.
    pub speaker: Speaker,
    /// The transcript; `None` when there is none (empty, untranscribed or failed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transcript: Option<Arc<str>>,
    /// The whole part's audio, only on a finished part and only when retention is on. For saving;
    /// never play it (the deltas already carried every sample).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audio: Option<WavSnapshot>,
    /// Where playback was cut, relative to this part's audio, when the part was interrupted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interrupted_at_ms: Option<u64>,
}

impl SpeechPart {
    /// A speech part with nothing in it yet.
    pub fn empty(speaker: Speaker) -> Self {
        Self {
            speaker,
            transcript: None,
            audio: None,
            interrupted_at_ms: None,
        }
    }
}

/// Text output.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct TextPart {
    /// The text so far (empty at start, complete at end).
    pub content: String,
}

/// A call of a tool by the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCallPart {
    /// The tool's name.
    pub tool_name: String,
    /// Arguments as JSON text, as the model produced them.
    pub args: String,
    /// The provider's call id; a result names it.
    pub tool_call_id: String,
}

/// Incremental content of an open part.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "part_delta_kind", rename_all = "snake_case")]
pub enum PartDelta {
    /// Speech audio and/or transcript.
    Speech(SpeechPartDelta),
    /// Text content.
    Text(TextPartDelta),
}

impl PartDelta {
    /// The kind of part this delta belongs to.
    pub fn part_kind(&self) -> PartKind {
        match self {
            PartDelta::Speech(_) => PartKind::Speech,
            PartDelta::Text(_) => PartKind::Text,
        }
    }

    /// An audio-only assistant speech delta.
    pub fn assistant_audio(chunk: AudioChunk) -> Self {
        PartDelta::Speech(SpeechPartDelta {
            speaker: Speaker::Assistant,
            transcript_delta: None,
            transcript: None,
            audio_chunk: Some(chunk),
        })
    }

    /// A transcript delta: the appended text and the whole transcript so far.
    pub fn transcript(speaker: Speaker, appended: Arc<str>, transcript_so_far: Arc<str>) -> Self {
        PartDelta::Speech(SpeechPartDelta {
            speaker,
            transcript_delta: Some(appended),
            transcript: Some(transcript_so_far),
            audio_chunk: None,
        })
    }
}

/// A speech delta: an audio chunk for live playback and/or a transcript update.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpeechPartDelta {
    /// Who speaks (so a delta renders without its start).
    pub speaker: Speaker,
    /// The appended transcript text; `""` on a revision.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transcript_delta: Option<Arc<str>>,
    /// The whole transcript so far: render this, replacing, not appending.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transcript: Option<Arc<str>>,
    /// Live PCM16 audio. This is what gets played.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audio_chunk: Option<AudioChunk>,
}

/// A text delta.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TextPartDelta {
    /// The appended text.
    pub content_delta: Arc<str>,
}

/// A part started.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PartStartEvent {
    /// The new part's index.
    pub index: PartIndex,
    /// The part as it starts (empty speech/text, or the complete tool call).
    pub part: Part,
}

/// Incremental content for an open part.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PartDeltaEvent {
    /// The part this delta belongs to.
    pub index: PartIndex,
    /// The content.
    pub delta: PartDelta,
}

/// A part finished; retained speech audio appears here, never at the start.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PartEndEvent {
    /// The finished part's index.
    pub index: PartIndex,
    /// The final part.
    pub part: Part,
}

/// A local function tool started executing (its arguments were validated).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionToolCallEvent {
    /// The call.
    pub part: ToolCallPart,
    /// Whether the arguments validated, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args_valid: Option<bool>,
}

/// How a tool call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolOutcome {
    /// The tool returned.
    Success,
    /// The tool failed, or a refused approval or external call.
    Failed,
    /// The call was denied.
    Denied,
    /// Cut off: cancelled by the provider or lost to a reconnect.
    Interrupted,
}

/// A tool's return value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolReturnPart {
    /// The tool's name.
    pub tool_name: String,
    /// The call this answers.
    pub tool_call_id: String,
    /// The returned content.
    pub content: serde_json::Value,
    /// How the call ended.
    pub outcome: ToolOutcome,
}

/// A retry prompt sent back to the model instead of a return value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RetryPromptPart {
    /// The tool's name.
    pub tool_name: String,
    /// The call this answers.
    pub tool_call_id: String,
    /// What the model should fix.
    pub content: String,
}

/// A tool call's result: completed, or a retry prompt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "part_kind", rename_all = "kebab-case")]
pub enum ToolResult {
    /// `tool-return`: the call completed (with an outcome).
    ToolReturn(ToolReturnPart),
    /// `retry-prompt`: the model is asked to try again.
    RetryPrompt(RetryPromptPart),
}

impl ToolResult {
    /// The call this result answers.
    pub fn tool_call_id(&self) -> &str {
        match self {
            ToolResult::ToolReturn(part) => &part.tool_call_id,
            ToolResult::RetryPrompt(part) => &part.tool_call_id,
        }
    }
}

/// A local function tool completed or returned a retry prompt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionToolResultEvent {
    /// The result.
    pub result: ToolResult,
}

/// Calls that need approval or external execution.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct DeferredToolRequests {
    /// Calls waiting for an approval.
    #[serde(default)]
    pub approvals: Vec<ToolCallPart>,
    /// Calls executed outside the session.
    #[serde(default)]
    pub calls: Vec<ToolCallPart>,
}

/// The decision on an approval-gated call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ToolApproval {
    /// Run the call.
    Approved,
    /// Do not run it; tell the model why.
    Denied {
        /// The explanation for the model.
        message: String,
    },
}

/// Resolutions of deferred calls, keyed by tool call id.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct DeferredToolResults {
    /// Approval decisions.
    #[serde(default)]
    pub approvals: BTreeMap<String, ToolApproval>,
    /// Results of externally executed calls.
    #[serde(default)]
    pub calls: BTreeMap<String, serde_json::Value>,
}

/// An inline capability handler resolved deferred requests.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeferredToolRequestsEvent {
    /// The requests.
    pub requests: DeferredToolRequests,
}

/// Inline deferred results are ready for normal tool processing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeferredToolResultsEvent {
    /// The results.
    pub results: DeferredToolResults,
}

/// One piece of user content delivered into the history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum UserContent {
    /// Plain text.
    Text {
        /// The text.
        content: String,
    },
    /// A picture the user showed (as JSON: its size, not its bytes).
    Image(Picture),
}

/// A request message recorded in history from enqueued content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EnqueuedMessage {
    /// The content delivered.
    pub parts: Vec<UserContent>,
}

/// Enqueued content was delivered into the session history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EnqueuedMessagesEvent {
    /// The id returned when the content was enqueued.
    pub enqueue_id: String,
    /// The messages recorded in history.
    pub messages: Vec<EnqueuedMessage>,
}

/// The provider detected that the user started speaking.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct RealtimeInputSpeechStartEvent {
    /// The provider's item for this utterance.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub item_id: Option<String>,
}

/// The provider detected the end of user speech.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct RealtimeInputSpeechEndEvent {
    /// The provider's item for this utterance.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub item_id: Option<String>,
}

/// One user turn could not be transcribed; the session is still usable.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RealtimeInputTranscriptionErrorEvent {
    /// The provider's message.
    pub message: String,
    /// The provider's error type.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub error_type: Option<String>,
    /// The provider's error code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// The item whose transcription failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub item_id: Option<String>,
    /// The content index within that item.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_index: Option<u32>,
}

/// The connection was re-established automatically.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RealtimeSessionReconnectEvent {
    /// Whether in-flight state survived the reconnect.
    pub state_restored: bool,
}

/// A provider error. Recoverable ones are events; a fatal one becomes a [`crate::SessionFailure`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RealtimeSessionErrorEvent {
    /// The provider's message.
    pub message: String,
    /// The provider's error type.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub error_type: Option<String>,
    /// The provider's error code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// Whether the session is still usable.
    #[serde(default = "recoverable_by_default")]
    pub recoverable: bool,
}

fn recoverable_by_default() -> bool {
    true
}

/// Every event the session stream carries.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event_kind", rename_all = "snake_case")]
pub enum SessionEvent {
    /// `PartStartEvent`: a speech, text or tool part started.
    PartStart(PartStartEvent),
    /// `PartDeltaEvent`: incremental speech audio / transcript or text content.
    PartDelta(PartDeltaEvent),
    /// `PartEndEvent`: a completed part.
    PartEnd(PartEndEvent),
    /// `FunctionToolCallEvent`: a local function tool started executing.
    FunctionToolCall(Box<FunctionToolCallEvent>),
    /// `FunctionToolResultEvent`: a local function tool completed or returned a retry prompt.
    FunctionToolResult(Box<FunctionToolResultEvent>),
    /// `DeferredToolRequestsEvent`.
    DeferredToolRequests(Box<DeferredToolRequestsEvent>),
    /// `DeferredToolResultsEvent`.
    DeferredToolResults(Box<DeferredToolResultsEvent>),
    /// `EnqueuedMessagesEvent`.
    EnqueuedMessages(Box<EnqueuedMessagesEvent>),
    /// `RealtimeInputSpeechStartEvent`.
    #[serde(rename = "realtime_input_speech_start")]
    InputSpeechStart(Box<RealtimeInputSpeechStartEvent>),
    /// `RealtimeInputSpeechEndEvent`.
    #[serde(rename = "realtime_input_speech_end")]
    InputSpeechEnd(Box<RealtimeInputSpeechEndEvent>),
    /// `RealtimeResponseInterruptedEvent`: the provider cut the response short.
    #[serde(rename = "realtime_response_interrupted")]
    ResponseInterrupted,
    /// `RealtimeInputTranscriptionErrorEvent`.
    #[serde(rename = "realtime_input_transcription_error")]
    InputTranscriptionError(Box<RealtimeInputTranscriptionErrorEvent>),
    /// `RealtimeOutputSpeechStartEvent`: the model became audible.
    #[serde(rename = "realtime_output_speech_start")]
    OutputSpeechStart,
    /// `RealtimeOutputSpeechEndEvent`: the model stopped being audible.
    #[serde(rename = "realtime_output_speech_end")]
    OutputSpeechEnd,
    /// `RealtimeTurnCompleteEvent`: the model finished and no tool is active. Only the session
    /// emits it.
    #[serde(rename = "realtime_turn_complete")]
    TurnComplete,
    /// `RealtimeSessionReconnectEvent`.
    #[serde(rename = "realtime_session_reconnect")]
    SessionReconnect(RealtimeSessionReconnectEvent),
    /// `RealtimeSessionErrorEvent` (recoverable).
    #[serde(rename = "realtime_session_error")]
    SessionError(Box<RealtimeSessionErrorEvent>),
}

impl SessionEvent {
    /// The part index for part events.
    pub fn part_index(&self) -> Option<PartIndex> {
        match self {
            SessionEvent::PartStart(e) => Some(e.index),
            SessionEvent::PartDelta(e) => Some(e.index),
            SessionEvent::PartEnd(e) => Some(e.index),
            _ => None,
        }
    }

    /// The `event_kind` name, as serialized.
    pub fn kind_name(&self) -> &'static str {
        match self {
            SessionEvent::PartStart(_) => "part_start",
            SessionEvent::PartDelta(_) => "part_delta",
            SessionEvent::PartEnd(_) => "part_end",
            SessionEvent::FunctionToolCall(_) => "function_tool_call",
            SessionEvent::FunctionToolResult(_) => "function_tool_result",
            SessionEvent::DeferredToolRequests(_) => "deferred_tool_requests",
            SessionEvent::DeferredToolResults(_) => "deferred_tool_results",
            SessionEvent::EnqueuedMessages(_) => "enqueued_messages",
            SessionEvent::InputSpeechStart(_) => "realtime_input_speech_start",
            SessionEvent::InputSpeechEnd(_) => "realtime_input_speech_end",
            SessionEvent::ResponseInterrupted => "realtime_response_interrupted",
            SessionEvent::InputTranscriptionError(_) => "realtime_input_transcription_error",
            SessionEvent::OutputSpeechStart => "realtime_output_speech_start",
            SessionEvent::OutputSpeechEnd => "realtime_output_speech_end",
            SessionEvent::TurnComplete => "realtime_turn_complete",
            SessionEvent::SessionReconnect(_) => "realtime_session_reconnect",
            SessionEvent::SessionError(_) => "realtime_session_error",
        }
    }
}

/// An event as delivered: its place in the stream and the session time it was produced at.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StampedEvent {
    /// Position in the session's stream; strictly increasing, gaps mean something was dropped.
    pub seq: u64,
    /// Session time (milliseconds, caller's clock) when the event was produced.
    pub at_ms: u64,
    /// The event.
    #[serde(flatten)]
    pub event: SessionEvent,
}
