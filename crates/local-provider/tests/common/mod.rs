//! A raw client for the contract tests: a real WebRTC offer from `walkie_rtc::peer`, the HTTP
//! request built by hand with reqwest (so each test chooses the exact form, headers and path),
//! and the data channel read as JSON text.

#![allow(dead_code)]

use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;
use walkie_rtc::{Peer, PeerConfig, PeerEvent, PendingOffer, peer};

pub const WAIT: Duration = Duration::from_secs(10);

/// A fresh, empty directory under the test target's scratch space.
pub fn scratch_dir(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "{name}-{}-{:08x}",
        std::process::id(),
        rand_suffix()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// `<target dir>/oracle-trace/<name>/`, emptied: a trace the test command's oracle
/// (scripts/oracle/) checks against the official SDK's types after the tests. Only for traces
/// of what Walkie's own client sent: a test that sends bad events on purpose keeps its trace in
/// a [`scratch_dir`].
pub fn oracle_trace_dir(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("CARGO_TARGET_TMPDIR is <target dir>/tmp")
        .join("oracle-trace")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn rand_suffix() -> u32 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| since.subsec_nanos())
}

/// An HTTP client (the workspace's reqwest has no TLS provider of its own; ring is installed,
/// though these requests are plain http to loopback).
pub fn http() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::new()
}

/// A provider that wants `token` and keeps a trace in a fresh scratch directory.
pub async fn traced_provider(name: &str, token: &str) -> (walkie_local::LocalProvider, PathBuf) {
    provider_tracing_into(scratch_dir(name), token).await
}

/// A provider that wants `token` and whose trace the oracle checks too (everything sent to it
/// in the test is Walkie's own client's).
pub async fn oracle_traced_provider(
    name: &str,
    token: &str,
) -> (walkie_local::LocalProvider, PathBuf) {
    provider_tracing_into(oracle_trace_dir(name), token).await
}

async fn provider_tracing_into(
    dir: PathBuf,
    token: &str,
) -> (walkie_local::LocalProvider, PathBuf) {
    let provider = walkie_local::LocalProvider::start(walkie_local::ProviderConfig {
        token: Some(token.to_owned()),
        trace_dir: Some(dir.clone()),
        ..walkie_local::ProviderConfig::default()
    })
    .await
    .expect("the provider listens");
    (provider, dir)
}

pub async fn offer() -> PendingOffer {
    peer::offer(&PeerConfig::default())
        .await
        .expect("a loopback offer")
}

/// `POST {base}/v1/realtime/calls` with the provider's token, as every client that may place
/// calls sends it; the body is the test's to add.
pub fn calls(provider: &walkie_local::LocalProvider) -> reqwest::RequestBuilder {
    http()
        .post(format!("{}/v1/realtime/calls", provider.base_url()))
        .bearer_auth(provider.token())
}

/// `request` with a raw SDP offer as its body, as an ephemeral-key client (or a browser) sends
/// it.
pub fn raw_sdp(request: reqwest::RequestBuilder, sdp: &str) -> reqwest::RequestBuilder {
    request
        .header("content-type", "application/sdp")
        .body(sdp.to_owned())
}

/// A multipart body with an `sdp` part and, if given, a `session` part, as the documented
/// "unified interface" sends them.
pub fn multipart(sdp: &str, session: Option<&Value>) -> reqwest::multipart::Form {
    let sdp_part = reqwest::multipart::Part::text(sdp.to_owned())
        .mime_str("application/sdp")
        .expect("a valid MIME type");
    let mut form = reqwest::multipart::Form::new().part("sdp", sdp_part);
    if let Some(session) = session {
        let session_part = reqwest::multipart::Part::text(session.to_string())
            .mime_str("application/json")
            .expect("a valid MIME type");
        form = form.part("session", session_part);
    }
    form
}

/// A call that was answered: the running peer and the call id from `Location`.
pub struct Connected {
    pub peer: Peer,
    pub call_id: String,
}

/// Sends the request; expects 201 with an SDP answer and a `Location`, and waits for the data
/// channel to open.
pub async fn connect(request: reqwest::RequestBuilder, pending: PendingOffer) -> Connected {
    let response = request.send().await.expect("the provider answers");
    let status = response.status();
    let location = response
        .headers()
        .get("location")
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned);
    let body = response.text().await.expect("a body");
    assert_eq!(status, 201, "the call is created: {body}");
    let location = location.expect("a Location header");
    let call_id = location
        .rsplit('/')
        .next()
        .expect("a path segment")
        .to_owned();
    assert!(call_id.starts_with("rtc_"), "{location}");
    let mut peer = pending.accept(&body).expect("the answer applies");
    tokio::time::timeout(WAIT, async {
        loop {
            match peer.events.recv().await {
                Some(PeerEvent::DataChannelOpen { .. }) => break,
                Some(PeerEvent::Failed { reason }) => panic!("the call failed: {reason}"),
                None => panic!("the peer ended before the data channel opened"),
                Some(_) => {}
            }
        }
    })
    .await
    .expect("the data channel opens");
    Connected { peer, call_id }
}

/// Reads server events until one of type `wanted`; returns it and the events before it.
pub async fn until(peer: &mut Peer, wanted: &str) -> (Value, Vec<Value>) {
    let mut before = Vec::new();
    let found = tokio::time::timeout(WAIT, async {
        loop {
            match peer.events.recv().await {
                Some(PeerEvent::Text { text, .. }) => {
                    let event: Value = serde_json::from_str(&text).expect("server events are JSON");
                    if event["type"] == wanted {
                        return event;
                    }
                    before.push(event);
                }
                Some(PeerEvent::Failed { reason }) => panic!("the call failed: {reason}"),
                Some(PeerEvent::DataChannelClosed | PeerEvent::Closed) | None => {
                    panic!("the call ended while waiting for {wanted}")
                }
                Some(_) => {}
            }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("no {wanted} within {WAIT:?}; before it: {before:?}"));
    (found, before)
}

pub async fn send(peer: &Peer, text: &str) {
    peer.handle
        .send_text(text.to_owned())
        .await
        .expect("the data channel is open");
}

/// The lines of a JSON Lines file.
pub fn lines(path: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|error| panic!("{}: {error}", path.display()))
        .lines()
        .map(|line| serde_json::from_str(line).expect("every trace line is JSON"))
        .collect()
}

/// `frames` 20 ms Opus frames of a steady 300 Hz tone, loud enough to be speech to a wake
/// policy at its default threshold: what a microphone sends while the user talks.
pub fn speech_frames(frames: usize) -> Vec<bytes::Bytes> {
    let mut encoder = opus::Encoder::new(48_000, opus::Channels::Mono, opus::Application::Voip)
        .expect("libopus makes an encoder for 48 kHz mono");
    (0..frames)
        .map(|frame| {
            let pcm: Vec<i16> = (0..960)
                .map(|i| {
                    let t = (frame * 960 + i) as f64 / 48_000.0;
                    (6_000.0 * (2.0 * std::f64::consts::PI * 300.0 * t).sin()) as i16
                })
                .collect();
            bytes::Bytes::from(
                encoder
                    .encode_vec(&pcm, 1500)
                    .expect("a 20 ms frame encodes"),
            )
        })
        .collect()
}
