//! A conversation as its journal tells it: the assembled AG-UI messages, the turns and their
//! WAVs, and what is still open. Rendered to `transcript.md` and `transcript.json`.
//!
//! Why one model for the live recorder, the reader and the recovery: `transcript.md` must match
//! the journal. The recorder feeds this model every record it journals, the library feeds it the
//! records it reads back, and both render with the same code, so a transcript regenerated from
//! the journal after a crash is byte-for-byte the one the live run would have written.
//!
//! The AG-UI stream is verified as it is assembled (consumer mode); a violation is reported as a
//! problem but does not stop assembly, so one bad event never hides the rest of a conversation.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde_json::{Value, json};
use walkie_agui::{
    Assembler, ChunkExpander, Event, Message, Mode, Role, Speaker as AguiSpeaker, TranscriptWriter,
    TurnId, Verifier,
};
use walkie_session::transcript::PICTURES_METADATA_KEY;
use walkie_session::{Part, PartIndex, SessionEvent, Speaker};

use crate::civil_time::{CivilTime, format_duration_ms};
use crate::journal::{
    AudioSource, Billed, ConversationStarted, Record, Recovered, Reopened, WavClosed,
};

/// Relative path of a turn WAV inside the conversation folder.
pub fn turn_wav_file(turn: u32, speaker: Speaker) -> String {
    let side = match speaker {
        Speaker::User => "user",
        Speaker::Assistant => "assistant",
    };
    format!("turns/{turn:04}-{side}.wav")
}

/// The file of the `index`th picture (from 1) the user showed in a turn, relative to the
/// conversation's folder.
pub fn turn_picture_file(turn: u32, index: usize) -> String {
    format!(
        "turns/{turn:04}-user-{index}.{}",
        walkie_picture::FILE_EXTENSION
    )
}

/// How many pictures a message showed: the entries of its `pictures` metadata.
fn pictures_shown(message: &Message) -> usize {
    message
        .metadata()
        .and_then(|metadata| metadata.get(PICTURES_METADATA_KEY))
        .and_then(Value::as_array)
        .map_or(0, Vec::len)
}

/// The tool calls a message holds (AG-UI `toolCalls`): each one's name and arguments.
fn tool_calls(message: &Message) -> Vec<(String, String)> {
    let Some(Value::Array(calls)) = message.field("toolCalls") else {
        return Vec::new();
    };
    calls
        .iter()
        .map(|call| {
            let text = |pointer: &str| {
                call.pointer(pointer)
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned()
            };
            (text("/function/name"), text("/function/arguments"))
        })
        .collect()
}

/// A message content's text: a string, or the text parts of an array.
fn content_text(content: &Value) -> String {
    match content {
        Value::String(text) => text.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter(|part| part.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|part| part.get("text").and_then(Value::as_str))
            .collect(),
        _ => String::new(),
    }
}

/// The longest run of backticks in `text`.
fn longest_backtick_run(text: &str) -> usize {
    text.split(|c| c != '`').map(str::len).max().unwrap_or(0)
}

/// `text` as Markdown inline code, whatever backticks it holds.
fn code_span(text: &str) -> String {
    let fence = "`".repeat(longest_backtick_run(text) + 1);
    format!("{fence} {text} {fence}")
}

/// A message's words as Markdown text that shows them and does nothing else: what would make a
/// link or a picture (which a viewer fetches), raw HTML, emphasis or code is escaped, and so is
/// what would make a line a heading, a quote, a list item, a rule or a link definition (a
/// message could otherwise forge a speaker's line, or track whoever opens the file). Everyday
/// punctuation, brackets included, stays as it is.
fn plain_markdown(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 8);
    for (index, line) in text.split('\n').enumerate() {
        if index > 0 {
            out.push('\n');
        }
        let indent = line.len() - line.trim_start().len();
        out.push_str(&line[..indent]);
        let rest = &line[indent..];
        let digits = rest.chars().take_while(char::is_ascii_digit).count();
        let rest = if rest.starts_with(['#', '-', '+', '=', '>', '[']) {
            out.push('\\');
            let first = rest.chars().next().map_or(0, char::len_utf8);
            out.push_str(&rest[..first]);
            &rest[first..]
        } else if digits > 0 && rest[digits..].starts_with(['.', ')']) {
            out.push_str(&rest[..digits]);
            out.push('\\');
            out.push_str(&rest[digits..digits + 1]);
            &rest[digits + 1..]
        } else {
            rest
        };
        escape_inline(rest, &mut out);
    }
    out
}

