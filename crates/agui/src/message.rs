//! Messages of the conversation history, typed by role as the AG-UI schema types them.
//!
//! Each text role gets its own type (AssistantMessage, UserMessage, SystemMessage,
//! DeveloperMessage) so code that handles history cannot confuse who spoke. A message that is not a
//! plain text message (a tool, activity or reasoning message, or one whose content is not a
//! string) can only arrive through a snapshot; it is kept verbatim as [`OtherMessage`] so a
//! snapshot restated to the webview loses nothing.

use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};
use serde_json::Value;

use crate::event::{JsonObject, Role, SchemaError};

/// Text capacity reserved when a message opens. A spoken sentence transcribes to a few hundred
/// bytes, so most messages then never reallocate while their deltas stream in.
pub const INITIAL_TEXT_CAPACITY_BYTES: usize = 256;

macro_rules! text_message_type {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Default)]
        pub struct $name {
            pub id: String,
            /// The text, exactly as the deltas concatenated (never trimmed or normalised).
            pub content: String,
            /// The speaker's label within the role, when the opener gave one.
            pub name: Option<String>,
            /// Per-key merge of every metadata object the message's events carried.
            pub metadata: Option<JsonObject>,
            /// The subagent that opened the message; absent means the parent agent.
            pub subagent_run_id: Option<String>,
            /// Fields a snapshot carried that text events never set (`toolCalls`,
            /// `encryptedValue`, newer fields), kept so a restatement round-trips.
            pub extra: JsonObject,
        }
    };
}

text_message_type!(
    /// A message with role `assistant`.
    AssistantMessage
);
text_message_type!(
    /// A message with role `user`.
    UserMessage
);
text_message_type!(
    /// A message with role `system`.
    SystemMessage
);
text_message_type!(
    /// A message with role `developer`.
    DeveloperMessage
);

/// A history message that text events do not build: tool/activity/reasoning messages, or a text
/// role whose `content` is not a plain string. Kept as the snapshot gave it.
#[derive(Debug, Clone, PartialEq)]
pub struct OtherMessage {
    pub id: String,
    pub role: String,
    pub subagent_run_id: Option<String>,
    /// The whole object, `id` and `role` included.
    pub raw: JsonObject,
}

/// One message in the conversation history.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    Assistant(AssistantMessage),
    User(UserMessage),
    System(SystemMessage),
    Developer(DeveloperMessage),
    Other(OtherMessage),
}

/// Mutable views of the fields every text message has, whatever its role.
pub(crate) struct TextFieldsMut<'a> {
    pub content: &'a mut String,
    pub metadata: &'a mut Option<JsonObject>,
}

macro_rules! on_text_message {
    ($message:expr, $bound:ident => $body:expr, $other:ident => $otherwise:expr) => {
        match $message {
            Message::Assistant($bound) => $body,
            Message::User($bound) => $body,
            Message::System($bound) => $body,
            Message::Developer($bound) => $body,
            Message::Other($other) => $otherwise,
        }
    };
}

impl Message {
    /// A fresh, empty text message as a TEXT_MESSAGE_START creates it.
    pub fn new_text(
        id: &str,
        role: Role,
        name: Option<&str>,
        subagent_run_id: Option<&str>,
    ) -> Message {
        macro_rules! build {
            ($variant:ident, $ty:ident) => {
                Message::$variant($ty {
                    id: id.to_owned(),
                    content: String::with_capacity(INITIAL_TEXT_CAPACITY_BYTES),
                    name: name.map(str::to_owned),
                    metadata: None,
                    subagent_run_id: subagent_run_id.map(str::to_owned),
                    extra: JsonObject::new(),
                })
            };
        }
        match role {
            Role::Assistant => build!(Assistant, AssistantMessage),
            Role::User => build!(User, UserMessage),
            Role::System => build!(System, SystemMessage),
            Role::Developer => build!(Developer, DeveloperMessage),
        }
    }

    pub fn id(&self) -> &str {
        on_text_message!(self, m => &m.id, other => &other.id)
    }

    /// The text role, or `None` for an [`OtherMessage`].
    pub fn role(&self) -> Option<Role> {
        match self {
            Message::Assistant(_) => Some(Role::Assistant),
            Message::User(_) => Some(Role::User),
            Message::System(_) => Some(Role::System),
            Message::Developer(_) => Some(Role::Developer),
            Message::Other(_) => None,
        }
    }

    /// The wire spelling of the role, for every kind of message.
    pub fn role_name(&self) -> &str {
        match self {
            Message::Other(other) => &other.role,
            text => text.role().map_or("", Role::as_str),
        }
    }

    /// The text of a text message (`None` for an [`OtherMessage`]).
    pub fn content(&self) -> Option<&str> {
        on_text_message!(self, m => Some(&m.content), _other => None)
    }

    pub fn name(&self) -> Option<&str> {
        on_text_message!(self, m => m.name.as_deref(), other => other.raw.get("name").and_then(Value::as_str))
    }

    pub fn subagent_run_id(&self) -> Option<&str> {
        on_text_message!(self, m => m.subagent_run_id.as_deref(), other => other.subagent_run_id.as_deref())
    }

    pub fn metadata(&self) -> Option<&JsonObject> {
        on_text_message!(self, m => m.metadata.as_ref(), other => other.raw.get("metadata").and_then(Value::as_object))
    }

    /// A field of the message that its typed fields do not hold (`toolCalls`, a tool
    /// message's `toolCallId` or `content`…), as the wire has it.
    pub fn field(&self, name: &str) -> Option<&Value> {
        on_text_message!(self, m => m.extra.get(name), other => other.raw.get(name))
    }

