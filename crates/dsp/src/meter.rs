//! Input and output levels for the UI: RMS and peak in dBFS over a window (the engine reads one
//! ten times a second).

/// The level reported for digital silence, in dBFS: quieter than any 24-bit signal.
pub const SILENCE_DBFS: f32 = -120.0;

/// One reading of the meter.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Level {
    pub rms_dbfs: f32,
    pub peak_dbfs: f32,
}

fn to_dbfs(amplitude: f32) -> f32 {
    if amplitude <= 0.0 {
        SILENCE_DBFS
    } else {
        (20.0 * amplitude.log10()).max(SILENCE_DBFS)
    }
}

/// Accumulates samples and yields a [`Level`] every `window_samples`.
#[derive(Debug)]
pub struct LevelMeter {
    window_samples: usize,
    seen: usize,
    sum_squares: f64,
    peak: f32,
}

impl LevelMeter {
    /// A meter that reports `readings_per_second` times for audio at `sample_rate_hz`.
    pub fn new(sample_rate_hz: u32, readings_per_second: u32) -> Self {
        Self {
            window_samples: (sample_rate_hz / readings_per_second.max(1)).max(1) as usize,
            seen: 0,
            sum_squares: 0.0,
            peak: 0.0,
        }
    }

    /// Feeds samples; calls `on_level` once for each completed window.
    pub fn feed(&mut self, samples: &[f32], mut on_level: impl FnMut(Level)) {
        for &sample in samples {
            self.sum_squares += f64::from(sample) * f64::from(sample);
            self.peak = self.peak.max(sample.abs());
            self.seen += 1;
            if self.seen == self.window_samples {
                let rms = (self.sum_squares / self.seen as f64).sqrt() as f32;
                on_level(Level {
                    rms_dbfs: to_dbfs(rms),
                    peak_dbfs: to_dbfs(self.peak),
                });
                self.seen = 0;
                self.sum_squares = 0.0;
                self.peak = 0.0;
            }
        }
    }
}
