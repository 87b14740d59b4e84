//! The producer side: turns the session's speech and transcript signals for both speakers into
//! AG-UI text-message events that pass the strict verifier.
//!
//! Design rule 3 (DESIGN.md): a user message is opened at the user's speech start, so it sits
//! before the reply even though its transcript arrives later; a transcript that arrives after the
//! message closed reopens it ("closed, not sealed") and appends. Each turn gets its own run. A
//! signal for a turn other than the active run's finishes that run first (closing what it left
//! open) and starts a run for the signal's turn, so late transcripts always land inside a run.
//! The writer reads no clock and invents no randomness: the caller passes the time of every
//! signal and ids derive from the thread id and the caller's turn numbers.
//!
//! A tool call the model made is written whole when it is known (TOOL_CALL_START, ARGS, END,
//! with no parent message: AG-UI's client then holds it in an assistant message of the call's
//! id), and its result as TOOL_CALL_RESULT (a tool message, id `<call id>-result`), each in the
//! run of the exchange it belongs to. Both are kept for restatements, as the client built them.

use std::collections::{HashMap, HashSet};

use serde_json::{Value, json};

use crate::event::{
    Event, JsonObject, MessagesSnapshot, OtherEvent, Role, RunFinished, RunStarted,
    TextMessageContent, TextMessageEnd, TextMessageStart,
};
use crate::message::Message;

/// The caller's number for one exchange (a user utterance and the reply to it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TurnId(pub u64);

/// Who is speaking.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Speaker {
    User,
    Assistant,
}

impl Speaker {
    fn role(self) -> Role {
        match self {
            Speaker::User => Role::User,
            Speaker::Assistant => Role::Assistant,
        }
    }

    fn label(self) -> &'static str {
        match self {
            Speaker::User => "user",
            Speaker::Assistant => "assistant",
        }
    }
}

/// One signal from the session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TranscriptInput<'a> {
    /// The speaker started talking (user: VAD or push-to-talk; assistant: audible output).
    SpeechStarted { turn: TurnId, speaker: Speaker },
    /// The speaker stopped talking.
    SpeechStopped { turn: TurnId, speaker: Speaker },
    /// More transcript text for the speaker's utterance in this turn.
    TranscriptDelta {
        turn: TurnId,
        speaker: Speaker,
        delta: &'a str,
    },
    /// The final transcript of the utterance. When it extends what was streamed, the rest is
    /// appended; when it revises it, a MESSAGES_SNAPSHOT restates the history with the revision.
    TranscriptDone {
        turn: TurnId,
        speaker: Speaker,
        transcript: &'a str,
    },
    /// The model finished the turn: its run finishes.
    TurnComplete { turn: TurnId },
    /// Metadata for the speaker's message in this turn (what a typed message showed, say),
    /// merged key by key into what it has. It is stamped on the message's next event (its
    /// content or its end; a closed message is reopened and closed to carry it) and kept in
    /// every restatement.
    Annotate {
        turn: TurnId,
        speaker: Speaker,
        metadata: &'a JsonObject,
    },
    /// The model called a tool in this turn, with these arguments (JSON text, whole). A call
    /// id already written is not written again.
    ToolCall {
        turn: TurnId,
        call_id: &'a str,
        tool_name: &'a str,
        arguments: &'a str,
    },
    /// What the call gave (the text the model was given). One result per call: a second is
    /// not written.
    ToolResult {
        turn: TurnId,
        call_id: &'a str,
        content: &'a str,
    },
    /// Something about the speaker's message in this turn that AG-UI has no event of its own
    /// for (a reply cut off, a recording taken back, how long a reply took to be heard): a
    /// CUSTOM event named `name` in the turn's run, after the message's events so far, its
    /// `value` these fields with the message's `messageId`. Nothing for a message never
    /// written.
    Mark {
        turn: TurnId,
        speaker: Speaker,
        name: &'a str,
        fields: &'a JsonObject,
    },
}

/// A message of a saved conversation that a writer goes on from
/// ([`TranscriptWriter::continuing`]).
#[derive(Debug, Clone, PartialEq)]
pub enum EarlierMessage {
    /// A text message, which a late transcript of its exchange may still reopen.
    Text {
        message_id: String,
        role: Role,
        text: String,
        metadata: Option<JsonObject>,
    },
    /// Any other message (the tool calls the model made, a tool's result): restated as it is.
    Kept(Message),
}

