//! The provider's side of one call, as a pure state machine: client events and received audio
//! frames in, server events and audio frames out. No I/O and no clock of its own: every input
//! carries the caller's time (`now_ms`, milliseconds since the call started), and the driver
//! (`call.rs`) calls [`ProviderSession::tick`] at [`ProviderSession::next_deadline_ms`]. Tests
//! drive it in virtual time.
//!
//! What it does, honestly: it cannot understand speech, so it answers every turn by playing
//! the user's own audio back, describes the user's audio instead of transcribing it
//! ("[2.4 s of speech]"), and says in its reply transcript what it did. It has no voices: an
//! out-of-band reply (`conversation: "none"`, a voice preview) plays a chime pitched by the
//! session's voice instead, and leaves the conversation and the user's audio as they were.
//!
//! Replies stream out in real time, as a model's would: "generation" runs at
//! [`GENERATION_SPEEDUP`]× real time (transcript deltas spread over it, `response.done` at its
//! end), playback at real time, one 20 ms frame per frame time (`output_audio_buffer.stopped`
//! when drained, after `response.done`). So `response.cancel` is meaningful while generating,
//! and `output_audio_buffer.clear` while playing.
//!
//! Hands-free mode (`turn_detection: server_vad | semantic_vad`) runs an energy-based VAD over
//! the received frames: speech starts after [`MIN_SPEECH_MS`] of frames above the threshold
//! (`audio_start_ms` is moved back by `prefix_padding_ms`), and stops after
//! `silence_duration_ms` of frames below it — or of no frames at all (a muted client).

use std::collections::VecDeque;

use bytes::Bytes;
use serde_json::Value;
use walkie_openai::{
    AudioConfig, AudioFormat, AudioInput, AudioOutput, ClientEvent, ContentPart, DecodeError,
    ErrorDetail, Item, ItemStatus, Modality, Response, ResponseStatus, Role, ServerEvent,
    SessionConfig, SessionKind, StatusDetails, TranscriptionUsage, TurnDetection,
    decode_client_event,
};

use crate::picture::{self, ReceivedPicture};
use crate::tool_calls::{self, ToolRequest};
use crate::usage::{self, Ledger, Tokens};

/// Samples of one 20 ms frame at 48 kHz.
pub const FRAME_SAMPLES: u32 = 960;
/// Milliseconds of one frame.
pub const FRAME_MS: u64 = 20;
/// The model name the local provider reports.
pub const LOCAL_MODEL: &str = "walkie-local-echo";
/// The shortest commit the GA server accepts.
const MIN_COMMIT_MS: u64 = 100;
/// Frames whose RMS is below this (≈ −45 dBFS of 16-bit full scale) count as silence when the
/// user's audio is described.
pub const SPEECH_RMS_THRESHOLD: f64 = 184.0;
/// How much faster than real time a reply is "generated": `response.done` comes when half of
/// the reply has been played, `output_audio_buffer.stopped` when all of it has.
pub const GENERATION_SPEEDUP: u64 = 2;
/// Hands-free: voiced audio needed before speech counts as started (a click is not speech).
pub const MIN_SPEECH_MS: u64 = 60;
/// A user transcript not followed by a reply is sent this long after its commit.
const TRANSCRIPT_DELAY_MS: u64 = 300;
/// The input buffer keeps at most this much audio (the oldest goes first).
const MAX_INPUT_MS: u64 = 15 * 60 * 1000;
/// At most this many overdue frames are sent at once; further behind, playback re-times.
const MAX_CATCH_UP_FRAMES: u64 = 5;
/// OpenAI ends a Realtime session this long after it starts (GA).
pub const DEFAULT_SESSION_LIMIT_MS: u64 = 60 * 60 * 1000;

/// One received audio frame as the session keeps it.
#[derive(Clone, Debug)]
pub struct InputFrame {
    /// The Opus packet, played back as received.
    pub opus: Bytes,
    /// Length in 48 kHz samples.
    pub samples: u32,
    /// The decoded frame's RMS, in 16-bit units (0 for digital silence).
    pub rms: f64,
}

impl InputFrame {
    /// Whether the frame holds speech, for describing the user's audio.
    pub fn voiced(&self) -> bool {
        self.rms >= SPEECH_RMS_THRESHOLD
    }

    pub(crate) fn ms(&self) -> u64 {
        u64::from(self.samples) * 1000 / 48_000
    }
}

/// What the session asks its driver to do.
#[derive(Clone, Debug, PartialEq)]
pub enum Output {
    /// Send this server event on the data channel, with this `event_id`.
    Event {
        event_id: String,
        event: Box<ServerEvent>,
    },
    /// Send this Opus frame as RTP now.
    Audio { opus: Bytes, samples: u32 },
    /// End the call after what came before it is sent: the session hit its maximum duration.
    HangUp,
}

impl Output {
    /// The JSON text to send for an event output.
    pub fn to_json(&self) -> Option<String> {
        match self {
            Output::Event { event_id, event } => Some(event.to_json(event_id)),
            Output::Audio { .. } | Output::HangUp => None,
        }
    }
}

/// The server VAD's settings, from `turn_detection`.
#[derive(Clone, Debug, PartialEq)]
pub struct VadSettings {
    /// Frames at or above this RMS (16-bit units) are speech.
    pub threshold_rms: f64,
    pub prefix_padding_ms: u64,
    pub silence_duration_ms: u64,
    pub create_response: bool,
    pub interrupt_response: bool,
}

impl VadSettings {
    /// The energy threshold for a `threshold` of 0–1: −60 dBFS at 0, −40 dBFS at the default
    /// 0.5, −20 dBFS at 1.
    pub fn rms_for_threshold(threshold: f32) -> f64 {
        let threshold = f64::from(threshold.clamp(0.0, 1.0));
        let dbfs = -60.0 + 40.0 * threshold;
        32_768.0 * 10f64.powf(dbfs / 20.0)
    }

    fn from_turn_detection(detection: &TurnDetection) -> Self {
        match detection {
            TurnDetection::ServerVad {
                threshold,
                prefix_padding_ms,
                silence_duration_ms,
                create_response,
                interrupt_response,
                ..
            } => Self {
                threshold_rms: Self::rms_for_threshold(threshold.unwrap_or(0.5)),
                prefix_padding_ms: u64::from(prefix_padding_ms.unwrap_or(300)),
                silence_duration_ms: u64::from(silence_duration_ms.unwrap_or(500)),
                create_response: create_response.unwrap_or(true),
                interrupt_response: interrupt_response.unwrap_or(true),
            },
            // No semantics here: eagerness only sets how long a pause ends the turn.
            TurnDetection::SemanticVad {
                eagerness,
                create_response,
                interrupt_response,
            } => Self {
                threshold_rms: Self::rms_for_threshold(0.5),
                prefix_padding_ms: 300,
                silence_duration_ms: match eagerness.as_deref() {
                    Some("low") => 1500,
                    Some("high") => 400,
                    _ => 800,
                },
                create_response: create_response.unwrap_or(true),
                interrupt_response: interrupt_response.unwrap_or(true),
            },
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
enum VadState {
    /// No speech; `voiced_ms` of voiced audio so far, from `onset_ms`.
    Idle { voiced_ms: u64, onset_ms: u64 },
    /// Speech in progress, for the user item `item_id`.
    Speaking {
        item_id: String,
        last_voiced_end_ms: u64,
    },
}

/// A response being generated.
struct Generating {
    response_id: String,
    item_id: String,
    started_ms: u64,
    /// Frames of the whole reply.
    frames: usize,
    deltas: Vec<String>,
    deltas_sent: usize,
    /// When the last frame has been generated: `response.done`.
    done_ms: u64,
    /// An out-of-band response (`conversation: "none"`): in no conversation.
    out_of_band: bool,
    /// Asked for in text alone (`output_modalities: ["text"]`): no audio, `response.output_text.*`.
    text_only: bool,
    /// The metadata the response was asked with, echoed on it.
    metadata: Option<serde_json::Value>,
}

impl Generating {
    /// Frames generated by `now_ms` (the first at once).
    fn generated_by(&self, now_ms: u64) -> usize {
        let elapsed = now_ms.saturating_sub(self.started_ms);
        let generated = 1 + elapsed * GENERATION_SPEEDUP / FRAME_MS;
        usize::try_from(generated).map_or(self.frames, |n| n.min(self.frames))
    }

    fn delta_due_ms(&self, index: usize) -> u64 {
        let span = self.done_ms - self.started_ms;
        self.started_ms + span * index as u64 / self.deltas.len().max(1) as u64
    }

    fn transcript_so_far(&self) -> String {
        self.deltas[..self.deltas_sent].concat()
    }
}

/// A reply's audio being played out.
struct Playback {
    response_id: String,
    item_id: String,
    queue: VecDeque<InputFrame>,
    /// When the next frame is due.
    next_frame_ms: u64,
    played_samples: u64,
}

/// Why a response is cancelled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CancelReason {
    /// `response.cancel` from the client.
    ClientCancelled,
    /// The server VAD heard the user start speaking.
    TurnDetected,
}

impl CancelReason {
    fn as_str(self) -> &'static str {
        match self {
            CancelReason::ClientCancelled => "client_cancelled",
            CancelReason::TurnDetected => "turn_detected",
        }
    }
}

pub struct ProviderSession {
    session: SessionConfig,
    next_id: u64,
    conversation_id: String,
    input: VecDeque<InputFrame>,
    /// Audio received since the call started, in 48 kHz samples (the VAD's timeline).
    received_samples: u64,
    /// The timeline position (ms) of the first frame in `input`.
    input_start_ms: u64,
    last_audio_at_ms: Option<u64>,
    vad: Option<(VadSettings, VadState)>,
    last_item_id: Option<String>,
    /// The audio of the newest committed turn not yet answered.
    unanswered: Option<Vec<InputFrame>>,
    /// The text of the last user message the client created (typed, or restored), until a
    /// reply takes it.
    unanswered_text: Option<String>,
    /// The calls of function tools the model made and the client has not answered yet: call
    /// id → tool name.
    open_tool_calls: std::collections::BTreeMap<String, String>,
    /// The tools' outputs the client sent since the last reply (tool name, output), which the
    /// next reply says.
    tool_outputs: Vec<(String, String)>,
    /// The pictures user messages carried since the last reply, which the next reply mentions.
    unseen_pictures: Vec<ReceivedPicture>,
    /// Every picture user messages carried, in order.
    received_pictures: Vec<ReceivedPicture>,
    /// User transcripts to send after the current reply (they arrive late, as from OpenAI),
    /// with what each is billed and the time of their commit.
    pending_transcripts: Vec<(String, String, TranscriptionUsage, u64)>,
    generating: Option<Generating>,
    playback: Option<Playback>,
    /// Assistant items with audio, and their length in ms (for truncate).
    assistant_audio_ms: Vec<(String, u64)>,
    /// Whether the session has produced assistant audio: the voice is fixed from then on.
    produced_audio: bool,
    /// Items the client created (`conversation.item.create`), in order.
    created_items: Vec<Item>,
    /// The session's maximum duration, counted from the data channel opening.
    limit_ms: u64,
    /// When the data channel opened; `None` before, and after the limit ended the session.
    connected_at_ms: Option<u64>,
    /// What each response takes in and gives out, for its usage.
    ledger: Ledger,
}

/// The pictures of a user message, each read as the picture its `input_image` claims to be;
/// the first that is not says what is wrong with it.
fn pictures_of(item: &Item) -> Result<Vec<ReceivedPicture>, String> {
    let Item::Message { content, .. } = item else {
        return Ok(Vec::new());
    };
    content
        .iter()
        .enumerate()
        .filter_map(|(index, part)| match part {
            ContentPart::InputImage { image_url, detail } => Some(picture::read_input_image(
                image_url,
                *detail,
                &format!("item.content[{index}].image_url"),
            )),
            _ => None,
        })
        .collect()
}

/// What is wrong with an item a client asked to create, by the GA reference's rules for
/// `conversation.item.create`; `None` for an item the local provider accepts.
fn item_problem(item: &Item) -> Option<String> {
    match item {
        Item::Message { role, content, .. } => {
            if content.is_empty() {
                return Some("Invalid 'item.content': empty array.".to_owned());
            }
            content.iter().enumerate().find_map(|(index, part)| {
                let allowed = matches!(
                    (role, part),
                    (
                        Role::User,
                        ContentPart::InputText { .. }
                            | ContentPart::InputAudio { .. }
                            | ContentPart::InputImage { .. }
                    ) | (Role::System, ContentPart::InputText { .. })
                        | (
                            Role::Assistant,
                            ContentPart::OutputText { .. } | ContentPart::OutputAudio { .. },
                        )
                );
                (!allowed).then(|| {
                    let role = match role {
                        Role::User => "user",
                        Role::Assistant => "assistant",
                        Role::System => "system",
                    };
                    format!(
                        "Invalid value for 'item.content[{index}].type': not allowed in a {role} message."
                    )
                })
            })
        }
        Item::FunctionCallOutput { .. } => None,
        Item::FunctionCall { .. } | Item::Other(_) => {
            Some("The local provider creates messages and function call outputs only.".to_owned())
        }
    }
}

/// A session limit as OpenAI's error says it ("60 minutes"); seconds when not whole minutes.
fn duration_words(limit_ms: u64) -> String {
    match (limit_ms / 60_000, limit_ms % 60_000) {
        (1, 0) => "1 minute".to_owned(),
        (minutes, 0) => format!("{minutes} minutes"),
        _ => format!("{} seconds", limit_ms.div_ceil(1000)),
    }
}

impl ProviderSession {
    pub fn new(call_id: &str) -> Self {
        Self {
            session: default_session(call_id),
            next_id: 0,
            conversation_id: format!("conv_{call_id}"),
            input: VecDeque::new(),
            received_samples: 0,
            input_start_ms: 0,
            last_audio_at_ms: None,
            vad: None,
            last_item_id: None,
            unanswered: None,
            unanswered_text: None,
            open_tool_calls: std::collections::BTreeMap::new(),
            tool_outputs: Vec::new(),
            unseen_pictures: Vec::new(),
            received_pictures: Vec::new(),
            pending_transcripts: Vec::new(),
            generating: None,
            playback: None,
            assistant_audio_ms: Vec::new(),
            produced_audio: false,
            created_items: Vec::new(),
            limit_ms: DEFAULT_SESSION_LIMIT_MS,
            connected_at_ms: None,
            ledger: Ledger::default(),
        }
    }

