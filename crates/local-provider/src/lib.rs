//! Walkie's local realtime provider: the OpenAI Realtime protocol (GA) served on 127.0.0.1 —
//! the `/v1/realtime/calls` SDP exchange and hang-up over HTTP, a real WebRTC answerer
//! (`walkie-rtc`), the `oai-events` data channel and Opus audio both ways.
//!
//! It is the offline default of the app and the peer of every end-to-end test. It is honest
//! about being local: it cannot understand speech, so it plays the user's own audio back,
//! describes the user's audio instead of transcribing it ("[2.4 s of speech]"), and says in
//! its reply transcript what it did.
//!
//! Push-to-talk (`turn_detection: null`) and hands-free (an energy-based server VAD with
//! prefix padding and silence duration) are both served; replies stream out in real time so
//! `response.cancel`, `output_audio_buffer.clear` and `conversation.item.truncate` cut a reply
//! that is still going ([`session`]). As a test bench it injects [`fault`]s and runs
//! [`scenario`] files (JSON: events, audio to send, timing).
//!
//! Embed it with [`LocalProvider::start`] (the app runs it in-process), or run the
//! `walkie-local-provider` binary.

mod call;
pub mod fault;
mod http;
pub mod scenario;
pub mod session;

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::sync::{Mutex, oneshot};
use tokio::task::JoinHandle;
use walkie_rtc::PeerConfig;

/// How to run the provider.
#[derive(Clone, Debug, Default)]
pub struct ProviderConfig {
    /// TCP port on 127.0.0.1; 0 picks a free one.
    pub port: u16,
    /// When set, requests must carry `Authorization: Bearer <token>`.
    pub token: Option<String>,
    /// The answering peer's settings (its UDP sockets bind to 127.0.0.1).
    pub peer: PeerConfig,
    /// Faults injected into every call (the test bench); empty for a well-behaved provider.
    pub faults: Vec<fault::Fault>,
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
        let mut peer = config.peer;
        // The media sockets stay on loopback too, whatever the caller passed.
        peer.bind.retain(|bind| bind.ip().is_loopback());
        if peer.bind.is_empty() {
            peer.bind.push(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)));
        }
        let shared = Arc::new(http::Shared {
            token: config.token,
            peer,
            faults: config.faults,
            calls: Mutex::new(Default::default()),
            next_call: AtomicU64::new(0),
            calls_total: AtomicU64::new(0),
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

    /// The bearer token requests must carry, if any.
    pub fn token(&self) -> Option<&str> {
        self.shared.token.as_deref()
    }

    /// The base URL a client puts before `/v1/realtime/calls`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Calls in progress.
    pub async fn active_calls(&self) -> usize {
        self.shared.calls.lock().await.len()
    }

    /// Calls accepted since the start.
    pub fn calls_total(&self) -> u64 {
        self.shared.calls_total.load(Ordering::Relaxed)
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
