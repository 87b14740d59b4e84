//! The signalling server, on 127.0.0.1 only: `POST /v1/realtime/calls` (SDP offer in, SDP
//! answer out, call id in `Location`), `POST /v1/realtime/calls/{id}/hangup` and
//! `POST /v1/realtime/client_secrets` (ephemeral keys); the same three under `/openai/v1` as
//! Azure serves them.
//!
//! The calls endpoint takes both documented forms: `multipart/form-data` with an `sdp` part and
//! a `session` part (a `RealtimeSessionCreateRequest`; the call starts with that session), or the
//! raw offer as `application/sdp` (the call starts on the provider's defaults, or on the session
//! of the ephemeral key it presents). Azure's calls endpoint takes only an ephemeral key, as its
//! GA flow documents. Every request is recorded in the trace when one is kept ([`crate::trace`]).
//!
//! The Live API's `POST /v1/live/sessions` (a JSON body with the session and the offer, the
//! answer in JSON) and its `/hangup` serve GPT-Live calls ([`crate::live_session`]).
//!
//! Every request must carry the provider's token, and a `Host` naming this server
//! (`127.0.0.1:<port>` or `localhost:<port>`): a web page the user visits can reach a loopback
//! port, and through a DNS name rebound to 127.0.0.1 even read the answers; with its own name in
//! `Host`, it is refused before anything else is looked at (421, `invalid_host`).

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{FromRequest, Multipart, Path, Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Value, json};
use tokio::sync::{Mutex, oneshot};
use walkie_openai::SessionConfig;
use walkie_rtc::{PeerConfig, peer};

use crate::trace::{CallLine, Trace, form_of};

pub(crate) struct Shared {
    pub token: String,
    /// The `Host` values requests may carry.
    pub hosts: AllowedHosts,
    pub peer: PeerConfig,
    /// The test bench's faults (none in the app's build).
    pub faults: crate::bench::Faults,
    pub trace: Option<Arc<Trace>>,
    pub calls: Mutex<HashMap<String, oneshot::Sender<()>>>,
    pub next_call: AtomicU64,
    pub calls_total: AtomicU64,
    /// Ephemeral keys minted by `client_secrets`, by value.
    pub secrets: Mutex<HashMap<String, Minted>>,
    /// Each session's maximum duration.
    pub session_limit_ms: u64,
}

/// The `Host` header values that name this server: `127.0.0.1:<port>` and `localhost:<port>`
/// (any case; the port is required, as clients send it for a port that is not 80).
pub(crate) struct AllowedHosts([String; 2]);

impl AllowedHosts {
    pub fn for_port(port: u16) -> Self {
        Self([format!("127.0.0.1:{port}"), format!("localhost:{port}")])
    }

    fn allows(&self, host: Option<&str>) -> bool {
        host.is_some_and(|host| self.0.iter().any(|ours| ours.eq_ignore_ascii_case(host)))
    }
}

/// One ephemeral key: until when it may create calls, and the session it gives them.
pub(crate) struct Minted {
    pub expires_at_unix_s: u64,
    pub session: Option<SessionConfig>,
}

/// Which API's paths a request came in on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Flavor {
    /// `/v1/realtime/...`
    OpenAi,
    /// `/openai/v1/realtime/...` (Azure OpenAI, GA).
    Azure,
}

impl Flavor {
    /// What comes before `/realtime/...`.
    fn prefix(self) -> &'static str {
        match self {
            Flavor::OpenAi => "/v1",
            Flavor::Azure => "/openai/v1",
        }
    }
}

/// Ephemeral keys last 10 s to 2 h, 10 min by default (openai-python
/// `client_secret_create_params.py`).
const SECRET_SECONDS: std::ops::RangeInclusive<u64> = 10..=7200;
const DEFAULT_SECRET_SECONDS: u64 = 600;

fn now_unix_s() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_secs())
}

