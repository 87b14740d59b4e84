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
//! The DSP that touches no device (resampler, codec, jitter buffer, meters, pre-roll, echo
//! cancellation) is the `walkie-dsp` crate, re-exported here under the same names.

pub mod device;
pub mod engine;
#[cfg(native_streams)]
mod pcm;
#[cfg(native_streams)]
mod pulse;

pub use walkie_dsp::{CALL_RATE_HZ, FRAME_MS, FRAME_SAMPLES};
pub use walkie_dsp::{
    codec, drift, echo, health, jitter, meter, onset, playout, preroll, reply_report, resample,
};
