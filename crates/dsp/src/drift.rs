//! The speaker's and the microphone's clocks measured against each other, and the echo
//! reference moved onto the microphone's.
//!
//! Why: a speaker and a microphone that do not share a clock (a USB microphone beside laptop
//! speakers) run apart by up to about 1,000 ppm, so the echo comes back a millisecond earlier or
//! later every second. AEC3 follows a path that moves that fast only in jumps, and lets echo at
//! speech level through at each (docs/benchmarks.md, "Echo cancellation"). Each stream's rate is
//! measured against the host's clock from where its callbacks say they stand ([`ClockMark`]);
//! the speaker's samples are then resampled by the ratio of the two ([`DriftResampler`]) before
//! the canceller sees them, and the echo path holds still. A host whose sound server already
//! matches the two (PipeWire in one graph, a shared codec clock) measures no drift worth
//! following, and nothing is resampled.
//!
//! Pure: marks carry their time; nothing here reads a clock.

use rubato::{
    Adjustable, Async, FixedAsync, Resampler, SincInterpolationParameters, SincInterpolationType,
    WindowFunction,
};

use crate::resample::process_in_chunks;

/// Where a stream stands: frame `frames` of the stream (counted from its first, silence
/// included) is heard (a speaker) or was captured (a microphone) at `at_us` on the host's clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClockMark {
    pub at_us: u64,
    pub frames: u64,
}

/// A stream's first moments (a speaker filling its buffer, its latency estimate settling, a
/// microphone delivering what the server held) say where it started, not how fast it runs:
/// they are not measured.
const WARM_UP_US: u64 = 1_000_000;

/// Marks are averaged over blocks this long; the rate is the slope through the blocks' means.
const BLOCK_US: u64 = 250_000;

/// The blocks the rate is measured over (15 s): long enough that a callback's jitter averages
/// out, short enough to follow a clock that warms up.
const WINDOW_BLOCKS: usize = 60;

/// The least span of blocks a rate is given for (2 s).
const MIN_SPAN_BLOCKS: usize = 8;

/// Marks further apart than this (a stream that stalled or was stopped) start the measure
/// again: the frames in between may not have been counted.
const MAX_GAP_US: u64 = 1_000_000;

/// Two consumer clocks are within a few hundred ppm of each other; a measure past this is a
/// stream that lost or gained frames, not a clock, and is not used.
pub const MAX_PLAUSIBLE_DRIFT_PPM: f64 = 5_000.0;

/// A measure is given only once its standard error is this small (the canceller itself copes
/// with ±100 ppm). Callbacks on a loaded host come milliseconds early or late (a sound server
/// delivering two periods at once, a latency estimate settling), which over a few seconds reads
/// as hundreds of ppm; the measure waits until the marks say the drift, not their jitter.
pub const MAX_UNCERTAINTY_PPM: f64 = 40.0;

#[derive(Debug, Clone, Copy, Default)]
struct BlockMean {
    /// Seconds and frames since the stream's origin mark.
    at_s: f64,
    frames: f64,
}

/// One stream's rate in frames per second of the host's clock. Allocation-free.
#[derive(Debug, Clone)]
struct StreamRate {
    origin: Option<ClockMark>,
    last: Option<ClockMark>,
    block_start_us: u64,
    block_marks: u32,
    block_sum_s: f64,
    block_sum_frames: f64,
    blocks: [BlockMean; WINDOW_BLOCKS],
    /// The oldest block's index in `blocks`, and how many are held.
    oldest: usize,
    held: usize,
}

impl StreamRate {
    fn new() -> Self {
        Self {
            origin: None,
            last: None,
            block_start_us: 0,
            block_marks: 0,
            block_sum_s: 0.0,
            block_sum_frames: 0.0,
            blocks: [BlockMean::default(); WINDOW_BLOCKS],
            oldest: 0,
            held: 0,
        }
    }

    fn reset(&mut self) {
        *self = Self::new();
    }

