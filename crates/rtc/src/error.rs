//! Typed errors of the transport: every way a call can fail is a variant, none is a panic.
//!
//! Each error also says, in one sentence for the window, what the user can do next
//! ([`RtcError::user_sentence`]): the shell shows it as is, so the advice lives next to the
//! failure it explains. Every HTTP outcome of call setup has a variant of its own (400, 401/403,
//! 404, 429 with its `Retry-After`, 5xx, a redirect, any other status), as do timeouts, TLS
//! failures and connection failures.

use std::time::Duration;

/// The stage of a call a failure happened in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// Minting an ephemeral key (`POST /v1/realtime/client_secrets`).
    ClientSecret,
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
            Stage::ClientSecret => "minting an ephemeral key",
            Stage::Signalling => "the SDP exchange",
            Stage::Connect => "connecting (ICE/DTLS)",
            Stage::DataChannelOpen => "opening the data channel",
            Stage::Hangup => "the hang-up",
        })
    }
}

/// A non-2xx HTTP answer: who answered, to what, and what it said.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HttpFailure {
    /// How the window names the provider ("OpenAI", "Azure OpenAI", a host).
    pub provider: String,
    pub stage: Stage,
    pub status: u16,
    /// `error.code` of the JSON error body, when there was one.
    pub code: Option<String>,
    /// `error.message` of the JSON error body; else the body's start (at most 200 characters);
    /// empty when there was no body.
    pub message: String,
}

impl std::fmt::Display for HttpFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} answered {} during {}",
            self.provider, self.status, self.stage
        )?;
        match (&self.code, self.message.is_empty()) {
            (Some(code), _) => write!(f, " ({code}): {}", self.message),
            (None, false) => write!(f, ": {}", self.message),
            (None, true) => f.write_str(" with no body"),
        }
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
    /// The base URL carries a user name or password (`https://user:pass@host`): credentials
    /// go in the key field, not in an address that is shown and logged. Nothing was sent.
    #[error("refusing a base URL with a user name or password in it (for {host})")]
    CredentialsInUrl { host: String },
    /// The API key cannot be sent as an HTTP header (a line break, a non-ASCII character).
    #[error("the API key is not a valid HTTP header value")]
    InvalidKey,
    /// 400: the provider refused the request; `message` is its own explanation.
    #[error("bad request: {0}")]
    BadRequest(HttpFailure),
    /// 401 or 403: the key is wrong, revoked, or not allowed to use the API.
    #[error("the key was refused: {0}")]
    KeyRefused(HttpFailure),
    /// 404: no such model (OpenAI) or deployment (Azure), or a wrong base URL.
    #[error("not found: {0}")]
    NotFound(HttpFailure),
    /// 429: too many requests or no quota left. `retry_after` is the `Retry-After` header
    /// (seconds or an HTTP date), as a delay from when the answer arrived.
    #[error("rate limited{}: {failure}", retry_after.map(|after| format!(" (retry after {} s)", after.as_secs())).unwrap_or_default())]
    RateLimited {
        failure: HttpFailure,
        retry_after: Option<Duration>,
    },
    /// 5xx: the provider failed.
    #[error("server error: {0}")]
    ServerError(HttpFailure),
    /// A 3xx: requests are never redirected (a key must not follow a redirect to another host).
    #[error("redirected to {}: {failure}", location.as_deref().unwrap_or("nowhere"))]
    Redirected {
        failure: HttpFailure,
        location: Option<String>,
    },
    /// Any other non-2xx status.
    #[error("{0}")]
    Http(HttpFailure),
    /// The TLS handshake failed (certificate, protocol): nothing was sent. `message` is the
    /// whole chain of causes (for the log), `cause` the innermost one (for the window).
    #[error("TLS failed during {stage}: {message}")]
    Tls {
        stage: Stage,
        message: String,
        cause: String,
    },
    /// The request never got an answer (DNS, connection refused or reset). `message` is the
    /// whole chain of causes (for the log), `cause` the innermost one (for the window).
    #[error("network error during {stage}: {message}")]
    Network {
        stage: Stage,
        message: String,
        cause: String,
    },
    /// The session is too large to travel on the data channel (see
    /// [`crate::call::MAX_SESSION_BYTES`]); `field` is what makes it so. Nothing was dialled.
    #[error(
        "the session is {size_bytes} bytes, more than the {limit_bytes} a data-channel message holds (mostly its {field})"
    )]
    SessionTooLarge {
        field: &'static str,
        size_bytes: usize,
        limit_bytes: usize,
    },
    /// A successful answer's body was longer than
    /// [`crate::signalling::MAX_RESPONSE_BYTES`]; the rest was not read.
    #[error("the answer during {stage} is longer than {limit_bytes} bytes")]
    ResponseTooLarge { stage: Stage, limit_bytes: usize },
    /// The answer to `client_secrets` carried no usable ephemeral key.
    #[error("{provider} returned no usable ephemeral key: {reason}")]
    BadClientSecret { provider: String, reason: String },
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