impl EarlierMessage {
    pub fn message_id(&self) -> &str {
        match self {
            EarlierMessage::Text { message_id, .. } => message_id,
            EarlierMessage::Kept(message) => message.id(),
        }
    }
}

impl From<(String, Role, String)> for EarlierMessage {
    fn from((message_id, role, text): (String, Role, String)) -> EarlierMessage {
        EarlierMessage::Text {
            message_id,
            role,
            text,
            metadata: None,
        }
    }
}

impl From<Message> for EarlierMessage {
    /// A text message with a plain string content (and no tool calls) is one the writer may
    /// reopen; any other is kept as it is.
    fn from(message: Message) -> EarlierMessage {
        match (message.role(), message.content()) {
            (Some(role), Some(text)) if message.field("toolCalls").is_none() => {
                EarlierMessage::Text {
                    message_id: message.id().to_owned(),
                    role,
                    text: text.to_owned(),
                    metadata: message.metadata().cloned(),
                }
            }
            _ => EarlierMessage::Kept(message),
        }
    }
}

/// Time of a signal in milliseconds since the Unix epoch (AG-UI `timestamp`).
pub type TimestampMs = i64;

#[derive(Debug, Clone)]
struct Utterance {
    message_id: String,
    role: Role,
    text: String,
    open: bool,
    /// Every metadata object annotated so far, merged.
    metadata: Option<JsonObject>,
    /// Metadata annotated since the message's last event, for its next one.
    unstamped: Option<JsonObject>,
    /// Not a text message of the writer's (a tool call, a tool's result): this is what a
    /// restatement says of it; it is never opened.
    kept: Option<Message>,
}

impl Utterance {
    fn kept(message: Message) -> Utterance {
        Utterance {
            message_id: message.id().to_owned(),
            role: Role::Assistant,
            text: String::new(),
            open: false,
            metadata: None,
            unstamped: None,
            kept: Some(message),
        }
    }
}

#[derive(Debug, Clone)]
struct ActiveRun {
    turn: TurnId,
    run_id: String,
}

/// Writes a conversation's transcript as AG-UI events; see the module docs.
#[derive(Debug, Clone)]
pub struct TranscriptWriter {
    thread_id: String,
    active_run: Option<ActiveRun>,
    runs_per_turn: HashMap<TurnId, u32>,
    utterances: Vec<Utterance>,
    utterance_by_key: HashMap<(TurnId, Speaker), usize>,
    /// Indices of open utterances, in opening order.
    open: Vec<usize>,
    /// The ids of the messages kept as they are (tool calls and results), so none is written
    /// twice.
    kept_ids: HashSet<String>,
}

impl TranscriptWriter {
    pub fn new(thread_id: impl Into<String>) -> TranscriptWriter {
        TranscriptWriter {
            thread_id: thread_id.into(),
            active_run: None,
            runs_per_turn: HashMap::new(),
            utterances: Vec::new(),
            utterance_by_key: HashMap::new(),
            open: Vec::new(),
            kept_ids: HashSet::new(),
        }
    }

    /// A writer that goes on with a saved conversation: `earlier` holds its messages (id,
    /// role, text, metadata; all closed), which a MESSAGES_SNAPSHOT restates, and whose
    /// exchanges keep their numbers (ids the writer did not make are kept, never reused).
    pub fn continuing(
        thread_id: impl Into<String>,
        earlier: impl IntoIterator<Item = impl Into<EarlierMessage>>,
    ) -> TranscriptWriter {
        let mut writer = TranscriptWriter::new(thread_id);
        for message in earlier {
            let (message_id, role, text, metadata) = match message.into() {
                EarlierMessage::Text {
                    message_id,
                    role,
                    text,
                    metadata,
                } => (message_id, role, text, metadata),
                EarlierMessage::Kept(message) => {
                    writer.kept_ids.insert(message.id().to_owned());
                    writer.utterances.push(Utterance::kept(message));
                    continue;
                }
            };
            if let Some(key) = TranscriptWriter::turn_of_message(&message_id) {
                writer.utterance_by_key.insert(key, writer.utterances.len());
            }
            writer.utterances.push(Utterance {
                message_id,
                role,
                text,
                open: false,
                metadata,
                unstamped: None,
                kept: None,
            });
        }
        writer
    }

    /// The exchange and speaker of a message id this writer makes (`user-3`), if it is one.
    pub fn turn_of_message(message_id: &str) -> Option<(TurnId, Speaker)> {
        let (label, number) = message_id.split_once('-')?;
        let speaker = match label {
            "user" => Speaker::User,
            "assistant" => Speaker::Assistant,
            _ => return None,
        };
        Some((TurnId(number.parse().ok()?), speaker))
    }