    /// The session ends with `session_expired` this long after the data channel opens, as
    /// OpenAI's does after [`DEFAULT_SESSION_LIMIT_MS`].
    pub fn with_limit_ms(mut self, limit_ms: u64) -> Self {
        self.limit_ms = limit_ms;
        self
    }

    /// A call created with a session (the multipart `session` part, or the session of the
    /// ephemeral key it was placed with): it starts as if a `session.update` had set it, the
    /// model included (the model belongs to call creation), and `session.created` shows it.
    pub fn with_session(call_id: &str, initial: Option<SessionConfig>) -> Self {
        let mut session = Self::new(call_id);
        if let Some(initial) = initial {
            if let Some(model) = initial.model.clone() {
                session.session.model = Some(model);
            }
            session.apply_session(initial);
        }
        session
    }

    /// The session as it is now (what `session.created`/`session.updated` would show).
    pub fn session(&self) -> &SessionConfig {
        &self.session
    }

    fn id(&mut self, prefix: &str) -> String {
        self.next_id += 1;
        format!("{prefix}_local{:04}", self.next_id)
    }

    fn emit(&mut self, out: &mut Vec<Output>, event: ServerEvent) {
        let event_id = self.id("event");
        out.push(Output::Event {
            event_id,
            event: Box::new(event),
        });
    }

    /// The data channel opened: `session.created` comes first.
    pub fn on_connect(&mut self, now_ms: u64) -> Vec<Output> {
        self.connected_at_ms = Some(now_ms);
        let mut out = Vec::new();
        let session = Box::new(self.session.clone());
        self.emit(&mut out, ServerEvent::SessionCreated { session });
        out
    }

    /// Whether a reply is being generated (`response.cancel` would cancel it).
    pub fn is_generating(&self) -> bool {
        self.generating.is_some()
    }

    /// Whether a reply is being played out.
    pub fn is_playing(&self) -> bool {
        self.playback.is_some()
    }

    /// Whether hands-free mode (server VAD) is on.
    pub fn is_hands_free(&self) -> bool {
        self.vad.is_some()
    }

    /// When [`Self::tick`] must be called next; `None` when nothing is timed.
    pub fn next_deadline_ms(&self) -> Option<u64> {
        let mut deadline: Option<u64> = None;
        let mut consider = |ms: u64| deadline = Some(deadline.map_or(ms, |d| d.min(ms)));
        if let Some(connected_at_ms) = self.connected_at_ms {
            consider(connected_at_ms.saturating_add(self.limit_ms));
        }
        if let Some(generating) = &self.generating {
            if generating.deltas_sent < generating.deltas.len() {
                consider(generating.delta_due_ms(generating.deltas_sent));
            }
            consider(generating.done_ms);
        }
        if let Some(playback) = &self.playback {
            consider(playback.next_frame_ms);
        }
        if let Some((settings, VadState::Speaking { .. })) = &self.vad
            && let Some(last) = self.last_audio_at_ms
        {
            consider(last + settings.silence_duration_ms);
        }
        if self.generating.is_none()
            && let Some((_, _, _, committed)) = self.pending_transcripts.first()
        {
            consider(committed + TRANSCRIPT_DELAY_MS);
        }
        deadline
    }

    /// Advances the timed work to `now_ms`: transcript deltas and the end of generation,
    /// playback frames and the end of playback, the VAD's silence without audio, late user
    /// transcripts, and the session's maximum duration (`session_expired`, then the call ends).
    pub fn tick(&mut self, now_ms: u64) -> Vec<Output> {
        let mut out = Vec::new();
        if let Some(connected_at_ms) = self.connected_at_ms
            && now_ms >= connected_at_ms.saturating_add(self.limit_ms)
        {
            self.connected_at_ms = None;
            self.generating = None;
            self.playback = None;
            let message = format!(
                "Your session hit the maximum duration of {}.",
                duration_words(self.limit_ms)
            );
            self.error(&mut out, None, "session_expired", message);
            out.push(Output::HangUp);
            return out;
        }
        self.advance_generation(&mut out, now_ms);
        self.advance_playback(&mut out, now_ms);
        if let Some((settings, VadState::Speaking { .. })) = &self.vad
            && self
                .last_audio_at_ms
                .is_some_and(|last| now_ms >= last + settings.silence_duration_ms)
        {
            // The client stopped sending audio mid-speech (a muted microphone): silence.
            self.end_speech(&mut out, now_ms);
        }
        if self.generating.is_none()
            && self
                .pending_transcripts
                .first()
                .is_some_and(|(_, _, _, committed)| now_ms >= committed + TRANSCRIPT_DELAY_MS)
        {
            self.flush_transcripts(&mut out);
        }
        out
    }

    fn advance_generation(&mut self, out: &mut Vec<Output>, now_ms: u64) {
        let Some(generating) = &self.generating else {
            return;
        };
        let (response_id, item_id) = (generating.response_id.clone(), generating.item_id.clone());
        let text_only = generating.text_only;
        let mut due = Vec::new();
        let mut sent = generating.deltas_sent;
        while sent < generating.deltas.len() && generating.delta_due_ms(sent) <= now_ms {
            due.push(generating.deltas[sent].clone());
            sent += 1;
        }
        let finished = now_ms >= generating.done_ms;
        if let Some(generating) = &mut self.generating {
            generating.deltas_sent = sent;
        }
        for delta in due {
            let (response_id, item_id) = (response_id.clone(), item_id.clone());
            let event = if text_only {
                ServerEvent::OutputTextDelta {
                    response_id,
                    item_id,
                    output_index: 0,
                    content_index: 0,
                    delta,
                }
            } else {
                ServerEvent::OutputAudioTranscriptDelta {
                    response_id,
                    item_id,
                    output_index: 0,
                    content_index: 0,
                    delta,
                }
            };
            self.emit(out, event);
        }
        if finished {
            self.finish_response(out, now_ms, None);
        }
    }

    fn advance_playback(&mut self, out: &mut Vec<Output>, now_ms: u64) {
        let Some(playback) = &mut self.playback else {
            return;
        };
        let mut sent = 0;
        while playback.next_frame_ms <= now_ms {
            let Some(frame) = playback.queue.pop_front() else {
                let response_id = playback.response_id.clone();
                self.playback = None;
                self.emit(out, ServerEvent::OutputAudioBufferStopped { response_id });
                return;
            };
            playback.played_samples += u64::from(frame.samples);
            playback.next_frame_ms += frame.ms().max(1);
            out.push(Output::Audio {
                opus: frame.opus,
                samples: frame.samples,
            });
            sent += 1;
            if sent >= MAX_CATCH_UP_FRAMES && playback.next_frame_ms <= now_ms {
                // Far behind (a stalled driver): go on from now rather than burst.
                playback.next_frame_ms = now_ms + FRAME_MS;
            }
        }
    }

    /// One received audio frame. It joins the input buffer; in hands-free mode the VAD looks
    /// at it and may start or end a turn.
    pub fn on_audio(&mut self, frame: InputFrame, now_ms: u64) -> Vec<Output> {
        let mut out = Vec::new();
        let start_ms = self.received_samples * 1000 / 48_000;
        self.received_samples += u64::from(frame.samples);
        let end_ms = self.received_samples * 1000 / 48_000;
        self.last_audio_at_ms = Some(now_ms);
        if self.input.is_empty() {
            self.input_start_ms = start_ms;
        }
        let voiced_for_vad = self
            .vad
            .as_ref()
            .map(|(settings, _)| frame.rms >= settings.threshold_rms);
        self.input.push_back(frame);
        while end_ms.saturating_sub(self.input_start_ms) > MAX_INPUT_MS {
            self.drop_oldest_input();
        }
        let Some(voiced) = voiced_for_vad else {
            return out;
        };
        let Some((settings, state)) = &mut self.vad else {
            return out;
        };
        match state {
            VadState::Idle {
                voiced_ms,
                onset_ms,
            } => {
                if voiced {
                    if *voiced_ms == 0 {
                        *onset_ms = start_ms;
                    }
                    *voiced_ms += end_ms - start_ms;
                    if *voiced_ms >= MIN_SPEECH_MS {
                        let onset = *onset_ms;
                        let padding = settings.prefix_padding_ms;
                        self.start_speech(&mut out, onset, padding, now_ms);
                    }
                } else {
                    *voiced_ms = 0;
                    // Keep only the prefix padding before a possible onset.
                    let keep_from = end_ms.saturating_sub(settings.prefix_padding_ms);
                    while self
                        .input
                        .front()
                        .is_some_and(|first| self.input_start_ms + first.ms() <= keep_from)
                    {
                        self.drop_oldest_input();
                    }
                }
            }
            VadState::Speaking {
                last_voiced_end_ms, ..
            } => {
                if voiced {
                    *last_voiced_end_ms = end_ms;
                } else if end_ms.saturating_sub(*last_voiced_end_ms) >= settings.silence_duration_ms
                {
                    self.end_speech(&mut out, now_ms);
                }
            }
        }
        out
    }

    fn drop_oldest_input(&mut self) {
        if let Some(first) = self.input.pop_front() {
            self.input_start_ms += first.ms();
        }
    }

    fn start_speech(&mut self, out: &mut Vec<Output>, onset_ms: u64, padding_ms: u64, now_ms: u64) {
        let audio_start_ms = onset_ms.saturating_sub(padding_ms).max(self.input_start_ms);
        while self
            .input
            .front()
            .is_some_and(|first| self.input_start_ms + first.ms() <= audio_start_ms)
        {
            self.drop_oldest_input();
        }
        let item_id = self.id("item");
        let interrupt = self
            .vad
            .as_ref()
            .is_some_and(|(settings, _)| settings.interrupt_response);
        if let Some((_, state)) = &mut self.vad {
            *state = VadState::Speaking {
                item_id: item_id.clone(),
                last_voiced_end_ms: self.received_samples * 1000 / 48_000,
            };
        }
        self.emit(
            out,
            ServerEvent::SpeechStarted {
                audio_start_ms,
                item_id,
            },
        );
        if interrupt {
            // Barge-in: the audible reply is cut, the one being generated cancelled.
            self.clear_output(out);
            if self.generating.is_some() {
                self.finish_response(out, now_ms, Some(CancelReason::TurnDetected));
            }
        }
    }

    fn end_speech(&mut self, out: &mut Vec<Output>, now_ms: u64) {
        let Some((settings, state)) = &mut self.vad else {
            return;
        };
        let VadState::Speaking {
            item_id,
            last_voiced_end_ms,
        } = state.clone()
        else {
            return;
        };
        let create_response = settings.create_response;
        *state = VadState::Idle {
            voiced_ms: 0,
            onset_ms: 0,
        };
        self.emit(
            out,
            ServerEvent::SpeechStopped {
                audio_end_ms: last_voiced_end_ms,
                item_id: item_id.clone(),
            },
        );
        self.commit_as(out, item_id, now_ms);
        if create_response && self.generating.is_none() {
            self.respond(out, now_ms, false, false, None);
        }
    }

