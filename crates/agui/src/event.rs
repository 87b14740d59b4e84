//! AG-UI events as they travel on the wire, decoded strictly enough to report *which* field is
//! wrong.
//!
//! Decoding goes through `serde_json::Value` by hand rather than through derived `Deserialize`
//! because the protocol needs three things serde's defaults do not give: an explicit `null` on an
//! optional field is a schema error (serde maps it to `None`), a bad field must be named in the
//! violation (the conformance file checks `field`), and an unknown event type must pass through
//! instead of failing the stream. (From text, the per-token events take a faster way that only
//! ever accepts what this decoder accepts: `text_event`.) Encoding is derived: camelCase fields,
//! `type` in SCREAMING_SNAKE_CASE, optional fields omitted.

use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use crate::message::Message;
use crate::text_event::TextEvent;

/// A JSON object: the shape of `metadata` and of unknown events.
pub type JsonObject = Map<String, Value>;

/// The largest integer JavaScript represents exactly, the bound AG-UI 1.0 puts on `timestamp`.
pub const MAX_SAFE_INTEGER: i64 = (1 << 53) - 1;

/// The role of a text message. `tool` is deliberately absent: tool output travels as
/// TOOL_CALL_RESULT, so a text event claiming it is a schema error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Developer,
    System,
    Assistant,
    User,
}

impl Role {
    /// The wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Developer => "developer",
            Role::System => "system",
            Role::Assistant => "assistant",
            Role::User => "user",
        }
    }

    /// Parses the wire spelling; `None` for anything that is not a text-message role.
    pub fn parse(text: &str) -> Option<Role> {
        match text {
            "developer" => Some(Role::Developer),
            "system" => Some(Role::System),
            "assistant" => Some(Role::Assistant),
            "user" => Some(Role::User),
            _ => None,
        }
    }
}

/// `RUN_STARTED`: a run begins; the stream's per-run bookkeeping resets.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunStarted {
    pub thread_id: String,
    pub run_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent_run_id: Option<String>,
    /// The run's input echoed back; only its `messages` matter to text messages.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input: Option<RunInput>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub protocol_version: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub raw_event: Option<Box<Value>>,
}

/// The part of `RunAgentInput` this crate reads (history seeded into the conversation), plus
/// everything else kept verbatim so re-encoding loses nothing.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunInput {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub messages: Vec<Message>,
    #[serde(flatten)]
    pub rest: JsonObject,
}

/// `RUN_FINISHED`: the run ended normally; every message it opened must be closed by now.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunFinished {
    pub thread_id: String,
    pub run_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outcome: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub raw_event: Option<Box<Value>>,
}

/// `RUN_ERROR`: the run failed; messages it left open keep their partial text.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunError {
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub raw_event: Option<Box<Value>>,
}

/// `TEXT_MESSAGE_START`: opens (or reopens) a message.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TextMessageStart {
    pub message_id: String,
    /// Absent means `assistant`; kept as sent so re-encoding is faithful.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub role: Option<Role>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The subagent that produced this event; absent means the parent agent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subagent_run_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata: Option<JsonObject>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub raw_event: Option<Box<Value>>,
}

/// `TEXT_MESSAGE_CONTENT`: appends `delta` (possibly empty) to an open message.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TextMessageContent {
    pub message_id: String,
    pub delta: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subagent_run_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata: Option<JsonObject>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub raw_event: Option<Box<Value>>,
}

/// `TEXT_MESSAGE_END`: closes a message (closed, not sealed: it may be reopened).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TextMessageEnd {
    pub message_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subagent_run_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata: Option<JsonObject>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub raw_event: Option<Box<Value>>,
}

/// `TEXT_MESSAGE_CHUNK`: the compact spelling, expanded by [`crate::ChunkExpander`].
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TextMessageChunk {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub role: Option<Role>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delta: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subagent_run_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata: Option<JsonObject>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub raw_event: Option<Box<Value>>,
}

/// `MESSAGES_SNAPSHOT`: the complete history, restating messages wholesale.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MessagesSnapshot {
    pub messages: Vec<Message>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub raw_event: Option<Box<Value>>,
}

