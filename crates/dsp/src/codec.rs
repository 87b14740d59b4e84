//! Opus at 48 kHz in 20 ms frames, on the system libopus (`opus` 0.3 over libopus-dev): mono
//! for the call's audio track in both directions, one or two channels for a file
//! ([`OpusFileEncoder`]).

use crate::{CALL_RATE_HZ, FRAME_SAMPLES};

/// The largest Opus packet libopus produces for one frame (RFC 6716: 1275 bytes per frame).
pub const MAX_PACKET_BYTES: usize = 1275;

#[derive(Debug, thiserror::Error)]
pub enum CodecError {
    #[error("libopus could not be set up: {0}")]
    Setup(opus::Error),
    #[error("an Opus complexity must be from 0 to 10, not {got}")]
    Complexity { got: i32 },
    #[error("a frame must hold exactly {FRAME_SAMPLES} samples (20 ms at 48 kHz), not {got}")]
    FrameSize { got: usize },
    #[error("libopus could not encode the frame: {0}")]
    Encode(opus::Error),
    #[error("an Opus file holds one or two channels, not {got}")]
    Channels { got: usize },
    #[error(
        "a frame of {channels} channel(s) must hold exactly {} interleaved samples, not {got}",
        FRAME_SAMPLES * channels
    )]
    InterleavedFrameSize { channels: usize, got: usize },
    #[error("libopus could not decode a {packet_bytes}-byte packet: {source}")]
    Decode {
        packet_bytes: usize,
        source: opus::Error,
    },
}

/// Turns 20 ms frames of microphone audio into Opus packets.
pub struct OpusEncoder {
    inner: opus::Encoder,
}

impl std::fmt::Debug for OpusEncoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("OpusEncoder")
    }
}

/// libopus's effort for the microphone: 5 of 0–10, as WebRTC uses on phones.
///
/// Why not libopus's default of 9: on speech at 32 kb/s the encoder codes in hybrid mode (SILK for
/// the voice band), where 9 costs about twice what 5 does for no audible gain, and 5 keeps SILK's
/// speech model and in-band FEC. On a pure tone the encoder picks CELT, far cheaper and cheapest at
/// the default: the engine is measured on speech for that reason.
pub const DEFAULT_OPUS_COMPLEXITY: i32 = 5;

/// The packet loss the encoder is told to expect. It decides whether libopus spends bits on
/// in-band FEC at all (its rate threshold counts complexity and loss): this is high enough
/// that FEC is on from an utterance's start, so a lost packet in the first words can be
/// rebuilt.
const EXPECTED_LOSS_PERCENT: i32 = 10;

impl OpusEncoder {
    /// A speech encoder at `bitrate_bps` (32 kb/s is plenty for one voice) and
    /// [`DEFAULT_OPUS_COMPLEXITY`], with in-band FEC on so a lost packet can be rebuilt from the
    /// next one.
    pub fn new(bitrate_bps: i32) -> Result<Self, CodecError> {
        Self::with_complexity(bitrate_bps, DEFAULT_OPUS_COMPLEXITY)
    }

    /// As [`Self::new`], at libopus complexity `complexity` (0–10; anything else is refused).
    pub fn with_complexity(bitrate_bps: i32, complexity: i32) -> Result<Self, CodecError> {
        Self::with_options(bitrate_bps, complexity, true)
    }

    /// As [`Self::with_complexity`], with in-band FEC on or off (the benchmarks measure what it
    /// buys on a lossy network).
    pub fn with_options(
        bitrate_bps: i32,
        complexity: i32,
        inband_fec: bool,
    ) -> Result<Self, CodecError> {
        if !(0..=10).contains(&complexity) {
            return Err(CodecError::Complexity { got: complexity });
        }
        let mut inner =
            opus::Encoder::new(CALL_RATE_HZ, opus::Channels::Mono, opus::Application::Voip)
                .map_err(CodecError::Setup)?;
        inner
            .set_bitrate(opus::Bitrate::Bits(bitrate_bps))
            .map_err(CodecError::Setup)?;
        inner
            .set_complexity(complexity)
            .map_err(CodecError::Setup)?;
        inner
            .set_inband_fec(inband_fec)
            .map_err(CodecError::Setup)?;
        inner
            .set_packet_loss_perc(EXPECTED_LOSS_PERCENT)
            .map_err(CodecError::Setup)?;
        Ok(Self { inner })
    }

