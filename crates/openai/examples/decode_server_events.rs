//! Feeds server events through Walkie's decoder, for the oracle (scripts/oracle/): reads one
//! JSON text per line on stdin and writes one verdict per line on stdout:
//! `{"type":…,"verdict":"decoded"|"kept_raw"|"unknown"|"error","detail":…}`. With `--live`, the
//! events are the Live API's, through [`decode_live_server_event`].
//!
//! A decoded `response.done` also carries `"usage"`: the usage as Walkie read it, written out
//! again, so the oracle can hold it against what the SDK sent.
//!
//! `kept_raw` is an event Walkie does not model on purpose (listed in
//! [`KEPT_RAW_SERVER_EVENT_TYPES`] or [`KEPT_RAW_LIVE_SERVER_EVENT_TYPES`]); `unknown` is one kept
//! raw that is not on that list, so a type the SDK has and Walkie forgot shows up as such
//! instead of passing unnoticed.

use std::io::{BufRead, BufWriter, Write};

use serde_json::json;
use walkie_openai::live::{
    KEPT_RAW_LIVE_SERVER_EVENT_TYPES, LiveServerEvent, decode_live_server_event,
};
use walkie_openai::{KEPT_RAW_SERVER_EVENT_TYPES, ServerEvent, UnknownEvent, decode_server_event};

fn kept_raw(unknown: &UnknownEvent, on_purpose: &[&str]) -> serde_json::Value {
    let kept = on_purpose.contains(&unknown.event_type.as_str());
    json!({
        "type": unknown.event_type,
        "verdict": if kept { "kept_raw" } else { "unknown" },
        "detail": if kept { "not modelled on purpose" } else { "kept raw, but not on the list of types kept raw on purpose" },
    })
}

fn verdict(line: &str) -> serde_json::Value {
    match decode_server_event(line) {
        Ok(ServerEvent::Unknown(unknown)) => kept_raw(&unknown, KEPT_RAW_SERVER_EVENT_TYPES),
        Ok(ServerEvent::ResponseDone { response }) => json!({
            "type": "response.done",
            "verdict": "decoded",
            "detail": null,
            "usage": response.usage,
        }),
        Ok(event) => json!({ "type": event.event_type(), "verdict": "decoded", "detail": null }),
        Err(error) => json!({ "type": null, "verdict": "error", "detail": error.to_string() }),
    }
}

fn live_verdict(line: &str) -> serde_json::Value {
    match decode_live_server_event(line) {
        Ok(LiveServerEvent::Unknown(unknown)) => {
            kept_raw(&unknown, KEPT_RAW_LIVE_SERVER_EVENT_TYPES)
        }
        Ok(event) => json!({ "type": event.event_type(), "verdict": "decoded", "detail": null }),
        Err(error) => json!({ "type": null, "verdict": "error", "detail": error.to_string() }),
    }
}

fn main() -> std::io::Result<()> {
    let live = std::env::args().skip(1).any(|arg| arg == "--live");
    let stdout = std::io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    for line in std::io::stdin().lock().lines() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        let verdict = if live {
            live_verdict(&line)
        } else {
            verdict(&line)
        };
        writeln!(out, "{verdict}")?;
    }
    out.flush()
}
