//! What the turn controller asks of the world: client events to send, audio commands, hints for
//! the user, and diagnostics for the log. Session events go into the [`crate::Session`] it owns.
//!
//! Why one queue: the order of the outputs is part of what the controller decides. On a
//! barge-in the playback flush must reach the speaker before the `response.cancel` reaches the
//! data channel (DESIGN rule 1); separate queues drained in a fixed order would put every send
//! first. The driver polls [`ControllerOutput`]s and carries each to its edge without waiting.

use walkie_openai::live::LiveClientEvent;
use walkie_openai::{ClientEvent, DecodeError, Usage};

use crate::error::PushError;
use crate::turn::config::{PressMode, TurnMode};

/// A client event of the call's provider family, as it goes on the data channel.
#[derive(Debug, Clone, PartialEq)]
pub enum WireEvent {
    /// The Realtime API's.
    Realtime(ClientEvent),
    /// The Live API's.
    Live(LiveClientEvent),
}

impl WireEvent {
    /// The wire name, as in the `type` field.
    pub fn event_type(&self) -> &'static str {
        match self {
            WireEvent::Realtime(event) => event.event_type(),
            WireEvent::Live(event) => event.event_type(),
        }
    }

    /// The JSON text, under `event_id` when given.
    pub fn to_json(&self, event_id: Option<&str>) -> String {
        match self {
            WireEvent::Realtime(event) => event.to_json(event_id),
            WireEvent::Live(event) => event.to_json(event_id),
        }
    }
}

impl From<ClientEvent> for WireEvent {
    fn from(event: ClientEvent) -> Self {
        WireEvent::Realtime(event)
    }
}

impl From<LiveClientEvent> for WireEvent {
    fn from(event: LiveClientEvent) -> Self {
        WireEvent::Live(event)
    }
}

/// A client event with the `event_id` it is sent under. The server echoes that id in an `error`
/// event about it, which is how the controller knows which request failed.
#[derive(Debug, Clone, PartialEq)]
pub struct OutgoingEvent {
    /// The client-generated id (`walkie_<n>`).
    pub event_id: String,
    /// The event.
    pub event: WireEvent,
}

impl OutgoingEvent {
    /// The JSON text to send on the data channel.
    pub fn to_json(&self) -> String {
        self.event.to_json(Some(&self.event_id))
    }

    /// The event, when it is a Realtime API one.
    pub fn realtime(&self) -> Option<&ClientEvent> {
        match &self.event {
            WireEvent::Realtime(event) => Some(event),
            WireEvent::Live(_) => None,
        }
    }

    /// The event, when it is a Live API one.
    pub fn live(&self) -> Option<&LiveClientEvent> {
        match &self.event {
            WireEvent::Live(event) => Some(event),
            WireEvent::Realtime(_) => None,
        }
    }
}

/// One output of the turn controller, polled in the order it was decided.
#[derive(Debug, Clone, PartialEq)]
pub enum ControllerOutput {
    /// A client event for the data channel.
    Send(OutgoingEvent),
    /// A command for the audio driver.
    Audio(AudioCommand),
    /// What the audio driver does from now with the reply audio it decodes itself; told when
    /// it changes.
    ReplyAudio(ReplyAudio),
    /// Where the turn stands now; told when it changes, first at the first poll.
    TurnState(TurnState),
    /// Something the user should see.
    Hint(UiHint),
    /// Something worth a log line.
    Diagnostic(Diagnostic),
    /// A response ended (`response.done`), billed this much by the provider.
    Billed(Usage),
    /// The user's audio was transcribed, billed this much at the transcription model's prices.
    Transcribed(walkie_openai::TranscriptionUsage),
    /// The provider's rate limits as they stand (`rate_limits.updated`, at each response).
    RateLimits(Vec<walkie_openai::RateLimit>),
    /// A session billed by its duration (the Live API) has been active and paused this long
    /// in all, so far (cumulative: each report replaces the last).
    SessionTime {
        /// Seconds of inference.
        active_seconds: f64,
        /// Seconds paused (idle).
        paused_seconds: f64,
    },
    /// The model called a tool run outside the controller: decide and run it, then answer
    /// with [`crate::turn::TurnInput::ToolFinished`]. The reply waits for the answer.
    ToolCall(ToolCallRequest),
    /// The press taken back ([`crate::turn::TurnInput::CancelPress`]) had opened this user
    /// part, which ended with no words.
    PressCancelled(crate::event::PartIndex),
    /// A typed message ([`crate::turn::TurnInput::UserMessage`]) went out: the user's turn
    /// ended with it. (One that did not go out says why in a [`UiHint`].)
    MessageSent,
    /// The model answered an aside ([`crate::turn::TurnInput::Aside`]) with this text (as
    /// it gave it: the caller judges it).
    AsideAnswered {
        purpose: crate::turn::AsidePurpose,
        text: String,
    },
    /// An aside was not answered: why, as a phrase (the provider's words, when it refused).
    AsideFailed {
        purpose: crate::turn::AsidePurpose,
        reason: String,
        /// Nothing refused it: the call was not connected, or ended first (another call may
        /// answer it).
        unanswered: bool,
    },
}

