//! Walkie's audio engine: the microphone to Opus frames, and RTP Opus frames to the speaker.
//!
//! The hard rules, and why:
//! - **Callbacks only move samples.** A device callback that allocates, locks or logs can miss
//!   its deadline and click; so callbacks push to and pull from lock-free rings ([`rtrb`]) and
//!   all conversion happens on a worker with buffers sized up front.
//! - **Playback plays only the live deltas.** The player consumes decoded RTP audio and nothing
//!   else; there is no path that feeds it a saved snapshot (DESIGN.md rule 2).
//! - **DSP is tested with real signals.** Sines, noise and speech go through the real resampler
//!   and the real libopus, and the tests measure what comes out.
//!
//! [`engine`] puts it together: the two worker threads that carry the call's audio between the
//! devices and the transport, obeying the turn controller's audio commands.
//!
//! The modules here that touch no device ([`resample`], [`codec`], [`jitter`], [`meter`],
//! [`preroll`]) are plain state machines: samples and packets in, samples and packets out,
//! time as an argument.

pub mod codec;
pub mod device;
pub mod engine;
pub mod jitter;
pub mod meter;
mod pcm;
pub mod preroll;
mod pulse;
pub mod resample;

/// Opus and the call run at 48 kHz.
pub const CALL_RATE_HZ: u32 = 48_000;
/// One Opus frame: 20 ms.
pub const FRAME_MS: u32 = 20;
/// Samples in one 20 ms mono frame at 48 kHz.
pub const FRAME_SAMPLES: usize = (CALL_RATE_HZ / 1000 * FRAME_MS) as usize;
