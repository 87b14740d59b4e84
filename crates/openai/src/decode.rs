//! Text in, typed events out (and back). Every failure is a [`DecodeError`] that names what was
//! wrong and where; none of them ends a session by itself — the caller logs it and goes on.

use std::borrow::Cow;
use std::fmt;

use serde::Deserialize;
use serde_json::Value;

use crate::client::ClientEvent;
use crate::item::{ContentPart, Item};
use crate::session::Tool;

mod fallback;
use crate::server::{KNOWN_SERVER_EVENT_TYPES, ServerEvent, UnknownEvent};

/// Where in the received text a problem is: 1-based line and column, and the byte offset.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TextPosition {
    pub line: usize,
    pub column: usize,
    pub byte_offset: usize,
}

impl fmt::Display for TextPosition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "line {}, column {} (byte {})",
            self.line, self.column, self.byte_offset
        )
    }
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// The text is not JSON.
    #[error("malformed JSON at {position}: {message}; near {snippet:?}")]
    Syntax {
        position: TextPosition,
        message: String,
        /// Up to 40 bytes of the text around the position.
        snippet: String,
    },
    /// Valid JSON, but not an object with a string `type`.
    #[error("not a realtime event: {reason}")]
    NotAnEvent { reason: String },
    /// A known event type whose fields do not match the protocol.
    #[error("{event_type} event does not match the protocol at {position}: {message}")]
    Schema {
        event_type: String,
        position: TextPosition,
        message: String,
    },
    /// A client event in the retired beta shape; the GA server refuses these.
    #[error("{event_type} uses the retired beta shape: {reason}")]
    BetaShape { event_type: String, reason: String },
    /// Valid JSON that cannot be held in memory as a JSON value: a number beyond `f64` (`1e999`),
    /// a lone UTF-16 surrogate escape (`"\ud800"`, no Rust string), or nesting deeper than
    /// serde_json's recursion limit (128).
    #[error("{event_type} event cannot be read at {position}: {message}")]
    Unrepresentable {
        event_type: String,
        position: TextPosition,
        message: String,
    },
    /// A client event type outside the GA union.
    #[error("{event_type} is not a client event of the GA protocol")]
    UnknownClientEvent { event_type: String },
}

#[derive(Deserialize)]
struct TypeProbe<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Cow<'a, str>>,
}

/// serde_json counts `column` as the 1-based index of the last character it read, which is the
/// offending one; at the end of the text the problem is the end itself.
fn position_of(text: &str, error: &serde_json::Error) -> TextPosition {
    let (line, column) = (error.line(), error.column());
    if error.is_eof() {
        return TextPosition {
            line,
            column,
            byte_offset: text.len(),
        };
    }
    let line_start: usize = text
        .split_inclusive('\n')
        .take(line.saturating_sub(1))
        .map(str::len)
        .sum();
    let byte_offset = (line_start + column.saturating_sub(1)).min(text.len());
    TextPosition {
        line,
        column,
        byte_offset,
    }
}

fn snippet_around(text: &str, byte_offset: usize) -> String {
    let mut start = byte_offset.saturating_sub(20);
    while !text.is_char_boundary(start) {
        start -= 1;
    }
    let mut end = (byte_offset + 20).min(text.len());
    while !text.is_char_boundary(end) {
        end += 1;
    }
    text[start..end].to_owned()
}

/// Reads the `type` of an event, telling malformed text from JSON that is no event.
pub(crate) fn probe_type<'a>(text: &'a str) -> Result<Cow<'a, str>, DecodeError> {
    match serde_json::from_str::<TypeProbe<'a>>(text) {
        Ok(TypeProbe { kind: Some(kind) }) => Ok(kind),
        Ok(TypeProbe { kind: None }) => Err(DecodeError::NotAnEvent {
            reason: "the object has no \"type\"".to_owned(),
        }),
        Err(error) if error.is_syntax() || error.is_eof() => {
            let position = position_of(text, &error);
            Err(DecodeError::Syntax {
                position,
                snippet: snippet_around(text, position.byte_offset),
                message: error.to_string(),
            })
        }
        Err(error) => Err(DecodeError::NotAnEvent {
            reason: error.to_string(),
        }),
    }
}