    /// The fields [`Message::field`] reads, to change them.
    pub(crate) fn fields_mut(&mut self) -> &mut JsonObject {
        on_text_message!(self, m => &mut m.extra, other => &mut other.raw)
    }

    /// A message that is not a text message (a tool's result, an assistant message holding
    /// tool calls and no text): `id`, `role` and its other `fields` as the wire has them.
    pub fn other(id: &str, role: &str, fields: JsonObject) -> Message {
        let mut raw = JsonObject::new();
        raw.insert("id".into(), Value::from(id));
        raw.insert("role".into(), Value::from(role));
        raw.extend(
            fields
                .into_iter()
                .filter(|(name, _)| name != "id" && name != "role"),
        );
        Message::Other(OtherMessage {
            id: id.to_owned(),
            role: role.to_owned(),
            subagent_run_id: None,
            raw,
        })
    }

    pub(crate) fn text_fields_mut(&mut self) -> Option<TextFieldsMut<'_>> {
        on_text_message!(
            self,
            m => Some(TextFieldsMut { content: &mut m.content, metadata: &mut m.metadata }),
            _other => None
        )
    }

    /// Appends text to a message a snapshot delivered in a non-text shape: to the last text part
    /// of a content-part array, as a new text part otherwise.
    pub(crate) fn append_to_other(&mut self, delta: &str) {
        let Message::Other(other) = self else { return };
        match other.raw.get_mut("content") {
            Some(Value::String(text)) => text.push_str(delta),
            Some(Value::Array(parts)) => {
                if let Some(Value::String(text)) = parts
                    .last_mut()
                    .filter(|part| part.get("type").and_then(Value::as_str) == Some("text"))
                    .and_then(|part| part.get_mut("text"))
                {
                    text.push_str(delta);
                } else {
                    let mut part = JsonObject::new();
                    part.insert("type".into(), Value::from("text"));
                    part.insert("text".into(), Value::from(delta));
                    parts.push(Value::Object(part));
                }
            }
            _ => {
                other.raw.insert("content".into(), Value::from(delta));
            }
        }
    }

    /// Merges an event's metadata into a message a snapshot delivered in a non-text shape.
    pub(crate) fn merge_metadata_into_other(&mut self, metadata: &JsonObject) {
        let Message::Other(other) = self else { return };
        let slot = other
            .raw
            .entry("metadata")
            .or_insert_with(|| Value::Object(JsonObject::new()));
        if let Value::Object(existing) = slot {
            for (key, value) in metadata {
                existing.insert(key.clone(), value.clone());
            }
        }
    }

    /// Decodes a history message (from MESSAGES_SNAPSHOT or RUN_STARTED.input).
    pub fn from_value(value: &Value) -> Result<Message, SchemaError> {
        let Some(object) = value.as_object() else {
            return Err(SchemaError::new(None, "a message must be a JSON object"));
        };
        let id = match object.get("id") {
            Some(Value::String(id)) => id.clone(),
            _ => {
                return Err(SchemaError::new(
                    Some("id"),
                    "a message needs a string `id`",
                ));
            }
        };
        let role_name = match object.get("role") {
            Some(Value::String(role)) => role.as_str(),
            _ => {
                return Err(SchemaError::new(
                    Some("role"),
                    "a message needs a string `role`",
                ));
            }
        };
        let optional_string = |field: &str| match object.get(field) {
            None => Ok(None),
            Some(Value::String(text)) => Ok(Some(text.clone())),
            Some(Value::Null) => Err(SchemaError::new(
                Some(field),
                format!("message '{id}' carries '{field}: null'; omit optional fields"),
            )),
            Some(_) => Err(SchemaError::new(
                Some(field),
                format!("`{field}` of message '{id}' must be a string"),
            )),
        };
        let subagent_run_id = optional_string("subagentRunId")?;
        let content = object.get("content");
        let text_role = Role::parse(role_name);
        let (Some(role), Some(Value::String(content))) = (text_role, content) else {
            return Ok(Message::Other(OtherMessage {
                id,
                role: role_name.to_owned(),
                subagent_run_id,
                raw: object.clone(),
            }));
        };
        let name = optional_string("name")?;
        let metadata = match object.get("metadata") {
            None => None,
            Some(Value::Object(metadata)) => Some(metadata.clone()),
            Some(_) => {
                return Err(SchemaError::new(
                    Some("metadata"),
                    format!("`metadata` of message '{id}' must be an object"),
                ));
            }
        };
        let mut extra = object.clone();
        for known in ["id", "role", "content", "name", "metadata", "subagentRunId"] {
            extra.remove(known);
        }
        let mut message = Message::new_text(&id, role, name.as_deref(), subagent_run_id.as_deref());
        on_text_message!(&mut message, m => {
            m.content = content.clone();
            m.metadata = metadata;
            m.extra = extra;
        }, _other => {});
        Ok(message)
    }
}

impl Serialize for Message {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let role = self.role_name();
        on_text_message!(self, m => {
            let mut map = serializer.serialize_map(None)?;
            map.serialize_entry("id", &m.id)?;
            map.serialize_entry("role", role)?;
            map.serialize_entry("content", &m.content)?;
            if let Some(name) = &m.name {
                map.serialize_entry("name", name)?;
            }
            if let Some(metadata) = &m.metadata {
                map.serialize_entry("metadata", metadata)?;
            }
            if let Some(owner) = &m.subagent_run_id {
                map.serialize_entry("subagentRunId", owner)?;
            }
            for (key, value) in &m.extra {
                map.serialize_entry(key, value)?;
            }
            map.end()
        }, other => other.raw.serialize(serializer))
    }
}
