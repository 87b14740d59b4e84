//! The driver of one call: the peer's events into the [`ProviderSession`], its outputs onto
//! the data channel and the audio track, the reply audio paced at one frame per 20 ms.

use std::time::Duration;

use tokio::sync::oneshot;
use tokio::time::MissedTickBehavior;
use walkie_rtc::{Peer, PeerEvent};

use crate::session::{FRAME_SAMPLES, InputFrame, Output, ProviderSession};

/// Frames whose RMS is below this (≈ −45 dBFS of 16-bit full scale) count as silence.
const SPEECH_RMS_THRESHOLD: f64 = 184.0;
/// Opus frames are at most 120 ms: 5760 samples at 48 kHz.
const MAX_FRAME_SAMPLES: usize = 5760;

/// Decodes received Opus frames to measure them: length and whether they hold speech.
struct Meter {
    decoder: Option<opus::Decoder>,
    pcm: Vec<i16>,
}

impl Meter {
    fn new() -> Self {
        let decoder = opus::Decoder::new(48_000, opus::Channels::Mono)
            .map_err(|error| log::warn!("no Opus decoder, frames will count as silence: {error}"))
            .ok();
        Self {
            decoder,
            pcm: vec![0; MAX_FRAME_SAMPLES],
        }
    }

    fn measure(&mut self, opus: &[u8]) -> (u32, bool) {
        let samples = opus::packet::get_nb_samples(opus, 48_000)
            .ok()
            .and_then(|n| u32::try_from(n).ok())
            .filter(|n| *n > 0)
            .unwrap_or(FRAME_SAMPLES);
        let Some(decoder) = self.decoder.as_mut() else {
            return (samples, false);
        };
        match decoder.decode(opus, &mut self.pcm, false) {
            Ok(n) if n > 0 => {
                let energy: f64 = self.pcm[..n]
                    .iter()
                    .map(|s| f64::from(*s) * f64::from(*s))
                    .sum();
                let rms = (energy / n as f64).sqrt();
                (samples, rms >= SPEECH_RMS_THRESHOLD)
            }
            _ => (samples, false),
        }
    }
}

/// Runs one call until the client hangs up, the connection ends, or `hangup` fires.
pub(crate) async fn run(call_id: String, mut peer: Peer, mut hangup: oneshot::Receiver<()>) {
    let mut session = ProviderSession::new(&call_id);
    let mut meter = Meter::new();
    let mut ticker = tokio::time::interval(Duration::from_millis(20));
    ticker.set_missed_tick_behavior(MissedTickBehavior::Delay);
    loop {
        let outputs = tokio::select! {
            _ = &mut hangup => break,
            event = peer.events.recv() => match event {
                Some(PeerEvent::DataChannelOpen { .. }) => session.on_connect(),
                Some(PeerEvent::Text { text, .. }) => {
                    let was_playing = session.is_playing();
                    let outputs = session.on_client_text(&text);
                    if !was_playing && session.is_playing() {
                        // Playback starts now: the first frame goes out with the events.
                        ticker.reset_immediately();
                    }
                    outputs
                }
                Some(PeerEvent::Audio(audio)) => {
                    let (samples, voiced) = meter.measure(&audio.payload);
                    session.on_audio(InputFrame { opus: audio.payload, samples, voiced });
                    Vec::new()
                }
                Some(PeerEvent::DataChannelClosed | PeerEvent::Failed { .. } | PeerEvent::Closed) | None => break,
                Some(_) => Vec::new(),
            },
            _ = ticker.tick(), if session.is_playing() => session.next_playback(),
        };
        if !send(&peer, outputs).await {
            break;
        }
    }
    peer.handle.close().await;
    log::info!("call {call_id} ended");
}

async fn send(peer: &Peer, outputs: Vec<Output>) -> bool {
    for output in outputs {
        match output {
            Output::Audio { opus, samples } => {
                if peer.handle.send_audio(opus, samples).is_err() {
                    return false;
                }
            }
            event @ Output::Event { .. } => {
                let text = event
                    .to_json()
                    .expect("an event output always has JSON text");
                if let Err(error) = peer.handle.send_text(text).await {
                    log::info!("call ended while sending: {error}");
                    return false;
                }
            }
        }
    }
    true
}
