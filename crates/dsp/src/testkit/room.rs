//! A synthetic room for the echo canceller: what the microphone hears of what the speaker
//! played. The speaker saturates mildly; the sound reaches the microphone after the path's
//! delay, with a direct path and a reverberant tail; the microphone's clock drifts from the
//! speaker's; the microphone adds its own noise. Deterministic: the same room always sounds the
//! same.

use super::{Noise, rms_dbfs, speech_like_f32};
use crate::drift::ClockMark;
use crate::echo::{EchoCanceller, EchoConfig, EchoError, EchoEvent, EchoStage, EchoStats};

const RATE_HZ: usize = crate::CALL_RATE_HZ as usize;

/// The microphone's own noise (RMS).
pub const MIC_NOISE_DBFS: f32 = -65.0;

/// A room between one speaker and one microphone.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Room {
    /// The echo path's bulk delay (the direct path's arrival).
    pub delay_ms: u32,
    /// How far the microphone's clock runs from the speaker's: positive, the microphone's
    /// runs fast, so the echo arrives earlier as time goes on.
    pub drift_ppm: f64,
}

impl Room {
    /// The echo alone at the microphone (no noise) of `played`, the samples the speaker was
    /// given, on the microphone's clock.
    pub fn echo_of(&self, played: &[f32]) -> Vec<f32> {
        let acoustic: Vec<f32> = played.iter().map(|&x| x.tanh()).collect();
        let mut noise = Noise::new(u64::from(self.delay_ms) * 7 + 1);
        let reverberant = convolve(&acoustic, &self.impulse_response(&mut noise));
        drifted(&reverberant, self.drift_ppm)
    }

    /// What the microphone hears: the echo of `played` over its own noise.
    pub fn microphone(&self, echo: &[f32]) -> Vec<f32> {
        let mut noise = Noise::new(u64::from(self.delay_ms) * 13 + 5);
        echo.iter()
            .zip(noise.white(MIC_NOISE_DBFS, echo.len()))
            .map(|(e, n)| e + n)
            .collect()
    }

    /// A direct path at the bulk delay, then 48 reflections over 120 ms decaying by 60 dB in
    /// 250 ms (sparse, so that the convolution stays fast in a debug build).
    fn impulse_response(&self, noise: &mut Noise) -> Vec<(usize, f32)> {
        let delay = self.delay_ms as usize * RATE_HZ / 1000;
        let mut taps = vec![(delay, 0.7f32)];
        for k in 0..48 {
            let spread = (noise.next_sample().abs() * 90.0) as usize;
            let offset = 48 + k * (120 * RATE_HZ / 1000) / 48 + spread;
            let seconds = offset as f32 / RATE_HZ as f32;
            let decay = 10f32.powf(-3.0 * seconds / 0.25);
            taps.push((delay + offset, 0.35 * decay * noise.next_sample()));
        }
        taps
    }
}

fn convolve(signal: &[f32], taps: &[(usize, f32)]) -> Vec<f32> {
    let mut out = vec![0.0f32; signal.len()];
    for &(lag, gain) in taps {
        for (o, &s) in out[lag.min(signal.len())..].iter_mut().zip(signal) {
            *o += gain * s;
        }
    }
    out
}

/// `signal` (on the speaker's clock) as a microphone whose clock runs `drift_ppm` away samples
/// it (linear interpolation: exact enough below 4 kHz, where speech is).
fn drifted(signal: &[f32], drift_ppm: f64) -> Vec<f32> {
    let ratio = 1.0 + drift_ppm * 1e-6;
    (0..signal.len())
        .map(|n| {
            let t = n as f64 * ratio;
            let i = t.floor() as usize;
            let frac = (t - t.floor()) as f32;
            match (signal.get(i), signal.get(i + 1)) {
                (Some(&a), Some(&b)) => a + frac * (b - a),
                (Some(&a), None) => a,
                _ => 0.0,
            }
        })
        .collect()
}

/// A user's voice: the same kind of speech, higher (a crude resampling by 1.37), at `gain` of
/// the speech-like signal's level (1.0: about −21 dBFS at the microphone).
pub fn user_voice(ms: u64, gain: f32) -> Vec<f32> {
    let source = speech_like_f32(ms.saturating_mul(2));
    let len = usize::try_from(ms).unwrap_or(0) * RATE_HZ / 1000;
    (0..len)
        .map(|n| gain * source[(n as f64 * 1.37) as usize])
        .collect()
}