    /// One text message from the client.
    pub fn on_client_text(&mut self, text: &str, now_ms: u64) -> Vec<Output> {
        let mut out = Vec::new();
        match decode_client_event(text) {
            Ok((event_id, event)) => self.on_client_event(&mut out, event_id, event, now_ms),
            Err(error) => {
                let event_id = raw_event_id(text);
                let detail = match &error {
                    DecodeError::BetaShape { .. } => ErrorDetail {
                        kind: "invalid_request_error".to_owned(),
                        code: Some("beta_api_shape_disabled".to_owned()),
                        message: "The Realtime Beta API is no longer supported. Please use /v1/realtime for the GA API.".to_owned(),
                        param: None,
                        event_id,
                    },
                    DecodeError::UnknownClientEvent { event_type } => ErrorDetail {
                        kind: "invalid_request_error".to_owned(),
                        code: Some("invalid_value".to_owned()),
                        message: format!("Invalid value: '{event_type}'. Supported values are client events of the GA Realtime API."),
                        param: Some("type".to_owned()),
                        event_id,
                    },
                    other => ErrorDetail {
                        kind: "invalid_request_error".to_owned(),
                        code: Some("invalid_event".to_owned()),
                        message: other.to_string(),
                        param: None,
                        event_id,
                    },
                };
                self.emit(&mut out, ServerEvent::Error { error: detail });
            }
        }
        out
    }

    fn error(
        &mut self,
        out: &mut Vec<Output>,
        event_id: Option<String>,
        code: &str,
        message: String,
    ) {
        let error = ErrorDetail {
            kind: "invalid_request_error".to_owned(),
            code: Some(code.to_owned()),
            message,
            param: None,
            event_id,
        };
        self.emit(out, ServerEvent::Error { error });
    }

    fn on_client_event(
        &mut self,
        out: &mut Vec<Output>,
        event_id: Option<String>,
        event: ClientEvent,
        now_ms: u64,
    ) {
        match event {
            ClientEvent::SessionUpdate { session } => self.update_session(out, event_id, *session),
            ClientEvent::InputAudioBufferClear => {
                self.input.clear();
                if let Some((_, state)) = &mut self.vad {
                    *state = VadState::Idle {
                        voiced_ms: 0,
                        onset_ms: 0,
                    };
                }
                self.emit(out, ServerEvent::InputAudioBufferCleared);
            }
            ClientEvent::InputAudioBufferCommit => self.commit(out, event_id, now_ms),
            ClientEvent::ResponseCreate { response } => {
                if let Some(active) = self.generating.as_ref().map(|g| g.response_id.clone()) {
                    self.error(
                        out,
                        event_id,
                        "conversation_already_has_active_response",
                        format!("Conversation already has an active response in progress: {active}. Wait until the response is finished before creating a new one."),
                    );
                } else {
                    let out_of_band = response
                        .as_ref()
                        .is_some_and(|response| response.conversation.as_deref() == Some("none"));
                    let text_only = response
                        .as_ref()
                        .and_then(|response| response.output_modalities.as_deref())
                        .is_some_and(|modalities| modalities == [Modality::Text]);
                    // Echoed on the response, as the Realtime API does: how a client knows
                    // its out-of-band answers.
                    let metadata = response
                        .as_ref()
                        .and_then(|response| response.metadata.clone())
                        .map(serde_json::Value::Object);
                    self.respond(out, now_ms, out_of_band, text_only, metadata);
                }
            }
            ClientEvent::ResponseCancel { response_id } => {
                let active = self.generating.as_ref().map(|g| g.response_id.clone());
                match (active, response_id) {
                    (Some(active), Some(wanted)) if active != wanted => self.error(
                        out,
                        event_id,
                        "response_cancel_not_active",
                        format!("Cancellation failed: response {wanted} is not active"),
                    ),
                    (Some(_), _) => {
                        self.finish_response(out, now_ms, Some(CancelReason::ClientCancelled))
                    }
                    (None, _) => self.error(
                        out,
                        event_id,
                        "response_cancel_not_active",
                        "Cancellation failed: no active response found".to_owned(),
                    ),
                }
            }
            ClientEvent::OutputAudioBufferClear => self.clear_output(out),
            ClientEvent::ConversationItemTruncate {
                item_id,
                content_index,
                audio_end_ms,
            } => self.truncate(out, event_id, item_id, content_index, audio_end_ms),
            ClientEvent::ConversationItemCreate {
                previous_item_id,
                item,
            } => self.create_item(out, event_id, previous_item_id, item),
            ClientEvent::InputAudioBufferAppend { .. } => self.error(
                out,
                event_id,
                "unsupported_by_local_provider",
                "The local provider takes audio by RTP over WebRTC, not input_audio_buffer.append."
                    .to_owned(),
            ),
            other => self.error(
                out,
                event_id,
                "unsupported_by_local_provider",
                format!(
                    "The local provider does not implement {} yet.",
                    other.event_type()
                ),
            ),
        }
    }

    /// Cuts the audio still to be played: `output_audio_buffer.cleared`. The assistant item
    /// keeps only the audio that was played (the server truncates it, as over WebRTC).
    fn clear_output(&mut self, out: &mut Vec<Output>) {
        let Some(playback) = self.playback.take() else {
            return;
        };
        let played_ms = playback.played_samples * 1000 / 48_000;
        if let Some((_, ms)) = self
            .assistant_audio_ms
            .iter_mut()
            .find(|(id, _)| *id == playback.item_id)
        {
            *ms = (*ms).min(played_ms);
        }
        self.emit(
            out,
            ServerEvent::OutputAudioBufferCleared {
                response_id: playback.response_id,
            },
        );
    }

    /// `conversation.item.create`: a message (the conversation so far, restored by a client
    /// whose call dropped) or a tool's output joins the conversation, as
    /// `conversation.item.added` then `conversation.item.done`. Each role's content must have
    /// the types the GA reference allows: a user's `input_text`/`input_audio`, a system
    /// message's `input_text`, the assistant's `output_text`/`output_audio`. The items are
    /// kept ([`ProviderSession::created_items`]).
    fn create_item(
        &mut self,
        out: &mut Vec<Output>,
        event_id: Option<String>,
        previous_item_id: Option<String>,
        item: Item,
    ) {
        if let Some(problem) = item_problem(&item) {
            return self.error(out, event_id, "invalid_value", problem);
        }
        let pictures = match pictures_of(&item) {
            Ok(pictures) => pictures,
            Err(problem) => return self.error(out, event_id, "invalid_value", problem),
        };
        if let Item::FunctionCallOutput {
            call_id, output, ..
        } = &item
        {
            let Some(name) = self.open_tool_calls.remove(call_id) else {
                return self.error(
                    out,
                    event_id,
                    "invalid_value",
                    format!(
                        "Invalid value for 'item.call_id': no function call with call_id '{call_id}' waits for its output."
                    ),
                );
            };
            self.ledger.joined(Tokens {
                text: usage::text_tokens(output),
                ..Tokens::default()
            });
            self.tool_outputs.push((name, output.clone()));
        }
        let id = self.id("item");
        let item = match item {
            Item::Message { role, content, .. } => Item::Message {
                id: Some(id.clone()),
                role,
                status: Some(ItemStatus::Completed),
                content,
            },
            Item::FunctionCallOutput {
                call_id, output, ..
            } => Item::FunctionCallOutput {
                id: Some(id.clone()),
                call_id,
                output,
            },
            other => other,
        };
        if let Item::Message {
            role: Role::User,
            content,
            ..
        } = &item
        {
            let text: String = content
                .iter()
                .filter_map(|part| match part {
                    ContentPart::InputText { text } => Some(text.as_str()),
                    _ => None,
                })
                .collect();
            if !text.is_empty() {
                self.unanswered_text = Some(text);
            }
        }
        if let Item::Message { content, .. } = &item {
            let text: String = content
                .iter()
                .filter_map(|part| match part {
                    ContentPart::InputText { text } | ContentPart::OutputText { text } => {
                        Some(text.as_str())
                    }
                    ContentPart::InputAudio { transcript, .. }
                    | ContentPart::OutputAudio { transcript } => transcript.as_deref(),
                    ContentPart::InputImage { .. } | ContentPart::Other(_) => None,
                })
                .collect();
            self.ledger.joined(Tokens {
                text: usage::text_tokens(&text),
                audio: 0,
                image: pictures.iter().map(picture::image_tokens).sum(),
            });
        }
        self.unseen_pictures.extend(pictures.iter().cloned());
        self.received_pictures.extend(pictures);
        let previous_item_id = previous_item_id.or_else(|| self.last_item_id.clone());
        self.last_item_id = Some(id);
        self.created_items.push(item.clone());
        self.emit(
            out,
            ServerEvent::ConversationItemAdded {
                item: item.clone(),
                previous_item_id: previous_item_id.clone(),
            },
        );
        self.emit(
            out,
            ServerEvent::ConversationItemDone {
                item,
                previous_item_id,
            },
        );
    }

    /// The items the client created with `conversation.item.create`, in order.
    pub fn created_items(&self) -> &[Item] {
        &self.created_items
    }

    /// The pictures (`input_image`) the client's user messages carried, in order.
    pub fn received_pictures(&self) -> &[ReceivedPicture] {
        &self.received_pictures
    }

    fn truncate(
        &mut self,
        out: &mut Vec<Output>,
        event_id: Option<String>,
        item_id: String,
        content_index: u32,
        audio_end_ms: u64,
    ) {
        let known = self
            .assistant_audio_ms
            .iter()
            .position(|(id, _)| *id == item_id);
        match known {
            Some(index) if audio_end_ms <= self.assistant_audio_ms[index].1 => {
                self.assistant_audio_ms[index].1 = audio_end_ms;
                self.emit(
                    out,
                    ServerEvent::ConversationItemTruncated {
                        item_id,
                        content_index,
                        audio_end_ms,
                    },
                );
            }
            Some(index) => {
                let length = self.assistant_audio_ms[index].1;
                self.error(
                    out,
                    event_id,
                    "invalid_value",
                    format!("Audio content of {length}ms is already shorter than {audio_end_ms}ms"),
                );
            }
            None => self.error(
                out,
                event_id,
                "item_truncate_invalid_item_id",
                format!("Item with item_id not found: {item_id}"),
            ),
        }
    }

    fn update_session(
        &mut self,
        out: &mut Vec<Output>,
        event_id: Option<String>,
        update: SessionConfig,
    ) {
        if let Some(error) = self.refuse_update(&update, event_id) {
            // Rejected whole, as the real API does: nothing of the update applies.
            self.emit(out, ServerEvent::Error { error });
            return;
        }
        self.apply_session(update);
        let session = Box::new(self.session.clone());
        self.emit(out, ServerEvent::SessionUpdated { session });
    }

    /// Why a `session.update` is refused, if it is. The docs allow updating "any field except
    /// for voice and model", and `voice` "only if there have been no other audio outputs yet"
    /// (openai-python `session_update_event.py`; developers.openai.com realtime client events).
    fn refuse_update(
        &self,
        update: &SessionConfig,
        event_id: Option<String>,
    ) -> Option<ErrorDetail> {
        if update.model.is_some() {
            // The API documents no code for this. `invalid_value` on `session.model` is what
            // OpenAI answered a `session.update` carrying a model (observed in
            // github.com/vierisid/jarvis PR #433); the message is the local provider's own.
            return Some(ErrorDetail {
                kind: "invalid_request_error".to_owned(),
                code: Some("invalid_value".to_owned()),
                message: "Invalid 'session.model': the model is set when the call is created and cannot be changed with session.update.".to_owned(),
                param: Some("session.model".to_owned()),
                event_id,
            });
        }
        let voice = update
            .audio
            .as_ref()
            .and_then(|audio| audio.output.as_ref())
            .and_then(|output| output.voice.as_ref());
        let current = self
            .session
            .audio
            .as_ref()
            .and_then(|audio| audio.output.as_ref())
            .and_then(|output| output.voice.as_ref());
        if self.produced_audio && voice.is_some() && voice != current {
            // Code and message as the real API sends them (openai/openai-python issue #2607).
            return Some(ErrorDetail {
                kind: "invalid_request_error".to_owned(),
                code: Some("cannot_update_voice".to_owned()),
                message: "Cannot update a conversation's voice if assistant audio is present."
                    .to_owned(),
                param: None,
                event_id,
            });
        }
        None
    }

    /// Applies the fields present in `update` and restarts or stops the VAD to match.
    fn apply_session(&mut self, update: SessionConfig) {
        merge_session(&mut self.session, update);
        let detection = self
            .session
            .audio
            .as_ref()
            .and_then(|audio| audio.input.as_ref())
            .and_then(|input| input.turn_detection.clone())
            .flatten();
        match detection {
            Some(detection) => {
                let settings = VadSettings::from_turn_detection(&detection);
                let restated = restate_turn_detection(&detection, &settings);
                if let Some(input) = self
                    .session
                    .audio
                    .as_mut()
                    .and_then(|audio| audio.input.as_mut())
                {
                    input.turn_detection = Some(Some(restated));
                }
                let state = match self.vad.take() {
                    Some((_, state)) => state,
                    None => VadState::Idle {
                        voiced_ms: 0,
                        onset_ms: 0,
                    },
                };
                self.vad = Some((settings, state));
            }
            None => self.vad = None,
        }
    }

