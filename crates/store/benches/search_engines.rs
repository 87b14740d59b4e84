//! The two embedded indexes issue 42 names, on the same synthetic library in one run: SQLite
//! FTS5 (through rusqlite, as `SearchIndex` uses it) and tantivy, each built from the journals
//! and asked the window's three kinds of search (a word as typed, so a prefix; a rare word; a
//! phrase), newest first, 50 hits with the words around each match. Prints each figure and
//! tantivy ÷ SQLite, since the machines these run on are shared and noisy.
//!
//! `cargo bench -p walkie-store --bench search_engines --features tantivy-bench` (10,000
//! conversations); `SEARCH_BENCH_CONVERSATIONS=500` for a short run. The feature keeps tantivy
//! out of every other build.

#[path = "support/library.rs"]
mod library;

use std::path::Path;
use std::time::Instant;

use library::{SEARCHES, VOCABULARY, conversations_wanted, percentiles, word, write_library};
use tantivy::collector::TopDocs;
use tantivy::query::{PhraseQuery, Query, RegexQuery, TermQuery};
use tantivy::schema::{FAST, IndexRecordOption, STORED, STRING, Schema, TEXT};
use tantivy::snippet::SnippetGenerator;
use tantivy::{Index, IndexWriter, Order, TantivyDocument, Term, doc};
use walkie_store::search::INDEX_FILE;
use walkie_store::{SearchIndex, Store};

const HITS: usize = 50;

/// Bytes of the files under `dir` whose name starts with `prefix` ("" for all).
fn size_of(dir: &Path, prefix: &str) -> u64 {
    std::fs::read_dir(dir)
        .expect("the folder")
        .flatten()
        .filter(|entry| entry.file_name().to_string_lossy().starts_with(prefix))
        .map(|entry| entry.metadata().map_or(0, |metadata| metadata.len()))
        .sum()
}

/// p50 and p95 of [`SEARCHES`] runs of `search`, in ms, and the hits the last one found.
fn timed(mut search: impl FnMut() -> usize) -> (f64, f64, usize) {
    let mut times = Vec::with_capacity(SEARCHES);
    let mut found = 0;
    for _ in 0..SEARCHES {
        let started = Instant::now();
        found = search();
        times.push(started.elapsed());
    }
    let (p50, p95) = percentiles(times);
    (p50, p95, found)
}

struct Figures {
    build_s: f64,
    index_bytes: u64,
    /// p50 and p95 of each kind of search, in ms, and the hits the last one showed.
    searches: Vec<(f64, f64, usize)>,
}

fn sqlite(store: &Store, root: &Path, kinds: &[(String, String, String)]) -> Figures {
    let started = Instant::now();
    let (index, _) = SearchIndex::open(store).expect("the index opens");
    let mut index = index;
    index.refresh(store).expect("the index is built");
    let build_s = started.elapsed().as_secs_f64();
    let searches = kinds
        .iter()
        .map(|(typed, _, _)| timed(|| index.search(typed, HITS).expect("a search").len()))
        .collect();
    Figures {
        build_s,
        index_bytes: size_of(root, INDEX_FILE),
        searches,
    }
}

