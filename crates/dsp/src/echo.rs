//! Echo cancellation (and, optionally, noise suppression) for the uplink: what lets hands-free
//! work on laptop speakers, where the microphone hears the reply.
//!
//! Why WebRTC's AEC3 (by `sonora`, a Rust port of WebRTC's audio processing): it is what
//! browsers hide the problem behind, it finds the echo path's delay itself (a hint only seeds
//! it), and it tolerates the clock drift between a speaker and a microphone that do not share a
//! clock. The canceller needs two streams, in 10 ms frames: what the speaker actually played
//! (the reference, [`EchoCanceller::played`]) and what the microphone captured
//! ([`EchoCanceller::captured`], cleaned in place). Each reference frame is given before the
//! capture frame recorded at the same time; a reference that runs ahead is queued by the
//! canceller (up to a second).
//!
//! A frame of the wrong length is refused by name before it reaches the canceller (which would
//! panic in a release build). The canceller allocates inside its processing; it runs on the
//! uplink worker, never in a device callback. [`EchoStage`] is the canceller as the uplink runs
//! it: pieces of any length in, whole frames through, and when it can be trusted.

use sonora::config::{EchoCanceller as Aec3, NoiseSuppression, NoiseSuppressionLevel};
use sonora::{AudioProcessing, Config, StreamConfig};

use crate::drift::{ClockDrift, ClockMark, DriftResampler, MAX_UNCERTAINTY_PPM};
use crate::noise::Noise;

/// One frame of the canceller: 10 ms.
pub const ECHO_FRAME_MS: u32 = 10;

/// Why the canceller refused a frame.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EchoError {
    /// The frame is not 10 ms at the rate the canceller was made for.
    #[error("an echo-canceller frame must be {expected} samples (10 ms), not {actual}")]
    FrameLength { expected: usize, actual: usize },
    /// The canceller cannot run at this rate.
    #[error("the echo canceller cannot run at {rate_hz} Hz (8000 to 384000)")]
    Rate { rate_hz: u32 },
    /// The canceller's own processing failed.
    #[error("the echo canceller failed: {0}")]
    Processing(String),
}

/// How the canceller is made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EchoConfig {
    /// The microphone's rate (the capture frames).
    pub capture_rate_hz: u32,
    /// The speaker's rate (the reference frames).
    pub render_rate_hz: u32,
    /// Suppress steady background noise too (WebRTC's moderate level, about 12 dB).
    pub noise_suppression: bool,
}

/// What the canceller reports of itself.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct EchoStats {
    /// The canceller's own estimate of its echo return loss enhancement, in dB.
    pub erle_db: Option<f64>,
    /// The echo path's delay as the canceller found it, in ms.
    pub delay_ms: Option<i32>,
    /// Reference frames given, and capture frames cleaned.
    pub played_frames: u64,
    pub captured_frames: u64,
}

/// See the module documentation.
pub struct EchoCanceller {
    processor: AudioProcessing,
    capture_frame_samples: usize,
    render_frame_samples: usize,
    /// The reference frame's copy (the canceller writes its render output; it is not used).
    render_out: Vec<f32>,
    /// The capture frame's input copy (the canceller reads from one slice, writes another).
    capture_in: Vec<f32>,
    /// Added to every capture frame ([`DITHER_DBFS`]).
    dither: Noise,
    dither_peak: f32,
    stats: EchoStats,
}

impl std::fmt::Debug for EchoCanceller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EchoCanceller")
            .field("capture_frame_samples", &self.capture_frame_samples)
            .field("render_frame_samples", &self.render_frame_samples)
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

/// Samples in 10 ms at `rate_hz`, if the canceller runs at that rate.
fn frame_samples(rate_hz: u32) -> Result<usize, EchoError> {
    if !(8_000..=384_000).contains(&rate_hz) {
        return Err(EchoError::Rate { rate_hz });
    }
    Ok((rate_hz / (1000 / ECHO_FRAME_MS)) as usize)
}

fn check_length(frame: &[f32], expected: usize) -> Result<(), EchoError> {
    if frame.len() == expected {
        Ok(())
    } else {
        Err(EchoError::FrameLength {
            expected,
            actual: frame.len(),
        })
    }
}

