//! The SDP exchange over HTTP(S): `POST {base}/v1/realtime/calls` with the offer as
//! `application/sdp`, the answer in the body, the call id in `Location`; and the hang-up,
//! `POST {base}/v1/realtime/calls/{id}/hangup`.
//!
//! Three variants of the same exchange: OpenAI (Bearer key), Azure (`api-key` header, the
//! deployment as the model) and any compatible base URL (the local provider, a proxy).
//! Plain `http://` is refused except to a loopback address, so a key never travels in clear.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use reqwest::Url;
use reqwest::header::{AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderValue, LOCATION};
use serde::Deserialize;
use walkie_openai::ErrorDetail;

use crate::error::{RtcError, Stage};

/// How requests authenticate.
#[derive(Clone, PartialEq, Eq)]
pub enum Auth {
    /// `Authorization: Bearer <key>` (OpenAI standard or ephemeral `ek_` keys).
    Bearer(String),
    /// `api-key: <key>` (Azure).
    ApiKey(String),
    /// No credentials (a local provider without a token).
    None,
}

impl std::fmt::Debug for Auth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print a key.
        f.write_str(match self {
            Auth::Bearer(_) => "Bearer(…)",
            Auth::ApiKey(_) => "ApiKey(…)",
            Auth::None => "None",
        })
    }
}

/// Where and how to place a call.
#[derive(Clone, Debug)]
pub struct Endpoint {
    base: Url,
    auth: Auth,
    /// Sent as `?model=` on the calls request (Azure: the deployment name).
    model: Option<String>,
}

pub const OPENAI_BASE_URL: &str = "https://api.openai.com";

impl Endpoint {
    /// OpenAI: `https://api.openai.com`, Bearer key.
    pub fn openai(api_key: impl Into<String>) -> Result<Self, RtcError> {
        Self::new(OPENAI_BASE_URL, Auth::Bearer(api_key.into()), None)
    }

    /// Azure OpenAI: `resource` is `https://{name}.openai.azure.com` (the `/openai` path is
    /// added), the key goes in `api-key`, the deployment is sent as the model.
    pub fn azure(
        resource: &str,
        api_key: impl Into<String>,
        deployment: impl Into<String>,
    ) -> Result<Self, RtcError> {
        let base = format!("{}/openai", resource.trim_end_matches('/'));
        Self::new(&base, Auth::ApiKey(api_key.into()), Some(deployment.into()))
    }

    /// Any compatible server (the local provider, a proxy): `base` is the part before
    /// `/v1/realtime/calls`.
    pub fn custom(base: &str, auth: Auth) -> Result<Self, RtcError> {
        Self::new(base, auth, None)
    }

    fn new(base: &str, auth: Auth, model: Option<String>) -> Result<Self, RtcError> {
        let invalid = |reason: &str| RtcError::InvalidUrl {
            url: base.to_owned(),
            reason: reason.to_owned(),
        };
        let mut url = Url::parse(base).map_err(|error| invalid(&error.to_string()))?;
        let host = url.host_str().ok_or_else(|| invalid("no host"))?.to_owned();
        match url.scheme() {
            "https" => {}
            "http" if is_loopback_host(&host) => {}
            "http" => return Err(RtcError::InsecureUrl { host }),
            other => return Err(invalid(&format!("unsupported scheme {other:?}"))),
        }
        if url.query().is_some() || url.fragment().is_some() {
            return Err(invalid("the base URL takes no query or fragment"));
        }
        let path = url.path().trim_end_matches('/').to_owned();
        url.set_path(&path);
        Ok(Self {
            base: url,
            auth,
            model,
        })
    }

    /// Whether the server is on this machine (a loopback address).
    pub fn is_loopback(&self) -> bool {
        self.base.host_str().is_some_and(is_loopback_host)
    }

    /// The server's host as written in the URL.
    pub fn host(&self) -> &str {
        self.base.host_str().unwrap_or_default()
    }

    /// `{base}/v1/realtime/calls` (with `?model=` for Azure).
    pub fn calls_url(&self) -> Url {
        let mut url = self.joined("/v1/realtime/calls");
        if let Some(model) = &self.model {
            url.query_pairs_mut().append_pair("model", model);
        }
        url
    }

    /// `{base}/v1/realtime/calls/{call_id}/hangup`.
    pub fn hangup_url(&self, call_id: &str) -> Url {
        let mut url = self.joined("/v1/realtime/calls");
        url.path_segments_mut()
            .expect("an http(s) URL has path segments")
            .push(call_id)
            .push("hangup");
        url
    }

    fn joined(&self, suffix: &str) -> Url {
        let mut url = self.base.clone();
        let path = format!("{}{suffix}", self.base.path().trim_end_matches('/'));
        url.set_path(&path);
        url
    }

