//! Full-text search over the saved conversations: an index (SQLite FTS5) built from the
//! journals, refreshed as conversations come, grow and go, rebuilt when its file is damaged.

mod support;

use support::scripted_conversation::{START_UNIX_MS, record_at};
use walkie_store::search::{INDEX_FILE, fts_query};
use walkie_store::{SearchIndex, Store};

const DAY_MS: i64 = 86_400_000;

/// Records the script as a closed conversation that started `start_unix_ms`; returns its id.
fn record(store: &Store, start_unix_ms: i64) -> String {
    record_at(store, start_unix_ms, true)
}

fn matched_words(hit: &walkie_store::SearchHit) -> Vec<String> {
    hit.snippet
        .iter()
        .filter(|part| part.matched)
        .map(|part| part.text.to_lowercase())
        .collect()
}

#[test]
fn words_said_in_any_conversation_are_found_with_their_message_and_marked_in_context() {
    let root = tempfile::tempdir().expect("a temporary root");
    let store = Store::new(root.path());
    let monday = record(&store, START_UNIX_MS);
    let tuesday = record(&store, START_UNIX_MS + DAY_MS);
    let (mut index, rebuilt) = SearchIndex::open(&store).expect("the index opens");
    assert_eq!(rebuilt, None, "a new index is not a rebuilt one");
    let report = index.refresh(&store).expect("the index is filled");
    assert_eq!((report.indexed, report.dropped), (2, 0));

    // As the user types: "questi" already finds "Question".
    let hits = index.search("questi", 100).expect("a search");
    assert!(!hits.is_empty());
    assert!(hits.iter().all(|hit| hit.role == "user"), "{hits:?}");
    assert!(hits.iter().any(|hit| hit.conversation_id == monday));
    assert!(hits.iter().any(|hit| hit.conversation_id == tuesday));
    assert!(
        hits.iter()
            .all(|hit| matched_words(hit) == ["question"] && hit.message_id.starts_with("user-")),
        "{hits:?}"
    );
    let shown: String = hits[0]
        .snippet
        .iter()
        .map(|part| part.text.as_str())
        .collect();
    assert!(shown.starts_with("Question number"), "{shown}");

    // A phrase: only the messages that say it, on both sides.
    let hits = index.search("\"number 2\"", 100).expect("a search");
    let mut found: Vec<(String, String)> = hits
        .iter()
        .map(|hit| (hit.conversation_id.clone(), hit.message_id.clone()))
        .collect();
    found.sort();
    assert_eq!(
        found,
        [
            (monday.clone(), "assistant-2".to_owned()),
            (monday.clone(), "user-2".to_owned()),
            (tuesday.clone(), "assistant-2".to_owned()),
            (tuesday.clone(), "user-2".to_owned()),
        ]
    );
    assert!(index.search("walrus", 10).expect("a search").is_empty());
    assert!(index.search("   ", 10).expect("a search").is_empty());
}

#[test]
fn a_refresh_reads_only_what_changed_and_drops_what_is_gone() {
    let root = tempfile::tempdir().expect("a temporary root");
    let store = Store::new(root.path());
    let monday = record(&store, START_UNIX_MS);
    let (mut index, _) = SearchIndex::open(&store).expect("the index opens");
    index.refresh(&store).expect("filled");
    let again = index.refresh(&store).expect("refreshed");
    assert_eq!((again.indexed, again.dropped), (0, 0), "nothing changed");

    let tuesday = record(&store, START_UNIX_MS + DAY_MS);
    let after_one_more = index.refresh(&store).expect("refreshed");
    assert_eq!(after_one_more.indexed, 1, "only the new one is read");

    store.delete(&monday, None).expect("deleted");
    let after_delete = index.refresh(&store).expect("refreshed");
    assert_eq!(after_delete.dropped, 1);
    let hits = index.search("answer", 100).expect("a search");
    assert!(!hits.is_empty());
    assert!(
        hits.iter().all(|hit| hit.conversation_id == tuesday),
        "{hits:?}"
    );
    assert_eq!(index.conversation_count().expect("counted"), 1);
}

#[test]
fn a_damaged_index_is_thrown_away_and_built_again() {
    let root = tempfile::tempdir().expect("a temporary root");
    let store = Store::new(root.path());
    record(&store, START_UNIX_MS);
    {
        let (mut index, _) = SearchIndex::open(&store).expect("the index opens");
        index.refresh(&store).expect("filled");
    }
    std::fs::write(
        root.path().join(INDEX_FILE),
        b"this is not a database at all, ".repeat(200),
    )
    .expect("damaging the index");
    let (mut index, rebuilt) = SearchIndex::open(&store).expect("the index opens anew");
    assert!(rebuilt.is_some(), "the damage is said once");
    assert_eq!(index.conversation_count().expect("counted"), 0);
    assert_eq!(index.refresh(&store).expect("filled").indexed, 1);
    assert!(!index.search("question", 10).expect("a search").is_empty());
    assert_eq!(
        store.list().expect("listed").len(),
        1,
        "the index is not a conversation"
    );
}

