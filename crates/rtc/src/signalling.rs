//! Call setup over HTTP(S), as the Realtime API documents it, and the hang-up; and a Live API
//! (GPT-Live) call's: `POST {base}/v1/live/sessions` with a JSON body (the session and the
//! offer), the answer SDP and the session's id in a JSON answer, the hang-up on
//! `/v1/live/sessions/{id}/hangup` ([`Signalling::post_live_offer`]).
//!
//! `POST {base}/v1/realtime/calls` has two documented forms (reference §1.3):
//! - with a standard key, `multipart/form-data`: the offer in part `sdp`
//!   (`application/sdp`) and the session in part `session` (`application/json`, a
//!   `RealtimeSessionCreateRequest`), so the call starts configured, not on server defaults;
//! - with an ephemeral key (`ek_…`), the raw offer as `application/sdp`: the session came with
//!   the key, minted by `POST {base}/v1/realtime/client_secrets` (`{"session":{…}}`).
//!
//! OpenAI and any other base URL use the multipart form (or, asked for, mint a key first);
//! Azure always mints with its `api-key` (the deployment as `session.model`) and then posts the
//! raw offer with the minted token: no `api-version`, no `?model=`. The answer is the body, the
//! call id the last segment of `Location`; a missing `Location` only turns off the REST
//! hang-up. Requests never follow redirects (a key must not travel to another host), and plain
//! `http://` is refused except to a loopback address, so a key never travels in clear. A base
//! URL with a user name or password in it (`https://user:pass@host`) is refused: credentials
//! belong in the key field, not in an address that is shown and logged. A loopback server is
//! reached directly, never through the proxy the environment names (`HTTP_PROXY` and the like
//! still apply to every other host). An answer's body is read up to [`MAX_RESPONSE_BYTES`].

use std::net::IpAddr;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use reqwest::Url;
use reqwest::header::{AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderValue, LOCATION, RETRY_AFTER};
use reqwest::multipart::{Form, Part};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use walkie_openai::live::{
    LiveCreateRequest, LiveCreateResponse, LiveSessionConfig, WebRtcTransport,
};
use walkie_openai::{SessionConfig, SessionKind};

use crate::error::{HttpFailure, RtcError, Stage};

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

/// Which documented form of call creation an endpoint uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CallForm {
    /// `multipart/form-data` with the `sdp` and `session` parts, authenticated with the
    /// endpoint's key (a standard key, or none).
    Multipart,
    /// Mint an ephemeral key at `client_secrets` with the session (authenticated with the
    /// endpoint's key), then post the raw offer with `Authorization: Bearer <minted key>`.
    EphemeralKey,
    /// The raw offer as `application/sdp` with the endpoint's key: an ephemeral key (`ek_…`),
    /// whose session was fixed when it was minted, or a server's key where the server takes
    /// only this form. `session.update` configures the session once the channel opens (never
    /// the model: that belongs to call creation, so the server's own model answers).
    RawSdp,
    /// A compatible server's: the multipart form, and the raw offer when the server refuses
    /// the multipart form with 415 (then the raw offer from the start, for that address, for
    /// the rest of the run).
    Automatic,
    /// A Live API session's: `POST /v1/live/sessions` with a JSON body (the session and the
    /// offer). What a Live call was placed with, never an endpoint's choice.
    Live,
}

/// The addresses that refused the multipart form with 415 in this run: they get the raw offer
/// from the start. Process-wide, as the calls of one run are placed by several tasks (the
/// conversation, Settings' Test connection) that should not each pay the refused request.
fn raw_only_addresses() -> &'static std::sync::Mutex<std::collections::BTreeSet<String>> {
    static ADDRESSES: std::sync::OnceLock<std::sync::Mutex<std::collections::BTreeSet<String>>> =
        std::sync::OnceLock::new();
    ADDRESSES.get_or_init(Default::default)
}

/// The prefix of OpenAI's ephemeral keys (as the Agents SDK recognises them).
pub const EPHEMERAL_KEY_PREFIX: &str = "ek_";

/// Where and how to place a call.
#[derive(Clone, Debug)]
pub struct Endpoint {
    base: Url,
    auth: Auth,
    form: CallForm,
    /// Azure: the deployment, always sent as `session.model`.
    deployment: Option<String>,
    /// How the window names the provider.
    name: String,
}

pub const OPENAI_BASE_URL: &str = "https://api.openai.com";

impl Endpoint {
    /// OpenAI: `https://api.openai.com`, Bearer key. A standard key places the call in the
    /// multipart form; an ephemeral key (`ek_…`) posts the raw offer.
    pub fn openai(api_key: impl Into<String>) -> Result<Self, RtcError> {
        let auth = Auth::Bearer(api_key.into());
        let form = form_for(&auth);
        Self::new(OPENAI_BASE_URL, auth, form, None, "OpenAI")
    }