/// Escapes what makes emphasis, code, raw HTML, a table, a strikethrough, or a link's or a
/// picture's text end (`](`, `][`).
fn escape_inline(text: &str, out: &mut String) {
    let mut characters = text.chars().peekable();
    while let Some(character) = characters.next() {
        let ends_link_text = character == ']' && matches!(characters.peek(), Some('(' | '['));
        if ends_link_text || matches!(character, '\\' | '`' | '*' | '_' | '<' | '~' | '|') {
            out.push('\\');
        }
        out.push(character);
    }
}

/// `text` as a fenced Markdown code block, whatever it holds.
fn code_block(text: &str) -> String {
    let fence = "`".repeat(longest_backtick_run(text).max(2) + 1);
    format!("{fence}\n{}\n{fence}\n", text.trim_end())
}

/// The AG-UI message id of a speaker's utterance in a turn (as [`TranscriptWriter`] names it).
pub fn message_id(turn: u32, speaker: Speaker) -> String {
    TranscriptWriter::message_id(TurnId(u64::from(turn)), agui_speaker(speaker))
}

pub(crate) fn agui_speaker(speaker: Speaker) -> AguiSpeaker {
    match speaker {
        Speaker::User => AguiSpeaker::User,
        Speaker::Assistant => AguiSpeaker::Assistant,
    }
}

/// A finished turn WAV.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WavInfo {
    /// Path relative to the conversation folder.
    pub file: String,
    pub sample_count: u64,
    pub sample_rate_hz: u32,
    pub source: AudioSource,
    /// Wall time of its first sample, if the journal says (see [`WavClosed`]).
    pub audio_start_unix_ms: Option<i64>,
}

impl WavInfo {
    /// The length of the audio; a journal may say anything, so a count too large for the
    /// rate reads as `u64::MAX` rather than overflowing.
    pub fn duration_ms(&self) -> u64 {
        if self.sample_rate_hz == 0 {
            return 0;
        }
        let duration_ms = u128::from(self.sample_count) * 1000 / u128::from(self.sample_rate_hz);
        u64::try_from(duration_ms).unwrap_or(u64::MAX)
    }
}

/// One exchange: a user utterance and the reply to it (or a reply nobody asked for).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnInfo {
    /// 1-based; the `NNNN` of its WAV files.
    pub turn: u32,
    pub opened_by: Speaker,
    pub started_unix_ms: i64,
    /// `None` while the turn is open.
    pub ended_unix_ms: Option<i64>,
    /// A part of the turn was cut (a barge-in, or a crash).
    pub interrupted: bool,
    /// Where playback of the reply was cut, relative to its audio.
    pub interrupted_at_ms: Option<u64>,
    pub user_wav: Option<WavInfo>,
    pub assistant_wav: Option<WavInfo>,
}

/// What every response of the conversation was billed, over all its calls and reopenings.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Spent {
    pub responses: u64,
    pub tokens: walkie_session::TokenTotals,
    /// What the priced responses cost, in US dollars; `None` when none was priced.
    pub cost_usd: Option<f64>,
    /// Responses of a model whose prices were unknown: in the tokens, not in the cost.
    pub unpriced_responses: u64,
    /// The models whose prices were used, in the order they first were.
    pub models: Vec<String>,
    /// The user's speech transcribed, and billed by duration, in seconds.
    pub transcribed_seconds: f64,
    /// How many transcriptions were billed, and how many of them had no price.
    pub transcriptions: u64,
    pub unpriced_transcriptions: u64,
}

impl Spent {
    fn add(&mut self, billed: &Billed) {
        match billed.transcribed_seconds {
            Some(seconds) => {
                self.transcriptions += 1;
                self.transcribed_seconds += seconds.max(0.0);
                if billed.cost_usd.is_none() {
                    self.unpriced_transcriptions += 1;
                }
            }
            None => {
                self.responses += 1;
                self.tokens = self.tokens.plus(&billed.tokens);
                if billed.cost_usd.is_none() {
                    self.unpriced_responses += 1;
                }
            }
        }
        if let Some(cost_usd) = billed.cost_usd {
            *self.cost_usd.get_or_insert(0.0) += cost_usd;
        }
        if let Some(model) = &billed.model
            && !self.models.contains(model)
        {
            self.models.push(model.clone());
        }
    }
}

