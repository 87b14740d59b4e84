//! A deterministic noise source: the canceller's dither and the test signals' noise, the same
//! every run.

/// A deterministic pseudo-random generator for noise (xorshift64*), so every run hears the
/// same noise.
#[derive(Debug, Clone)]
pub struct Noise(u64);

impl Noise {
    /// A generator from `seed` (any value; zero is moved off the fixed point).
    pub fn new(seed: u64) -> Self {
        Self(seed.max(1))
    }

    /// Uniform in [-1, 1).
    pub fn next_sample(&mut self) -> f32 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        let bits = self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 40;
        (bits as f32 / (1u64 << 23) as f32) - 1.0
    }

    /// White noise at `rms_dbfs` (RMS, dBFS), `len` samples.
    pub fn white(&mut self, rms_dbfs: f32, len: usize) -> Vec<f32> {
        // A uniform [-1, 1) signal has an RMS of 1/sqrt(3).
        let gain = 10f32.powf(rms_dbfs / 20.0) * 3f32.sqrt();
        (0..len).map(|_| self.next_sample() * gain).collect()
    }
}