impl EchoCanceller {
    /// A canceller for these rates, mono both ways.
    pub fn new(config: EchoConfig) -> Result<Self, EchoError> {
        let capture_frame_samples = frame_samples(config.capture_rate_hz)?;
        let render_frame_samples = frame_samples(config.render_rate_hz)?;
        let processing = Config {
            echo_canceller: Some(Aec3::default()),
            noise_suppression: config.noise_suppression.then(|| NoiseSuppression {
                level: NoiseSuppressionLevel::Moderate,
                ..NoiseSuppression::default()
            }),
            ..Config::default()
        };
        let processor = AudioProcessing::builder()
            .config(processing)
            .capture_config(StreamConfig::new(config.capture_rate_hz, 1))
            .render_config(StreamConfig::new(config.render_rate_hz, 1))
            .build();
        Ok(Self {
            processor,
            capture_frame_samples,
            render_frame_samples,
            render_out: vec![0.0; render_frame_samples],
            capture_in: vec![0.0; capture_frame_samples],
            dither: Noise::new(0x9E37_79B9_7F4A_7C15),
            // A uniform signal in [-peak, peak) has an RMS of peak / sqrt(3).
            dither_peak: 10f32.powf(DITHER_DBFS / 20.0) * 3f32.sqrt(),
            stats: EchoStats::default(),
        })
    }

    /// Samples in one capture frame (10 ms at the microphone's rate).
    pub fn capture_frame_samples(&self) -> usize {
        self.capture_frame_samples
    }

    /// Samples in one reference frame (10 ms at the speaker's rate).
    pub fn render_frame_samples(&self) -> usize {
        self.render_frame_samples
    }

    /// 10 ms of what the speaker played (samples in [-1, 1]).
    pub fn played(&mut self, frame: &[f32]) -> Result<(), EchoError> {
        check_length(frame, self.render_frame_samples)?;
        self.processor
            .process_render_f32(&[frame], &mut [&mut self.render_out[..]])
            .map_err(|error| EchoError::Processing(format!("{error:?}")))?;
        self.stats.played_frames += 1;
        Ok(())
    }

    /// 10 ms the microphone captured, cleaned of the speaker's echo in place. `delay_hint_ms`
    /// is what the device code knows of the path (playback latency plus capture latency); the
    /// canceller refines it itself.
    pub fn captured(&mut self, frame: &mut [f32], delay_hint_ms: u32) -> Result<(), EchoError> {
        check_length(frame, self.capture_frame_samples)?;
        // Out of 0..=500 is clamped by the canceller, which then goes on: not an error here.
        let _clamped = self
            .processor
            .set_stream_delay_ms(i32::try_from(delay_hint_ms).unwrap_or(i32::MAX));
        for (input, &sample) in self.capture_in.iter_mut().zip(frame.iter()) {
            *input = sample + self.dither.next_sample() * self.dither_peak;
        }
        self.processor
            .process_capture_f32(&[&self.capture_in[..]], &mut [frame])
            .map_err(|error| EchoError::Processing(format!("{error:?}")))?;
        self.stats.captured_frames += 1;
        let statistics = self.processor.statistics();
        self.stats.erle_db = statistics.echo_return_loss_enhancement;
        self.stats.delay_ms = statistics.delay_ms;
        Ok(())
    }

    /// What the canceller reports of itself.
    pub fn stats(&self) -> EchoStats {
        self.stats
    }
}

/// How much audible reply the canceller must have heard on a new echo path before the uplink
/// trusts it (the synthetic room's convergence, tests/echo_room.rs, with room to spare).
pub const CONVERGED_AFTER_MS: u32 = 1_500;

/// A reference frame at or above this level counts as reply audio heard (quieter is silence
/// or a pause, from which the canceller learns nothing).
const AUDIBLE_REFERENCE_DBFS: f32 = -50.0;

/// The capture rate of the uplink: the call's.
const CAPTURE_RATE_HZ: u32 = crate::CALL_RATE_HZ;

