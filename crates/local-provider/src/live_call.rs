//! The driver of one Live API call: the peer's data channel into the
//! [`LiveProviderSession`] with the call's clock, its outputs back onto the data channel, the
//! call ended when the session closes or the client hangs up.

use std::sync::Arc;
use std::time::Instant;

use tokio::sync::oneshot;
use walkie_openai::live::LiveSessionConfig;
use walkie_rtc::{Peer, PeerEvent};

use crate::live_session::{LiveOutput, LiveProviderSession};

/// Runs one Live call until the session closes, the client hangs up or the connection ends.
pub(crate) async fn run(
    call_id: String,
    mut peer: Peer,
    mut hangup: oneshot::Receiver<()>,
    session: LiveSessionConfig,
    trace: Option<Arc<crate::trace::Trace>>,
) {
    let started = Instant::now();
    let now_ms = || u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    let now_unix_s = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| since.as_secs());
    let mut live = LiveProviderSession::new(&call_id, session, now_unix_s, now_ms());
    // Audio frames the model heard (unmuted): the session does not listen to them yet.
    let mut heard_frames = 0_u64;
    'call: loop {
        let outputs = tokio::select! {
            biased;
            _ = &mut hangup => break,
            event = peer.events.recv() => match event {
                Some(PeerEvent::DataChannelOpen { .. }) => live.on_connect(now_ms()),
                Some(PeerEvent::Text { text, .. }) => {
                    if let Some(trace) = &trace {
                        trace.live_client_text(&call_id, &text);
                    }
                    live.on_client_text(&text, now_ms())
                }
                Some(PeerEvent::DataChannelClosed | PeerEvent::Failed { .. } | PeerEvent::Closed)
                | None => break,
                Some(PeerEvent::Audio(_)) => {
                    if !live.is_muted() {
                        heard_frames += 1;
                    }
                    Vec::new()
                }
                Some(_) => Vec::new(),
            },
        };
        for output in outputs {
            match output {
                LiveOutput::Event { event_id, event } => {
                    if let Err(error) = peer.handle.send_text(event.to_json(&event_id)).await {
                        log::info!("Live call {call_id} ended while sending: {error}");
                        break 'call;
                    }
                }
                LiveOutput::HangUp => break 'call,
            }
        }
    }
    peer.handle.close().await;
    log::info!("Live call {call_id} ended ({heard_frames} audio frames while unmuted)");
}
