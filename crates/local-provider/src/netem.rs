//! A network that loses, delays, reorders and duplicates packets, on loopback, for the tests and
//! benches: this kernel has no netem, and Walkie's calls must be seen riding out a real
//! network's faults.
//!
//! [`Relay`] stands between a client and any Realtime-shaped server (the local provider, the
//! aiortc peer): its HTTP front forwards call setup and hides each side's ICE candidates from
//! the other. The offer reaches the server with no candidates, so the server only learns the
//! relay's address, from the client's connectivity checks (a peer-reflexive candidate); the
//! answer reaches the client with one candidate, the relay's UDP socket for that call. Every
//! packet of the call then crosses that socket, where a seeded [`Schedule`] per direction
//! decides its fate. Nothing else changes: ufrag, password and the DTLS fingerprint are the
//! ends' own, so the relay cannot read or alter the media, only lose or delay it.
//!
//! Test bench only (the `test-bench` feature).

use std::collections::HashMap;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};
use tokio::net::{TcpListener, UdpSocket};
use tokio::task::JoinHandle;
use tokio::time::Instant;

/// What the network does to the packets of one direction.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Impairment {
    /// The share of packets lost, in percent. With `burst_packets` above 1, losses come in
    /// bursts of that many packets, started often enough to lose this share on average.
    pub loss_percent: f64,
    /// Consecutive packets lost in each loss (1: independent losses).
    pub burst_packets: u32,
    /// Every packet's one-way delay.
    pub delay_ms: u32,
    /// Each packet's delay varies uniformly by up to this much either way, independently, so
    /// packets overtake each other when it exceeds their spacing.
    pub jitter_ms: u32,
    /// The share of packets delivered twice, in percent (the copy a little later).
    pub duplicate_percent: f64,
}

impl Impairment {
    /// A network that loses nothing and adds no delay.
    pub const CLEAN: Impairment = Impairment {
        loss_percent: 0.0,
        burst_packets: 1,
        delay_ms: 0,
        jitter_ms: 0,
        duplicate_percent: 0.0,
    };

    /// `percent` of packets lost independently.
    pub fn random_loss(percent: f64) -> Self {
        Self {
            loss_percent: percent,
            ..Self::CLEAN
        }
    }
}

/// What becomes of one packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fate {
    Lost,
    /// Delivered after this long.
    Delivered {
        after_ms: u32,
    },
    /// Delivered after the first delay, and again after the second.
    Duplicated {
        after_ms: u32,
        again_after_ms: u32,
    },
}

/// Decides each packet's fate, from a seed: the same seed and the same packets at the same
/// times give the same fates. Pure: the time comes in as an argument.
#[derive(Debug)]
pub struct Schedule {
    impairment: Impairment,
    rng: Xoshiro256PlusPlus,
    /// Packets still to lose in the burst under way.
    burst_left: u32,
    /// Until when nothing gets through.
    blackout_until_ms: Option<u64>,
}

impl Schedule {
    pub fn new(impairment: Impairment, seed: u64) -> Self {
        Self {
            impairment,
            rng: Xoshiro256PlusPlus::seed_from_u64(seed),
            burst_left: 0,
            blackout_until_ms: None,
        }
    }

    pub fn set_impairment(&mut self, impairment: Impairment) {
        self.impairment = impairment;
        self.burst_left = 0;
    }

    /// Nothing gets through from `now_ms` for `duration_ms`.
    pub fn black_out(&mut self, now_ms: u64, duration_ms: u64) {
        self.blackout_until_ms = Some(now_ms.saturating_add(duration_ms));
    }

    /// The fate of a packet that arrives at `now_ms`.
    pub fn fate(&mut self, now_ms: u64) -> Fate {
        let impairment = self.impairment;
        if self.blackout_until_ms.is_some_and(|until| now_ms < until) {
            return Fate::Lost;
        }
        if self.burst_left > 0 {
            self.burst_left -= 1;
            return Fate::Lost;
        }
        let burst = impairment.burst_packets.max(1);
        let start_chance = impairment.loss_percent / 100.0 / f64::from(burst);
        if start_chance > 0.0 && self.rng.random::<f64>() < start_chance {
            self.burst_left = burst - 1;
            return Fate::Lost;
        }
        let after_ms = self.delay_ms();
        if impairment.duplicate_percent > 0.0
            && self.rng.random::<f64>() < impairment.duplicate_percent / 100.0
        {
            let again_after_ms = after_ms + 1 + self.rng.random_range(0..=10);
            return Fate::Duplicated {
                after_ms,
                again_after_ms,
            };
        }
        Fate::Delivered { after_ms }
    }

