//! One WebRTC peer: the sans-IO `rtc` core driven by this crate's own event loop.
//!
//! Why not the async `webrtc` crate: its driver sends the packets the core queues while it
//! handles events only at the next timer tick, which delays each step of setting up the data
//! channel by a tick. This loop *flushes after every event*: after any
//! input (a datagram, a command, a timeout) it drains the core's events and reads, then its
//! writes, and repeats until the core has nothing more to say. Nothing waits for a tick.
//!
//! The loop owns the peer connection and its UDP sockets; the application talks to it through
//! a [`PeerHandle`] (commands) and receives [`PeerEvent`]s. It translates network ⇄ events
//! only: no protocol logic lives here.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use rtc::data_channel::RTCDataChannelId;
use rtc::interceptor::Registry;
use rtc::media_stream::MediaStreamTrack;
use rtc::peer_connection::configuration::interceptor_registry::register_default_interceptors;
use rtc::peer_connection::configuration::media_engine::{MIME_TYPE_OPUS, MediaEngine};
use rtc::peer_connection::configuration::setting_engine::{
    SctpMaxMessageSize, SettingEngineBuilder,
};
use rtc::peer_connection::event::{RTCDataChannelEvent, RTCPeerConnectionEvent};
use rtc::peer_connection::message::{RTCMessage, TaggedRTCMessage};
use rtc::peer_connection::sdp::RTCSessionDescription;
use rtc::peer_connection::state::{RTCIceConnectionState, RTCPeerConnectionState};
use rtc::peer_connection::transport::{CandidateConfig, CandidateHostConfig, RTCIceCandidate};
use rtc::peer_connection::{RTCPeerConnection, RTCPeerConnectionBuilder};
use rtc::rtp_transceiver::RTCRtpSenderId;
use rtc::rtp_transceiver::rtp_sender::{
    RTCRtpCodec, RTCRtpCodecParameters, RTCRtpCodingParameters, RTCRtpEncodingParameters,
    RtpCodecKind,
};
use rtc::sansio::Protocol;
use rtc::shared::{TaggedBytesMut, TransportContext, TransportProtocol};
use tokio::net::UdpSocket;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use crate::error::RtcError;

/// The label of the data channel the OpenAI Realtime protocol uses.
pub const DATA_CHANNEL_LABEL: &str = "oai-events";
/// Opus on the wire: 48 kHz RTP clock.
pub const OPUS_CLOCK_RATE: u32 = 48_000;
/// The payload type offered for Opus (the OpenAI answer uses 111 too); the one actually used
/// for sending is read from the negotiation.
pub const OPUS_PAYLOAD_TYPE: u8 = 111;
const OPUS_FMTP: &str = "minptime=10;useinbandfec=1";
const UDP_RECV_BUFFER: usize = 2048;
/// Datagrams received and not yet handled, at most: a peer flooding the sockets faster than
/// the connection can take them loses the excess, as UDP would at the kernel's buffer,
/// instead of growing the process (~2 KiB each: 2 MiB in all).
const DATAGRAM_QUEUE: usize = 1024;
const NO_TIMEOUT: Duration = Duration::from_secs(86_400);
/// Events handed to the application and not yet taken, at most. Past it the loop stops
/// taking messages out of the connection (the WebRTC core then leaves data-channel text in
/// SCTP, whose shrinking receive window slows the remote), and holds the few it had in hand
/// until the application reads again. With messages of at most 64 KiB, at most 8 MiB wait.
pub const EVENT_QUEUE: usize = 128;
/// The largest data-channel message a peer takes by default: RFC 8841's default
/// `max-message-size`, 64 KiB.
pub const DEFAULT_MAX_MESSAGE_BYTES: u32 = 64 * 1024;
/// Text queued on the data channel and not yet acknowledged by the remote, at which
/// [`PeerHandle::send_text`] starts waiting: a sender that awaits it cannot queue more than
/// about this much, however fast it sends and however slowly the remote takes it.
pub const SEND_BACKLOG_HIGH_BYTES: u32 = 1024 * 1024;
/// The backlog at which waiting sends go on again.
pub const SEND_BACKLOG_LOW_BYTES: u32 = 256 * 1024;

/// Tuning of one peer. The defaults suit a desktop client and the local provider.
#[derive(Clone, Debug)]
pub struct PeerConfig {
    /// The UDP sockets to bind, one host candidate each. Loopback tests bind `127.0.0.1:0`;
    /// a wildcard address is not allowed (a candidate needs a concrete address).
    pub bind: Vec<SocketAddr>,
    /// Interval between ICE connectivity checks while connecting (the core's default is 200 ms).
    pub ice_check_interval: Duration,
    /// ICE `disconnected` after this long without an answer to consent checks.
    pub ice_disconnected_timeout: Duration,
    /// ICE `failed` after this long disconnected.
    pub ice_failed_timeout: Duration,
    /// Interval of ICE keepalives / consent checks once connected.
    pub ice_keepalive_interval: Duration,
    /// The largest data-channel message this peer takes, advertised in its SDP
    /// (`a=max-message-size`; the WebRTC core holds it to at most 256 KiB). The limit in force
    /// is the smaller of this and the remote's own. A longer message from a peer that ignores
    /// it is never delivered: the core drops it once reassembled and logs a warning (it tells
    /// this loop nothing, so no event reports it); the call goes on.
    pub max_message_bytes: u32,
}