fn tantivy(store: &Store, dir: &Path, kinds: &[(String, String, String)]) -> Figures {
    let mut schema = Schema::builder();
    let conversation = schema.add_text_field("conversation", STRING | STORED);
    let message = schema.add_text_field("message", STRING | STORED);
    let text = schema.add_text_field("text", TEXT | STORED);
    let started_field = schema.add_i64_field("started", FAST);
    let schema = schema.build();

    let started = Instant::now();
    let index = Index::create_in_dir(dir, schema).expect("a tantivy index");
    let mut writer: IndexWriter = index.writer(64_000_000).expect("a writer");
    for summary in store.list().expect("the conversations") {
        let opened = store.open(&summary.id).expect("a conversation");
        for said in opened.messages() {
            let Some(body) = said.content() else { continue };
            writer
                .add_document(doc!(
                    conversation => summary.id.as_str(),
                    message => said.id(),
                    text => body,
                    started_field => summary.started_unix_ms,
                ))
                .expect("a document");
        }
    }
    writer.commit().expect("the commit");
    writer.wait_merging_threads().expect("the merges");
    let build_s = started.elapsed().as_secs_f64();

    let reader = index.reader().expect("a reader");
    let searcher = reader.searcher();
    let searches = kinds
        .iter()
        .map(|(_, prefix_or_word, second)| {
            let query: Box<dyn Query> = if !second.is_empty() {
                Box::new(PhraseQuery::new(vec![
                    Term::from_field_text(text, prefix_or_word),
                    Term::from_field_text(text, second),
                ]))
            } else if let Some(prefix) = prefix_or_word.strip_suffix('*') {
                Box::new(RegexQuery::from_pattern(&format!("{prefix}.*"), text).expect("a pattern"))
            } else {
                Box::new(TermQuery::new(
                    Term::from_field_text(text, prefix_or_word),
                    IndexRecordOption::WithFreqsAndPositions,
                ))
            };
            let newest =
                TopDocs::with_limit(HITS).order_by_fast_field::<i64>("started", Order::Desc);
            timed(|| {
                let hits = searcher.search(&query, &newest).expect("a search");
                let snippets =
                    SnippetGenerator::create(&searcher, &*query, text).expect("snippets");
                for (_, address) in &hits {
                    let document: TantivyDocument = searcher.doc(*address).expect("a document");
                    std::hint::black_box(snippets.snippet_from_doc(&document).to_html());
                }
                hits.len()
            })
        })
        .collect();
    Figures {
        build_s,
        index_bytes: size_of(dir, ""),
        searches,
    }
}

fn main() {
    let conversations = conversations_wanted();
    let root = tempfile::tempdir().expect("a temporary folder");
    let text_bytes = write_library(root.path(), conversations);
    let store = Store::new(root.path());
    let tantivy_dir = tempfile::tempdir().expect("a folder for tantivy");
    // (as typed in the window, tantivy's word or prefix, tantivy's second word of a phrase)
    let common = word(0);
    let prefix = &common[..common.len() - 1];
    let kinds = vec![
        (prefix.to_owned(), format!("{prefix}*"), String::new()),
        (word(VOCABULARY - 7), word(VOCABULARY - 7), String::new()),
        (format!("\"{} {}\"", word(1), word(2)), word(1), word(2)),
    ];
    let names = ["word as typed (prefix)", "rare word", "phrase"];

    let fts5 = sqlite(&store, root.path(), &kinds);
    let tantivy = tantivy(&store, tantivy_dir.path(), &kinds);

    let mb = text_bytes as f64 / 1e6;
    println!("search engines: {conversations} conversations, {mb:.1} MB of transcript text");
    println!(
        "  build from the journals: SQLite FTS5 {:.2} s, tantivy {:.2} s (tantivy ÷ SQLite {:.2})",
        fts5.build_s,
        tantivy.build_s,
        tantivy.build_s / fts5.build_s
    );
    println!(
        "  index per MB of text: SQLite FTS5 {:.2} MB, tantivy {:.2} MB (tantivy ÷ SQLite {:.2})",
        fts5.index_bytes as f64 / text_bytes as f64,
        tantivy.index_bytes as f64 / text_bytes as f64,
        tantivy.index_bytes as f64 / fts5.index_bytes as f64
    );
    for ((name, sqlite), tantivy) in names.iter().zip(&fts5.searches).zip(&tantivy.searches) {
        println!(
            "  {name}: SQLite FTS5 p50 {:.2} ms p95 {:.2} ms ({} hits), tantivy p50 {:.2} ms p95 {:.2} ms ({} hits); p95 tantivy ÷ SQLite {:.2}",
            sqlite.0,
            sqlite.1,
            sqlite.2,
            tantivy.0,
            tantivy.1,
            tantivy.2,
            tantivy.1 / sqlite.1
        );
    }
}
