//! What the status line shows: the conversation's state and a sentence about it, decided by
//! the conversation machine (walkie-conversation) and sent to the webview as the window's
//! `status` updates (window_updates.rs).
//!
//! The webview renders these events as they come and derives nothing itself, so the state a user
//! reads is always the state Rust is in.

pub use walkie_conversation::{ConnectionState, StatusEvent};

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
        assert_eq!(json["headline"], "Not connected");
        assert_eq!(json["reason"], "the call ended.");
        assert_eq!(json.as_object().unwrap().len(), 4);
        let ready =
            serde_json::to_value(StatusEvent::new(ConnectionState::Ready, "Ready.")).unwrap();
        assert_eq!(
            ready.as_object().unwrap().len(),
            2,
            "no headline, no reason: {ready}"
        );
    }
}