impl Default for PeerConfig {
    fn default() -> Self {
        Self {
            bind: vec![SocketAddr::from(([127, 0, 0, 1], 0))],
            ice_check_interval: Duration::from_millis(20),
            ice_disconnected_timeout: Duration::from_secs(5),
            ice_failed_timeout: Duration::from_secs(25),
            ice_keepalive_interval: Duration::from_secs(2),
            max_message_bytes: DEFAULT_MAX_MESSAGE_BYTES,
        }
    }
}

/// One received RTP audio packet (one Opus frame).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RtpAudio {
    pub sequence_number: u16,
    /// In 48 kHz units.
    pub timestamp: u32,
    pub marker: bool,
    pub payload_type: u8,
    /// The Opus packet.
    pub payload: Bytes,
    pub received_at: Instant,
}

/// What the peer reports, in the order it happened.
#[derive(Clone, Debug, PartialEq)]
pub enum PeerEvent {
    /// ICE found a working candidate pair.
    IceConnected { at: Instant },
    /// ICE and DTLS are up: media can flow.
    Connected { at: Instant },
    /// The `oai-events` data channel is open: JSON events can flow.
    DataChannelOpen { at: Instant },
    /// A text message on the data channel.
    Text { text: String, at: Instant },
    /// A binary message on the data channel (the protocol sends text; kept, not dropped).
    Binary { data: Bytes, at: Instant },
    /// A received audio packet.
    Audio(RtpAudio),
    /// Connectivity lost for a while; may recover (treat as transient).
    Disconnected,
    /// Connectivity came back after [`PeerEvent::Disconnected`].
    Reconnected,
    /// The data channel closed (the remote closed it, or the connection went away).
    DataChannelClosed,
    /// The connection failed (ICE failure, lost consent, DTLS failure). The loop ends.
    Failed { reason: String },
    /// The loop ended after a local close.
    Closed,
    /// A text given to [`PeerHandle::queue_text`] could not be sent (why).
    SendFailed { error: String },
}

/// Counters the loop keeps, readable at any time.
#[derive(Debug, Default)]
pub struct PeerStats {
    pub datagrams_in: AtomicU64,
    /// Datagrams dropped because the queue to the connection was full (a flood).
    pub datagrams_dropped: AtomicU64,
    pub datagrams_out: AtomicU64,
    pub audio_in: AtomicU64,
    pub audio_out: AtomicU64,
    /// Audio frames given before the connection could carry them (dropped, as a muted mic).
    pub audio_dropped: AtomicU64,
    pub texts_in: AtomicU64,
    pub texts_out: AtomicU64,
    /// The most text the data channel has held unacknowledged by the remote, in bytes.
    pub send_backlog_peak_bytes: AtomicU64,
    /// The round trip of the last connectivity check on the nominated candidate pair, in
    /// microseconds (ICE consent checks every [`PeerConfig::ice_keepalive_interval`]); 0 until
    /// one was answered.
    pub round_trip_us: AtomicU64,
}

impl PeerStats {
    /// The round trip of the last answered connectivity check, when there was one.
    pub fn round_trip_ms(&self) -> Option<f64> {
        let micros = self.round_trip_us.load(Ordering::Relaxed);
        (micros > 0).then(|| micros as f64 / 1000.0)
    }
}

enum Command {
    /// A text to send; the result goes to the sender, or (none) comes back as an event.
    Text(String, Option<oneshot::Sender<Result<(), RtcError>>>),
    Audio {
        payload: Bytes,
        samples: u32,
    },
    Close(oneshot::Sender<()>),
    Abort(oneshot::Sender<()>),
}

/// Sends commands to a peer's loop. Cheap to clone.
#[derive(Clone)]
pub struct PeerHandle {
    commands: mpsc::UnboundedSender<Command>,
    stats: Arc<PeerStats>,
    local_addrs: Arc<Vec<SocketAddr>>,
}

impl PeerHandle {
    /// Sends one text message on the data channel. Fails if the channel is not open. Returns
    /// once the message is queued and the channel's backlog is under
    /// [`SEND_BACKLOG_HIGH_BYTES`] (or back under [`SEND_BACKLOG_LOW_BYTES`] once it went
    /// over), so a sender that awaits each send is paced by the remote.
    pub async fn send_text(&self, text: impl Into<String>) -> Result<(), RtcError> {
        let (reply, answer) = oneshot::channel();
        self.commands
            .send(Command::Text(text.into(), Some(reply)))
            .map_err(|_| RtcError::Closed)?;
        answer.await.map_err(|_| RtcError::Closed)?
    }

    /// Queues one text message for the data channel without waiting for it to go out: a
    /// failure comes back as [`PeerEvent::SendFailed`]. Fails at once only when the loop has
    /// ended.
    pub fn queue_text(&self, text: impl Into<String>) -> Result<(), RtcError> {
        self.commands
            .send(Command::Text(text.into(), None))
            .map_err(|_| RtcError::Closed)
    }

