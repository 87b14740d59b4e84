//! Every conformance case goes through the real `agui-verify` binary, in consumer mode
//! (`expect`) and in strict mode (`expectStrict`, else `expect`). Advisory cases (behaviour the
//! spec leaves to the implementation) are reported, not failed.

use std::io::Write;
use std::process::{Command, Output, Stdio};

use serde_json::Value;

const CASES: &str = include_str!("conformance/ag-ui-text-messages.json");
const AGUI_VERIFY: &str = env!("CARGO_BIN_EXE_agui-verify");

fn cases() -> Vec<Value> {
    serde_json::from_str(CASES).expect("the conformance file is a JSON array of cases")
}

/// The case's events as the JSON array text the binary reads; string elements are raw event
/// text (`eventsEncoding: raw-json-text`) and are spliced in verbatim.
fn events_text(case: &Value) -> String {
    let parts: Vec<String> = case["events"]
        .as_array()
        .expect("a case has events")
        .iter()
        .map(|event| match event {
            Value::String(raw) => raw.clone(),
            object => object.to_string(),
        })
        .collect();
    format!("[{}]", parts.join(","))
}

fn run_agui_verify(arguments: &[&str], stdin_text: &str) -> Output {
    let mut child = Command::new(AGUI_VERIFY)
        .args(arguments)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("agui-verify starts");
    child
        .stdin
        .take()
        .expect("stdin is piped")
        .write_all(stdin_text.as_bytes())
        .expect("stdin accepts the events");
    child.wait_with_output().expect("agui-verify finishes")
}

/// Whether the binary's verdict matches the expectation: messages exactly for "ok"; for a
/// violation, every field the case states (rule, eventIndex, officialMessage, field).
fn verdict_matches(expected: &Value, actual: &Value) -> bool {
    if expected["outcome"] != actual["outcome"] {
        return false;
    }
    match expected["outcome"].as_str() {
        Some("ok") => expected["messages"] == actual["messages"],
        _ => expected["violation"]
            .as_object()
            .expect("a violation case names its violation")
            .iter()
            .all(|(key, value)| actual["violation"].get(key) == Some(value)),
    }
}

fn check_every_case(strict: bool) {
    let mut failures = Vec::new();
    let mut advisories = Vec::new();
    let mut checked = 0;
    for case in cases() {
        let name = case["name"].as_str().expect("a case has a name").to_owned();
        let expected = if strict {
            case.get("expectStrict").unwrap_or(&case["expect"])
        } else {
            &case["expect"]
        };
        let arguments: &[&str] = if strict { &["--strict"] } else { &[] };
        let output = run_agui_verify(arguments, &events_text(&case));
        let stdout = String::from_utf8_lossy(&output.stdout);
        let actual: Value = serde_json::from_str(&stdout).unwrap_or_else(|error| {
            panic!("{name}: agui-verify printed no JSON ({error}): {stdout}")
        });
        let expected_exit = if expected["outcome"] == "ok" { 0 } else { 1 };
        let matches =
            verdict_matches(expected, &actual) && output.status.code() == Some(expected_exit);
        checked += 1;
        if case["advisory"] == Value::Bool(true) {
            advisories.push(format!(
                "{name}: {}",
                if matches {
                    "as expected".to_owned()
                } else {
                    format!("got {actual}")
                }
            ));
        } else if !matches {
            failures.push(format!(
                "{name}\n  expected {expected}\n  got      {actual} (exit {:?})",
                output.status.code()
            ));
        }
    }
    for advisory in &advisories {
        eprintln!(
            "advisory ({}): {advisory}",
            if strict { "strict" } else { "consumer" }
        );
    }
    assert!(checked >= 46, "only {checked} conformance cases found");
    assert!(
        failures.is_empty(),
        "{} conformance case(s) failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn every_conformance_case_passes_through_agui_verify_as_a_consumer() {
    check_every_case(false);
}

#[test]
fn every_conformance_case_passes_through_agui_verify_in_strict_mode() {
    check_every_case(true);
}

#[test]
fn agui_verify_reads_a_path_argument_as_well_as_stdin() {
    let case = cases()
        .into_iter()
        .find(|case| case["name"] == "basic_assistant_message")
        .expect("basic case");
    let path = std::env::temp_dir().join(format!("agui-verify-path-{}.json", std::process::id()));
    std::fs::write(&path, events_text(&case)).expect("temp file is writable");
    let output = Command::new(AGUI_VERIFY)
        .arg(&path)
        .output()
        .expect("agui-verify runs");
    std::fs::remove_file(&path).ok();
    let actual: Value = serde_json::from_slice(&output.stdout).expect("JSON verdict");
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(actual, case["expect"]);
}

#[test]
fn unreadable_input_exits_2_with_a_reason_on_stderr() {
    for (input, reason) in [
        ("not json at all", "not a JSON array"),
        ("{\"type\":\"RUN_STARTED\"}", "not a JSON array"),
    ] {
        let output = run_agui_verify(&[], input);
        assert_eq!(output.status.code(), Some(2), "input {input:?}");
        assert!(output.stdout.is_empty(), "nothing on stdout for {input:?}");
        assert!(
            String::from_utf8_lossy(&output.stderr).contains(reason),
            "stderr explains {input:?}"
        );
    }
    let missing = Command::new(AGUI_VERIFY)
        .arg("/nonexistent/events.json")
        .output()
        .expect("agui-verify runs");
    assert_eq!(missing.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&missing.stderr).contains("cannot read /nonexistent/events.json")
    );
}

#[test]
fn a_violation_report_carries_a_human_message_and_exits_1() {
    let output = run_agui_verify(
        &[],
        r#"[{"type":"RUN_STARTED","threadId":"t","runId":"r"},{"type":"TEXT_MESSAGE_END","messageId":"m9"}]"#,
    );
    let actual: Value = serde_json::from_slice(&output.stdout).expect("JSON verdict");
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(actual["violation"]["rule"], "END_NOT_OPEN");
    assert_eq!(actual["violation"]["eventIndex"], 1);
    assert!(
        actual["violation"]["message"]
            .as_str()
            .expect("a message")
            .contains("'m9'")
    );
}
