//! Fault injection: what the provider does wrong on purpose, so the client's handling of a
//! broken provider can be tested. Faults are counted in server events sent on the data
//! channel, from 1 (`session.created`) on, per call.
//!
//! The client's documented answer to each (see `tests/faults.rs`):
//! - [`Fault::Malformed`]: a [`walkie_rtc::CallEvent::Text`] that does not decode, and the call goes on;
//! - [`Fault::Delay`]: the events arrive late, in order; nothing times out in the transport;
//! - [`Fault::Error`]: a `ServerEvent::Error`, recoverable unless its code is fatal; the transport
//!   keeps the call, the session decides;
//! - [`Fault::AbruptClose`]: `CallEvent::Ended` (data channel closed), then sends fail with a
//!   typed error;
//! - [`Fault::DropConnection`]: `CallEvent::Disconnected`, then `CallEvent::Ended` with
//!   `ConnectionFailed` once ICE consent is lost (bounded by the client's ICE timeouts);
//! - [`Fault::Suppress`]: the events of one type never arrive (e.g. a lost
//!   `output_audio_buffer.stopped`); the client's turn watchdog ends what they would have.
//! - [`Fault::Flood`]: one event comes again and again with a long `delta`, as fast as the
//!   client's acknowledgements let it; the client keeps what it bounds itself to and says
//!   it cut the rest, and the call goes on.

use serde::{Deserialize, Serialize};

/// One fault, before server event number `at_event` (1-based).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Fault {
    /// The connection vanishes: nothing more on the wire either way, no goodbye (no
    /// data-channel close, no DTLS `close_notify`). The client finds out by ICE consent.
    DropConnection { at_event: u64 },
    /// The provider closes the data channel and the connection mid-call, without the client
    /// having hung up.
    AbruptClose { at_event: u64 },
    /// A text that is not a valid event is sent first (by default, truncated JSON).
    Malformed {
        at_event: u64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        text: Option<String>,
    },
    /// This event, and so everything after it, waits `ms` milliseconds.
    Delay { at_event: u64, ms: u64 },
    /// Events of this type are never sent, on the whole call. They are not counted: `at_event`
    /// numbers count what is sent.
    Suppress { event_type: String },
    /// Before the first event of this type goes out, copies of it are sent with `delta`
    /// replaced by `delta_bytes` of text (and event ids of their own) until `total_bytes` of
    /// deltas are sent; then the event itself. Each send waits for the data channel's
    /// backlog, so the flood goes as fast as the client takes it, and no faster.
    Flood {
        event_type: String,
        total_bytes: u64,
        delta_bytes: u32,
    },
    /// An `error` event is sent first.
    Error {
        at_event: u64,
        #[serde(default = "server_error")]
        error_type: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        code: Option<String>,
        message: String,
    },
}

fn server_error() -> String {
    "server_error".to_owned()
}

/// Valid JSON that no JSON value can hold, each an event type no client knows: a number
/// beyond `f64` (`1e999`), a lone surrogate escape (`"\ud800"`), and nesting past
/// serde_json's recursion limit (128). All three once panicked Walkie's decoder; sent as
/// [`Fault::Malformed`] texts they must leave a call going.
pub fn unrepresentable_payloads() -> [String; 3] {
    [
        r#"{"type":"vendor.big","event_id":"event_h1","n":1e999}"#.to_owned(),
        r#"{"type":"vendor.surrogate","event_id":"event_h2","s":"\ud800"}"#.to_owned(),
        format!(
            r#"{{"type":"vendor.deep","event_id":"event_h3","payload":{}1{}}}"#,
            "[".repeat(200),
            "]".repeat(200)
        ),
    ]
}

/// The default malformed text: an event cut short.
pub const MALFORMED_TEXT: &str =
    r#"{"type":"response.output_audio_transcript.delta","event_id":"event_bad","delta":"cut sh"#;

impl Fault {
    /// The event the fault comes before, for the faults that fire once.
    pub fn at_event(&self) -> Option<u64> {
        match self {
            Fault::DropConnection { at_event }
            | Fault::AbruptClose { at_event }
            | Fault::Malformed { at_event, .. }
            | Fault::Delay { at_event, .. }
            | Fault::Error { at_event, .. } => Some(*at_event),
            Fault::Suppress { .. } | Fault::Flood { .. } => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use walkie_openai::ServerEvent;

    use crate::bench::{FaultPlan, Injection};

    #[test]
    fn faults_read_from_json_and_fire_at_their_event() {
        let faults: Vec<Fault> = serde_json::from_str(
            r#"[{"kind":"malformed","at_event":2},
                {"kind":"delay","at_event":3,"ms":250},
                {"kind":"error","at_event":3,"code":"server_error","message":"boom"},
                {"kind":"drop_connection","at_event":5}]"#,
        )
        .expect("valid faults");
        let mut plan = FaultPlan::new(faults);
        assert!(plan.before_event("session.created").is_empty());
        assert_eq!(
            plan.before_event("session.updated"),
            [Injection::SendText(MALFORMED_TEXT.to_owned())]
        );
        let third = plan.before_event("response.created");
        assert_eq!(
            third[0],
            Injection::Wait(std::time::Duration::from_millis(250))
        );
        let Injection::SendText(error) = &third[1] else {
            panic!("an error event: {third:?}");
        };
        let decoded = walkie_openai::decode_server_event(error).expect("a valid error event");
        assert!(
            matches!(decoded, ServerEvent::Error { error } if error.message == "boom" && error.kind == "server_error")
        );
        assert!(plan.before_event("response.output_item.added").is_empty());
        assert_eq!(
            plan.before_event("response.content_part.added"),
            [Injection::Drop]
        );
        let suppress: Fault = serde_json::from_str(
            r#"{"kind":"suppress","event_type":"output_audio_buffer.stopped"}"#,
        )
        .expect("a valid fault");
        let plan = FaultPlan::new(vec![suppress]);
        assert!(plan.suppresses("output_audio_buffer.stopped"));
        assert!(!plan.suppresses("response.done"));
        let mut plan = FaultPlan::new(vec![
            serde_json::from_str(
                r#"{"kind":"flood","event_type":"response.output_audio_transcript.delta",
                    "total_bytes":1048576,"delta_bytes":65536}"#,
            )
            .expect("a valid flood"),
        ]);
        assert!(plan.before_event("response.created").is_empty());
        let flood = Injection::Flood {
            total_bytes: 1 << 20,
            delta_bytes: 1 << 16,
        };
        assert_eq!(
            plan.before_event("response.output_audio_transcript.delta"),
            [flood],
            "the flood comes before the first event of its type"
        );
        assert!(
            plan.before_event("response.output_audio_transcript.delta")
                .is_empty(),
            "and only once"
        );
        assert!(
            serde_json::from_str::<Fault>(r#"{"kind":"delay","at_event":1,"ms":5,"extra":1}"#)
                .is_err(),
            "a misspelt field is an error, not a silently ignored fault"
        );
    }
}
