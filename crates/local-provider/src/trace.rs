//! What the provider received, written down for an independent checker (the project's Python
//! oracle) that validates Walkie's requests and client events against the official SDK's
//! types. With a trace directory set (`WALKIE_LOCAL_TRACE`), two JSON Lines files grow in it:
//!
//! - `client-events.jsonl`: every data-channel text message, exactly as received:
//!   `{"call_id","received_at_unix_ms","text"}`;
//! - `calls.jsonl`: every HTTP request: `{"method","path","query","content_type","form","parts",
//!   "auth","session","status","call_id"}`, and `"live_session"`: the JSON body of a Live API call
//!   (`POST /v1/live/sessions`). `auth` names the scheme only; no key or token value is ever
//!   written;
//! - `live-client-events.jsonl`: the same for the data-channel messages of Live API calls,
//!   whose events are another protocol's;
//! - `conversation.jsonl`: each item the call's conversation took, in order:
//!   `{"call_id","item_id","previous_item_id"}`, so a test can see what a request added to it
//!   (an out-of-band response adds nothing);
//! - `replies.jsonl`: when each reply's first audio packet was sent:
//!   `{"call_id","response_id","first_audio_sent_at_unix_ms"}`, so a benchmark can tell the
//!   provider's part of a turn's latency from the client's.
//!
//! The format is fixed (the oracle reads it). Each line is one `write` on a file opened in append
//! mode, so concurrent writers (several calls, several providers) never interleave inside a line
//! and a reader never sees half a line. A failed write is logged and the call goes on.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::Serialize;
use serde_json::Value;

pub(crate) const CLIENT_EVENTS_FILE: &str = "client-events.jsonl";
pub(crate) const LIVE_CLIENT_EVENTS_FILE: &str = "live-client-events.jsonl";
pub(crate) const CALLS_FILE: &str = "calls.jsonl";
pub(crate) const REPLIES_FILE: &str = "replies.jsonl";
pub(crate) const CONVERSATION_FILE: &str = "conversation.jsonl";

/// The trace directory of one provider.
#[derive(Debug)]
pub(crate) struct Trace {
    dir: PathBuf,
}

#[derive(Serialize)]
struct ClientEventLine<'a> {
    call_id: &'a str,
    received_at_unix_ms: u64,
    text: &'a str,
}

#[derive(Serialize)]
struct ConversationLine<'a> {
    call_id: &'a str,
    item_id: Option<&'a str>,
    previous_item_id: Option<&'a str>,
}

#[derive(Serialize)]
struct ReplyLine<'a> {
    call_id: &'a str,
    response_id: &'a str,
    first_audio_sent_at_unix_ms: u64,
}

/// The wall-clock time now, in Unix milliseconds.
fn unix_ms_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| {
            u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
        })
}

/// One HTTP request as `calls.jsonl` records it.
#[derive(Debug, Serialize)]
pub(crate) struct CallLine {
    pub method: String,
    pub path: String,
    pub query: Option<String>,
    pub content_type: Option<String>,
    /// `multipart`, `sdp`, `json` or `other`, from the content type.
    pub form: &'static str,
    /// The multipart parts' names, in order (empty for other forms).
    pub parts: Vec<String>,
    /// `bearer`, `bearer_ephemeral`, `api_key` or `none`.
    pub auth: &'static str,
    /// The multipart `session` part, or the `session` of a client-secrets body.
    pub session: Option<Value>,
    /// The whole JSON body of a Live API call.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub live_session: Option<Value>,
    pub status: u16,
    pub call_id: Option<String>,
}

impl Trace {
    /// Creates the directory if needed.
    pub fn new(dir: &Path) -> std::io::Result<Self> {
        std::fs::create_dir_all(dir)?;
        Ok(Self {
            dir: dir.to_owned(),
        })
    }

    /// One data-channel text message, as received, at the wall-clock time now.
    pub fn client_text(&self, call_id: &str, text: &str) {
        self.append(
            CLIENT_EVENTS_FILE,
            &ClientEventLine {
                call_id,
                received_at_unix_ms: unix_ms_now(),
                text,
            },
        );
    }