pub(crate) fn router(shared: Arc<Shared>) -> Router {
    let mut router = Router::new();
    for flavor in [Flavor::OpenAi, Flavor::Azure] {
        let prefix = flavor.prefix();
        router = router
            .route(
                &format!("{prefix}/realtime/calls"),
                post(move |State(shared), request| create_call(shared, flavor, request)),
            )
            .route(
                &format!("{prefix}/realtime/calls/{{call_id}}/hangup"),
                post(hangup),
            )
            .route(
                &format!("{prefix}/realtime/client_secrets"),
                post(move |State(shared), headers, body| {
                    client_secrets(shared, flavor, headers, body)
                }),
            );
    }
    router
        // The Live API (GPT-Live): OpenAI's only.
        .route(
            "/v1/live/sessions",
            post(|State(shared), headers, body| create_live_session(shared, headers, body)),
        )
        .route("/v1/live/sessions/{call_id}/hangup", post(hangup))
        // The retired beta SDP endpoint answers as the GA server does.
        .route("/v1/realtime", post(beta_endpoint))
        .layer(middleware::from_fn_with_state(shared.clone(), check_host))
        .layer(middleware::from_fn_with_state(shared.clone(), record))
        .with_state(shared)
}

/// What a handler tells the trace about its request; the middleware adds the rest.
#[derive(Clone, Debug, Default)]
struct TraceNote {
    parts: Vec<String>,
    session: Option<Value>,
    live_session: Option<Value>,
    call_id: Option<String>,
}

fn noted(note: TraceNote, mut response: Response) -> Response {
    response.extensions_mut().insert(note);
    response
}

/// Writes one `calls.jsonl` line per request, before the response goes out (so a client that
/// has its answer finds the line written).
async fn record(State(shared): State<Arc<Shared>>, request: Request, next: Next) -> Response {
    let Some(trace) = shared.trace.clone() else {
        return next.run(request).await;
    };
    let method = request.method().as_str().to_owned();
    let path = request.uri().path().to_owned();
    let query = request.uri().query().map(str::to_owned);
    let content_type = header_text(request.headers(), header::CONTENT_TYPE.as_str());
    let auth = auth_scheme(request.headers());
    let response = next.run(request).await;
    let note = response
        .extensions()
        .get::<TraceNote>()
        .cloned()
        .unwrap_or_default();
    trace.call(&CallLine {
        method,
        path,
        query,
        form: form_of(content_type.as_deref()),
        content_type,
        parts: note.parts,
        auth,
        session: note.session,
        live_session: note.live_session,
        status: response.status().as_u16(),
        call_id: note.call_id,
    });
    response
}

/// Refuses a request whose `Host` does not name this server (DNS rebinding): 421, with the
/// API's error body.
async fn check_host(State(shared): State<Arc<Shared>>, request: Request, next: Next) -> Response {
    let host = header_text(request.headers(), header::HOST.as_str());
    if shared.hosts.allows(host.as_deref()) {
        return next.run(request).await;
    }
    error(
        StatusCode::MISDIRECTED_REQUEST,
        "invalid_request_error",
        "invalid_host",
        &format!(
            "The local provider answers only requests addressed to {} or {}.",
            shared.hosts.0[0], shared.hosts.0[1]
        ),
    )
}

fn header_text(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get(name)
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned)
}

/// The bearer credential, if the request carries one (the scheme is case-insensitive).
fn bearer(headers: &HeaderMap) -> Option<String> {
    let value = header_text(headers, header::AUTHORIZATION.as_str())?;
    let (scheme, credential) = value.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| credential.trim().to_owned())
}

/// The authentication scheme, for the trace; never the credential.
fn auth_scheme(headers: &HeaderMap) -> &'static str {
    match bearer(headers) {
        Some(credential) if credential.starts_with("ek_") => "bearer_ephemeral",
        Some(_) => "bearer",
        None if headers.contains_key("api-key") => "api_key",
        None => "none",
    }
}

/// An OpenAI-shaped error answer: `{"error":{"message","type","code","param"}}`.
#[derive(Debug)]
pub(crate) struct ApiError {
    pub status: StatusCode,
    pub kind: &'static str,
    pub code: String,
    pub param: Option<String>,
    pub message: String,
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = json!({"error": {
            "message": self.message, "type": self.kind, "code": self.code, "param": self.param,
        }});
        (self.status, axum::Json(body)).into_response()
    }
}

fn error(status: StatusCode, kind: &'static str, code: &str, message: &str) -> Response {
    ApiError {
        status,
        kind,
        code: code.to_owned(),
        param: None,
        message: message.to_owned(),
    }
    .into_response()
}

fn invalid(code: &str, param: Option<&str>, message: &str) -> ApiError {
    ApiError {
        status: StatusCode::BAD_REQUEST,
        kind: "invalid_request_error",
        code: code.to_owned(),
        param: param.map(str::to_owned),
        message: message.to_owned(),
    }
}

fn bad_request(code: &str, param: Option<&str>, message: &str) -> Response {
    invalid(code, param, message).into_response()
}

