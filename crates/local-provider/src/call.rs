//! The driver of one call: the peer's events into the [`ProviderSession`] with the call's
//! clock, its outputs onto the data channel and the audio track, its timed work
//! ([`ProviderSession::tick`]) at its deadlines, and the call's injected faults.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::oneshot;
use walkie_openai::{ServerEvent, SessionConfig};
use walkie_rtc::{Peer, PeerEvent};

use crate::bench::{FaultPlan, Injection};
use crate::session::{FRAME_SAMPLES, InputFrame, Output, ProviderSession};

/// Opus frames are at most 120 ms: 5760 samples at 48 kHz.
const MAX_FRAME_SAMPLES: usize = 5760;
/// With nothing timed, the loop still wakes this often (it costs nothing).
pub(crate) const IDLE_WAKE: Duration = Duration::from_secs(3600);

/// Decodes received Opus frames to measure them: length and energy.
pub(crate) struct Meter {
    decoder: Option<opus::Decoder>,
    pcm: Vec<i16>,
}

impl Meter {
    pub(crate) fn new() -> Self {
        let decoder = opus::Decoder::new(48_000, opus::Channels::Mono)
            .map_err(|error| log::warn!("no Opus decoder, frames will count as silence: {error}"))
            .ok();
        Self {
            decoder,
            pcm: vec![0; MAX_FRAME_SAMPLES],
        }
    }

    /// (samples, RMS in 16-bit units).
    pub(crate) fn measure(&mut self, opus: &[u8]) -> (u32, f64) {
        let samples = opus::packet::get_nb_samples(opus, 48_000)
            .ok()
            .and_then(|n| u32::try_from(n).ok())
            .filter(|n| *n > 0)
            .unwrap_or(FRAME_SAMPLES);
        let Some(decoder) = self.decoder.as_mut() else {
            return (samples, 0.0);
        };
        match decoder.decode(opus, &mut self.pcm, false) {
            Ok(n) if n > 0 => {
                let energy: f64 = self.pcm[..n]
                    .iter()
                    .map(|s| f64::from(*s) * f64::from(*s))
                    .sum();
                (samples, (energy / n as f64).sqrt())
            }
            _ => (samples, 0.0),
        }
    }
}

/// How a call's sending ended early.
pub(crate) enum Stop {
    /// The peer is gone (closed by the client, or failed).
    PeerGone,
    /// A fault ended the call.
    Fault,
    /// The session hit its maximum duration (its `session_expired` error went first).
    Expired,
}

/// How a call starts: the session it was created with, its faults, the trace it writes to.
pub(crate) struct CallSetup {
    pub initial: Option<SessionConfig>,
    pub faults: FaultPlan,
    pub trace: Option<Arc<crate::trace::Trace>>,
    /// The session's maximum duration.
    pub limit_ms: u64,
}

/// Runs one call until the client hangs up, the connection ends, `hangup` fires, or a fault
/// ends it.
pub(crate) async fn run(
    call_id: String,
    mut peer: Peer,
    mut hangup: oneshot::Receiver<()>,
    setup: CallSetup,
) {
    let CallSetup {
        initial,
        mut faults,
        trace,
        limit_ms,
    } = setup;
    let started = Instant::now();
    let now_ms = || u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    let mut session = ProviderSession::with_session(&call_id, initial).with_limit_ms(limit_ms);
    let mut meter = Meter::new();
    let mut first_audio = FirstAudio::default();
    loop {
        let wake = session.next_deadline_ms().map_or_else(
            || Instant::now() + IDLE_WAKE,
            |ms| started + Duration::from_millis(ms),
        );
        let mut outputs = tokio::select! {
            biased;
            _ = &mut hangup => break,
            event = peer.events.recv() => match event {
                Some(PeerEvent::DataChannelOpen { .. }) => session.on_connect(now_ms()),
                Some(PeerEvent::Text { text, .. }) => {
                    if let Some(trace) = &trace {
                        trace.client_text(&call_id, &text);
                    }
                    session.on_client_text(&text, now_ms())
                }
                Some(PeerEvent::Audio(audio)) => {
                    let (samples, rms) = meter.measure(&audio.payload);
                    session.on_audio(InputFrame { opus: audio.payload, samples, rms }, now_ms())
                }
                Some(PeerEvent::DataChannelClosed | PeerEvent::Failed { .. } | PeerEvent::Closed) | None => break,
                Some(_) => Vec::new(),
            },
            () = tokio::time::sleep_until(wake.into()) => Vec::new(),
        };
        let now = now_ms();
        if session
            .next_deadline_ms()
            .is_some_and(|deadline| deadline <= now)
        {
            outputs.extend(session.tick(now));
        }
        let reply_started = first_audio.in_batch(&outputs);
        if let Some(trace) = &trace {
            trace.conversation_items(&call_id, &outputs);
        }
        match send(&peer, outputs, &mut faults).await {
            Ok(()) => {
                if let (Some(trace), Some(response_id)) = (&trace, reply_started) {
                    trace.first_reply_audio(&call_id, &response_id);
                }
            }
            Err(Stop::PeerGone) => break,
            Err(Stop::Expired) => {
                log::info!("call {call_id} hit the session's maximum duration");
                break;
            }
            Err(Stop::Fault) => {
                log::info!("call {call_id} ended by an injected fault");
                return;
            }
        }
    }
    peer.handle.close().await;
    log::info!("call {call_id} ended");
}

