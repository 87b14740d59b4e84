//! The assembler (the protocol's reducer): builds the conversation history from verified ops.
//!
//! A message keeps the position where it first appeared. Content appends by id, never to "the
//! last message", so interleaved and reopened messages ("closed, not sealed") land where they
//! belong. Metadata merges per key, last write wins (shallow, as AG-UI's `mergeMetadata`). A
//! MESSAGES_SNAPSHOT restates wholesale: listed messages are replaced, unlisted text messages
//! removed, new ones appended in snapshot order. The assembler trusts the verifier: it never
//! fails, and an op for an id it does not hold (only possible for unverified input) is ignored.
//!
//! Tool calls are applied as AG-UI's reference client applies them: a TOOL_CALL_START adds the
//! call (`{id, type: "function", function: {name, arguments}}`) to the `toolCalls` of its
//! parent message, or of a new assistant message (id: the parent's, else the call's) when there
//! is none; TOOL_CALL_ARGS appends to the call's arguments; TOOL_CALL_RESULT makes a tool
//! message (`{id, role: "tool", toolCallId, content}`), or restates the one of that id.

use std::collections::{HashMap, HashSet};

use serde_json::{Value, json};

use crate::event::{JsonObject, Role};
use crate::expand::Op;
use crate::id_index::IdIndex;
use crate::message::Message;

/// Builds the history; see the module docs.
#[derive(Debug, Clone, Default)]
pub struct Assembler {
    messages: Vec<Message>,
    index_by_id: IdIndex,
}

fn merge_metadata(slot: &mut Option<JsonObject>, metadata: &JsonObject) {
    let merged = slot.get_or_insert_with(JsonObject::new);
    for (key, value) in metadata {
        merged.insert(key.clone(), value.clone());
    }
}

impl Assembler {
    pub fn new() -> Assembler {
        Assembler::default()
    }

    /// The history, in order of first appearance.
    pub fn messages(&self) -> &[Message] {
        &self.messages
    }

    pub fn into_messages(self) -> Vec<Message> {
        self.messages
    }

    /// The message with this id, if the history holds it.
    pub fn message(&self, message_id: &str) -> Option<&Message> {
        self.index_by_id
            .peek(message_id)
            .map(|index| &self.messages[index])
    }

    /// Applies one verified op.
    pub fn apply(&mut self, op: &Op<'_>) {
        match *op {
            Op::Start {
                message_id,
                role,
                name,
                owner,
                metadata,
            } => {
                let index = match self.index_by_id.get(message_id) {
                    // A reopen: the established role, name and owner stand.
                    Some(index) => index,
                    None => {
                        let role = role.unwrap_or(Role::Assistant);
                        self.messages
                            .push(Message::new_text(message_id, role, name, owner));
                        self.index_by_id.insert(message_id, self.messages.len() - 1);
                        self.messages.len() - 1
                    }
                };
                if let Some(metadata) = metadata {
                    self.merge_into(index, metadata);
                }
            }
            Op::Content {
                message_id,
                delta,
                metadata,
                ..
            } => {
                let Some(index) = self.index_by_id.get(message_id) else {
                    return;
                };
                let message = &mut self.messages[index];
                match message.text_fields_mut() {
                    Some(fields) => {
                        fields.content.push_str(delta);
                        if let Some(metadata) = metadata {
                            merge_metadata(fields.metadata, metadata);
                        }
                    }
                    None => {
                        message.append_to_other(delta);
                        if let Some(metadata) = metadata {
                            message.merge_metadata_into_other(metadata);
                        }
                    }
                }
            }
            Op::End {
                message_id,
                metadata: Some(metadata),
                ..
            } => {
                if let Some(index) = self.index_by_id.get(message_id) {
                    self.merge_into(index, metadata);
                }
            }
            Op::End { metadata: None, .. } => {}
            Op::Snapshot { messages } => self.restate(messages),
            Op::RunStarted { input_messages } => {
                for message in input_messages {
                    if self.index_by_id.get(message.id()).is_none() {
                        self.index_by_id.insert(message.id(), self.messages.len());
                        self.messages.push(message.clone());
                    }
                }
            }
            Op::Other { type_name, raw } => self.apply_tool_event(type_name, raw),
            Op::RunFinished | Op::RunError => {}
        }
    }