    fn mark(&mut self, mark: ClockMark) {
        let continues = self.last.is_some_and(|last| {
            mark.at_us >= last.at_us
                && mark.frames >= last.frames
                && mark.at_us - last.at_us <= MAX_GAP_US
        });
        if !continues {
            self.reset();
            self.origin = Some(mark);
            self.block_start_us = mark.at_us.saturating_add(WARM_UP_US);
        }
        self.last = Some(mark);
        let origin = self
            .origin
            .expect("a stream's origin is set by its first mark, just above");
        if mark.at_us < self.block_start_us {
            return;
        }
        if mark.at_us >= self.block_start_us + BLOCK_US {
            self.close_block();
            self.block_start_us = mark.at_us - (mark.at_us - self.block_start_us) % BLOCK_US;
        }
        self.block_marks += 1;
        self.block_sum_s += (mark.at_us - origin.at_us) as f64 / 1e6;
        self.block_sum_frames += (mark.frames - origin.frames) as f64;
    }

    fn close_block(&mut self) {
        if self.block_marks == 0 {
            return;
        }
        let count = f64::from(self.block_marks);
        let mean = BlockMean {
            at_s: self.block_sum_s / count,
            frames: self.block_sum_frames / count,
        };
        if self.held == WINDOW_BLOCKS {
            self.blocks[self.oldest] = mean;
            self.oldest = (self.oldest + 1) % WINDOW_BLOCKS;
        } else {
            self.blocks[(self.oldest + self.held) % WINDOW_BLOCKS] = mean;
            self.held += 1;
        }
        self.block_marks = 0;
        self.block_sum_s = 0.0;
        self.block_sum_frames = 0.0;
    }

    /// Frames per second, and its standard error: the least-squares slope through the held
    /// blocks' means, once they span [`MIN_SPAN_BLOCKS`].
    fn frames_per_s(&self) -> Option<(f64, f64)> {
        if self.held < MIN_SPAN_BLOCKS {
            return None;
        }
        let blocks = (0..self.held).map(|k| self.blocks[(self.oldest + k) % WINDOW_BLOCKS]);
        let count = self.held as f64;
        let mean_s = blocks.clone().map(|b| b.at_s).sum::<f64>() / count;
        let mean_frames = blocks.clone().map(|b| b.frames).sum::<f64>() / count;
        let (mut covariance, mut variance) = (0.0, 0.0);
        for block in blocks.clone() {
            covariance += (block.at_s - mean_s) * (block.frames - mean_frames);
            variance += (block.at_s - mean_s) * (block.at_s - mean_s);
        }
        if variance <= 0.0 {
            return None;
        }
        let slope = covariance / variance;
        let residuals: f64 = blocks
            .map(|b| {
                let residual = b.frames - mean_frames - slope * (b.at_s - mean_s);
                residual * residual
            })
            .sum();
        let standard_error = (residuals / (count - 2.0) / variance).sqrt();
        Some((slope, standard_error))
    }
}

/// How far the microphone's clock runs from the speaker's, from the two streams' marks.
#[derive(Debug, Clone)]
pub struct ClockDrift {
    speaker: StreamRate,
    microphone: StreamRate,
    speaker_rate_hz: f64,
    microphone_rate_hz: f64,
}

impl ClockDrift {
    /// For a speaker and a microphone at these nominal rates.
    pub fn new(speaker_rate_hz: u32, microphone_rate_hz: u32) -> Self {
        Self {
            speaker: StreamRate::new(),
            microphone: StreamRate::new(),
            speaker_rate_hz: f64::from(speaker_rate_hz.max(1)),
            microphone_rate_hz: f64::from(microphone_rate_hz.max(1)),
        }
    }

    /// Where the speaker stands. A mark before the last one, or long after it, starts its
    /// measure again (a new stream).
    pub fn speaker(&mut self, mark: ClockMark) {
        self.speaker.mark(mark);
    }

    /// Where the microphone stands (as for [`Self::speaker`]).
    pub fn microphone(&mut self, mark: ClockMark) {
        self.microphone.mark(mark);
    }

    /// Microphone frames per speaker frame, each at its nominal rate, less one, in ppm:
    /// positive, the microphone takes more samples in a second than the speaker plays. `None`
    /// until both streams have been measured for 2 s past their first second and the measure
    /// is sure to [`MAX_UNCERTAINTY_PPM`], or when it is not a clock's
    /// ([`MAX_PLAUSIBLE_DRIFT_PPM`]).
    pub fn drift_ppm(&self) -> Option<f64> {
        self.measure()
            .filter(|measure| measure.uncertainty_ppm <= MAX_UNCERTAINTY_PPM)
            .map(|measure| measure.drift_ppm)
    }

