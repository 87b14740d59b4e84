//! A client call: offer → SDP exchange over HTTP(S) → connected peer with the `oai-events`
//! data channel open. Translates the network into typed events (and typed events into the
//! network) and nothing more; the turn logic belongs to the session.

use std::collections::VecDeque;
use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::sync::mpsc;
use walkie_openai::live::{LiveClientEvent, LiveSessionConfig};
use walkie_openai::{ClientEvent, SessionConfig};

use crate::error::{RtcError, Stage};
use crate::peer::{self, PeerConfig, PeerEvent, PeerHandle, RtpAudio};
use crate::signalling::{CallForm, Endpoint, Signalling};

/// The largest session (as JSON) a call is placed with; a larger one is refused before
/// anything is dialled.
pub use walkie_openai::MAX_SESSION_BYTES;

/// Refuses a session that could not travel on the data channel, naming the field that makes
/// it too large (`instructions` or `tools`, else `session`).
pub fn check_session_size(session: &SessionConfig) -> Result<(), RtcError> {
    let size_bytes = serde_json::to_string(session)
        .map_err(|error| RtcError::BadOffer(format!("the session: {error}")))?
        .len();
    if size_bytes <= MAX_SESSION_BYTES {
        return Ok(());
    }
    let instructions_bytes = session.instructions.as_ref().map_or(0, String::len);
    let tools_bytes = session
        .tools
        .as_ref()
        .and_then(|tools| serde_json::to_string(tools).ok())
        .map_or(0, |text| text.len());
    let field = if instructions_bytes >= tools_bytes && instructions_bytes > 0 {
        "instructions"
    } else if tools_bytes > 0 {
        "tools"
    } else {
        "session"
    };
    Err(RtcError::SessionTooLarge {
        field,
        size_bytes,
        limit_bytes: MAX_SESSION_BYTES,
    })
}

/// How to place a call.
#[derive(Clone, Debug)]
pub struct CallConfig {
    pub endpoint: Endpoint,
    /// The session the call is created with (the multipart `session` part, or the session of
    /// the minted ephemeral key): the same one `session.update` then restates, so the call
    /// never runs on the server's defaults.
    pub session: SessionConfig,
    /// Set, the call is a Live API session created with it (`POST /v1/live/sessions`), and
    /// `session` is not sent.
    pub live_session: Option<LiveSessionConfig>,
    pub peer: PeerConfig,
    /// Bound on each HTTP request (SDP exchange, hang-up).
    pub signalling_timeout: Duration,
    /// Bound from the SDP answer to the data channel open (ICE, DTLS, SCTP, DCEP).
    pub connect_timeout: Duration,
}

impl CallConfig {
    /// Defaults: sockets on loopback for a loopback server, else one per IPv4 interface
    /// address; 15 s for the SDP exchange and for connecting; the bare session
    /// (`{"type":"realtime"}`) until [`Self::with_session`].
    pub fn new(endpoint: Endpoint) -> Self {
        let bind = if endpoint.is_loopback() {
            vec![SocketAddr::from(([127, 0, 0, 1], 0))]
        } else {
            interface_addresses()
        };
        Self {
            endpoint,
            session: SessionConfig::default(),
            live_session: None,
            peer: PeerConfig {
                bind,
                ..PeerConfig::default()
            },
            signalling_timeout: Duration::from_secs(15),
            connect_timeout: Duration::from_secs(15),
        }
    }

    /// Creates the call with this session.
    pub fn with_session(mut self, session: SessionConfig) -> Self {
        self.session = session;
        self
    }

    /// Places the call on the Live API, created with this session.
    pub fn with_live_session(mut self, session: LiveSessionConfig) -> Self {
        self.live_session = Some(session);
        self
    }
}