    /// The model the session transcribes the user with, if it does.
    fn transcription_model(&self) -> Option<String> {
        self.session
            .audio
            .as_ref()
            .and_then(|audio| audio.input.as_ref())
            .and_then(|input| input.transcription.as_ref())
            .and_then(Option::as_ref)
            .map(|transcription| transcription.model.clone())
    }

    fn input_ms(&self) -> u64 {
        self.input.iter().map(InputFrame::ms).sum()
    }

    /// A manual commit (`input_audio_buffer.commit`), also in hands-free mode: it ends the
    /// speech in progress without `speech_stopped`, as OpenAI does.
    fn commit(&mut self, out: &mut Vec<Output>, event_id: Option<String>, now_ms: u64) {
        let ms = self.input_ms();
        if ms < MIN_COMMIT_MS {
            self.error(
                out,
                event_id,
                "input_audio_buffer_commit_empty",
                format!("Error committing input audio buffer: buffer too small. Expected at least {MIN_COMMIT_MS}ms of audio, but buffer only has {ms}.00ms of audio."),
            );
            return;
        }
        let reserved = match &mut self.vad {
            Some((_, state)) => match std::mem::replace(
                state,
                VadState::Idle {
                    voiced_ms: 0,
                    onset_ms: 0,
                },
            ) {
                VadState::Speaking { item_id, .. } => Some(item_id),
                VadState::Idle { .. } => None,
            },
            None => None,
        };
        let item_id = match reserved {
            Some(item_id) => item_id,
            None => self.id("item"),
        };
        self.commit_as(out, item_id, now_ms);
    }

    fn commit_as(&mut self, out: &mut Vec<Output>, item_id: String, now_ms: u64) {
        self.flush_transcripts(out);
        let previous_item_id = self.last_item_id.replace(item_id.clone());
        let item = Item::Message {
            id: Some(item_id.clone()),
            role: Role::User,
            status: Some(ItemStatus::Completed),
            content: vec![ContentPart::InputAudio {
                audio: None,
                transcript: None,
            }],
        };
        self.emit(
            out,
            ServerEvent::InputAudioBufferCommitted {
                item_id: item_id.clone(),
                previous_item_id: previous_item_id.clone(),
            },
        );
        self.emit(
            out,
            ServerEvent::ConversationItemAdded {
                item: item.clone(),
                previous_item_id: previous_item_id.clone(),
            },
        );
        self.emit(
            out,
            ServerEvent::ConversationItemDone {
                item,
                previous_item_id,
            },
        );
        let frames: Vec<InputFrame> = self.input.drain(..).collect();
        if let Some(model) = self.transcription_model() {
            let seconds = frames
                .iter()
                .map(|frame| u64::from(frame.samples))
                .sum::<u64>() as f64
                / 48_000.0;
            let transcript = describe_user_audio(&frames);
            let usage = transcription_usage(&model, seconds, &transcript);
            self.pending_transcripts
                .push((item_id, transcript, usage, now_ms));
        }
        self.unanswered = Some(frames);
    }

    fn flush_transcripts(&mut self, out: &mut Vec<Output>) {
        for (item_id, transcript, usage, _) in std::mem::take(&mut self.pending_transcripts) {
            self.emit(
                out,
                ServerEvent::InputTranscriptionCompleted {
                    item_id,
                    content_index: 0,
                    transcript,
                    usage: Some(usage),
                },
            );
        }
    }

    /// Starts a reply: its opening events now, then transcript deltas and audio over time.
    /// Starts a reply: the user's unanswered audio played back, or, for an out-of-band
    /// response (`conversation: "none"`, which leaves the user's audio for the next reply and
    /// the conversation untouched), a chime standing in for the session's voice.
    fn respond(
        &mut self,
        out: &mut Vec<Output>,
        now_ms: u64,
        out_of_band: bool,
        text_only: bool,
        metadata: Option<serde_json::Value>,
    ) {
        let voice = self
            .session
            .audio
            .as_ref()
            .and_then(|audio| audio.output.as_ref())
            .and_then(|output| output.voice.clone())
            .unwrap_or_else(|| "the default voice".to_owned());
        let frames = if out_of_band {
            crate::chime::chime_frames(&voice)
        } else {
            self.unanswered.take().unwrap_or_default()
        };
        let typed = if out_of_band {
            None
        } else {
            self.unanswered_text.take()
        };
        if let Some(request) = typed.as_deref().and_then(|text| {
            tool_calls::tool_request(text, self.session.tools.as_deref().unwrap_or_default())
        }) {
            if !frames.is_empty() {
                self.unanswered = Some(frames);
            }
            return self.call_tool(out, request);
        }
        let samples: u64 = frames.iter().map(|frame| u64::from(frame.samples)).sum();
        let audio_ms = samples * 1000 / 48_000;
        if !out_of_band {
            self.ledger.joined(Tokens {
                audio: usage::user_audio_tokens(audio_ms),
                ..Tokens::default()
            });
        }
        let transcript = if out_of_band && text_only {
            // Asked beside the conversation in text (a title, say): the local provider cannot
            // read what was said, so it names the conversation by who took part.
            "Talking with Walkie's local provider".to_owned()
        } else if text_only && !frames.is_empty() {
            format!(
                "This is Walkie's local provider. You asked for text, so it cannot play your \
                 {:.1} seconds of audio back.",
                audio_ms as f64 / 1000.0
            )
        } else if out_of_band {
            format!(
                "This is Walkie's local provider. It has no voices, so this chime stands in for {voice}."
            )
        } else if let (true, Some(typed)) = (frames.is_empty(), typed) {
            format!(
                "This is Walkie's local provider. It can't read either, so here is what you \
                 wrote: {}",
                cut_chars(&typed, TYPED_ECHO_CHARS)
            )
        } else if frames.is_empty() {
            "This is Walkie's local provider. There was no new audio from you to play back."
                .to_owned()
        } else {
            format!(
                "This is Walkie's local provider. I can't understand speech, so I played your {:.1} seconds of audio back to you.",
                audio_ms as f64 / 1000.0
            )
        };

        let answered = std::mem::take(&mut self.tool_outputs);
        let transcript = match answered.as_slice() {
            _ if out_of_band => transcript,
            [] => transcript,
            [(name, output)] => format!(
                "This is Walkie's local provider. The {name} tool answered: {}",
                cut_chars(output, TYPED_ECHO_CHARS)
            ),
            [.., (name, output)] => format!(
                "This is Walkie's local provider. {} tool calls were answered; the last, {name}, \
                 answered: {}",
                answered.len(),
                cut_chars(output, TYPED_ECHO_CHARS)
            ),
        };
        let transcript = if out_of_band || self.unseen_pictures.is_empty() {
            transcript
        } else {
            let sizes: Vec<String> = std::mem::take(&mut self.unseen_pictures)
                .iter()
                .map(|picture| format!("{} by {} pixels", picture.width_px, picture.height_px))
                .collect();
            let pictures = if sizes.len() == 1 {
                "a picture"
            } else {
                "pictures"
            };
            format!(
                "{transcript} I can't see either, but you showed me {pictures}: {}.",
                sizes.join(", ")
            )
        };
        // A reply in text plays nothing.
        let frames = if text_only { Vec::new() } else { frames };
        let response_id = self.id("resp");
        let item_id = self.id("item");
        let previous_item_id = if out_of_band {
            None
        } else {
            self.last_item_id.replace(item_id.clone())
        };
        self.emit(
            out,
            ServerEvent::ResponseCreated {
                response: Response {
                    metadata: metadata.clone(),
                    ..self.response(
                        &response_id,
                        ResponseStatus::InProgress,
                        None,
                        vec![],
                        out_of_band,
                        text_only,
                    )
                },
            },
        );
        let in_progress = Item::Message {
            id: Some(item_id.clone()),
            role: Role::Assistant,
            status: Some(ItemStatus::InProgress),
            content: vec![],
        };
        self.emit(
            out,
            ServerEvent::ResponseOutputItemAdded {
                response_id: response_id.clone(),
                output_index: 0,
                item: in_progress.clone(),
            },
        );
        if !out_of_band {
            self.emit(
                out,
                ServerEvent::ConversationItemAdded {
                    item: in_progress,
                    previous_item_id,
                },
            );
        }
        self.emit(
            out,
            ServerEvent::ResponseContentPartAdded {
                response_id: response_id.clone(),
                item_id: item_id.clone(),
                output_index: 0,
                content_index: 0,
                part: if text_only {
                    ContentPart::OutputText {
                        text: String::new(),
                    }
                } else {
                    ContentPart::OutputAudio {
                        transcript: Some(String::new()),
                    }
                },
            },
        );
        if !frames.is_empty() {
            self.produced_audio = true;
            // A new reply replaces what was still playing.
            self.clear_output(out);
            self.emit(
                out,
                ServerEvent::OutputAudioBufferStarted {
                    response_id: response_id.clone(),
                },
            );
        }
        let deltas = transcript_deltas(&transcript);
        let generation_ms = if text_only {
            deltas.len() as u64 * TEXT_DELTA_MS
        } else {
            frames.len() as u64 * FRAME_MS / GENERATION_SPEEDUP
        };
        self.generating = Some(Generating {
            response_id: response_id.clone(),
            item_id: item_id.clone(),
            started_ms: now_ms,
            frames: frames.len(),
            deltas,
            deltas_sent: 0,
            done_ms: now_ms + generation_ms,
            out_of_band,
            text_only,
            metadata,
        });
        self.assistant_audio_ms.push((item_id.clone(), audio_ms));
        if !frames.is_empty() {
            self.playback = Some(Playback {
                response_id,
                item_id,
                queue: frames.into(),
                next_frame_ms: now_ms,
                played_samples: 0,
            });
        }
        // The first transcript delta and the first frame go out now.
        out.extend(self.tick(now_ms));
    }

    /// A response that is the scripted model's call of a declared tool (see
    /// [`crate::tool_calls`]), `request.count` times: each call's item, its arguments streamed
    /// in one delta, then `response.done` billed for the arguments. It plays nothing.
    fn call_tool(&mut self, out: &mut Vec<Output>, request: ToolRequest) {
        let response_id = self.id("resp");
        self.emit(
            out,
            ServerEvent::ResponseCreated {
                response: self.response(
                    &response_id,
                    ResponseStatus::InProgress,
                    None,
                    vec![],
                    false,
                    false,
                ),
            },
        );
        let mut done_items = Vec::with_capacity(request.count);
        for index in 0..request.count {
            let output_index = u32::try_from(index).unwrap_or(u32::MAX);
            let item_id = self.id("item");
            let call_id = self.id("call");
            let call = |status, arguments: &str| Item::FunctionCall {
                id: Some(item_id.clone()),
                call_id: call_id.clone(),
                name: request.name.clone(),
                arguments: arguments.to_owned(),
                status: Some(status),
            };
            let previous_item_id = self.last_item_id.replace(item_id.clone());
            self.emit(
                out,
                ServerEvent::ResponseOutputItemAdded {
                    response_id: response_id.clone(),
                    output_index,
                    item: call(ItemStatus::InProgress, ""),
                },
            );
            self.emit(
                out,
                ServerEvent::ConversationItemAdded {
                    item: call(ItemStatus::InProgress, ""),
                    previous_item_id: previous_item_id.clone(),
                },
            );
            self.emit(
                out,
                ServerEvent::FunctionCallArgumentsDelta {
                    response_id: response_id.clone(),
                    item_id: item_id.clone(),
                    output_index,
                    call_id: call_id.clone(),
                    delta: request.arguments.clone(),
                },
            );
            self.emit(
                out,
                ServerEvent::FunctionCallArgumentsDone {
                    response_id: response_id.clone(),
                    item_id: item_id.clone(),
                    output_index,
                    call_id: call_id.clone(),
                    name: Some(request.name.clone()),
                    arguments: request.arguments.clone(),
                },
            );
            let done = call(ItemStatus::Completed, &request.arguments);
            self.emit(
                out,
                ServerEvent::ResponseOutputItemDone {
                    response_id: response_id.clone(),
                    output_index,
                    item: done.clone(),
                },
            );
            self.emit(
                out,
                ServerEvent::ConversationItemDone {
                    item: done.clone(),
                    previous_item_id,
                },
            );
            self.open_tool_calls.insert(call_id, request.name.clone());
            done_items.push(done);
        }
        let output = Tokens {
            text: usage::text_tokens(&request.arguments) * request.count as u64,
            ..Tokens::default()
        };
        let instructions = usage::text_tokens(self.session.instructions.as_deref().unwrap_or(""));
        let usage = self.ledger.bill(instructions, output, false);
        let response = Response {
            usage: Some(usage),
            ..self.response(
                &response_id,
                ResponseStatus::Completed,
                None,
                done_items,
                false,
                false,
            )
        };
        self.emit(out, ServerEvent::ResponseDone { response });
    }

