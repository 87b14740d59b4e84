//! Every input kept in `fuzz/regressions/journal/` replayed as the `journal` fuzz target does:
//! the journal reader, then what History does with its records (replay into a conversation,
//! the summary, the Markdown export, the JSON the window shows). Bad lines are reported as
//! garbage or a torn tail; nothing panics.

use std::panic::{AssertUnwindSafe, catch_unwind};

use walkie_store::{Conversation, parse_journal};

#[path = "../../../fuzz/regressions/kept.rs"]
mod kept;

fn regressions() -> Vec<(String, Vec<u8>)> {
    kept::kept_inputs("journal")
}

#[test]
fn every_kept_journal_input_is_read_and_replayed_without_a_panic() {
    let mut panicked = Vec::new();
    for (name, bytes) in regressions() {
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            let parsed = parse_journal(&bytes);
            let conversation =
                Conversation::from_records(parsed.records.iter().map(|(_, record)| record));
            let _ = conversation.first_words(12);
            let _ = conversation.render_markdown(true);
            let _ = conversation.to_json();
            parsed
        }));
        match outcome {
            Ok(parsed) => {
                for garbage in &parsed.garbage {
                    assert!(!garbage.reason.is_empty(), "{name}: garbage with no reason");
                }
            }
            Err(_) => panicked.push(name),
        }
    }
    assert!(
        panicked.is_empty(),
        "reading the journal panicked on {panicked:?}"
    );
}

#[test]
fn a_record_no_json_value_can_hold_is_a_garbage_line_and_the_start_is_kept() {
    for (name, bytes) in regressions() {
        if !name.starts_with("agui-record-") {
            continue;
        }
        let parsed = parse_journal(&bytes);
        assert!(
            parsed.started().is_some(),
            "{name}: the start record is kept"
        );
        let last_line = bytes.iter().filter(|&&b| b == b'\n').count();
        assert!(
            parsed.garbage.iter().any(|g| g.line_number == last_line),
            "{name}: line {last_line} is not reported: {:?}",
            parsed.garbage
        );
    }
}