/// The level at which the local provider's voice detection hears speech at its default
/// threshold (0.5: −40 dBFS, `walkie_local::session::VadSettings::rms_for_threshold`).
pub const VAD_THRESHOLD_DBFS: f32 = -40.0;

/// One voice-detection frame: 20 ms (an Opus frame, what the provider measures).
pub const VAD_FRAME_SAMPLES: usize = RATE_HZ / 50;

/// The speaker's level: the reply's samples are given to it at twice the speech-like signal's
/// level, so that its peaks saturate the speaker a little and its echo is about −17 dBFS at
/// the microphone, 48 dB over the microphone's noise (room to measure 40 dB of cancellation).
pub const SPEAKER_GAIN: f32 = 2.0;

/// A reply played into a room, as the microphone heard it.
#[derive(Debug, Clone)]
pub struct Reply {
    /// What the speaker was given (the canceller's reference).
    pub played: Vec<f32>,
    /// The echo alone at the microphone.
    pub echo: Vec<f32>,
    /// What the microphone heard: echo, noise and the user, if the user spoke.
    pub mic: Vec<f32>,
}

/// The user speaks over the reply from `from_s` on, at `gain` (see [`user_voice`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DoubleTalk {
    pub from_s: usize,
    pub gain: f32,
}

impl Room {
    /// `seconds` of a speech-like reply played into the room, the user talking over it if
    /// `user` says so.
    pub fn reply(&self, seconds: usize, user: Option<DoubleTalk>) -> Reply {
        self.reply_after_silence(0, seconds, user)
    }

    /// As [`Self::reply`], the speaker playing `silence_s` of silence first (a call's streams
    /// run from its start, before the first reply); `user`'s `from_s` counts from the start.
    pub fn reply_after_silence(
        &self,
        silence_s: usize,
        seconds: usize,
        user: Option<DoubleTalk>,
    ) -> Reply {
        let played: Vec<f32> = std::iter::repeat_n(0.0, silence_s * RATE_HZ)
            .chain(
                speech_like_f32(seconds as u64 * 1000)
                    .iter()
                    .map(|&sample| SPEAKER_GAIN * sample),
            )
            .collect();
        let echo = self.echo_of(&played);
        let mut mic = self.microphone(&echo);
        if let Some(DoubleTalk { from_s, gain }) = user {
            let voice = user_voice((seconds.saturating_sub(from_s) * 1000) as u64, gain);
            let from = (from_s * RATE_HZ).min(mic.len());
            for (heard, spoken) in mic[from..].iter_mut().zip(voice) {
                *heard += spoken;
            }
        }
        Reply { played, echo, mic }
    }
}

/// What the uplink sends of `reply` through a canceller (48 kHz both ways, with noise
/// suppression or not) given `delay_hint_ms`, and what the canceller reported at the end.
pub fn cancel(
    reply: &Reply,
    noise_suppression: bool,
    delay_hint_ms: u32,
) -> Result<(Vec<f32>, EchoStats), EchoError> {
    let frame = RATE_HZ / 100;
    let mut canceller = EchoCanceller::new(EchoConfig {
        capture_rate_hz: RATE_HZ as u32,
        render_rate_hz: RATE_HZ as u32,
        noise_suppression,
    })?;
    let mut sent = reply.mic.clone();
    for (reference, captured) in reply
        .played
        .chunks_exact(frame)
        .zip(sent.chunks_exact_mut(frame))
    {
        canceller.played(reference)?;
        canceller.captured(captured, delay_hint_ms)?;
    }
    Ok((sent, canceller.stats()))
}

/// The speaker's period and the microphone's, in samples, as devices deliver them.
const SPEAKER_PERIOD: usize = 1_024;
const MICROPHONE_PERIOD: usize = 512;

