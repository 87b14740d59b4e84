//! What the conversation machine is told: the user's commands, the provider's events, the
//! audio engine's reports, the transport's news and the passing of time.
//!
//! The engine's own types live in the audio driver; the machine has its own small ones, and the
//! driver translates (a core crate never depends on a driver).

use walkie_session::turn::{TurnMode, UserMessage, WallClock};
use walkie_session::{AudioChunk, DeviceDirection};

use crate::redial::DialFailure;

/// A tool server's problem, as the conversation is told it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolServerProblem {
    /// The problem in words, naming its server.
    pub said: String,
    /// The server is used all the same, without some of its tools.
    pub server_used: bool,
}

/// One input, with the caller's time passed beside it.
#[derive(Debug, Clone)]
pub enum Input {
    /// The push-to-talk control went down.
    Press,
    /// A reading of the call's receive side and transport (about once a second, in a call).
    Health(crate::health::HealthSample),
    /// The push-to-talk control went up.
    Release,
    /// The push-to-talk control from a command that cannot hold it (`walkie --toggle`): down
    /// when it is up, up when it is down. In toggle mode it is a press, which does both.
    TogglePress,
    /// The user takes the press under way back (Escape): nothing of it is sent.
    CancelPress,
    /// The user wrote a message (text, pictures or both) and sent it: it goes to the call once
    /// one is ready (a call being placed or dialled again takes it when it is); its text is
    /// answered like a spoken turn.
    SendMessage(UserMessage),
    /// The user allowed (or denied) a call of an outside tool that asked first
    /// ([`crate::Output::AskApproval`]).
    ToolDecision { call_id: String, allowed: bool },
    /// A call the driver ran ([`crate::Output::RunTool`]) gave this, or failed this way (the
    /// server crashed, hung or answered garbage: said in a phrase).
    ToolFinished {
        call_id: String,
        result: Result<serde_json::Value, String>,
    },
    /// Push-to-talk (hold or toggle) or hands-free from now on, in the same call.
    SetTurnMode(TurnMode),
    /// Typed messages are answered in text alone (`true`) or as the session says, from now on.
    SetTypedRepliesInText(bool),
    /// The responses from now on are costed at `pricing` (`None`: tokens only), the
    /// transcriptions at `transcription_pricing`, and the conversation may cost `budget_usd`
    /// in all.
    SetCosting {
        pricing: Option<crate::spending::Pricing>,
        transcription_pricing: Option<crate::spending::Pricing>,
        budget_usd: Option<f64>,
    },
    /// The user is leaving the conversation (Connect, new settings, the app closing).
    HangUp,
    /// The call asked for by [`crate::Output::Dial`] is placed: it carries the conversation on.
    Dialled,
    /// The call asked for by [`crate::Output::Dial`] could not be placed.
    DialFailed(DialFailure),
    /// The user stops the redialling of a dropped call.
    CancelRedial,
    /// A data-channel text from the provider: a server event, decoded here, once.
    ServerText(String),
    /// A report of the audio engine.
    Engine(EngineInput),
    /// News of the call's transport.
    Transport(TransportInput),
    /// The wall clock's reading now (for tools that need the date).
    WallClock(WallClock),
    /// The conversation is not being saved (the store could not start, or writing fails: a
    /// full disk): `reason` is a phrase that says what to do, `details` the error behind it.
    NotSaving {
        reason: String,
        details: Option<String>,
    },
    /// Saving works again: what waited is on disk, but for `lost_audio_ms` of audio that
    /// could not be held while the disk refused it.
    SavingResumed { lost_audio_ms: u64 },
    /// The user saved settings that need another call: it is being placed to the provider
    /// named `provider_label`, and this call goes on until that one answers.
    NewCallDialling { provider_label: String },
    /// The call the new settings asked for could not be placed, so this one goes on:
    /// `sentence` says why and what to do, `details` is the error behind it.
    NewCallRefused {
        provider_label: String,
        sentence: String,
        details: Option<String>,
    },
    /// From now on, this many rounds of calls of tools allowed always run without asking.
    SetAutomaticToolRounds(u32),
    /// What went wrong with tool servers of the settings' list: servers that could not be
    /// started or listed no tools (their tools are not offered in this conversation), and
    /// servers used without some of their tools.
    ToolServerProblems(Vec<ToolServerProblem>),
    /// Time passed (at [`crate::Conversation::next_deadline_ms`]).
    Tick,
}

/// One meter reading.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LevelReading {
    pub rms_dbfs: f32,
    pub peak_dbfs: f32,
}

/// What the audio engine reports.
#[derive(Debug, Clone)]
pub enum EngineInput {
    /// Decoded assistant audio from the call (not yet played).
    AssistantAudio(AudioChunk),
    /// Microphone audio exactly as it was sent.
    SentAudio(AudioChunk),
    /// The device has played `played_ms` of the assistant item `item_id`.
    PlayedProgress { item_id: String, played_ms: u64 },
    /// Everything queued for the speaker was played.
    Drained,
    /// How a reply's playback went, once it ended (or was cut).
    ReplyPlayed(crate::output::ReplyPlayout),
    /// A reply's first sound reached the device at `heard_ms`; its first packet had arrived
    /// at `first_packet_ms` (on the machine's clock).
    ReplyHeard {
        first_packet_ms: Option<u64>,
        heard_ms: u64,
    },
    /// The chosen device could not be used; `using` is used instead.
    DeviceFellBack {
        direction: DeviceDirection,
        using: String,
        reason: String,
    },
    /// The stream moved to another device.
    DeviceChanged {
        direction: DeviceDirection,
        using: String,
    },
    /// No device of this direction can be opened.
    DeviceUnavailable {
        direction: DeviceDirection,
        reason: String,
    },
    /// The uplink's echo canceller has converged on the echo path, or must learn a new one
    /// (another device): while converged the user may talk over a reply.
    EchoCanceller { converged: bool },
    /// While the canceller is trusted, the microphone heard someone start talking: a reply
    /// may be held until the provider says whether it is a barge-in.
    NearSpeech,
    /// A level reading for the meters.
    Level {
        direction: DeviceDirection,
        level: LevelReading,
    },
}

/// What the transport reports once the call is placed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TransportInput {
    /// The data channel is open: the session can be configured.
    Open,
    /// Connectivity was lost for a while; it may come back.
    Disconnected,
    /// Connectivity came back.
    Reconnected,
    /// A client event could not be sent (why).
    SendFailed(String),
    /// The call ended under the conversation (why, as a phrase: "the provider closed the
    /// call"); a new call will be dialled.
    Closed(String),
}
