//! From the session's events to the transcript as AG-UI text messages (DESIGN.md rule 3), and to
//! the exchange structure the transcript and the saved turn files share.
//!
//! The session speaks in parts (speech of either speaker, text, tool calls) and turn boundaries;
//! the transcript speaks in AG-UI messages grouped into runs, one run per exchange. This bridge
//! numbers the exchanges and hands each part's life to [`walkie_agui::TranscriptWriter`], which
//! keeps the AG-UI rules: the user's message opens at their speech start, so it sits before the
//! reply; it closes when they stop speaking; a transcript that arrives later (even after the
//! reply) reopens it and appends. Pure: the caller passes each event's time.
//!
//! Why the bridge also reports what it decided ([`BridgeNote`]): the store names its turn WAVs
//! (`turns/NNNN-user.wav`, `NNNN-assistant.wav`) and journals each part with its exchange, and
//! those numbers must be the ones in the message ids ([`TranscriptWriter::message_id`]). One
//! numbering, decided here, is the only way they cannot drift apart.
//!
//! The rules, chosen for what a person reading the transcript expects:
//! * A message the user typed (the session's enqueued messages) opens a new exchange too, whole
//!   at once: their message, then the reply to it.
//! * A user speech part opens a new exchange (their message at their speech start). An earlier
//!   exchange takes no new part after that: a reply being cut by the user's barge-in stays in
//!   its exchange, and the new question, with the reply to it, comes after.
//! * An assistant part (speech or text) joins the latest user exchange while that exchange has no
//!   reply yet. Otherwise — the assistant speaks again after a tool call, or unprompted — it opens
//!   an exchange of its own: one assistant part is one message, so no later part's final
//!   transcript can overwrite an earlier part's words.
//! * A tool-call part has no message; it belongs to the latest exchange if that has not ended.
//!   In the transcript the call, and later its result, are written in the latest exchange,
//!   ended or not (AG-UI tool-call events; see [`walkie_agui::writer`]).
//! * `TurnComplete` ends the exchange whose reply started last, once. With no reply in progress it
//!   ends nothing: after a barge-in, the cancelled reply's `TurnComplete` (or that of a response
//!   cancelled before it said anything) must not end the new question's exchange before its
//!   reply.
//! * A revised transcript (an empty delta carrying the whole text) replaces what was shown at
//!   once, as the session's delta asks ("render this, replacing").

use std::collections::HashMap;

use walkie_agui::{
    EarlierMessage, Event, JsonObject, Speaker as TranscriptSpeaker, TranscriptInput,
    TranscriptWriter, TurnId,
};

use crate::event::{
    Part, PartDelta, PartIndex, Picture, SessionEvent, Speaker, ToolResult, UserContent,
};

/// The metadata key under which a user message lists the pictures it showed, in order: each
/// `{"widthPx", "heightPx", "thumbnail"}` (the thumbnail a JPEG data URL). The pictures
/// themselves are saved as files of the turn.
pub const PICTURES_METADATA_KEY: &str = "pictures";

fn picture_metadata(picture: &Picture) -> serde_json::Value {
    serde_json::json!({
        "widthPx": picture.width_px(),
        "heightPx": picture.height_px(),
        "thumbnail": picture.thumbnail_data_url(),
    })
}

/// The name of the mark (an AG-UI CUSTOM event, [`TranscriptBridge::mark`]) on a reply the
/// user cut off.
pub const MARK_INTERRUPTED: &str = "walkie.interrupted";
/// The name of the mark on a recording the user took back, not sent.
pub const MARK_CANCELLED: &str = "walkie.cancelled";
/// The name of the mark on a reply saying how long after the user's turn it was first heard
/// (`latencyMs`, and where the wait went in `split` when known).
pub const MARK_LATENCY: &str = "walkie.latency";

/// What [`TranscriptBridge::on_event_noted`] decided about the exchanges for one event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BridgeNote {
    /// The event changes no exchange: no part of it, or a part the bridge does not know (its
    /// start never came, or it already ended).
    Nothing,
    /// The event is the start, a delta or the end of part `index`, which belongs to exchange
    /// `turn`. `opens_turn` is true on the start that opened the exchange: every earlier exchange
    /// then takes no new part (those still open finish in their own exchange).
    PartInTurn {
        index: PartIndex,
        turn: TurnId,
        speaker: Speaker,
        opens_turn: bool,
    },
    /// The model completed exchange `turn` (a `TurnComplete` after its reply started).
    TurnEnded { turn: TurnId },
    /// The event is a whole message of `speaker`'s (typed, not spoken) that opened exchange
    /// `turn`: every earlier exchange then takes no new part, as after a part that opens one.
    MessageOpensTurn { turn: TurnId, speaker: Speaker },
}