    /// Restates every message so far (what a view that starts now must show) in a run of its
    /// own: RUN_STARTED, MESSAGES_SNAPSHOT, RUN_FINISHED, so the stream keeps AG-UI's rule that
    /// events come inside a run even after earlier runs finished. The active run, if any, is
    /// finished first. The run's id (`run-restated-<at_ms>`) is none the writer gives a turn.
    pub fn restate(&mut self, at_ms: TimestampMs, out: &mut Vec<Event>) {
        if self.active_run.is_some() {
            self.finish_run(at_ms, out);
        }
        let run_id = format!("run-restated-{at_ms}");
        out.push(Event::RunStarted(Box::new(RunStarted {
            thread_id: self.thread_id.clone(),
            run_id: run_id.clone(),
            parent_run_id: None,
            input: None,
            protocol_version: None,
            timestamp: Some(at_ms),
            raw_event: None,
        })));
        out.push(self.snapshot(at_ms));
        out.push(Event::RunFinished(Box::new(RunFinished {
            thread_id: self.thread_id.clone(),
            run_id,
            result: None,
            outcome: None,
            usage: None,
            timestamp: Some(at_ms),
            raw_event: None,
        })));
    }

    /// The message id the writer uses for a speaker's utterance in a turn.
    pub fn message_id(turn: TurnId, speaker: Speaker) -> String {
        format!("{}-{}", speaker.label(), turn.0)
    }

    /// Turns one session signal, observed at `at_ms`, into events appended to `out`.
    pub fn push(&mut self, at_ms: TimestampMs, input: TranscriptInput<'_>, out: &mut Vec<Event>) {
        match input {
            TranscriptInput::SpeechStarted { turn, speaker } => {
                self.ensure_run(turn, at_ms, out);
                let index = self.utterance(turn, speaker, at_ms, out);
                self.ensure_open(index, at_ms, out);
            }
            TranscriptInput::SpeechStopped { turn, speaker } => {
                // An open message is always open inside its own turn's run (every path that
                // opens one starts that run first, and finishing a run closes everything), so
                // closing it needs no run change.
                if let Some(&index) = self.utterance_by_key.get(&(turn, speaker))
                    && self.utterances[index].open
                {
                    self.close(index, at_ms, out);
                }
            }
            TranscriptInput::TranscriptDelta {
                turn,
                speaker,
                delta,
            } => {
                if delta.is_empty() {
                    return;
                }
                self.ensure_run(turn, at_ms, out);
                let index = self.utterance(turn, speaker, at_ms, out);
                self.append(index, delta, at_ms, out);
            }
            TranscriptInput::TranscriptDone {
                turn,
                speaker,
                transcript,
            } => {
                self.ensure_run(turn, at_ms, out);
                let index = self.utterance(turn, speaker, at_ms, out);
                let streamed = &self.utterances[index].text;
                if let Some(rest) = transcript.strip_prefix(streamed.as_str()) {
                    if !rest.is_empty() {
                        self.append(index, rest, at_ms, out);
                    }
                } else {
                    self.utterances[index].text = transcript.to_owned();
                    out.push(self.snapshot(at_ms));
                }
                if self.utterances[index].open {
                    self.close(index, at_ms, out);
                }
            }
            TranscriptInput::TurnComplete { turn } => {
                if self.active_run.as_ref().is_some_and(|run| run.turn == turn) {
                    self.finish_run(at_ms, out);
                }
            }
            TranscriptInput::Annotate {
                turn,
                speaker,
                metadata,
            } => {
                if metadata.is_empty() {
                    return;
                }
                self.ensure_run(turn, at_ms, out);
                let index = self.utterance(turn, speaker, at_ms, out);
                let utterance = &mut self.utterances[index];
                for merged in [&mut utterance.metadata, &mut utterance.unstamped] {
                    merged.get_or_insert_with(JsonObject::new).extend(
                        metadata
                            .iter()
                            .map(|(key, value)| (key.clone(), value.clone())),
                    );
                }
                if !utterance.open {
                    self.ensure_open(index, at_ms, out);
                    self.close(index, at_ms, out);
                }
            }
            TranscriptInput::ToolCall {
                turn,
                call_id,
                tool_name,
                arguments,
            } => {
                if self.kept_ids.contains(call_id) {
                    return;
                }
                self.ensure_run(turn, at_ms, out);
                let event = |type_name: &str, more: Option<(&str, &str)>| {
                    let mut fields = JsonObject::new();
                    fields.insert("toolCallId".into(), Value::from(call_id));
                    if let Some((field, value)) = more {
                        fields.insert(field.into(), Value::from(value));
                    }
                    fields.insert("timestamp".into(), Value::from(at_ms));
                    Event::Other(Box::new(OtherEvent::new(type_name, fields)))
                };
                out.push(event("TOOL_CALL_START", Some(("toolCallName", tool_name))));
                if !arguments.is_empty() {
                    out.push(event("TOOL_CALL_ARGS", Some(("delta", arguments))));
                }
                out.push(event("TOOL_CALL_END", None));
                let calls = json!([{
                    "id": call_id,
                    "type": "function",
                    "function": { "name": tool_name, "arguments": arguments },
                }]);
                let message = Message::other(
                    call_id,
                    "assistant",
                    JsonObject::from_iter([("toolCalls".to_owned(), calls)]),
                );
                self.keep(message);
            }
            TranscriptInput::ToolResult {
                turn,
                call_id,
                content,
            } => {
                let message_id = format!("{call_id}-result");
                if self.kept_ids.contains(&message_id) {
                    return;
                }
                self.ensure_run(turn, at_ms, out);
                let mut fields = JsonObject::new();
                fields.insert("messageId".into(), Value::from(message_id.as_str()));
                fields.insert("toolCallId".into(), Value::from(call_id));
                fields.insert("content".into(), Value::from(content));
                fields.insert("role".into(), Value::from("tool"));
                fields.insert("timestamp".into(), Value::from(at_ms));
                out.push(Event::Other(Box::new(OtherEvent::new(
                    "TOOL_CALL_RESULT",
                    fields,
                ))));
                let message = Message::other(
                    &message_id,
                    "tool",
                    JsonObject::from_iter([
                        ("content".to_owned(), Value::from(content)),
                        ("toolCallId".to_owned(), Value::from(call_id)),
                    ]),
                );
                self.keep(message);
            }
            TranscriptInput::Mark {
                turn,
                speaker,
                name,
                fields,
            } => {
                let Some(&index) = self.utterance_by_key.get(&(turn, speaker)) else {
                    return;
                };
                self.ensure_run(turn, at_ms, out);
                let mut value = fields.clone();
                value.insert(
                    "messageId".into(),
                    Value::from(self.utterances[index].message_id.as_str()),
                );
                let mut event = JsonObject::new();
                event.insert("name".into(), Value::from(name));
                event.insert("value".into(), Value::Object(value));
                event.insert("timestamp".into(), Value::from(at_ms));
                out.push(Event::Other(Box::new(OtherEvent::new("CUSTOM", event))));
            }
        }
    }