    fn apply_tool_event(&mut self, type_name: &str, event: &JsonObject) {
        let string = |field: &str| event.get(field).and_then(Value::as_str);
        match type_name {
            "TOOL_CALL_START" => {
                let (Some(call_id), Some(name)) = (string("toolCallId"), string("toolCallName"))
                else {
                    return;
                };
                let holder_id = string("parentMessageId").unwrap_or(call_id);
                let index = match self.index_by_id.get(holder_id) {
                    Some(index) => index,
                    None => {
                        self.messages.push(Message::other(
                            holder_id,
                            "assistant",
                            JsonObject::new(),
                        ));
                        self.index_by_id.insert(holder_id, self.messages.len() - 1);
                        self.messages.len() - 1
                    }
                };
                let calls = self.messages[index]
                    .fields_mut()
                    .entry("toolCalls")
                    .or_insert_with(|| Value::Array(Vec::new()));
                if let Value::Array(calls) = calls {
                    calls.push(json!({
                        "id": call_id,
                        "type": "function",
                        "function": { "name": name, "arguments": "" },
                    }));
                }
            }
            "TOOL_CALL_ARGS" => {
                let (Some(call_id), Some(delta)) = (string("toolCallId"), string("delta")) else {
                    return;
                };
                let arguments = self.messages.iter_mut().rev().find_map(|message| {
                    let Some(Value::Array(calls)) = message.fields_mut().get_mut("toolCalls")
                    else {
                        return None;
                    };
                    calls
                        .iter_mut()
                        .find(|call| call.get("id").and_then(Value::as_str) == Some(call_id))?
                        .pointer_mut("/function/arguments")
                });
                if let Some(Value::String(arguments)) = arguments {
                    arguments.push_str(delta);
                }
            }
            "TOOL_CALL_RESULT" => {
                let (Some(message_id), Some(call_id), Some(content)) = (
                    string("messageId"),
                    string("toolCallId"),
                    event.get("content"),
                ) else {
                    return;
                };
                let mut fields = JsonObject::new();
                fields.insert("content".into(), content.clone());
                fields.insert("toolCallId".into(), Value::from(call_id));
                let message = Message::other(message_id, "tool", fields);
                match self.index_by_id.get(message_id) {
                    Some(index) => self.messages[index] = message,
                    None => {
                        self.messages.push(message);
                        self.index_by_id.insert(message_id, self.messages.len() - 1);
                    }
                }
            }
            _ => {}
        }
    }

    fn merge_into(&mut self, index: usize, metadata: &JsonObject) {
        let message = &mut self.messages[index];
        match message.text_fields_mut() {
            Some(fields) => merge_metadata(fields.metadata, metadata),
            None => message.merge_metadata_into_other(metadata),
        }
    }

    /// MESSAGES_SNAPSHOT: replace listed messages in place, drop unlisted ones (activity and
    /// reasoning messages only when the snapshot carries their role at all), append the rest.
    fn restate(&mut self, snapshot: &[Message]) {
        let mut snapshot_index: HashMap<&str, usize> = HashMap::with_capacity(snapshot.len());
        for (position, message) in snapshot.iter().enumerate() {
            snapshot_index.entry(message.id()).or_insert(position);
        }
        let snapshot_roles: HashSet<&str> = snapshot.iter().map(Message::role_name).collect();
        let mut placed = vec![false; snapshot.len()];
        let mut restated = Vec::with_capacity(self.messages.len().max(snapshot.len()));
        for message in self.messages.drain(..) {
            if let Some(&position) = snapshot_index.get(message.id()) {
                if !placed[position] {
                    placed[position] = true;
                    restated.push(snapshot[position].clone());
                }
            } else {
                let role = message.role_name();
                let all_or_nothing = role == "activity" || role == "reasoning";
                if all_or_nothing && !snapshot_roles.contains(role) {
                    restated.push(message);
                }
            }
        }
        for (position, message) in snapshot.iter().enumerate() {
            if snapshot_index.get(message.id()) == Some(&position) && !placed[position] {
                placed[position] = true;
                restated.push(message.clone());
            }
        }
        self.messages = restated;
        self.index_by_id.clear();
        for (index, message) in self.messages.iter().enumerate() {
            self.index_by_id.insert(message.id(), index);
        }
    }
}
