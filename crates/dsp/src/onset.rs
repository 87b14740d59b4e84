//! Whether the user has started talking over a reply, from what the echo canceller left of the
//! microphone: hands-free can hold the reply the moment the user speaks, a network round trip
//! and the provider's own detection before the provider's `speech_started` says so.
//!
//! Level, not a model: once the canceller is trusted, the reply's echo is some 40 dB down
//! (docs/benchmarks.md, "Echo cancellation"), far below a voice at the provider's threshold, so
//! the level alone tells them apart; and the provider, not this detector, decides whether the
//! reply is cut.

/// A 10 ms frame at or above this level is voiced: the provider's default voice-detection
/// threshold (0.5, −40 dBFS as the local provider maps it).
pub const VOICED_DBFS: f32 = -40.0;
/// Voiced audio, unbroken, that makes an onset: shorter is a click or a knock.
pub const ONSET_MS: u32 = 30;
/// Quiet that ends a talkspurt: only after it can another onset be found.
pub const RELEASE_MS: u32 = 300;

const DETECTOR_FRAME_MS: u32 = 10;

/// See the module documentation. Allocation-free.
#[derive(Debug, Clone)]
pub struct SpeechOnset {
    frame_samples: usize,
    /// The mean square a voiced frame reaches.
    voiced_mean_square: f64,
    in_frame: usize,
    sum_squares: f64,
    voiced_ms: u32,
    quiet_ms: u32,
    talking: bool,
}

impl SpeechOnset {
    /// A detector for mono audio at `rate_hz`, in [-1, 1].
    pub fn new(rate_hz: u32) -> Self {
        let amplitude = 10f64.powf(f64::from(VOICED_DBFS) / 20.0);
        Self {
            frame_samples: (rate_hz / 1000 * DETECTOR_FRAME_MS).max(1) as usize,
            voiced_mean_square: amplitude * amplitude,
            in_frame: 0,
            sum_squares: 0.0,
            voiced_ms: 0,
            quiet_ms: RELEASE_MS,
            talking: false,
        }
    }

    /// Takes the next samples; says whether a talkspurt started within them.
    pub fn feed(&mut self, samples: &[f32]) -> bool {
        let mut started = false;
        for &sample in samples {
            self.sum_squares += f64::from(sample) * f64::from(sample);
            self.in_frame += 1;
            if self.in_frame == self.frame_samples {
                let voiced =
                    self.sum_squares / self.frame_samples as f64 >= self.voiced_mean_square;
                started |= self.frame(voiced);
                self.in_frame = 0;
                self.sum_squares = 0.0;
            }
        }
        started
    }

    /// Forgets what it heard (the microphone was not listened to meanwhile).
    pub fn reset(&mut self) {
        self.in_frame = 0;
        self.sum_squares = 0.0;
        self.voiced_ms = 0;
        self.quiet_ms = RELEASE_MS;
        self.talking = false;
    }

    fn frame(&mut self, voiced: bool) -> bool {
        if voiced {
            self.quiet_ms = 0;
            self.voiced_ms += DETECTOR_FRAME_MS;
            if !self.talking && self.voiced_ms >= ONSET_MS {
                self.talking = true;
                return true;
            }
        } else {
            self.voiced_ms = 0;
            self.quiet_ms = self.quiet_ms.saturating_add(DETECTOR_FRAME_MS);
            if self.quiet_ms >= RELEASE_MS {
                self.talking = false;
            }
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tone(amplitude: f32, ms: usize) -> Vec<f32> {
        (0..ms * 48)
            .map(|i| amplitude * (i as f32 * 2.0 * std::f32::consts::PI * 200.0 / 48_000.0).sin())
            .collect()
    }

    fn onsets(detector: &mut SpeechOnset, samples: &[f32]) -> Vec<usize> {
        samples
            .chunks(480)
            .enumerate()
            .filter(|(_, frame)| detector.feed(frame))
            .map(|(index, _)| index * 10)
            .collect()
    }

    #[test]
    fn a_voice_over_the_threshold_starts_a_talkspurt_after_thirty_ms_once() {
        let mut detector = SpeechOnset::new(48_000);
        let mut audio = tone(0.0, 100);
        audio.extend(tone(0.1, 500));
        assert_eq!(
            onsets(&mut detector, &audio),
            [120],
            "100 ms of quiet, then 30 ms voiced"
        );
    }

    #[test]
    fn audio_below_the_threshold_and_a_short_knock_are_not_speech() {
        let mut detector = SpeechOnset::new(48_000);
        let mut audio = tone(0.005, 1_000); // about −49 dBFS RMS
        audio.extend(tone(0.5, 20));
        audio.extend(tone(0.0, 100));
        assert_eq!(onsets(&mut detector, &audio), Vec::<usize>::new());
    }

    #[test]
    fn another_onset_needs_the_talkspurt_to_end_first() {
        let mut detector = SpeechOnset::new(48_000);
        let mut audio = tone(0.1, 200);
        audio.extend(tone(0.0, 200)); // a pause inside speech
        audio.extend(tone(0.1, 200));
        audio.extend(tone(0.0, 300)); // the talkspurt ends
        audio.extend(tone(0.1, 200));
        assert_eq!(onsets(&mut detector, &audio), [20, 920]);
    }

    #[test]
    fn a_reset_forgets_a_talkspurt_under_way() {
        let mut detector = SpeechOnset::new(48_000);
        assert_eq!(onsets(&mut detector, &tone(0.1, 100)), [20]);
        detector.reset();
        assert_eq!(onsets(&mut detector, &tone(0.1, 100)), [20]);
    }
}