    fn keep(&mut self, message: Message) {
        self.kept_ids.insert(message.id().to_owned());
        self.utterances.push(Utterance::kept(message));
    }

    /// Closes the messages still open (their END), leaving the run going: what marks them
    /// comes after.
    pub fn close_open_messages(&mut self, at_ms: TimestampMs, out: &mut Vec<Event>) {
        for index in std::mem::take(&mut self.open) {
            self.utterances[index].open = false;
            out.push(self.end_event(index, at_ms));
        }
    }

    /// Ends the conversation: closes what is open and finishes the active run.
    pub fn finish(&mut self, at_ms: TimestampMs, out: &mut Vec<Event>) {
        if self.active_run.is_some() {
            self.finish_run(at_ms, out);
        }
    }

    /// The metadata annotated on a message so far (merged), if it has any.
    pub fn metadata(&self, message_id: &str) -> Option<&JsonObject> {
        self.utterances
            .iter()
            .find(|utterance| utterance.message_id == message_id)?
            .metadata
            .as_ref()
    }

    /// The text written so far for each text message, in order of first appearance.
    pub fn transcript(&self) -> impl Iterator<Item = (&str, Role, &str)> {
        self.utterances
            .iter()
            .filter(|u| u.kept.is_none())
            .map(|u| (u.message_id.as_str(), u.role, u.text.as_str()))
    }

    /// Every message so far, tool calls and results included, in order of first appearance:
    /// what a restatement says.
    pub fn messages(&self) -> Vec<Message> {
        self.utterances
            .iter()
            .map(|utterance| {
                if let Some(kept) = &utterance.kept {
                    return kept.clone();
                }
                let mut message =
                    Message::new_text(&utterance.message_id, utterance.role, None, None);
                if let Some(fields) = message.text_fields_mut() {
                    fields.content.push_str(&utterance.text);
                    fields.metadata.clone_from(&utterance.metadata);
                }
                message
            })
            .collect()
    }

