//! Audio payloads: the live chunk that is played, and the WAV snapshot that is only saved.
//!
//! Why two unrelated types: the design's rule 2 ("play the deltas, never the snapshot") is enforced
//! by the type system rather than by convention. [`AudioChunk`] is the only thing a playback sink
//! accepts; [`WavSnapshot`] has no conversion into it and exposes its content only for saving (WAV
//! bytes, or its samples read-only, which no sink takes). Playing a finished turn twice therefore
//! does not type-check:
//!
//! ```compile_fail
//! use walkie_session::{AudioChunk, PlaybackSink, WavSnapshot};
//! fn play_snapshot(sink: &mut impl PlaybackSink, snapshot: &WavSnapshot) {
//!     sink.play(snapshot); // a snapshot is not a chunk: this does not compile
//! }
//! ```
//!
//! Both types share their samples through an `Arc`, so cloning a chunk into a view or a queue is a
//! reference-count increment, never an allocation (the hot path must not allocate per delta).

use std::fmt;
use std::sync::Arc;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Bytes in one PCM16 sample.
const BYTES_PER_SAMPLE: usize = 2;
/// Size of the canonical 44-byte RIFF/WAVE header written by [`WavSnapshot::to_wav_bytes`].
const WAV_HEADER_BYTES: usize = 44;

/// One chunk of live speech audio: signed 16-bit mono PCM at the speaker's sample rate.
///
/// On the wire (journal, webview) it is the base64 text of the little-endian PCM bytes, the same
/// encoding the provider uses.
#[derive(Clone, PartialEq, Eq)]
pub struct AudioChunk {
    samples: Arc<[i16]>,
}

impl AudioChunk {
    /// A chunk owning these samples (one allocation, made by the producer, not by the session).
    pub fn from_samples(samples: impl Into<Arc<[i16]>>) -> Self {
        Self {
            samples: samples.into(),
        }
    }

    /// A chunk decoded from little-endian PCM16 bytes.
    pub fn from_pcm16_le(bytes: &[u8]) -> Result<Self, AudioError> {
        if !bytes.len().is_multiple_of(BYTES_PER_SAMPLE) {
            return Err(AudioError::OddPcmByteCount {
                byte_count: bytes.len(),
            });
        }
        let samples: Vec<i16> = bytes
            .chunks_exact(BYTES_PER_SAMPLE)
            .map(|pair| i16::from_le_bytes([pair[0], pair[1]]))
            .collect();
        Ok(Self::from_samples(samples))
    }

    /// The samples, for the playback sink.
    pub fn samples(&self) -> &[i16] {
        &self.samples
    }

    /// Number of samples in this chunk.
    pub fn sample_count(&self) -> usize {
        self.samples.len()
    }

    /// The chunk as little-endian PCM16 bytes.
    pub fn to_pcm16_le(&self) -> Vec<u8> {
        self.samples.iter().flat_map(|s| s.to_le_bytes()).collect()
    }
}

impl fmt::Debug for AudioChunk {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "AudioChunk({} samples)", self.samples.len())
    }
}

impl Serialize for AudioChunk {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&BASE64.encode(self.to_pcm16_le()))
    }
}

impl<'de> Deserialize<'de> for AudioChunk {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        let bytes = BASE64
            .decode(text.as_bytes())
            .map_err(|e| serde::de::Error::custom(AudioError::Base64(e.to_string())))?;
        AudioChunk::from_pcm16_le(&bytes).map_err(serde::de::Error::custom)
    }
}

/// Where live audio goes: the only path to a speaker. It accepts [`AudioChunk`]s and nothing else.
pub trait PlaybackSink {
    /// Queue this chunk for playback.
    fn play(&mut self, chunk: &AudioChunk);
}

/// The whole of a finished speech part's audio, retained for history and the saved WAV file.
///
/// It cannot be played: the only ways to its content are [`WavSnapshot::to_wav_bytes`] (a WAV
/// file), [`WavSnapshot::samples`] (what the store appends to `turns/NNNN-assistant.wav`) and its
/// counts; none of them is an [`AudioChunk`].
#[derive(Clone, PartialEq, Eq)]
pub struct WavSnapshot {
    sample_rate_hz: u32,
    samples: Arc<[i16]>,
}

impl WavSnapshot {
    /// A snapshot of these samples at this rate.
    pub fn new(sample_rate_hz: u32, samples: impl Into<Arc<[i16]>>) -> Self {
        Self {
            sample_rate_hz,
            samples: samples.into(),
        }
    }

    /// The sample rate of the retained audio.
    pub fn sample_rate_hz(&self) -> u32 {
        self.sample_rate_hz
    }

    /// Number of retained samples.
    pub fn sample_count(&self) -> usize {
        self.samples.len()
    }

    /// The retained samples (mono PCM16 at [`WavSnapshot::sample_rate_hz`]), for saving. A slice
    /// is not a chunk: no [`PlaybackSink`] takes it.
    pub fn samples(&self) -> &[i16] {
        &self.samples
    }

    /// Duration of the retained audio in milliseconds (rounded down).
    pub fn duration_ms(&self) -> u64 {
        if self.sample_rate_hz == 0 {
            return 0;
        }
        self.samples.len() as u64 * 1000 / u64::from(self.sample_rate_hz)
    }