fn unauthorized(message: &str) -> ApiError {
    ApiError {
        status: StatusCode::UNAUTHORIZED,
        kind: "invalid_request_error",
        code: "invalid_api_key".to_owned(),
        param: None,
        message: message.to_owned(),
    }
}

/// Whether the request carries the provider's token: as a bearer, or (Azure) as `api-key`.
fn has_token(shared: &Shared, headers: &HeaderMap, api_key_too: bool) -> bool {
    let token = shared.token.as_str();
    bearer(headers).is_some_and(|presented| same_secret(&presented, token))
        || (api_key_too
            && header_text(headers, "api-key")
                .is_some_and(|presented| same_secret(&presented, token)))
}

/// Compares a presented secret with the real one in time that depends only on their lengths.
fn same_secret(presented: &str, secret: &str) -> bool {
    presented.len() == secret.len()
        && presented
            .bytes()
            .zip(secret.bytes())
            .fold(0u8, |differ, (a, b)| differ | (a ^ b))
            == 0
}

/// The session of the ephemeral key `presented`, or why it is refused.
async fn ephemeral_session(
    shared: &Shared,
    presented: &str,
) -> Result<Option<SessionConfig>, ApiError> {
    match shared.secrets.lock().await.get(presented) {
        Some(minted) if minted.expires_at_unix_s > now_unix_s() => Ok(minted.session.clone()),
        Some(_) => Err(unauthorized(
            "The ephemeral key has expired. Create a new one with client_secrets.",
        )),
        None => Err(unauthorized(
            "Incorrect API key provided: an unknown ephemeral key.",
        )),
    }
}

/// Who may place a call: an ephemeral key (its session applies), or on OpenAI's path the
/// provider's token. Azure's calls path takes ephemeral keys only.
async fn call_auth(
    shared: &Shared,
    flavor: Flavor,
    headers: &HeaderMap,
) -> Result<Option<SessionConfig>, ApiError> {
    if let Some(presented) = bearer(headers).filter(|value| value.starts_with("ek_")) {
        return ephemeral_session(shared, &presented).await;
    }
    match flavor {
        Flavor::Azure => Err(unauthorized(
            "Azure's realtime calls take an ephemeral key: Authorization: Bearer <value from /openai/v1/realtime/client_secrets>.",
        )),
        Flavor::OpenAi if has_token(shared, headers, false) => Ok(None),
        Flavor::OpenAi => Err(unauthorized(
            "Incorrect API key provided for the local provider.",
        )),
    }
}

async fn create_call(shared: Arc<Shared>, flavor: Flavor, request: Request) -> Response {
    let mut note = TraceNote::default();
    let response = answer_call(&shared, flavor, request, &mut note).await;
    noted(note, response)
}

async fn answer_call(
    shared: &Arc<Shared>,
    flavor: Flavor,
    request: Request,
    note: &mut TraceNote,
) -> Response {
    // The body is read first, so the trace shows what came (parts, session) whatever the answer.
    let headers = request.headers().clone();
    let body = read_call_body(request, note).await;
    let fault = shared.faults.take_calls_fault();
    if let Some(refused) = fault.status_response() {
        return refused;
    }
    let key_session = match call_auth(shared, flavor, &headers).await {
        Ok(session) => session,
        Err(refused) => return refused.into_response(),
    };
    let (offer, session) = match body {
        Ok(read) => read,
        Err(refused) => return refused,
    };
    // A multipart session on top of an ephemeral key's: the fields it names win.
    let session = match (key_session, session) {
        (Some(mut base), Some(over)) => {
            crate::session::merge_session(&mut base, over.clone());
            if over.model.is_some() {
                base.model = over.model;
            }
            Some(base)
        }
        (base, over) => over.or(base),
    };
    let (peer, answer) = match peer::answer(&shared.peer, &offer).await {
        Ok(answered) => answered,
        Err(refused) => return bad_request("invalid_offer", None, &refused.to_string()),
    };
    let (call_id, hangup_rx) = register_call(shared, "rtc_local").await;
    note.call_id = Some(call_id.clone());
    let task_shared = shared.clone();
    let task_id = call_id.clone();
    let setup = crate::call::CallSetup {
        initial: session,
        faults: shared.faults.plan(),
        trace: shared.trace.clone(),
        limit_ms: shared.session_limit_ms,
    };
    tokio::spawn(async move {
        crate::call::run(task_id.clone(), peer, hangup_rx, setup).await;
        task_shared.calls.lock().await.remove(&task_id);
    });
    let mut response = (
        StatusCode::CREATED,
        [(header::CONTENT_TYPE, "application/sdp")],
        answer,
    )
        .into_response();
    if !fault.omits_location() {
        let location = format!("{}/realtime/calls/{call_id}", flavor.prefix());
        match header::HeaderValue::from_str(&location) {
            Ok(location) => {
                response.headers_mut().insert(header::LOCATION, location);
            }
            Err(_) => log::error!("the call id {call_id} does not fit in a header"),
        }
    }
    response
}

