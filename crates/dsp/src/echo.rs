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
//! Frames are fixed-size arrays of the rates given at construction, so a wrong length cannot
//! reach the canceller (it would panic in a release build). The canceller allocates inside its
//! processing; it runs on the uplink worker, never in a device callback.

use sonora::config::{EchoCanceller as Aec3, NoiseSuppression, NoiseSuppressionLevel};
use sonora::{AudioProcessing, Config, StreamConfig};

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
        self.capture_in.copy_from_slice(frame);
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