/// A call of an outside tool, as the model made it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCallRequest {
    /// The provider's id of the call, which its answer names.
    pub call_id: String,
    /// The tool's name, as declared.
    pub name: String,
    /// The model's arguments, parsed (an object, or whatever JSON the model sent).
    pub arguments: serde_json::Value,
}

/// Where the turn stands, as the conversation around the controller needs it (the status line,
/// whether a press is carried, whether the conversation is quiet): told in the outputs, so no
/// one asks the controller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TurnState {
    /// The session is confirmed (`session.updated`, or the Live API's start): the key works.
    pub ready: bool,
    /// Capture is open: the user is sent.
    pub capturing: bool,
    /// The user hears the assistant now.
    pub assistant_audible: bool,
    /// A reply is being made now.
    pub replying: bool,
    /// A reply is owed: being made, or asked for and not begun.
    pub awaits_reply: bool,
    /// A call of an outside tool waits for its answer.
    pub waiting_tool_calls: bool,
    /// How the key works in the mode the controller applies (a switch waits for the turn under
    /// way); `None`: hands-free.
    pub press: Option<PressMode>,
}

impl TurnState {
    /// Before a call's controller has said anything: nothing under way, in `mode`.
    pub fn before_the_call(mode: &TurnMode) -> Self {
        Self {
            ready: false,
            capturing: false,
            assistant_audible: false,
            replying: false,
            awaits_reply: false,
            waiting_tool_calls: false,
            press: mode.press_mode(),
        }
    }

    /// Whether turns are hands-free.
    pub fn hands_free(&self) -> bool {
        self.press.is_none()
    }
}

/// What the audio driver does with reply audio it decodes itself (over WebRTC, where the reply
/// comes as RTP): it plays it straight to the speaker, so no hop through the app's task sits
/// between the decoder and the device, while the controller sees the same audio for the
/// transcript and the recording and decides, through this, what is heard.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplyAudio {
    /// Whether it is played.
    pub gate: ReplyGate,
    /// The assistant item it belongs to, when named: what is played is counted against it
    /// (for a barge-in's `audio_end_ms`).
    pub item_id: Option<String>,
}

impl Default for ReplyAudio {
    /// Between replies: the next is played from its first sound.
    fn default() -> Self {
        Self {
            gate: ReplyGate::FromSound,
            item_id: None,
        }
    }
}

/// Whether reply audio is played; see [`ReplyAudio`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ReplyGate {
    /// From its first frame that sounds on (silence ahead of a reply is skipped; once it has
    /// sounded, everything is played until the gate is told again).
    #[default]
    FromSound,
    /// Everything, silences inside the reply too.
    Play,
    /// Nothing: the reply was cut (a barge-in), or it would start under a held key. An
    /// [`AudioCommand::FlushPlayback`] closes the gate too, until it is told again.
    Drop,
}

/// What the audio driver must do, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AudioCommand {
    /// Start sending microphone audio, beginning with this much warm-mic audio from before now.
    OpenCapture {
        /// Audio from before the command to prepend.
        pre_roll_ms: u64,
    },
    /// Stop sending microphone audio.
    CloseCapture,
    /// Drop every queued assistant sample at once (a barge-in): silence within one device period.
    /// It ends a hold ([`Self::HoldPlayback`]) too, and drops the reply audio decoded after it
    /// until a [`ReplyAudio`] says otherwise.
    FlushPlayback,
    /// Hold the reply (`true`: silence from the next device period, what is queued waits) or
    /// let it go on where it stopped (`false`): the user may be talking over it.
    HoldPlayback {
        /// Whether the reply is held.
        held: bool,
    },
    /// Send silence instead of the microphone (`true`) or the microphone again (`false`), while
    /// capture stays open: no echo reaches the model while it is audible.
    GateMic {
        /// Whether the microphone is replaced by silence.
        gated: bool,
    },
    /// Run the echo canceller (when the settings allow one) or pause it. It costs more than
    /// the rest of the audio path together, and only a microphone that is sent while a reply
    /// plays needs it: hands-free. A paused canceller is not trusted ([`Self::GateMic`] then
    /// keeps the echo out, as without one).
    CancelEcho {
        /// Whether the canceller runs.
        on: bool,
    },
}

