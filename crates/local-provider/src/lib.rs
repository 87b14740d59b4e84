//! Walkie's local realtime provider: the OpenAI Realtime protocol (GA) served on 127.0.0.1 —
//! the `/v1/realtime/calls` SDP exchange (multipart with a `session`, or raw SDP), ephemeral
//! keys (`client_secrets`), the hang-up, Azure's GA paths under `/openai/v1`, a real WebRTC
//! answerer (`walkie-rtc`), the `oai-events` data channel and Opus audio both ways. It holds
//! clients to the documented contract (typed errors for `model` in `session.update` or a late
//! voice change) and can record what it received for an independent checker ([`ProviderConfig::trace_dir`]).
//!
//! It is the offline default of the app and the peer of every end-to-end test. It is honest
//! about being local: it cannot understand speech, so it plays the user's own audio back,
//! describes the user's audio instead of transcribing it ("[2.4 s of speech]"), and says in
//! its reply transcript what it did.
//!
//! Push-to-talk (`turn_detection: null`) and hands-free (an energy-based server VAD with
//! prefix padding and silence duration) are both served; replies stream out in real time so
//! `response.cancel`, `output_audio_buffer.clear` and `conversation.item.truncate` cut a reply
//! that is still going ([`session`]). As a test bench (the `test-bench` feature) it injects faults and runs
//! scenario files (JSON: events, audio to send, timing).
//!
//! Only its caller may use it: every request needs the token made for this run (or given,
//! [`ProviderConfig::token`]) and a `Host` that names the provider itself, so neither another
//! program on the machine nor a web page (through DNS rebinding) can place calls.
//!
//! Embed it with [`LocalProvider::start`] (the app runs it in-process and calls it with
//! [`LocalProvider::endpoint`]), or run the `walkie-local-provider` binary
//! (`cargo run -p walkie-local --features test-bench --bin walkie-local-provider`). The test
//! bench — injected faults ([`ProviderConfig`]'s fault fields), the scripted client and the
//! binary — is compiled only with the `test-bench` feature, which the app never enables.

mod bench;
mod call;
mod chime;
#[cfg(feature = "test-bench")]
pub mod fault;
mod http;
#[cfg(feature = "test-bench")]
pub mod http_fault;
mod live_call;
mod live_session;
#[cfg(feature = "test-bench")]
pub mod netem;
pub mod picture;
#[cfg(feature = "test-bench")]
pub mod scenario;
pub mod session;
mod tool_calls;
mod trace;
mod usage;

use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::sync::{Mutex, oneshot};
use tokio::task::JoinHandle;
use walkie_rtc::{Auth, Endpoint, PeerConfig};

#[cfg(feature = "test-bench")]
pub use http_fault::HttpFault;

/// How to run the provider.
#[derive(Clone, Default)]
pub struct ProviderConfig {
    /// TCP port on 127.0.0.1; 0 picks a free one.
    pub port: u16,
    /// The token every request must carry: `Authorization: Bearer <token>` (on Azure's
    /// `client_secrets` and hang-up paths `api-key: <token>` too). Calls may instead present an
    /// ephemeral key minted by `client_secrets`. `None`: a random token is made at start, for
    /// this run only ([`LocalProvider::token`]), so no other program on the machine can place
    /// calls. Never logged or traced.
    pub token: Option<String>,
    /// The answering peer's settings (its UDP sockets bind to 127.0.0.1).
    pub peer: PeerConfig,
    /// Faults injected into every call (the test bench); empty for a well-behaved provider.
    #[cfg(feature = "test-bench")]
    pub faults: Vec<fault::Fault>,
    /// When set, what the provider receives is recorded in this directory (created if needed):
    /// `client-events.jsonl` (every data-channel text) and `calls.jsonl` (every HTTP request,
    /// its auth scheme but never a key). The project's oracle reads them.
    pub trace_dir: Option<PathBuf>,
    /// A fault of the calls endpoint itself (an error status, a missing `Location`), for
    /// testing a client's connect errors; `None` for a well-behaved provider.
    #[cfg(feature = "test-bench")]
    pub calls_fault: Option<HttpFault>,
    /// How many calls get [`Self::calls_fault`] before calls succeed again; `None`: all.
    #[cfg(feature = "test-bench")]
    pub calls_fault_times: Option<u64>,
    /// A session's maximum duration: at it the provider sends `session_expired` and ends the
    /// call, as OpenAI does. `None`: OpenAI's 60 minutes.
    pub session_limit_ms: Option<u64>,
}

impl std::fmt::Debug for ProviderConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print the token.
        let mut debug = f.debug_struct("ProviderConfig");
        debug
            .field("port", &self.port)
            .field("token", &self.token.as_ref().map(|_| "…"))
            .field("peer", &self.peer)
            .field("trace_dir", &self.trace_dir)
            .field("session_limit_ms", &self.session_limit_ms);
        #[cfg(feature = "test-bench")]
        debug
            .field("faults", &self.faults)
            .field("calls_fault", &self.calls_fault)
            .field("calls_fault_times", &self.calls_fault_times);
        debug.finish()
    }
}

/// The environment variable naming the trace directory ([`ProviderConfig::trace_dir`]).
pub const TRACE_ENV: &str = "WALKIE_LOCAL_TRACE";
/// The environment variable giving a session's maximum duration in milliseconds
/// ([`ProviderConfig::session_limit_ms`]), to try renewal without waiting an hour.
pub const SESSION_LIMIT_ENV: &str = "WALKIE_LOCAL_SESSION_LIMIT_MS";

