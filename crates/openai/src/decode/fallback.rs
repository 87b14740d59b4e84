//! What is still read of a known event that does not match the protocol, so that an event that
//! ends something is never lost: `response.done` (the response ends and the next
//! `response.create` may go) and the `response.created` it answers, `output_audio_buffer.stopped`/`.cleared` (the assistant is no
//! longer audible), `response.output_audio.done`, and `session.created`/`.updated` (the session
//! is confirmed). Everything else of such an event is skipped unread — skipping holds nothing,
//! so a `1e999`, a lone surrogate or deep nesting elsewhere in the event cannot stop it. The
//! session object itself is held as a JSON value to be read field by field: such a value inside
//! it loses the session event, and the controller's confirmation grace
//! (`SESSION_CONFIRM_GRACE_MS`) goes ahead without it.
//!
//! A `response.done` or `response.created` whose response has no readable `id` keeps an empty
//! id: it is about the active response (one is active at a time), and the session crate's
//! controller applies it to that one.

use serde::Deserialize;
use serde::de::{Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use crate::server::{Response, ResponseStatus, ServerEvent};
use crate::session::SessionConfig;

/// The minimal reading of a known event type whose full decoding failed, if it has one.
pub(super) fn decode(event_type: &str, text: &str) -> Option<ServerEvent> {
    match event_type {
        "response.done" => {
            let response = serde_json::from_str::<WithResponse>(text).ok()?.response;
            Some(ServerEvent::ResponseDone {
                response: minimal_response(
                    response.id.0.unwrap_or_default(),
                    response.status.0.as_deref(),
                    ResponseStatus::Completed,
                ),
            })
        }
        // Not terminal, but without it the response's `response.done` would end nothing.
        "response.created" => {
            let response = serde_json::from_str::<WithResponse>(text).ok()?.response;
            Some(ServerEvent::ResponseCreated {
                response: minimal_response(
                    response.id.0.unwrap_or_default(),
                    response.status.0.as_deref(),
                    ResponseStatus::InProgress,
                ),
            })
        }
        "output_audio_buffer.stopped" => Some(ServerEvent::OutputAudioBufferStopped {
            response_id: response_id_of(text)?,
        }),
        "output_audio_buffer.cleared" => Some(ServerEvent::OutputAudioBufferCleared {
            response_id: response_id_of(text)?,
        }),
        "response.output_audio.done" | "response.audio.done" => {
            let ids = serde_json::from_str::<Ids>(text).ok()?;
            Some(ServerEvent::OutputAudioDone {
                response_id: ids.response_id.0.unwrap_or_default(),
                item_id: ids.item_id.0.unwrap_or_default(),
                output_index: 0,
                content_index: 0,
            })
        }
        "session.created" => Some(ServerEvent::SessionCreated {
            session: Box::new(lenient_session(text)?),
        }),
        "session.updated" => Some(ServerEvent::SessionUpdated {
            session: Box::new(lenient_session(text)?),
        }),
        _ => None,
    }
}

fn minimal_response(id: String, status: Option<&str>, unread: ResponseStatus) -> Response {
    let status = status
        .and_then(|status| serde_json::from_value(Value::String(status.to_owned())).ok())
        .unwrap_or(unread);
    Response {
        id,
        status,
        status_details: None,
        output: Vec::new(),
        conversation_id: None,
        output_modalities: None,
        usage: None,
        metadata: None,
    }
}

/// The `response_id`, read when it is a string (empty when absent: the buffer events end
/// whatever is audible, whichever response it was).
fn response_id_of(text: &str) -> Option<String> {
    let ids = serde_json::from_str::<Ids>(text).ok()?;
    Some(ids.response_id.0.unwrap_or_default())
}

/// A session object read field by field: a field that does not match the protocol is kept as
/// received in [`SessionConfig::other`] (under its dotted path, e.g. `audio.output.voice`)
/// instead of failing the whole. `audio` is read a field deeper, so that one odd audio setting
/// does not hide the transcription setting Walkie reads.
fn lenient_session(text: &str) -> Option<SessionConfig> {
    let raw: WithSession = serde_json::from_str(text).ok()?;
    let Value::Object(fields) = raw.session else {
        return None;
    };
    let mut unreadable = Map::new();
    let mut readable = Map::new();
    for (key, value) in fields {
        if reads_as_session(&key, &[], &value) {
            readable.insert(key, value);
        } else if key == "audio"
            && let Value::Object(sides) = value
        {
            let mut audio = Map::new();
            for (side, settings) in sides {
                let Value::Object(settings) = settings else {
                    unreadable.insert(format!("audio.{side}"), settings);
                    continue;
                };
                let mut kept = Map::new();
                for (name, setting) in settings {
                    if reads_as_session("audio", &[&side, &name], &setting) {
                        kept.insert(name, setting);
                    } else {
                        unreadable.insert(format!("audio.{side}.{name}"), setting);
                    }
                }
                audio.insert(side, Value::Object(kept));
            }
            readable.insert(key, Value::Object(audio));
        } else {
            unreadable.insert(key, value);
        }
    }
    let mut session: SessionConfig = serde_json::from_value(Value::Object(readable)).ok()?;
    session.other.extend(unreadable);
    Some(session)
}

/// Whether a session holding only `value` at `key`.`path` reads as a [`SessionConfig`].
fn reads_as_session(key: &str, path: &[&str], value: &Value) -> bool {
    let mut nested = value.clone();
    for name in path.iter().rev() {
        nested = Value::Object([((*name).to_owned(), nested)].into_iter().collect());
    }
    let alone: Map<String, Value> = [(key.to_owned(), nested)].into_iter().collect();
    serde_json::from_value::<SessionConfig>(Value::Object(alone)).is_ok()
}

#[derive(Deserialize)]
struct WithResponse {
    response: MinimalResponse,
}

#[derive(Deserialize)]
struct MinimalResponse {
    #[serde(default)]
    id: LenientString,
    #[serde(default)]
    status: LenientString,
}

#[derive(Deserialize)]
struct WithSession {
    session: Value,
}

#[derive(Deserialize)]
struct Ids {
    #[serde(default)]
    response_id: LenientString,
    #[serde(default)]
    item_id: LenientString,
}

/// A field read when it is a string and skipped unread otherwise.
#[derive(Default)]
struct LenientString(Option<String>);

impl<'de> Deserialize<'de> for LenientString {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(LenientStringVisitor)
    }
}

struct LenientStringVisitor;

impl<'de> Visitor<'de> for LenientStringVisitor {
    type Value = LenientString;

    fn expecting(&self, formatter: &mut std::fmt::Formatter) -> std::fmt::Result {
        formatter.write_str("any JSON value")
    }

    fn visit_str<E: serde::de::Error>(self, value: &str) -> Result<Self::Value, E> {
        Ok(LenientString(Some(value.to_owned())))
    }

    fn visit_bool<E: serde::de::Error>(self, _: bool) -> Result<Self::Value, E> {
        Ok(LenientString(None))
    }

    fn visit_i64<E: serde::de::Error>(self, _: i64) -> Result<Self::Value, E> {
        Ok(LenientString(None))
    }

    fn visit_u64<E: serde::de::Error>(self, _: u64) -> Result<Self::Value, E> {
        Ok(LenientString(None))
    }

    fn visit_f64<E: serde::de::Error>(self, _: f64) -> Result<Self::Value, E> {
        Ok(LenientString(None))
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
        Ok(LenientString(None))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(LenientString(None))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(LenientString(None))
    }
}