pub(crate) fn schema_error(event_type: &str, text: &str, error: serde_json::Error) -> DecodeError {
    DecodeError::Schema {
        event_type: event_type.to_owned(),
        position: position_of(text, &error),
        message: error.to_string(),
    }
}

/// The whole event as a JSON value. The type probe skips what it does not read without holding
/// it, so text it accepted can still fail here: a number beyond `f64`, a lone surrogate escape,
/// nesting deeper than serde_json's recursion limit.
pub(crate) fn value_of(event_type: &str, text: &str) -> Result<Value, DecodeError> {
    serde_json::from_str(text).map_err(|error| DecodeError::Unrepresentable {
        event_type: event_type.to_owned(),
        position: position_of(text, &error),
        message: error.to_string(),
    })
}

/// Decodes one server event. Unknown event types are not an error: they come back as
/// [`ServerEvent::Unknown`] so that a newer server never ends an older client's session.
pub fn decode_server_event(text: &str) -> Result<ServerEvent, DecodeError> {
    let event_type = probe_type(text)?;
    if KNOWN_SERVER_EVENT_TYPES.contains(&event_type.as_ref()) {
        return serde_json::from_str(text).or_else(|error| {
            fallback::decode(&event_type, text)
                .ok_or_else(|| schema_error(&event_type, text, error))
        });
    }
    let raw = value_of(&event_type, text)?;
    Ok(ServerEvent::Unknown(UnknownEvent {
        event_type: event_type.into_owned(),
        raw,
    }))
}

const CLIENT_EVENT_TYPES: &[&str] = &[
    "session.update",
    "input_audio_buffer.append",
    "input_audio_buffer.clear",
    "input_audio_buffer.commit",
    "output_audio_buffer.clear",
    "response.create",
    "response.cancel",
    "conversation.item.create",
    "conversation.item.truncate",
    "conversation.item.delete",
    "conversation.item.retrieve",
];

/// Top-level session fields that only the beta protocol had (GA nests audio settings under
/// `audio.input` / `audio.output` and renamed the rest).
const BETA_SESSION_FIELDS: &[&str] = &[
    "modalities",
    "voice",
    "input_audio_format",
    "output_audio_format",
    "input_audio_transcription",
    "input_audio_noise_reduction",
    "turn_detection",
    "temperature",
    "max_response_output_tokens",
];

const BETA_RESPONSE_FIELDS: &[&str] = &[
    "modalities",
    "voice",
    "output_audio_format",
    "temperature",
    "max_response_output_tokens",
];

fn beta_fields_in(object: Option<&Value>, beta_fields: &[&str]) -> Vec<String> {
    let Some(Value::Object(map)) = object else {
        return Vec::new();
    };
    beta_fields
        .iter()
        .filter(|field| map.contains_key(**field))
        .map(|field| (*field).to_owned())
        .collect()
}

fn beta_shape_of(event_type: &str, raw: &Value) -> Option<String> {
    match event_type {
        "transcription_session.update" => {
            Some("transcription sessions are configured with session.update in GA".to_owned())
        }
        "session.update" => {
            let session = raw.get("session");
            let fields = beta_fields_in(session, BETA_SESSION_FIELDS);
            if !fields.is_empty() {
                Some(format!("session has beta fields {}", fields.join(", ")))
            } else if session.and_then(|s| s.get("type")).is_none() {
                Some(
                    "session has no \"type\" (GA requires \"realtime\" or \"transcription\")"
                        .to_owned(),
                )
            } else {
                None
            }
        }
        "response.create" => {
            let fields = beta_fields_in(raw.get("response"), BETA_RESPONSE_FIELDS);
            (!fields.is_empty()).then(|| format!("response has beta fields {}", fields.join(", ")))
        }
        _ => None,
    }
}

