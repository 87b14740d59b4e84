//! What searching the history costs: a library of synthetic conversations (journals as the
//! recorder writes them: a start, AG-UI text messages, a close; 2 to 30 turns of 6 to 40 words
//! each, words drawn with a Zipf-like skew from a 3,000-word vocabulary) is indexed from
//! nothing, refreshed with nothing changed, and searched for a common word, a rare word and a
//! phrase. Prints p50 and p95 of each search, the index's size per MB of transcript text, and
//! the time of the first build and of a refresh.
//!
//! `cargo bench -p walkie-store --bench search` (10,000 conversations);
//! `SEARCH_BENCH_CONVERSATIONS=500` for a short run.

#[path = "support/library.rs"]
mod library;

use std::time::Instant;

use library::{SEARCHES, VOCABULARY, conversations_wanted, percentiles, word, write_library};
use walkie_store::search::INDEX_FILE;
use walkie_store::{SearchIndex, Store};

fn main() {
    let conversations = conversations_wanted();
    let root = tempfile::tempdir().expect("a temporary folder");
    let text_bytes = write_library(root.path(), conversations);
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
