//! Every input kept in `fuzz/regressions/server_event/` and `fuzz/regressions/client_event/`
//! (crashes the fuzzer found, and the payloads issue 14 names) replayed through the public
//! decoders, as the fuzz targets call them: each gives a typed result, none panics.

use kept::kept_texts;
use std::panic::{AssertUnwindSafe, catch_unwind};

use walkie_openai::{decode_client_event, decode_server_event};

#[path = "../../../fuzz/regressions/kept.rs"]
mod kept;

/// Each kept input of `target` through `decode`: the names of those that panicked.
fn panics_of<T, E: std::fmt::Display>(
    target: &str,
    decode: fn(&str) -> Result<T, E>,
) -> Vec<String> {
    let mut panicked = Vec::new();
    for (name, text) in kept_texts(target) {
        match catch_unwind(AssertUnwindSafe(|| decode(&text))) {
            Ok(Ok(_)) => {}
            Ok(Err(error)) => assert!(!error.to_string().is_empty(), "{name}: an empty error"),
            Err(_) => panicked.push(name),
        }
    }
    panicked
}

#[test]
fn every_kept_server_event_input_decodes_or_is_a_typed_error() {
    let panicked = panics_of("server_event", decode_server_event);
    assert!(
        panicked.is_empty(),
        "decode_server_event panicked on {panicked:?}"
    );
}

#[test]
fn every_kept_client_event_input_decodes_or_is_a_typed_error() {
    let panicked = panics_of("client_event", decode_client_event);
    assert!(
        panicked.is_empty(),
        "decode_client_event panicked on {panicked:?}"
    );
}

#[test]
fn the_payloads_named_in_issue_14_are_rejected_with_a_typed_error() {
    let mut checked = 0;
    for target in ["server_event", "client_event"] {
        for (name, text) in kept_texts(target) {
            if !name.starts_with("unknown-type-with-") && !name.contains("nested-200-deep") {
                continue;
            }
            checked += 1;
            let rejected = if target == "server_event" {
                decode_server_event(&text).is_err()
            } else {
                decode_client_event(&text).is_err()
            };
            assert!(rejected, "{target}/{name} was accepted");
        }
    }
    // Three payloads (1e999, a lone surrogate, deep nesting) for each decoder: a renamed file
    // must not turn this test into one that checks nothing.
    assert!(
        checked >= 6,
        "only {checked} of issue 14's payloads were found"
    );
}
