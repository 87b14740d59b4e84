//! Walkie's audio DSP, without devices: what the call's audio goes through between the
//! microphone's samples and the Opus frames sent, and between the RTP payloads received and the
//! samples played.
//!
//! Why a crate of its own: these are plain state machines — samples and packets in, samples and
//! packets out, time as an argument — so they are tested with real signals in virtual time
//! (tones, noise and speech through the real resampler, the real libopus and the real echo
//! canceller), and they build for every platform. The devices and the two worker threads that
//! feed them live in `walkie-audio`.
//!
//! - [`resample`]: any device rate to and from the call's 48 kHz;
//! - [`codec`]: Opus at 48 kHz mono, 20 ms frames, with in-band FEC;
//! - [`jitter`]: RTP arrival order to playout order, with loss concealment;
//! - [`meter`]: the level meters; [`preroll`]: the warm mic's last moments;
//! - [`playout`]: when the next received frame is decoded, and how much of each reply the
//!   speaker has played;
//! - [`onset`]: the user starting to talk, on what the echo canceller left of the microphone;
//! - [`drift`]: the speaker's and the microphone's clocks against each other, and the echo
//!   reference moved onto the microphone's;
//! - [`echo`]: echo cancellation and noise suppression on the uplink (WebRTC's AEC3, by `sonora`);
//! - [`health`]: when an open device stream is dead, stalled or on the wrong device;
//! - [`reply_report`]: how each reply played on the speaker (dropouts, delay, losses);
//! - `testkit` (feature): test signals and their measures.

pub mod codec;
pub mod drift;
pub mod echo;
pub mod health;
pub mod jitter;
pub mod meter;
pub mod noise;
pub mod onset;
pub mod playout;
pub mod preroll;
pub mod reply_report;
pub mod resample;
#[cfg(feature = "testkit")]
pub mod testkit;

/// Opus and the call run at 48 kHz.
pub const CALL_RATE_HZ: u32 = 48_000;
/// One Opus frame: 20 ms.
pub const FRAME_MS: u32 = 20;
/// Samples in one 20 ms mono frame at 48 kHz.
pub const FRAME_SAMPLES: usize = (CALL_RATE_HZ / 1000 * FRAME_MS) as usize;