/// Decodes one client event, as the local provider receives it: the GA union only, beta
/// shapes refused (the GA server answers them with `beta_api_shape_disabled`). Returns the
/// client's `event_id`, if it sent one, with the event.
pub fn decode_client_event(text: &str) -> Result<(Option<String>, ClientEvent), DecodeError> {
    let event_type = probe_type(text)?;
    let raw = value_of(&event_type, text)?;
    if let Some(reason) = beta_shape_of(&event_type, &raw) {
        return Err(DecodeError::BetaShape {
            event_type: event_type.into_owned(),
            reason,
        });
    }
    if !CLIENT_EVENT_TYPES.contains(&event_type.as_ref()) {
        return Err(DecodeError::UnknownClientEvent {
            event_type: event_type.into_owned(),
        });
    }
    let event_id = raw
        .get("event_id")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let event =
        serde_json::from_str(text).map_err(|error| schema_error(&event_type, text, error))?;
    if let Some((field, what)) = unmodelled_in(&event) {
        return Err(DecodeError::Schema {
            event_type: event_type.into_owned(),
            position: position_of_field(text, field),
            message: format!("{what} this crate does not model"),
        });
    }
    Ok((event_id, event))
}

/// Client events stay strict: the shapes kept raw when the server sends them (`Other` items,
/// content parts and tools) are refused from a client, so the local provider still holds
/// Walkie to the shapes it models. Returns the JSON field holding one, and what it is.
fn unmodelled_in(event: &ClientEvent) -> Option<(&'static str, &'static str)> {
    match event {
        ClientEvent::ConversationItemCreate { item, .. } => match item {
            Item::Other(_) => Some(("item", "an item")),
            Item::Message { content, .. }
                if content
                    .iter()
                    .any(|part| matches!(part, ContentPart::Other(_))) =>
            {
                Some(("content", "a content part"))
            }
            _ => None,
        },
        ClientEvent::SessionUpdate { session } => session
            .tools
            .iter()
            .flatten()
            .any(|tool| matches!(tool, Tool::Other(_)))
            .then_some(("tools", "a tool")),
        _ => None,
    }
}

/// Where the first `"field":` key is in the text (the start of the text if it is not found).
fn position_of_field(text: &str, field: &str) -> TextPosition {
    let byte_offset = text.find(&format!("\"{field}\"")).unwrap_or(0);
    let before = &text[..byte_offset];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |newline| newline + 1);
    TextPosition {
        line,
        column: byte_offset - line_start + 1,
        byte_offset,
    }
}

/// Serialises an event and adds its `event_id` after the `type`.
pub(crate) fn encode_with_id<T: serde::Serialize>(event: &T, event_id: Option<&str>) -> String {
    let body = serde_json::to_string(event)
        .expect("protocol events serialise: every field is a string, number, bool or JSON value");
    let Some(event_id) = event_id else {
        return body;
    };
    let id = serde_json::to_string(event_id).expect("a string always serialises");
    // `body` is a JSON object with at least its `type`: `{"type":...}`.
    let inner = body
        .strip_prefix('{')
        .expect("a tagged protocol event serialises as a JSON object");
    format!("{{\"event_id\":{id},{inner}")
}

impl ClientEvent {
    /// The JSON text sent on the data channel.
    pub fn to_json(&self, event_id: Option<&str>) -> String {
        encode_with_id(self, event_id)
    }
}

impl ServerEvent {
    /// The JSON text the local provider sends. An unknown event is sent back as received.
    pub fn to_json(&self, event_id: &str) -> String {
        match self {
            ServerEvent::Unknown(unknown) => unknown.raw.to_string(),
            known => encode_with_id(known, Some(event_id)),
        }
    }
}