    /// Azure OpenAI (GA): `resource` is `https://{name}.openai.azure.com` (the `/openai` path
    /// is added). The key (`api-key`) mints an ephemeral key whose session names the
    /// deployment as its model; the offer goes with the minted key.
    pub fn azure(
        resource: &str,
        api_key: impl Into<String>,
        deployment: impl Into<String>,
    ) -> Result<Self, RtcError> {
        let base = format!("{}/openai", resource.trim().trim_end_matches('/'));
        Self::new(
            &base,
            Auth::ApiKey(api_key.into()),
            CallForm::EphemeralKey,
            Some(deployment.into()),
            "Azure OpenAI",
        )
    }

    /// Any compatible server (the local provider, a proxy): `base` is the part before
    /// `/v1/realtime/calls`. The raw offer with an `ek_` key; else multipart, or the raw offer
    /// where the server refuses multipart with 415 ([`CallForm::Automatic`]).
    pub fn custom(base: &str, auth: Auth) -> Result<Self, RtcError> {
        let form = match form_for(&auth) {
            CallForm::Multipart => CallForm::Automatic,
            other => other,
        };
        let mut endpoint = Self::new(base, auth, form, None, "")?;
        endpoint.name = endpoint.host().to_owned();
        Ok(endpoint)
    }

    /// Places calls in `form` only: a setting that names the form a server takes.
    pub fn with_form(mut self, form: CallForm) -> Self {
        self.form = form;
        self
    }

    /// Mints an ephemeral key with the endpoint's key before each call, and places the call
    /// with it (the raw-SDP form). Azure always does.
    pub fn with_ephemeral_key(mut self) -> Self {
        self.form = CallForm::EphemeralKey;
        self
    }

    /// How the window names the provider in errors ("the local provider").
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    fn new(
        base: &str,
        auth: Auth,
        form: CallForm,
        deployment: Option<String>,
        name: &str,
    ) -> Result<Self, RtcError> {
        let invalid = |reason: &str| RtcError::InvalidUrl {
            url: base.to_owned(),
            reason: reason.to_owned(),
        };
        let mut url = Url::parse(base).map_err(|error| invalid(&error.to_string()))?;
        let host = url.host_str().ok_or_else(|| invalid("no host"))?.to_owned();
        if !url.username().is_empty() || url.password().is_some() {
            return Err(RtcError::CredentialsInUrl { host });
        }
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
            form,
            deployment,
            name: name.to_owned(),
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

    /// How the window names the provider.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The form call creation takes.
    pub fn form(&self) -> CallForm {
        self.form
    }

    /// `{base}/v1/realtime/calls`.
    pub fn calls_url(&self) -> Url {
        self.joined("/v1/realtime/calls")
    }

    /// `{base}/v1/realtime/client_secrets`.
    pub fn client_secrets_url(&self) -> Url {
        self.joined("/v1/realtime/client_secrets")
    }

    /// `{base}/v1/realtime/calls/{call_id}/hangup`.
    pub fn hangup_url(&self, call_id: &str) -> Url {
        let mut url = self.calls_url();
        url.path_segments_mut()
            .expect("an http(s) URL has path segments")
            .push(call_id)
            .push("hangup");
        url
    }

    /// `{base}/v1/live/sessions`: where a Live API call is placed.
    pub fn live_sessions_url(&self) -> Url {
        self.joined("/v1/live/sessions")
    }

    /// `{base}/v1/live/sessions/{session_id}/hangup`.
    pub fn live_hangup_url(&self, session_id: &str) -> Url {
        let mut url = self.live_sessions_url();
        url.path_segments_mut()
            .expect("an http(s) URL has path segments")
            .push(session_id)
            .push("hangup");
        url
    }

    /// The session sent with the call: `type` is `realtime`, and for Azure the model is the
    /// deployment, whatever the settings say.
    pub fn call_session(&self, session: &SessionConfig) -> SessionConfig {
        let mut session = session.clone();
        session.kind = SessionKind::Realtime;
        if let Some(deployment) = &self.deployment {
            session.model = Some(deployment.clone());
        }
        session
    }

    fn joined(&self, suffix: &str) -> Url {
        let mut url = self.base.clone();
        let path = format!("{}{suffix}", self.base.path().trim_end_matches('/'));
        url.set_path(&path);
        url
    }

    fn auth_headers(&self) -> Result<HeaderMap, RtcError> {
        let mut headers = HeaderMap::new();
        match &self.auth {
            Auth::Bearer(key) => {
                headers.insert(AUTHORIZATION, bearer(key)?);
            }
            Auth::ApiKey(key) => {
                let mut value = HeaderValue::from_str(key).map_err(|_| RtcError::InvalidKey)?;
                value.set_sensitive(true);
                headers.insert("api-key", value);
            }
            Auth::None => {}
        }
        Ok(headers)
    }
}

fn form_for(auth: &Auth) -> CallForm {
    match auth {
        Auth::Bearer(key) if key.starts_with(EPHEMERAL_KEY_PREFIX) => CallForm::RawSdp,
        _ => CallForm::Multipart,
    }
}

fn bearer(key: &str) -> Result<HeaderValue, RtcError> {
    let mut value =
        HeaderValue::from_str(&format!("Bearer {key}")).map_err(|_| RtcError::InvalidKey)?;
    value.set_sensitive(true);
    Ok(value)
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
    /// From `Location`; `None` when the provider sent no usable one (the call works, but it
    /// cannot be hung up over REST).
    pub call_id: Option<String>,
    /// The form the call was placed in (never [`CallForm::Automatic`]).
    pub form: CallForm,
}

/// The most of an HTTP answer's body that is read (the SDP answer, the minted key, an error's
/// explanation): a real one is a few KiB. A successful answer with a longer body is refused
/// ([`RtcError::ResponseTooLarge`]); an error answer's explanation is cut there.
pub const MAX_RESPONSE_BYTES: usize = 1024 * 1024;

/// An HTTP client for call setup and the hang-up.
#[derive(Clone)]
pub struct Signalling {
    /// For every host but this machine: the environment's proxy applies.
    client: reqwest::Client,
    /// For a loopback server: never through a proxy.
    loopback: reqwest::Client,
    timeout: Duration,
}

/// The JSON error body, read leniently: OpenAI sends `type`, `code`, `message`, `param`;
/// Azure's may lack `type` and carry a code of another shape.
#[derive(Deserialize)]
struct ErrorBody {
    error: ErrorFields,
}

#[derive(Deserialize)]
struct ErrorFields {
    #[serde(default)]
    message: Option<String>,
    #[serde(default)]
    code: Option<Value>,
}

#[derive(Serialize)]
struct ClientSecretRequest<'a> {
    session: &'a SessionConfig,
}

