//! How the turn controller is set up: the turn mode, the transport's needs and the timings.
//!
//! Why these knobs: the defaults come from the protocol reference (§4): a 200 ms tail so the last
//! RTP packets reach the server before the commit, 150 ms as the shortest press worth committing
//! (the server refuses less than 100 ms of audio), and the provider's 60-minute session cap. The
//! transport decides two protocol details: `output_audio_buffer.clear` exists only over WebRTC,
//! and only a transport where the client owns playback (WebSocket) must tell the server how much
//! of a cut reply was heard with `conversation.item.truncate`.

use walkie_openai::{AudioConfig, AudioInput, SessionConfig, SessionKind, TurnDetection};

/// The audio tail kept after the key is released, before the commit (reference §4.2 3a).
pub const DEFAULT_TAIL_MS: u64 = 200;

/// How long after the data channel opens the controller waits for `session.updated` before
/// going ahead without it (as the OpenAI Agents SDK does): a server that never confirms must
/// not leave the talk key dead.
pub const SESSION_CONFIRM_GRACE_MS: u64 = 5_000;

/// Over WebRTC, how long after the server's `output_audio_buffer.stopped` (extended by each
/// late chunk) the reply's audio may still come out of the jitter buffer. The reply stays
/// audible, and its speech part open, until this passes without audio; otherwise its last
/// packets would open a second, empty assistant message.
pub const LATE_AUDIO_GRACE_MS: u64 = 300;
/// Hands-free with voice barge-in: how long a reply stays held after the microphone heard the
/// user start talking over it ([`crate::turn::TurnController::near_speech`]) for the
/// provider's `speech_started` to confirm it; unconfirmed, the reply goes on where it stopped.
/// The provider's detection and its round trip take a few hundred milliseconds.
pub const NEAR_SPEECH_HOLD_MS: u64 = 700;
/// Presses shorter than this are ignored, with a hint (the server needs at least 100 ms).
pub const DEFAULT_MIN_PRESS_MS: u64 = 150;
/// A press that stops an audible reply counts as a turn only when held this long: a tap just
/// stops the reply; a user who goes on to speak holds the key longer than this.
pub const DEFAULT_INTERRUPT_HOLD_MS: u64 = 400;
/// Warm-mic audio from before the key went down, prepended to the capture.
pub const DEFAULT_PRE_ROLL_MS: u64 = 300;
/// A press held this long is released by the controller: a lost key-up cannot wedge it.
pub const DEFAULT_MAX_PRESS_MS: u64 = 10 * 60 * 1000;
/// The provider ends a session after 60 minutes.
pub const SESSION_LIMIT_MS: u64 = 60 * 60 * 1000;
/// How long before the session limit the user is told it is coming.
pub const DEFAULT_SESSION_LIMIT_WARNING_MS: u64 = 5 * 60 * 1000;

/// How long before a session limit of `session_limit_ms` it is announced: five minutes, or a
/// quarter of a shorter session (a 2-minute session is announced at 90 s, not at its start).
pub fn session_limit_warning_ms(session_limit_ms: u64) -> u64 {
    DEFAULT_SESSION_LIMIT_WARNING_MS.min(session_limit_ms / 4)
}

/// How a push-to-talk key works (the settings file spells it `hold` or `toggle`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PressMode {
    /// Talk while the key is held; releasing it ends the utterance.
    #[default]
    Hold,
    /// One press starts talking, the next press ends it; key-ups are ignored.
    Toggle,
}

impl PressMode {
    /// Whether the key holds a press after a key-down, `held` whether it held one before: in
    /// hold mode a key-down holds it (a repeat changes nothing); in toggle mode it starts or
    /// ends it. The one rule of the two modes, for a press under way and one carried to the
    /// next call alike.
    pub fn held_after_key_down(self, held: bool) -> bool {
        match self {
            PressMode::Hold => true,
            PressMode::Toggle => !held,
        }
    }

    /// Whether the key holds a press after a key-up: in hold mode it ends it; in toggle mode
    /// a key-up changes nothing.
    pub fn held_after_key_up(self, held: bool) -> bool {
        match self {
            PressMode::Hold => false,
            PressMode::Toggle => held,
        }
    }
}

/// Who decides where a user turn starts and ends.
#[derive(Debug, Clone, PartialEq)]
pub enum TurnMode {
    /// The key does (`turn_detection: null`): the client clears, commits and asks for a response.
    PushToTalk(PressMode),
    /// The server's VAD does (`server_vad` or `semantic_vad`); capture stays open.
    HandsFree(TurnDetection),
}

impl TurnMode {
    /// How the key works in this mode; `None`: hands-free, where it only stops a reply.
    pub fn press_mode(&self) -> Option<PressMode> {
        match self {
            TurnMode::PushToTalk(press) => Some(*press),
            TurnMode::HandsFree(_) => None,
        }
    }

    /// Whether the server cancels a response itself when the user starts speaking.
    pub(crate) fn server_interrupts(&self) -> bool {
        match self {
            TurnMode::PushToTalk(_) => false,
            TurnMode::HandsFree(
                TurnDetection::ServerVad {
                    interrupt_response, ..
                }
                | TurnDetection::SemanticVad {
                    interrupt_response, ..
                },
            ) => interrupt_response.unwrap_or(true),
        }
    }
}