    fn response(
        &self,
        response_id: &str,
        status: ResponseStatus,
        status_details: Option<StatusDetails>,
        output: Vec<Item>,
        out_of_band: bool,
        text_only: bool,
    ) -> Response {
        Response {
            id: response_id.to_owned(),
            status,
            status_details,
            output,
            conversation_id: (!out_of_band).then(|| self.conversation_id.clone()),
            output_modalities: Some(vec![if text_only {
                Modality::Text
            } else {
                Modality::Audio
            }]),
            usage: None,
            metadata: None,
        }
    }

    /// Ends the response being generated: completed (`cancel: None`, everything generated) or
    /// cancelled (the audio not generated yet is dropped, the transcript is what was sent).
    fn finish_response(
        &mut self,
        out: &mut Vec<Output>,
        now_ms: u64,
        cancel: Option<CancelReason>,
    ) {
        let Some(generating) = self.generating.take() else {
            return;
        };
        let Generating {
            response_id,
            item_id,
            ..
        } = &generating;
        let (transcript, status, item_status, details, generated_frames) = match cancel {
            None => (
                generating.deltas.concat(),
                ResponseStatus::Completed,
                ItemStatus::Completed,
                None,
                generating.frames,
            ),
            Some(reason) => {
                let generated = generating.generated_by(now_ms);
                if let Some(playback) = &mut self.playback
                    && playback.response_id == *response_id
                {
                    // Frames not generated yet were never in the output buffer.
                    let played = generating.frames - playback.queue.len();
                    playback.queue.truncate(generated.saturating_sub(played));
                }
                let generated_ms = generated as u64 * FRAME_MS;
                if let Some((_, ms)) = self
                    .assistant_audio_ms
                    .iter_mut()
                    .find(|(id, _)| id == item_id)
                {
                    *ms = (*ms).min(generated_ms);
                }
                (
                    generating.transcript_so_far(),
                    ResponseStatus::Cancelled,
                    ItemStatus::Incomplete,
                    Some(StatusDetails {
                        kind: "cancelled".to_owned(),
                        reason: Some(reason.as_str().to_owned()),
                        error: None,
                    }),
                    generated,
                )
            }
        };
        let output = Tokens {
            text: usage::text_tokens(&transcript),
            audio: usage::assistant_audio_tokens(generated_frames as u64 * FRAME_MS),
            image: 0,
        };
        let instructions = usage::text_tokens(self.session.instructions.as_deref().unwrap_or(""));
        let usage = self
            .ledger
            .bill(instructions, output, generating.out_of_band);
        let part = if generating.text_only {
            self.emit(
                out,
                ServerEvent::OutputTextDone {
                    response_id: response_id.clone(),
                    item_id: item_id.clone(),
                    output_index: 0,
                    content_index: 0,
                    text: transcript.clone(),
                },
            );
            ContentPart::OutputText {
                text: transcript.clone(),
            }
        } else {
            self.emit(
                out,
                ServerEvent::OutputAudioDone {
                    response_id: response_id.clone(),
                    item_id: item_id.clone(),
                    output_index: 0,
                    content_index: 0,
                },
            );
            self.emit(
                out,
                ServerEvent::OutputAudioTranscriptDone {
                    response_id: response_id.clone(),
                    item_id: item_id.clone(),
                    output_index: 0,
                    content_index: 0,
                    transcript: transcript.clone(),
                },
            );
            ContentPart::OutputAudio {
                transcript: Some(transcript.clone()),
            }
        };
        self.emit(
            out,
            ServerEvent::ResponseContentPartDone {
                response_id: response_id.clone(),
                item_id: item_id.clone(),
                output_index: 0,
                content_index: 0,
                part: part.clone(),
            },
        );
        let done_item = Item::Message {
            id: Some(item_id.clone()),
            role: Role::Assistant,
            status: Some(item_status),
            content: vec![part],
        };
        self.emit(
            out,
            ServerEvent::ResponseOutputItemDone {
                response_id: response_id.clone(),
                output_index: 0,
                item: done_item.clone(),
            },
        );
        let response = Response {
            usage: Some(usage),
            metadata: generating.metadata.clone(),
            ..self.response(
                response_id,
                status,
                details,
                vec![done_item],
                generating.out_of_band,
                generating.text_only,
            )
        };
        self.emit(out, ServerEvent::ResponseDone { response });
        self.flush_transcripts(out);
    }
}

/// How long the local provider takes over each delta of a reply in text.
const TEXT_DELTA_MS: u64 = 10;

/// How much of a typed message the local provider's reply repeats, in characters.
const TYPED_ECHO_CHARS: usize = 200;

/// `text` up to `max_chars` characters, with an ellipsis when it was longer.
pub(crate) fn cut_chars(text: &str, max_chars: usize) -> String {
    match text.char_indices().nth(max_chars) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_owned(),
    }
}

/// The `turn_detection` the server restates: every setting it uses, defaults filled in.
fn restate_turn_detection(detection: &TurnDetection, settings: &VadSettings) -> TurnDetection {
    match detection {
        TurnDetection::ServerVad {
            threshold,
            idle_timeout_ms,
            ..
        } => TurnDetection::ServerVad {
            threshold: Some(threshold.unwrap_or(0.5)),
            prefix_padding_ms: Some(settings.prefix_padding_ms as u32),
            silence_duration_ms: Some(settings.silence_duration_ms as u32),
            idle_timeout_ms: Some(idle_timeout_ms.flatten()),
            create_response: Some(settings.create_response),
            interrupt_response: Some(settings.interrupt_response),
        },
        TurnDetection::SemanticVad { eagerness, .. } => TurnDetection::SemanticVad {
            eagerness: Some(eagerness.clone().unwrap_or_else(|| "auto".to_owned())),
            create_response: Some(settings.create_response),
            interrupt_response: Some(settings.interrupt_response),
        },
    }
}

fn raw_event_id(text: &str) -> Option<String> {
    serde_json::from_str::<Value>(text)
        .ok()?
        .get("event_id")?
        .as_str()
        .map(str::to_owned)
}

/// The honest user transcript: how long the speech lasted (first to last voiced frame), or
/// that there was none.
pub fn describe_user_audio(frames: &[InputFrame]) -> String {
    let first = frames.iter().position(InputFrame::voiced);
    let last = frames.iter().rposition(InputFrame::voiced);
    match (first, last) {
        (Some(first), Some(last)) => {
            let samples: u64 = frames[first..=last]
                .iter()
                .map(|frame| u64::from(frame.samples))
                .sum();
            format!("[{:.1} s of speech]", samples as f64 / 48_000.0)
        }
        _ => {
            let samples: u64 = frames.iter().map(|frame| u64::from(frame.samples)).sum();
            format!("[{:.1} s of silence]", samples as f64 / 48_000.0)
        }
    }
}

/// The transcript in a few streamed pieces, word boundaries kept.
pub(crate) fn transcript_deltas(transcript: &str) -> Vec<String> {
    let words: Vec<&str> = transcript.split_inclusive(' ').collect();
    words.chunks(4).map(|chunk| chunk.concat()).collect()
}

/// What a transcription of `seconds` of the user's audio is billed, the way OpenAI bills its
/// model: by duration for the models priced per minute, else by tokens (audio in at 10 a
/// second, as the Realtime API counts user audio, and the transcript's words out).
fn transcription_usage(model: &str, seconds: f64, transcript: &str) -> TranscriptionUsage {
    const BY_DURATION: &[&str] = &[
        "whisper-1",
        "gpt-realtime-whisper",
        "gpt-transcribe",
        "gpt-live-transcribe",
    ];
    if BY_DURATION.contains(&model.trim()) {
        return TranscriptionUsage::Duration { seconds };
    }
    let input_tokens = (seconds * 10.0).ceil() as u64;
    let output_tokens = transcript.split_whitespace().count() as u64;
    TranscriptionUsage::Tokens {
        input_tokens,
        output_tokens,
        total_tokens: input_tokens + output_tokens,
        input_token_details: Some(walkie_openai::TranscriptionTokenDetails {
            audio_tokens: Some(input_tokens),
            text_tokens: Some(0),
        }),
    }
}

fn default_session(call_id: &str) -> SessionConfig {
    let mut other = serde_json::Map::new();
    other.insert("id".to_owned(), Value::String(format!("sess_{call_id}")));
    other.insert(
        "object".to_owned(),
        Value::String("realtime.session".to_owned()),
    );
    SessionConfig {
        kind: SessionKind::Realtime,
        model: Some(LOCAL_MODEL.to_owned()),
        instructions: Some(String::new()),
        output_modalities: Some(vec![Modality::Audio]),
        audio: Some(AudioConfig {
            input: Some(AudioInput {
                format: Some(AudioFormat::pcm_24khz()),
                noise_reduction: Some(None),
                transcription: Some(None),
                turn_detection: Some(None),
            }),
            output: Some(AudioOutput {
                format: Some(AudioFormat::pcm_24khz()),
                voice: Some("echo-of-you".to_owned()),
                speed: Some(1.0),
            }),
        }),
        tools: Some(vec![]),
        tool_choice: Some(Value::String("auto".to_owned())),
        max_output_tokens: None,
        reasoning: None,
        parallel_tool_calls: None,
        truncation: Some(walkie_openai::Truncation::Mode(
            walkie_openai::TruncationMode::Auto,
        )),
        other,
    }
}