impl ProviderConfig {
    /// The defaults, with the trace directory from `WALKIE_LOCAL_TRACE` if it is set and not
    /// empty, and the session limit from `WALKIE_LOCAL_SESSION_LIMIT_MS` if it is a number of
    /// milliseconds (anything else is logged and ignored). (The token is not read here: the
    /// app's built-in provider makes its own.)
    pub fn from_env() -> Self {
        let session_limit_ms = std::env::var(SESSION_LIMIT_ENV).ok().and_then(|value| {
            let parsed = value.trim().parse::<u64>().ok().filter(|ms| *ms > 0);
            if parsed.is_none() {
                log::warn!("{SESSION_LIMIT_ENV}={value:?} is not a number of milliseconds; the limit stays 60 minutes");
            }
            parsed
        });
        Self {
            trace_dir: std::env::var_os(TRACE_ENV)
                .filter(|dir| !dir.is_empty())
                .map(PathBuf::from),
            session_limit_ms,
            ..Self::default()
        }
    }
}

/// A running provider. Call [`LocalProvider::shutdown`] to end it and every call; dropping
/// it ends it too, without waiting.
pub struct LocalProvider {
    addr: SocketAddr,
    shared: Arc<http::Shared>,
    stop: Option<oneshot::Sender<()>>,
    server: Option<JoinHandle<()>>,
}

impl LocalProvider {
    /// Binds 127.0.0.1:`port` and serves until shut down.
    pub async fn start(config: ProviderConfig) -> std::io::Result<Self> {
        let listener =
            tokio::net::TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, config.port)))
                .await?;
        let addr = listener.local_addr()?;
        let faults = bench::Faults::of(&config);
        let mut peer = config.peer;
        // The media sockets stay on loopback too, whatever the caller passed.
        peer.bind.retain(|bind| bind.ip().is_loopback());
        if peer.bind.is_empty() {
            peer.bind.push(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)));
        }
        let trace = match &config.trace_dir {
            Some(dir) => Some(Arc::new(trace::Trace::new(dir)?)),
            None => None,
        };
        let token = config
            .token
            .unwrap_or_else(|| format!("{:032x}", rand::random::<u128>()));
        let shared = Arc::new(http::Shared {
            token,
            hosts: http::AllowedHosts::for_port(addr.port()),
            peer,
            faults,
            trace,
            calls: Mutex::new(Default::default()),
            next_call: AtomicU64::new(0),
            calls_total: AtomicU64::new(0),
            secrets: Mutex::new(Default::default()),
            session_limit_ms: config
                .session_limit_ms
                .unwrap_or(session::DEFAULT_SESSION_LIMIT_MS),
        });
        let (stop, stopped) = oneshot::channel::<()>();
        let app = http::router(shared.clone());
        let server = tokio::spawn(async move {
            let served = axum::serve(listener, app)
                .with_graceful_shutdown(async {
                    let _ = stopped.await;
                })
                .await;
            if let Err(error) = served {
                log::error!("the local provider's HTTP server stopped: {error}");
            }
        });
        Ok(Self {
            addr,
            shared,
            stop: Some(stop),
            server: Some(server),
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The bearer token requests must carry (given, or made at start).
    pub fn token(&self) -> &str {
        &self.shared.token
    }

    /// The base URL a client puts before `/v1/realtime/calls`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// How a client authenticates: `Authorization: Bearer <token>`.
    pub fn auth(&self) -> Auth {
        Auth::Bearer(self.shared.token.clone())
    }

    /// The endpoint a client calls: [`Self::base_url`] with [`Self::auth`].
    pub fn endpoint(&self) -> Endpoint {
        Endpoint::custom(&self.base_url(), self.auth())
            .expect("http to a loopback address is a valid endpoint")
    }

    /// Calls in progress.
    pub async fn active_calls(&self) -> usize {
        self.shared.calls.lock().await.len()
    }

    /// Calls accepted since the start.
    pub fn calls_total(&self) -> u64 {
        self.shared.calls_total.load(Ordering::Relaxed)
    }

    /// The test bench's clock jump: every ephemeral key minted so far expires now (calls they
    /// placed go on; new calls with them get 401).
    pub async fn expire_client_secrets(&self) {
        for minted in self.shared.secrets.lock().await.values_mut() {
            minted.expires_at_unix_s = 0;
        }
    }

    /// The test bench's outage: the provider ends every call in progress itself (the clients
    /// did not hang up) and goes on answering new ones. Returns how many calls it ended.
    pub async fn drop_calls(&self) -> usize {
        let mut calls = self.shared.calls.lock().await;
        let dropped = calls.len();
        for (_, hangup) in calls.drain() {
            let _ = hangup.send(());
        }
        dropped
    }

    /// Hangs up every call and stops the server.
    pub async fn shutdown(mut self) {
        for (_, hangup) in self.shared.calls.lock().await.drain() {
            let _ = hangup.send(());
        }
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(server) = self.server.take() {
            let _ = server.await;
        }
    }
}

impl Drop for LocalProvider {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Ok(mut calls) = self.shared.calls.try_lock() {
            for (_, hangup) in calls.drain() {
                let _ = hangup.send(());
            }
        }
    }
}