/// A part the bridge follows: its exchange and, for speech and text, its message's speaker.
#[derive(Debug, Clone, Copy)]
struct OpenPart {
    turn: TurnId,
    speaker: Speaker,
    message: Option<TranscriptSpeaker>,
}

/// Turns session events into AG-UI events for the webview and the saved transcript.
#[derive(Debug, Clone)]
pub struct TranscriptBridge {
    writer: TranscriptWriter,
    /// The last exchange opened, by either speaker.
    latest_turn: Option<TurnId>,
    /// The exchange the user's last utterance opened.
    user_turn: Option<TurnId>,
    /// The exchange of the reply in progress (the last assistant message part started).
    reply_turn: Option<TurnId>,
    /// Whether `TurnComplete` already ended `reply_turn`.
    reply_ended: bool,
    /// Parts started and not ended.
    parts: HashMap<PartIndex, OpenPart>,
    /// The exchange each tool call was written in, by call id, for its result.
    tool_call_turns: HashMap<String, TurnId>,
}

impl TranscriptBridge {
    /// A bridge for one conversation; `thread_id` becomes the AG-UI `threadId`.
    pub fn new(thread_id: impl Into<String>) -> Self {
        Self {
            writer: TranscriptWriter::new(thread_id),
            latest_turn: None,
            user_turn: None,
            reply_turn: None,
            reply_ended: false,
            parts: HashMap::new(),
            tool_call_turns: HashMap::new(),
        }
    }

    /// A bridge that goes on with a saved conversation (see
    /// [`TranscriptWriter::continuing`]): its exchanges are numbered after the earlier ones.
    pub fn continuing(
        thread_id: impl Into<String>,
        earlier: impl IntoIterator<Item = impl Into<EarlierMessage>>,
    ) -> Self {
        let earlier: Vec<EarlierMessage> = earlier.into_iter().map(Into::into).collect();
        let latest_turn = earlier
            .iter()
            .filter_map(|message| TranscriptWriter::turn_of_message(message.message_id()))
            .map(|(turn, _)| turn)
            .max();
        Self {
            writer: TranscriptWriter::continuing(thread_id, earlier),
            latest_turn,
            ..Self::new(String::new())
        }
    }

    /// Restates every message so far, earlier ones included, in a run of its own (see
    /// [`TranscriptWriter::restate`]).
    pub fn restate(&mut self, at_ms: i64, out: &mut Vec<Event>) {
        self.writer.restate(at_ms, out);
    }

    fn new_turn(&mut self) -> TurnId {
        let turn = TurnId(self.latest_turn.map_or(1, |TurnId(n)| n.saturating_add(1)));
        self.latest_turn = Some(turn);
        turn
    }

    /// Appends to `out` the AG-UI events that `event`, observed at `at_ms` (milliseconds since
    /// the Unix epoch), means for the transcript. Events without meaning for it add nothing.
    /// The same as [`TranscriptBridge::on_event_noted`] for a caller that needs no note.
    pub fn on_event(&mut self, at_ms: i64, event: &SessionEvent, out: &mut Vec<Event>) {
        self.on_event_noted(at_ms, event, out);
    }

