//! Conversation items: messages (user, assistant, system), function calls and their outputs.
//!
//! Items and content parts the server may send that Walkie does not model (MCP calls and
//! approvals, a function call without `call_id`, a part without `type`, ...)
//! are kept whole as `Other`, so an event that carries one (`response.done` lists every item of
//! the response) is never lost over a part Walkie does not read.

use serde::{Deserialize, Serialize};
use serde_json::Value;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    User,
    Assistant,
    System,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ItemStatus {
    InProgress,
    Completed,
    Incomplete,
}

/// One part of a message's content. The GA names are `output_audio`/`output_text`; the beta
/// names `audio`/`text` are still accepted on receipt and read as the GA ones.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentPart {
    InputText {
        text: String,
    },
    InputAudio {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        audio: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        transcript: Option<String>,
    },
    /// A picture the user shows, as a data URL (`data:image/jpeg;base64,…`).
    InputImage {
        image_url: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        detail: Option<ImageDetail>,
    },
    #[serde(alias = "audio")]
    OutputAudio {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        transcript: Option<String>,
    },
    #[serde(alias = "text")]
    OutputText {
        #[serde(default)]
        text: String,
    },
    /// A part this crate does not model (or a known type with fields it cannot read), as
    /// received.
    #[serde(untagged)]
    Other(Value),
}

/// How closely the model looks at an `input_image` (`auto` when absent).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ImageDetail {
    Auto,
    Low,
    High,
}

/// A conversation item.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Item {
    Message {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        role: Role,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        status: Option<ItemStatus>,
        #[serde(default)]
        content: Vec<ContentPart>,
    },
    FunctionCall {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        call_id: String,
        name: String,
        #[serde(default)]
        arguments: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        status: Option<ItemStatus>,
    },
    FunctionCallOutput {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        call_id: String,
        output: String,
    },
    /// An item this crate does not model (MCP items, or a known type with fields it cannot
    /// read, such as a function call without `call_id`), as received.
    #[serde(untagged)]
    Other(Value),
}

impl Item {
    /// The item's id, where the server assigned one.
    pub fn id(&self) -> Option<&str> {
        match self {
            Item::Message { id, .. }
            | Item::FunctionCall { id, .. }
            | Item::FunctionCallOutput { id, .. } => id.as_deref(),
            Item::Other(raw) => raw.get("id").and_then(Value::as_str),
        }
    }

    /// A user message carrying one text part.
    pub fn user_text(text: impl Into<String>) -> Self {
        Item::Message {
            id: None,
            role: Role::User,
            status: None,
            content: vec![ContentPart::InputText { text: text.into() }],
        }
    }

    /// The output of a local function tool, sent back so the model can continue.
    pub fn function_call_output(call_id: impl Into<String>, output: impl Into<String>) -> Self {
        Item::FunctionCallOutput {
            id: None,
            call_id: call_id.into(),
            output: output.into(),
        }
    }
}