    fn auth_headers(&self) -> Result<HeaderMap, RtcError> {
        let mut headers = HeaderMap::new();
        let bad_key = || RtcError::InvalidUrl {
            url: self.base.to_string(),
            reason: "the API key is not a valid header value".to_owned(),
        };
        match &self.auth {
            Auth::Bearer(key) => {
                let mut value =
                    HeaderValue::from_str(&format!("Bearer {key}")).map_err(|_| bad_key())?;
                value.set_sensitive(true);
                headers.insert(AUTHORIZATION, value);
            }
            Auth::ApiKey(key) => {
                let mut value = HeaderValue::from_str(key).map_err(|_| bad_key())?;
                value.set_sensitive(true);
                headers.insert("api-key", value);
            }
            Auth::None => {}
        }
        Ok(headers)
    }
}

fn is_loopback_host(host: &str) -> bool {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// The provider's answer to an offer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Answer {
    pub sdp: String,
    pub call_id: String,
}

/// An HTTP client for the SDP exchange and the hang-up.
#[derive(Clone)]
pub struct Signalling {
    client: reqwest::Client,
    timeout: Duration,
}

#[derive(Deserialize)]
struct ErrorBody {
    error: ErrorDetail,
}

impl Signalling {
    /// `timeout` bounds each request, connection included.
    pub fn new(timeout: Duration) -> Result<Self, RtcError> {
        use rustls_platform_verifier::BuilderVerifierExt;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut tls = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|error| RtcError::WebRtc(format!("TLS setup: {error}")))?
            .with_platform_verifier()
            .map_err(|error| RtcError::WebRtc(format!("TLS setup: {error}")))?
            .with_no_client_auth();
        tls.alpn_protocols = vec![b"http/1.1".to_vec()];
        let client = reqwest::Client::builder()
            .tls_backend_preconfigured(tls)
            .connect_timeout(timeout)
            .timeout(timeout)
            .build()
            .map_err(|error| RtcError::WebRtc(format!("HTTP client setup: {error}")))?;
        Ok(Self { client, timeout })
    }

    /// Posts the SDP offer; returns the answer and the call id.
    pub async fn post_offer(
        &self,
        endpoint: &Endpoint,
        offer_sdp: &str,
    ) -> Result<Answer, RtcError> {
        let response = self
            .client
            .post(endpoint.calls_url())
            .headers(endpoint.auth_headers()?)
            .header(CONTENT_TYPE, "application/sdp")
            .body(offer_sdp.to_owned())
            .send()
            .await
            .map_err(|error| self.request_error(Stage::Signalling, error))?;
        let status = response.status();
        let location = response
            .headers()
            .get(LOCATION)
            .map(|value| value.to_str().map(str::to_owned));
        let body = response
            .text()
            .await
            .map_err(|error| self.request_error(Stage::Signalling, error))?;
        if !status.is_success() {
            return Err(http_error(status.as_u16(), body));
        }
        let location = match location {
            None => {
                return Err(RtcError::MissingCallId {
                    reason: "no Location header".to_owned(),
                });
            }
            Some(Err(_)) => {
                return Err(RtcError::MissingCallId {
                    reason: "the Location header is not text".to_owned(),
                });
            }
            Some(Ok(location)) => location,
        };
        let call_id = call_id_from_location(&location)?;
        if !body.trim_start().starts_with("v=") {
            return Err(RtcError::BadAnswer(format!(
                "the body of the {status} answer is not SDP"
            )));
        }
        Ok(Answer { sdp: body, call_id })
    }

    /// Ends the call on the server.
    pub async fn hangup(&self, endpoint: &Endpoint, call_id: &str) -> Result<(), RtcError> {
        let response = self
            .client
            .post(endpoint.hangup_url(call_id))
            .headers(endpoint.auth_headers()?)
            .header(reqwest::header::ACCEPT, "*/*")
            .send()
            .await
            .map_err(|error| self.request_error(Stage::Hangup, error))?;
        let status = response.status();
        if status.is_success() {
            return Ok(());
        }
        let body = response.text().await.unwrap_or_default();
        Err(http_error(status.as_u16(), body))
    }

    fn request_error(&self, stage: Stage, error: reqwest::Error) -> RtcError {
        if error.is_timeout() {
            RtcError::Timeout {
                stage,
                after: self.timeout,
            }
        } else {
            // The chain of sources says what failed (DNS, refused, TLS).
            let mut message = error.to_string();
            let mut source = std::error::Error::source(&error);
            while let Some(cause) = source {
                message.push_str(": ");
                message.push_str(&cause.to_string());
                source = cause.source();
            }
            RtcError::Network { stage, message }
        }
    }
}

fn http_error(status: u16, body: String) -> RtcError {
    let error = serde_json::from_str::<ErrorBody>(&body)
        .ok()
        .map(|parsed| Box::new(parsed.error));
    RtcError::Http {
        status,
        error,
        body,
    }
}