    /// One data-channel text message of a Live API call, as received.
    pub fn live_client_text(&self, call_id: &str, text: &str) {
        self.append(
            LIVE_CLIENT_EVENTS_FILE,
            &ClientEventLine {
                call_id,
                received_at_unix_ms: unix_ms_now(),
                text,
            },
        );
    }

    /// The first audio packet of `response_id`'s reply was sent, at the wall-clock time now.
    pub fn first_reply_audio(&self, call_id: &str, response_id: &str) {
        self.append(
            REPLIES_FILE,
            &ReplyLine {
                call_id,
                response_id,
                first_audio_sent_at_unix_ms: unix_ms_now(),
            },
        );
    }

    /// The items the call's conversation took among `outputs` (its `conversation.item.added`).
    pub fn conversation_items(&self, call_id: &str, outputs: &[crate::session::Output]) {
        for output in outputs {
            if let crate::session::Output::Event { event, .. } = output
                && let walkie_openai::ServerEvent::ConversationItemAdded {
                    item,
                    previous_item_id,
                } = event.as_ref()
            {
                self.append(
                    CONVERSATION_FILE,
                    &ConversationLine {
                        call_id,
                        item_id: item.id(),
                        previous_item_id: previous_item_id.as_deref(),
                    },
                );
            }
        }
    }

    /// One HTTP request.
    pub fn call(&self, line: &CallLine) {
        self.append(CALLS_FILE, line);
    }

    fn append(&self, file: &str, record: &impl Serialize) {
        let mut line = match serde_json::to_string(record) {
            Ok(line) => line,
            Err(error) => {
                log::warn!("a trace line for {file} could not be written as JSON: {error}");
                return;
            }
        };
        line.push('\n');
        let path = self.dir.join(file);
        let written = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            // One write for the whole line: O_APPEND keeps it in one piece among other writers.
            .and_then(|mut opened| {
                opened.write_all(line.as_bytes())?;
                opened.flush()
            });
        if let Err(error) = written {
            log::warn!(
                "the trace {} could not be appended to: {error}",
                path.display()
            );
        }
    }
}

/// The `form` of a request, from its content type.
pub(crate) fn form_of(content_type: Option<&str>) -> &'static str {
    let essence = content_type
        .and_then(|value| value.split(';').next())
        .map(|value| value.trim().to_ascii_lowercase());
    match essence.as_deref() {
        Some("multipart/form-data") => "multipart",
        Some("application/sdp") => "sdp",
        Some("application/json") => "json",
        _ => "other",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn concurrent_writers_never_interleave_inside_a_line() {
        let dir = std::env::temp_dir().join(format!("walkie-trace-unit-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let trace = std::sync::Arc::new(Trace::new(&dir).expect("a writable temp dir"));
        // Long lines (64 KiB of text each, as a large session.update would be), 4 writers.
        let writers: Vec<_> = (0..4)
            .map(|writer| {
                let trace = trace.clone();
                std::thread::spawn(move || {
                    let text = format!("{writer}").repeat(64 * 1024);
                    for _ in 0..25 {
                        trace.client_text(&format!("rtc_{writer}"), &text);
                    }
                })
            })
            .collect();
        for writer in writers {
            writer.join().expect("a writer finishes");
        }
        let written = std::fs::read_to_string(dir.join(CLIENT_EVENTS_FILE)).expect("readable");
        let lines: Vec<&str> = written.lines().collect();
        assert_eq!(lines.len(), 100);
        for line in lines {
            let record: Value = serde_json::from_str(line).expect("each line is whole JSON");
            let call_id = record["call_id"].as_str().expect("a call id");
            let digit = call_id.strip_prefix("rtc_").expect("rtc_ prefix");
            let text = record["text"].as_str().expect("the text");
            assert_eq!(text.len(), 64 * 1024);
            assert!(
                text.chars().all(|c| c.to_string() == digit),
                "mixed writers"
            );
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_form_comes_from_the_content_type() {
        assert_eq!(
            form_of(Some("multipart/form-data; boundary=x")),
            "multipart"
        );
        assert_eq!(form_of(Some("application/sdp")), "sdp");
        assert_eq!(form_of(Some("Application/JSON; charset=utf-8")), "json");
        assert_eq!(form_of(Some("text/plain")), "other");
        assert_eq!(form_of(None), "other");
    }
}