impl RtcError {
    /// One sentence for the window: what went wrong, and what to do next.
    pub fn user_sentence(&self) -> String {
        match self {
            RtcError::InvalidUrl { url, reason } => {
                format!(
                    "The provider address {url:?} is not usable ({reason}): correct it in Settings."
                )
            }
            RtcError::InsecureUrl { host } => format!(
                "Walkie does not send a key over plain http to {host}: use an https address in Settings."
            ),
            RtcError::CredentialsInUrl { host } => format!(
                "The provider address for {host} contains a user name or password: remove the part before @ in Settings and put the key in the API key field."
            ),
            RtcError::InvalidKey => {
                "The API key contains characters a key cannot have: paste it again in Settings."
                    .to_owned()
            }
            RtcError::BadRequest(failure) => format!(
                "{} refused the call: {} Check the model, voice and instructions in Settings.",
                failure.provider,
                sentence(&failure.message, "no reason given.")
            ),
            RtcError::KeyRefused(failure)
                if failure.code.as_deref() == Some("unsupported_country_region_territory") =>
            {
                format!(
                    "{} does not serve this country or region{}: use another provider in Settings.",
                    failure.provider,
                    in_parentheses(&failure.message)
                )
            }
            RtcError::KeyRefused(failure) if failure.status == 403 => format!(
                "{} refused the API key (403, not allowed): use a key with access to the Realtime API in Settings.",
                failure.provider
            ),
            RtcError::KeyRefused(failure) => format!(
                "{} refused the API key: add a valid key in Settings.",
                failure.provider
            ),
            RtcError::NotFound(failure) => format!(
                "{} knows no such model or deployment{}: check the model (for Azure, the deployment name) and the address in Settings.",
                failure.provider,
                in_parentheses(&failure.message)
            ),
            RtcError::RateLimited {
                failure,
                retry_after,
            } if failure.code.as_deref() == Some("insufficient_quota") => format!(
                "{} says the account has no quota left{}: check its plan and billing, then reconnect.",
                failure.provider,
                retry_after
                    .map(|after| format!(" (retry after {})", seconds(after)))
                    .unwrap_or_default()
            ),
            RtcError::RateLimited {
                failure,
                retry_after: Some(after),
            } => format!(
                "{} is rate-limiting this key: reconnect in {}.",
                failure.provider,
                seconds(*after)
            ),
            RtcError::RateLimited { failure, .. } => format!(
                "{} is rate-limiting this key: wait a minute, then reconnect.",
                failure.provider
            ),
            RtcError::ServerError(failure) => format!(
                "{} had a server error ({}): reconnect in a moment; if it persists, check the provider's status page.",
                failure.provider, failure.status
            ),
            RtcError::Redirected { failure, location } => format!(
                "{} answered with a redirect ({}{}), which Walkie does not follow: correct the address in Settings.",
                failure.provider,
                failure.status,
                location
                    .as_deref()
                    .map(|to| format!(" to {to}"))
                    .unwrap_or_default()
            ),
            RtcError::Http(failure) => format!(
                "{} answered {} during {}{}: check the provider settings, then reconnect.",
                failure.provider,
                failure.status,
                failure.stage,
                in_parentheses(&failure.message)
            ),
            RtcError::Tls { cause, .. } => format!(
                "The secure connection to the provider failed ({cause}): check the address, the system clock and any proxy, then reconnect."
            ),
            RtcError::Network { cause, .. } => format!(
                "The provider could not be reached ({cause}): check the network connection and the address in Settings, then reconnect."
            ),
            RtcError::SessionTooLarge {
                field,
                size_bytes,
                limit_bytes,
            } => format!(
                "{} too long for a call ({} KiB; at most {} KiB fit in one message): shorten {} in Settings.",
                match *field {
                    "session" => "The session is",
                    "tools" => "The tools are",
                    _ => "The instructions are",
                },
                size_bytes.div_ceil(1024),
                limit_bytes / 1024,
                if *field == "session" { "it" } else { "them" }
            ),
            RtcError::ResponseTooLarge { stage, limit_bytes } => format!(
                "The provider's answer during {stage} was larger than {} KiB, which no realtime provider sends: check the address in Settings, then reconnect.",
                limit_bytes / 1024
            ),
            RtcError::BadClientSecret { provider, reason } => format!(
                "{provider} did not hand out a usable session key ({reason}): reconnect; if it persists, check the provider settings."
            ),
            RtcError::Timeout { stage, after } => match stage {
                Stage::ClientSecret | Stage::Signalling | Stage::Hangup => format!(
                    "The provider did not answer within {} ({stage}): check the network connection, then reconnect.",
                    seconds(*after)
                ),
                Stage::Connect | Stage::DataChannelOpen => format!(
                    "The audio connection did not come up within {} ({stage}): a firewall may block UDP; check the network, then reconnect.",
                    seconds(*after)
                ),
            },
            RtcError::ConnectionFailed(reason) => format!(
                "The audio connection failed ({reason}): check the network (a firewall may block UDP), then reconnect."
            ),
            RtcError::BadAnswer(reason) => format!(
                "The provider's answer could not be used ({reason}): reconnect; if it persists, the provider is not compatible."
            ),
            RtcError::BadOffer(reason) => {
                format!("The call offer could not be used ({reason}): reconnect.")
            }
            RtcError::DataChannelClosed => "The provider closed the call: reconnect.".to_owned(),
            RtcError::DataChannelNotOpen | RtcError::Closed => {
                "The call is closed: reconnect.".to_owned()
            }
            RtcError::Io(error) => format!(
                "A network socket could not be opened ({error}): check the network, then reconnect."
            ),
            RtcError::WebRtc(reason) => {
                format!("The WebRTC connection failed ({reason}): reconnect.")
            }
        }
    }