/// The call id is the last path segment of `Location` (query ignored), e.g.
/// `/v1/realtime/calls/rtc_u1_9c65…` → `rtc_u1_9c65…`.
pub fn call_id_from_location(location: &str) -> Result<String, RtcError> {
    let path = location.split(['?', '#']).next().unwrap_or_default();
    let segment = path
        .trim_end_matches('/')
        .rsplit('/')
        .next()
        .unwrap_or_default();
    if segment.is_empty() || segment == "calls" || segment.contains(':') {
        return Err(RtcError::MissingCallId {
            reason: format!("no call id in Location {location:?}"),
        });
    }
    Ok(segment.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_http_is_refused_except_to_loopback() {
        assert!(Endpoint::custom("http://127.0.0.1:8080", Auth::None).is_ok());
        assert!(Endpoint::custom("http://localhost:8080", Auth::None).is_ok());
        assert!(Endpoint::custom("http://[::1]:8080", Auth::None).is_ok());
        assert!(matches!(
            Endpoint::custom("http://api.example.com", Auth::None),
            Err(RtcError::InsecureUrl { host }) if host == "api.example.com"
        ));
        assert!(matches!(
            Endpoint::custom("http://10.0.0.1", Auth::None),
            Err(RtcError::InsecureUrl { .. })
        ));
        assert!(Endpoint::custom("https://api.example.com", Auth::None).is_ok());
        assert!(matches!(
            Endpoint::custom("ftp://x", Auth::None),
            Err(RtcError::InvalidUrl { .. })
        ));
        assert!(matches!(
            Endpoint::custom("not a url", Auth::None),
            Err(RtcError::InvalidUrl { .. })
        ));
    }

    #[test]
    fn urls_of_the_three_variants() {
        let openai = Endpoint::openai("sk-x").expect("the OpenAI base URL is valid");
        assert_eq!(
            openai.calls_url().as_str(),
            "https://api.openai.com/v1/realtime/calls"
        );
        assert_eq!(
            openai.hangup_url("rtc_1").as_str(),
            "https://api.openai.com/v1/realtime/calls/rtc_1/hangup"
        );
        let azure = Endpoint::azure("https://res.openai.azure.com/", "k", "my-deploy")
            .expect("the Azure base URL is valid");
        assert_eq!(
            azure.calls_url().as_str(),
            "https://res.openai.azure.com/openai/v1/realtime/calls?model=my-deploy"
        );
        assert_eq!(
            azure.hangup_url("rtc_2").as_str(),
            "https://res.openai.azure.com/openai/v1/realtime/calls/rtc_2/hangup"
        );
        let custom = Endpoint::custom("http://127.0.0.1:9/proxy/", Auth::None)
            .expect("a loopback base URL is valid");
        assert_eq!(
            custom.calls_url().as_str(),
            "http://127.0.0.1:9/proxy/v1/realtime/calls"
        );
    }

    #[test]
    fn headers_carry_the_key_the_variant_wants() {
        let openai = Endpoint::openai("sk-abc").expect("valid");
        let headers = openai
            .auth_headers()
            .expect("a plain key is a valid header");
        assert_eq!(headers[AUTHORIZATION], "Bearer sk-abc");
        let azure = Endpoint::azure("https://r.openai.azure.com", "az-key", "d").expect("valid");
        let headers = azure.auth_headers().expect("valid header");
        assert_eq!(headers["api-key"], "az-key");
        assert!(!headers.contains_key(AUTHORIZATION));
        assert!(
            !format!("{azure:?}").contains("az-key"),
            "keys are never printed"
        );
        let broken = Endpoint::openai("sk\nx").expect("valid URL");
        assert!(broken.auth_headers().is_err());
    }

    #[test]
    fn call_id_is_the_last_segment_of_location() {
        assert_eq!(
            call_id_from_location("/v1/realtime/calls/rtc_u1_9c65").expect("has an id"),
            "rtc_u1_9c65"
        );
        assert_eq!(
            call_id_from_location("https://h/v1/realtime/calls/rtc_x?a=b").expect("has an id"),
            "rtc_x"
        );
        assert!(call_id_from_location("/v1/realtime/calls/").is_err());
        assert!(call_id_from_location("").is_err());
    }

    #[test]
    fn a_json_error_body_is_surfaced() {
        let body = r#"{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key","param":null}}"#;
        let error = http_error(401, body.to_owned());
        let RtcError::Http {
            status,
            error: Some(detail),
            ..
        } = &error
        else {
            panic!("expected an HTTP error with a parsed body, got {error:?}");
        };
        assert_eq!(*status, 401);
        assert_eq!(detail.code.as_deref(), Some("invalid_api_key"));
        assert!(error.to_string().contains("Incorrect API key provided"));
        let plain = http_error(502, "Bad Gateway".to_owned());
        assert!(plain.to_string().contains("502") && plain.to_string().contains("Bad Gateway"));
    }
}