    fn delay_ms(&mut self) -> u32 {
        let Impairment {
            delay_ms,
            jitter_ms,
            ..
        } = self.impairment;
        if jitter_ms == 0 {
            return delay_ms;
        }
        let offset = self
            .rng
            .random_range(-i64::from(jitter_ms)..=i64::from(jitter_ms));
        (i64::from(delay_ms) + offset).max(0) as u32
    }
}

/// Which way a packet goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Direction {
    /// From the client (Walkie) to the server.
    Up,
    /// From the server to the client.
    Down,
}

/// What the relay did with the packets of one direction, over all its calls.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DirectionCounts {
    pub received: u64,
    pub lost: u64,
    pub duplicated: u64,
}

struct Shared {
    upstream: String,
    http: reqwest::Client,
    started: Instant,
    schedules: Mutex<HashMap<Direction, Schedule>>,
    counts: Mutex<HashMap<Direction, DirectionCounts>>,
    calls: Mutex<Vec<JoinHandle<()>>>,
}

impl Shared {
    fn now_ms(&self) -> u64 {
        self.started.elapsed().as_millis() as u64
    }

    fn fate(&self, direction: Direction) -> Fate {
        let now_ms = self.now_ms();
        let fate = self
            .schedules
            .lock()
            .expect("no relay task panics holding the schedules")
            .get_mut(&direction)
            .expect("a schedule per direction")
            .fate(now_ms);
        let mut counts = self
            .counts
            .lock()
            .expect("no relay task panics holding the counts");
        let counts = counts.entry(direction).or_default();
        counts.received += 1;
        match fate {
            Fate::Lost => counts.lost += 1,
            Fate::Duplicated { .. } => counts.duplicated += 1,
            Fate::Delivered { .. } => {}
        }
        fate
    }
}

/// The impaired network in front of one server. Ends its calls' relaying when dropped.
pub struct Relay {
    shared: Arc<Shared>,
    address: SocketAddr,
    server: JoinHandle<()>,
}

impl Relay {
    /// A relay in front of `upstream` (the server's base URL), each direction impaired as
    /// given, its schedules seeded from `seed`.
    pub async fn start(upstream: &str, impairment: Impairment, seed: u64) -> std::io::Result<Self> {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await?;
        let address = listener.local_addr()?;
        // reqwest wants a TLS configuration even for plain http; it speaks to loopback only.
        let tls = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .map_err(std::io::Error::other)?
        .with_root_certificates(rustls::RootCertStore::empty())
        .with_no_client_auth();
        let http = reqwest::Client::builder()
            .tls_backend_preconfigured(tls)
            .no_proxy()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(std::io::Error::other)?;
        let shared = Arc::new(Shared {
            upstream: upstream.trim_end_matches('/').to_owned(),
            http,
            started: Instant::now(),
            schedules: Mutex::new(HashMap::from([
                (Direction::Up, Schedule::new(impairment, seed)),
                (
                    Direction::Down,
                    Schedule::new(impairment, seed.wrapping_add(1)),
                ),
            ])),
            counts: Mutex::default(),
            calls: Mutex::default(),
        });
        let router = Router::new().fallback(forward).with_state(shared.clone());
        let server = tokio::spawn(async move {
            if let Err(error) = axum::serve(listener, router).await {
                log::warn!("the relay's HTTP front stopped: {error}");
            }
        });
        Ok(Self {
            shared,
            address,
            server,
        })
    }

    /// The base URL a client calls instead of the server's.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.address)
    }

    /// From now on, both directions impaired as given.
    pub fn set_impairment(&self, impairment: Impairment) {
        for direction in [Direction::Up, Direction::Down] {
            self.set_impairment_toward(direction, impairment);
        }
    }

    /// From now on, the packets going `direction` impaired as given.
    pub fn set_impairment_toward(&self, direction: Direction, impairment: Impairment) {
        self.shared
            .schedules
            .lock()
            .expect("no relay task panics holding the schedules")
            .get_mut(&direction)
            .expect("a schedule per direction")
            .set_impairment(impairment);
    }

    /// Nothing gets through, either way, for `duration`, from now.
    pub fn black_out(&self, duration: Duration) {
        let now_ms = self.shared.now_ms();
        for schedule in self
            .shared
            .schedules
            .lock()
            .expect("no relay task panics holding the schedules")
            .values_mut()
        {
            schedule.black_out(now_ms, duration.as_millis() as u64);
        }
    }

    /// What was done to the packets going `direction` so far.
    pub fn counts(&self, direction: Direction) -> DirectionCounts {
        self.shared
            .counts
            .lock()
            .expect("no relay task panics holding the counts")
            .get(&direction)
            .copied()
            .unwrap_or_default()
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.server.abort();
        if let Ok(calls) = self.shared.calls.lock() {
            for call in calls.iter() {
                call.abort();
            }
        }
    }
}

