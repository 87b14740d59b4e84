//! TEXT_MESSAGE_CHUNK expansion, and the borrowed [`Op`] every later stage consumes.
//!
//! The compact chunk spelling is turned into START / CONTENT / END before verification, exactly
//! as the streaming pattern (AG-UI 1.0 `transformChunks`) does it: one pending chunk stream per
//! lane (a lane is a subagent, absent = the parent agent), the first-chunk requirement, the
//! conflicting-repeat rule, and the list of events that close a pending stream. Ops borrow from
//! the input event and from the expander's lane state, so passing an explicit CONTENT through
//! costs no allocation.

use crate::event::{Event, JsonObject, OtherKind, Role, TextMessageChunk};
use crate::message::Message;
use crate::violation::{Rule, Violation};

/// One step of the normalised stream: what the verifier checks and the assembler applies.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Op<'a> {
    RunStarted {
        /// History the run's input echoed (added to the conversation where absent).
        input_messages: &'a [Message],
    },
    RunFinished,
    RunError,
    Start {
        message_id: &'a str,
        /// As sent; `None` means `assistant`.
        role: Option<Role>,
        name: Option<&'a str>,
        owner: Option<&'a str>,
        metadata: Option<&'a JsonObject>,
    },
    Content {
        message_id: &'a str,
        delta: &'a str,
        owner: Option<&'a str>,
        metadata: Option<&'a JsonObject>,
    },
    End {
        message_id: &'a str,
        owner: Option<&'a str>,
        metadata: Option<&'a JsonObject>,
    },
    Snapshot {
        messages: &'a [Message],
    },
    /// A known event outside the text family: the assembler applies the tool-call ones; to the
    /// verifier it only takes part in the run lifecycle.
    Other {
        type_name: &'a str,
        /// The whole event, `type` included.
        raw: &'a JsonObject,
    },
}

impl Op<'_> {
    /// The event type this op stands for, as the lifecycle messages name it.
    pub fn type_name(&self) -> &str {
        match self {
            Op::RunStarted { .. } => "RUN_STARTED",
            Op::RunFinished => "RUN_FINISHED",
            Op::RunError => "RUN_ERROR",
            Op::Start { .. } => "TEXT_MESSAGE_START",
            Op::Content { .. } => "TEXT_MESSAGE_CONTENT",
            Op::End { .. } => "TEXT_MESSAGE_END",
            Op::Snapshot { .. } => "MESSAGES_SNAPSHOT",
            Op::Other { type_name, .. } => type_name,
        }
    }
}

/// A chunk stream being assembled in one lane.
#[derive(Debug, Clone)]
struct PendingChunk {
    owner: Option<String>,
    message_id: String,
    /// Established role: the opener's, or `assistant`.
    role: Role,
    /// Established name: the opener's; `None` is an established "absent".
    name: Option<String>,
}

/// Expands TEXT_MESSAGE_CHUNK events and passes every other event through as an [`Op`].
///
/// Lanes are kept in the order they opened (closing "all lanes" follows that order). Only lanes
/// with a pending stream exist, so the scan per event is over the open chunk streams, normally
/// zero or one.
#[derive(Debug, Clone, Default)]
pub struct ChunkExpander {
    lanes: Vec<PendingChunk>,
}

fn owner_label(owner: Option<&str>) -> String {
    format!("'{}'", owner.unwrap_or("(the parent agent)"))
}

impl ChunkExpander {
    pub fn new() -> ChunkExpander {
        ChunkExpander::default()
    }

