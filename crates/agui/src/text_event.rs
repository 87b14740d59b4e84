//! The per-token events read straight from JSON text, without building a `serde_json::Value`.
//!
//! Why: START / CONTENT / END are nearly every event of a transcript, and decoding them through
//! a `Value` (a map with owned keys, then owned copies of its strings) cost more than verifying
//! and assembling them. Here one derived struct borrows the strings from the text where it can
//! (a string with escapes is unescaped into its own buffer), and [`crate::Consumer::push_json`]
//! turns it into an [`Op`] directly.
//!
//! This path only ever accepts: any event it does not recognise as a well-formed START,
//! CONTENT or END (another type, an array, an explicit `null`, a field of the wrong type, a
//! duplicate key, an invalid role or timestamp) makes [`TextEvent::parse`] return `None`, and
//! the caller decodes the text the exact way ([`crate::Event::from_json_str`]), which names the
//! offending field. So both ways agree on every event this one accepts, and errors have one
//! source.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserialize, Deserializer, Visitor};
use serde_json::{Number, Value};

use crate::event::{
    Event, JsonObject, Role, TextMessageContent, TextMessageEnd, TextMessageStart,
    checked_timestamp,
};
use crate::expand::Op;

/// A string as the text holds it: borrowed unless it had escapes.
#[derive(Debug)]
struct Text<'a>(Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for Text<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Text<'a>, D::Error> {
        struct TextVisitor;
        impl<'de> Visitor<'de> for TextVisitor {
            type Value = Cow<'de, str>;

            fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
                formatter.write_str("a string")
            }

            fn visit_borrowed_str<E: de::Error>(self, text: &'de str) -> Result<Cow<'de, str>, E> {
                Ok(Cow::Borrowed(text))
            }

            fn visit_str<E: de::Error>(self, text: &str) -> Result<Cow<'de, str>, E> {
                Ok(Cow::Owned(text.to_owned()))
            }

            fn visit_string<E: de::Error>(self, text: String) -> Result<Cow<'de, str>, E> {
                Ok(Cow::Owned(text))
            }
        }
        deserializer.deserialize_str(TextVisitor).map(Text)
    }
}

/// For an optional field: absent is `None` (the field's default), and a present value must be a
/// `T`, so an explicit `null` fails instead of reading as absent.
fn present<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    T::deserialize(deserializer).map(Some)
}

/// The fields START / CONTENT / END carry; any other field is skipped unread.
#[derive(Debug, serde::Deserialize)]
#[serde(rename_all = "camelCase", bound(deserialize = "'de: 'a"))]
struct Fields<'a> {
    #[serde(rename = "type")]
    type_name: Text<'a>,
    #[serde(default, deserialize_with = "present")]
    message_id: Option<Text<'a>>,
    #[serde(default, deserialize_with = "present")]
    role: Option<Text<'a>>,
    #[serde(default, deserialize_with = "present")]
    name: Option<Text<'a>>,
    #[serde(default, deserialize_with = "present")]
    delta: Option<Text<'a>>,
    #[serde(default, deserialize_with = "present")]
    subagent_run_id: Option<Text<'a>>,
    #[serde(default, deserialize_with = "present")]
    metadata: Option<JsonObject>,
    #[serde(default, deserialize_with = "present")]
    timestamp: Option<Number>,
    #[serde(default, deserialize_with = "present")]
    raw_event: Option<Value>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Start,
    Content,
    End,
}

/// A well-formed TEXT_MESSAGE_START, _CONTENT or _END, borrowing from its text where it can.
#[derive(Debug)]
pub(crate) struct TextEvent<'a> {
    kind: Kind,
    message_id: Cow<'a, str>,
    role: Option<Role>,
    name: Option<Cow<'a, str>>,
    delta: Cow<'a, str>,
    subagent_run_id: Option<Cow<'a, str>>,
    metadata: Option<JsonObject>,
    timestamp: Option<i64>,
    raw_event: Option<Value>,
}

impl<'a> TextEvent<'a> {
    /// The event, when `text` is a well-formed START, CONTENT or END; `None` for anything
    /// else, which the exact decoder then judges.
    pub(crate) fn parse(text: &'a str) -> Option<TextEvent<'a>> {
        // A derived struct also reads a JSON array positionally; an event is an object.
        if !text.trim_start().starts_with('{') {
            return None;
        }
        let fields: Fields<'a> = serde_json::from_str(text).ok()?;
        let kind = match &*fields.type_name.0 {
            "TEXT_MESSAGE_START" => Kind::Start,
            "TEXT_MESSAGE_CONTENT" => Kind::Content,
            "TEXT_MESSAGE_END" => Kind::End,
            _ => return None,
        };
        let timestamp = match &fields.timestamp {
            Some(number) => Some(checked_timestamp(number)?),
            None => None,
        };
        if matches!(fields.raw_event, Some(Value::Null)) {
            return None;
        }
        let (role, name) = match kind {
            Kind::Start => {
                let role = match &fields.role {
                    Some(role) => Some(Role::parse(&role.0)?),
                    None => None,
                };
                (role, fields.name.map(|name| name.0))
            }
            Kind::Content | Kind::End => (None, None),
        };
        let delta = match kind {
            Kind::Content => fields.delta?.0,
            Kind::Start | Kind::End => Cow::Borrowed(""),
        };
        Some(TextEvent {
            kind,
            message_id: fields.message_id?.0,
            role,
            name,
            delta,
            subagent_run_id: fields.subagent_run_id.map(|owner| owner.0),
            metadata: fields.metadata,
            timestamp,
            raw_event: fields.raw_event,
        })
    }

    /// The op this event stands for, borrowing from it.
    pub(crate) fn op(&self) -> Op<'_> {
        let message_id = &*self.message_id;
        let owner = self.subagent_run_id.as_deref();
        let metadata = self.metadata.as_ref();
        match self.kind {
            Kind::Start => Op::Start {
                message_id,
                role: self.role,
                name: self.name.as_deref(),
                owner,
                metadata,
            },
            Kind::Content => Op::Content {
                message_id,
                delta: &self.delta,
                owner,
                metadata,
            },
            Kind::End => Op::End {
                message_id,
                owner,
                metadata,
            },
        }
    }

    /// The owned event.
    pub(crate) fn into_event(self) -> Event {
        let message_id = self.message_id.into_owned();
        let subagent_run_id = self.subagent_run_id.map(Cow::into_owned);
        let raw_event = self.raw_event.map(Box::new);
        match self.kind {
            Kind::Start => Event::TextMessageStart(TextMessageStart {
                message_id,
                role: self.role,
                name: self.name.map(Cow::into_owned),
                subagent_run_id,
                metadata: self.metadata,
                timestamp: self.timestamp,
                raw_event,
            }),
            Kind::Content => Event::TextMessageContent(TextMessageContent {
                message_id,
                delta: self.delta.into_owned(),
                subagent_run_id,
                metadata: self.metadata,
                timestamp: self.timestamp,
                raw_event,
            }),
            Kind::End => Event::TextMessageEnd(TextMessageEnd {
                message_id,
                subagent_run_id,
                metadata: self.metadata,
                timestamp: self.timestamp,
                raw_event,
            }),
        }
    }
}