    /// Sends one Opus packet of `samples` 48 kHz samples (960 for 20 ms) as one RTP packet.
    /// Before the connection is up the frame is dropped (and counted), like a muted microphone.
    pub fn send_audio(&self, payload: Bytes, samples: u32) -> Result<(), RtcError> {
        self.commands
            .send(Command::Audio { payload, samples })
            .map_err(|_| RtcError::Closed)
    }

    /// Closes the data channel and the connection, and waits for the loop to end.
    pub async fn close(&self) {
        let (reply, done) = oneshot::channel();
        if self.commands.send(Command::Close(reply)).is_ok() {
            let _ = done.await;
        }
    }

    /// Ends the loop at once *without a goodbye*: no data-channel close, no DTLS
    /// `close_notify`, nothing more on the wire, as if the machine had vanished. The remote
    /// finds out only by losing ICE consent. For fault injection (the local provider's
    /// "drop the connection"); use [`PeerHandle::close`] to end a call.
    pub async fn abort(&self) {
        let (reply, done) = oneshot::channel();
        if self.commands.send(Command::Abort(reply)).is_ok() {
            let _ = done.await;
        }
    }

    /// Whether the loop has ended.
    pub fn is_closed(&self) -> bool {
        self.commands.is_closed()
    }

    pub fn stats(&self) -> &PeerStats {
        &self.stats
    }

    /// The addresses of the bound UDP sockets (the host candidates).
    pub fn local_addrs(&self) -> &[SocketAddr] {
        &self.local_addrs
    }
}

/// A running peer: its handle and its event stream.
pub struct Peer {
    pub handle: PeerHandle,
    /// Bounded ([`EVENT_QUEUE`]): read it, or the connection stops delivering.
    pub events: mpsc::Receiver<PeerEvent>,
}

/// An offer made and not yet answered. Dropping it releases the sockets.
pub struct PendingOffer {
    setup: Setup,
    sdp: String,
}

impl PendingOffer {
    /// The full (non-trickle) SDP offer, candidates included.
    pub fn sdp(&self) -> &str {
        &self.sdp
    }

    /// Applies the remote answer and starts the loop.
    pub fn accept(mut self, answer_sdp: &str) -> Result<Peer, RtcError> {
        let ParsedAnswer(answer) = parse_answer(answer_sdp)?;
        self.setup
            .pc
            .set_remote_description(Instant::now(), answer)
            .map_err(|error| RtcError::BadAnswer(error.to_string()))?;
        Ok(self.setup.spawn())
    }
}

/// An SDP answer that parsed, ready to be set as the remote description.
#[derive(Debug)]
pub struct ParsedAnswer(RTCSessionDescription);

/// Parses the body of the provider's answer (`POST /v1/realtime/calls`) the way
/// [`PendingOffer::accept`] does before applying it. Pure: no sockets, no clock; any text gives
/// a typed result, never a panic (the fuzz target `sdp_answer` holds it to that).
pub fn parse_answer(answer_sdp: &str) -> Result<ParsedAnswer, RtcError> {
    RTCSessionDescription::answer(answer_sdp.to_owned())
        .map(ParsedAnswer)
        .map_err(|error| RtcError::BadAnswer(error.to_string()))
}

/// Creates the offering side: the `oai-events` data channel and one sendrecv Opus track,
/// both before the offer, host candidates for every bound socket, gathering complete.
pub async fn offer(config: &PeerConfig) -> Result<PendingOffer, RtcError> {
    let mut setup = Setup::new(config).await?;
    let channel = setup.pc.create_data_channel(DATA_CHANNEL_LABEL, None)?;
    setup.channel = Some(channel.id());
    setup.add_candidates()?;
    let offer = setup.pc.create_offer(None)?;
    setup.pc.set_local_description(Instant::now(), offer)?;
    let sdp = setup
        .pc
        .local_description()
        .ok_or_else(|| RtcError::WebRtc("no local description after setting it".to_owned()))?
        .sdp;
    Ok(PendingOffer { setup, sdp })
}

/// Creates the answering side from a remote offer; returns the running peer and the full SDP
/// answer. The data channel is the one the offerer created (`oai-events`).
pub async fn answer(config: &PeerConfig, offer_sdp: &str) -> Result<(Peer, String), RtcError> {
    let mut setup = Setup::new(config).await?;
    let offer = RTCSessionDescription::offer(offer_sdp.to_owned())
        .map_err(|error| RtcError::BadOffer(error.to_string()))?;
    setup
        .pc
        .set_remote_description(Instant::now(), offer)
        .map_err(|error| RtcError::BadOffer(error.to_string()))?;
    setup.add_candidates()?;
    let answer = setup
        .pc
        .create_answer(None)
        .map_err(|error| RtcError::BadOffer(error.to_string()))?;
    setup.pc.set_local_description(Instant::now(), answer)?;
    let sdp = setup
        .pc
        .local_description()
        .ok_or_else(|| RtcError::WebRtc("no local description after setting it".to_owned()))?
        .sdp;
    Ok((setup.spawn(), sdp))
}

