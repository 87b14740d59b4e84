//! Asides: a question put to the model beside the conversation — a `response.create` with
//! `conversation: "none"` and text out, which adds nothing to the conversation — such as a
//! title for it.
//!
//! Why the controller keeps them apart: the provider streams an aside's answer with the events
//! of any reply. Its `response.created` carries back the metadata it was asked with, so from
//! there on its events are collected here and kept out of the turn state and the transcript;
//! what it cost is billed like any response. A server that drops the metadata is understood
//! too, as long as no reply was asked for meanwhile.

use std::collections::HashMap;

use serde_json::{Map, Value};
use walkie_openai::{
    ClientEvent, MaxOutputTokens, Modality, ResponseConfig, ResponseStatus, ServerEvent,
};

use super::controller::TurnController;
use super::output::ControllerOutput;

/// The metadata key an aside is asked under; its value names the purpose.
pub const ASIDE_METADATA_KEY: &str = "walkie_aside";
/// The most of an aside's answer kept, in bytes: far past any title.
pub const MAX_ASIDE_TEXT_BYTES: usize = 4 * 1024;

/// What an aside is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AsidePurpose {
    /// A short title for the conversation.
    Title,
}

impl AsidePurpose {
    pub fn as_str(self) -> &'static str {
        match self {
            AsidePurpose::Title => "title",
        }
    }

    fn parse(text: &str) -> Option<AsidePurpose> {
        (text == "title").then_some(AsidePurpose::Title)
    }
}

/// A question put to the model beside the conversation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Aside {
    pub purpose: AsidePurpose,
    /// What the model is asked.
    pub instructions: String,
    /// The longest answer it may give.
    pub max_output_tokens: u32,
}

/// Asides asked and not yet answered.
#[derive(Debug, Default)]
pub(super) struct Asides {
    /// Asked, their response not created yet: purpose and the create's event id.
    asked: Vec<(AsidePurpose, String)>,
    /// Being answered: response id → purpose and the text so far.
    answering: HashMap<String, (AsidePurpose, String)>,
}

impl Asides {
    fn pending(&self, purpose: AsidePurpose) -> bool {
        self.asked.iter().any(|(asked, _)| *asked == purpose)
            || self.answering.values().any(|(asked, _)| *asked == purpose)
    }
}

impl TurnController {
    /// Asks `aside` of the model, unless the same is asked already; with no session to ask
    /// it on, it fails at once.
    pub(super) fn ask_aside(&mut self, aside: Aside) {
        if self.asides.pending(aside.purpose) {
            return;
        }
        if !self.lifecycle.is_confirmed() {
            return self.answer(ControllerOutput::AsideFailed {
                purpose: aside.purpose,
                reason: "the call is not connected".to_owned(),
                unanswered: true,
            });
        }
        let mut metadata = Map::new();
        metadata.insert(
            ASIDE_METADATA_KEY.to_owned(),
            Value::from(aside.purpose.as_str()),
        );
        let event_id = self.send(ClientEvent::ResponseCreate {
            response: Some(ResponseConfig {
                conversation: Some("none".to_owned()),
                output_modalities: Some(vec![Modality::Text]),
                instructions: Some(aside.instructions),
                max_output_tokens: Some(MaxOutputTokens::Limit(aside.max_output_tokens)),
                metadata: Some(metadata),
            }),
        });
        self.asides.asked.push((aside.purpose, event_id));
    }