/// How an event outside the text-message family takes part in the stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OtherKind {
    /// A known AG-UI event that closes a pending chunk stream in its own lane (CUSTOM, STEP_*,
    /// TOOL_CALL_*, STATE_*, REASONING_*…).
    ClosesOwnLane,
    /// SUBAGENT_FINISHED / SUBAGENT_ERROR: closes the named subagent's lane.
    ClosesSubagentLane,
    /// A known event that leaves chunk streams alone (RAW, ACTIVITY_*, SUBAGENT_STARTED…).
    PassThrough,
    /// A type this crate does not know: passed through untouched, ignored by the verifier.
    Unknown,
}

impl OtherKind {
    /// Classifies an event type name (AG-UI 1.0 vocabulary).
    pub fn of(type_name: &str) -> OtherKind {
        match type_name {
            "TOOL_CALL_START"
            | "TOOL_CALL_ARGS"
            | "TOOL_CALL_END"
            | "TOOL_CALL_RESULT"
            | "TOOL_CALL_CHUNK"
            | "STATE_SNAPSHOT"
            | "STATE_DELTA"
            | "CUSTOM"
            | "STEP_STARTED"
            | "STEP_FINISHED"
            | "REASONING_START"
            | "REASONING_MESSAGE_START"
            | "REASONING_MESSAGE_CONTENT"
            | "REASONING_MESSAGE_END"
            | "REASONING_MESSAGE_CHUNK"
            | "REASONING_END" => OtherKind::ClosesOwnLane,
            "SUBAGENT_FINISHED" | "SUBAGENT_ERROR" => OtherKind::ClosesSubagentLane,
            "RAW"
            | "ACTIVITY_SNAPSHOT"
            | "ACTIVITY_DELTA"
            | "REASONING_ENCRYPTED_VALUE"
            | "SUBAGENT_STARTED" => OtherKind::PassThrough,
            _ => OtherKind::Unknown,
        }
    }
}

/// Any event outside the text-message family, kept verbatim so it can be forwarded unchanged.
#[derive(Debug, Clone, PartialEq)]
pub struct OtherEvent {
    pub type_name: String,
    pub kind: OtherKind,
    pub subagent_run_id: Option<String>,
    /// The whole object as received, `type` included.
    pub raw: JsonObject,
}

impl OtherEvent {
    /// A known event of `type_name` (one of AG-UI's, say `TOOL_CALL_START`) with `fields`
    /// besides its `type`.
    pub fn new(type_name: &str, fields: JsonObject) -> OtherEvent {
        let mut raw = JsonObject::new();
        raw.insert("type".into(), Value::from(type_name));
        raw.extend(fields);
        OtherEvent {
            type_name: type_name.to_owned(),
            kind: OtherKind::of(type_name),
            subagent_run_id: None,
            raw,
        }
    }

    /// A string field of the event, if it has one.
    pub fn string(&self, field: &str) -> Option<&str> {
        self.raw.get(field).and_then(Value::as_str)
    }
}

impl Serialize for OtherEvent {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.raw.len()))?;
        for (key, value) in &self.raw {
            map.serialize_entry(key, value)?;
        }
        map.end()
    }
}

/// One AG-UI event.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "SCREAMING_SNAKE_CASE")]
///
/// The per-token events (START / CONTENT / END) are stored inline; the rare or large ones are
/// boxed, which keeps an `Event` small enough that a long stream of them stays cache-friendly.
pub enum Event {
    RunStarted(Box<RunStarted>),
    RunFinished(Box<RunFinished>),
    RunError(Box<RunError>),
    TextMessageStart(TextMessageStart),
    TextMessageContent(TextMessageContent),
    TextMessageEnd(TextMessageEnd),
    TextMessageChunk(Box<TextMessageChunk>),
    MessagesSnapshot(Box<MessagesSnapshot>),
    #[serde(untagged)]
    Other(Box<OtherEvent>),
}

impl Event {
    /// The wire `type` of this event.
    pub fn type_name(&self) -> &str {
        match self {
            Event::RunStarted(_) => "RUN_STARTED",
            Event::RunFinished(_) => "RUN_FINISHED",
            Event::RunError(_) => "RUN_ERROR",
            Event::TextMessageStart(_) => "TEXT_MESSAGE_START",
            Event::TextMessageContent(_) => "TEXT_MESSAGE_CONTENT",
            Event::TextMessageEnd(_) => "TEXT_MESSAGE_END",
            Event::TextMessageChunk(_) => "TEXT_MESSAGE_CHUNK",
            Event::MessagesSnapshot(_) => "MESSAGES_SNAPSHOT",
            Event::Other(other) => &other.type_name,
        }
    }