/// The most of a request or answer body the relay reads (an offer with a session is a few KiB).
const MAX_BODY_BYTES: usize = 1024 * 1024;

/// Forwards one request to the server; call setup gets its candidates rewritten.
async fn forward(State(shared): State<Arc<Shared>>, request: Request) -> Response {
    match forward_call_setup(&shared, request).await {
        Ok(response) => response,
        Err(reason) => (StatusCode::BAD_GATEWAY, reason).into_response(),
    }
}

async fn forward_call_setup(shared: &Arc<Shared>, request: Request) -> Result<Response, String> {
    let (parts, body) = request.into_parts();
    let path = parts.uri.path().to_owned();
    let query = parts
        .uri
        .query()
        .map(|query| format!("?{query}"))
        .unwrap_or_default();
    let body = axum::body::to_bytes(body, MAX_BODY_BYTES)
        .await
        .map_err(|error| format!("the request's body: {error}"))?;
    let live = path.ends_with("/v1/live/sessions");
    let setup =
        parts.method == axum::http::Method::POST && (path.ends_with("/v1/realtime/calls") || live);
    let body = if setup {
        Bytes::from(rewrite_offer_body(&body, live))
    } else {
        body
    };
    let mut upstream = shared
        .http
        .request(
            parts.method.clone(),
            format!("{}{path}{query}", shared.upstream),
        )
        .body(body);
    for (name, value) in &parts.headers {
        if name != header::HOST && name != header::CONTENT_LENGTH {
            upstream = upstream.header(name, value);
        }
    }
    let answer = upstream
        .send()
        .await
        .map_err(|error| format!("the server: {error}"))?;
    let status = answer.status();
    let headers = answer.headers().clone();
    let body = answer
        .bytes()
        .await
        .map_err(|error| format!("the server's answer: {error}"))?;
    let body = if setup && status.is_success() {
        match relay_answer(shared, &body, live).await {
            Ok(body) => Bytes::from(body),
            Err(reason) => return Err(reason),
        }
    } else {
        body
    };
    let mut response = Response::builder().status(status.as_u16());
    for name in [header::CONTENT_TYPE, header::LOCATION, header::RETRY_AFTER] {
        if let Some(value) = headers.get(name.as_str()) {
            response = response.header(
                name,
                HeaderValue::from_bytes(value.as_bytes()).map_err(|e| e.to_string())?,
            );
        }
    }
    response
        .body(Body::from(body))
        .map_err(|error| format!("the answer: {error}"))
}

/// The offer without its candidates (in a multipart body, the raw SDP, or a Live session's
/// `transport.sdp`). A body that is not UTF-8 goes on as it came.
fn rewrite_offer_body(body: &[u8], live: bool) -> Vec<u8> {
    let Ok(text) = std::str::from_utf8(body) else {
        return body.to_vec();
    };
    if live {
        let Ok(mut json) = serde_json::from_str::<serde_json::Value>(text) else {
            return body.to_vec();
        };
        if let Some(sdp) = json.pointer_mut("/transport/sdp")
            && let Some(offer) = sdp.as_str()
        {
            *sdp = serde_json::Value::String(without_candidates(offer));
        }
        return json.to_string().into_bytes();
    }
    // A multipart body's SDP part is lines like the raw offer's; no other part has a line that
    // starts with `a=candidate`.
    without_candidates(text).into_bytes()
}

