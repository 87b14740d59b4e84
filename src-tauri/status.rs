//! What the status line shows: the conversation's state and a sentence about it.
//!
//! The webview renders these events as they come and derives nothing itself, so the state a user
//! reads is always the state Rust is in.

use serde::Serialize;

/// The event name the webview listens on for [`StatusEvent`]s.
pub const STATUS_EVENT: &str = "walkie://status";

/// Where the conversation stands, as the status line names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ConnectionState {
    /// No session; the user can still read history and change settings.
    NotConnected,
    /// A session is being set up.
    Connecting,
    /// Connected and configured: the key works.
    Ready,
    /// The microphone is being sent.
    Listening,
    /// A reply is being generated and is not audible yet.
    Thinking,
    /// The assistant is audible.
    Speaking,
    /// The connection dropped and may come back.
    Reconnecting,
    /// Something failed; the detail says what and what to do.
    Error,
}

/// One change of the status line.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StatusEvent {
    pub state: ConnectionState,
    /// A sentence for the user: what happened and, when it matters, what to do.
    pub detail: String,
}

impl StatusEvent {
    pub fn new(state: ConnectionState, detail: impl Into<String>) -> Self {
        Self {
            state,
            detail: detail.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_events_serialise_in_the_shape_the_webview_reads() {
        let json = serde_json::to_value(StatusEvent::new(
            ConnectionState::NotConnected,
            "Not connected: the call ended.",
        ))
        .unwrap();
        assert_eq!(json["state"], "not_connected");
        assert_eq!(json["detail"], "Not connected: the call ended.");
        assert_eq!(json.as_object().unwrap().len(), 2);
    }
}
