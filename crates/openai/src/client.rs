//! Client events: the GA union, exactly — nothing else is ever sent.
//!
//! `conversation.item.{create,delete,retrieve,truncate}`, `input_audio_buffer.{append,clear,commit}`,
//! `output_audio_buffer.clear`, `response.{cancel,create}`, `session.update`.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::item::Item;
use crate::session::{MaxOutputTokens, Modality, SessionConfig};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum ClientEvent {
    #[serde(rename = "session.update")]
    SessionUpdate { session: Box<SessionConfig> },
    /// Audio as base64 PCM inside JSON; over WebRTC the audio goes by RTP instead.
    #[serde(rename = "input_audio_buffer.append")]
    InputAudioBufferAppend { audio: String },
    #[serde(rename = "input_audio_buffer.clear")]
    InputAudioBufferClear,
    #[serde(rename = "input_audio_buffer.commit")]
    InputAudioBufferCommit,
    /// WebRTC/SIP only: cut the audio the server is playing out.
    #[serde(rename = "output_audio_buffer.clear")]
    OutputAudioBufferClear,
    #[serde(rename = "response.create")]
    ResponseCreate {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        response: Option<ResponseConfig>,
    },
    #[serde(rename = "response.cancel")]
    ResponseCancel {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        response_id: Option<String>,
    },
    #[serde(rename = "conversation.item.create")]
    ConversationItemCreate {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        previous_item_id: Option<String>,
        item: Item,
    },
    /// Cut an assistant item's audio (and transcript) to what was actually heard.
    #[serde(rename = "conversation.item.truncate")]
    ConversationItemTruncate {
        item_id: String,
        content_index: u32,
        /// Milliseconds of the item's audio that were played, inclusive.
        audio_end_ms: u64,
    },
    #[serde(rename = "conversation.item.delete")]
    ConversationItemDelete { item_id: String },
    #[serde(rename = "conversation.item.retrieve")]
    ConversationItemRetrieve { item_id: String },
}

impl ClientEvent {
    /// The wire name, as in the `type` field.
    pub fn event_type(&self) -> &'static str {
        match self {
            ClientEvent::SessionUpdate { .. } => "session.update",
            ClientEvent::InputAudioBufferAppend { .. } => "input_audio_buffer.append",
            ClientEvent::InputAudioBufferClear => "input_audio_buffer.clear",
            ClientEvent::InputAudioBufferCommit => "input_audio_buffer.commit",
            ClientEvent::OutputAudioBufferClear => "output_audio_buffer.clear",
            ClientEvent::ResponseCreate { .. } => "response.create",
            ClientEvent::ResponseCancel { .. } => "response.cancel",
            ClientEvent::ConversationItemCreate { .. } => "conversation.item.create",
            ClientEvent::ConversationItemTruncate { .. } => "conversation.item.truncate",
            ClientEvent::ConversationItemDelete { .. } => "conversation.item.delete",
            ClientEvent::ConversationItemRetrieve { .. } => "conversation.item.retrieve",
        }
    }
}

/// `response.create`'s optional settings for one response.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
pub struct ResponseConfig {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_modalities: Option<Vec<Modality>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// `"auto"` (the default conversation) or `"none"` (out of band).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversation: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_output_tokens: Option<MaxOutputTokens>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
}
