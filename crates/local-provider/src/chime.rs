//! The local provider has no voices of its own. An out-of-band reply (`conversation: "none"`,
//! what a voice preview asks for) has no user audio to play back, so it plays a short chime
//! instead, pitched by the voice's name: two voices sound different, and nobody mistakes the
//! chime for a voice.

use bytes::Bytes;

use crate::session::{FRAME_SAMPLES, InputFrame};

/// How long each of the chime's two notes lasts, in 20 ms frames.
const NOTE_FRAMES: usize = 18;
/// Each note rises and falls over this many samples (5 ms), so it starts and ends without a
/// click.
const FADE_SAMPLES: usize = 240;
/// The notes' peak, of full scale (about −12 dBFS).
const PEAK: f64 = 0.25;

/// The first note's pitch for `voice`: one of twelve semitones up from G4, chosen by its name.
pub fn first_note_hz(voice: &str) -> f64 {
    let hash = voice.bytes().fold(0u32, |hash, byte| {
        hash.wrapping_mul(33).wrapping_add(u32::from(byte))
    });
    let semitone = hash % 12;
    392.0 * 2f64.powf(f64::from(semitone) / 12.0)
}

/// The chime for `voice` as Opus frames of 20 ms: a note, then the fifth above it. Empty if
/// the encoder cannot be made (the reply then carries its transcript alone).
pub fn chime_frames(voice: &str) -> Vec<InputFrame> {
    let mut encoder =
        match opus::Encoder::new(48_000, opus::Channels::Mono, opus::Application::Audio) {
            Ok(encoder) => encoder,
            Err(error) => {
                log::warn!("the local provider's chime has no encoder: {error}");
                return Vec::new();
            }
        };
    let first = first_note_hz(voice);
    let note_samples = NOTE_FRAMES * FRAME_SAMPLES as usize;
    let mut pcm = Vec::with_capacity(2 * note_samples);
    for pitch_hz in [first, first * 1.5] {
        for n in 0..note_samples {
            let fade = n.min(note_samples - 1 - n).min(FADE_SAMPLES) as f64 / FADE_SAMPLES as f64;
            let phase = std::f64::consts::TAU * pitch_hz * n as f64 / 48_000.0;
            pcm.push((phase.sin() * fade * PEAK * f64::from(i16::MAX)) as i16);
        }
    }
    let mut packet = vec![0u8; 1_500];
    let mut frames = Vec::with_capacity(pcm.len() / FRAME_SAMPLES as usize);
    for frame in pcm.chunks_exact(FRAME_SAMPLES as usize) {
        let length = match encoder.encode(frame, &mut packet) {
            Ok(length) => length,
            Err(error) => {
                log::warn!("the local provider's chime could not be encoded: {error}");
                return Vec::new();
            }
        };
        let energy: f64 = frame.iter().map(|&s| f64::from(s) * f64::from(s)).sum();
        frames.push(InputFrame {
            opus: Bytes::copy_from_slice(&packet[..length]),
            samples: FRAME_SAMPLES,
            rms: (energy / frame.len() as f64).sqrt(),
        });
    }
    frames
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decoded(frames: &[InputFrame]) -> Vec<i16> {
        let mut decoder = opus::Decoder::new(48_000, opus::Channels::Mono).unwrap();
        let mut pcm = Vec::new();
        for frame in frames {
            let mut out = vec![0i16; FRAME_SAMPLES as usize];
            let n = decoder.decode(&frame.opus, &mut out, false).unwrap();
            pcm.extend_from_slice(&out[..n]);
        }
        pcm
    }

    /// Zero crossings per second over `pcm`: twice the pitch of a pure tone.
    fn pitch_hz(pcm: &[i16]) -> f64 {
        let crossings = pcm
            .windows(2)
            .filter(|pair| (pair[0] < 0) != (pair[1] < 0))
            .count();
        crossings as f64 * 48_000.0 / pcm.len() as f64 / 2.0
    }

    #[test]
    fn the_chime_is_two_audible_notes_that_decode_at_the_voices_pitch_then_a_fifth_above() {
        let frames = chime_frames("cedar");
        assert_eq!(frames.len(), 2 * NOTE_FRAMES);
        assert!(frames.iter().all(InputFrame::voiced), "every frame sounds");
        let pcm = decoded(&frames);
        let note = NOTE_FRAMES * FRAME_SAMPLES as usize;
        // The middle of each note, away from its fades and the codec's start-up.
        let first = pitch_hz(&pcm[note / 4..3 * note / 4]);
        let second = pitch_hz(&pcm[note + note / 4..note + 3 * note / 4]);
        let wanted = first_note_hz("cedar");
        assert!(
            (first - wanted).abs() < wanted * 0.02,
            "{first} Hz, not {wanted}"
        );
        assert!(
            (second - 1.5 * wanted).abs() < wanted * 0.03,
            "{second} Hz, not {}",
            1.5 * wanted
        );
    }

    #[test]
    fn two_voices_chime_at_different_pitches() {
        assert_ne!(first_note_hz("cedar"), first_note_hz("marin"));
        for voice in [
            "alloy", "ash", "ballad", "coral", "echo", "sage", "shimmer", "verse",
        ] {
            let hz = first_note_hz(voice);
            assert!((392.0..740.0).contains(&hz), "{voice}: {hz} Hz");
        }
    }
}
