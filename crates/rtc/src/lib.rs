//! Walkie's WebRTC transport driver: a peer on the sans-IO `rtc` core (webrtc-rs 0.21) driven
//! by this crate's own event loop, the SDP exchange over HTTP(S), and a client [`Call`].
//!
//! The driver translates between the network and typed events only — client events out as
//! JSON on the `oai-events` data channel, server events in, Opus frames both ways as RTP. The
//! turn logic lives in the session, the protocol in `walkie-openai`.
//!
//! Layers, each usable alone:
//! - [`peer`]: one peer connection and its loop. The loop flushes the core's writes after
//!   every event, which is what opens the data channel as soon as ICE connects. Used by the
//!   client ([`peer::offer`]) and by the local provider ([`peer::answer`]).
//! - [`signalling`]: call setup in the documented forms (multipart with the session, or an
//!   ephemeral key minted at `client_secrets` then the raw offer) and the hang-up; OpenAI,
//!   Azure and custom base URLs; no redirects; plain http only to loopback.
//! - [`call`]: offer → SDP exchange → open data channel, as one typed, time-bounded step.

pub mod call;
pub mod error;
pub mod peer;
pub mod signalling;

pub use call::{
    Call, CallConfig, CallEvent, CallSender, CallTimings, EndReason, MAX_SESSION_BYTES,
    check_session_size,
};
pub use error::{HttpFailure, RtcError, Stage};
pub use peer::{
    DATA_CHANNEL_LABEL, OPUS_CLOCK_RATE, ParsedAnswer, Peer, PeerConfig, PeerEvent, PeerHandle,
    PeerStats, PendingOffer, RtpAudio, parse_answer,
};
pub use signalling::{Answer, Auth, CallForm, EPHEMERAL_KEY_PREFIX, Endpoint, Signalling};