/// The link the events and audio travel on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// Audio by RTP, the server owns the output buffer (`output_audio_buffer.*` exist) and cuts a
    /// reply's item to what it played itself: no truncate is sent.
    WebRtc,
    /// Audio inside JSON, the client owns playback: a barge-in sends `conversation.item.truncate`
    /// with the `audio_end_ms` actually played, and there is no output buffer to clear.
    WebSocket,
}

/// The turn controller's settings.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnConfig {
    /// The protocol the call speaks, which picks its turn engine ([`super::engine_for`]).
    pub family: super::ProviderFamily,
    /// Push-to-talk (hold or toggle) or hands-free.
    pub mode: TurnMode,
    /// What the link needs on a barge-in.
    pub transport: Transport,
    /// The session sent in `session.update` when the data channel opens. The controller sets
    /// `type`, `audio.input.turn_detection` (from `mode`) and, when unset, `tools` (from the
    /// registry); everything else is sent as given.
    pub session: SessionConfig,
    /// Audio kept after key-up before the commit.
    pub tail_ms: u64,
    /// Shorter presses are ignored with a hint.
    pub min_press_ms: u64,
    /// Warm-mic pre-roll asked of the capture when it opens on key-down.
    pub pre_roll_ms: u64,
    /// A press held longer is released by the controller (a lost key-up).
    pub max_press_ms: u64,
    /// A press that stopped a reply counts as a turn only when held at least this long.
    pub interrupt_hold_ms: u64,
    /// Whether an echo canceller runs on the capture. Without one, the mic is gated while the
    /// assistant is audible, in both modes, so the model does not hear (and answer) itself; in
    /// push-to-talk a press opens the gate (it flushes playback first), and a reply starting
    /// under a held key is cut (see the controller's rules).
    pub echo_canceller: bool,
    /// The provider's session cap, counted from the data channel opening.
    pub session_limit_ms: u64,
    /// How long before the cap the user is told.
    pub session_limit_warning_ms: u64,
    /// A typed message is answered in text alone (`output_modalities: ["text"]` on its
    /// `response.create`), and so is what follows from it (a tool's result); a spoken turn is
    /// answered as the session says.
    pub typed_replies_in_text: bool,
}

impl TurnConfig {
    /// Push-to-talk with the hold key over WebRTC, with the default timings.
    pub fn push_to_talk(session: SessionConfig) -> Self {
        Self {
            family: super::ProviderFamily::Realtime,
            mode: TurnMode::PushToTalk(PressMode::Hold),
            transport: Transport::WebRtc,
            session,
            tail_ms: DEFAULT_TAIL_MS,
            min_press_ms: DEFAULT_MIN_PRESS_MS,
            pre_roll_ms: DEFAULT_PRE_ROLL_MS,
            max_press_ms: DEFAULT_MAX_PRESS_MS,
            interrupt_hold_ms: DEFAULT_INTERRUPT_HOLD_MS,
            echo_canceller: false,
            session_limit_ms: SESSION_LIMIT_MS,
            session_limit_warning_ms: DEFAULT_SESSION_LIMIT_WARNING_MS,
            typed_replies_in_text: false,
        }
    }

    /// Hands-free with this server turn detection over WebRTC, with the default timings.
    pub fn hands_free(session: SessionConfig, turn_detection: TurnDetection) -> Self {
        Self {
            mode: TurnMode::HandsFree(turn_detection),
            ..Self::push_to_talk(session)
        }
    }

    /// The session a call is created with, over HTTP (the multipart `session` part, or the
    /// session of a minted ephemeral key): `type`, turn detection from `mode`, the tools, and
    /// everything else as given — `model` included, since only call creation may set it.
    pub fn call_session(&self, tools: Vec<walkie_openai::Tool>) -> SessionConfig {
        let mut session = self.session.clone();
        session.kind = SessionKind::Realtime;
        let turn_detection = match &self.mode {
            TurnMode::PushToTalk(_) => None,
            TurnMode::HandsFree(detection) => Some(detection.clone()),
        };
        let audio = session.audio.get_or_insert_with(AudioConfig::default);
        let input = audio.input.get_or_insert_with(AudioInput::default);
        input.turn_detection = Some(turn_detection);
        if session.tools.is_none() && !tools.is_empty() {
            session.tools = Some(tools);
        }
        session
    }

    /// The `session` of a `session.update`: the call's session, less what an update may not
    /// carry. Never `model` (the API lets an update change any field "except voice and
    /// model"; the model belongs to call creation), and `voice` only while `voice_allowed`
    /// (before the first assistant audio; a voice change later reconnects). The call's
    /// session is kept within a data-channel message by the transport, and the outside tools
    /// an update adds by the conversation, which declares only those that fit
    /// ([`walkie_openai::MAX_SESSION_BYTES`]).
    pub fn session_update(
        &self,
        tools: Vec<walkie_openai::Tool>,
        voice_allowed: bool,
    ) -> SessionConfig {
        let mut session = self.call_session(tools);
        session.model = None;
        if !voice_allowed
            && let Some(output) = session
                .audio
                .as_mut()
                .and_then(|audio| audio.output.as_mut())
        {
            output.voice = None;
        }
        session
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_hour_long_session_is_announced_five_minutes_ahead_and_a_short_one_a_quarter_ahead() {
        assert_eq!(session_limit_warning_ms(SESSION_LIMIT_MS), 5 * 60 * 1000);
        assert_eq!(session_limit_warning_ms(2 * 60 * 1000), 30_000);
        assert_eq!(session_limit_warning_ms(20_000), 5_000);
    }
}
