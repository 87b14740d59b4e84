//! Every input kept in `fuzz/regressions/agui/` replayed as the `agui` fuzz target does: as the
//! JSON array `agui-verify` reads (each element decoded on its own), or else as JSON lines,
//! through the whole consumer in both modes. Each event is accepted or a typed violation;
//! nothing panics.

use serde_json::value::RawValue;
use std::panic::{AssertUnwindSafe, catch_unwind};

use walkie_agui::{Consumer, Mode, Rule};

#[path = "../../../fuzz/regressions/kept.rs"]
mod kept;

fn regressions() -> Vec<(String, String)> {
    kept::kept_texts("agui")
}

fn consume(text: &str, mode: Mode) -> Consumer {
    let mut consumer = Consumer::new(mode);
    let elements: Vec<&str> = match serde_json::from_str::<Vec<&RawValue>>(text) {
        Ok(elements) => elements.into_iter().map(RawValue::get).collect(),
        Err(_) => text.lines().collect(),
    };
    for element in elements {
        if consumer.push_json(element).is_err() {
            break;
        }
    }
    consumer
}

#[test]
fn every_kept_agui_input_is_consumed_or_is_a_typed_violation() {
    let mut panicked = Vec::new();
    for (name, text) in regressions() {
        for mode in [Mode::Consumer, Mode::Strict] {
            let outcome = catch_unwind(AssertUnwindSafe(|| {
                let consumer = consume(&text, mode);
                let _ = consumer.report();
                consumer.failure().cloned()
            }));
            match outcome {
                Ok(Some(violation)) => {
                    assert!(!violation.message.is_empty(), "{name}: an empty violation")
                }
                Ok(None) => {}
                Err(_) => panicked.push(format!("{name} ({mode:?})")),
            }
        }
    }
    assert!(
        panicked.is_empty(),
        "the AG-UI consumer panicked on {panicked:?}"
    );
}

#[test]
fn text_a_json_value_cannot_hold_is_a_schema_violation_at_its_event() {
    for (name, text) in regressions() {
        if !name.contains("surrogate") && !name.contains("1e999") && !name.contains("deep") {
            continue;
        }
        // In each of these files the last event is the one no JSON value can hold.
        let last_index = match serde_json::from_str::<Vec<&RawValue>>(&text) {
            Ok(elements) => elements.len() - 1,
            Err(_) => text.lines().count() - 1,
        };
        let consumer = consume(&text, Mode::Consumer);
        let violation = consumer
            .failure()
            .unwrap_or_else(|| panic!("{name} was accepted"));
        assert_eq!(violation.rule, Rule::Schema, "{name}: {violation:?}");
        assert_eq!(violation.event_index, last_index, "{name}: {violation:?}");
    }
}