/// Which reply's first audio packet a batch of outputs sends: a reply's audio follows its
/// `output_audio_buffer.started`, in that batch or a later one.
#[derive(Debug, Default)]
struct FirstAudio {
    started: Option<String>,
}

impl FirstAudio {
    fn in_batch(&mut self, outputs: &[Output]) -> Option<String> {
        let mut first = None;
        for output in outputs {
            match output {
                Output::Event { event, .. } => {
                    if let ServerEvent::OutputAudioBufferStarted { response_id } = event.as_ref() {
                        self.started = Some(response_id.clone());
                    }
                }
                Output::Audio { .. } => {
                    if let Some(response_id) = self.started.take() {
                        first.get_or_insert(response_id);
                    }
                }
                Output::HangUp => {}
            }
        }
        first
    }
}

async fn send(peer: &Peer, outputs: Vec<Output>, faults: &mut FaultPlan) -> Result<(), Stop> {
    for output in outputs {
        match output {
            Output::Audio { opus, samples } => {
                peer.handle
                    .send_audio(opus, samples)
                    .map_err(|_| Stop::PeerGone)?;
            }
            Output::Event { event_id, event } => {
                send_event(peer, event.event_type(), event.to_json(&event_id), faults).await?;
            }
            Output::HangUp => return Err(Stop::Expired),
        }
    }
    Ok(())
}

/// Sends one server event's `text` (of type `event_type`) as the call's faults allow: not at
/// all when its type is suppressed, after what they inject before it otherwise. Both APIs'
/// calls go through here.
pub(crate) async fn send_event(
    peer: &Peer,
    event_type: &str,
    text: String,
    faults: &mut FaultPlan,
) -> Result<(), Stop> {
    if faults.suppresses(event_type) {
        return Ok(());
    }
    for injection in faults.before_event(event_type) {
        match injection {
            Injection::SendText(text) => send_text(peer, text).await?,
            Injection::Flood {
                total_bytes,
                delta_bytes,
            } => flood(peer, &text, total_bytes, delta_bytes).await?,
            Injection::Wait(delay) => tokio::time::sleep(delay).await,
            Injection::Drop => {
                peer.handle.abort().await;
                return Err(Stop::Fault);
            }
            Injection::Close => {
                peer.handle.close().await;
                return Err(Stop::Fault);
            }
        }
    }
    send_text(peer, text).await
}

/// Copies of `event` (a JSON event with a `delta`) with `delta_bytes` of text each, until
/// `total_bytes` are sent. Each send is awaited, so the data channel paces the flood.
async fn flood(peer: &Peer, event: &str, total_bytes: u64, delta_bytes: u32) -> Result<(), Stop> {
    let Ok(serde_json::Value::Object(mut copy)) = serde_json::from_str(event) else {
        log::warn!("a flood of an event that is not a JSON object: nothing sent");
        return Ok(());
    };
    let event_id = copy
        .get("event_id")
        .and_then(serde_json::Value::as_str)
        .unwrap_or("event")
        .to_owned();
    let delta = "flood ".repeat((delta_bytes as usize).div_ceil(6));
    let delta = &delta[..delta_bytes as usize];
    copy.insert("delta".to_owned(), delta.into());
    let copies = total_bytes.div_ceil(u64::from(delta_bytes.max(1)));
    log::info!("flooding {copies} copies of {event_id} ({delta_bytes} bytes of delta each)");
    for number in 0..copies {
        copy.insert(
            "event_id".to_owned(),
            format!("{event_id}_flood{number}").into(),
        );
        send_text(peer, serde_json::Value::Object(copy.clone()).to_string()).await?;
    }
    Ok(())
}

async fn send_text(peer: &Peer, text: String) -> Result<(), Stop> {
    peer.handle.send_text(text).await.map_err(|error| {
        log::info!("call ended while sending: {error}");
        Stop::PeerGone
    })
}