    /// Appends to `out` the AG-UI events that `event`, observed at `at_ms`, means for the
    /// transcript, and tells which exchange it belongs to (see the module docs for the rules).
    pub fn on_event_noted(
        &mut self,
        at_ms: i64,
        event: &SessionEvent,
        out: &mut Vec<Event>,
    ) -> BridgeNote {
        match event {
            SessionEvent::PartStart(start) => {
                self.part_started(at_ms, start.index, &start.part, out)
            }
            SessionEvent::PartDelta(delta) => {
                let Some(part) = self.parts.get(&delta.index).copied() else {
                    return BridgeNote::Nothing;
                };
                if let Some(speaker) = part.message {
                    let turn = part.turn;
                    let input = match &delta.delta {
                        PartDelta::Speech(speech) => {
                            match (&speech.transcript_delta, &speech.transcript) {
                                (Some(appended), _) if !appended.is_empty() => {
                                    Some(TranscriptInput::TranscriptDelta {
                                        turn,
                                        speaker,
                                        delta: appended,
                                    })
                                }
                                // A revision: the whole transcript replaces what was shown.
                                (Some(_), Some(whole)) => Some(TranscriptInput::TranscriptDone {
                                    turn,
                                    speaker,
                                    transcript: whole,
                                }),
                                _ => None,
                            }
                        }
                        PartDelta::Text(text) => Some(TranscriptInput::TranscriptDelta {
                            turn,
                            speaker,
                            delta: &text.content_delta,
                        }),
                    };
                    if let Some(input) = input {
                        self.writer.push(at_ms, input, out);
                    }
                }
                Self::note(delta.index, part, false)
            }
            SessionEvent::PartEnd(end) => {
                let Some(part) = self.parts.remove(&end.index) else {
                    return BridgeNote::Nothing;
                };
                if let Some(speaker) = part.message {
                    let turn = part.turn;
                    let transcript = match &end.part {
                        Part::Speech(speech) => speech.transcript.as_deref(),
                        Part::Text(text) => Some(text.content.as_str()),
                        Part::ToolCall(_) => None,
                    };
                    let input = match transcript {
                        Some(transcript) => TranscriptInput::TranscriptDone {
                            turn,
                            speaker,
                            transcript,
                        },
                        None => TranscriptInput::SpeechStopped { turn, speaker },
                    };
                    self.writer.push(at_ms, input, out);
                }
                Self::note(end.index, part, false)
            }
            SessionEvent::InputSpeechEnd(_) => {
                // The user stopped talking: their message closes until a transcript reopens it.
                if let Some(turn) = self.user_turn {
                    self.writer.push(
                        at_ms,
                        TranscriptInput::SpeechStopped {
                            turn,
                            speaker: TranscriptSpeaker::User,
                        },
                        out,
                    );
                }
                BridgeNote::Nothing
            }
            SessionEvent::EnqueuedMessages(delivered) => {
                let parts = || delivered.messages.iter().flat_map(|message| &message.parts);
                let text = parts()
                    .filter_map(|part| match part {
                        UserContent::Text { content } => Some(content.as_str()),
                        UserContent::Image(_) => None,
                    })
                    .collect::<Vec<_>>()
                    .join("\n\n");
                let pictures: Vec<serde_json::Value> = parts()
                    .filter_map(|part| match part {
                        UserContent::Image(picture) => Some(picture_metadata(picture)),
                        UserContent::Text { .. } => None,
                    })
                    .collect();
                let turn = self.new_turn();
                self.user_turn = Some(turn);
                let speaker = TranscriptSpeaker::User;
                self.writer
                    .push(at_ms, TranscriptInput::SpeechStarted { turn, speaker }, out);
                if !pictures.is_empty() {
                    let metadata = JsonObject::from_iter([(
                        PICTURES_METADATA_KEY.to_owned(),
                        serde_json::Value::Array(pictures),
                    )]);
                    self.writer.push(
                        at_ms,
                        TranscriptInput::Annotate {
                            turn,
                            speaker,
                            metadata: &metadata,
                        },
                        out,
                    );
                }
                for input in [
                    TranscriptInput::TranscriptDone {
                        turn,
                        speaker,
                        transcript: &text,
                    },
                    TranscriptInput::SpeechStopped { turn, speaker },
                ] {
                    self.writer.push(at_ms, input, out);
                }
                BridgeNote::MessageOpensTurn {
                    turn,
                    speaker: Speaker::User,
                }
            }
            SessionEvent::FunctionToolResult(result) => {
                let (call_id, content) = match &result.result {
                    ToolResult::ToolReturn(returned) => (
                        &returned.tool_call_id,
                        match &returned.content {
                            serde_json::Value::String(text) => text.clone(),
                            other => other.to_string(),
                        },
                    ),
                    ToolResult::RetryPrompt(retry) => (&retry.tool_call_id, retry.content.clone()),
                };
                if let Some(&turn) = self.tool_call_turns.get(call_id.as_str()) {
                    self.writer.push(
                        at_ms,
                        TranscriptInput::ToolResult {
                            turn,
                            call_id,
                            content: &content,
                        },
                        out,
                    );
                }
                BridgeNote::Nothing
            }
            SessionEvent::TurnComplete => match self.reply_turn {
                Some(turn) if !self.reply_ended => {
                    self.reply_ended = true;
                    self.writer
                        .push(at_ms, TranscriptInput::TurnComplete { turn }, out);
                    BridgeNote::TurnEnded { turn }
                }
                _ => BridgeNote::Nothing,
            },
            _ => BridgeNote::Nothing,
        }
    }