/// See the module docs.
#[derive(Debug, Clone, Default)]
pub struct Conversation {
    started: Option<ConversationStarted>,
    expander: ChunkExpander,
    verifier: Verifier,
    assembler: Assembler,
    agui_events: usize,
    verify_failed: bool,
    message_started_unix_ms: HashMap<String, i64>,
    open_messages: BTreeSet<String>,
    /// (thread id, run id) of the run that started and has not finished.
    active_run: Option<(String, String)>,
    open_parts: BTreeMap<PartIndex, Option<u32>>,
    turns: BTreeMap<u32, TurnInfo>,
    last_unix_ms: i64,
    /// Each reopening's wall time and the time since the record before it: not part of the
    /// conversation's length.
    gaps: Vec<(i64, u64)>,
    last_record_closed: bool,
    /// The AG-UI thread of the transcript (the first run's).
    thread_id: Option<String>,
    reopenings: Vec<Reopened>,
    recoveries: Vec<Recovered>,
    /// Messages whose recording the user took back before it was sent.
    cancelled_messages: BTreeSet<String>,
    spent: Spent,
    problems: Vec<String>,
    /// The name the user gave it (the last [`Record::Titled`]).
    title: Option<String>,
}

impl Conversation {
    pub fn new() -> Conversation {
        Conversation {
            verifier: Verifier::new(Mode::Consumer),
            ..Conversation::default()
        }
    }