#[derive(Deserialize)]
struct ClientSecret {
    #[serde(default)]
    value: Option<String>,
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
        let builder = || {
            reqwest::Client::builder()
                .tls_backend_preconfigured(tls.clone())
                .connect_timeout(timeout)
                .timeout(timeout)
                .redirect(reqwest::redirect::Policy::none())
        };
        let setup_error =
            |error: reqwest::Error| RtcError::WebRtc(format!("HTTP client setup: {error}"));
        let client = builder().build().map_err(setup_error)?;
        let loopback = builder().no_proxy().build().map_err(setup_error)?;
        Ok(Self {
            client,
            loopback,
            timeout,
        })
    }

    /// The client for `endpoint`: a loopback server is reached without a proxy.
    fn client_for(&self, endpoint: &Endpoint) -> &reqwest::Client {
        if endpoint.is_loopback() {
            &self.loopback
        } else {
            &self.client
        }
    }

    /// Places the call in the endpoint's form: posts the SDP offer (with `session`, or with a
    /// key minted for it, or alone) and returns the answer, the call id and the form answered.
    pub async fn post_offer(
        &self,
        endpoint: &Endpoint,
        offer_sdp: &str,
        session: &SessionConfig,
    ) -> Result<Answer, RtcError> {
        let session = endpoint.call_session(session);
        let address = endpoint.base.as_str().to_owned();
        let form = match endpoint.form {
            CallForm::Automatic
                if raw_only_addresses()
                    .lock()
                    .is_ok_and(|raw| raw.contains(&address)) =>
            {
                CallForm::RawSdp
            }
            CallForm::Automatic => CallForm::Multipart,
            form => form,
        };
        let answered = self
            .post_offer_as(endpoint, form, offer_sdp, &session)
            .await;
        match answered {
            Err(RtcError::Http(failure))
                if failure.status == 415
                    && form == CallForm::Multipart
                    && endpoint.form == CallForm::Automatic =>
            {
                log::info!(
                    "{} refused the multipart call form (415: {}): calling again with the raw offer, \
                     and for the rest of this run; the session is configured once the channel opens",
                    endpoint.name(),
                    failure.message
                );
                if let Ok(mut raw) = raw_only_addresses().lock() {
                    raw.insert(address);
                }
                self.post_offer_as(endpoint, CallForm::RawSdp, offer_sdp, &session)
                    .await
            }
            other => other,
        }
    }

    async fn post_offer_as(
        &self,
        endpoint: &Endpoint,
        form: CallForm,
        offer_sdp: &str,
        session: &SessionConfig,
    ) -> Result<Answer, RtcError> {
        let request = self.client_for(endpoint).post(endpoint.calls_url());
        let request = match form {
            CallForm::Live => {
                return Err(RtcError::BadOffer(
                    "a Live API session is placed at /v1/live/sessions, not /v1/realtime/calls"
                        .to_owned(),
                ));
            }
            CallForm::Multipart | CallForm::Automatic => {
                let session_json = serde_json::to_string(session)
                    .map_err(|error| RtcError::BadOffer(format!("the session: {error}")))?;
                let form = Form::new()
                    .part(
                        "sdp",
                        Part::text(offer_sdp.to_owned())
                            .mime_str("application/sdp")
                            .expect("a constant MIME type parses"),
                    )
                    .part(
                        "session",
                        Part::text(session_json)
                            .mime_str("application/json")
                            .expect("a constant MIME type parses"),
                    );
                request.headers(endpoint.auth_headers()?).multipart(form)
            }
            CallForm::EphemeralKey => {
                let key = self.mint_key(endpoint, session).await?;
                request
                    .header(AUTHORIZATION, bearer(&key)?)
                    .header(CONTENT_TYPE, "application/sdp")
                    .body(offer_sdp.to_owned())
            }
            CallForm::RawSdp => request
                .headers(endpoint.auth_headers()?)
                .header(CONTENT_TYPE, "application/sdp")
                .body(offer_sdp.to_owned()),
        };
        let (status, headers, body) = self.exchange(endpoint, request, Stage::Signalling).await?;
        if !body.trim_start().starts_with("v=") {
            return Err(RtcError::BadAnswer(format!(
                "the body of the {status} answer is not SDP"
            )));
        }
        let call_id = headers
            .get(LOCATION)
            .and_then(|value| value.to_str().ok())
            .and_then(call_id_from_location);
        if call_id.is_none() {
            log::warn!(
                "{} answered without a usable Location header: the call cannot be hung up over REST",
                endpoint.name()
            );
        }
        Ok(Answer {
            sdp: body,
            call_id,
            form,
        })
    }

    /// Places a Live API call: `POST {base}/v1/live/sessions` with the JSON body
    /// `{"session": …, "transport": {"type": "webrtc", "sdp": <offer>}}`, authenticated with the
    /// endpoint's key. The answer's `transport.sdp` is the SDP answer and its `session.id` the
    /// call's id (for the hang-up). Azure has no Live API: its endpoint is refused before
    /// anything is sent.
    pub async fn post_live_offer(
        &self,
        endpoint: &Endpoint,
        offer_sdp: &str,
        session: &LiveSessionConfig,
    ) -> Result<Answer, RtcError> {
        if endpoint.deployment.is_some() {
            return Err(RtcError::BadOffer(format!(
                "{} has no Live API: choose OpenAI or a compatible server for GPT-Live",
                endpoint.name()
            )));
        }
        let body = serde_json::to_string(&LiveCreateRequest {
            session: session.clone(),
            transport: WebRtcTransport {
                sdp: offer_sdp.to_owned(),
            },
        })
        .map_err(|error| RtcError::BadOffer(format!("the session: {error}")))?;
        let request = self
            .client_for(endpoint)
            .post(endpoint.live_sessions_url())
            .headers(endpoint.auth_headers()?)
            .header(CONTENT_TYPE, "application/json")
            .body(body);
        let (status, _, body) = self.exchange(endpoint, request, Stage::Signalling).await?;
        let created: LiveCreateResponse = serde_json::from_str(&body).map_err(|error| {
            RtcError::BadAnswer(format!(
                "the body of the {status} answer is not a Live session: {error}"
            ))
        })?;
        if !created.transport.sdp.trim_start().starts_with("v=") {
            return Err(RtcError::BadAnswer(format!(
                "the {status} answer's transport.sdp is not SDP"
            )));
        }
        let session_id = Some(created.session.id).filter(|id| !id.trim().is_empty());
        Ok(Answer {
            sdp: created.transport.sdp,
            call_id: session_id,
            form: CallForm::Live,
        })
    }

    /// `POST {base}/v1/realtime/client_secrets` with `{"session":{…}}`: the ephemeral key's
    /// `value`.
    async fn mint_key(
        &self,
        endpoint: &Endpoint,
        session: &SessionConfig,
    ) -> Result<String, RtcError> {
        let body = serde_json::to_string(&ClientSecretRequest { session })
            .map_err(|error| RtcError::BadOffer(format!("the session: {error}")))?;
        let request = self
            .client_for(endpoint)
            .post(endpoint.client_secrets_url())
            .headers(endpoint.auth_headers()?)
            .header(CONTENT_TYPE, "application/json")
            .body(body);
        let (_, _, text) = self
            .exchange(endpoint, request, Stage::ClientSecret)
            .await?;
        let bad = |reason: &str| RtcError::BadClientSecret {
            provider: endpoint.name().to_owned(),
            reason: reason.to_owned(),
        };
        let secret: ClientSecret =
            serde_json::from_str(&text).map_err(|_| bad("the answer is not the expected JSON"))?;
        match secret.value {
            Some(value) if !value.trim().is_empty() => Ok(value),
            _ => Err(bad("the answer has no `value`")),
        }
    }

    /// Sends `request` and reads the answer: a success's status, headers and whole body, or the
    /// provider's refusal as the error of `stage`.
    async fn exchange(
        &self,
        endpoint: &Endpoint,
        request: reqwest::RequestBuilder,
        stage: Stage,
    ) -> Result<(reqwest::StatusCode, HeaderMap, String), RtcError> {
        let response = request
            .send()
            .await
            .map_err(|error| self.request_error(stage, error))?;
        let status = response.status();
        let headers = response.headers().clone();
        let body = self.read_body(response, stage).await?;
        if !status.is_success() {
            return Err(http_error(
                endpoint.name(),
                stage,
                status.as_u16(),
                &headers,
                &body.text,
                SystemTime::now(),
            ));
        }
        Ok((status, headers, body.whole(stage)?))
    }

    /// Ends the call on the server.
    pub async fn hangup(&self, endpoint: &Endpoint, call_id: &str) -> Result<(), RtcError> {
        self.hangup_at(endpoint, endpoint.hangup_url(call_id)).await
    }

    /// Ends a Live API session on the server.
    pub async fn hangup_live(&self, endpoint: &Endpoint, session_id: &str) -> Result<(), RtcError> {
        self.hangup_at(endpoint, endpoint.live_hangup_url(session_id))
            .await
    }

    async fn hangup_at(&self, endpoint: &Endpoint, url: Url) -> Result<(), RtcError> {
        let response = self
            .client_for(endpoint)
            .post(url)
            .headers(endpoint.auth_headers()?)
            .header(reqwest::header::ACCEPT, "*/*")
            .send()
            .await
            .map_err(|error| self.request_error(Stage::Hangup, error))?;
        let status = response.status();
        if status.is_success() {
            return Ok(());
        }
        let headers = response.headers().clone();
        let body = match self.read_body(response, Stage::Hangup).await {
            Ok(body) => body.text,
            Err(_) => String::new(),
        };
        Err(http_error(
            endpoint.name(),
            Stage::Hangup,
            status.as_u16(),
            &headers,
            &body,
            SystemTime::now(),
        ))
    }

    /// Reads at most [`MAX_RESPONSE_BYTES`] of the body (decoded as UTF-8, lossily), and whether
    /// there was more; nothing beyond is read.
    async fn read_body(
        &self,
        mut response: reqwest::Response,
        stage: Stage,
    ) -> Result<Body, RtcError> {
        let mut bytes = Vec::new();
        let mut cut = false;
        while !cut {
            let Some(chunk) = response
                .chunk()
                .await
                .map_err(|error| self.request_error(stage, error))?
            else {
                break;
            };
            let room = MAX_RESPONSE_BYTES - bytes.len();
            cut = chunk.len() > room;
            bytes.extend_from_slice(&chunk[..chunk.len().min(room)]);
        }
        Ok(Body {
            text: String::from_utf8_lossy(&bytes).into_owned(),
            cut,
        })
    }

    fn request_error(&self, stage: Stage, error: reqwest::Error) -> RtcError {
        if error.is_timeout() {
            return RtcError::Timeout {
                stage,
                after: self.timeout,
            };
        }
        // The chain of sources says what failed (DNS, refused, TLS); its last link says it
        // without the request around it, short enough for the window.
        let mut message = error.to_string();
        let mut innermost = message.clone();
        let mut tls = false;
        let mut source = std::error::Error::source(&error);
        while let Some(cause) = source {
            tls |= is_tls_error(cause);
            innermost = cause.to_string();
            message.push_str(": ");
            message.push_str(&innermost);
            source = cause.source();
        }
        let cause = innermost;
        if tls {
            RtcError::Tls {
                stage,
                message,
                cause,
            }
        } else {
            RtcError::Network {
                stage,
                message,
                cause,
            }
        }
    }
}

