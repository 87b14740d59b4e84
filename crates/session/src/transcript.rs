//! From the session's events to the transcript as AG-UI text messages (DESIGN.md rule 3).
//!
//! The session speaks in parts (speech of either speaker, text) and turn boundaries; the
//! transcript speaks in AG-UI messages grouped into runs, one run per exchange. This bridge
//! numbers the exchanges — a user speech part opens a new one, an assistant part belongs to the
//! exchange in progress — and hands each part's life to [`walkie_agui::TranscriptWriter`], which
//! keeps the AG-UI rules: the user's message opens at their speech start, so it sits before the
//! reply; it closes when they stop speaking; a transcript that arrives later (even after the
//! reply) reopens it and appends. Pure: the caller passes each event's time.

use std::collections::HashMap;

use walkie_agui::{Event, Speaker as TranscriptSpeaker, TranscriptInput, TranscriptWriter, TurnId};

use crate::event::{Part, PartDelta, PartIndex, SessionEvent, Speaker};

/// Turns session events into AG-UI events for the webview and the saved transcript.
#[derive(Debug, Clone)]
pub struct TranscriptBridge {
    writer: TranscriptWriter,
    next_turn: u64,
    /// The exchange the user's last utterance opened.
    user_turn: Option<TurnId>,
    /// The exchange of the reply in progress (the last assistant part started).
    reply_turn: Option<TurnId>,
    /// Parts with a message, mapped to the message's exchange and speaker.
    parts: HashMap<PartIndex, (TurnId, TranscriptSpeaker)>,
}

impl TranscriptBridge {
    /// A bridge for one conversation; `thread_id` becomes the AG-UI `threadId`.
    pub fn new(thread_id: impl Into<String>) -> Self {
        Self {
            writer: TranscriptWriter::new(thread_id),
            next_turn: 1,
            user_turn: None,
            reply_turn: None,
            parts: HashMap::new(),
        }
    }

    fn new_turn(&mut self) -> TurnId {
        let turn = TurnId(self.next_turn);
        self.next_turn += 1;
        turn
    }

    /// Appends to `out` the AG-UI events that `event`, observed at `at_ms` (milliseconds since
    /// the Unix epoch), means for the transcript. Events without meaning for it add nothing.
    pub fn on_event(&mut self, at_ms: i64, event: &SessionEvent, out: &mut Vec<Event>) {
        match event {
            SessionEvent::PartStart(start) => {
                let speaker = match &start.part {
                    Part::Speech(speech) if speech.speaker == Speaker::User => {
                        let turn = self.new_turn();
                        self.user_turn = Some(turn);
                        self.open(start.index, turn, TranscriptSpeaker::User, at_ms, out);
                        return;
                    }
                    Part::Speech(_) | Part::Text(_) => TranscriptSpeaker::Assistant,
                    Part::ToolCall(_) => return,
                };
                // A reply belongs to the exchange the user opened, unless that exchange already
                // has its reply (the assistant speaks again, unprompted): then it is a new one.
                let turn = match (self.user_turn, self.reply_turn) {
                    (Some(user), reply) if reply != Some(user) => user,
                    _ => self.new_turn(),
                };
                self.reply_turn = Some(turn);
                self.open(start.index, turn, speaker, at_ms, out);
            }
            SessionEvent::PartDelta(delta) => {
                let Some(&(turn, speaker)) = self.parts.get(&delta.index) else {
                    return;
                };
                let appended = match &delta.delta {
                    PartDelta::Speech(speech) => speech.transcript_delta.as_deref(),
                    PartDelta::Text(text) => Some(&*text.content_delta),
                };
                if let Some(appended) = appended.filter(|text| !text.is_empty()) {
                    self.writer.push(
                        at_ms,
                        TranscriptInput::TranscriptDelta {
                            turn,
                            speaker,
                            delta: appended,
                        },
                        out,
                    );
                }
            }
            SessionEvent::PartEnd(end) => {
                let Some((turn, speaker)) = self.parts.remove(&end.index) else {
                    return;
                };
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
            }
            SessionEvent::TurnComplete => {
                if let Some(turn) = self.reply_turn.or(self.user_turn) {
                    self.writer
                        .push(at_ms, TranscriptInput::TurnComplete { turn }, out);
                }
            }
            _ => {}
        }
    }

    fn open(
        &mut self,
        index: PartIndex,
        turn: TurnId,
        speaker: TranscriptSpeaker,
        at_ms: i64,
        out: &mut Vec<Event>,
    ) {
        self.parts.insert(index, (turn, speaker));
        self.writer
            .push(at_ms, TranscriptInput::SpeechStarted { turn, speaker }, out);
    }

    /// Ends the conversation's transcript: closes what is open, finishes the last run.
    pub fn finish(&mut self, at_ms: i64, out: &mut Vec<Event>) {
        self.writer.finish(at_ms, out);
    }

    /// The transcript so far: (message id, role, text) in order of first appearance.
    pub fn transcript(&self) -> impl Iterator<Item = (&str, walkie_agui::Role, &str)> {
        self.writer.transcript()
    }
}