/// Opens the call's relay socket toward the server's loopback candidate and puts it in the
/// answer in place of the server's candidates.
async fn relay_answer(shared: &Arc<Shared>, body: &[u8], live: bool) -> Result<Vec<u8>, String> {
    let text = std::str::from_utf8(body).map_err(|_| "the answer is not UTF-8".to_owned())?;
    let mut json = None;
    let sdp = if live {
        let parsed: serde_json::Value =
            serde_json::from_str(text).map_err(|error| format!("the Live answer: {error}"))?;
        let sdp = parsed
            .pointer("/transport/sdp")
            .and_then(serde_json::Value::as_str)
            .ok_or("the Live answer has no transport.sdp")?
            .to_owned();
        json = Some(parsed);
        sdp
    } else {
        text.to_owned()
    };
    let server = loopback_candidate(&sdp).ok_or("the answer has no UDP candidate on 127.0.0.1")?;
    let socket = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0))
        .await
        .map_err(|error| format!("the relay's socket: {error}"))?;
    let relay = socket
        .local_addr()
        .map_err(|error| format!("the relay's socket: {error}"))?;
    let task = tokio::spawn(relay_packets(shared.clone(), Arc::new(socket), server));
    shared
        .calls
        .lock()
        .expect("no relay task panics holding the calls")
        .push(task);
    let rewritten = with_only_candidate(&sdp, relay);
    Ok(match json {
        Some(mut json) => {
            if let Some(sdp) = json.pointer_mut("/transport/sdp") {
                *sdp = serde_json::Value::String(rewritten);
            }
            json.to_string().into_bytes()
        }
        None => rewritten.into_bytes(),
    })
}

/// Carries one call's packets: from the server to the client's last address, from anyone
/// else to the server, each by its direction's schedule.
async fn relay_packets(shared: Arc<Shared>, socket: Arc<UdpSocket>, server: SocketAddr) {
    let mut client: Option<SocketAddr> = None;
    let mut buffer = vec![0u8; 2048];
    loop {
        let Ok((length, from)) = socket.recv_from(&mut buffer).await else {
            return;
        };
        let (direction, to) = if from == server {
            match client {
                Some(client) => (Direction::Down, client),
                None => continue,
            }
        } else {
            client = Some(from);
            (Direction::Up, server)
        };
        let packet = Bytes::copy_from_slice(&buffer[..length]);
        match shared.fate(direction) {
            Fate::Lost => {}
            Fate::Delivered { after_ms } => send_after(&socket, packet, to, after_ms).await,
            Fate::Duplicated {
                after_ms,
                again_after_ms,
            } => {
                send_after(&socket, packet.clone(), to, after_ms).await;
                send_after(&socket, packet, to, again_after_ms).await;
            }
        }
    }
}

async fn send_after(socket: &Arc<UdpSocket>, packet: Bytes, to: SocketAddr, after_ms: u32) {
    if after_ms == 0 {
        let _ = socket.send_to(&packet, to).await;
        return;
    }
    let socket = socket.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(u64::from(after_ms))).await;
        let _ = socket.send_to(&packet, to).await;
    });
}

fn is_candidate_line(line: &str) -> bool {
    line.starts_with("a=candidate:") || line.starts_with("a=end-of-candidates")
}

/// `sdp` without its candidate lines (and without `a=end-of-candidates`, so the other side
/// waits for the candidates its checks reveal).
pub fn without_candidates(sdp: &str) -> String {
    sdp.split_inclusive('\n')
        .filter(|line| !is_candidate_line(line))
        .collect()
}

/// The first UDP candidate of `sdp` on 127.0.0.1.
pub fn loopback_candidate(sdp: &str) -> Option<SocketAddr> {
    sdp.lines().find_map(|line| {
        let fields: Vec<&str> = line
            .strip_prefix("a=candidate:")?
            .split_whitespace()
            .collect();
        // foundation component transport priority address port "typ" type
        let (transport, address, port) = (fields.get(2)?, fields.get(4)?, fields.get(5)?);
        if !transport.eq_ignore_ascii_case("udp") || *address != "127.0.0.1" {
            return None;
        }
        Some(SocketAddr::from((Ipv4Addr::LOCALHOST, port.parse().ok()?)))
    })
}

/// `sdp` with one candidate, `relay`, in each media section that had any, in place of its own.
pub fn with_only_candidate(sdp: &str, relay: SocketAddr) -> String {
    let mut rewritten = String::with_capacity(sdp.len());
    let mut placed_in_section = false;
    for line in sdp.split_inclusive('\n') {
        if line.starts_with("m=") {
            placed_in_section = false;
        }
        if line.starts_with("a=candidate:") {
            if !placed_in_section {
                let ending = if line.ends_with("\r\n") { "\r\n" } else { "\n" };
                rewritten.push_str(&format!(
                    "a=candidate:relay 1 udp 2130706431 {} {} typ host{ending}",
                    relay.ip(),
                    relay.port()
                ));
                placed_in_section = true;
            }
            continue;
        }
        rewritten.push_str(line);
    }
    rewritten
}