/// A new call's id (`{prefix}_{number}_{random}`), counted and registered for its hang-up.
async fn register_call(shared: &Shared, prefix: &str) -> (String, oneshot::Receiver<()>) {
    let number = shared.next_call.fetch_add(1, Ordering::Relaxed) + 1;
    let call_id = format!("{prefix}_{number:06}_{:08x}", rand::random::<u32>());
    let (hangup_tx, hangup_rx) = oneshot::channel();
    shared.calls.lock().await.insert(call_id.clone(), hangup_tx);
    shared.calls_total.fetch_add(1, Ordering::Relaxed);
    (call_id, hangup_rx)
}

/// The most a Live call's JSON body may be: a session with a long history and an SDP offer.
const MAX_LIVE_BODY_BYTES: usize = 1024 * 1024;

/// `POST /v1/live/sessions`: `{"session": …, "transport": {"type": "webrtc", "sdp": …}}` in,
/// `{"session": {"id"}, "transport": {"type": "webrtc", "sdp": <answer>}}` out, with the
/// provider's token. The session is held to the Live API's documented limits
/// ([`crate::live_session::check_session`]).
async fn create_live_session(shared: Arc<Shared>, headers: HeaderMap, body: Bytes) -> Response {
    let mut note = TraceNote::default();
    let response = answer_live_session(&shared, &headers, &body, &mut note).await;
    noted(note, response)
}

async fn answer_live_session(
    shared: &Arc<Shared>,
    headers: &HeaderMap,
    body: &[u8],
    note: &mut TraceNote,
) -> Response {
    note.live_session = serde_json::from_slice::<Value>(body).ok();
    if !has_token(shared, headers, false) {
        return unauthorized("Incorrect API key provided for the local provider.").into_response();
    }
    if form_of(header_text(headers, header::CONTENT_TYPE.as_str()).as_deref()) != "json" {
        return error(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "invalid_request_error",
            "unsupported_content_type",
            "A Live session is created with a JSON body: {\"session\": …, \"transport\": {\"type\": \"webrtc\", \"sdp\": …}}.",
        );
    }
    if body.len() > MAX_LIVE_BODY_BYTES {
        return error(
            StatusCode::PAYLOAD_TOO_LARGE,
            "invalid_request_error",
            "request_too_large",
            &format!(
                "The body is {} bytes; at most {MAX_LIVE_BODY_BYTES} are read.",
                body.len()
            ),
        );
    }
    let request: walkie_openai::live::LiveCreateRequest = match serde_json::from_slice(body) {
        Ok(request) => request,
        Err(unreadable) => {
            return bad_request(
                "invalid_request_body",
                None,
                &format!("The body is not a Live session request: {unreadable}."),
            );
        }
    };
    if let Err(refused) = crate::live_session::check_session(&request.session) {
        return bad_request(refused.code, Some(refused.param.as_str()), &refused.message);
    }
    let (peer, answer) = match peer::answer(&shared.peer, &request.transport.sdp).await {
        Ok(answered) => answered,
        Err(refused) => {
            return bad_request("invalid_offer", Some("transport.sdp"), &refused.to_string());
        }
    };
    let (call_id, hangup_rx) = register_call(shared, "live_local").await;
    note.call_id = Some(call_id.clone());
    let task_shared = shared.clone();
    let task_id = call_id.clone();
    let trace = shared.trace.clone();
    tokio::spawn(async move {
        let faults = task_shared.faults.plan();
        crate::live_call::run(
            task_id.clone(),
            peer,
            hangup_rx,
            request.session,
            trace,
            faults,
        )
        .await;
        task_shared.calls.lock().await.remove(&task_id);
    });
    let created = walkie_openai::live::LiveCreateResponse {
        session: walkie_openai::live::CreatedSession { id: call_id },
        transport: walkie_openai::live::WebRtcTransport { sdp: answer },
    };
    (StatusCode::CREATED, axum::Json(created)).into_response()
}