/// Applies the fields present in `update` (GA semantics: absent = unchanged; the model and
/// the session type stay).
pub(crate) fn merge_session(current: &mut SessionConfig, update: SessionConfig) {
    if update.instructions.is_some() {
        current.instructions = update.instructions;
    }
    if update.output_modalities.is_some() {
        current.output_modalities = update.output_modalities;
    }
    if update.tools.is_some() {
        current.tools = update.tools;
    }
    if update.tool_choice.is_some() {
        current.tool_choice = update.tool_choice;
    }
    if update.max_output_tokens.is_some() {
        current.max_output_tokens = update.max_output_tokens;
    }
    if update.reasoning.is_some() {
        current.reasoning = update.reasoning;
    }
    if update.parallel_tool_calls.is_some() {
        current.parallel_tool_calls = update.parallel_tool_calls;
    }
    if update.truncation.is_some() {
        current.truncation = update.truncation;
    }
    for (key, value) in update.other {
        if key != "id" && key != "object" {
            current.other.insert(key, value);
        }
    }
    if let Some(audio) = update.audio {
        let target = current.audio.get_or_insert_with(AudioConfig::default);
        if let Some(input) = audio.input {
            let into = target.input.get_or_insert_with(AudioInput::default);
            if input.format.is_some() {
                into.format = input.format;
            }
            if input.noise_reduction.is_some() {
                into.noise_reduction = input.noise_reduction;
            }
            if input.transcription.is_some() {
                into.transcription = input.transcription;
            }
            if input.turn_detection.is_some() {
                into.turn_detection = input.turn_detection;
            }
        }
        if let Some(output) = audio.output {
            let into = target.output.get_or_insert_with(AudioOutput::default);
            if output.format.is_some() {
                into.format = output.format;
            }
            if output.voice.is_some() {
                into.voice = output.voice;
            }
            if output.speed.is_some() {
                into.speed = output.speed;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOUD: f64 = 3000.0;

    fn frame(i: usize, rms: f64) -> InputFrame {
        InputFrame {
            opus: Bytes::from(vec![(i % 251) as u8, (i / 251) as u8]),
            samples: FRAME_SAMPLES,
            rms,
        }
    }

    fn frames(voiced: &[bool]) -> Vec<InputFrame> {
        voiced
            .iter()
            .enumerate()
            .map(|(i, voiced)| frame(i, if *voiced { LOUD } else { 0.0 }))
            .collect()
    }

    fn types(outputs: &[Output]) -> Vec<String> {
        outputs
            .iter()
            .filter_map(|output| match output {
                Output::Event { event, .. } => Some(event.event_type().to_owned()),
                Output::Audio { .. } | Output::HangUp => None,
            })
            .collect()
    }

    fn events(outputs: &[Output]) -> Vec<ServerEvent> {
        outputs
            .iter()
            .filter_map(|output| match output {
                Output::Event { event, .. } => Some(event.as_ref().clone()),
                Output::Audio { .. } | Output::HangUp => None,
            })
            .collect()
    }

    /// The whole transcript of the reply among `outputs`, once it is done.
    fn reply_transcript(outputs: &[Output]) -> Option<String> {
        events(outputs).into_iter().find_map(|event| match event {
            ServerEvent::OutputAudioTranscriptDone { transcript, .. } => Some(transcript),
            _ => None,
        })
    }

    fn audio(outputs: &[Output]) -> Vec<Bytes> {
        outputs
            .iter()
            .filter_map(|output| match output {
                Output::Audio { opus, .. } => Some(opus.clone()),
                Output::Event { .. } | Output::HangUp => None,
            })
            .collect()
    }

    /// What happened at which virtual time.
    struct Timeline {
        at: Vec<(u64, Output)>,
    }

    impl Timeline {
        fn new() -> Self {
            Self { at: Vec::new() }
        }
        fn push(&mut self, now: u64, outputs: Vec<Output>) {
            self.at
                .extend(outputs.into_iter().map(|output| (now, output)));
        }
        fn time_of(&self, event_type: &str) -> Option<u64> {
            self.at.iter().find_map(|(now, output)| match output {
                Output::Event { event, .. } if event.event_type() == event_type => Some(*now),
                _ => None,
            })
        }
        fn outputs(&self) -> Vec<Output> {
            self.at.iter().map(|(_, output)| output.clone()).collect()
        }
        fn audio_times(&self) -> Vec<u64> {
            self.at
                .iter()
                .filter(|(_, output)| matches!(output, Output::Audio { .. }))
                .map(|(now, _)| *now)
                .collect()
        }
    }

    /// Ticks the session at its deadlines until `until` (inclusive).
    fn run_until(session: &mut ProviderSession, timeline: &mut Timeline, from: u64, until: u64) {
        let mut now = from;
        while let Some(deadline) = session.next_deadline_ms() {
            if deadline > until {
                break;
            }
            now = now.max(deadline);
            let outputs = session.tick(now);
            timeline.push(now, outputs);
        }
    }

    fn ptt_session(transcription: bool) -> ProviderSession {
        let mut session = ProviderSession::new("rtc_test");
        assert_eq!(types(&session.on_connect(0)), ["session.created"]);
        let update = if transcription {
            r#"{"type":"session.update","session":{"type":"realtime","audio":{"input":{"transcription":{"model":"whisper-1"},"turn_detection":null}}}}"#
        } else {
            r#"{"type":"session.update","session":{"type":"realtime","audio":{"input":{"turn_detection":null}}}}"#
        };
        assert_eq!(
            types(&session.on_client_text(update, 0)),
            ["session.updated"]
        );
        session
    }

    #[test]
    fn user_audio_is_described_not_transcribed() {
        let mut voiced = vec![false; 10];
        voiced.extend([true; 120]);
        voiced.extend([false; 10]);
        assert_eq!(describe_user_audio(&frames(&voiced)), "[2.4 s of speech]");
        assert_eq!(
            describe_user_audio(&frames(&[false; 50])),
            "[1.0 s of silence]"
        );
    }

    #[test]
    fn a_push_to_talk_reply_streams_in_real_time_in_the_ga_order() {
        let mut session = ptt_session(true);
        assert_eq!(
            types(&session.on_client_text(r#"{"type":"input_audio_buffer.clear"}"#, 0)),
            ["input_audio_buffer.cleared"]
        );
        let sent = frames(&[true; 50]); // 1 s
        for (i, frame) in sent.iter().enumerate() {
            assert!(session.on_audio(frame.clone(), i as u64 * 20).is_empty());
        }
        let mut timeline = Timeline::new();
        timeline.push(
            1000,
            session.on_client_text(r#"{"type":"input_audio_buffer.commit"}"#, 1000),
        );
        timeline.push(
            1000,
            session.on_client_text(r#"{"type":"response.create"}"#, 1000),
        );
        assert!(session.is_generating() && session.is_playing());
        run_until(&mut session, &mut timeline, 1000, 10_000);
        assert!(!session.is_generating() && !session.is_playing());

        let mut got = types(&timeline.outputs());
        got.dedup();
        assert_eq!(
            got,
            [
                "input_audio_buffer.committed",
                "conversation.item.added",
                "conversation.item.done",
                "response.created",
                "response.output_item.added",
                "conversation.item.added",
                "response.content_part.added",
                "output_audio_buffer.started",
                "response.output_audio_transcript.delta",
                "response.output_audio.done",
                "response.output_audio_transcript.done",
                "response.content_part.done",
                "response.output_item.done",
                "response.done",
                "conversation.item.input_audio_transcription.completed",
                "output_audio_buffer.stopped",
            ]
        );
        // Real time: one frame per 20 ms from the commit on; generation at twice that speed.
        let times = timeline.audio_times();
        let expected: Vec<u64> = (0..50).map(|i| 1000 + i * 20).collect();
        assert_eq!(times, expected);
        assert_eq!(timeline.time_of("response.done"), Some(1500));
        assert_eq!(timeline.time_of("output_audio_buffer.stopped"), Some(2000));
        let deltas: Vec<u64> = timeline
            .at
            .iter()
            .filter(|(_, o)| {
                matches!(o, Output::Event { event, .. } if event.event_type() == "response.output_audio_transcript.delta")
            })
            .map(|(now, _)| *now)
            .collect();
        assert!(deltas.len() > 2 && deltas[0] == 1000 && *deltas.last().unwrap() < 1500);
        let played = audio(&timeline.outputs());
        let expected: Vec<Bytes> = sent.into_iter().map(|frame| frame.opus).collect();
        assert_eq!(played, expected, "the reply is the user's own audio");
    }

    fn only_error(out: &[Output]) -> ErrorDetail {
        let [Output::Event { event, .. }] = out else {
            panic!("expected exactly one event, got {out:?}");
        };
        let ServerEvent::Error { error } = event.as_ref() else {
            panic!("expected an error event, got {event:?}");
        };
        error.clone()
    }

    fn response_done(outputs: &[Output]) -> Response {
        events(outputs)
            .into_iter()
            .find_map(|event| match event {
                ServerEvent::ResponseDone { response } => Some(response),
                _ => None,
            })
            .expect("a response.done")
    }

    /// A PTT session that has just started a reply to 2 s of audio at t = 2000.
    fn replying() -> (ProviderSession, Timeline, String) {
        replying_from(ptt_session(false))
    }

    fn replying_from(mut session: ProviderSession) -> (ProviderSession, Timeline, String) {
        for (i, frame) in frames(&[true; 100]).into_iter().enumerate() {
            session.on_audio(frame, i as u64 * 20);
        }
        session.on_client_text(r#"{"type":"input_audio_buffer.commit"}"#, 2000);
        let mut timeline = Timeline::new();
        timeline.push(
            2000,
            session.on_client_text(r#"{"type":"response.create"}"#, 2000),
        );
        let item_id = events(&timeline.outputs())
            .into_iter()
            .find_map(|event| match event {
                ServerEvent::ResponseOutputItemAdded { item, .. } => item.id().map(str::to_owned),
                _ => None,
            })
            .expect("the reply's item");
        (session, timeline, item_id)
    }

    #[test]
    fn a_reply_bills_the_users_audio_in_and_its_own_audio_out_and_a_cut_one_what_was_generated() {
        let (mut session, mut timeline, _) = replying();
        run_until(&mut session, &mut timeline, 2000, 6000);
        let usage = response_done(&timeline.outputs())
            .usage
            .expect("a response.done carries its usage");
        let input = usage.input_token_details.expect("the input by modality");
        assert_eq!(input.audio_tokens, Some(20), "2 s of the user's audio");
        let output = usage.output_token_details.expect("the output by modality");
        assert_eq!(output.audio_tokens, Some(40), "2 s of the reply's audio");
        assert_eq!(
            usage.total_tokens,
            Some(usage.input_tokens.unwrap() + usage.output_tokens.unwrap())
        );

        let (mut session, _, _) = replying();
        // 200 ms into generation at twice real time: 21 frames (420 ms) generated.
        let cut = session.on_client_text(r#"{"type":"response.cancel"}"#, 2200);
        let usage = response_done(&cut)
            .usage
            .expect("a cancelled response's usage");
        let output = usage.output_token_details.expect("the output by modality");
        assert_eq!(output.audio_tokens, Some(9), "420 ms at 20 tokens a second");
    }

    #[test]
    fn an_out_of_band_reply_chimes_for_the_voice_and_leaves_the_conversation_and_the_users_audio() {
        let mut session = ptt_session(false);
        let voice = r#"{"type":"session.update","session":{"type":"realtime","audio":{"output":{"voice":"cedar"}}}}"#;
        assert_eq!(
            types(&session.on_client_text(voice, 0)),
            ["session.updated"]
        );
        for (i, frame) in frames(&[true; 50]).into_iter().enumerate() {
            session.on_audio(frame, i as u64 * 20);
        }
        session.on_client_text(r#"{"type":"input_audio_buffer.commit"}"#, 1000);
        let mut timeline = Timeline::new();
        let preview = r#"{"type":"response.create","response":{"conversation":"none","output_modalities":["audio"],"instructions":"Say hello."}}"#;
        timeline.push(1000, session.on_client_text(preview, 1000));
        run_until(&mut session, &mut timeline, 1000, 10_000);
        let kinds = types(&timeline.outputs());
        assert!(
            !kinds.contains(&"conversation.item.added".to_owned()),
            "{kinds:?}"
        );
        assert_eq!(
            timeline.audio_times().len(),
            crate::chime::chime_frames("cedar").len(),
            "the chime plays whole"
        );
        let done = events(&timeline.outputs())
            .into_iter()
            .find_map(|event| match event {
                ServerEvent::ResponseDone { response } => Some(response),
                _ => None,
            })
            .expect("response.done");
        assert_eq!(done.conversation_id, None, "in no conversation");
        let transcript = reply_transcript(&timeline.outputs()).expect("the transcript");
        assert_eq!(
            transcript,
            "This is Walkie's local provider. It has no voices, so this chime stands in for cedar."
        );
        // The user's turn is still there to be answered.
        let mut timeline = Timeline::new();
        timeline.push(
            10_000,
            session.on_client_text(r#"{"type":"response.create"}"#, 10_000),
        );
        run_until(&mut session, &mut timeline, 10_000, 20_000);
        assert_eq!(
            timeline.audio_times().len(),
            50,
            "the user's audio played back"
        );
        assert!(types(&timeline.outputs()).contains(&"conversation.item.added".to_owned()));
    }

    #[test]
    fn a_typed_question_is_answered_with_what_was_written_and_no_audio() {
        let mut session = ptt_session(false);
        let typed = r#"{"type":"conversation.item.create","item":{"type":"message","role":"user","content":[{"type":"input_text","text":"What is the capital of Peru?"}]}}"#;
        assert_eq!(
            types(&session.on_client_text(typed, 1000)),
            ["conversation.item.added", "conversation.item.done"]
        );
        let mut timeline = Timeline::new();
        timeline.push(
            1000,
            session.on_client_text(r#"{"type":"response.create"}"#, 1000),
        );
        run_until(&mut session, &mut timeline, 1000, 10_000);
        let transcript = reply_transcript(&timeline.outputs()).expect("the reply's transcript");
        assert_eq!(
            transcript,
            "This is Walkie's local provider. It can't read either, so here is what you wrote: \
             What is the capital of Peru?"
        );
        assert!(timeline.audio_times().is_empty());
        // The text is answered once.
        let mut timeline = Timeline::new();
        timeline.push(
            10_000,
            session.on_client_text(r#"{"type":"response.create"}"#, 10_000),
        );
        run_until(&mut session, &mut timeline, 10_000, 20_000);
        let again = reply_transcript(&timeline.outputs()).expect("the second reply's transcript");
        assert!(again.contains("no new audio"), "{again}");
    }

    /// A push-to-talk session that declares the tools `add` and `echo`.
    fn session_with_tools() -> ProviderSession {
        let mut session = ptt_session(false);
        let update = serde_json::json!({"type": "session.update", "session": {"type": "realtime",
            "tools": [
                {"type": "function", "name": "add", "parameters": {"type": "object"}},
                {"type": "function", "name": "echo", "parameters": {"type": "object"}}]}});
        assert_eq!(
            types(&session.on_client_text(&update.to_string(), 0)),
            ["session.updated"]
        );
        session
    }

    fn typed(text: &str) -> String {
        serde_json::json!({"type": "conversation.item.create", "item": {"type": "message",
            "role": "user", "content": [{"type": "input_text", "text": text}]}})
        .to_string()
    }

    /// The calls a response made: (call id, name, arguments).
    fn calls_made(outputs: &[Output]) -> Vec<(String, String, String)> {
        events(outputs)
            .into_iter()
            .filter_map(|event| match event {
                ServerEvent::FunctionCallArgumentsDone {
                    call_id,
                    name,
                    arguments,
                    ..
                } => Some((call_id, name.unwrap_or_default(), arguments)),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn typed_words_naming_a_declared_tool_make_the_response_a_call_and_its_output_the_next_reply() {
        let mut session = session_with_tools();
        session.on_client_text(&typed(r#"Now use add with {"a": 2, "b": 3}"#), 1_000);
        let outputs = session.on_client_text(r#"{"type":"response.create"}"#, 1_000);
        let calls = calls_made(&outputs);
        assert_eq!(calls.len(), 1);
        let (call_id, name, arguments) = &calls[0];
        assert_eq!(
            (name.as_str(), arguments.as_str()),
            ("add", r#"{"a": 2, "b": 3}"#)
        );
        let done = events(&outputs)
            .into_iter()
            .find_map(|event| match event {
                ServerEvent::ResponseDone { response } => Some(response),
                _ => None,
            })
            .expect("the response ends at once");
        assert!(
            matches!(&done.output[..], [Item::FunctionCall { call_id: id, .. }] if id == call_id)
        );
        assert!(reply_transcript(&outputs).is_none(), "a call says nothing");

        let answer = serde_json::json!({"type": "conversation.item.create", "item": {
            "type": "function_call_output", "call_id": call_id, "output": "{\"sum\":5}"}});
        assert_eq!(
            types(&session.on_client_text(&answer.to_string(), 1_100)),
            ["conversation.item.added", "conversation.item.done"]
        );
        let mut timeline = Timeline::new();
        timeline.push(
            1_100,
            session.on_client_text(r#"{"type":"response.create"}"#, 1_100),
        );
        run_until(&mut session, &mut timeline, 1_100, 10_000);
        assert_eq!(
            reply_transcript(&timeline.outputs()).as_deref(),
            Some(r#"This is Walkie's local provider. The add tool answered: {"sum":5}"#)
        );
    }

    #[test]
    fn many_calls_in_one_response_each_get_their_own_id_and_an_unknown_call_id_is_refused() {
        let mut session = session_with_tools();
        session.on_client_text(&typed(r#"use echo 100 times with {"text": "hi"}"#), 1_000);
        let outputs = session.on_client_text(r#"{"type":"response.create"}"#, 1_000);
        let calls = calls_made(&outputs);
        assert_eq!(calls.len(), 100);
        let ids: std::collections::BTreeSet<&str> =
            calls.iter().map(|(id, ..)| id.as_str()).collect();
        assert_eq!(ids.len(), 100, "each call its own id");

        let stray = serde_json::json!({"type": "conversation.item.create", "event_id": "e7",
            "item": {"type": "function_call_output", "call_id": "call_nobody", "output": "{}"}});
        let outputs = session.on_client_text(&stray.to_string(), 1_100);
        let error = events(&outputs)
            .into_iter()
            .find_map(|event| match event {
                ServerEvent::Error { error } => Some(error),
                _ => None,
            })
            .expect("an error");
        assert_eq!(error.code.as_deref(), Some("invalid_value"));
        assert!(error.message.contains("call_nobody"), "{}", error.message);
    }

    #[test]
    fn a_tool_the_session_did_not_declare_is_never_called() {
        let mut session = ptt_session(false);
        session.on_client_text(&typed("use add with {}"), 1_000);
        let mut timeline = Timeline::new();
        timeline.push(
            1_000,
            session.on_client_text(r#"{"type":"response.create"}"#, 1_000),
        );
        run_until(&mut session, &mut timeline, 1_000, 10_000);
        assert!(calls_made(&timeline.outputs()).is_empty());
        assert!(
            reply_transcript(&timeline.outputs())
                .is_some_and(|text| text.contains("here is what you wrote"))
        );
    }

    fn png_data_url(width_px: u32, height_px: u32) -> String {
        use base64::Engine as _;
        let mut png = Vec::new();
        image::DynamicImage::new_rgb8(width_px, height_px)
            .write_to(&mut std::io::Cursor::new(&mut png), image::ImageFormat::Png)
            .unwrap();
        format!(
            "data:image/png;base64,{}",
            base64::engine::general_purpose::STANDARD.encode(png)
        )
    }

    #[test]
    fn a_picture_shown_is_recorded_billed_and_mentioned_in_the_next_reply() {
        let mut session = ptt_session(false);
        let shown = serde_json::json!({"type": "conversation.item.create", "item": {
            "type": "message", "role": "user", "content": [
                {"type": "input_image", "image_url": png_data_url(300, 200)},
                {"type": "input_text", "text": "What is this?"}]}});
        assert_eq!(
            types(&session.on_client_text(&shown.to_string(), 1000)),
            ["conversation.item.added", "conversation.item.done"]
        );
        let received = session.received_pictures();
        assert_eq!(received.len(), 1);
        assert_eq!(
            (
                received[0].media_type.as_str(),
                received[0].width_px,
                received[0].height_px
            ),
            ("image/png", 300, 200)
        );
        let mut timeline = Timeline::new();
        timeline.push(
            1000,
            session.on_client_text(r#"{"type":"response.create"}"#, 1000),
        );
        run_until(&mut session, &mut timeline, 1000, 10_000);
        let transcript = reply_transcript(&timeline.outputs()).expect("the reply's transcript");
        assert!(
            transcript.ends_with("you showed me a picture: 300 by 200 pixels."),
            "{transcript}"
        );
        let usage = events(&timeline.outputs())
            .into_iter()
            .find_map(|event| match event {
                ServerEvent::ResponseDone { response } => response.usage,
                _ => None,
            })
            .expect("the response's usage");
        let details = usage.input_token_details.expect("input details");
        assert_eq!(details.image_tokens, Some(85 + 170));
    }

    #[test]
    fn a_picture_that_is_not_what_its_data_url_says_is_refused_and_not_kept() {
        let mut session = ptt_session(false);
        let url = png_data_url(4, 4).replace("image/png", "image/jpeg");
        let shown = serde_json::json!({"type": "conversation.item.create", "event_id": "e9",
            "item": {"type": "message", "role": "user", "content": [
                {"type": "input_text", "text": "Look"},
                {"type": "input_image", "image_url": url}]}});
        let outputs = session.on_client_text(&shown.to_string(), 1000);
        let error = events(&outputs)
            .into_iter()
            .find_map(|event| match event {
                ServerEvent::Error { error, .. } => Some(error),
                _ => None,
            })
            .expect("an error");
        assert_eq!(error.code.as_deref(), Some("invalid_value"));
        assert!(
            error
                .message
                .starts_with("Invalid 'item.content[1].image_url': the data is not image/jpeg"),
            "{}",
            error.message
        );
        assert!(session.received_pictures().is_empty());
        assert!(session.created_items().is_empty());
    }

    #[test]
    fn a_reply_asked_for_in_text_streams_output_text_and_plays_nothing_even_with_audio_waiting() {
        let mut session = ptt_session(false);
        for (i, frame) in frames(&[true; 50]).into_iter().enumerate() {
            session.on_audio(frame, i as u64 * 20);
        }
        session.on_client_text(r#"{"type":"input_audio_buffer.commit"}"#, 1000);
        let mut timeline = Timeline::new();
        let in_text = r#"{"type":"response.create","response":{"output_modalities":["text"]}}"#;
        timeline.push(1000, session.on_client_text(in_text, 1000));
        run_until(&mut session, &mut timeline, 1000, 10_000);
        assert!(timeline.audio_times().is_empty(), "nothing is played");
        let kinds = types(&timeline.outputs());
        assert!(
            !kinds.iter().any(|kind| kind.contains("audio")),
            "no audio event of any kind: {kinds:?}"
        );
        let text: String = events(&timeline.outputs())
            .into_iter()
            .filter_map(|event| match event {
                ServerEvent::OutputTextDelta { delta, .. } => Some(delta),
                _ => None,
            })
            .collect();
        assert_eq!(
            text,
            "This is Walkie's local provider. You asked for text, so it cannot play your 1.0 \
             seconds of audio back."
        );
        let done = response_done(&timeline.outputs());
        assert_eq!(done.output_modalities, Some(vec![Modality::Text]));
        let [Item::Message { content, .. }] = &done.output[..] else {
            panic!("one message: {:?}", done.output);
        };
        assert_eq!(content, &[ContentPart::OutputText { text }]);
        let output = done.usage.and_then(|usage| usage.output_token_details);
        assert_eq!(output.and_then(|output| output.audio_tokens), Some(0));
    }

    #[test]
    fn a_push_to_talk_barge_in_cancels_clears_and_truncates() {
        let (mut session, mut timeline, item_id) = replying();
        // 400 ms in: 20 frames played, 41 generated of 100.
        run_until(&mut session, &mut timeline, 2000, 2399);
        assert_eq!(timeline.audio_times().len(), 20);
        let again = session.on_client_text(r#"{"type":"response.create","event_id":"c2"}"#, 2400);
        assert_eq!(
            only_error(&again).code.as_deref(),
            Some("conversation_already_has_active_response")
        );

        let cancel = session.on_client_text(r#"{"type":"response.cancel"}"#, 2400);
        assert_eq!(
            types(&cancel),
            [
                "response.output_audio.done",
                "response.output_audio_transcript.done",
                "response.content_part.done",
                "response.output_item.done",
                "response.done"
            ]
        );
        let done = response_done(&cancel);
        assert_eq!(done.status, ResponseStatus::Cancelled);
        let details = done.status_details.expect("a cancelled response says why");
        assert_eq!(details.kind, "cancelled");
        assert_eq!(details.reason.as_deref(), Some("client_cancelled"));
        assert!(matches!(
            &done.output[..],
            [Item::Message {
                status: Some(ItemStatus::Incomplete),
                ..
            }]
        ));
        assert!(!session.is_generating());
        assert!(
            session.is_playing(),
            "what was generated is still in the buffer"
        );
        let twice = session.on_client_text(r#"{"type":"response.cancel","event_id":"c3"}"#, 2400);
        let error = only_error(&twice);
        assert_eq!(error.code.as_deref(), Some("response_cancel_not_active"));
        assert_eq!(error.event_id.as_deref(), Some("c3"));

        // Buffered audio keeps playing until the client clears it.
        let mut after = Timeline::new();
        run_until(&mut session, &mut after, 2400, 2459);
        assert_eq!(after.audio_times().len(), 3);
        let clear = session.on_client_text(r#"{"type":"output_audio_buffer.clear"}"#, 2460);
        assert_eq!(types(&clear), ["output_audio_buffer.cleared"]);
        assert!(!session.is_playing());
        assert_eq!(
            session.next_deadline_ms(),
            Some(DEFAULT_SESSION_LIMIT_MS),
            "nothing more is sent before the session's limit"
        );

        // 23 frames (460 ms) were played: the item keeps that much audio.
        let truncate = |ms: u64| {
            format!(
                r#"{{"type":"conversation.item.truncate","item_id":"{item_id}","content_index":0,"audio_end_ms":{ms}}}"#
            )
        };
        let too_far = session.on_client_text(&truncate(600), 2470);
        assert_eq!(
            only_error(&too_far).message,
            "Audio content of 460ms is already shorter than 600ms"
        );
        assert!(only_error(&too_far).is_recoverable());
        let truncated = session.on_client_text(&truncate(450), 2470);
        assert_eq!(
            events(&truncated),
            [ServerEvent::ConversationItemTruncated {
                item_id: item_id.clone(),
                content_index: 0,
                audio_end_ms: 450
            }]
        );
        let unknown = session.on_client_text(
            r#"{"type":"conversation.item.truncate","item_id":"item_nope","content_index":0,"audio_end_ms":1}"#,
            2470,
        );
        assert_eq!(
            only_error(&unknown).code.as_deref(),
            Some("item_truncate_invalid_item_id")
        );
    }

    #[test]
    fn a_cancel_after_generation_is_not_active_and_clear_still_cuts() {
        let (mut session, mut timeline, _) = replying();
        run_until(&mut session, &mut timeline, 2000, 3100);
        assert!(!session.is_generating() && session.is_playing());
        assert_eq!(
            response_done(&timeline.outputs()).status,
            ResponseStatus::Completed
        );
        let cancel = session.on_client_text(r#"{"type":"response.cancel"}"#, 3100);
        assert_eq!(
            only_error(&cancel).code.as_deref(),
            Some("response_cancel_not_active")
        );
        let clear = session.on_client_text(r#"{"type":"output_audio_buffer.clear"}"#, 3100);
        assert_eq!(types(&clear), ["output_audio_buffer.cleared"]);
        assert!(timeline.time_of("output_audio_buffer.stopped").is_none());
    }

    fn hands_free(extra: &str) -> ProviderSession {
        let mut session = ProviderSession::new("rtc_test");
        session.on_connect(0);
        let update = format!(
            r#"{{"type":"session.update","session":{{"type":"realtime","audio":{{"input":{{"transcription":{{"model":"whisper-1"}},"turn_detection":{{"type":"server_vad"{extra}}}}}}}}}}}"#
        );
        let out = session.on_client_text(&update, 0);
        let [ServerEvent::SessionUpdated { session: restated }] = &events(&out)[..] else {
            panic!("hands-free mode is accepted: {out:?}");
        };
        let detection = restated
            .audio
            .as_ref()
            .and_then(|audio| audio.input.as_ref())
            .and_then(|input| input.turn_detection.clone())
            .flatten();
        let Some(TurnDetection::ServerVad {
            prefix_padding_ms: Some(_),
            silence_duration_ms: Some(_),
            create_response: Some(_),
            interrupt_response: Some(_),
            ..
        }) = detection
        else {
            panic!("the server restates its VAD settings: {detection:?}");
        };
        assert!(session.is_hands_free());
        session
    }

    /// Feeds frames at real pace from `start_ms` (audio timeline = wall time here).
    fn feed(
        session: &mut ProviderSession,
        timeline: &mut Timeline,
        start_ms: u64,
        voiced: &[bool],
    ) -> u64 {
        let mut now = start_ms;
        for (i, voiced) in voiced.iter().enumerate() {
            let outputs = session.on_audio(frame(i, if *voiced { LOUD } else { 5.0 }), now);
            timeline.push(now, outputs);
            now += 20;
            run_until(session, timeline, now - 20, now - 1);
        }
        now
    }

    fn voiced_run(silence_before: usize, speech: usize, silence_after: usize) -> Vec<bool> {
        let mut run = vec![false; silence_before];
        run.extend(vec![true; speech]);
        run.extend(vec![false; silence_after]);
        run
    }

    #[test]
    fn hands_free_turns_start_and_stop_on_energy_and_reply_by_themselves() {
        let mut session = hands_free(r#","prefix_padding_ms":300,"silence_duration_ms":500"#);
        let mut timeline = Timeline::new();
        // 1 s of silence, 1 s of speech, 0.6 s of silence.
        let end = feed(&mut session, &mut timeline, 0, &voiced_run(50, 50, 30));
        let got = events(&timeline.outputs());
        let started = got
            .iter()
            .find_map(|event| match event {
                ServerEvent::SpeechStarted {
                    audio_start_ms,
                    item_id,
                } => Some((*audio_start_ms, item_id.clone())),
                _ => None,
            })
            .expect("speech_started");
        assert_eq!(
            started.0, 700,
            "speech at 1000 ms, minus 300 ms of prefix padding"
        );
        assert_eq!(
            timeline.time_of("input_audio_buffer.speech_started"),
            Some(1040)
        );
        let stopped = got
            .iter()
            .find_map(|event| match event {
                ServerEvent::SpeechStopped {
                    audio_end_ms,
                    item_id,
                } => Some((*audio_end_ms, item_id.clone())),
                _ => None,
            })
            .expect("speech_stopped");
        assert_eq!(stopped, (2000, started.1.clone()));
        assert_eq!(
            timeline.time_of("input_audio_buffer.speech_stopped"),
            Some(2480),
            "500 ms of silence after the last voiced frame"
        );
        let mut kinds = types(&timeline.outputs());
        kinds.dedup();
        assert_eq!(
            kinds[..6],
            [
                "input_audio_buffer.speech_started",
                "input_audio_buffer.speech_stopped",
                "input_audio_buffer.committed",
                "conversation.item.added",
                "conversation.item.done",
                "response.created",
            ],
            "the reply is created by the server (create_response)"
        );
        let committed = got.iter().find_map(|event| match event {
            ServerEvent::InputAudioBufferCommitted { item_id, .. } => Some(item_id.clone()),
            _ => None,
        });
        assert_eq!(committed, Some(started.1));
        // The reply echoes padding + speech + silence: 15 + 50 + 25 frames.
        run_until(&mut session, &mut timeline, end, 10_000);
        assert_eq!(timeline.audio_times().len(), 90);
        let transcript = got
            .iter()
            .chain(events(&timeline.outputs()).iter())
            .find_map(|event| match event {
                ServerEvent::InputTranscriptionCompleted { transcript, .. } => {
                    Some(transcript.clone())
                }
                _ => None,
            });
        assert_eq!(transcript.as_deref(), Some("[1.0 s of speech]"));
    }

    #[test]
    fn hands_free_without_create_response_only_commits() {
        let mut session = hands_free(r#","create_response":false,"silence_duration_ms":200"#);
        let mut timeline = Timeline::new();
        let end = feed(&mut session, &mut timeline, 0, &voiced_run(5, 20, 15));
        run_until(&mut session, &mut timeline, end, end + 1000);
        let kinds = types(&timeline.outputs());
        assert!(kinds.contains(&"input_audio_buffer.committed".to_owned()));
        assert!(!kinds.contains(&"response.created".to_owned()));
        assert!(
            kinds.contains(&"conversation.item.input_audio_transcription.completed".to_owned()),
            "the transcript comes without a reply too"
        );
        // A click (one loud frame) is not speech.
        let mut click = Timeline::new();
        feed(&mut session, &mut click, end + 1000, &voiced_run(5, 1, 30));
        assert!(click.outputs().is_empty(), "{:?}", types(&click.outputs()));
    }

    #[test]
    fn hands_free_barge_in_cuts_the_reply_as_turn_detected() {
        let mut session = hands_free(r#","silence_duration_ms":300"#);
        let mut timeline = Timeline::new();
        // A 2 s turn: the reply (2 s + padding + silence) starts at 2300.
        let end = feed(&mut session, &mut timeline, 0, &voiced_run(0, 100, 15));
        assert!(session.is_generating() && session.is_playing());
        let reply_start = timeline.time_of("response.created").expect("a reply");
        // The user speaks again 200 ms into the reply.
        let mut barge = Timeline::new();
        let end = feed(&mut session, &mut barge, end, &voiced_run(10, 20, 20));
        let mut kinds = types(&barge.outputs());
        kinds.dedup();
        let from = kinds
            .iter()
            .position(|kind| kind == "input_audio_buffer.speech_started")
            .expect("the second turn is heard");
        assert_eq!(
            kinds[from..from + 8],
            [
                "input_audio_buffer.speech_started",
                "output_audio_buffer.cleared",
                "response.output_audio.done",
                "response.output_audio_transcript.done",
                "response.content_part.done",
                "response.output_item.done",
                "response.done",
                "conversation.item.input_audio_transcription.completed",
            ],
            "{kinds:?}"
        );
        let done = response_done(&barge.outputs());
        assert_eq!(done.status, ResponseStatus::Cancelled);
        assert_eq!(
            done.status_details
                .and_then(|details| details.reason)
                .as_deref(),
            Some("turn_detected")
        );
        let cut_at = barge
            .time_of("output_audio_buffer.cleared")
            .expect("cleared");
        let played_after_cut = barge.audio_times().iter().filter(|t| **t > cut_at).count();
        assert!(cut_at > reply_start);
        // After the second turn's silence, a new reply starts and plays to the end.
        run_until(&mut session, &mut barge, end, end + 10_000);
        let created = events(&barge.outputs())
            .iter()
            .filter(|event| matches!(event, ServerEvent::ResponseCreated { .. }))
            .count();
        assert_eq!(created, 1, "the second turn is answered");
        assert!(barge.time_of("output_audio_buffer.stopped").is_some());
        assert!(played_after_cut > 0, "the new reply plays");
    }

    #[test]
    fn hands_free_speech_ends_when_the_client_stops_sending() {
        let mut session = hands_free(r#","silence_duration_ms":400"#);
        let mut timeline = Timeline::new();
        let end = feed(&mut session, &mut timeline, 0, &voiced_run(0, 30, 0));
        assert!(
            timeline
                .time_of("input_audio_buffer.speech_started")
                .is_some()
        );
        assert_eq!(session.next_deadline_ms(), Some(end - 20 + 400));
        run_until(&mut session, &mut timeline, end, end + 500);
        assert_eq!(
            timeline.time_of("input_audio_buffer.speech_stopped"),
            Some(end - 20 + 400)
        );
    }

    fn voice_and_instructions(session: &ProviderSession) -> (Option<String>, Option<String>) {
        let config = session.session();
        (
            config
                .audio
                .as_ref()
                .and_then(|audio| audio.output.as_ref())
                .and_then(|output| output.voice.clone()),
            config.instructions.clone(),
        )
    }

    #[test]
    fn a_session_update_carrying_a_model_is_refused_whole() {
        let mut session = ptt_session(false);
        let update = r#"{"type":"session.update","event_id":"evt_model","session":{"type":"realtime","model":"gpt-realtime","instructions":"lost","audio":{"input":{"turn_detection":{"type":"server_vad"}}}}}"#;
        let error = only_error(&session.on_client_text(update, 0));
        assert_eq!(error.kind, "invalid_request_error");
        assert_eq!(error.code.as_deref(), Some("invalid_value"));
        assert_eq!(error.param.as_deref(), Some("session.model"));
        assert_eq!(error.event_id.as_deref(), Some("evt_model"));
        assert_eq!(session.session().model.as_deref(), Some(LOCAL_MODEL));
        assert_eq!(voice_and_instructions(&session).1.as_deref(), Some(""));
        assert!(
            !session.is_hands_free(),
            "the turn detection was not applied"
        );
    }

    #[test]
    fn a_voice_change_after_assistant_audio_is_refused_whole() {
        let mut session = ptt_session(false);
        // Before any audio the voice may change.
        let before = r#"{"type":"session.update","session":{"type":"realtime","audio":{"output":{"voice":"marin"}}}}"#;
        assert_eq!(
            types(&session.on_client_text(before, 0)),
            ["session.updated"]
        );
        let (mut session, _, _) = replying_from(session);
        let change = r#"{"type":"session.update","event_id":"evt_voice","session":{"type":"realtime","instructions":"lost","audio":{"output":{"voice":"cedar"}}}}"#;
        let error = only_error(&session.on_client_text(change, 2100));
        assert_eq!(error.code.as_deref(), Some("cannot_update_voice"));
        assert_eq!(error.kind, "invalid_request_error");
        assert_eq!(error.event_id.as_deref(), Some("evt_voice"));
        assert_eq!(
            voice_and_instructions(&session),
            (Some("marin".to_owned()), Some(String::new())),
            "nothing of the refused update applied"
        );
        // Restating the same voice is not a change.
        let same = r#"{"type":"session.update","session":{"type":"realtime","instructions":"kept","audio":{"output":{"voice":"marin"}}}}"#;
        assert_eq!(
            types(&session.on_client_text(same, 2200)),
            ["session.updated"]
        );
        assert_eq!(voice_and_instructions(&session).1.as_deref(), Some("kept"));
    }

    #[test]
    fn errors_are_the_real_ones() {
        let mut session = ProviderSession::new("rtc_test");
        let beta = r#"{"type":"session.update","event_id":"e1","session":{"modalities":["audio"],"voice":"alloy"}}"#;
        let out = session.on_client_text(beta, 0);
        let error = only_error(&out);
        assert_eq!(error.code.as_deref(), Some("beta_api_shape_disabled"));
        assert_eq!(error.event_id.as_deref(), Some("e1"));

        let out = session.on_client_text(r#"{"type":"input_audio_buffer.commit"}"#, 0);
        assert_eq!(
            only_error(&out).code.as_deref(),
            Some("input_audio_buffer_commit_empty")
        );

        let out = session.on_client_text("{not json", 0);
        assert_eq!(only_error(&out).code.as_deref(), Some("invalid_event"));
    }

    #[test]
    fn a_session_at_its_limit_ends_with_session_expired_as_openai_does() {
        let mut session = ProviderSession::new("rtc_limit").with_limit_ms(120_000);
        assert_eq!(
            session.next_deadline_ms(),
            None,
            "the limit counts from the connection"
        );
        session.on_connect(500);
        assert_eq!(session.next_deadline_ms(), Some(120_500));
        assert!(session.tick(120_499).is_empty());
        let out = session.tick(120_500);
        let error = only_error(&out[..1]);
        assert_eq!(error.code.as_deref(), Some("session_expired"));
        assert_eq!(
            error.message,
            "Your session hit the maximum duration of 2 minutes."
        );
        assert_eq!(out.last(), Some(&Output::HangUp), "then the call ends");
        assert_eq!(session.next_deadline_ms(), None, "it ends once");
        assert_eq!(duration_words(60 * 60 * 1000), "60 minutes");
        assert_eq!(duration_words(20_000), "20 seconds");
    }

    #[test]
    fn restored_messages_join_the_conversation_and_a_wrong_content_type_is_refused() {
        let mut session = ProviderSession::new("rtc_restore");
        session.on_connect(0);
        let user = r#"{"type":"conversation.item.create","event_id":"e1","item":{"type":"message","role":"user","content":[{"type":"input_text","text":"My cat is called Miso."}]}}"#;
        let assistant = r#"{"type":"conversation.item.create","event_id":"e2","item":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"A lovely name."}]}}"#;
        assert_eq!(
            types(&session.on_client_text(user, 10)),
            ["conversation.item.added", "conversation.item.done"]
        );
        let outputs = session.on_client_text(assistant, 20);
        let previous = events(&outputs).into_iter().find_map(|event| match event {
            ServerEvent::ConversationItemAdded {
                previous_item_id, ..
            } => Some(previous_item_id),
            _ => None,
        });
        assert_eq!(
            previous.flatten().as_deref(),
            session.created_items()[0].id(),
            "each item follows the one before"
        );
        assert_eq!(session.created_items().len(), 2);

        let wrong = r#"{"type":"conversation.item.create","event_id":"e3","item":{"type":"message","role":"assistant","content":[{"type":"input_text","text":"spoken as the user"}]}}"#;
        let outputs = session.on_client_text(wrong, 30);
        let refused = events(&outputs).into_iter().find_map(|event| match event {
            ServerEvent::Error { error } => Some(error),
            _ => None,
        });
        let refused = refused.expect("an error");
        assert_eq!(refused.code.as_deref(), Some("invalid_value"));
        assert_eq!(refused.event_id.as_deref(), Some("e3"));
        assert!(
            refused.message.contains("item.content[0].type"),
            "{}",
            refused.message
        );
        assert_eq!(session.created_items().len(), 2);
    }
}