    fn ensure_run(&mut self, turn: TurnId, at_ms: TimestampMs, out: &mut Vec<Event>) {
        if self.active_run.as_ref().is_some_and(|run| run.turn == turn) {
            return;
        }
        if self.active_run.is_some() {
            self.finish_run(at_ms, out);
        }
        let runs = self.runs_per_turn.entry(turn).or_insert(0);
        *runs += 1;
        let run_id = if *runs == 1 {
            format!("run-{}", turn.0)
        } else {
            format!("run-{}-{}", turn.0, runs)
        };
        out.push(Event::RunStarted(Box::new(RunStarted {
            thread_id: self.thread_id.clone(),
            run_id: run_id.clone(),
            parent_run_id: None,
            input: None,
            protocol_version: None,
            timestamp: Some(at_ms),
            raw_event: None,
        })));
        self.active_run = Some(ActiveRun { turn, run_id });
    }

    fn finish_run(&mut self, at_ms: TimestampMs, out: &mut Vec<Event>) {
        for index in std::mem::take(&mut self.open) {
            self.utterances[index].open = false;
            out.push(self.end_event(index, at_ms));
        }
        if let Some(run) = self.active_run.take() {
            out.push(Event::RunFinished(Box::new(RunFinished {
                thread_id: self.thread_id.clone(),
                run_id: run.run_id,
                result: None,
                outcome: None,
                usage: None,
                timestamp: Some(at_ms),
                raw_event: None,
            })));
        }
    }

    /// The utterance's index, creating (and opening) its message on first mention.
    fn utterance(
        &mut self,
        turn: TurnId,
        speaker: Speaker,
        at_ms: TimestampMs,
        out: &mut Vec<Event>,
    ) -> usize {
        if let Some(&index) = self.utterance_by_key.get(&(turn, speaker)) {
            return index;
        }
        let index = self.utterances.len();
        self.utterances.push(Utterance {
            message_id: TranscriptWriter::message_id(turn, speaker),
            role: speaker.role(),
            text: String::new(),
            open: false,
            metadata: None,
            unstamped: None,
            kept: None,
        });
        self.utterance_by_key.insert((turn, speaker), index);
        self.ensure_open(index, at_ms, out);
        index
    }

    /// Opens the message, or reopens it with the same role (and no name, no owner, as at first).
    fn ensure_open(&mut self, index: usize, at_ms: TimestampMs, out: &mut Vec<Event>) {
        let utterance = &mut self.utterances[index];
        if utterance.open {
            return;
        }
        utterance.open = true;
        self.open.push(index);
        out.push(Event::TextMessageStart(TextMessageStart {
            message_id: utterance.message_id.clone(),
            role: Some(utterance.role),
            name: None,
            subagent_run_id: None,
            metadata: utterance.unstamped.take(),
            timestamp: Some(at_ms),
            raw_event: None,
        }));
    }

    fn append(&mut self, index: usize, delta: &str, at_ms: TimestampMs, out: &mut Vec<Event>) {
        self.ensure_open(index, at_ms, out);
        let utterance = &mut self.utterances[index];
        utterance.text.push_str(delta);
        out.push(Event::TextMessageContent(TextMessageContent {
            message_id: utterance.message_id.clone(),
            delta: delta.to_owned(),
            subagent_run_id: None,
            metadata: utterance.unstamped.take(),
            timestamp: Some(at_ms),
            raw_event: None,
        }));
    }

    fn close(&mut self, index: usize, at_ms: TimestampMs, out: &mut Vec<Event>) {
        self.utterances[index].open = false;
        self.open.retain(|&open| open != index);
        out.push(self.end_event(index, at_ms));
    }

    fn end_event(&mut self, index: usize, at_ms: TimestampMs) -> Event {
        let utterance = &mut self.utterances[index];
        Event::TextMessageEnd(TextMessageEnd {
            message_id: utterance.message_id.clone(),
            subagent_run_id: None,
            metadata: utterance.unstamped.take(),
            timestamp: Some(at_ms),
            raw_event: None,
        })
    }

    fn snapshot(&self, at_ms: TimestampMs) -> Event {
        Event::MessagesSnapshot(Box::new(MessagesSnapshot {
            messages: self.messages(),
            timestamp: Some(at_ms),
            raw_event: None,
        }))
    }
}