/// Something the user should see.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UiHint {
    /// `session.updated` arrived: the session is configured and the key works.
    Ready,
    /// The key was pressed before the session was configured; nothing was sent.
    NotReady,
    /// The press was too short to be an utterance and was ignored.
    PressTooShort {
        /// How long the key was held.
        held_ms: u64,
        /// The shortest press that counts.
        min_press_ms: u64,
    },
    /// The key was held so long that the controller released it (a lost key-up).
    ReleasedAutomatically {
        /// How long the key was held.
        held_ms: u64,
    },
    /// The server received no audio for the utterance (an empty commit).
    NothingHeard,
    /// The provider will end the session soon.
    SessionEndingSoon {
        /// Time left before the provider's cap.
        remaining_ms: u64,
    },
    /// The provider's session cap is reached; a new session is needed.
    SessionLimitReached,
    /// The provider paused inference after its idle timeout; speech wakes it.
    Paused,
    /// Speech woke the paused session.
    Resumed,
    /// The provider family takes no typed messages; nothing was sent.
    TypedMessagesNotTaken,
    /// A typed message longer than the controller sends (one data-channel message must hold
    /// it); nothing was sent.
    TextTooLong {
        /// The most a typed message may hold, in UTF-8 bytes.
        max_bytes: usize,
    },
    /// A picture larger than one item holds on the data channel (one not prepared by
    /// `walkie_picture::prepare`'s defaults); nothing of its message was sent.
    PictureTooLarge {
        /// Its `input_image` part's size on the wire.
        bytes: usize,
        /// The most one item takes.
        max_bytes: usize,
    },
}

/// Something worth a log line, never shown as such.
#[derive(Debug, Clone, PartialEq)]
pub enum Diagnostic {
    /// An aside went unanswered (its caller does without): why.
    AsideUnanswered {
        purpose: crate::turn::AsidePurpose,
        reason: String,
    },
    /// A server event type this client does not know; ignored.
    UnknownServerEvent {
        /// Its `type`.
        event_type: String,
    },
    /// A data-channel message that could not be decoded; reported as a recoverable session error.
    Undecodable(DecodeError),
    /// The server refused one of our client events.
    ClientEventFailed {
        /// The id it was sent under.
        event_id: String,
        /// Its `type`, when the id is still remembered.
        event_type: Option<&'static str>,
        /// The server's error code.
        code: Option<String>,
    },
    /// The session refused an event the mapping produced (a server ordering the controller did
    /// not expect); the event was dropped and the controller went on.
    SessionRefused(PushError),
    /// A server event that makes no sense in this state, ignored (e.g. VAD events in push-to-talk).
    Ignored {
        /// The event's `type`.
        event_type: String,
        /// Why it was ignored.
        reason: &'static str,
    },
    /// A key-down while the key was already down (key repeat), ignored.
    RepeatedKeyDown,
    /// The input device changed while capturing: capture was reopened.
    CaptureReopened,
    /// No `session.updated` came within [`SESSION_CONFIRM_GRACE_MS`] of the data channel
    /// opening; the controller went ahead as if it had (some compatible servers never send it).
    ///
    /// [`SESSION_CONFIRM_GRACE_MS`]: crate::turn::SESSION_CONFIRM_GRACE_MS
    SessionNotConfirmed {
        /// How long it waited.
        waited_ms: u64,
    },
    /// Turn watchdog: the reply's response had ended and no audio came for
    /// [`STOPPED_WATCHDOG_MS`], but `output_audio_buffer.stopped` never did; the reply was
    /// ended as if it had.
    ///
    /// [`STOPPED_WATCHDOG_MS`]: crate::turn::STOPPED_WATCHDOG_MS
    StoppedMissing {
        /// The reply that was audible.
        response_id: String,
        /// How long since its last audio (or its `response.done`).
        waited_ms: u64,
    },
    /// The reply was held for the user the microphone heard start talking, and the provider
    /// did not hear speech within the hold: the reply went on where it stopped.
    NearSpeechUnconfirmed {
        /// How long it was held.
        held_ms: u64,
    },
    /// Turn watchdog: nothing came from the server for [`RESPONSE_DONE_WATCHDOG_MS`] while a
    /// response was active (or a `response.create` unanswered); it was ended as incomplete.
    ///
    /// [`RESPONSE_DONE_WATCHDOG_MS`]: crate::turn::RESPONSE_DONE_WATCHDOG_MS
    ResponseDoneMissing {
        /// The active response, if `response.created` had named it.
        response_id: Option<String>,
        /// How long the server was silent.
        waited_ms: u64,
    },
}