    /// Expands one input event into zero or more ops, handing each to `emit` in order.
    pub fn expand<F>(
        &mut self,
        event: &Event,
        event_index: usize,
        emit: &mut F,
    ) -> Result<(), Violation>
    where
        F: FnMut(Op<'_>) -> Result<(), Violation>,
    {
        match event {
            Event::TextMessageContent(content) => self.pass_text(
                Op::Content {
                    message_id: &content.message_id,
                    delta: &content.delta,
                    owner: content.subagent_run_id.as_deref(),
                    metadata: content.metadata.as_ref(),
                },
                emit,
            ),
            Event::TextMessageStart(start) => self.pass_text(
                Op::Start {
                    message_id: &start.message_id,
                    role: start.role,
                    name: start.name.as_deref(),
                    owner: start.subagent_run_id.as_deref(),
                    metadata: start.metadata.as_ref(),
                },
                emit,
            ),
            Event::TextMessageEnd(end) => self.pass_text(
                Op::End {
                    message_id: &end.message_id,
                    owner: end.subagent_run_id.as_deref(),
                    metadata: end.metadata.as_ref(),
                },
                emit,
            ),
            Event::TextMessageChunk(chunk) => self.chunk(chunk, event_index, emit),
            Event::RunStarted(started) => {
                self.close_all(emit)?;
                let input_messages = started
                    .input
                    .as_ref()
                    .map_or(&[][..], |input| &input.messages);
                emit(Op::RunStarted { input_messages })
            }
            Event::RunFinished(_) => {
                self.close_all(emit)?;
                emit(Op::RunFinished)
            }
            Event::RunError(_) => {
                self.close_all(emit)?;
                emit(Op::RunError)
            }
            Event::MessagesSnapshot(snapshot) => {
                self.close_all(emit)?;
                emit(Op::Snapshot {
                    messages: &snapshot.messages,
                })
            }
            Event::Other(other) => match other.kind {
                OtherKind::Unknown => Ok(()),
                OtherKind::PassThrough => emit(Op::Other {
                    type_name: &other.type_name,
                    raw: &other.raw,
                }),
                OtherKind::ClosesOwnLane => {
                    self.close_lane(other.subagent_run_id.as_deref(), emit)?;
                    emit(Op::Other {
                        type_name: &other.type_name,
                        raw: &other.raw,
                    })
                }
                OtherKind::ClosesSubagentLane => {
                    if other.subagent_run_id.is_some() {
                        self.close_lane(other.subagent_run_id.as_deref(), emit)?;
                    }
                    emit(Op::Other {
                        type_name: &other.type_name,
                        raw: &other.raw,
                    })
                }
            },
        }
    }

    /// Passes an explicit START, CONTENT or END on, after closing its lane's pending chunk
    /// stream (the explicit spelling ends the compact one).
    pub fn pass_text<F>(&mut self, op: Op<'_>, emit: &mut F) -> Result<(), Violation>
    where
        F: FnMut(Op<'_>) -> Result<(), Violation>,
    {
        let owner = match op {
            Op::Start { owner, .. } | Op::Content { owner, .. } | Op::End { owner, .. } => owner,
            _ => unreachable!("pass_text is only given START, CONTENT or END ops"),
        };
        self.close_lane(owner, emit)?;
        emit(op)
    }

    fn close_lane<F>(&mut self, owner: Option<&str>, emit: &mut F) -> Result<(), Violation>
    where
        F: FnMut(Op<'_>) -> Result<(), Violation>,
    {
        if self.lanes.is_empty() {
            return Ok(());
        }
        match self
            .lanes
            .iter()
            .position(|lane| lane.owner.as_deref() == owner)
        {
            Some(index) => {
                let lane = self.lanes.remove(index);
                emit(Op::End {
                    message_id: &lane.message_id,
                    owner: lane.owner.as_deref(),
                    metadata: None,
                })
            }
            None => Ok(()),
        }
    }

    fn close_all<F>(&mut self, emit: &mut F) -> Result<(), Violation>
    where
        F: FnMut(Op<'_>) -> Result<(), Violation>,
    {
        for lane in std::mem::take(&mut self.lanes) {
            emit(Op::End {
                message_id: &lane.message_id,
                owner: lane.owner.as_deref(),
                metadata: None,
            })?;
        }
        Ok(())
    }

    fn chunk<F>(
        &mut self,
        chunk: &TextMessageChunk,
        event_index: usize,
        emit: &mut F,
    ) -> Result<(), Violation>
    where
        F: FnMut(Op<'_>) -> Result<(), Violation>,
    {
        let tag = chunk.subagent_run_id.as_deref();
        // 1. Lane resolution.
        let lane_index = if let Some(id) = chunk.message_id.as_deref() {
            match self.lanes.iter().position(|lane| lane.message_id == id) {
                Some(index) => {
                    let owner = self.lanes[index].owner.as_deref();
                    if tag.is_some() && tag != owner {
                        return Err(Violation::new(
                            Rule::OwnerMismatch,
                            event_index,
                            format!(
                                "Cannot continue text message '{id}': chunk subagentRunId '{}' does not match the open stream's subagent {}.",
                                tag.unwrap_or_default(),
                                owner_label(owner)
                            ),
                        ));
                    }
                    Some(index)
                }
                None => self
                    .lanes
                    .iter()
                    .position(|lane| lane.owner.as_deref() == tag),
            }
        } else if tag.is_some() {
            self.lanes
                .iter()
                .position(|lane| lane.owner.as_deref() == tag)
        } else if let Some(parent) = self.lanes.iter().position(|lane| lane.owner.is_none()) {
            Some(parent)
        } else {
            match self.lanes.len() {
                0 => None,
                1 => Some(0),
                open => {
                    return Err(Violation::new(
                        Rule::ChunkAmbiguousLane,
                        event_index,
                        format!(
                            "Ambiguous TEXT_MESSAGE_CHUNK: it carries neither a messageId nor a subagentRunId, but {open} lanes have an open text message. Attribute the chunk to the subagent it belongs to."
                        ),
                    ));
                }
            }
        };

        let carries_content = chunk.delta.is_some() || chunk.raw_event.is_some();
        let delta = chunk.delta.as_deref().unwrap_or("");

        // 2. Continuation.
        if let Some(index) = lane_index {
            let lane = &self.lanes[index];
            let continues = match chunk.message_id.as_deref() {
                None => true,
                Some(id) => id == lane.message_id,
            };
            if continues {
                if let Some(role) = chunk.role
                    && role != lane.role
                {
                    return Err(Violation::new(
                        Rule::ChunkConflictingRepeat,
                        event_index,
                        format!(
                            "Cannot continue text message '{}': chunk role '{}' does not match the open stream's role '{}'.",
                            lane.message_id,
                            role.as_str(),
                            lane.role.as_str()
                        ),
                    ));
                }
                if let Some(name) = chunk.name.as_deref()
                    && Some(name) != lane.name.as_deref()
                {
                    let established = lane
                        .name
                        .as_deref()
                        .map_or_else(|| "(absent)".to_owned(), |name| format!("'{name}'"));
                    return Err(Violation::new(
                        Rule::ChunkConflictingRepeat,
                        event_index,
                        format!(
                            "Cannot continue text message '{}': chunk name '{name}' does not match the open stream's name {established}.",
                            lane.message_id
                        ),
                    ));
                }
                if carries_content || chunk.metadata.is_some() {
                    emit(Op::Content {
                        message_id: &lane.message_id,
                        delta,
                        owner: lane.owner.as_deref(),
                        metadata: chunk.metadata.as_ref(),
                    })?;
                }
                return Ok(());
            }
            // A different id in the same lane: close the pending stream first.
            let lane = self.lanes.remove(index);
            emit(Op::End {
                message_id: &lane.message_id,
                owner: lane.owner.as_deref(),
                metadata: None,
            })?;
        }

        // 3. Opener.
        let Some(id) = chunk.message_id.as_deref() else {
            return Err(Violation::new(
                Rule::ChunkFirstWithoutId,
                event_index,
                "First TEXT_MESSAGE_CHUNK must have a messageId".to_owned(),
            ));
        };
        let role = chunk.role.unwrap_or(Role::Assistant);
        self.lanes.push(PendingChunk {
            owner: tag.map(str::to_owned),
            message_id: id.to_owned(),
            role,
            name: chunk.name.clone(),
        });
        emit(Op::Start {
            message_id: id,
            role: Some(role),
            name: chunk.name.as_deref(),
            owner: tag,
            metadata: chunk.metadata.as_ref(),
        })?;
        if carries_content {
            emit(Op::Content {
                message_id: id,
                delta,
                owner: tag,
                metadata: chunk.metadata.as_ref(),
            })?;
        }
        Ok(())
    }
}