    /// Takes `event` if it belongs to an aside; `false` leaves it to the conversation.
    pub(super) fn aside_event(&mut self, event: &ServerEvent) -> bool {
        if self.asides.asked.is_empty() && self.asides.answering.is_empty() {
            return false;
        }
        match event {
            ServerEvent::ResponseCreated { response } => {
                let named = response
                    .metadata
                    .as_ref()
                    .and_then(|metadata| metadata.get(ASIDE_METADATA_KEY));
                let at = match named {
                    Some(named) => {
                        let Some(purpose) = named.as_str().and_then(AsidePurpose::parse) else {
                            return false;
                        };
                        self.asides
                            .asked
                            .iter()
                            .position(|(asked, _)| *asked == purpose)
                    }
                    // A server that does not echo the metadata (the API does): with no reply
                    // asked for or under way, the response is the oldest aside's.
                    None if self.responses.can_create() => {
                        (!self.asides.asked.is_empty()).then_some(0)
                    }
                    None => None,
                };
                let Some(at) = at else {
                    return false;
                };
                let (purpose, _) = self.asides.asked.remove(at);
                self.asides
                    .answering
                    .insert(response.id.clone(), (purpose, String::new()));
                true
            }
            ServerEvent::OutputTextDelta {
                response_id, delta, ..
            }
            | ServerEvent::OutputAudioTranscriptDelta {
                response_id, delta, ..
            } => self.aside_text(response_id, delta, false),
            ServerEvent::OutputTextDone {
                response_id, text, ..
            }
            | ServerEvent::OutputAudioTranscriptDone {
                response_id,
                transcript: text,
                ..
            } => self.aside_text(response_id, text, true),
            ServerEvent::ResponseOutputItemAdded { response_id, .. }
            | ServerEvent::ResponseOutputItemDone { response_id, .. }
            | ServerEvent::ResponseContentPartAdded { response_id, .. }
            | ServerEvent::ResponseContentPartDone { response_id, .. }
            | ServerEvent::OutputAudioDelta { response_id, .. }
            | ServerEvent::OutputAudioDone { response_id, .. } => {
                self.asides.answering.contains_key(response_id)
            }
            ServerEvent::ResponseDone { response } => {
                let Some((purpose, text)) = self.asides.answering.remove(&response.id) else {
                    return false;
                };
                // Billed whatever became of it, as every response is.
                if let Some(usage) = response.usage.clone() {
                    self.billed(usage);
                }
                let output = match response.status {
                    ResponseStatus::Completed => ControllerOutput::AsideAnswered { purpose, text },
                    status => ControllerOutput::AsideFailed {
                        purpose,
                        reason: format!("its response ended {}", status_phrase(status)),
                        unanswered: false,
                    },
                };
                self.answer(output);
                // A reply asked for while it ran, and refused for it, is asked again now.
                self.flush_queued_create();
                true
            }
            ServerEvent::Error { error } => {
                let Some(at) =
                    self.asides.asked.iter().position(|(_, event_id)| {
                        error.event_id.as_deref() == Some(event_id.as_str())
                    })
                else {
                    return false;
                };
                let (purpose, _) = self.asides.asked.remove(at);
                self.answer(ControllerOutput::AsideFailed {
                    purpose,
                    reason: error.message.clone(),
                    unanswered: false,
                });
                true
            }
            _ => false,
        }
    }

    fn aside_text(&mut self, response_id: &str, text: &str, is_final: bool) -> bool {
        let Some((_, kept)) = self.asides.answering.get_mut(response_id) else {
            return false;
        };
        if is_final {
            kept.clear();
        }
        let room = MAX_ASIDE_TEXT_BYTES.saturating_sub(kept.len());
        let mut end = text.len().min(room);
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        kept.push_str(&text[..end]);
        true
    }

    /// The call ended: what was asked is not answered.
    pub(super) fn asides_unanswered(&mut self) {
        let asked = std::mem::take(&mut self.asides.asked)
            .into_iter()
            .map(|(purpose, _)| purpose);
        let answering = std::mem::take(&mut self.asides.answering)
            .into_values()
            .map(|(purpose, _)| purpose);
        let purposes: Vec<AsidePurpose> = asked.chain(answering).collect();
        for purpose in purposes {
            self.answer(ControllerOutput::AsideFailed {
                purpose,
                reason: "the call ended before it was answered".to_owned(),
                unanswered: true,
            });
        }
    }
}

fn status_phrase(status: ResponseStatus) -> &'static str {
    match status {
        ResponseStatus::Cancelled => "cancelled",
        ResponseStatus::Failed => "in failure",
        ResponseStatus::Incomplete => "incomplete",
        ResponseStatus::InProgress => "still in progress",
        ResponseStatus::Completed => "completed",
    }
}