    /// The measure as it stands, however uncertain (`None` before both streams span 2 s past
    /// their first second, or past [`MAX_PLAUSIBLE_DRIFT_PPM`]).
    pub fn measure(&self) -> Option<DriftMeasure> {
        let (speaker, speaker_error) = self.speaker.frames_per_s()?;
        let (microphone, microphone_error) = self.microphone.frames_per_s()?;
        let ratio = (microphone / self.microphone_rate_hz) / (speaker / self.speaker_rate_hz);
        let drift_ppm = (ratio - 1.0) * 1e6;
        let uncertainty_ppm = (speaker_error / speaker).hypot(microphone_error / microphone) * 1e6;
        (drift_ppm.is_finite() && drift_ppm.abs() <= MAX_PLAUSIBLE_DRIFT_PPM).then_some(
            DriftMeasure {
                drift_ppm,
                uncertainty_ppm,
            },
        )
    }
}

/// A drift measure and its standard error.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DriftMeasure {
    pub drift_ppm: f64,
    pub uncertainty_ppm: f64,
}

/// Below this the echo canceller follows the drift itself: two consumer clocks within ±50 ppm
/// each are at most 100 ppm apart, and ±100 ppm measured clean in the synthetic room
/// (docs/benchmarks.md). Switching the resampler in moves the reference by its delay, which
/// the canceller relearns: worth it only for a drift it cannot follow.
pub const FOLLOW_DRIFT_FROM_PPM: f64 = 150.0;

impl DriftMeasure {
    /// Whether the clocks surely run further apart than the canceller copes with alone:
    /// [`FOLLOW_DRIFT_FROM_PPM`] and three times the measure's uncertainty.
    pub fn is_significant(&self) -> bool {
        self.uncertainty_ppm <= MAX_UNCERTAINTY_PPM
            && self.drift_ppm.abs() >= FOLLOW_DRIFT_FROM_PPM.max(3.0 * self.uncertainty_ppm)
    }
}

/// The speaker's samples resampled by the drift between the clocks, onto the microphone's.
/// Allocates only in [`DriftResampler::new`]; `output` grows only past what its caller reserved.
pub struct DriftResampler {
    resampler: Async<f32>,
    chunk_in: usize,
    pending: Vec<f32>,
    scratch_out: Vec<f32>,
}

impl std::fmt::Debug for DriftResampler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DriftResampler")
            .field("chunk_in", &self.chunk_in)
            .field("pending", &self.pending.len())
            .finish_non_exhaustive()
    }
}

/// The most the ratio may move from 1 (rubato's bound, set when it is made).
const MAX_RELATIVE_RATIO: f64 = 1.0 + 2.0 * MAX_PLAUSIBLE_DRIFT_PPM * 1e-6;

impl DriftResampler {
    /// For a stream at `rate_hz`, resampled in 10 ms chunks (the canceller's frame: finer
    /// chunks can make it lose the echo path after a sound server's stall); the ratio starts
    /// at 1.
    pub fn new(rate_hz: u32) -> Result<Self, rubato::ResamplerConstructionError> {
        let chunk_in = (rate_hz / 100).max(1) as usize;
        // Linear interpolation between 256 sinc phases of 64 taps: over 100 dB below the
        // signal for speech, at a fraction of the canceller's own cost.
        let parameters = SincInterpolationParameters::new(64, WindowFunction::BlackmanHarris2)
            .oversampling_factor(256)
            .interpolation(SincInterpolationType::Linear);
        let resampler = Async::<f32>::new_sinc(
            1.0,
            MAX_RELATIVE_RATIO,
            &parameters,
            chunk_in,
            1,
            FixedAsync::Input,
        )?;
        let scratch_out = vec![0.0; resampler.output_frames_max()];
        Ok(Self {
            resampler,
            chunk_in,
            pending: Vec::with_capacity(chunk_in),
            scratch_out,
        })
    }

    /// Output frames per input frame from now on: 1 + `drift_ppm` / 10⁶ (ramped over the next
    /// chunk, so the reference does not jump).
    pub fn set_drift_ppm(&mut self, drift_ppm: f64) {
        let ppm = drift_ppm.clamp(-MAX_PLAUSIBLE_DRIFT_PPM, MAX_PLAUSIBLE_DRIFT_PPM);
        // Within the bound given when it was made, which is all rubato refuses.
        let _within_bound = self
            .resampler
            .set_resample_ratio_relative(1.0 + ppm * 1e-6, true);
    }