    /// Decodes one event from its JSON text.
    pub fn from_json_str(text: &str) -> Result<Event, SchemaError> {
        if let Some(event) = TextEvent::parse(text) {
            return Ok(event.into_event());
        }
        let value: Value = serde_json::from_str(text).map_err(|error| SchemaError {
            field: None,
            message: format!("the event is not valid JSON: {error}"),
        })?;
        Event::from_value(&value)
    }

    /// Decodes one event from a JSON value, naming the offending field on failure.
    pub fn from_value(value: &Value) -> Result<Event, SchemaError> {
        let Some(object) = value.as_object() else {
            return Err(SchemaError::new(None, "an event must be a JSON object"));
        };
        let type_name = match object.get("type") {
            Some(Value::String(name)) => name.as_str(),
            Some(_) => return Err(SchemaError::new(Some("type"), "`type` must be a string")),
            None => return Err(SchemaError::new(Some("type"), "the event has no `type`")),
        };
        let fields = Fields { object, type_name };
        fields.reject_null_subagent()?;
        let event = match type_name {
            "RUN_STARTED" => Event::RunStarted(Box::new(RunStarted {
                thread_id: fields.required_string("threadId")?,
                run_id: fields.required_string("runId")?,
                parent_run_id: fields.optional_string("parentRunId")?,
                input: fields.run_input()?,
                protocol_version: fields.optional_string("protocolVersion")?,
                timestamp: fields.timestamp()?,
                raw_event: fields.raw_event()?,
            })),
            "RUN_FINISHED" => Event::RunFinished(Box::new(RunFinished {
                thread_id: fields.required_string("threadId")?,
                run_id: fields.required_string("runId")?,
                result: fields.optional_non_null("result")?,
                outcome: fields.optional_object_value("outcome")?,
                usage: fields.optional_array_value("usage")?,
                timestamp: fields.timestamp()?,
                raw_event: fields.raw_event()?,
            })),
            "RUN_ERROR" => Event::RunError(Box::new(RunError {
                message: fields.required_string("message")?,
                code: fields.optional_string("code")?,
                usage: fields.optional_array_value("usage")?,
                timestamp: fields.timestamp()?,
                raw_event: fields.raw_event()?,
            })),
            "TEXT_MESSAGE_START" => Event::TextMessageStart(TextMessageStart {
                message_id: fields.required_string("messageId")?,
                role: fields.role()?,
                name: fields.optional_string("name")?,
                subagent_run_id: fields.optional_string("subagentRunId")?,
                metadata: fields.metadata()?,
                timestamp: fields.timestamp()?,
                raw_event: fields.raw_event()?,
            }),
            "TEXT_MESSAGE_CONTENT" => Event::TextMessageContent(TextMessageContent {
                message_id: fields.required_string("messageId")?,
                delta: fields.required_string("delta")?,
                subagent_run_id: fields.optional_string("subagentRunId")?,
                metadata: fields.metadata()?,
                timestamp: fields.timestamp()?,
                raw_event: fields.raw_event()?,
            }),
            "TEXT_MESSAGE_END" => Event::TextMessageEnd(TextMessageEnd {
                message_id: fields.required_string("messageId")?,
                subagent_run_id: fields.optional_string("subagentRunId")?,
                metadata: fields.metadata()?,
                timestamp: fields.timestamp()?,
                raw_event: fields.raw_event()?,
            }),
            "TEXT_MESSAGE_CHUNK" => Event::TextMessageChunk(Box::new(TextMessageChunk {
                message_id: fields.optional_string("messageId")?,
                role: fields.role()?,
                name: fields.optional_string("name")?,
                delta: fields.optional_string("delta")?,
                subagent_run_id: fields.optional_string("subagentRunId")?,
                metadata: fields.metadata()?,
                timestamp: fields.timestamp()?,
                raw_event: fields.raw_event()?,
            })),
            "MESSAGES_SNAPSHOT" => Event::MessagesSnapshot(Box::new(MessagesSnapshot {
                messages: fields.messages("messages")?.ok_or_else(|| {
                    SchemaError::new(Some("messages"), "MESSAGES_SNAPSHOT needs `messages`")
                })?,
                timestamp: fields.timestamp()?,
                raw_event: fields.raw_event()?,
            })),
            other => {
                let kind = OtherKind::of(other);
                let subagent_run_id = if kind == OtherKind::Unknown {
                    None
                } else {
                    fields.timestamp()?;
                    fields.raw_event()?;
                    fields.tool_call_fields()?;
                    fields.optional_string("subagentRunId")?
                };
                Event::Other(Box::new(OtherEvent {
                    type_name: other.to_owned(),
                    kind,
                    subagent_run_id,
                    raw: object.clone(),
                }))
            }
        };
        Ok(event)
    }
}