    /// Whether calling again may work without the user changing anything: a network failure
    /// or timeout, the provider's 5xx or rate limit (not an empty quota), a connection or data
    /// channel that failed after the answer. Everything else (the key, the address, the
    /// request, an empty quota) fails the same way until the settings change.
    pub fn is_transient(&self) -> bool {
        match self {
            RtcError::RateLimited { failure, .. } => {
                failure.code.as_deref() != Some("insufficient_quota")
            }
            RtcError::ServerError(_)
            | RtcError::Network { .. }
            | RtcError::Timeout { .. }
            | RtcError::ConnectionFailed(_)
            | RtcError::DataChannelClosed
            | RtcError::DataChannelNotOpen
            | RtcError::Closed
            | RtcError::Io(_) => true,
            RtcError::InvalidUrl { .. }
            | RtcError::InsecureUrl { .. }
            | RtcError::CredentialsInUrl { .. }
            | RtcError::ResponseTooLarge { .. }
            | RtcError::InvalidKey
            | RtcError::BadRequest(_)
            | RtcError::KeyRefused(_)
            | RtcError::NotFound(_)
            | RtcError::Redirected { .. }
            | RtcError::Http(_)
            | RtcError::Tls { .. }
            | RtcError::SessionTooLarge { .. }
            | RtcError::BadClientSecret { .. }
            | RtcError::BadAnswer(_)
            | RtcError::BadOffer(_)
            | RtcError::WebRtc(_) => false,
        }
    }

    /// How long the provider asked to wait before trying again (a 429's `Retry-After`).
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            RtcError::RateLimited { retry_after, .. } => *retry_after,
            _ => None,
        }
    }
}

/// `text` as the end of a sentence: with a final full stop, or `fallback` when empty.
fn sentence(text: &str, fallback: &str) -> String {
    let text = text.trim();
    if text.is_empty() {
        fallback.to_owned()
    } else if text.ends_with(['.', '!', '?']) {
        text.to_owned()
    } else {
        format!("{text}.")
    }
}

fn in_parentheses(text: &str) -> String {
    let text = text.trim().trim_end_matches('.');
    if text.is_empty() {
        String::new()
    } else {
        format!(" ({text})")
    }
}

/// "1 second", "42 seconds", "3 minutes" (rounded up).
fn seconds(after: Duration) -> String {
    let secs = after.as_secs() + u64::from(after.subsec_nanos() > 0);
    match secs {
        0 => "a moment".to_owned(),
        1 => "1 second".to_owned(),
        2..=119 => format!("{secs} seconds"),
        _ => format!("{} minutes", secs.div_ceil(60)),
    }
}

impl From<rtc::shared::error::Error> for RtcError {
    fn from(error: rtc::shared::error::Error) -> Self {
        RtcError::WebRtc(error.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answered(status: u16, code: Option<&str>) -> HttpFailure {
        HttpFailure {
            provider: "OpenAI".to_owned(),
            stage: Stage::Signalling,
            status,
            code: code.map(str::to_owned),
            message: String::new(),
        }
    }

    #[test]
    fn only_failures_that_may_pass_are_worth_calling_again() {
        let busy = RtcError::RateLimited {
            failure: answered(429, Some("rate_limit_exceeded")),
            retry_after: None,
        };
        let broke = RtcError::RateLimited {
            failure: answered(429, Some("insufficient_quota")),
            retry_after: None,
        };
        assert!(busy.is_transient());
        assert!(!broke.is_transient());
        assert!(RtcError::ServerError(answered(503, None)).is_transient());
        assert!(RtcError::ConnectionFailed("ICE failed".to_owned()).is_transient());
        assert!(!RtcError::KeyRefused(answered(401, None)).is_transient());
        assert!(!RtcError::KeyRefused(answered(403, None)).is_transient());
        assert!(!RtcError::NotFound(answered(404, None)).is_transient());
    }
}
