//! A synthetic spoken conversation, written by the real [`TranscriptWriter`], for benchmarks and
//! tests that need a large, realistic, valid event stream without a session.
//!
//! Each turn: the user speaks (message opened at speech start), part of the user transcript
//! arrives after the speech stopped (a reopen), the assistant streams its reply word by word,
//! then the turn completes. Deterministic: the same size always gives the same events.

use crate::event::Event;
use crate::writer::{Speaker, TranscriptInput, TranscriptWriter, TurnId};

const USER_WORDS: [&str; 8] = [
    "could ", "you ", "tell ", "me ", "about ", "the ", "weather ", "today ",
];
const ASSISTANT_WORDS: [&str; 10] = [
    "Sure, ", "it ", "looks ", "like ", "a ", "mild ", "day ", "with ", "light ", "wind. ",
];

/// Words per user utterance and per assistant reply.
pub const USER_WORDS_PER_TURN: usize = 12;
pub const ASSISTANT_WORDS_PER_TURN: usize = 60;

/// A conversation of at least `min_events` events (whole turns), ending with RUN_FINISHED.
pub fn conversation(min_events: usize) -> Vec<Event> {
    let mut writer = TranscriptWriter::new("synthetic-thread");
    let mut events = Vec::with_capacity(min_events + 128);
    let mut at_ms: i64 = 1_767_225_600_000;
    let mut turn_number = 0;
    while events.len() < min_events {
        turn_number += 1;
        let turn = TurnId(turn_number);
        let mut push = |input: TranscriptInput<'_>, events: &mut Vec<Event>| {
            at_ms += 40;
            writer.push(at_ms, input, events);
        };
        push(
            TranscriptInput::SpeechStarted {
                turn,
                speaker: Speaker::User,
            },
            &mut events,
        );
        let (early, late) = (
            USER_WORDS_PER_TURN / 2,
            USER_WORDS_PER_TURN - USER_WORDS_PER_TURN / 2,
        );
        for word in USER_WORDS.iter().cycle().take(early) {
            push(
                TranscriptInput::TranscriptDelta {
                    turn,
                    speaker: Speaker::User,
                    delta: word,
                },
                &mut events,
            );
        }
        push(
            TranscriptInput::SpeechStopped {
                turn,
                speaker: Speaker::User,
            },
            &mut events,
        );
        for word in USER_WORDS.iter().cycle().skip(early).take(late) {
            push(
                TranscriptInput::TranscriptDelta {
                    turn,
                    speaker: Speaker::User,
                    delta: word,
                },
                &mut events,
            );
        }
        push(
            TranscriptInput::SpeechStopped {
                turn,
                speaker: Speaker::User,
            },
            &mut events,
        );
        push(
            TranscriptInput::SpeechStarted {
                turn,
                speaker: Speaker::Assistant,
            },
            &mut events,
        );
        for word in ASSISTANT_WORDS
            .iter()
            .cycle()
            .take(ASSISTANT_WORDS_PER_TURN)
        {
            push(
                TranscriptInput::TranscriptDelta {
                    turn,
                    speaker: Speaker::Assistant,
                    delta: word,
                },
                &mut events,
            );
        }
        push(
            TranscriptInput::SpeechStopped {
                turn,
                speaker: Speaker::Assistant,
            },
            &mut events,
        );
        push(TranscriptInput::TurnComplete { turn }, &mut events);
    }
    events
}