fn opus_codec() -> RTCRtpCodec {
    RTCRtpCodec {
        mime_type: MIME_TYPE_OPUS.to_owned(),
        clock_rate: OPUS_CLOCK_RATE,
        channels: 2,
        sdp_fmtp_line: OPUS_FMTP.to_owned(),
        rtcp_feedback: vec![],
    }
}

/// Everything built before the loop starts.
struct Setup {
    pc: RTCPeerConnection,
    sockets: Vec<(SocketAddr, Arc<UdpSocket>)>,
    sender: RTCRtpSenderId,
    ssrc: u32,
    channel: Option<RTCDataChannelId>,
}

impl Setup {
    async fn new(config: &PeerConfig) -> Result<Self, RtcError> {
        let mut sockets = Vec::with_capacity(config.bind.len());
        for addr in &config.bind {
            if addr.ip().is_unspecified() {
                return Err(RtcError::WebRtc(format!(
                    "bind address {addr} is a wildcard; give concrete interface addresses"
                )));
            }
            let socket = UdpSocket::bind(addr).await?;
            sockets.push((socket.local_addr()?, Arc::new(socket)));
        }
        if sockets.is_empty() {
            return Err(RtcError::WebRtc("no UDP bind address given".to_owned()));
        }

        let mut media = MediaEngine::default();
        media.register_codec(
            RTCRtpCodecParameters {
                rtp_codec: opus_codec(),
                payload_type: OPUS_PAYLOAD_TYPE,
            },
            RtpCodecKind::Audio,
        )?;
        let registry = register_default_interceptors(Registry::new(), &mut media)?;
        let settings = SettingEngineBuilder::new()
            .with_ice_connection_attempts(Some(config.ice_check_interval), None)
            .with_ice_timeouts(
                Some(config.ice_disconnected_timeout),
                Some(config.ice_failed_timeout),
                Some(config.ice_keepalive_interval),
            )
            .with_sctp_max_message_size(SctpMaxMessageSize::Bounded(config.max_message_bytes))
            .build();
        let mut pc = RTCPeerConnectionBuilder::new()
            .with_media_engine(media)
            .with_setting_engine(settings)
            .with_interceptor_registry(registry)
            .build(Instant::now())?;

        let ssrc = rand::random::<u32>();
        let track = MediaStreamTrack::new(
            format!("walkie-{ssrc:08x}"),
            format!("walkie-audio-{ssrc:08x}"),
            "audio".to_owned(),
            RtpCodecKind::Audio,
            vec![RTCRtpEncodingParameters {
                rtp_coding_parameters: RTCRtpCodingParameters {
                    ssrc: Some(ssrc),
                    ..Default::default()
                },
                codec: opus_codec(),
                ..Default::default()
            }],
        );
        let sender = pc.add_track(track)?;
        Ok(Self {
            pc,
            sockets,
            sender,
            ssrc,
            channel: None,
        })
    }

    fn add_candidates(&mut self) -> Result<(), RtcError> {
        for (addr, _) in &self.sockets {
            let candidate = CandidateHostConfig {
                base_config: CandidateConfig {
                    network: "udp".to_owned(),
                    address: addr.ip().to_string(),
                    port: addr.port(),
                    component: 1,
                    ..Default::default()
                },
                ..Default::default()
            }
            .new_candidate_host()?;
            self.pc
                .add_local_candidate(RTCIceCandidate::from(&candidate).to_json()?)?;
        }
        // An empty candidate ends gathering: the SDP is complete (no trickle).
        self.pc.add_local_candidate(Default::default())?;
        Ok(())
    }

    fn spawn(self) -> Peer {
        let (commands, command_rx) = mpsc::unbounded_channel();
        let (event_tx, events) = mpsc::channel(EVENT_QUEUE);
        let (datagram_tx, datagram_rx) = mpsc::channel(DATAGRAM_QUEUE);
        let stats = Arc::new(PeerStats::default());
        let local_addrs = Arc::new(self.sockets.iter().map(|(addr, _)| *addr).collect());
        let readers = self
            .sockets
            .iter()
            .map(|(addr, socket)| {
                tokio::spawn(read_socket(
                    *addr,
                    socket.clone(),
                    datagram_tx.clone(),
                    stats.clone(),
                ))
            })
            .collect();
        let event_loop = EventLoop {
            pc: self.pc,
            sockets: self.sockets,
            sender: self.sender,
            ssrc: self.ssrc,
            channel: self.channel,
            channel_open: false,
            channel_closed: false,
            events: event_tx,
            overflow: VecDeque::new(),
            stats: stats.clone(),
            readers,
            paced_replies: Vec::new(),
            audio: AudioClock::new(),
            payload_type: None,
            ice_connected: false,
            disconnected: false,
            ended: false,
            next_stats_at: Instant::now(),
        };
        tokio::spawn(event_loop.run(command_rx, datagram_rx));
        Peer {
            handle: PeerHandle {
                commands,
                stats,
                local_addrs,
            },
            events,
        }
    }
}

struct Datagram {
    local: SocketAddr,
    peer: SocketAddr,
    data: BytesMut,
    at: Instant,
}

