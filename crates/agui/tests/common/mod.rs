//! Helpers shared by the integration tests: running Walkie's producer output through the real
//! `agui-verify --strict`, and in-process through the strict consumer.

#![allow(dead_code)]

use std::io::Write;
use std::process::{Command, Stdio};

use serde_json::Value;
use walkie_agui::{Consumer, Event, Mode};

pub const AGUI_VERIFY: &str = env!("CARGO_BIN_EXE_agui-verify");

/// Runs `agui-verify --strict` on the events and returns its verdict, asserting exit code 0.
pub fn assert_passes_agui_verify_strict(events: &[Event]) -> Value {
    let text = serde_json::to_string(events).expect("events serialise");
    let mut child = Command::new(AGUI_VERIFY)
        .arg("--strict")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("agui-verify starts");
    child
        .stdin
        .take()
        .expect("piped")
        .write_all(text.as_bytes())
        .expect("stdin accepts events");
    let output = child.wait_with_output().expect("agui-verify finishes");
    let verdict: Value = serde_json::from_slice(&output.stdout).expect("agui-verify prints JSON");
    assert_eq!(
        output.status.code(),
        Some(0),
        "agui-verify --strict rejected the writer's output: {verdict}\n{text}"
    );
    verdict
}

/// Feeds the events through a strict in-process consumer, panicking with the violation if any.
pub fn strict_consumer(events: &[Event]) -> Consumer {
    let mut consumer = Consumer::new(Mode::Strict);
    for event in events {
        if let Err(violation) = consumer.push(event) {
            panic!(
                "strict verification failed: {violation}\n{}",
                serde_json::to_string_pretty(events).unwrap_or_default()
            );
        }
    }
    consumer
}

/// `(id, role, content)` of every message, in history order.
pub fn texts(consumer: &Consumer) -> Vec<(String, String, String)> {
    consumer
        .messages()
        .iter()
        .map(|m| {
            (
                m.id().to_owned(),
                m.role_name().to_owned(),
                m.content().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}