    /// The model of these records, in journal order.
    pub fn from_records<'a>(records: impl IntoIterator<Item = &'a Record>) -> Conversation {
        let mut conversation = Conversation::new();
        for record in records {
            conversation.apply(record);
        }
        conversation
    }

    /// Takes the next journal record.
    pub fn apply(&mut self, record: &Record) {
        // A title given after the close leaves the conversation closed.
        if !matches!(record, Record::Titled { .. }) {
            self.last_record_closed = matches!(record, Record::Closed { .. });
        }
        match record {
            Record::Started(started) => {
                self.last_unix_ms = self.last_unix_ms.max(started.unix_ms);
                self.started = Some(started.clone());
            }
            Record::Session {
                unix_ms,
                turn,
                event,
            } => {
                self.saw_time(*unix_ms);
                self.apply_session(*turn, &event.event);
            }
            Record::Agui { event } => self.apply_agui(event),
            Record::TurnStarted {
                turn,
                unix_ms,
                opened_by,
            } => {
                self.saw_time(*unix_ms);
                self.turns.insert(
                    *turn,
                    TurnInfo {
                        turn: *turn,
                        opened_by: *opened_by,
                        started_unix_ms: *unix_ms,
                        ended_unix_ms: None,
                        interrupted: false,
                        interrupted_at_ms: None,
                        user_wav: None,
                        assistant_wav: None,
                    },
                );
            }
            Record::WavClosed(closed) => {
                self.saw_time(closed.unix_ms);
                self.apply_wav_closed(closed);
            }
            Record::TurnEnded {
                turn,
                unix_ms,
                interrupted,
            } => {
                self.saw_time(*unix_ms);
                if let Some(info) = self.turns.get_mut(turn) {
                    info.ended_unix_ms = Some(*unix_ms);
                    info.interrupted |= *interrupted;
                } else {
                    self.problems
                        .push(format!("turn {turn} ended but never started"));
                }
            }
            Record::Recovered(recovered) => {
                for part in &recovered.parts_closed {
                    if let Some(Some(turn)) = self.open_parts.remove(&PartIndex(*part))
                        && let Some(info) = self.turns.get_mut(&turn)
                    {
                        info.interrupted = true;
                    }
                }
                self.recoveries.push(recovered.clone());
            }
            Record::Closed { unix_ms } => self.saw_time(*unix_ms),
            Record::MessageCancelled {
                message_id,
                unix_ms,
            } => {
                self.saw_time(*unix_ms);
                self.cancelled_messages.insert(message_id.clone());
            }
            Record::Billed(billed) => {
                self.saw_time(billed.unix_ms);
                self.spent.add(billed);
            }
            Record::Titled { title, .. } => self.title = Some(title.clone()),
            Record::Reopened(reopened) => {
                let gap_ms = i128::from(reopened.unix_ms) - i128::from(self.last_unix_ms);
                self.gaps.push((
                    reopened.unix_ms,
                    u64::try_from(gap_ms.max(0)).unwrap_or(u64::MAX),
                ));
                self.saw_time(reopened.unix_ms);
                // The earlier calls' session parts ended with them; the new call numbers its own.
                self.open_parts.clear();
                self.reopenings.push(reopened.clone());
            }
        }
    }

    fn saw_time(&mut self, unix_ms: i64) {
        self.last_unix_ms = self.last_unix_ms.max(unix_ms);
    }

    fn apply_session(&mut self, turn: Option<u32>, event: &SessionEvent) {
        match event {
            SessionEvent::PartStart(start) => {
                self.open_parts.insert(start.index, turn);
            }
            SessionEvent::PartEnd(end) => {
                self.open_parts.remove(&end.index);
                if let Part::Speech(speech) = &end.part
                    && speech.speaker == Speaker::Assistant
                    && let Some(cut_ms) = speech.interrupted_at_ms
                    && let Some(info) = turn.and_then(|turn| self.turns.get_mut(&turn))
                {
                    info.interrupted = true;
                    info.interrupted_at_ms = Some(cut_ms);
                }
            }
            _ => {}
        }
    }

    fn apply_wav_closed(&mut self, closed: &WavClosed) {
        let Some(info) = self.turns.get_mut(&closed.turn) else {
            self.problems.push(format!(
                "a WAV of turn {} was closed but the turn never started",
                closed.turn
            ));
            return;
        };
        let wav = WavInfo {
            file: turn_wav_file(closed.turn, closed.speaker),
            sample_count: closed.sample_count,
            sample_rate_hz: closed.sample_rate_hz,
            source: closed.source,
            audio_start_unix_ms: closed.audio_start_unix_ms,
        };
        match closed.speaker {
            Speaker::User => info.user_wav = Some(wav),
            Speaker::Assistant => info.assistant_wav = Some(wav),
        }
    }

    fn apply_agui(&mut self, event: &Event) {
        let event_index = self.agui_events;
        self.agui_events += 1;
        match event {
            Event::TextMessageStart(start) => {
                if let Some(at) = start.timestamp {
                    self.saw_time(at);
                    self.message_started_unix_ms
                        .entry(start.message_id.clone())
                        .or_insert(at);
                }
                self.open_messages.insert(start.message_id.clone());
            }
            Event::TextMessageContent(content) => {
                if let Some(at) = content.timestamp {
                    self.saw_time(at);
                }
            }
            Event::TextMessageEnd(end) => {
                if let Some(at) = end.timestamp {
                    self.saw_time(at);
                }
                self.open_messages.remove(&end.message_id);
            }
            Event::RunStarted(run) => {
                self.thread_id.get_or_insert_with(|| run.thread_id.clone());
                self.active_run = Some((run.thread_id.clone(), run.run_id.clone()));
            }
            Event::RunFinished(_) | Event::RunError(_) => self.active_run = None,
            Event::Other(other) => {
                // A tool call is shown at its start (in the message holding it), a result at
                // its own event.
                let shown_id = match other.type_name.as_str() {
                    "TOOL_CALL_START" => other
                        .string("parentMessageId")
                        .or_else(|| other.string("toolCallId")),
                    "TOOL_CALL_RESULT" => other.string("messageId"),
                    _ => None,
                };
                if let Some(at) = other.raw.get("timestamp").and_then(Value::as_i64) {
                    self.saw_time(at);
                    if let Some(id) = shown_id {
                        self.message_started_unix_ms
                            .entry(id.to_owned())
                            .or_insert(at);
                    }
                }
            }
            _ => {}
        }
        let Conversation {
            expander,
            verifier,
            assembler,
            verify_failed,
            problems,
            ..
        } = self;
        let expanded = expander.expand(event, event_index, &mut |op| {
            if !*verify_failed && let Err(violation) = verifier.check(&op, event_index) {
                *verify_failed = true;
                problems.push(format!(
                    "AG-UI event {event_index} breaks rule {}: {}",
                    violation.rule.as_str(),
                    violation.message
                ));
            }
            assembler.apply(&op);
            Ok(())
        });
        if let Err(violation) = expanded {
            self.problems.push(format!(
                "AG-UI event {event_index} could not be expanded: {}",
                violation.message
            ));
        }
    }

    /// The start record, if the journal had one.
    pub fn started(&self) -> Option<&ConversationStarted> {
        self.started.as_ref()
    }

    pub fn id(&self) -> Option<&str> {
        self.started.as_ref().map(|started| started.id.as_str())
    }

    /// The assembled AG-UI messages, in order of first appearance.
    pub fn messages(&self) -> &[Message] {
        self.assembler.messages()
    }

    /// The turns, in order.
    pub fn turns(&self) -> impl Iterator<Item = &TurnInfo> {
        self.turns.values()
    }

    /// The highest turn number used so far (0 before the first turn).
    pub fn last_turn(&self) -> u32 {
        self.turns.keys().next_back().copied().unwrap_or(0)
    }

    /// The AG-UI thread id of the transcript (its first run's), if a run was recorded.
    pub fn thread_id(&self) -> Option<&str> {
        self.thread_id.as_deref()
    }

    /// The times the conversation was reopened after a close, in order.
    pub fn reopenings(&self) -> &[Reopened] {
        &self.reopenings
    }

    /// The rates (user, assistant) the conversation records new audio at: the start record's,
    /// or the latest reopening's.
    pub fn sample_rates_hz(&self) -> Option<(u32, u32)> {
        match (self.reopenings.last(), &self.started) {
            (Some(reopened), _) => Some((
                reopened.user_sample_rate_hz,
                reopened.assistant_sample_rate_hz,
            )),
            (None, Some(started)) => Some((
                started.user_sample_rate_hz,
                started.assistant_sample_rate_hz,
            )),
            (None, None) => None,
        }
    }

    pub fn turn(&self, turn: u32) -> Option<&TurnInfo> {
        self.turns.get(&turn)
    }

    /// Ids of messages started and not ended.
    pub fn open_messages(&self) -> impl Iterator<Item = &str> {
        self.open_messages.iter().map(String::as_str)
    }

    /// The run that started and has not finished: (thread id, run id).
    pub fn active_run(&self) -> Option<(&str, &str)> {
        self.active_run
            .as_ref()
            .map(|(thread, run)| (thread.as_str(), run.as_str()))
    }

    /// Session parts started and not ended.
    pub fn open_parts(&self) -> impl Iterator<Item = PartIndex> + '_ {
        self.open_parts.keys().copied()
    }

    /// Turns started and not ended.
    pub fn open_turns(&self) -> impl Iterator<Item = &TurnInfo> {
        self.turns
            .values()
            .filter(|info| info.ended_unix_ms.is_none())
    }

    /// Wall time of the latest record of the conversation itself (not of a later recovery).
    pub fn last_unix_ms(&self) -> i64 {
        self.last_unix_ms
    }

    pub fn started_unix_ms(&self) -> i64 {
        self.started.as_ref().map_or(0, |started| started.unix_ms)
    }

    /// From the start record to the latest record, less the time between each close and the
    /// reopening after it; 0 when the journal's clock went backwards.
    pub fn duration_ms(&self) -> u64 {
        self.conversation_ms(self.last_unix_ms)
    }

    /// Where wall time `unix_ms` falls in the conversation: the time since its start less the
    /// time between each close and the reopening after it (so a conversation continued a week
    /// later goes on where it stopped); 0 before the start or when the clock went backwards.
    pub fn conversation_ms(&self, unix_ms: i64) -> u64 {
        let gaps_ms: i128 = self
            .gaps
            .iter()
            .filter(|(reopened_unix_ms, _)| *reopened_unix_ms <= unix_ms)
            .map(|(_, gap_ms)| i128::from(*gap_ms))
            .sum();
        let elapsed_ms = i128::from(unix_ms) - i128::from(self.started_unix_ms()) - gaps_ms;
        u64::try_from(elapsed_ms).unwrap_or(if elapsed_ms < 0 { 0 } else { u64::MAX })
    }

    /// When message `id` first appeared (its start event's timestamp), if it said.
    pub fn message_started_unix_ms(&self, id: &str) -> Option<i64> {
        self.message_started_unix_ms.get(id).copied()
    }

    /// Whether the last record is a close (clean, or written by a recovery); a reopening makes
    /// the conversation open again until its next close.
    pub fn is_closed(&self) -> bool {
        self.last_record_closed
    }

    /// Recoveries the conversation went through.
    pub fn recoveries(&self) -> &[Recovered] {
        &self.recoveries
    }

    pub(crate) fn note_problem(&mut self, problem: String) {
        self.problems.push(problem);
    }

    /// What was wrong in the records (never fatal).
    pub fn problems(&self) -> &[String] {
        &self.problems
    }

    /// The name the user gave it, if they did (the last one).
    pub fn title(&self) -> Option<&str> {
        self.title.as_deref()
    }

    /// What the history calls it: the user's name for it, else its first words.
    pub fn display_title(&self, max_words: usize) -> String {
        match self.title() {
            Some(title) => title.to_owned(),
            None => self.first_words(max_words),
        }
    }

    /// The first words said, for a library listing.
    pub fn first_words(&self, max_words: usize) -> String {
        let Some(text) = self
            .messages()
            .iter()
            .filter_map(Message::content)
            .find(|text| !text.trim().is_empty())
        else {
            return String::new();
        };
        let mut words = text.split_whitespace();
        let mut first: Vec<&str> = words.by_ref().take(max_words).collect();
        if words.next().is_some() {
            first.push("…");
        }
        first.join(" ")
    }

    fn utc_offset_minutes(&self) -> i32 {
        self.started
            .as_ref()
            .map_or(0, |started| started.utc_offset_minutes)
    }

    /// The turn a transcript message belongs to, and whose it is (`user-N`, `assistant-N`).
    pub fn turn_of_message(&self, id: &str) -> Option<(&TurnInfo, Speaker)> {
        let (side, number) = id.rsplit_once('-')?;
        let speaker = match side {
            "user" => Speaker::User,
            "assistant" => Speaker::Assistant,
            _ => return None,
        };
        let info = self.turns.get(&number.parse().ok()?)?;
        Some((info, speaker))
    }

    /// Whether the user took this message's recording back before it was sent.
    pub fn message_cancelled(&self, message_id: &str) -> bool {
        self.cancelled_messages.contains(message_id)
    }

    fn message_interrupted(&self, message: &Message) -> bool {
        let by_metadata = message
            .metadata()
            .and_then(|metadata| metadata.get("interrupted"))
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let by_turn = matches!(
            self.turn_of_message(message.id()),
            Some((info, Speaker::Assistant)) if info.interrupted_at_ms.is_some()
        );
        by_metadata || by_turn
    }

    /// `transcript.md`: who spoke, when, what; each message at its first appearance (a user
    /// message at the user's speech start). `audio_links` adds links to the turn WAVs (off for a
    /// single-file export, where they would dangle).
    pub fn render_markdown(&self, audio_links: bool) -> String {
        let offset = self.utc_offset_minutes();
        let start = CivilTime::from_unix_ms(self.started_unix_ms(), offset);
        let mut out = String::with_capacity(256 + 128 * self.messages().len());
        out.push_str(&format!(
            "# Conversation of {} {}\n\n",
            start.date(),
            start.clock()
        ));
        out.push_str(&format!(
            "Duration {} · {} turn{}\n",
            format_duration_ms(self.duration_ms()),
            self.turns.len(),
            if self.turns.len() == 1 { "" } else { "s" }
        ));
        for message in self.messages() {
            let who = match (message.role(), message.role_name()) {
                (Some(Role::User), _) => "User".to_owned(),
                (Some(Role::Assistant), _) | (None, "assistant") => "Assistant".to_owned(),
                (None, "tool") => "Tool".to_owned(),
                (Some(other), _) => other.as_str().to_owned(),
                (None, name) => name.to_owned(),
            };
            out.push_str(&format!("\n**{who}**"));
            if let Some(&at) = self.message_started_unix_ms.get(message.id()) {
                out.push_str(&format!(
                    " · {}",
                    CivilTime::from_unix_ms(at, offset).clock()
                ));
            }
            if self.message_interrupted(message) {
                out.push_str(" · interrupted");
            }
            if self.message_cancelled(message.id()) {
                out.push_str(" · not sent (cancelled)");
            }
            if audio_links && let Some((info, speaker)) = self.turn_of_message(message.id()) {
                let wav = match speaker {
                    Speaker::User => &info.user_wav,
                    Speaker::Assistant => &info.assistant_wav,
                };
                if let Some(wav) = wav {
                    out.push_str(&format!(" · [audio]({})", wav.file));
                }
            }
            out.push_str("\n\n");
            let pictures = match self.turn_of_message(message.id()) {
                Some((info, Speaker::User)) => (1..=pictures_shown(message))
                    .map(|index| turn_picture_file(info.turn, index))
                    .collect(),
                _ => Vec::new(),
            };
            for (index, file) in pictures.iter().enumerate() {
                let number = index + 1;
                if audio_links {
                    out.push_str(&format!("![picture {number}]({file})\n"));
                } else {
                    out.push_str(&format!("_(picture {number}: {file})_\n"));
                }
            }
            let calls = tool_calls(message);
            let result = (message.role_name() == "tool")
                .then(|| message.field("content").map(content_text))
                .flatten();
            match message.content() {
                Some(text) if !text.trim().is_empty() => {
                    if !pictures.is_empty() {
                        out.push('\n');
                    }
                    out.push_str(&plain_markdown(text.trim_end()));
                    out.push('\n');
                }
                _ if !pictures.is_empty() || !calls.is_empty() || result.is_some() => {}
                _ => out.push_str("_(no transcript)_\n"),
            }
            for (index, (name, arguments)) in calls.iter().enumerate() {
                if index > 0
                    || message
                        .content()
                        .is_some_and(|text| !text.trim().is_empty())
                {
                    out.push('\n');
                }
                out.push_str(&format!("Called {} with\n\n", code_span(name)));
                out.push_str(&code_block(arguments));
            }
            if let Some(result) = result {
                out.push_str("Answered\n\n");
                out.push_str(&code_block(&result));
            }
        }
        out
    }

    /// What the conversation's responses were billed, summed.
    pub fn spent(&self) -> &Spent {
        &self.spent
    }

    /// `transcript.json`: the assembled AG-UI messages plus turn metadata.
    pub fn to_json(&self) -> Value {
        let turns: Vec<Value> = self
            .turns
            .values()
            .map(|info| {
                let wav = |wav: &Option<WavInfo>| {
                    wav.as_ref().map(|wav| {
                        json!({
                            "file": wav.file,
                            "sampleCount": wav.sample_count,
                            "sampleRateHz": wav.sample_rate_hz,
                            "durationMs": wav.duration_ms(),
                            "source": wav.source,
                        })
                    })
                };
                let messages: Vec<String> = [Speaker::User, Speaker::Assistant]
                    .into_iter()
                    .map(|speaker| message_id(info.turn, speaker))
                    .filter(|id| self.assembler.message(id).is_some())
                    .collect();
                let shown = self
                    .assembler
                    .message(&message_id(info.turn, Speaker::User))
                    .map_or(0, pictures_shown);
                let user_pictures: Vec<String> = (1..=shown)
                    .map(|index| turn_picture_file(info.turn, index))
                    .collect();
                json!({
                    "turn": info.turn,
                    "openedBy": info.opened_by,
                    "startedUnixMs": info.started_unix_ms,
                    "endedUnixMs": info.ended_unix_ms,
                    "interrupted": info.interrupted,
                    "interruptedAtMs": info.interrupted_at_ms,
                    "messages": messages,
                    "userWav": wav(&info.user_wav),
                    "userPictures": user_pictures,
                    "assistantWav": wav(&info.assistant_wav),
                })
            })
            .collect();
        json!({
            "id": self.id(),
            "startedUnixMs": self.started_unix_ms(),
            "utcOffsetMinutes": self.utc_offset_minutes(),
            "durationMs": self.duration_ms(),
            "messages": self.messages(),
            "turns": turns,
            "spent": {
                "responses": self.spent.responses,
                "totalTokens": self.spent.tokens.total(),
                "tokens": {
                    "textIn": self.spent.tokens.text_in,
                    "cachedTextIn": self.spent.tokens.cached_text_in,
                    "audioIn": self.spent.tokens.audio_in,
                    "cachedAudioIn": self.spent.tokens.cached_audio_in,
                    "imageIn": self.spent.tokens.image_in,
                    "cachedImageIn": self.spent.tokens.cached_image_in,
                    "textOut": self.spent.tokens.text_out,
                    "audioOut": self.spent.tokens.audio_out,
                },
                "costUsd": self.spent.cost_usd,
                "unpricedResponses": self.spent.unpriced_responses,
                "transcriptions": self.spent.transcriptions,
                "transcribedSeconds": self.spent.transcribed_seconds,
                "unpricedTranscriptions": self.spent.unpriced_transcriptions,
                "models": self.spent.models,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::journal::parse_journal;

    #[test]
    fn a_messages_words_show_in_markdown_as_words_and_do_nothing_else() {
        let hostile = "Sure.\n\n**User** · 10:00\n# Not a heading\n- not a list\n1. nor this\n\
                       > nor a quote\n[ref]: https://example.com\n\
                       ![track](https://example.com/t.png) <img src=x> [link][ref]";
        assert_eq!(
            plain_markdown(hostile),
            "Sure.\n\n\\*\\*User\\*\\* · 10:00\n\\# Not a heading\n\\- not a list\n1\\. nor this\n\
             \\> nor a quote\n\\[ref]: https://example.com\n\
             ![track\\](https://example.com/t.png) \\<img src=x> [link\\][ref]"
        );
        let plain = "It's 5 p.m., isn't it? Yes! [1.6 s of speech] 3 + 4 = 7 (more or less).";
        assert_eq!(
            plain_markdown(plain),
            plain,
            "everyday words are left as they are"
        );
    }

    fn conversation_of(journal: &str) -> Conversation {
        let parsed = parse_journal(journal.as_bytes());
        assert!(parsed.garbage.is_empty(), "{:?}", parsed.garbage);
        Conversation::from_records(parsed.records.iter().map(|(_, record)| record))
    }

    /// Found by the `journal` fuzz target (`fuzz/regressions/journal/`): 3e16 samples at 4 Hz
    /// overflowed `sample_count * 1000` while History built the conversation's JSON (a panic in
    /// debug builds, a wrong duration in release ones).
    #[test]
    fn a_wav_whose_samples_times_1000_overflow_still_gets_its_exact_duration() {
        let conversation = conversation_of(concat!(
            r#"{"record":"turn_started","turn":4,"unix_ms":0,"opened_by":"user"}"#,
            "\n",
            r#"{"record":"wav_closed","turn":4,"speaker":"user","sample_count":30000000000000000,"#,
            r#""sample_rate_hz":4,"source":"captured","unix_ms":0}"#,
            "\n",
        ));
        let wav = conversation
            .turn(4)
            .and_then(|turn| turn.user_wav.as_ref())
            .expect("the WAV is kept");
        assert_eq!(wav.duration_ms(), 7_500_000_000_000_000_000);
        let json = conversation.to_json().to_string();
        assert!(json.contains("7500000000000000000"), "{json}");
        let _ = conversation.render_markdown(true);
    }

    #[test]
    fn the_time_line_leaves_out_the_days_between_a_hang_up_and_the_continuation() {
        let day_ms = 86_400_000;
        let conversation = conversation_of(&format!(
            concat!(
                r#"{{"record":"started","format_version":1,"id":"x","unix_ms":1000,"utc_offset_minutes":0,"user_sample_rate_hz":24000,"assistant_sample_rate_hz":24000}}"#,
                "\n",
                r#"{{"record":"closed","unix_ms":11000}}"#,
                "\n",
                r#"{{"record":"reopened","unix_ms":{},"utc_offset_minutes":0,"user_sample_rate_hz":24000,"assistant_sample_rate_hz":24000}}"#,
                "\n",
                r#"{{"record":"closed","unix_ms":{}}}"#,
                "\n",
            ),
            11_000 + day_ms,
            16_000 + day_ms
        ));
        assert_eq!(conversation.conversation_ms(500), 0, "before the start");
        assert_eq!(conversation.conversation_ms(6_000), 5_000);
        assert_eq!(conversation.conversation_ms(11_500 + day_ms), 10_500);
        assert_eq!(conversation.duration_ms(), 15_000);
    }

    #[test]
    fn a_wav_longer_than_u64_milliseconds_reads_as_the_longest_duration() {
        let wav = WavInfo {
            file: "0001-user.wav".to_owned(),
            sample_count: u64::MAX,
            sample_rate_hz: 1,
            source: AudioSource::Captured,
            audio_start_unix_ms: None,
        };
        assert_eq!(wav.duration_ms(), u64::MAX);
    }

    #[test]
    fn a_journal_spanning_the_whole_clock_range_has_the_longest_duration_not_an_overflow() {
        let started = format!(
            r#"{{"record":"started","format_version":1,"id":"x","unix_ms":{},"utc_offset_minutes":0,"user_sample_rate_hz":24000,"assistant_sample_rate_hz":24000}}"#,
            i64::MIN
        );
        let turn = format!(
            r#"{{"record":"turn_started","turn":1,"unix_ms":{},"opened_by":"user"}}"#,
            i64::MAX
        );
        let conversation = conversation_of(&format!("{started}\n{turn}\n"));
        assert_eq!(conversation.duration_ms(), u64::MAX);
        let _ = conversation.render_markdown(true);
        let _ = conversation.to_json();
    }

    #[test]
    fn every_billed_response_adds_to_what_transcript_json_says_was_spent_priced_or_not() {
        let conversation = conversation_of(concat!(
            r#"{"record":"billed","unix_ms":1,"tokens":{"text_in":100,"audio_in":20,"text_out":10,"audio_out":40},"cost_usd":0.004,"model":"gpt-realtime"}"#,
            "\n",
            r#"{"record":"closed","unix_ms":2}"#,
            "\n",
            r#"{"record":"billed","unix_ms":3,"tokens":{"text_in":110,"cached_text_in":100,"audio_in":70,"cached_audio_in":20,"text_out":5,"audio_out":20},"cost_usd":0.002,"model":"gpt-realtime"}"#,
            "\n",
            r#"{"record":"billed","unix_ms":4,"tokens":{"text_in":7,"text_out":3}}"#,
            "\n",
        ));
        let spent = conversation.spent();
        assert_eq!(spent.responses, 3);
        assert_eq!(spent.tokens.text_in, 217);
        assert_eq!(spent.tokens.cached_text_in, 100);
        assert_eq!(spent.unpriced_responses, 1);
        assert_eq!(spent.models, ["gpt-realtime"]);
        let json = conversation.to_json();
        let cost = json["spent"]["costUsd"].as_f64().expect("a cost");
        assert!((cost - 0.006).abs() < 1e-12, "{cost}");
        assert_eq!(json["spent"]["totalTokens"], 217 + 90 + 18 + 60);
        assert_eq!(json["spent"]["tokens"]["cachedAudioIn"], 20);
        assert_eq!(json["spent"]["unpricedResponses"], 1);
    }

    #[test]
    fn a_conversation_nothing_was_billed_in_says_so_with_no_cost() {
        let json = conversation_of("").to_json();
        assert_eq!(json["spent"]["responses"], 0);
        assert_eq!(json["spent"]["costUsd"], Value::Null);
    }
}