/// Moves what `socket` receives to the connection's queue; when the queue is full the
/// datagram is dropped and counted.
async fn read_socket(
    local: SocketAddr,
    socket: Arc<UdpSocket>,
    datagrams: mpsc::Sender<Datagram>,
    stats: Arc<PeerStats>,
) {
    let mut buffer = vec![0u8; UDP_RECV_BUFFER];
    loop {
        match socket.recv_from(&mut buffer).await {
            Ok((n, peer)) => {
                let datagram = Datagram {
                    local,
                    peer,
                    data: BytesMut::from(&buffer[..n]),
                    at: Instant::now(),
                };
                match datagrams.try_send(datagram) {
                    Ok(()) => {}
                    Err(mpsc::error::TrySendError::Full(_)) => {
                        stats.datagrams_dropped.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(mpsc::error::TrySendError::Closed(_)) => return,
                }
            }
            // ICMP port unreachable and the like surface as recv errors on some systems;
            // they say nothing about this socket, so keep reading.
            Err(error) if error.kind() == std::io::ErrorKind::ConnectionReset => {}
            Err(error) => {
                log::warn!("UDP socket {local}: receive failed: {error}");
                return;
            }
        }
    }
}

/// RTP timestamps for outgoing audio: contiguous while frames come in steadily, and moved on
/// by the wall clock across a gap (a released push-to-talk key), so the receiver sees the gap.
struct AudioClock {
    started: Option<(Instant, u32)>,
    next_timestamp: u32,
    last_sent: Option<Instant>,
    sequence_number: u16,
}

impl AudioClock {
    fn new() -> Self {
        Self {
            started: None,
            next_timestamp: rand::random(),
            last_sent: None,
            sequence_number: rand::random(),
        }
    }

    /// The (sequence number, timestamp, marker) of the next packet of `samples` samples.
    fn next(&mut self, now: Instant, samples: u32) -> (u16, u32, bool) {
        let (t0, ts0) = *self.started.get_or_insert((now, self.next_timestamp));
        let wall = ts0.wrapping_add(
            (now.duration_since(t0).as_micros() as u64 * u64::from(OPUS_CLOCK_RATE) / 1_000_000)
                as u32,
        );
        // A gap of more than two frames: restart at the wall-clock position, mark a talk spurt.
        let gap = self
            .last_sent
            .is_some_and(|last| now.duration_since(last) > Duration::from_millis(60));
        let marker = self.last_sent.is_none() || gap;
        if gap && wall.wrapping_sub(self.next_timestamp) < u32::MAX / 2 {
            self.next_timestamp = wall;
        }
        let timestamp = self.next_timestamp;
        self.next_timestamp = self.next_timestamp.wrapping_add(samples);
        let sequence_number = self.sequence_number;
        self.sequence_number = self.sequence_number.wrapping_add(1);
        self.last_sent = Some(now);
        (sequence_number, timestamp, marker)
    }
}

struct EventLoop {
    pc: RTCPeerConnection,
    sockets: Vec<(SocketAddr, Arc<UdpSocket>)>,
    sender: RTCRtpSenderId,
    ssrc: u32,
    channel: Option<RTCDataChannelId>,
    channel_open: bool,
    channel_closed: bool,
    events: mpsc::Sender<PeerEvent>,
    /// Events the full queue could not take yet, in order; while any wait, nothing more is
    /// taken out of the connection.
    overflow: VecDeque<PeerEvent>,
    stats: Arc<PeerStats>,
    readers: Vec<JoinHandle<()>>,
    /// Sends that left the backlog over [`SEND_BACKLOG_HIGH_BYTES`], answered once it is back
    /// under [`SEND_BACKLOG_LOW_BYTES`].
    paced_replies: Vec<oneshot::Sender<Result<(), RtcError>>>,
    audio: AudioClock,
    payload_type: Option<u8>,
    ice_connected: bool,
    disconnected: bool,
    ended: bool,
    /// When the connection's statistics are next read into [`PeerStats`].
    next_stats_at: Instant,
}

/// How often the connection's statistics (the round trip) are read.
const STATS_INTERVAL: Duration = Duration::from_secs(1);

impl EventLoop {
    async fn run(
        mut self,
        mut commands: mpsc::UnboundedReceiver<Command>,
        mut datagrams: mpsc::Receiver<Datagram>,
    ) {
        let mut close_reply: Option<oneshot::Sender<()>> = None;
        let mut silent = false;
        // `set_remote_description` armed the ICE timers; start with a drain.
        self.drain().await;
        while !self.ended {
            let now = Instant::now();
            let deadline = self.pc.poll_timeout().unwrap_or(now + NO_TIMEOUT);
            if deadline <= now {
                if let Err(error) = self.pc.handle_timeout(now) {
                    log::warn!("peer connection timeout handling failed: {error}");
                }
                self.drain().await;
                continue;
            }
            let events = self.events.clone();
            tokio::select! {
                biased;
                permit = events.reserve(), if !self.overflow.is_empty() => {
                    if let (Ok(permit), Some(event)) = (permit, self.overflow.pop_front()) {
                        permit.send(event);
                        self.pass_on_overflow();
                    } else {
                        // The application dropped its receiver: nobody reads them.
                        self.overflow.clear();
                    }
                }
                command = commands.recv() => match command {
                    Some(Command::Text(text, reply)) => {
                        let result = self.send_text(text);
                        let backlog_bytes = self.send_backlog_bytes();
                        self.stats
                            .send_backlog_peak_bytes
                            .fetch_max(backlog_bytes as u64, Ordering::Relaxed);
                        match (reply, result) {
                            (Some(reply), Ok(())) if backlog_bytes > SEND_BACKLOG_HIGH_BYTES as usize => {
                                self.paced_replies.push(reply);
                            }
                            (Some(reply), result) => {
                                let _ = reply.send(result);
                            }
                            (None, Err(error)) => self.emit(PeerEvent::SendFailed {
                                error: error.to_string(),
                            }),
                            (None, Ok(())) => {}
                        }
                    }
                    Some(Command::Audio { payload, samples }) => self.send_audio(payload, samples),
                    Some(Command::Close(reply)) => {
                        close_reply = Some(reply);
                        break;
                    }
                    Some(Command::Abort(reply)) => {
                        close_reply = Some(reply);
                        silent = true;
                        break;
                    }
                    // Every handle is gone: nobody can use this connection any more.
                    None => break,
                },
                datagram = datagrams.recv() => {
                    let Some(datagram) = datagram else {
                        self.fail("every UDP socket stopped receiving".to_owned());
                        break;
                    };
                    self.stats.datagrams_in.fetch_add(1, Ordering::Relaxed);
                    let message = TaggedBytesMut {
                        now: datagram.at,
                        transport: TransportContext {
                            local_addr: datagram.local,
                            peer_addr: datagram.peer,
                            ecn: None,
                            transport_protocol: TransportProtocol::UDP,
                        },
                        message: datagram.data,
                    };
                    if let Err(error) = self.pc.handle_read(message) {
                        log::debug!("dropped an unreadable datagram from {}: {error}", datagram.peer);
                    }
                }
                () = tokio::time::sleep_until(deadline.into()) => {
                    if let Err(error) = self.pc.handle_timeout(Instant::now()) {
                        log::warn!("peer connection timeout handling failed: {error}");
                    }
                }
            }
            self.drain().await;
            self.release_drained_sends();
            self.read_stats();
        }
        // From here on nothing more can be queued: a send after `close` returned is refused
        // with `RtcError::Closed`, not accepted into a loop that has stopped.
        commands.close();
        if silent {
            for reader in &self.readers {
                reader.abort();
            }
        } else {
            self.shutdown().await;
        }
        if !self.ended {
            self.ended = true;
            self.emit(PeerEvent::Closed);
        }
        if !self.overflow.is_empty() {
            // The last events reach an application that reads on after the loop has ended.
            let (events, overflow) = (self.events.clone(), std::mem::take(&mut self.overflow));
            tokio::spawn(async move {
                for event in overflow {
                    if events.send(event).await.is_err() {
                        break;
                    }
                }
            });
        }
        if let Some(reply) = close_reply {
            let _ = reply.send(());
        }
    }

    async fn shutdown(&mut self) {
        if let Some(id) = self.channel
            && let Some(mut channel) = self.pc.data_channel(id)
        {
            let _ = channel.close();
        }
        self.drain().await;
        let _ = self.pc.close();
        self.flush_writes().await;
        for reader in &self.readers {
            reader.abort();
        }
    }

    /// The fix for the data-channel open delay: after any input, hand the core's events and
    /// reads to the application and send everything it queued, again and again until it is
    /// quiet. Packets queued while handling an event go out now, not at the next timer.
    async fn drain(&mut self) {
        loop {
            self.flush_writes().await;
            let mut progressed = false;
            while let Some(event) = self.pc.poll_event() {
                progressed = true;
                self.handle_event(event);
            }
            // Nothing more is taken out while the application has not taken what it has.
            while self.overflow.is_empty()
                && let Some(TaggedRTCMessage { message, .. }) = self.pc.poll_read()
            {
                progressed = true;
                self.handle_message(message);
            }
            if !progressed {
                self.flush_writes().await;
                return;
            }
        }
    }

    async fn flush_writes(&mut self) {
        while let Some(message) = self.pc.poll_write() {
            let local = message.transport.local_addr;
            let peer = message.transport.peer_addr;
            let Some((_, socket)) = self
                .sockets
                .iter()
                .find(|(addr, _)| *addr == local)
                .or_else(|| self.sockets.first())
            else {
                return;
            };
            match socket.try_send_to(&message.message, peer) {
                Ok(_) => {}
                Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => {
                    if let Err(error) = socket.send_to(&message.message, peer).await {
                        log::debug!("UDP send to {peer} failed: {error}");
                    }
                }
                Err(error) => log::debug!("UDP send to {peer} failed: {error}"),
            }
            self.stats.datagrams_out.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Text handed to the data channel that the remote has not acknowledged yet.
    fn send_backlog_bytes(&mut self) -> usize {
        self.channel
            .and_then(|id| self.pc.data_channel(id))
            .map_or(0, |channel| channel.outstanding_bytes())
    }

    /// Answers the sends that waited for the backlog to drain, once it has.
    fn release_drained_sends(&mut self) {
        if !self.paced_replies.is_empty()
            && self.send_backlog_bytes() <= SEND_BACKLOG_LOW_BYTES as usize
        {
            self.release_paced_sends(|| Ok(()));
        }
    }

    /// Answers the sends that waited for the backlog to drain.
    fn release_paced_sends(&mut self, result: fn() -> Result<(), RtcError>) {
        for reply in self.paced_replies.drain(..) {
            let _ = reply.send(result());
        }
    }

    fn emit(&mut self, event: PeerEvent) {
        if !self.overflow.is_empty() {
            self.overflow.push_back(event);
            return;
        }
        match self.events.try_send(event) {
            Ok(()) => {}
            Err(mpsc::error::TrySendError::Full(event)) => self.overflow.push_back(event),
            // The application dropped its receiver: it no longer listens, the loop goes on
            // until the handles are dropped or closed.
            Err(mpsc::error::TrySendError::Closed(_)) => {}
        }
    }

    /// Hands on what waited, as far as the queue takes it.
    fn pass_on_overflow(&mut self) {
        while let Some(event) = self.overflow.pop_front() {
            match self.events.try_send(event) {
                Ok(()) => {}
                Err(mpsc::error::TrySendError::Full(event)) => {
                    self.overflow.push_front(event);
                    return;
                }
                Err(mpsc::error::TrySendError::Closed(_)) => {
                    self.overflow.clear();
                    return;
                }
            }
        }
    }

    fn fail(&mut self, reason: String) {
        if !self.ended {
            self.ended = true;
            self.emit(PeerEvent::Failed { reason });
        }
    }

    fn handle_event(&mut self, event: RTCPeerConnectionEvent) {
        let now = Instant::now();
        match event {
            RTCPeerConnectionEvent::OnIceConnectionStateChangeEvent(state) => match state {
                RTCIceConnectionState::Connected | RTCIceConnectionState::Completed
                    if !self.ice_connected =>
                {
                    self.ice_connected = true;
                    self.emit(PeerEvent::IceConnected { at: now });
                }
                RTCIceConnectionState::Failed => {
                    self.fail("ICE failed: no candidate pair answers".to_owned())
                }
                _ => {}
            },
            RTCPeerConnectionEvent::OnConnectionStateChangeEvent(state) => match state {
                RTCPeerConnectionState::Connected => {
                    if self.disconnected {
                        self.disconnected = false;
                        self.emit(PeerEvent::Reconnected);
                    } else {
                        self.payload_type = self.negotiated_payload_type();
                        self.emit(PeerEvent::Connected { at: now });
                    }
                }
                RTCPeerConnectionState::Disconnected => {
                    self.disconnected = true;
                    self.emit(PeerEvent::Disconnected);
                }
                RTCPeerConnectionState::Failed => {
                    self.fail("the connection failed (ICE consent or DTLS)".to_owned())
                }
                RTCPeerConnectionState::Closed if !self.ended => {
                    self.ended = true;
                    self.emit(PeerEvent::Closed);
                }
                _ => {}
            },
            RTCPeerConnectionEvent::OnDataChannel(event) => match event {
                RTCDataChannelEvent::OnOpen(id) => {
                    let label_matches = self
                        .pc
                        .data_channel(id)
                        .is_some_and(|channel| channel.label() == DATA_CHANNEL_LABEL);
                    if label_matches && (self.channel.is_none() || self.channel == Some(id)) {
                        self.channel = Some(id);
                        self.channel_open = true;
                        self.emit(PeerEvent::DataChannelOpen { at: now });
                    }
                }
                RTCDataChannelEvent::OnClose(id)
                    if self.channel == Some(id) && self.channel_open =>
                {
                    self.channel_open = false;
                    self.channel_closed = true;
                    self.release_paced_sends(|| Err(RtcError::DataChannelClosed));
                    self.emit(PeerEvent::DataChannelClosed);
                }

                _ => {}
            },
            _ => {}
        }
    }

    /// Reads the round trip of the nominated candidate pair into [`PeerStats`], at most every
    /// [`STATS_INTERVAL`].
    fn read_stats(&mut self) {
        let now = Instant::now();
        if now < self.next_stats_at {
            return;
        }
        self.next_stats_at = now + STATS_INTERVAL;
        let report = self.pc.get_stats(now, rtc::statistics::StatsSelector::None);
        let round_trip_s = report
            .candidate_pairs()
            .filter(|pair| pair.nominated && pair.responses_received > 0)
            .map(|pair| pair.current_round_trip_time)
            .find(|seconds| *seconds > 0.0);
        if let Some(seconds) = round_trip_s {
            // At least a microsecond: 0 means none measured.
            let micros = ((seconds * 1e6).round() as u64).max(1);
            self.stats.round_trip_us.store(micros, Ordering::Relaxed);
        }
    }

    fn handle_message(&mut self, message: RTCMessage) {
        let now = Instant::now();
        match message {
            RTCMessage::RtpPacket(_, packet) => {
                self.stats.audio_in.fetch_add(1, Ordering::Relaxed);
                self.emit(PeerEvent::Audio(RtpAudio {
                    sequence_number: packet.header.sequence_number,
                    timestamp: packet.header.timestamp,
                    marker: packet.header.marker,
                    payload_type: packet.header.payload_type,
                    payload: packet.payload,
                    received_at: now,
                }));
            }
            RTCMessage::DataChannelMessage(id, message) => {
                if Some(id) != self.channel {
                    return;
                }
                if message.is_string {
                    self.stats.texts_in.fetch_add(1, Ordering::Relaxed);
                    match String::from_utf8(message.data.to_vec()) {
                        Ok(text) => self.emit(PeerEvent::Text { text, at: now }),
                        Err(_) => self.emit(PeerEvent::Binary {
                            data: message.data.freeze(),
                            at: now,
                        }),
                    }
                } else {
                    self.emit(PeerEvent::Binary {
                        data: message.data.freeze(),
                        at: now,
                    });
                }
            }
            _ => {}
        }
    }

    fn negotiated_payload_type(&mut self) -> Option<u8> {
        let mut sender = self.pc.rtp_sender(self.sender)?;
        sender
            .get_parameters()
            .rtp_parameters
            .codecs
            .iter()
            .find(|codec| {
                codec
                    .rtp_codec
                    .mime_type
                    .eq_ignore_ascii_case(MIME_TYPE_OPUS)
            })
            .map(|codec| codec.payload_type)
    }

    fn send_text(&mut self, text: String) -> Result<(), RtcError> {
        let id = match self.channel {
            Some(id) if self.channel_open => id,
            _ if self.channel_closed => return Err(RtcError::DataChannelClosed),
            _ => return Err(RtcError::DataChannelNotOpen),
        };
        let mut channel = self
            .pc
            .data_channel(id)
            .ok_or(RtcError::DataChannelClosed)?;
        channel.send_text(Instant::now(), text)?;
        self.stats.texts_out.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    fn send_audio(&mut self, payload: Bytes, samples: u32) {
        let Some(payload_type) = self.payload_type else {
            self.stats.audio_dropped.fetch_add(1, Ordering::Relaxed);
            return;
        };
        let now = Instant::now();
        let (sequence_number, timestamp, marker) = self.audio.next(now, samples);
        let packet = rtc::rtp::packet::Packet {
            header: rtc::rtp::header::Header {
                version: 2,
                marker,
                payload_type,
                sequence_number,
                timestamp,
                ssrc: self.ssrc,
                ..Default::default()
            },
            payload,
        };
        let Some(mut sender) = self.pc.rtp_sender(self.sender) else {
            self.stats.audio_dropped.fetch_add(1, Ordering::Relaxed);
            return;
        };
        match sender.write_rtp(now, packet) {
            Ok(()) => {
                self.stats.audio_out.fetch_add(1, Ordering::Relaxed);
            }
            Err(error) => {
                log::debug!("RTP write failed: {error}");
                self.stats.audio_dropped.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn audio_clock_is_contiguous_then_jumps_over_a_gap() {
        let mut clock = AudioClock::new();
        let t0 = Instant::now();
        let (s0, ts0, m0) = clock.next(t0, 960);
        let (s1, ts1, m1) = clock.next(t0 + Duration::from_millis(20), 960);
        assert!(m0, "the first packet starts a talk spurt");
        assert!(!m1);
        assert_eq!(s1, s0.wrapping_add(1));
        assert_eq!(ts1, ts0.wrapping_add(960));
        // A 1 s pause: the timestamp follows the wall clock (48 000 per second).
        let (_, ts2, m2) = clock.next(t0 + Duration::from_millis(1020), 960);
        assert!(m2, "the first packet after a pause starts a talk spurt");
        assert_eq!(ts2.wrapping_sub(ts0), 48_960);
    }

    #[tokio::test]
    async fn a_udp_flood_the_connection_cannot_keep_up_with_is_dropped_not_queued_without_bound() {
        let socket = Arc::new(UdpSocket::bind("127.0.0.1:0").await.expect("a socket"));
        let local = socket.local_addr().expect("bound");
        let (datagrams, mut queued) = mpsc::channel(DATAGRAM_QUEUE);
        let stats = Arc::new(PeerStats::default());
        let reader = tokio::spawn(read_socket(local, socket, datagrams, stats.clone()));
        // Nobody takes from the queue (a stalled connection) while a peer sends 3× its size.
        let flooder = UdpSocket::bind("127.0.0.1:0").await.expect("a socket");
        let sent = 3 * DATAGRAM_QUEUE as u64;
        for _ in 0..sent {
            flooder.send_to(&[0u8; 200], local).await.expect("sent");
            // Let the reader keep up with the kernel's buffer: what is dropped is ours.
            tokio::task::yield_now().await;
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        while queued.len() + (stats.datagrams_dropped.load(Ordering::Relaxed) as usize)
            < sent as usize
            && Instant::now() < deadline
        {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert_eq!(queued.len(), DATAGRAM_QUEUE, "the queue holds its bound");
        let dropped = stats.datagrams_dropped.load(Ordering::Relaxed);
        assert_eq!(
            dropped,
            sent - DATAGRAM_QUEUE as u64,
            "the rest is counted as dropped"
        );
        // Taken again, the queue moves: the reader was never stuck.
        assert!(queued.recv().await.is_some());
        reader.abort();
    }
}