/// Ends the call on the server, on the route of its API.
async fn hang_up_on_server(
    signalling: &Signalling,
    endpoint: &Endpoint,
    live: bool,
    call_id: &str,
) -> Result<(), RtcError> {
    if live {
        signalling.hangup_live(endpoint, call_id).await
    } else {
        signalling.hangup(endpoint, call_id).await
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
    /// A data-channel text message (a server event, as the provider sent it). The transport
    /// does not read it: the protocol layer decodes it, once
    /// ([`walkie_openai::decode_server_event`]), and decides what a text it cannot read means.
    Text(String),
    /// A binary data-channel message (the protocol only sends text).
    Binary(Bytes),
    /// One received audio packet (an Opus frame).
    Audio(RtpAudio),
    /// Connectivity lost for now; may come back.
    Disconnected,
    Reconnected,
    /// A client event given to [`Call::queue`] could not be sent (why). The transport stays up;
    /// the caller decides whether the call can go on without that event.
    SendFailed(String),
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
    /// `None` when the provider's answer had no usable `Location`: no REST hang-up then.
    call_id: Option<String>,
    /// A Live API session (hung up on its own route).
    live: bool,
    /// The form the call was placed in.
    form: CallForm,
    endpoint: Endpoint,
    signalling: Signalling,
    peer: PeerHandle,
    events: mpsc::Receiver<PeerEvent>,
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
        let live = config.live_session.is_some();
        if !live {
            check_session_size(&config.session)?;
        }
        let signalling = Signalling::new(config.signalling_timeout)?;
        let pending = peer::offer(&config.peer).await?;
        let answer = match &config.live_session {
            Some(session) => {
                signalling
                    .post_live_offer(&config.endpoint, pending.sdp(), session)
                    .await?
            }
            None => {
                signalling
                    .post_offer(&config.endpoint, pending.sdp(), &config.session)
                    .await?
            }
        };
        let answered = Instant::now();
        let peer = match pending.accept(&answer.sdp) {
            Ok(peer) => peer,
            Err(error) => {
                if let Some(call_id) = &answer.call_id {
                    let _ = hang_up_on_server(&signalling, &config.endpoint, live, call_id).await;
                }
                return Err(error);
            }
        };
        let mut call = Call {
            call_id: answer.call_id,
            live,
            form: answer.form,
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
        if let Some(call_id) = &self.call_id {
            let _ = hang_up_on_server(&self.signalling, &self.endpoint, self.live, call_id).await;
        }
    }

    /// The provider's id of this call (from `Location`); `None` when it sent none.
    pub fn call_id(&self) -> Option<&str> {
        self.call_id.as_deref()
    }

    /// The form the call was placed in: the multipart form, the raw offer (a server that took
    /// only that, or an ephemeral key), a minted key's, or a Live session's.
    pub fn form(&self) -> CallForm {
        self.form
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

    /// Sends one Live API client event as JSON text on the data channel.
    pub async fn send_live(
        &self,
        event: &LiveClientEvent,
        event_id: Option<&str>,
    ) -> Result<(), RtcError> {
        self.peer.send_text(event.to_json(event_id)).await
    }

    /// Queues one client event's JSON text (of either API) for the data channel and returns at
    /// once, as audio is sent: a failure to send comes back as [`CallEvent::SendFailed`]. Fails
    /// at once only when the connection's loop has ended.
    pub fn queue(&self, event_json: String) -> Result<(), RtcError> {
        self.peer.queue_text(event_json)
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
            PeerEvent::Text { text, .. } => CallEvent::Text(text),
            PeerEvent::Binary { data, .. } => CallEvent::Binary(data),
            PeerEvent::Audio(audio) => CallEvent::Audio(audio),
            PeerEvent::Disconnected => CallEvent::Disconnected,
            PeerEvent::Reconnected => CallEvent::Reconnected,
            PeerEvent::SendFailed { error } => CallEvent::SendFailed(error),
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

    /// Asks the server to end the call (`/hangup`, when the call has an id), then closes the
    /// data channel and the connection — also when the request failed, whose error is
    /// returned.
    pub async fn hangup(mut self) -> Result<(), RtcError> {
        let result = match &self.call_id {
            Some(call_id) => {
                hang_up_on_server(&self.signalling, &self.endpoint, self.live, call_id).await
            }
            None => Ok(()),
        };
        self.peer.close().await;
        self.ended = true;
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use walkie_openai::Tool;

    #[test]
    fn a_session_that_fits_a_data_channel_message_passes() {
        let session = SessionConfig {
            instructions: Some("a".repeat(MAX_SESSION_BYTES - 100)),
            ..SessionConfig::default()
        };
        assert!(check_session_size(&session).is_ok());
    }

    #[test]
    fn a_session_too_large_names_the_field_that_makes_it_so() {
        let long_instructions = SessionConfig {
            instructions: Some("a".repeat(MAX_SESSION_BYTES)),
            ..SessionConfig::default()
        };
        let error = check_session_size(&long_instructions).expect_err("too large");
        assert!(matches!(
            error,
            RtcError::SessionTooLarge {
                field: "instructions",
                limit_bytes: MAX_SESSION_BYTES,
                size_bytes,
            } if size_bytes > MAX_SESSION_BYTES
        ));
        assert_eq!(
            error.user_sentence(),
            "The instructions are too long for a call (61 KiB; at most 60 KiB fit in one message): shorten them in Settings."
        );
        let many_tools = SessionConfig {
            instructions: Some("Be brief.".to_owned()),
            tools: Some(
                (0..2_000)
                    .map(|index| Tool::Function {
                        name: format!("tool_{index}"),
                        description: Some("A tool among very many.".to_owned()),
                        parameters: serde_json::json!({"type": "object"}),
                    })
                    .collect(),
            ),
            ..SessionConfig::default()
        };
        assert!(matches!(
            check_session_size(&many_tools),
            Err(RtcError::SessionTooLarge { field: "tools", .. })
        ));
    }
}