impl<'de> Deserialize<'de> for Event {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Event, D::Error> {
        let value = Value::deserialize(deserializer)?;
        Event::from_value(&value).map_err(serde::de::Error::custom)
    }
}

/// A `timestamp` as AG-UI 1.0 bounds it: an integer within ±[`MAX_SAFE_INTEGER`].
pub(crate) fn checked_timestamp(number: &serde_json::Number) -> Option<i64> {
    // JSON has one number type: `1.0` is the integer 1 to a JavaScript producer.
    let integer = match number.as_i64() {
        Some(integer) => integer,
        None => match number.as_f64() {
            Some(float) if float.fract() == 0.0 && float.abs() <= MAX_SAFE_INTEGER as f64 => {
                float as i64
            }
            _ => return None,
        },
    };
    (integer.unsigned_abs() <= MAX_SAFE_INTEGER.unsigned_abs()).then_some(integer)
}

/// A known field of an event is missing, `null`, or of the wrong shape.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct SchemaError {
    /// The offending field (camelCase, as on the wire), when one field is to blame.
    pub field: Option<String>,
    /// What is wrong, in words.
    pub message: String,
}

impl SchemaError {
    pub(crate) fn new(field: Option<&str>, message: impl Into<String>) -> SchemaError {
        SchemaError {
            field: field.map(str::to_owned),
            message: message.into(),
        }
    }
}

/// Typed access to one event object's fields, each failure naming its field.
struct Fields<'a> {
    object: &'a JsonObject,
    type_name: &'a str,
}

impl<'a> Fields<'a> {
    fn null_error(&self, field: &str) -> SchemaError {
        SchemaError::new(
            Some(field),
            format!(
                "'{}' carries '{field}: null'; optional fields are omitted, never null",
                self.type_name
            ),
        )
    }

    fn reject_null_subagent(&self) -> Result<(), SchemaError> {
        if matches!(self.object.get("subagentRunId"), Some(Value::Null)) {
            return Err(SchemaError::new(
                Some("subagentRunId"),
                format!(
                    "Cannot send '{}' with 'subagentRunId: null'. The field is optional — omit it entirely.",
                    self.type_name
                ),
            ));
        }
        Ok(())
    }