/// A callback's scheduling delay: 0–2 ms, the same for the same callback.
fn callback_delay_us(stream: u64, callback: u64) -> u64 {
    let hash = (callback ^ (stream << 40)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    (hash >> 40) % 2_001
}

/// What the uplink's stage sends of `reply` played into `room` when devices deliver it: the
/// speaker takes [`SPEAKER_PERIOD`] samples a period and runs up to a period ahead of the
/// microphone, which delivers [`MICROPHONE_PERIOD`] at a time on its own clock (the room's
/// drift); each callback says where its stream stands ([`ClockMark`], 0–2 ms late). Returns what
/// was sent and from which sample the stage was trusted, if it was.
pub fn through_stage(
    room: &Room,
    reply: &Reply,
    stage: &mut EchoStage,
) -> Result<(Vec<f32>, Option<usize>), EchoError> {
    // Microphone sample n hears the speaker's sample n × (1 + drift) (see `drifted`).
    let speaker_per_microphone = 1.0 + room.drift_ppm * 1e-6;
    let us_per_sample = 1e6 / RATE_HZ as f64;
    let mut sent = Vec::with_capacity(reply.mic.len());
    let mut trusted_from = None;
    let mut reference = reply.played.chunks(SPEAKER_PERIOD).enumerate();
    let mut reference_fed = 0usize;
    for (callback, piece) in reply.mic.chunks(MICROPHONE_PERIOD).enumerate() {
        let captured = callback * MICROPHONE_PERIOD;
        let due = ((captured + MICROPHONE_PERIOD) as f64 * speaker_per_microphone) as usize
            + SPEAKER_PERIOD;
        while reference_fed < due {
            let Some((speaker_callback, played)) = reference.next() else {
                break;
            };
            stage.speaker_clock(ClockMark {
                at_us: (reference_fed as f64 * us_per_sample) as u64
                    + callback_delay_us(1, speaker_callback as u64),
                frames: reference_fed as u64,
            });
            stage.played(played)?;
            reference_fed += played.len();
        }
        stage.microphone_clock(ClockMark {
            at_us: (captured as f64 * speaker_per_microphone * us_per_sample) as u64
                + callback_delay_us(2, callback as u64),
            frames: captured as u64,
        });
        stage.captured(piece, &mut sent, 0)?;
        while let Some(event) = stage.poll_event() {
            if event == EchoEvent::Converged {
                trusted_from.get_or_insert(sent.len());
            }
        }
    }
    Ok((sent, trusted_from))
}

fn energy(samples: &[f32]) -> f64 {
    samples.iter().map(|&s| f64::from(s) * f64::from(s)).sum()
}

/// The median echo return loss enhancement, in dB, over the 10 ms frames from `from_s` on
/// where the echo is 40 dB or more above the microphone's noise (a quieter frame would measure
/// the noise floor, not the canceller): the echo's energy in over the energy sent. `None` with
/// fewer than 100 such frames.
pub fn median_erle_db(echo: &[f32], sent: &[f32], from_s: usize) -> Option<f64> {
    let frame = RATE_HZ / 100;
    let from = (from_s * RATE_HZ).min(echo.len()).min(sent.len());
    let mut erle: Vec<f64> = echo[from..]
        .chunks_exact(frame)
        .zip(sent[from..].chunks_exact(frame))
        .filter(|(echo, _)| rms_dbfs(echo) > MIC_NOISE_DBFS + 40.0)
        .map(|(echo, sent)| 10.0 * (energy(echo) / energy(sent).max(1e-12)).log10())
        .collect();
    if erle.len() < 100 {
        return None;
    }
    erle.sort_by(f64::total_cmp);
    Some(erle[erle.len() / 2])
}

/// The start (in ms) of each 20 ms frame of `samples` at or above [`VAD_THRESHOLD_DBFS`].
pub fn frames_at_speech_level(samples: &[f32]) -> Vec<usize> {
    samples
        .chunks_exact(VAD_FRAME_SAMPLES)
        .enumerate()
        .filter(|(_, frame)| rms_dbfs(frame) >= VAD_THRESHOLD_DBFS)
        .map(|(index, _)| index * 20)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_echo_arrives_after_the_delay_and_drifts_as_the_clocks_do() {
        let mut click = vec![0.0f32; RATE_HZ];
        click[0] = 0.5;
        click[RATE_HZ / 2] = 0.5;
        let room = Room {
            delay_ms: 100,
            drift_ppm: 1_000.0,
        };
        let echo = room.echo_of(&click);
        let heard_at = |from: usize| {
            from + echo[from..]
                .iter()
                .position(|s| s.abs() > 0.1)
                .expect("an echo")
        };
        // 4,800 samples on the speaker's clock are 4,795 on the microphone's, running 0.1 % fast.
        let first = heard_at(0);
        assert!((first as i64 - 4_795).abs() <= 1, "{first}");
        let second = heard_at(first + 1_000);
        assert!((second as i64 - 28_771).abs() <= 1, "{second}");
    }
}