    fn part_started(
        &mut self,
        at_ms: i64,
        index: PartIndex,
        part: &Part,
        out: &mut Vec<Event>,
    ) -> BridgeNote {
        let (turn, speaker, message, opens_turn) = match part {
            Part::Speech(speech) if speech.speaker == Speaker::User => {
                let turn = self.new_turn();
                self.user_turn = Some(turn);
                (turn, Speaker::User, Some(TranscriptSpeaker::User), true)
            }
            Part::Speech(_) | Part::Text(_) => {
                // The reply to the latest user exchange, unless that exchange already has its
                // reply (a reply in it or after it): then the assistant opens an exchange.
                let (turn, opens_turn) = match self.user_turn {
                    Some(user) if self.reply_turn.is_none_or(|reply| reply < user) => (user, false),
                    _ => (self.new_turn(), true),
                };
                self.reply_turn = Some(turn);
                self.reply_ended = false;
                (
                    turn,
                    Speaker::Assistant,
                    Some(TranscriptSpeaker::Assistant),
                    opens_turn,
                )
            }
            Part::ToolCall(call) => {
                // Before any exchange there is no run to write it in (the model only calls
                // after the user said or typed something).
                if let Some(turn) = self.latest_turn {
                    self.tool_call_turns.insert(call.tool_call_id.clone(), turn);
                    self.writer.push(
                        at_ms,
                        TranscriptInput::ToolCall {
                            turn,
                            call_id: &call.tool_call_id,
                            tool_name: &call.tool_name,
                            arguments: &call.args,
                        },
                        out,
                    );
                }
                let ended = |turn| self.reply_ended && self.reply_turn == Some(turn);
                match self.latest_turn {
                    Some(turn) if !ended(turn) => (turn, Speaker::Assistant, None, false),
                    _ => return BridgeNote::Nothing,
                }
            }
        };
        let open = OpenPart {
            turn,
            speaker,
            message,
        };
        self.parts.insert(index, open);
        if let Some(speaker) = message {
            self.writer
                .push(at_ms, TranscriptInput::SpeechStarted { turn, speaker }, out);
        }
        Self::note(index, open, opens_turn)
    }

    fn note(index: PartIndex, part: OpenPart, opens_turn: bool) -> BridgeNote {
        BridgeNote::PartInTurn {
            index,
            turn: part.turn,
            speaker: part.speaker,
            opens_turn,
        }
    }

    /// The exchange of a part that started and has not ended.
    pub fn turn_of(&self, index: PartIndex) -> Option<TurnId> {
        self.parts.get(&index).map(|part| part.turn)
    }

    /// Ends the conversation's transcript: closes what is open, finishes the last run.
    pub fn finish(&mut self, at_ms: i64, out: &mut Vec<Event>) {
        self.writer.finish(at_ms, out);
    }

    /// The call carrying the conversation ended, and another may carry it on: what is open
    /// closes and the run finishes, as in [`TranscriptBridge::finish`], and the call's parts
    /// are forgotten (the next session numbers its parts from the start again). The exchanges
    /// keep their numbers, so the next call's messages get ids of their own.
    pub fn call_ended(&mut self, at_ms: i64, out: &mut Vec<Event>) {
        self.writer.finish(at_ms, out);
        self.parts.clear();
        self.user_turn = None;
        self.reply_turn = None;
        self.reply_ended = false;
    }

    /// Closes the messages still open (their END) and leaves their run going, so a mark on one
    /// comes after it ([`Self::mark`]).
    pub fn close_open_messages(&mut self, at_ms: i64, out: &mut Vec<Event>) {
        self.writer.close_open_messages(at_ms, out);
    }

