//! A client call: offer → SDP exchange over HTTP(S) → connected peer with the `oai-events`
//! data channel open. Translates the network into typed events (and typed events into the
//! network) and nothing more; the turn logic belongs to the session.

use std::collections::VecDeque;
use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::sync::mpsc;
use walkie_openai::{ClientEvent, DecodeError, ServerEvent, decode_server_event};

use crate::error::{RtcError, Stage};
use crate::peer::{self, PeerConfig, PeerEvent, PeerHandle, RtpAudio};
use crate::signalling::{Endpoint, Signalling};

/// How to place a call.
#[derive(Clone, Debug)]
pub struct CallConfig {
    pub endpoint: Endpoint,
    pub peer: PeerConfig,
    /// Bound on each HTTP request (SDP exchange, hang-up).
    pub signalling_timeout: Duration,
    /// Bound from the SDP answer to the data channel open (ICE, DTLS, SCTP, DCEP).
    pub connect_timeout: Duration,
}

impl CallConfig {
    /// Defaults: sockets on loopback for a loopback server, else one per IPv4 interface
    /// address; 15 s for the SDP exchange and for connecting.
    pub fn new(endpoint: Endpoint) -> Self {
        let bind = if endpoint.is_loopback() {
            vec![SocketAddr::from(([127, 0, 0, 1], 0))]
        } else {
            interface_addresses()
        };
        Self {
            endpoint,
            peer: PeerConfig {
                bind,
                ..PeerConfig::default()
            },
            signalling_timeout: Duration::from_secs(15),
            connect_timeout: Duration::from_secs(15),
        }
    }
}

/// Every up, non-loopback IPv4 interface address, port 0. Falls back to loopback when the
/// machine has none (the call can then only reach a local server).
pub fn interface_addresses() -> Vec<SocketAddr> {
    let mut found: Vec<SocketAddr> = rtc::shared::ifaces::ifaces()
        .unwrap_or_default()
        .into_iter()
        .filter_map(|interface| interface.addr)
        .map(|addr| addr.ip())
        .filter(|ip| matches!(ip, IpAddr::V4(v4) if !v4.is_loopback() && !v4.is_link_local() && !v4.is_unspecified()))
        .map(|ip| SocketAddr::new(ip, 0))
        .collect();
    found.dedup();
    if found.is_empty() {
        found.push(SocketAddr::from(([127, 0, 0, 1], 0)));
    }
    found
}

/// When each step of connecting finished.
#[derive(Clone, Copy, Debug)]
pub struct CallTimings {
    pub started: Instant,
    /// The SDP answer arrived.
    pub answered: Instant,
    pub ice_connected: Option<Instant>,
    /// ICE and DTLS up.
    pub connected: Option<Instant>,
    pub data_channel_open: Instant,
}

/// What a call reports.
#[derive(Clone, Debug, PartialEq)]
pub enum CallEvent {
    /// A server event, decoded.
    Server(ServerEvent),
    /// A data-channel message that is not a valid server event. The call goes on.
    Undecodable {
        text: String,
        error: DecodeError,
    },
    /// A binary data-channel message (the protocol only sends text).
    Binary(Bytes),
    /// One received audio packet (an Opus frame).
    Audio(RtpAudio),
    /// Connectivity lost for now; may come back.
    Disconnected,
    Reconnected,
    /// The call is over: the data channel closed, the connection failed, or it was closed.
    Ended(EndReason),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EndReason {
    DataChannelClosed,
    ConnectionFailed(String),
    Closed,
}

/// A connected call.
pub struct Call {
    call_id: String,
    endpoint: Endpoint,
    signalling: Signalling,
    peer: PeerHandle,
    events: mpsc::UnboundedReceiver<PeerEvent>,
    early: VecDeque<PeerEvent>,
    timings: CallTimings,
    ended: bool,
}

/// Sends on a call from another task.
#[derive(Clone)]
pub struct CallSender {
    peer: PeerHandle,
}

impl CallSender {
    /// Sends one client event as JSON text on the data channel.
    pub async fn send(&self, event: &ClientEvent, event_id: Option<&str>) -> Result<(), RtcError> {
        self.peer.send_text(event.to_json(event_id)).await
    }