    /// Resamples `input`, appending every finished output sample to `output`.
    pub fn process(&mut self, input: &[f32], output: &mut Vec<f32>) {
        process_in_chunks(
            &mut self.resampler,
            self.chunk_in,
            &mut self.pending,
            &mut self.scratch_out,
            input,
            output,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Marks every `period` frames of a stream whose clock makes `rate_hz` real frames a
    /// second, each `jitter_us(k)` late (and none before the last), from `start_us` for
    /// `seconds`.
    fn marks(
        rate_hz: f64,
        period: u64,
        start_us: u64,
        seconds: f64,
        jitter_us: impl Fn(u64) -> u64,
    ) -> Vec<ClockMark> {
        let count = (seconds * rate_hz / period as f64) as u64;
        let mut last_us = 0;
        (0..count)
            .map(|k| {
                // One thread takes the marks, in order: a late one holds back the next.
                let due_us = start_us + ((k * period) as f64 * 1e6 / rate_hz) as u64;
                last_us = (due_us + jitter_us(k)).max(last_us);
                ClockMark {
                    at_us: last_us,
                    frames: k * period,
                }
            })
            .collect()
    }

    /// Both streams' marks in the order of their times.
    fn run(drift: &mut ClockDrift, speaker: &[ClockMark], microphone: &[ClockMark]) {
        let (mut s, mut m) = (0, 0);
        while s < speaker.len() || m < microphone.len() {
            let speaker_first = match (speaker.get(s), microphone.get(m)) {
                (Some(a), Some(b)) => a.at_us <= b.at_us,
                (Some(_), None) => true,
                _ => false,
            };
            if speaker_first {
                drift.speaker(speaker[s]);
                s += 1;
            } else {
                drift.microphone(microphone[m]);
                m += 1;
            }
        }
    }

    /// A deterministic pseudo-random number for callback `k` (splitmix64).
    fn scatter(k: u64) -> u64 {
        let mut z = k.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A deterministic scheduling delay of 0–2 ms.
    fn jitter(k: u64) -> u64 {
        scatter(k) % 2_000
    }

    #[test]
    fn a_microphone_a_thousand_ppm_fast_is_measured_within_50_ppm_after_five_seconds() {
        for drift_ppm in [1_000.0, -1_000.0, 0.0, 250.0] {
            let mut drift = ClockDrift::new(48_000, 48_000);
            let speaker = marks(48_000.0, 480, 0, 5.0, jitter);
            let microphone = marks(48_000.0 * (1.0 + drift_ppm * 1e-6), 441, 3_000, 5.0, jitter);
            run(&mut drift, &speaker, &microphone);
            let measured = drift.drift_ppm().expect("both streams ran 5 s");
            assert!(
                (measured - drift_ppm).abs() <= 50.0,
                "{drift_ppm} ppm measured as {measured:.0}"
            );
        }
    }

    #[test]
    fn devices_at_different_nominal_rates_are_compared_at_those_rates() {
        let mut drift = ClockDrift::new(44_100, 48_000);
        let speaker = marks(44_100.0, 441, 0, 5.0, jitter);
        let microphone = marks(48_000.0 * (1.0 + 300e-6), 480, 0, 5.0, jitter);
        run(&mut drift, &speaker, &microphone);
        let measured = drift.drift_ppm().expect("both streams ran 5 s");
        assert!((measured - 300.0).abs() <= 30.0, "{measured:.0} ppm");
    }

    #[test]
    fn nothing_is_said_before_both_streams_have_run_two_seconds_past_their_first_nor_before_it_is_sure()
     {
        let mut drift = ClockDrift::new(48_000, 48_000);
        run(
            &mut drift,
            &marks(48_000.0, 480, 0, 2.9, jitter),
            &marks(48_000.0, 480, 0, 2.9, jitter),
        );
        assert_eq!(drift.drift_ppm(), None, "1 s warm-up + 1.9 s of blocks");
        run(
            &mut drift,
            &marks(48_000.0, 480, 0, 6.0, jitter)[300..],
            &marks(48_000.0, 480, 0, 6.0, jitter)[300..],
        );
        assert!(
            drift
                .measure()
                .is_some_and(|m| m.uncertainty_ppm < MAX_UNCERTAINTY_PPM)
        );
    }

    #[test]
    fn marks_milliseconds_off_on_one_clock_never_read_as_a_drift_worth_following() {
        // A sound server that delivers the microphone's periods in pairs, sometimes a period
        // late, and a speaker whose callbacks run up to 8 ms late: one clock.
        let late_up_to = |ms: u64| move |k: u64| scatter(k ^ ms << 32) % (ms * 1_000);
        let speaker = marks(48_000.0, 480, 0, 60.0, late_up_to(8));
        let mut microphone = marks(48_000.0, 480, 0, 60.0, late_up_to(10));
        for pair in microphone.chunks_mut(2) {
            let delivered = pair[pair.len() - 1].at_us;
            pair.iter_mut().for_each(|mark| mark.at_us = delivered);
        }
        let mut drift = ClockDrift::new(48_000, 48_000);
        let (mut s, mut m, mut first_said) = (0, 0, None);
        while s < speaker.len() && m < microphone.len() {
            if speaker[s].at_us <= microphone[m].at_us {
                drift.speaker(speaker[s]);
                s += 1;
            } else {
                drift.microphone(microphone[m]);
                m += 1;
            }
            if let Some(measure) = drift.measure() {
                assert!(!measure.is_significant(), "{measure:?} at mark {s}");
            }
            if drift.drift_ppm().is_some() {
                first_said.get_or_insert(s);
            }
        }
        let said_after_s = first_said.expect("a minute is enough to be sure") as f64 / 100.0;
        assert!(said_after_s > 3.0, "said after {said_after_s} s");
        let measure = drift.measure().expect("measured");
        assert!(
            measure.drift_ppm.abs() < 50.0,
            "after a minute: {measure:?}"
        );
    }

    #[test]
    fn a_speaker_filling_its_buffer_at_the_start_does_not_count_as_a_fast_clock() {
        // Its first ten callbacks hand over twice what the device plays: 100 ms ahead.
        let mut drift = ClockDrift::new(48_000, 48_000);
        let mut speaker = marks(48_000.0, 480, 0, 5.0, jitter);
        for mark in &mut speaker {
            mark.frames += mark.frames.min(4_800);
        }
        run(&mut drift, &speaker, &marks(48_000.0, 480, 0, 5.0, jitter));
        let measured = drift.drift_ppm().expect("both streams ran 5 s");
        assert!(measured.abs() <= 50.0, "{measured:.0} ppm");
    }

    #[test]
    fn a_new_speaker_is_measured_afresh_and_a_stream_that_lost_frames_is_not_a_clock() {
        let mut drift = ClockDrift::new(48_000, 48_000);
        run(
            &mut drift,
            &marks(48_000.0 * 1.0005, 480, 0, 5.0, jitter),
            &marks(48_000.0, 480, 0, 5.0, jitter),
        );
        assert!(
            drift
                .drift_ppm()
                .is_some_and(|ppm| (ppm + 500.0).abs() < 50.0)
        );
        // Another speaker stream: its count starts again from 0.
        drift.speaker(ClockMark {
            at_us: 5_100_000,
            frames: 0,
        });
        assert_eq!(drift.drift_ppm(), None);
        // A stream that skips a tenth of its frames (a broken count, not a clock).
        let mut drift = ClockDrift::new(48_000, 48_000);
        let mut lossy = marks(48_000.0, 480, 0, 5.0, jitter);
        for (k, mark) in lossy.iter_mut().enumerate() {
            mark.frames = mark.frames * 9 / 10 + (k as u64 % 2);
        }
        run(&mut drift, &marks(48_000.0, 480, 0, 5.0, jitter), &lossy);
        assert_eq!(drift.drift_ppm(), None);
    }

    #[test]
    fn at_plus_1000_ppm_the_resampler_makes_one_sample_more_in_a_thousand() {
        let input: Vec<f32> = (0..480_000)
            .map(|n| 0.3 * (n as f32 * 0.037).sin() + 0.2 * (n as f32 * 0.151).sin())
            .collect();
        let resampled_at = |drift_ppm: f64| {
            let mut resampler = DriftResampler::new(48_000).expect("48 kHz");
            resampler.set_drift_ppm(drift_ppm);
            let mut output = Vec::with_capacity(500_000);
            resampler.process(&input, &mut output);
            output.len() as i64
        };
        let (plain, faster, slower) = (
            resampled_at(0.0),
            resampled_at(1_000.0),
            resampled_at(-1_000.0),
        );
        assert!(
            (faster - plain - 480).abs() <= 2,
            "{faster} against {plain}"
        );
        assert!(
            (plain - slower - 480).abs() <= 2,
            "{slower} against {plain}"
        );
    }
}