impl std::fmt::Debug for Relay {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Relay")
            .field("address", &self.address)
            .field("upstream", &self.shared.upstream)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ANSWER: &str = "v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\n\
        a=group:BUNDLE 0 1\r\n\
        m=audio 9 UDP/TLS/RTP/SAVPF 111\r\nc=IN IP4 0.0.0.0\r\na=mid:0\r\n\
        a=candidate:1 1 udp 2130706431 10.0.0.5 50000 typ host\r\n\
        a=candidate:2 1 udp 2130706431 127.0.0.1 50001 typ host\r\n\
        a=end-of-candidates\r\n\
        m=application 9 UDP/DTLS/SCTP webrtc-datachannel\r\na=mid:1\r\n\
        a=candidate:2 1 udp 2130706431 127.0.0.1 50001 typ host\r\n";

    #[test]
    fn the_server_is_reached_at_its_loopback_candidate() {
        assert_eq!(
            loopback_candidate(ANSWER),
            Some(SocketAddr::from(([127, 0, 0, 1], 50001)))
        );
        assert_eq!(loopback_candidate("v=0\r\n"), None);
    }

    #[test]
    fn the_answer_names_only_the_relay_once_per_media_section() {
        let relay = SocketAddr::from(([127, 0, 0, 1], 40000));
        let rewritten = with_only_candidate(ANSWER, relay);
        let candidates: Vec<&str> = rewritten
            .lines()
            .filter(|line| line.starts_with("a=candidate:"))
            .collect();
        assert_eq!(
            candidates,
            [
                "a=candidate:relay 1 udp 2130706431 127.0.0.1 40000 typ host",
                "a=candidate:relay 1 udp 2130706431 127.0.0.1 40000 typ host"
            ]
        );
        assert!(rewritten.contains("a=mid:1\r\na=candidate:relay"));
        assert!(rewritten.contains("a=end-of-candidates\r\n"), "kept");
        assert!(!without_candidates(ANSWER).contains("candidate"));
        assert!(without_candidates(ANSWER).contains("a=mid:1\r\n"));
    }

    #[test]
    fn the_same_seed_gives_the_same_fates_and_the_loss_comes_near_its_share() {
        let impairment = Impairment::random_loss(3.0);
        let fates = |seed| {
            let mut schedule = Schedule::new(impairment, seed);
            (0..20_000)
                .map(|i| schedule.fate(i * 20))
                .collect::<Vec<_>>()
        };
        assert_eq!(fates(7), fates(7));
        assert_ne!(fates(7), fates(8));
        let lost = fates(7).iter().filter(|fate| **fate == Fate::Lost).count();
        assert!((500..=700).contains(&lost), "3 % of 20,000 is 600: {lost}");
    }

    #[test]
    fn bursts_lose_that_many_packets_in_a_row_at_the_same_share() {
        let mut schedule = Schedule::new(
            Impairment {
                loss_percent: 5.0,
                burst_packets: 5,
                ..Impairment::CLEAN
            },
            3,
        );
        let fates: Vec<bool> = (0..20_000)
            .map(|i| schedule.fate(i * 20) == Fate::Lost)
            .collect();
        let lost = fates.iter().filter(|lost| **lost).count();
        assert!((800..=1_200).contains(&lost), "5 % of 20,000: {lost}");
        let mut runs = Vec::new();
        let mut run = 0;
        for lost in fates {
            if lost {
                run += 1;
            } else if run > 0 {
                runs.push(run);
                run = 0;
            }
        }
        assert!(
            runs.iter().all(|run| run % 5 == 0),
            "every loss is a burst of 5 (two may touch): {runs:?}"
        );
    }

    #[test]
    fn jitter_spreads_the_delay_around_its_mean_and_a_blackout_loses_everything_for_its_time() {
        let mut schedule = Schedule::new(
            Impairment {
                delay_ms: 40,
                jitter_ms: 30,
                ..Impairment::CLEAN
            },
            11,
        );
        let delays: Vec<u32> = (0..1_000)
            .map(|i| match schedule.fate(i * 20) {
                Fate::Delivered { after_ms } => after_ms,
                other => panic!("only delays: {other:?}"),
            })
            .collect();
        assert!(delays.iter().all(|delay| (10..=70).contains(delay)));
        assert!(delays.iter().any(|delay| *delay < 20) && delays.iter().any(|delay| *delay > 60));
        schedule.black_out(20_000, 3_000);
        assert_eq!(schedule.fate(20_000), Fate::Lost);
        assert_eq!(schedule.fate(22_999), Fate::Lost);
        assert!(matches!(schedule.fate(23_000), Fate::Delivered { .. }));
    }
}
