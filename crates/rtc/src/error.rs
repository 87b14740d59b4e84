//! Typed errors of the transport: every way a call can fail is a variant, none is a panic.

use std::time::Duration;

use walkie_openai::ErrorDetail;

/// The stage of a call a timeout happened in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// The HTTP SDP exchange (`POST /v1/realtime/calls`).
    Signalling,
    /// ICE and DTLS: from the answer to a connected transport.
    Connect,
    /// From a connected transport to the `oai-events` data channel open.
    DataChannelOpen,
    /// The HTTP hang-up.
    Hangup,
}

impl std::fmt::Display for Stage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Stage::Signalling => "the SDP exchange",
            Stage::Connect => "connecting (ICE/DTLS)",
            Stage::DataChannelOpen => "opening the data channel",
            Stage::Hangup => "the hang-up",
        })
    }
}

#[derive(Debug, thiserror::Error)]
pub enum RtcError {
    /// The endpoint URL does not parse, or has no host.
    #[error("invalid endpoint URL {url:?}: {reason}")]
    InvalidUrl { url: String, reason: String },
    /// Plain `http://` to anything but a loopback address: the API key would travel in clear.
    #[error("refusing plain http to {host}: only https, or http to a loopback address, is allowed")]
    InsecureUrl { host: String },
    /// The provider answered with a non-2xx status. `error` is its JSON error, when it sent one.
    #[error("the provider answered {status}: {}", describe_http_error(.error, .body))]
    Http {
        status: u16,
        error: Option<Box<ErrorDetail>>,
        body: String,
    },
    /// The request never got an answer (DNS, TCP, TLS, ...).
    #[error("network error during {stage}: {message}")]
    Network { stage: Stage, message: String },
    /// A 2xx answer to the SDP offer without a usable `Location` header.
    #[error("the provider's answer has no call id: {reason}")]
    MissingCallId { reason: String },
    /// The provider's SDP answer was refused by the WebRTC stack.
    #[error("the provider's SDP answer is unusable: {0}")]
    BadAnswer(String),
    /// The SDP offer was refused by the WebRTC stack (answerer side).
    #[error("the SDP offer is unusable: {0}")]
    BadOffer(String),
    #[error("timed out after {after:?} during {stage}")]
    Timeout { stage: Stage, after: Duration },
    /// ICE found no working path, or the connection failed (consent lost, DTLS failed).
    #[error("the connection failed: {0}")]
    ConnectionFailed(String),
    /// The `oai-events` data channel closed.
    #[error("the data channel closed")]
    DataChannelClosed,
    /// A send before the data channel opened.
    #[error("the data channel is not open yet")]
    DataChannelNotOpen,
    /// The peer was closed (hang-up, or its event loop ended).
    #[error("the peer connection is closed")]
    Closed,
    /// A socket could not be bound or used.
    #[error("socket error: {0}")]
    Io(#[from] std::io::Error),
    /// The WebRTC stack refused an operation.
    #[error("WebRTC error: {0}")]
    WebRtc(String),
}

fn describe_http_error(error: &Option<Box<ErrorDetail>>, body: &str) -> String {
    match error {
        Some(detail) => match &detail.code {
            Some(code) => format!("{} ({code}): {}", detail.kind, detail.message),
            None => format!("{}: {}", detail.kind, detail.message),
        },
        None if body.is_empty() => "no body".to_owned(),
        None => {
            let mut shown: String = body.chars().take(200).collect();
            if shown.len() < body.len() {
                shown.push('…');
            }
            shown
        }
    }
}

impl From<rtc::shared::error::Error> for RtcError {
    fn from(error: rtc::shared::error::Error) -> Self {
        RtcError::WebRtc(error.to_string())
    }
}