/// Noise added to the microphone's samples before the canceller, as RMS dBFS: a microphone
/// that delivers exact zeros between words (a virtual device, a digitally gated one) otherwise
/// leads the noise suppressor to take the words for noise (tests/echo_room.rs checks that they
/// come through whole). Any noise at all avoids it; this is 30 dB below 16-bit
/// quantisation noise, far under any real microphone's own.
const DITHER_DBFS: f32 = -120.0;

/// What the echo stage reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EchoEvent {
    /// The canceller has learnt the echo path: what it sends carries no reply.
    Converged,
    /// The echo path changed (another device): the canceller must learn it again.
    Relearning,
    /// The speaker's and the microphone's clocks were measured against each other
    /// ([`ClockDrift::drift_ppm`]; told when first measured, and when the reference starts to
    /// follow the microphone's clock, `following`).
    Clocks { drift_ppm: i32, following: bool },
}

/// The canceller as the uplink runs it: the speaker's played samples and the microphone's
/// 48 kHz samples come in pieces of any length (as devices deliver them), whole 10 ms frames
/// go through the canceller, and the stage says when it can be trusted
/// ([`CONVERGED_AFTER_MS`] of audible reply on the current path, counted once its echo can have
/// come back: after the delay the canceller found). Told where each stream stands
/// ([`EchoStage::speaker_clock`], [`EchoStage::microphone_clock`]), it measures their clocks
/// against each other and, when they run apart, resamples the reference onto the
/// microphone's ([`crate::drift`]). Buffers are sized when it is made; a piece longer than the
/// output's spare capacity makes the output grow once.
pub struct EchoStage {
    canceller: EchoCanceller,
    render_rate_hz: u32,
    render_pending: Vec<f32>,
    capture_pending: Vec<f32>,
    audible_reference_ms: u32,
    converged: bool,
    event: Option<EchoEvent>,
    clocks: ClockDrift,
    /// Moves the reference onto the microphone's clock, once the clocks are found apart.
    drift_resampler: DriftResampler,
    /// Whether they were: from then on the reference goes through the resampler at the
    /// measured drift. (Until then the reference bypasses it: even at ratio 1 the resampler
    /// can let echo through where the canceller alone holds.)
    following_drift: bool,
    clocks_told: bool,
    /// Told apart from `event`, which a change of trust in the same pass would overwrite.
    drift_event: Option<EchoEvent>,
    resampled: Vec<f32>,
}

impl std::fmt::Debug for EchoStage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EchoStage")
            .field("canceller", &self.canceller)
            .field("audible_reference_ms", &self.audible_reference_ms)
            .field("converged", &self.converged)
            .field("following_drift", &self.following_drift)
            .finish_non_exhaustive()
    }
}

fn frame_level_dbfs(frame: &[f32]) -> f32 {
    let mean_square = frame.iter().map(|&s| s * s).sum::<f32>() / frame.len().max(1) as f32;
    10.0 * mean_square.max(1e-12).log10()
}

impl EchoStage {
    /// A stage for a speaker at `render_rate_hz` and the uplink's 48 kHz.
    pub fn new(render_rate_hz: u32, noise_suppression: bool) -> Result<Self, EchoError> {
        let canceller = EchoCanceller::new(EchoConfig {
            capture_rate_hz: CAPTURE_RATE_HZ,
            render_rate_hz,
            noise_suppression,
        })?;
        let drift_resampler = DriftResampler::new(render_rate_hz)
            .map_err(|error| EchoError::Processing(error.to_string()))?;
        Ok(Self {
            render_pending: Vec::with_capacity(canceller.render_frame_samples()),
            capture_pending: Vec::with_capacity(canceller.capture_frame_samples()),
            canceller,
            render_rate_hz,
            audible_reference_ms: 0,
            converged: false,
            event: None,
            clocks: ClockDrift::new(render_rate_hz, CAPTURE_RATE_HZ),
            drift_resampler,
            following_drift: false,
            clocks_told: false,
            drift_event: None,
            resampled: Vec::with_capacity(render_rate_hz as usize / 5),
        })
    }