    /// The snapshot as a complete WAV file: RIFF header, mono, 16-bit PCM.
    pub fn to_wav_bytes(&self) -> Vec<u8> {
        let data_bytes = (self.samples.len() * BYTES_PER_SAMPLE) as u32;
        let byte_rate = self.sample_rate_hz * BYTES_PER_SAMPLE as u32;
        let mut out = Vec::with_capacity(WAV_HEADER_BYTES + data_bytes as usize);
        out.extend_from_slice(b"RIFF");
        out.extend_from_slice(&(36 + data_bytes).to_le_bytes());
        out.extend_from_slice(b"WAVE");
        out.extend_from_slice(b"fmt ");
        out.extend_from_slice(&16u32.to_le_bytes()); // fmt chunk size
        out.extend_from_slice(&1u16.to_le_bytes()); // PCM
        out.extend_from_slice(&1u16.to_le_bytes()); // mono
        out.extend_from_slice(&self.sample_rate_hz.to_le_bytes());
        out.extend_from_slice(&byte_rate.to_le_bytes());
        out.extend_from_slice(&(BYTES_PER_SAMPLE as u16).to_le_bytes()); // block align
        out.extend_from_slice(&16u16.to_le_bytes()); // bits per sample
        out.extend_from_slice(b"data");
        out.extend_from_slice(&data_bytes.to_le_bytes());
        for sample in self.samples.iter() {
            out.extend_from_slice(&sample.to_le_bytes());
        }
        out
    }

    /// Parse a WAV file written by [`WavSnapshot::to_wav_bytes`] (mono PCM16, canonical header).
    pub fn from_wav_bytes(bytes: &[u8]) -> Result<Self, AudioError> {
        if bytes.len() < WAV_HEADER_BYTES {
            return Err(AudioError::WavTooShort {
                byte_count: bytes.len(),
            });
        }
        if &bytes[0..4] != b"RIFF" || &bytes[8..12] != b"WAVE" || &bytes[12..16] != b"fmt " {
            return Err(AudioError::NotRiffWave);
        }
        let u16_at = |at: usize| u16::from_le_bytes([bytes[at], bytes[at + 1]]);
        let u32_at = |at: usize| {
            u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
        };
        let format = u16_at(20);
        let channels = u16_at(22);
        let bits_per_sample = u16_at(34);
        if format != 1 || channels != 1 || bits_per_sample != 16 {
            return Err(AudioError::UnsupportedWavFormat {
                format,
                channels,
                bits_per_sample,
            });
        }
        if &bytes[36..40] != b"data" {
            return Err(AudioError::NotRiffWave);
        }
        let sample_rate_hz = u32_at(24);
        let data_bytes = u32_at(40) as usize;
        let data = bytes
            .get(WAV_HEADER_BYTES..WAV_HEADER_BYTES + data_bytes)
            .ok_or(AudioError::WavTooShort {
                byte_count: bytes.len(),
            })?;
        let chunk = AudioChunk::from_pcm16_le(data)?;
        Ok(Self {
            sample_rate_hz,
            samples: chunk.samples,
        })
    }
}

impl fmt::Debug for WavSnapshot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "WavSnapshot({} samples at {} Hz)",
            self.samples.len(),
            self.sample_rate_hz
        )
    }
}

/// Serialized like pydantic-ai's `BinaryContent`: a media type and the base64 WAV file.
#[derive(Serialize, Deserialize)]
struct WavSnapshotWire {
    media_type: String,
    data: String,
}

impl Serialize for WavSnapshot {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        WavSnapshotWire {
            media_type: "audio/wav".to_owned(),
            data: BASE64.encode(self.to_wav_bytes()),
        }
        .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for WavSnapshot {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let wire = WavSnapshotWire::deserialize(deserializer)?;
        if wire.media_type != "audio/wav" {
            return Err(serde::de::Error::custom(AudioError::UnexpectedMediaType {
                media_type: wire.media_type,
            }));
        }
        let bytes = BASE64
            .decode(wire.data.as_bytes())
            .map_err(|e| serde::de::Error::custom(AudioError::Base64(e.to_string())))?;
        WavSnapshot::from_wav_bytes(&bytes).map_err(serde::de::Error::custom)
    }
}

/// What was wrong with audio handed to the session or read back from the journal.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AudioError {
    /// PCM16 needs two bytes per sample.
    #[error("PCM16 audio needs an even number of bytes, got {byte_count}")]
    OddPcmByteCount {
        /// The length that was given.
        byte_count: usize,
    },
    /// The base64 text did not decode.
    #[error("audio is not valid base64: {0}")]
    Base64(String),
    /// Shorter than a WAV header (or than its declared data).
    #[error("WAV data too short: {byte_count} bytes")]
    WavTooShort {
        /// The length that was given.
        byte_count: usize,
    },
    /// Missing the RIFF/WAVE/fmt/data markers of a canonical header.
    #[error("not a canonical RIFF/WAVE file")]
    NotRiffWave,
    /// Only mono 16-bit PCM is retained.
    #[error(
        "unsupported WAV format: format {format}, {channels} channels, {bits_per_sample} bits (want PCM, mono, 16 bits)"
    )]
    UnsupportedWavFormat {
        /// WAVE format tag (1 is PCM).
        format: u16,
        /// Channel count.
        channels: u16,
        /// Bits per sample.
        bits_per_sample: u16,
    },
    /// A retained snapshot must be `audio/wav`.
    #[error("retained audio must be audio/wav, got {media_type:?}")]
    UnexpectedMediaType {
        /// The media type that was found.
        media_type: String,
    },
}

/// Which way a sound device carries audio. One type for the audio engine, the turn
/// controller, the conversation machine and the webview's meters (serialised `input` and
/// `output`); said as "microphone" and "speaker".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DeviceDirection {
    /// The microphone.
    Input,
    /// The speaker.
    Output,
}

impl fmt::Display for DeviceDirection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            DeviceDirection::Input => "microphone",
            DeviceDirection::Output => "speaker",
        })
    }
}
