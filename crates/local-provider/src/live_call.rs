//! The driver of one Live API call (its faults injected as a Realtime call's are): the peer's
//! data channel and audio (measured) into the
//! [`LiveProviderSession`] with the call's clock, its timed work at its deadlines, its outputs
//! and its reply audio back onto the data channel and the track, the call ended when the session closes or the client hangs up.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::oneshot;
use walkie_openai::live::LiveSessionConfig;
use walkie_rtc::{Peer, PeerEvent};

use crate::bench::FaultPlan;
use crate::call::{IDLE_WAKE, Meter, Stop, send_event};
use crate::live_session::{LiveOutput, LiveProviderSession};
use crate::session::InputFrame;

/// Runs one Live call until the session closes, the client hangs up or the connection ends.
pub(crate) async fn run(
    call_id: String,
    mut peer: Peer,
    mut hangup: oneshot::Receiver<()>,
    session: LiveSessionConfig,
    trace: Option<Arc<crate::trace::Trace>>,
    mut faults: FaultPlan,
) {
    let started = Instant::now();
    let now_ms = || u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    let now_unix_s = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| since.as_secs());
    let mut live = LiveProviderSession::new(&call_id, session, now_unix_s, now_ms());
    let mut meter = Meter::new();
    'call: loop {
        let wake = live.next_deadline_ms().map_or_else(
            || Instant::now() + IDLE_WAKE,
            |ms| started + Duration::from_millis(ms),
        );
        let mut outputs = tokio::select! {
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
                Some(PeerEvent::Audio(audio)) => {
                    let (samples, rms) = meter.measure(&audio.payload);
                    live.on_audio(InputFrame { opus: audio.payload, samples, rms }, now_ms())
                }
                Some(PeerEvent::DataChannelClosed | PeerEvent::Failed { .. } | PeerEvent::Closed)
                | None => break,
                Some(_) => Vec::new(),
            },
            () = tokio::time::sleep_until(wake.into()) => Vec::new(),
        };
        let now = now_ms();
        if live
            .next_deadline_ms()
            .is_some_and(|deadline| deadline <= now)
        {
            outputs.extend(live.tick(now));
        }
        for output in outputs {
            match output {
                LiveOutput::Event { event_id, event } => {
                    let text = event.to_json(&event_id);
                    match send_event(&peer, event.event_type(), text, &mut faults).await {
                        Ok(()) => {}
                        Err(Stop::Fault) => {
                            log::info!("Live call {call_id} ended by an injected fault");
                            return;
                        }
                        Err(Stop::PeerGone | Stop::Expired) => break 'call,
                    }
                }
                LiveOutput::Audio { opus, samples } => {
                    if peer.handle.send_audio(opus, samples).is_err() {
                        log::info!("Live call {call_id} ended while sending audio");
                        break 'call;
                    }
                }
                LiveOutput::HangUp => break 'call,
            }
        }
    }
    peer.handle.close().await;
    log::info!("Live call {call_id} ended");
}