/// An answer's body as read: at most [`MAX_RESPONSE_BYTES`].
struct Body {
    text: String,
    /// The body was longer and the rest was not read.
    cut: bool,
}

impl Body {
    /// The whole body, or [`RtcError::ResponseTooLarge`] when it was cut.
    fn whole(self, stage: Stage) -> Result<String, RtcError> {
        if self.cut {
            return Err(RtcError::ResponseTooLarge {
                stage,
                limit_bytes: MAX_RESPONSE_BYTES,
            });
        }
        Ok(self.text)
    }
}

/// Whether `error` is a TLS failure: a rustls error, also when wrapped in (nested)
/// `io::Error`s, whose `source()` skips the error they wrap.
fn is_tls_error(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut current = Some(error);
    while let Some(error) = current {
        if error.downcast_ref::<rustls::Error>().is_some() {
            return true;
        }
        current = error
            .downcast_ref::<std::io::Error>()
            .and_then(|io| io.get_ref())
            .map(|inner| inner as &(dyn std::error::Error + 'static));
    }
    false
}

/// The typed error for a non-2xx answer.
pub fn http_error(
    provider: &str,
    stage: Stage,
    status: u16,
    headers: &HeaderMap,
    body: &str,
    now: SystemTime,
) -> RtcError {
    let parsed = serde_json::from_str::<ErrorBody>(body).ok();
    let code = parsed
        .as_ref()
        .and_then(|parsed| parsed.error.code.as_ref())
        .and_then(|code| match code {
            Value::String(code) => Some(code.clone()),
            Value::Null => None,
            other => Some(other.to_string()),
        });
    let message = match parsed.and_then(|parsed| parsed.error.message) {
        Some(message) => message,
        None => {
            let body = body.trim();
            let mut shown: String = body.chars().take(200).collect();
            if shown.len() < body.len() {
                shown.push('…');
            }
            shown
        }
    };
    let failure = HttpFailure {
        provider: provider.to_owned(),
        stage,
        status,
        code,
        message,
    };
    match status {
        300..=399 => RtcError::Redirected {
            failure,
            location: headers
                .get(LOCATION)
                .and_then(|value| value.to_str().ok())
                .map(str::to_owned),
        },
        400 => RtcError::BadRequest(failure),
        401 | 403 => RtcError::KeyRefused(failure),
        404 => RtcError::NotFound(failure),
        429 => RtcError::RateLimited {
            failure,
            retry_after: headers
                .get(RETRY_AFTER)
                .and_then(|value| value.to_str().ok())
                .and_then(|value| parse_retry_after(value, now)),
        },
        500..=599 => RtcError::ServerError(failure),
        _ => RtcError::Http(failure),
    }
}

/// `Retry-After` as a delay from `now`: delay-seconds, or an HTTP date (a past date is no
/// delay). `None` when it is neither.
pub fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

/// The call id is the last path segment of `Location` (query ignored), e.g.
/// `/v1/realtime/calls/rtc_u1_9c65…` → `rtc_u1_9c65…`. `None` when there is none.
pub fn call_id_from_location(location: &str) -> Option<String> {
    let path = location.split(['?', '#']).next().unwrap_or_default();
    let segment = path
        .trim_end_matches('/')
        .rsplit('/')
        .next()
        .unwrap_or_default();
    if segment.is_empty() || segment == "calls" || segment.contains(':') {
        return None;
    }
    Some(segment.to_owned())
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
    fn a_base_url_with_a_user_name_or_password_is_refused() {
        for base in [
            "https://walkie:pa55word@realtime.example.com",
            "https://walkie@realtime.example.com/v1",
            "https://:pa55word@realtime.example.com",
            "http://walkie:pa55word@127.0.0.1:8080",
        ] {
            let error = Endpoint::custom(base, Auth::None).expect_err(base);
            assert!(
                matches!(&error, RtcError::CredentialsInUrl { host } if host == "realtime.example.com" || host == "127.0.0.1"),
                "{base}: {error:?}"
            );
            for shown in [
                error.to_string(),
                error.user_sentence(),
                format!("{error:?}"),
            ] {
                assert!(!shown.contains("pa55word"), "{shown}");
            }
        }
        let azure = Endpoint::azure("https://walkie:pa55word@res.openai.azure.com", "k", "d")
            .expect_err("credentials in the Azure resource URL");
        assert!(
            matches!(azure, RtcError::CredentialsInUrl { .. }),
            "{azure:?}"
        );
        assert_eq!(
            azure.user_sentence(),
            "The provider address for res.openai.azure.com contains a user name or password: remove the part before @ in Settings and put the key in the API key field."
        );
    }

    #[test]
    fn urls_of_the_three_variants_carry_no_model_and_no_api_version() {
        let openai = Endpoint::openai("sk-x").expect("the OpenAI base URL is valid");
        assert_eq!(
            openai.calls_url().as_str(),
            "https://api.openai.com/v1/realtime/calls"
        );
        assert_eq!(
            openai.client_secrets_url().as_str(),
            "https://api.openai.com/v1/realtime/client_secrets"
        );
        assert_eq!(
            openai.hangup_url("rtc_1").as_str(),
            "https://api.openai.com/v1/realtime/calls/rtc_1/hangup"
        );
        let azure = Endpoint::azure("https://res.openai.azure.com/", "k", "my-deploy")
            .expect("the Azure base URL is valid");
        assert_eq!(
            azure.calls_url().as_str(),
            "https://res.openai.azure.com/openai/v1/realtime/calls"
        );
        assert_eq!(
            azure.client_secrets_url().as_str(),
            "https://res.openai.azure.com/openai/v1/realtime/client_secrets"
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
    fn each_variant_takes_its_documented_form() {
        let standard = Endpoint::openai("sk-abc").expect("valid");
        assert_eq!(standard.form(), CallForm::Multipart);
        assert_eq!(standard.name(), "OpenAI");
        let ephemeral = Endpoint::openai("ek_abc").expect("valid");
        assert_eq!(ephemeral.form(), CallForm::RawSdp);
        assert_eq!(standard.with_ephemeral_key().form(), CallForm::EphemeralKey);
        let azure = Endpoint::azure("https://r.openai.azure.com", "k", "d").expect("valid");
        assert_eq!(azure.form(), CallForm::EphemeralKey);
        assert_eq!(azure.name(), "Azure OpenAI");
        let local = Endpoint::custom("http://127.0.0.1:9", Auth::None).expect("valid");
        assert_eq!(
            local.form(),
            CallForm::Automatic,
            "multipart, raw where refused"
        );
        assert_eq!(
            local.clone().with_form(CallForm::RawSdp).form(),
            CallForm::RawSdp
        );
        assert_eq!(local.name(), "127.0.0.1");
        assert_eq!(
            local.named("the local provider").name(),
            "the local provider"
        );
    }

    #[test]
    fn azure_always_sends_the_deployment_as_the_model() {
        let azure = Endpoint::azure("https://r.openai.azure.com", "k", "my-deploy").expect("valid");
        let asked = SessionConfig {
            model: Some("gpt-realtime".to_owned()),
            ..SessionConfig::default()
        };
        assert_eq!(
            azure.call_session(&asked).model.as_deref(),
            Some("my-deploy")
        );
        let openai = Endpoint::openai("sk-x").expect("valid");
        assert_eq!(
            openai.call_session(&asked).model.as_deref(),
            Some("gpt-realtime")
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
        assert!(matches!(broken.auth_headers(), Err(RtcError::InvalidKey)));
    }

    #[test]
    fn call_id_is_the_last_segment_of_location() {
        assert_eq!(
            call_id_from_location("/v1/realtime/calls/rtc_u1_9c65").as_deref(),
            Some("rtc_u1_9c65")
        );
        assert_eq!(
            call_id_from_location("https://h/v1/realtime/calls/rtc_x?a=b").as_deref(),
            Some("rtc_x")
        );
        assert_eq!(call_id_from_location("/v1/realtime/calls/"), None);
        assert_eq!(call_id_from_location(""), None);
    }

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, HeaderValue::from_str(value).expect("a test header"));
        }
        map
    }

    fn answer(status: u16, pairs: &[(&'static str, &str)], body: &str) -> RtcError {
        http_error(
            "OpenAI",
            Stage::Signalling,
            status,
            &headers(pairs),
            body,
            SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000),
        )
    }

    #[test]
    fn a_400_shows_the_apis_own_message() {
        let body = r#"{"error":{"message":"Invalid value: 'robot'. Supported values are: 'alloy', 'marin'.","type":"invalid_request_error","code":"invalid_value","param":"session.audio.output.voice"}}"#;
        let error = answer(400, &[], body);
        let RtcError::BadRequest(failure) = &error else {
            panic!("expected BadRequest, got {error:?}");
        };
        assert_eq!(failure.code.as_deref(), Some("invalid_value"));
        assert_eq!(
            error.user_sentence(),
            "OpenAI refused the call: Invalid value: 'robot'. Supported values are: 'alloy', 'marin'. Check the model, voice and instructions in Settings."
        );
    }

    #[test]
    fn a_401_or_403_is_a_refused_key() {
        let body = r#"{"error":{"message":"Incorrect API key provided: sk-ab***cd.","type":"invalid_request_error","code":"invalid_api_key","param":null}}"#;
        let error = answer(401, &[], body);
        assert!(matches!(&error, RtcError::KeyRefused(failure) if failure.status == 401));
        assert_eq!(
            error.user_sentence(),
            "OpenAI refused the API key: add a valid key in Settings."
        );
        let forbidden = answer(403, &[], "");
        assert!(matches!(&forbidden, RtcError::KeyRefused(failure) if failure.status == 403));
        assert!(
            forbidden
                .user_sentence()
                .contains("access to the Realtime API")
        );
    }

    #[test]
    fn a_404_names_the_model_or_deployment() {
        // Azure's error body has a code but no type.
        let body = r#"{"error":{"code":"DeploymentNotFound","message":"The API deployment for this resource does not exist."}}"#;
        let error = http_error(
            "Azure OpenAI",
            Stage::ClientSecret,
            404,
            &HeaderMap::new(),
            body,
            SystemTime::UNIX_EPOCH,
        );
        let RtcError::NotFound(failure) = &error else {
            panic!("expected NotFound, got {error:?}");
        };
        assert_eq!(failure.code.as_deref(), Some("DeploymentNotFound"));
        assert_eq!(failure.stage, Stage::ClientSecret);
        assert_eq!(
            error.user_sentence(),
            "Azure OpenAI knows no such model or deployment (The API deployment for this resource does not exist): check the model (for Azure, the deployment name) and the address in Settings."
        );
    }

    #[test]
    fn a_429_keeps_retry_after_in_seconds_or_as_an_http_date() {
        let error = answer(429, &[("retry-after", "42")], "");
        assert_eq!(error.retry_after(), Some(Duration::from_secs(42)));
        assert!(matches!(
            &error,
            RtcError::RateLimited { retry_after: Some(after), .. } if *after == Duration::from_secs(42)
        ));
        assert_eq!(
            error.user_sentence(),
            "OpenAI is rate-limiting this key: reconnect in 42 seconds."
        );
        // 1_700_000_000 is Tue, 14 Nov 2023 22:13:20 GMT; the date is 100 s later.
        let dated = answer(429, &[("retry-after", "Tue, 14 Nov 2023 22:15:00 GMT")], "");
        assert!(matches!(
            &dated,
            RtcError::RateLimited { retry_after: Some(after), .. } if *after == Duration::from_secs(100)
        ));
        let past = answer(429, &[("retry-after", "Mon, 13 Nov 2023 00:00:00 GMT")], "");
        assert!(matches!(
            &past,
            RtcError::RateLimited { retry_after: Some(after), .. } if after.is_zero()
        ));
        let none = answer(429, &[("retry-after", "soon")], "");
        assert!(matches!(
            &none,
            RtcError::RateLimited {
                retry_after: None,
                ..
            }
        ));
        assert!(none.user_sentence().contains("wait a minute"));
        let quota = answer(
            429,
            &[],
            r#"{"error":{"message":"You exceeded your current quota.","type":"insufficient_quota","code":"insufficient_quota","param":null}}"#,
        );
        assert!(quota.user_sentence().contains("billing"));
    }

    #[test]
    fn a_5xx_is_a_server_error() {
        let error = answer(503, &[("retry-after", "5")], "upstream connect error");
        assert_eq!(
            error.retry_after(),
            None,
            "only a 429 asks the client to wait"
        );
        assert!(
            matches!(&error, RtcError::ServerError(failure) if failure.status == 503 && failure.message == "upstream connect error")
        );
        assert!(
            error
                .user_sentence()
                .starts_with("OpenAI had a server error (503)")
        );
    }

    #[test]
    fn a_redirect_is_an_error_that_says_where_it_pointed() {
        let error = answer(307, &[("location", "https://elsewhere.example/v1")], "");
        assert!(matches!(
            &error,
            RtcError::Redirected { location: Some(to), .. } if to == "https://elsewhere.example/v1"
        ));
        assert!(error.user_sentence().contains("does not follow"));
    }

    #[test]
    fn any_other_status_keeps_its_number_and_body() {
        let error = answer(415, &[], "Unsupported Media Type");
        assert!(
            matches!(&error, RtcError::Http(failure) if failure.status == 415 && failure.message == "Unsupported Media Type")
        );
        assert!(error.to_string().contains("415"));
        let long = "x".repeat(500);
        let RtcError::Http(failure) = answer(418, &[], &long) else {
            panic!("a 418 is a plain HTTP error");
        };
        assert_eq!(
            failure.message.chars().count(),
            201,
            "200 characters and an ellipsis"
        );
    }
}