/// The offer and the session of a calls request, in either documented form.
async fn read_call_body(
    request: Request,
    note: &mut TraceNote,
) -> Result<(String, Option<SessionConfig>), Response> {
    let content_type = header_text(request.headers(), header::CONTENT_TYPE.as_str());
    match form_of(content_type.as_deref()) {
        "multipart" => read_multipart(request, note)
            .await
            .map_err(IntoResponse::into_response),
        "sdp" => {
            let body = Bytes::from_request(request, &())
                .await
                .map_err(IntoResponse::into_response)?;
            let offer = String::from_utf8(body.to_vec()).map_err(|_| {
                bad_request("invalid_offer", None, "The SDP offer is not UTF-8 text.")
            })?;
            Ok((offer, None))
        }
        _ => Err(error(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "invalid_request_error",
            "unsupported_content_type",
            "The calls endpoint takes multipart/form-data (parts `sdp` and `session`) or the raw SDP offer as application/sdp.",
        )),
    }
}

/// The `sdp` and `session` parts of a multipart call; other parts are recorded and ignored.
async fn read_multipart(
    request: Request,
    note: &mut TraceNote,
) -> Result<(String, Option<SessionConfig>), ApiError> {
    let mut form = Multipart::from_request(request, &())
        .await
        .map_err(|rejection| invalid("invalid_multipart", None, &rejection.body_text()))?;
    let mut sdp = None;
    let mut session_text = None;
    loop {
        let field = match form.next_field().await {
            Ok(Some(field)) => field,
            Ok(None) => break,
            Err(broken) => {
                return Err(invalid("invalid_multipart", None, &broken.body_text()));
            }
        };
        let name = field.name().unwrap_or_default().to_owned();
        note.parts.push(name.clone());
        let text = field.text().await.map_err(|broken| {
            invalid(
                "invalid_multipart",
                Some(&name),
                &format!("The part {name:?} is unreadable: {}", broken.body_text()),
            )
        })?;
        match name.as_str() {
            "sdp" => sdp = Some(text),
            "session" => session_text = Some(text),
            _ => {}
        }
    }
    let session = match session_text {
        None => None,
        Some(text) => match serde_json::from_str::<Value>(&text) {
            Ok(value) => {
                note.session = Some(value.clone());
                Some(session_from_json(value, "session")?)
            }
            Err(broken) => {
                // Kept as text, so the trace still shows what came.
                note.session = Some(Value::String(text));
                return Err(invalid(
                    "invalid_json",
                    Some("session"),
                    &format!("The `session` part is not valid JSON: {broken}"),
                ));
            }
        },
    };
    let sdp = sdp.ok_or_else(|| {
        invalid(
            "missing_required_parameter",
            Some("sdp"),
            "Missing required parameter: 'sdp'.",
        )
    })?;
    Ok((sdp, session))
}

/// A `RealtimeSessionCreateRequest` (`param` names where it came from, for the error).
fn session_from_json(value: Value, param: &str) -> Result<SessionConfig, ApiError> {
    let Some(object) = value.as_object() else {
        return Err(invalid(
            "invalid_type",
            Some(param),
            &format!("Invalid type for '{param}': expected an object."),
        ));
    };
    if !object.contains_key("type") {
        let type_param = format!("{param}.type");
        return Err(invalid(
            "missing_required_parameter",
            Some(&type_param),
            &format!("Missing required parameter: '{type_param}'."),
        ));
    }
    serde_json::from_value(value).map_err(|broken| {
        invalid(
            "invalid_value",
            Some(param),
            &format!("Invalid '{param}': {broken}"),
        )
    })
}

async fn hangup(
    State(shared): State<Arc<Shared>>,
    Path(call_id): Path<String>,
    headers: HeaderMap,
) -> Response {
    let note = TraceNote {
        call_id: Some(call_id.clone()),
        ..TraceNote::default()
    };
    let allowed = match bearer(&headers).filter(|value| value.starts_with("ek_")) {
        Some(presented) => ephemeral_session(&shared, &presented).await.map(|_| ()),
        None if has_token(&shared, &headers, true) => Ok(()),
        None => Err(unauthorized(
            "Incorrect API key provided for the local provider.",
        )),
    };
    if let Err(refused) = allowed {
        return noted(note, refused.into_response());
    }
    let response = match shared.calls.lock().await.remove(&call_id) {
        Some(hangup) => {
            let _ = hangup.send(());
            StatusCode::OK.into_response()
        }
        None => error(
            StatusCode::NOT_FOUND,
            "invalid_request_error",
            "call_not_found",
            &format!("No active call with id {call_id}."),
        ),
    };
    noted(note, response)
}