    /// The field's value when present and not null; `Err` for an explicit null.
    fn present(&self, field: &str) -> Result<Option<&'a Value>, SchemaError> {
        match self.object.get(field) {
            None => Ok(None),
            Some(Value::Null) => Err(self.null_error(field)),
            Some(value) => Ok(Some(value)),
        }
    }

    fn required_string(&self, field: &str) -> Result<String, SchemaError> {
        match self.object.get(field) {
            Some(Value::String(text)) => Ok(text.clone()),
            None | Some(Value::Null) => Err(SchemaError::new(
                Some(field),
                format!("'{}' needs `{field}` (a string)", self.type_name),
            )),
            Some(_) => Err(SchemaError::new(
                Some(field),
                format!("`{field}` of '{}' must be a string", self.type_name),
            )),
        }
    }

    fn optional_string(&self, field: &str) -> Result<Option<String>, SchemaError> {
        match self.present(field)? {
            None => Ok(None),
            Some(Value::String(text)) => Ok(Some(text.clone())),
            Some(_) => Err(SchemaError::new(
                Some(field),
                format!("`{field}` of '{}' must be a string", self.type_name),
            )),
        }
    }

    fn optional_non_null(&self, field: &str) -> Result<Option<Value>, SchemaError> {
        Ok(self.present(field)?.cloned())
    }

    fn optional_object_value(&self, field: &str) -> Result<Option<Value>, SchemaError> {
        match self.present(field)? {
            None => Ok(None),
            Some(value @ Value::Object(_)) => Ok(Some(value.clone())),
            Some(_) => Err(SchemaError::new(
                Some(field),
                format!("`{field}` must be an object"),
            )),
        }
    }

    fn optional_array_value(&self, field: &str) -> Result<Option<Value>, SchemaError> {
        match self.present(field)? {
            None => Ok(None),
            Some(value @ Value::Array(_)) => Ok(Some(value.clone())),
            Some(_) => Err(SchemaError::new(
                Some(field),
                format!("`{field}` must be an array"),
            )),
        }
    }

    fn role(&self) -> Result<Option<Role>, SchemaError> {
        match self.present("role")? {
            None => Ok(None),
            Some(Value::String(text)) => Role::parse(text).map(Some).ok_or_else(|| {
                SchemaError::new(
                    Some("role"),
                    format!(
                        "role '{text}' is not a text-message role (developer, system, assistant or user)"
                    ),
                )
            }),
            Some(_) => Err(SchemaError::new(Some("role"), "`role` must be a string")),
        }
    }

    fn metadata(&self) -> Result<Option<JsonObject>, SchemaError> {
        match self.present("metadata")? {
            None => Ok(None),
            Some(Value::Object(object)) => Ok(Some(object.clone())),
            Some(_) => Err(SchemaError::new(
                Some("metadata"),
                "`metadata` must be an object",
            )),
        }
    }

    fn raw_event(&self) -> Result<Option<Box<Value>>, SchemaError> {
        Ok(self.optional_non_null("rawEvent")?.map(Box::new))
    }

    fn timestamp(&self) -> Result<Option<i64>, SchemaError> {
        let Some(value) = self.present("timestamp")? else {
            return Ok(None);
        };
        let not_integer = || {
            SchemaError::new(
                Some("timestamp"),
                format!("`timestamp` must be an integer within ±{MAX_SAFE_INTEGER}, got {value}"),
            )
        };
        let Value::Number(number) = value else {
            return Err(not_integer());
        };
        checked_timestamp(number).map(Some).ok_or_else(not_integer)
    }

    fn messages(&self, field: &str) -> Result<Option<Vec<Message>>, SchemaError> {
        match self.present(field)? {
            None => Ok(None),
            Some(Value::Array(items)) => items
                .iter()
                .map(|item| {
                    Message::from_value(item).map_err(|error| {
                        SchemaError::new(Some(field), format!("`{field}`: {}", error.message))
                    })
                })
                .collect::<Result<Vec<_>, _>>()
                .map(Some),
            Some(_) => Err(SchemaError::new(
                Some(field),
                format!("`{field}` must be an array"),
            )),
        }
    }

    /// The fields a TOOL_CALL_* event needs to be applied (AG-UI 1.0): the call's id, and the
    /// start's tool name, the arguments' delta, the result's message id and content (a string
    /// or an array of parts); a result's `role`, when present, is `tool`.
    fn tool_call_fields(&self) -> Result<(), SchemaError> {
        let required: &[&str] = match self.type_name {
            "TOOL_CALL_START" => &["toolCallId", "toolCallName"],
            "TOOL_CALL_ARGS" => &["toolCallId", "delta"],
            "TOOL_CALL_END" => &["toolCallId"],
            "TOOL_CALL_RESULT" => &["messageId", "toolCallId"],
            _ => return Ok(()),
        };
        for field in required {
            self.required_string(field)?;
        }
        match self.type_name {
            "TOOL_CALL_START" => {
                self.optional_string("parentMessageId")?;
            }
            "TOOL_CALL_RESULT" => {
                match self.object.get("content") {
                    Some(Value::String(_) | Value::Array(_)) => {}
                    _ => {
                        return Err(SchemaError::new(
                            Some("content"),
                            "'TOOL_CALL_RESULT' needs `content` (a string or an array of parts)",
                        ));
                    }
                }
                if let Some(role) = self.optional_string("role")?
                    && role != "tool"
                {
                    return Err(SchemaError::new(
                        Some("role"),
                        format!("the role of a 'TOOL_CALL_RESULT' is 'tool', not '{role}'"),
                    ));
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn run_input(&self) -> Result<Option<RunInput>, SchemaError> {
        let Some(value) = self.present("input")? else {
            return Ok(None);
        };
        let Value::Object(object) = value else {
            return Err(SchemaError::new(Some("input"), "`input` must be an object"));
        };
        let nested = Fields {
            object,
            type_name: self.type_name,
        };
        let messages = nested.messages("messages").map_err(|error| SchemaError {
            field: Some("input".into()),
            message: format!("`input`: {}", error.message),
        })?;
        let mut rest = object.clone();
        rest.remove("messages");
        Ok(Some(RunInput {
            messages: messages.unwrap_or_default(),
            rest,
        }))
    }
}