    /// Encodes one 20 ms frame into `packet`; returns the packet's length in bytes.
    pub fn encode(
        &mut self,
        frame: &[f32],
        packet: &mut [u8; MAX_PACKET_BYTES],
    ) -> Result<usize, CodecError> {
        if frame.len() != FRAME_SAMPLES {
            return Err(CodecError::FrameSize { got: frame.len() });
        }
        self.inner
            .encode_float(frame, packet)
            .map_err(CodecError::Encode)
    }
}

/// Turns 20 ms frames of one or two interleaved channels into Opus packets for a file to be
/// listened to: libopus's audio mode at its default effort, with no loss to prepare for.
pub struct OpusFileEncoder {
    inner: opus::Encoder,
    channels: usize,
}

impl std::fmt::Debug for OpusFileEncoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpusFileEncoder")
            .field("channels", &self.channels)
            .finish()
    }
}

impl OpusFileEncoder {
    /// An encoder of `channels` (1 or 2) at `bitrate_bps` for all of them together.
    pub fn new(channels: usize, bitrate_bps: i32) -> Result<Self, CodecError> {
        let layout = match channels {
            1 => opus::Channels::Mono,
            2 => opus::Channels::Stereo,
            got => return Err(CodecError::Channels { got }),
        };
        let mut inner = opus::Encoder::new(CALL_RATE_HZ, layout, opus::Application::Audio)
            .map_err(CodecError::Setup)?;
        inner
            .set_bitrate(opus::Bitrate::Bits(bitrate_bps))
            .map_err(CodecError::Setup)?;
        Ok(Self { inner, channels })
    }

    pub fn channels(&self) -> usize {
        self.channels
    }

    /// Interleaved samples in one frame: [`FRAME_SAMPLES`] per channel.
    pub fn frame_len(&self) -> usize {
        FRAME_SAMPLES * self.channels
    }

    /// The samples (per channel, at 48 kHz) by which the decoded audio lags the input: what
    /// an Ogg Opus file's pre-skip tells its decoder to drop.
    pub fn lookahead_samples(&mut self) -> Result<usize, CodecError> {
        let lookahead = self.inner.get_lookahead().map_err(CodecError::Setup)?;
        Ok(usize::try_from(lookahead).unwrap_or(0))
    }

    /// Encodes one frame of [`Self::frame_len`] interleaved samples into `packet`; returns the
    /// packet's length in bytes.
    pub fn encode(
        &mut self,
        interleaved: &[f32],
        packet: &mut [u8; MAX_PACKET_BYTES],
    ) -> Result<usize, CodecError> {
        if interleaved.len() != self.frame_len() {
            return Err(CodecError::InterleavedFrameSize {
                channels: self.channels,
                got: interleaved.len(),
            });
        }
        self.inner
            .encode_float(interleaved, packet)
            .map_err(CodecError::Encode)
    }
}

/// Turns received Opus packets back into 20 ms of samples, and conceals the ones that never came.
pub struct OpusDecoder {
    inner: opus::Decoder,
}

impl std::fmt::Debug for OpusDecoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("OpusDecoder")
    }
}

impl OpusDecoder {
    pub fn new() -> Result<Self, CodecError> {
        let inner =
            opus::Decoder::new(CALL_RATE_HZ, opus::Channels::Mono).map_err(CodecError::Setup)?;
        Ok(Self { inner })
    }

    /// Decodes one packet into `frame`; returns the samples written (960 for a 20 ms packet).
    pub fn decode(
        &mut self,
        packet: &[u8],
        frame: &mut [f32; FRAME_SAMPLES],
    ) -> Result<usize, CodecError> {
        if packet.is_empty() {
            return self.conceal(frame);
        }
        self.inner
            .decode_float(packet, frame, false)
            .map_err(|source| CodecError::Decode {
                packet_bytes: packet.len(),
                source,
            })
    }

    /// Fills `frame` with libopus's packet-loss concealment: a plausible continuation of what
    /// came before, fading out, instead of a click of silence.
    pub fn conceal(&mut self, frame: &mut [f32; FRAME_SAMPLES]) -> Result<usize, CodecError> {
        self.inner
            .decode_float(&[], frame, false)
            .map_err(|source| CodecError::Decode {
                packet_bytes: 0,
                source,
            })
    }

    /// Rebuilds a lost frame from the in-band FEC data of the packet that followed it.
    pub fn recover(
        &mut self,
        next_packet: &[u8],
        frame: &mut [f32; FRAME_SAMPLES],
    ) -> Result<usize, CodecError> {
        self.inner
            .decode_float(next_packet, frame, true)
            .map_err(|source| CodecError::Decode {
                packet_bytes: next_packet.len(),
                source,
            })
    }
}