    /// Sends one Opus frame of `samples` 48 kHz samples.
    pub fn send_audio(&self, opus: Bytes, samples: u32) -> Result<(), RtcError> {
        self.peer.send_audio(opus, samples)
    }
}

impl Call {
    /// Places the call and waits until the data channel is open.
    pub async fn connect(config: CallConfig) -> Result<Call, RtcError> {
        let started = Instant::now();
        let signalling = Signalling::new(config.signalling_timeout)?;
        let pending = peer::offer(&config.peer).await?;
        let answer = signalling
            .post_offer(&config.endpoint, pending.sdp())
            .await?;
        let answered = Instant::now();
        let peer = match pending.accept(&answer.sdp) {
            Ok(peer) => peer,
            Err(error) => {
                let _ = signalling.hangup(&config.endpoint, &answer.call_id).await;
                return Err(error);
            }
        };
        let mut call = Call {
            call_id: answer.call_id,
            endpoint: config.endpoint,
            signalling,
            peer: peer.handle,
            events: peer.events,
            early: VecDeque::new(),
            timings: CallTimings {
                started,
                answered,
                ice_connected: None,
                connected: None,
                data_channel_open: answered,
            },
            ended: false,
        };
        match tokio::time::timeout(config.connect_timeout, call.wait_open()).await {
            Ok(Ok(())) => Ok(call),
            Ok(Err(error)) => {
                call.abandon().await;
                Err(error)
            }
            Err(_) => {
                let stage = if call.timings.connected.is_some() {
                    Stage::DataChannelOpen
                } else {
                    Stage::Connect
                };
                call.abandon().await;
                Err(RtcError::Timeout {
                    stage,
                    after: config.connect_timeout,
                })
            }
        }
    }

    async fn wait_open(&mut self) -> Result<(), RtcError> {
        loop {
            let Some(event) = self.events.recv().await else {
                return Err(RtcError::Closed);
            };
            match event {
                PeerEvent::IceConnected { at } => self.timings.ice_connected = Some(at),
                PeerEvent::Connected { at } => self.timings.connected = Some(at),
                PeerEvent::DataChannelOpen { at } => {
                    self.timings.data_channel_open = at;
                    return Ok(());
                }
                PeerEvent::Failed { reason } => return Err(RtcError::ConnectionFailed(reason)),
                PeerEvent::DataChannelClosed => return Err(RtcError::DataChannelClosed),
                PeerEvent::Closed => return Err(RtcError::Closed),
                other => self.early.push_back(other),
            }
        }
    }

    /// Closes the peer and tells the server, ignoring failures: used when connecting failed.
    async fn abandon(&mut self) {
        self.peer.close().await;
        let _ = self.signalling.hangup(&self.endpoint, &self.call_id).await;
    }

    /// The provider's id of this call (from `Location`).
    pub fn call_id(&self) -> &str {
        &self.call_id
    }

    pub fn timings(&self) -> CallTimings {
        self.timings
    }

    /// The peer's handle (statistics, local addresses).
    pub fn peer(&self) -> &PeerHandle {
        &self.peer
    }

    pub fn sender(&self) -> CallSender {
        CallSender {
            peer: self.peer.clone(),
        }
    }

    /// Sends one client event as JSON text on the data channel.
    pub async fn send(&self, event: &ClientEvent, event_id: Option<&str>) -> Result<(), RtcError> {
        self.peer.send_text(event.to_json(event_id)).await
    }

    /// Sends one Opus frame of `samples` 48 kHz samples (960 for 20 ms).
    pub fn send_audio(&self, opus: Bytes, samples: u32) -> Result<(), RtcError> {
        self.peer.send_audio(opus, samples)
    }

    /// The next event; `None` after [`CallEvent::Ended`] has been returned.
    pub async fn next_event(&mut self) -> Option<CallEvent> {
        if self.ended {
            return None;
        }
        let event = match self.early.pop_front() {
            Some(event) => event,
            None => match self.events.recv().await {
                Some(event) => event,
                None => PeerEvent::Closed,
            },
        };
        let translated = match event {
            PeerEvent::Text { text, .. } => match decode_server_event(&text) {
                Ok(event) => CallEvent::Server(event),
                Err(error) => CallEvent::Undecodable { text, error },
            },
            PeerEvent::Binary { data, .. } => CallEvent::Binary(data),
            PeerEvent::Audio(audio) => CallEvent::Audio(audio),
            PeerEvent::Disconnected => CallEvent::Disconnected,
            PeerEvent::Reconnected => CallEvent::Reconnected,
            PeerEvent::DataChannelClosed => CallEvent::Ended(EndReason::DataChannelClosed),
            PeerEvent::Failed { reason } => CallEvent::Ended(EndReason::ConnectionFailed(reason)),
            PeerEvent::Closed => CallEvent::Ended(EndReason::Closed),
            // Connection milestones after open do not recur; skip them.
            PeerEvent::IceConnected { .. }
            | PeerEvent::Connected { .. }
            | PeerEvent::DataChannelOpen { .. } => return Box::pin(self.next_event()).await,
        };
        if matches!(translated, CallEvent::Ended(_)) {
            self.ended = true;
        }
        Some(translated)
    }

    /// Asks the server to end the call (`/hangup`), then closes the data channel and the
    /// connection — also when the request failed, whose error is returned.
    pub async fn hangup(mut self) -> Result<(), RtcError> {
        let result = self.signalling.hangup(&self.endpoint, &self.call_id).await;
        self.peer.close().await;
        self.ended = true;
        result
    }
}
