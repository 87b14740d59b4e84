//! What searching the history costs: a library of synthetic conversations (journals as the
//! recorder writes them: a start, AG-UI text messages, a close; 2 to 30 turns of 6 to 40 words
//! each, words drawn with a Zipf-like skew from a 3,000-word vocabulary) is indexed from
//! nothing, refreshed with nothing changed, and searched for a common word, a rare word and a
//! phrase. Prints p50 and p95 of each search, the index's size per MB of transcript text, and
//! the time of the first build and of a refresh.
//!
//! `cargo bench -p walkie-store --bench search` (10,000 conversations);
//! `SEARCH_BENCH_CONVERSATIONS=500` for a short run.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::json;
use walkie_store::journal::{ConversationStarted, FORMAT_VERSION, JournalFile, Record};
use walkie_store::search::INDEX_FILE;
use walkie_store::{SearchIndex, Store};

const VOCABULARY: usize = 3_000;
const SEARCHES: usize = 200;

/// A tiny deterministic generator (xorshift), so every run indexes the same library.
struct Draw(u64);

impl Draw {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, bound: usize) -> usize {
        (self.next() % bound as u64) as usize
    }

    /// A word index skewed to the common ones (about Zipf's: the square of a uniform draw).
    fn word(&mut self) -> usize {
        let uniform = (self.next() % 1_000_000) as f64 / 1_000_000.0;
        (uniform * uniform * VOCABULARY as f64) as usize
    }
}

fn word(index: usize) -> String {
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
fn write_conversation(root: &Path, number: usize, draw: &mut Draw) -> usize {
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

fn percentiles(mut times: Vec<Duration>) -> (f64, f64) {
    times.sort();
    let at = |fraction: f64| {
        times[((times.len() - 1) as f64 * fraction).round() as usize].as_secs_f64() * 1000.0
    };
    (at(0.50), at(0.95))
}

fn main() {
    let conversations: usize = std::env::var("SEARCH_BENCH_CONVERSATIONS")
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(10_000);
    let root = tempfile::tempdir().expect("a temporary folder");
    let mut draw = Draw(0x5eed_cafe_f00d_d00d);
    let mut text_bytes = 0;
    for number in 0..conversations {
        text_bytes += write_conversation(root.path(), number, &mut draw);
    }
    let store = Store::new(root.path());

    let started = Instant::now();
    let (mut index, _) = SearchIndex::open(&store).expect("the index opens");
    let built = index.refresh(&store).expect("the index is built");
    let build_s = started.elapsed().as_secs_f64();
    assert_eq!(built.indexed, conversations);

    let started = Instant::now();
    let refreshed = index.refresh(&store).expect("the index is refreshed");
    let refresh_ms = started.elapsed().as_secs_f64() * 1000.0;
    assert_eq!(refreshed.indexed, 0);

    let index_bytes: u64 = std::fs::read_dir(root.path())
        .expect("the folder")
        .flatten()
        .filter(|entry| entry.file_name().to_string_lossy().starts_with(INDEX_FILE))
        .map(|entry| entry.metadata().map_or(0, |metadata| metadata.len()))
        .sum();

    let common = word(0);
    let rare = word(VOCABULARY - 7);
    let phrase = format!("\"{} {}\"", word(1), word(2));
    println!(
        "search bench: {conversations} conversations, {:.1} MB of transcript text",
        text_bytes as f64 / 1e6
    );
    println!(
        "  first build {build_s:.2} s; refresh with nothing changed {refresh_ms:.1} ms; index \
         {:.2} MB ({:.2} MB per MB of text)",
        index_bytes as f64 / 1e6,
        index_bytes as f64 / text_bytes as f64
    );
    for (what, typed) in [
        ("common word, as typed (prefix)", common.as_str()),
        ("rare word", rare.as_str()),
        ("phrase", phrase.as_str()),
    ] {
        let mut times = Vec::with_capacity(SEARCHES);
        let mut found = 0;
        for _ in 0..SEARCHES {
            let started = Instant::now();
            found = index.search(typed, 50).expect("a search").len();
            times.push(started.elapsed());
        }
        let (p50, p95) = percentiles(times);
        println!("  {what} {typed:?}: p50 {p50:.2} ms, p95 {p95:.2} ms ({found} hits shown)");
    }
}