    /// Marks message `message_id` (one of the transcript's) in the one ordered stream: a CUSTOM
    /// event named `name` (one of the `MARK_*`), its value `fields` with the message's id,
    /// inside its exchange's run. A message the transcript never wrote takes no mark.
    pub fn mark(
        &mut self,
        at_ms: i64,
        message_id: &str,
        name: &str,
        fields: &JsonObject,
        out: &mut Vec<Event>,
    ) {
        if let Some((turn, speaker)) = TranscriptWriter::turn_of_message(message_id) {
            let mark = TranscriptInput::Mark {
                turn,
                speaker,
                name,
                fields,
            };
            self.writer.push(at_ms, mark, out);
        }
    }

    /// Whether a part of either speaker has started and not ended.
    pub fn has_open_parts(&self) -> bool {
        !self.parts.is_empty()
    }

    /// The message id of the assistant's reply still in progress (started, its turn not yet
    /// complete), if there is one.
    pub fn reply_in_progress(&self) -> Option<String> {
        let turn = self.reply_turn.filter(|_| !self.reply_ended)?;
        let message_id = TranscriptWriter::message_id(turn, TranscriptSpeaker::Assistant);
        self.writer
            .transcript()
            .any(|(id, _, _)| id == message_id)
            .then_some(message_id)
    }

    /// The transcript so far: (message id, role, text) in order of first appearance.
    pub fn transcript(&self) -> impl Iterator<Item = (&str, walkie_agui::Role, &str)> {
        self.writer.transcript()
    }

    /// The transcript so far as a new session is given it: each message's role and text, and
    /// where a message showed pictures, a line saying so (the pictures themselves are not
    /// given again), so the model does not speak of a picture it cannot see; each tool call
    /// and each answer is told in a line of the assistant's, so it knows what it learnt and
    /// does not call again for it.
    pub fn restorable(&self) -> impl Iterator<Item = (walkie_agui::Role, String)> + use<> {
        let restored: Vec<(walkie_agui::Role, String)> = self
            .writer
            .messages()
            .iter()
            .filter_map(|message| match message.role() {
                Some(role) => {
                    let text = message.content().unwrap_or_default();
                    let shown = message
                        .metadata()
                        .and_then(|metadata| metadata.get(PICTURES_METADATA_KEY))
                        .and_then(serde_json::Value::as_array)
                        .map_or(0, Vec::len);
                    Some((role, with_pictures_note(text, shown)))
                }
                None => tool_note(message).map(|note| (walkie_agui::Role::Assistant, note)),
            })
            .collect();
        restored.into_iter()
    }
}

/// The most characters of a tool's arguments, or of its answer, a restored conversation
/// repeats.
pub const RESTORED_TOOL_ANSWER_CHARS: usize = 2_000;

fn with_pictures_note(text: &str, shown: usize) -> String {
    let note = match shown {
        0 => return text.to_owned(),
        1 => "[The user showed a picture here; it is not part of this copy of the conversation.]"
            .to_owned(),
        count => format!(
            "[The user showed {count} pictures here; they are not part of this copy of the \
             conversation.]"
        ),
    };
    let text = text.trim();
    if text.is_empty() {
        note
    } else {
        format!("{note}\n{text}")
    }
}

/// A tool call or a tool's answer, told in words; `None` for any other message.
fn tool_note(message: &walkie_agui::Message) -> Option<String> {
    if let Some(serde_json::Value::Array(calls)) = message.field("toolCalls") {
        let told: Vec<String> = calls
            .iter()
            .map(|call| {
                let text = |pointer: &str| {
                    call.pointer(pointer)
                        .and_then(serde_json::Value::as_str)
                        .unwrap_or_default()
                };
                format!(
                    "[I called the tool {} with {}.]",
                    text("/function/name"),
                    cut(text("/function/arguments"))
                )
            })
            .collect();
        return Some(told.join("\n"));
    }
    if message.role_name() != "tool" {
        return None;
    }
    let answer = match message.field("content")? {
        serde_json::Value::String(text) => text.clone(),
        other => other.to_string(),
    };
    Some(format!("[The tool answered: {}]", cut(&answer)))
}

/// At most [`RESTORED_TOOL_ANSWER_CHARS`] of `text`, with `…` where it was cut.
fn cut(text: &str) -> String {
    let mut kept: String = text.chars().take(RESTORED_TOOL_ANSWER_CHARS).collect();
    if kept.len() < text.len() {
        kept.push('…');
    }
    kept
}