#[test]
fn a_conversation_is_found_by_its_name_once_it_has_one() {
    let root = tempfile::tempdir().expect("a temporary root");
    let store = Store::new(root.path());
    let named = record(&store, START_UNIX_MS);
    record(&store, START_UNIX_MS + DAY_MS);
    let (mut index, _) = SearchIndex::open(&store).expect("the index opens");
    index.refresh(&store).expect("filled");
    assert!(index.search("lisbon", 10).expect("a search").is_empty());
    store
        .rename(&named, "Lisbon trip", None, START_UNIX_MS + 2 * DAY_MS)
        .expect("renamed");
    index.refresh(&store).expect("refreshed");
    let hits = index.search("lisbon", 10).expect("a search");
    assert_eq!(hits.len(), 1, "{hits:?}");
    assert_eq!(hits[0].conversation_id, named);
    assert_eq!(
        (hits[0].role.as_str(), hits[0].message_id.as_str()),
        ("title", "")
    );
    assert_eq!(matched_words(&hits[0]), ["lisbon"]);
}

#[test]
fn an_index_an_older_walkie_made_is_made_anew_without_a_word() {
    let root = tempfile::tempdir().expect("a temporary root");
    let store = Store::new(root.path());
    record(&store, START_UNIX_MS);
    {
        let (mut index, _) = SearchIndex::open(&store).expect("the index opens");
        index.refresh(&store).expect("filled");
    }
    let older = rusqlite::Connection::open(root.path().join(INDEX_FILE)).expect("the file");
    older
        .execute_batch("PRAGMA user_version = 2;")
        .expect("an older version's mark");
    drop(older);
    let (mut index, rebuilt) = SearchIndex::open(&store).expect("the index opens anew");
    assert_eq!(rebuilt, None, "an upgrade is not damage");
    assert_eq!(index.conversation_count().expect("counted"), 0, "made anew");
    assert_eq!(index.refresh(&store).expect("filled").indexed, 1);
}

#[test]
fn the_index_file_is_the_users_alone() {
    use std::os::unix::fs::PermissionsExt;
    let root = tempfile::tempdir().expect("a temporary root");
    let store = Store::new(root.path());
    record(&store, START_UNIX_MS);
    let (mut index, _) = SearchIndex::open(&store).expect("the index opens");
    index.refresh(&store).expect("filled");
    let mode = std::fs::metadata(root.path().join(INDEX_FILE))
        .expect("the index file")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
}

#[test]
fn syntax_typed_into_the_search_is_looked_for_as_words() {
    assert_eq!(
        fts_query("a AND b").as_deref(),
        Some("\"a\" \"AND\" \"b\"*")
    );
    let root = tempfile::tempdir().expect("a temporary root");
    let store = Store::new(root.path());
    record(&store, START_UNIX_MS);
    let (mut index, _) = SearchIndex::open(&store).expect("the index opens");
    index.refresh(&store).expect("filled");
    for typed in [
        "\"",
        "NEAR(",
        "question OR",
        "*",
        "number:",
        "-answer",
        "^here",
    ] {
        assert!(index.search(typed, 10).is_ok(), "{typed} is not an error");
    }
}

#[test]
fn the_conversation_going_on_is_read_again_alone() {
    let root = tempfile::tempdir().expect("a temporary root");
    let store = Store::new(root.path());
    let monday = record(&store, START_UNIX_MS);
    let (mut index, _) = SearchIndex::open(&store).expect("the index opens");
    index.refresh(&store).expect("filled");
    let tuesday = record(&store, START_UNIX_MS + DAY_MS);
    let unchanged = index
        .refresh_conversation(&store, &monday)
        .expect("looked at");
    assert_eq!(unchanged.indexed, 0, "its journal did not change");
    let read = index
        .refresh_conversation(&store, &tuesday)
        .expect("looked at");
    assert_eq!(read.indexed, 1);
    let hits = index.search("answer", 100).expect("a search");
    assert_eq!(
        hits.first().map(|hit| hit.conversation_id.as_str()),
        Some(tuesday.as_str()),
        "the last read comes first"
    );
    assert!(hits.iter().any(|hit| hit.conversation_id == monday));
}