    /// Where the speaker stands: the sample it hands over next, counted from the stream's
    /// first (silence included), is heard at `mark.at_us`.
    pub fn speaker_clock(&mut self, mark: ClockMark) {
        self.clocks.speaker(mark);
    }

    /// Where the microphone stands: the sample it delivers next was captured at `mark.at_us`.
    pub fn microphone_clock(&mut self, mark: ClockMark) {
        self.clocks.microphone(mark);
    }

    /// The drift between the clocks as measured so far ([`ClockDrift::drift_ppm`]).
    pub fn drift_ppm(&self) -> Option<f64> {
        self.clocks.drift_ppm()
    }

    /// Whether the reference is being resampled onto the microphone's clock.
    pub fn is_following_drift(&self) -> bool {
        self.following_drift
    }

    /// The speaker's rate this stage was made for.
    pub fn render_rate_hz(&self) -> u32 {
        self.render_rate_hz
    }

    /// Samples the speaker played, in order (silence included).
    pub fn played(&mut self, samples: &[f32]) -> Result<(), EchoError> {
        if let Some(measure) = self.clocks.measure()
            && measure.uncertainty_ppm <= MAX_UNCERTAINTY_PPM
        {
            let significant = measure.is_significant();
            if !self.clocks_told || !self.following_drift && significant {
                self.clocks_told = true;
                self.following_drift = significant;
                self.drift_event = Some(EchoEvent::Clocks {
                    drift_ppm: measure.drift_ppm.round() as i32,
                    following: significant,
                });
            }
            if self.following_drift {
                self.drift_resampler.set_drift_ppm(measure.drift_ppm);
            }
        }
        if !self.following_drift {
            return self.frame_reference(samples);
        }
        let mut resampled = std::mem::take(&mut self.resampled);
        resampled.clear();
        self.drift_resampler.process(samples, &mut resampled);
        let result = self.frame_reference(&resampled);
        self.resampled = resampled;
        result
    }

    /// The reference, on the microphone's clock, through the canceller in whole frames.
    fn frame_reference(&mut self, mut samples: &[f32]) -> Result<(), EchoError> {
        let frame_samples = self.canceller.render_frame_samples();
        while !samples.is_empty() {
            let take = (frame_samples - self.render_pending.len()).min(samples.len());
            self.render_pending.extend_from_slice(&samples[..take]);
            samples = &samples[take..];
            if self.render_pending.len() == frame_samples {
                self.canceller.played(&self.render_pending)?;
                if frame_level_dbfs(&self.render_pending) >= AUDIBLE_REFERENCE_DBFS {
                    self.audible_reference_ms += ECHO_FRAME_MS;
                }
                // The reply's echo comes back after the path's delay: what was played in the
                // last `delay` has not been heard yet, and teaches the canceller nothing. No
                // delay found means no echo found (a headset): nothing to wait for.
                let delay_ms = self.canceller.stats().delay_ms.unwrap_or(0);
                let heard_ms = self
                    .audible_reference_ms
                    .saturating_sub(u32::try_from(delay_ms).unwrap_or(0));
                if !self.converged && heard_ms >= CONVERGED_AFTER_MS {
                    self.converged = true;
                    self.event = Some(EchoEvent::Converged);
                }
                self.render_pending.clear();
            }
        }
        Ok(())
    }

    /// Samples the microphone captured (48 kHz): the whole frames among them, cleaned, are
    /// appended to `out`; a last partial frame waits for the next piece (at most 10 ms).
    pub fn captured(
        &mut self,
        mut samples: &[f32],
        out: &mut Vec<f32>,
        delay_hint_ms: u32,
    ) -> Result<(), EchoError> {
        let frame_samples = self.canceller.capture_frame_samples();
        while !samples.is_empty() {
            let take = (frame_samples - self.capture_pending.len()).min(samples.len());
            self.capture_pending.extend_from_slice(&samples[..take]);
            samples = &samples[take..];
            if self.capture_pending.len() == frame_samples {
                self.canceller
                    .captured(&mut self.capture_pending, delay_hint_ms)?;
                out.extend_from_slice(&self.capture_pending);
                self.capture_pending.clear();
            }
        }
        Ok(())
    }