/// `POST .../realtime/client_secrets`: `{"session"?, "expires_after"?}` in, an ephemeral key
/// (`ek_…`), its expiry and the effective session out.
async fn client_secrets(
    shared: Arc<Shared>,
    flavor: Flavor,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let mut note = TraceNote::default();
    let response = match mint(&shared, flavor, &headers, &body, &mut note).await {
        Ok(minted) => minted,
        Err(refused) => refused.into_response(),
    };
    noted(note, response)
}

async fn mint(
    shared: &Shared,
    flavor: Flavor,
    headers: &HeaderMap,
    body: &[u8],
    note: &mut TraceNote,
) -> Result<Response, ApiError> {
    // Recorded before anything is checked, so the trace shows what came whatever the answer.
    note.session = serde_json::from_slice::<Value>(body)
        .ok()
        .and_then(|request| request.get("session").cloned());
    if bearer(headers).is_some_and(|value| value.starts_with("ek_")) {
        return Err(unauthorized(
            "An ephemeral key cannot create client secrets; use a standard key.",
        ));
    }
    if !has_token(shared, headers, flavor == Flavor::Azure) {
        return Err(unauthorized(
            "Incorrect API key provided for the local provider.",
        ));
    }
    let request: Value = serde_json::from_slice(body).map_err(|broken| {
        invalid(
            "invalid_json",
            None,
            &format!("The body is not valid JSON: {broken}"),
        )
    })?;
    let Some(request) = request.as_object() else {
        return Err(invalid(
            "invalid_type",
            None,
            "The body must be a JSON object.",
        ));
    };
    let session = match request.get("session") {
        Some(session) => Some(session_from_json(session.clone(), "session")?),
        None => None,
    };
    if flavor == Flavor::Azure && session.as_ref().and_then(|s| s.model.as_ref()).is_none() {
        return Err(invalid(
            "missing_required_parameter",
            Some("session.model"),
            "Missing required parameter: 'session.model' (the deployment name).",
        ));
    }
    let seconds = expiry_seconds(request.get("expires_after"))?;
    let value = format!("ek_{:032x}", rand::random::<u128>());
    let expires_at = now_unix_s() + seconds;
    let effective = crate::session::ProviderSession::with_session(
        &format!("client_secret_{:08x}", rand::random::<u32>()),
        session.clone(),
    )
    .session()
    .clone();
    shared.secrets.lock().await.insert(
        value.clone(),
        Minted {
            expires_at_unix_s: expires_at,
            session,
        },
    );
    let answer = json!({"value": value, "expires_at": expires_at, "session": effective});
    Ok((StatusCode::OK, axum::Json(answer)).into_response())
}

/// `expires_after`: `{"anchor":"created_at","seconds":10..=7200}`, 600 s when absent.
fn expiry_seconds(expires_after: Option<&Value>) -> Result<u64, ApiError> {
    let Some(expires_after) = expires_after else {
        return Ok(DEFAULT_SECRET_SECONDS);
    };
    let anchor = expires_after.get("anchor");
    if anchor.is_some_and(|anchor| anchor != "created_at") {
        return Err(invalid(
            "invalid_value",
            Some("expires_after.anchor"),
            "Invalid 'expires_after.anchor': the only supported anchor is 'created_at'.",
        ));
    }
    match expires_after.get("seconds") {
        None => Ok(DEFAULT_SECRET_SECONDS),
        Some(seconds) => seconds
            .as_u64()
            .filter(|seconds| SECRET_SECONDS.contains(seconds))
            .ok_or_else(|| {
                invalid(
                    "invalid_value",
                    Some("expires_after.seconds"),
                    &format!(
                        "Invalid 'expires_after.seconds': {seconds}; expected an integer from {} to {}.",
                        SECRET_SECONDS.start(),
                        SECRET_SECONDS.end()
                    ),
                )
            }),
    }
}

async fn beta_endpoint() -> Response {
    error(
        StatusCode::BAD_REQUEST,
        "invalid_request_error",
        "beta_api_shape_disabled",
        "The Realtime Beta API is no longer supported. Please use /v1/realtime for the GA API.",
    )
}
