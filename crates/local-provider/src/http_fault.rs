//! HTTP-level faults of the calls endpoint (`POST …/realtime/calls`), so a client's handling of
//! each connect outcome can be tested end to end: an error status with an OpenAI-shaped body
//! (and `Retry-After` on request), or a call answered without its `Location` header.

use axum::http::StatusCode;
use serde::{Deserialize, Serialize};

/// What the calls endpoint does wrong on purpose.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum HttpFault {
    /// Answer `status` with `{"error":{"message","type","code","param"}}` as the API shapes it
    /// for that status; `message` replaces the default message; `Retry-After: retry_after_s`
    /// when given. No call is created.
    Status {
        status: u16,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        retry_after_s: Option<u64>,
    },
    /// Answer the call (201 and the SDP answer, the call runs) without a `Location` header.
    NoLocation,
}

impl HttpFault {
    /// From a command-line spec: an error status (`400`–`599`) or `no-location`.
    pub fn parse(spec: &str) -> Result<Self, String> {
        if spec == "no-location" {
            return Ok(HttpFault::NoLocation);
        }
        match spec.parse::<u16>() {
            Ok(status) if (400..=599).contains(&status) => Ok(HttpFault::Status {
                status,
                message: None,
                retry_after_s: None,
            }),
            _ => Err(format!(
                "{spec:?} is not an HTTP error status (400-599) or no-location"
            )),
        }
    }

    /// The status, and the error's `type`, `code` and default `message` as the API sends them
    /// for it (the 403 is OpenAI's region refusal; 5xx are `server_error`).
    pub(crate) fn shape(status: u16) -> (StatusCode, &'static str, String, String) {
        let code = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let (kind, error_code, message) = match code.as_u16() {
            400 => (
                "invalid_request_error",
                "invalid_request",
                "The request is invalid.",
            ),
            401 => (
                "invalid_request_error",
                "invalid_api_key",
                "Incorrect API key provided.",
            ),
            403 => (
                "request_forbidden",
                "unsupported_country_region_territory",
                "Country, region, or territory not supported",
            ),
            404 => (
                "invalid_request_error",
                "model_not_found",
                "The model does not exist or you do not have access to it.",
            ),
            429 => (
                "requests",
                "rate_limit_exceeded",
                "Rate limit reached for requests. Please try again later.",
            ),
            503 => (
                "server_error",
                "service_unavailable",
                "The server is overloaded or not ready yet.",
            ),
            500..=599 => (
                "server_error",
                "server_error",
                "The server had an error while processing your request. Sorry about that!",
            ),
            _ => (
                "invalid_request_error",
                "invalid_request",
                "The request failed.",
            ),
        };
        (code, kind, error_code.to_owned(), message.to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_read_as_statuses_or_no_location_and_nothing_else() {
        assert_eq!(HttpFault::parse("no-location"), Ok(HttpFault::NoLocation));
        assert_eq!(
            HttpFault::parse("429"),
            Ok(HttpFault::Status {
                status: 429,
                message: None,
                retry_after_s: None
            })
        );
        for bad in ["200", "600", "abc", ""] {
            assert!(HttpFault::parse(bad).is_err(), "{bad:?}");
        }
        let read: HttpFault =
            serde_json::from_str(r#"{"kind":"status","status":400,"message":"Bad session"}"#)
                .expect("valid JSON fault");
        assert_eq!(
            read,
            HttpFault::Status {
                status: 400,
                message: Some("Bad session".to_owned()),
                retry_after_s: None
            }
        );
    }
}