    /// The echo path changed (another microphone or speaker): until the canceller has heard
    /// [`CONVERGED_AFTER_MS`] of reply on it, it is not trusted.
    pub fn path_changed(&mut self) {
        self.audible_reference_ms = 0;
        if std::mem::take(&mut self.converged) {
            self.event = Some(EchoEvent::Relearning);
        }
    }

    /// Whether the canceller is trusted now.
    pub fn is_converged(&self) -> bool {
        self.converged
    }

    /// What changed since the last poll, if anything.
    pub fn poll_event(&mut self) -> Option<EchoEvent> {
        self.event.take().or_else(|| self.drift_event.take())
    }

    /// What the canceller reports of itself.
    pub fn stats(&self) -> EchoStats {
        self.canceller.stats()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn canceller() -> EchoCanceller {
        EchoCanceller::new(EchoConfig {
            capture_rate_hz: 48_000,
            render_rate_hz: 44_100,
            noise_suppression: false,
        })
        .expect("48 kHz and 44.1 kHz are supported")
    }

    #[test]
    fn frames_are_ten_milliseconds_at_each_streams_own_rate() {
        let canceller = canceller();
        assert_eq!(canceller.capture_frame_samples(), 480);
        assert_eq!(canceller.render_frame_samples(), 441);
    }

    #[test]
    fn a_frame_of_the_wrong_length_is_refused_by_name_not_a_panic() {
        let mut canceller = canceller();
        assert_eq!(
            canceller.played(&[0.0; 480]),
            Err(EchoError::FrameLength {
                expected: 441,
                actual: 480
            })
        );
        let mut short = [0.0f32; 100];
        assert_eq!(
            canceller.captured(&mut short, 40),
            Err(EchoError::FrameLength {
                expected: 480,
                actual: 100
            })
        );
        assert_eq!(canceller.stats().captured_frames, 0);
    }

    #[test]
    fn a_rate_it_cannot_run_at_is_refused() {
        let error = EchoCanceller::new(EchoConfig {
            capture_rate_hz: 4_000,
            render_rate_hz: 48_000,
            noise_suppression: true,
        })
        .unwrap_err();
        assert_eq!(error, EchoError::Rate { rate_hz: 4_000 });
    }
}

#[cfg(test)]
mod stage_tests {
    use super::*;

    #[test]
    fn pieces_of_any_length_go_through_as_whole_frames_and_a_partial_one_waits() {
        let mut stage = EchoStage::new(44_100, false).expect("44.1 kHz is supported");
        let mut out = Vec::with_capacity(2_000);
        stage.played(&[0.0; 300]).expect("reference");
        stage.captured(&[0.01; 700], &mut out, 30).expect("capture");
        assert_eq!(out.len(), 480, "one whole frame of 700 samples");
        stage.captured(&[0.01; 260], &mut out, 30).expect("capture");
        assert_eq!(
            out.len(),
            960,
            "the waiting 220 and 260 more make the second"
        );
        assert_eq!(stage.stats().captured_frames, 2);
        assert_eq!(
            stage.stats().played_frames,
            0,
            "300 of 441 is not a frame yet"
        );
    }

    #[test]
    fn it_is_trusted_after_enough_audible_reply_and_not_after_the_path_changes() {
        let mut stage = EchoStage::new(48_000, true).expect("48 kHz is supported");
        let loud = vec![0.1f32; 480];
        let silent = vec![0.0f32; 480];
        for _ in 0..500 {
            stage.played(&silent).expect("reference");
        }
        assert_eq!(stage.poll_event(), None, "silence teaches it nothing");
        for _ in 0..(CONVERGED_AFTER_MS / ECHO_FRAME_MS - 1) {
            stage.played(&loud).expect("reference");
        }
        assert_eq!(stage.poll_event(), None);
        stage.played(&loud).expect("reference");
        assert_eq!(stage.poll_event(), Some(EchoEvent::Converged));
        assert!(stage.is_converged());
        stage.path_changed();
        assert_eq!(stage.poll_event(), Some(EchoEvent::Relearning));
        stage.path_changed();
        assert_eq!(stage.poll_event(), None, "told once");
    }
}
