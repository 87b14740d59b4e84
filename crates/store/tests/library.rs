//! The library lists, opens, deletes, prunes and exports conversations, and never touches the
//! current one; the data directory honours `WALKIE_DATA_DIR`.

mod support;

use std::fs;
use std::path::PathBuf;

use support::scripted_conversation::{START_UNIX_MS, record_at};
use walkie_store::{Retention, Store, StoreError, data_dir_from};

const DAY_MS: i64 = 86_400_000;

#[test]
fn the_listing_shows_date_duration_turns_and_first_words_newest_first() {
    let root = tempfile::tempdir().expect("a temporary root");
    let store = Store::new(root.path());
    let older = record_at(&store, START_UNIX_MS, true);
    let newer = record_at(&store, START_UNIX_MS + DAY_MS, true);
    let listed = store.list().expect("lists");
    let ids: Vec<&str> = listed.iter().map(|summary| summary.id.as_str()).collect();
    assert_eq!(ids, [newer.as_str(), older.as_str()]);
    let summary = &listed[1];
    assert_eq!(summary.id, "2023-11-14_22-13-20");
    assert_eq!(summary.started_unix_ms, START_UNIX_MS);
    assert_eq!(summary.duration_ms, 65_000);
    assert_eq!(summary.turn_count, 5);
    assert_eq!(summary.title, "Question number 1, please answer.");
    assert!(!summary.open);
}

#[test]
fn a_damaged_journal_is_listed_as_far_as_it_reads_and_marked_and_an_unreadable_one_last() {
    let root = tempfile::tempdir().expect("a temporary root");
    let store = Store::new(root.path());
    let whole = record_at(&store, START_UNIX_MS, true);
    let torn = record_at(&store, START_UNIX_MS + DAY_MS, true);
    // A line in the middle of one journal is garbage (a disk error, a bad edit).
    let journal = root.path().join(&torn).join(walkie_store::JOURNAL_FILE);
    let text = fs::read_to_string(&journal).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    lines.insert(5, "{\"record\": \"turn_started\", \"turn\": \"#\x00");
    fs::write(&journal, lines.join("\n") + "\n").unwrap();
    // Another folder's journal has lost its first line.
    let headless = root.path().join("2023-01-01_00-00-00");
    fs::create_dir(&headless).unwrap();
    fs::write(
        headless.join(walkie_store::JOURNAL_FILE),
        "{\"record\":\"closed\",\"unix_ms\":1}\n",
    )
    .unwrap();
    // A folder without a journal is no conversation.
    fs::create_dir(root.path().join("notes")).unwrap();

    let listed = store.list().expect("lists, whatever the folders hold");
    let summary = |id: &str| {
        listed
            .iter()
            .find(|summary| summary.id == id)
            .unwrap_or_else(|| panic!("{id} is listed: {listed:?}"))
    };
    assert_eq!(listed.len(), 3, "{listed:?}");
    assert_eq!(summary(&whole).damaged, None);
    assert_eq!(
        summary(&torn).damaged.as_deref(),
        Some("a line of its journal could not be read; the rest is shown")
    );
    assert_eq!(summary(&torn).turn_count, 5, "read past the bad line");
    assert_eq!(
        summary(&torn).title,
        "Question number 1, please answer.",
        "named by what it holds"
    );
    assert_eq!(
        listed[2].id, "2023-01-01_00-00-00",
        "an unreadable one comes last"
    );
    assert_eq!(
        listed[2].damaged.as_deref(),
        Some("its journal does not begin with a start record")
    );
    assert_eq!(
        listed[2].title, "2023-01-01_00-00-00",
        "named by its folder"
    );
}

#[test]
fn deleting_removes_the_folder_but_never_the_current_conversation() {
    let root = tempfile::tempdir().expect("a temporary root");
    let store = Store::new(root.path());
    let done = record_at(&store, START_UNIX_MS, true);
    let current = record_at(&store, START_UNIX_MS + 1_000, false);
    assert!(matches!(
        store.delete(&current, Some(&current)),
        Err(StoreError::CurrentConversation { .. })
    ));
    store.delete(&done, Some(&current)).expect("deletes");
    assert!(!root.path().join(&done).exists());
    assert!(matches!(
        store.open(&done),
        Err(StoreError::UnknownConversation { .. })
    ));
    assert!(matches!(
        store.delete("../etc", None),
        Err(StoreError::InvalidId { .. })
    ));
}

#[test]
fn retention_keeps_the_recent_and_always_the_current() {
    let root = tempfile::tempdir().expect("a temporary root");
    let store = Store::new(root.path());
    let ids: Vec<String> = (0..4)
        .map(|day| record_at(&store, START_UNIX_MS + day * DAY_MS, true))
        .collect();
    let now = START_UNIX_MS + 3 * DAY_MS + 1_000;

    // Forever deletes nothing.
    let deleted = store
        .apply_retention(Retention::Forever, now, None)
        .expect("prunes");
    assert_eq!(deleted, Vec::<String>::new());

    // Keep 2 days: the conversations from 3 days and from 2 days and a second ago go, but
    // the oldest is current and stays. What goes is told first, and telling deletes nothing.
    let two_days = Retention::try_from(Some(2)).expect("two days");
    let expiring = store.expiring(two_days, now, Some(&ids[0])).expect("lists");
    assert_eq!(expiring, [ids[1].clone()]);
    assert_eq!(store.list().expect("lists").len(), 4, "nothing deleted yet");
    let deleted = store
        .apply_retention(two_days, now, Some(&ids[0]))
        .expect("prunes");
    assert_eq!(deleted, [ids[1].clone()]);

    // Keep 1 day: the conversations from a day and a second ago go, and the oldest now too.
    let one_day = Retention::try_from(Some(1)).expect("one day");
    let deleted = store.apply_retention(one_day, now, None).expect("prunes");
    assert_eq!(deleted, [ids[2].clone(), ids[0].clone()]);
    let left: Vec<String> = store
        .list()
        .expect("lists")
        .into_iter()
        .map(|s| s.id)
        .collect();
    assert_eq!(left, [ids[3].clone()]);
}

