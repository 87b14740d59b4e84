//! Every input kept in `fuzz/regressions/sdp_answer/` replayed as the `sdp_answer` fuzz target
//! does: through the SDP answer parser and as a `Location` header. Each gives a typed result,
//! none panics, and the answer the local provider really sent parses.

use std::panic::{AssertUnwindSafe, catch_unwind};

use walkie_rtc::parse_answer;
use walkie_rtc::signalling::call_id_from_location;

#[path = "../../../fuzz/regressions/kept.rs"]
mod kept;

/// The kept inputs as text, lossily as the fuzz target and reqwest's `text()` decode them.
fn regressions() -> Vec<(String, String)> {
    kept::kept_inputs("sdp_answer")
        .into_iter()
        .map(|(name, bytes)| (name, String::from_utf8_lossy(&bytes).into_owned()))
        .collect()
}

#[test]
fn every_kept_sdp_answer_input_parses_or_is_a_typed_error() {
    let mut panicked = Vec::new();
    for (name, text) in regressions() {
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            let answer = parse_answer(&text).map(|_| ()).map_err(|e| e.to_string());
            let location = text.lines().next().unwrap_or_default();
            // A Location without a call id is no error: it only disables the REST hang-up.
            let call_id = call_id_from_location(location);
            (answer, call_id)
        }));
        match outcome {
            Ok((answer, call_id)) => {
                if let Err(error) = answer {
                    assert!(!error.is_empty(), "{name}: an empty error");
                }
                if let Some(call_id) = call_id {
                    assert!(!call_id.is_empty(), "{name}: an empty call id");
                }
            }
            Err(_) => panicked.push(name),
        }
    }
    assert!(
        panicked.is_empty(),
        "the SDP answer parsing panicked on {panicked:?}"
    );
}

#[test]
fn the_answer_the_local_provider_sent_parses_and_its_location_names_the_call() {
    let inputs = regressions();
    let text_of = |wanted: &str| {
        inputs
            .iter()
            .find(|(name, _)| name == wanted)
            .map(|(_, text)| text.as_str())
            .unwrap_or_else(|| panic!("{wanted} is kept"))
    };
    parse_answer(text_of("local-provider-answer.sdp")).expect("a real answer parses");
    assert!(parse_answer("not sdp").is_err());
    let call_id = call_id_from_location(text_of("location-path.txt")).expect("a call id");
    assert!(call_id.starts_with("rtc_local_"), "{call_id}");
}
