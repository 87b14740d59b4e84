//! The synthetic library both search benches index: journals as the recorder writes them (a
//! start, AG-UI text messages, a close; 2 to 30 turns of 6 to 40 words each, words drawn with a
//! Zipf-like skew from a 3,000-word vocabulary), the same every run.

use std::path::Path;
use std::time::Duration;

use serde_json::json;
use walkie_store::journal::{ConversationStarted, FORMAT_VERSION, JournalFile, Record};

/// Distinct words of the synthetic language.
pub const VOCABULARY: usize = 3_000;
/// Searches timed per kind.
pub const SEARCHES: usize = 200;

/// A tiny deterministic generator (xorshift), so every run indexes the same library.
pub struct Draw(pub u64);

impl Draw {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    pub fn below(&mut self, bound: usize) -> usize {
        (self.next() % bound as u64) as usize
    }

    /// A word index skewed to the common ones (about Zipf's: the square of a uniform draw).
    pub fn word(&mut self) -> usize {
        let uniform = (self.next() % 1_000_000) as f64 / 1_000_000.0;
        (uniform * uniform * VOCABULARY as f64) as usize
    }
}

/// The `index`th word of the synthetic language.
pub fn word(index: usize) -> String {
    const SYLLABLES: [&str; 16] = [
        "ka", "lo", "mi", "ne", "su", "ta", "ri", "po", "ve", "da", "go", "hu", "ji", "ze", "bo",
        "ar",
    ];
    let mut word = String::new();
    let mut rest = index + 16;
    while rest > 0 {
        word.push_str(SYLLABLES[rest % 16]);
        rest /= 16;
    }
    word
}

fn agui(value: serde_json::Value) -> Record {
    Record::Agui {
        event: serde_json::from_value(value).expect("an AG-UI event"),
    }
}

/// Writes one conversation's journal; returns the bytes of its messages' text.
pub fn write_conversation(root: &Path, number: usize, draw: &mut Draw) -> usize {
    let id = format!("2026-01-01_00-00-00-{number:05}");
    let dir = root.join(&id);
    std::fs::create_dir_all(&dir).expect("a conversation folder");
    let mut journal =
        JournalFile::create_new(&dir.join(walkie_store::JOURNAL_FILE)).expect("a journal");
    let start_ms = 1_760_000_000_000 + number as i64 * 60_000;
    journal
        .append(&Record::Started(ConversationStarted {
            format_version: FORMAT_VERSION,
            id,
            unix_ms: start_ms,
            utc_offset_minutes: 0,
            user_sample_rate_hz: 48_000,
            assistant_sample_rate_hz: 24_000,
        }))
        .expect("the start");
    let mut text_bytes = 0;
    for turn in 1..=2 + draw.below(29) {
        for role in ["user", "assistant"] {
            let message_id = format!("{role}-{turn}");
            let words: Vec<String> = (0..6 + draw.below(35)).map(|_| word(draw.word())).collect();
            let text = words.join(" ");
            text_bytes += text.len();
            for record in [
                agui(json!({"type": "TEXT_MESSAGE_START", "messageId": message_id, "role": role})),
                agui(
                    json!({"type": "TEXT_MESSAGE_CONTENT", "messageId": message_id, "delta": text}),
                ),
                agui(json!({"type": "TEXT_MESSAGE_END", "messageId": message_id})),
            ] {
                journal.append(&record).expect("a message");
            }
        }
    }
    journal
        .append(&Record::Closed {
            unix_ms: start_ms + 50_000,
        })
        .expect("the close");
    text_bytes
}

/// p50 and p95 of `times`, in ms.
pub fn percentiles(mut times: Vec<Duration>) -> (f64, f64) {
    times.sort();
    let at = |fraction: f64| {
        times[((times.len() - 1) as f64 * fraction).round() as usize].as_secs_f64() * 1000.0
    };
    (at(0.50), at(0.95))
}

/// Writes `conversations` conversations under `root`; returns the bytes of their text.
pub fn write_library(root: &Path, conversations: usize) -> usize {
    let mut draw = Draw(0x5eed_cafe_f00d_d00d);
    (0..conversations)
        .map(|number| write_conversation(root, number, &mut draw))
        .sum()
}

/// How many conversations a bench indexes: `SEARCH_BENCH_CONVERSATIONS`, else 10,000.
pub fn conversations_wanted() -> usize {
    std::env::var("SEARCH_BENCH_CONVERSATIONS")
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(10_000)
}
