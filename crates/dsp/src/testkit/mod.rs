//! Test signals and their measures: what the DSP tests, the engine's tests and the local
//! provider's scripted speech all use, so that every figure is measured on the same signals.

pub mod room;

/// The call's rate, which every signal here is at.
const RATE_HZ: f64 = crate::CALL_RATE_HZ as f64;

/// `ms` of speech-like audio, 16-bit mono at 48 kHz: voiced "syllables" (a harmonic source
/// with formant-like peaks and a moving pitch, 180 ms on, 40 ms dipped), about −20 dBFS.
pub fn speech_like(ms: u64) -> Vec<i16> {
    let samples = usize::try_from(ms)
        .unwrap_or(usize::MAX / 48)
        .saturating_mul(48);
    let mut pcm = vec![0i16; samples];
    let mut phase = 0.0f64;
    for (i, sample) in pcm.iter_mut().enumerate() {
        let t = i as f64 / RATE_HZ;
        let f0 = 140.0 + 30.0 * (2.0 * std::f64::consts::PI * 1.3 * t).sin();
        phase += 2.0 * std::f64::consts::PI * f0 / RATE_HZ;
        let source: f64 = (1..=18)
            .map(|k| {
                let freq = f0 * f64::from(k);
                let formant = 1.0
                    + 2.0 * (-((freq - 700.0) / 200.0).powi(2)).exp()
                    + 1.5 * (-((freq - 1200.0) / 250.0).powi(2)).exp();
                formant * (f64::from(k) * phase).sin() / f64::from(k)
            })
            .sum();
        let syllable = (t % 0.22) / 0.22;
        let envelope = if syllable < 0.82 {
            (std::f64::consts::PI * syllable / 0.82).sin().powi(2)
        } else {
            0.05
        };
        *sample = (source * envelope * 4500.0).clamp(-32_000.0, 32_000.0) as i16;
    }
    pcm
}

/// [`speech_like`] as f32 samples in [-1, 1].
pub fn speech_like_f32(ms: u64) -> Vec<f32> {
    speech_like(ms)
        .iter()
        .map(|&sample| f32::from(sample) / 32_768.0)
        .collect()
}

/// A sine at `frequency_hz` and `amplitude` (of full scale), `len` samples at 48 kHz. The phase
/// is computed in f64: an f32 phase drifts by whole degrees after a second.
pub fn tone(frequency_hz: f64, amplitude: f32, len: usize) -> Vec<f32> {
    let step = 2.0 * std::f64::consts::PI * frequency_hz / RATE_HZ;
    (0..len)
        .map(|i| (f64::from(amplitude) * (step * i as f64).sin()) as f32)
        .collect()
}

/// The level of `frequency_hz` in `samples` (48 kHz), in dBFS of a full-scale sine (Goertzel).
pub fn tone_level_dbfs(samples: &[f32], frequency_hz: f64) -> f32 {
    if samples.is_empty() {
        return -120.0;
    }
    let omega = 2.0 * std::f64::consts::PI * frequency_hz / RATE_HZ;
    let coefficient = 2.0 * omega.cos();
    let (mut s1, mut s2) = (0.0f64, 0.0f64);
    for &x in samples {
        let s0 = f64::from(x) + coefficient * s1 - s2;
        s2 = s1;
        s1 = s0;
    }
    let power = (s1 * s1 + s2 * s2 - coefficient * s1 * s2).max(0.0);
    let amplitude = 2.0 * power.sqrt() / samples.len() as f64;
    (20.0 * amplitude.max(1e-6).log10()) as f32
}

/// The RMS level of `samples`, in dBFS (of a full-scale square wave; a full-scale sine is −3).
pub fn rms_dbfs(samples: &[f32]) -> f32 {
    if samples.is_empty() {
        return -120.0;
    }
    let mean_square = samples
        .iter()
        .map(|&s| f64::from(s) * f64::from(s))
        .sum::<f64>()
        / samples.len() as f64;
    (10.0 * mean_square.max(1e-12).log10()) as f32
}

/// Encodes 48 kHz mono PCM as 20 ms Opus frames the way a provider would (libopus's VoIP
/// application at its defaults); a short last frame is dropped.
pub fn encode_opus(pcm: &[i16]) -> Result<Vec<Vec<u8>>, opus::Error> {
    let mut encoder = opus::Encoder::new(48_000, opus::Channels::Mono, opus::Application::Voip)?;
    pcm.chunks_exact(crate::FRAME_SAMPLES)
        .map(|frame| encoder.encode_vec(frame, crate::codec::MAX_PACKET_BYTES))
        .collect()
}

pub use crate::noise::Noise;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_measures_read_the_signals_they_are_given() {
        let sine = tone(1_000.0, 0.5, 48_000);
        assert!((tone_level_dbfs(&sine, 1_000.0) - (-6.02)).abs() < 0.1);
        assert!(tone_level_dbfs(&sine, 3_000.0) < -60.0);
        assert!((rms_dbfs(&sine) - (-9.03)).abs() < 0.1);
        let noise = Noise::new(7).white(-65.0, 48_000);
        assert!((rms_dbfs(&noise) - (-65.0)).abs() < 0.3);
        let speech = speech_like_f32(1_000);
        assert_eq!(speech.len(), 48_000);
        let level = rms_dbfs(&speech);
        assert!((-26.0..-14.0).contains(&level), "{level}");
    }
}