#[test]
fn export_copies_the_folder_or_writes_one_markdown_file_and_never_overwrites() {
    let root = tempfile::tempdir().expect("a temporary root");
    let store = Store::new(root.path());
    let id = record_at(&store, START_UNIX_MS, true);
    let out = tempfile::tempdir().expect("an export folder");

    let copy = out.path().join("copy");
    store.export_folder(&id, &copy).expect("exports a folder");
    for file in [
        "journal.jsonl",
        "transcript.md",
        "transcript.json",
        "turns/0003-assistant.wav",
    ] {
        assert_eq!(
            fs::read(copy.join(file)).expect("exported file"),
            fs::read(root.path().join(&id).join(file)).expect("original file"),
            "{file}"
        );
    }
    assert!(matches!(
        store.export_folder(&id, &copy),
        Err(StoreError::DestinationExists { .. })
    ));

    let markdown = out.path().join("conversation.md");
    store
        .export_markdown(&id, &markdown)
        .expect("exports markdown");
    let text = fs::read_to_string(&markdown).expect("markdown");
    assert!(text.contains("Answer number 5, here it is."));
    assert!(
        !text.contains("](turns/"),
        "no links that would dangle outside the folder"
    );
    assert!(matches!(
        store.export_markdown(&id, &markdown),
        Err(StoreError::DestinationExists { .. })
    ));
}

#[test]
fn the_data_directory_is_the_override_when_set_else_the_platform_one() {
    let platform = Some(PathBuf::from("/home/me/.local/share"));
    assert_eq!(
        data_dir_from(Some("/tmp/walkie-test".into()), platform.clone()).expect("override"),
        PathBuf::from("/tmp/walkie-test")
    );
    assert_eq!(
        data_dir_from(Some("".into()), platform.clone()).expect("empty override is unset"),
        PathBuf::from("/home/me/.local/share/walkie")
    );
    assert!(matches!(
        data_dir_from(None, None),
        Err(StoreError::NoDataDir)
    ));
}

#[test]
fn a_retention_is_written_as_null_or_its_days_and_zero_days_is_refused() {
    let week = Retention::try_from(Some(7)).expect("a week");
    assert_eq!(serde_json::to_string(&week).expect("JSON"), "7");
    assert_eq!(
        serde_json::to_string(&Retention::Forever).expect("JSON"),
        "null"
    );
    assert_eq!(
        serde_json::from_str::<Retention>("7").expect("7 days"),
        week
    );
    assert_eq!(
        serde_json::from_str::<Retention>("null").expect("forever"),
        Retention::Forever
    );
    let zero = serde_json::from_str::<Retention>("0").expect_err("zero days");
    assert!(zero.to_string().contains("at least one day"), "{zero}");
}

#[test]
fn a_conversation_renamed_keeps_the_name_in_its_journal_and_stays_closed() {
    let root = tempfile::tempdir().expect("a temporary root");
    let store = Store::new(root.path());
    let id = record_at(&store, START_UNIX_MS, true);
    let before = store.open(&id).expect("opens");
    let saved = store
        .rename(
            &id,
            "  Tomatoes\nand the\u{7} garden ",
            None,
            START_UNIX_MS + DAY_MS,
        )
        .expect("renamed");
    assert_eq!(saved, "Tomatoes and the garden", "one line, trimmed");
    store
        .rename(&id, "The garden", None, START_UNIX_MS + 2 * DAY_MS)
        .expect("renamed again");
    let listed = store.list().expect("lists");
    assert_eq!(listed[0].title, "The garden", "the last name given");
    assert!(!listed[0].open, "still closed");
    let after = store.open(&id).expect("opens");
    assert_eq!(after.title(), Some("The garden"));
    assert!(after.is_closed());
    assert_eq!(
        after.duration_ms(),
        before.duration_ms(),
        "naming it later does not lengthen it"
    );
    assert!(
        !walkie_store::needs_recovery(&root.path().join(&id)),
        "nothing for a repair at the next start"
    );
}

#[test]
fn a_name_that_cannot_be_one_and_the_conversation_going_on_are_refused() {
    let root = tempfile::tempdir().expect("a temporary root");
    let store = Store::new(root.path());
    let id = record_at(&store, START_UNIX_MS, true);
    assert!(matches!(
        store.rename(&id, " \n\t", None, START_UNIX_MS),
        Err(StoreError::BadTitle { .. })
    ));
    assert!(matches!(
        store.rename(&id, &"x".repeat(81), None, START_UNIX_MS),
        Err(StoreError::BadTitle { .. })
    ));
    assert!(matches!(
        store.rename(&id, "Mine", Some(&id), START_UNIX_MS),
        Err(StoreError::RenamingCurrent { .. })
    ));
    assert!(matches!(
        store.rename("../elsewhere", "Mine", None, START_UNIX_MS),
        Err(StoreError::InvalidId { .. })
    ));
    assert_eq!(
        store.list().expect("lists")[0].title,
        "Question number 1, please answer.",
        "nothing was saved"
    );
}
