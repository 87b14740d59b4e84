//! The Live API's turn engine (GPT-Live): the model owns turn-taking, the client only mutes and
//! unmutes its input, and no speech start, speech end or done event ever comes.
//!
//! Why its own machine beside [`TurnController`](super::TurnController): the Realtime engine's
//! rules are built on the provider's boundaries (commit, `response.created`/`done`,
//! `output_audio_buffer.started`/`stopped`); here there are none, so the boundaries are
//! Walkie's own, derived where it owns the audio, and the session events that come out are the
//! same ones (see [`ProviderFamily::Live`](super::ProviderFamily::Live)'s profile):
//! - the user's speech starts at key-down (a press that stopped a reply only once held
//!   [`TurnConfig::interrupt_hold_ms`], so a tap just stops it) and ends when the tail after
//!   key-up is over; hands-free, it starts at the first words the provider transcribes (the
//!   microphone's own detection, with a trusted echo canceller, only holds a reply until those
//!   words confirm the user talks over it) and ends [`LIVE_QUIET_MS`] after the last;
//! - push-to-talk is "unmuted while held": `session.input_audio.unmute` at key-down, `mute`
//!   after the tail (toggle: while toggled on); hands-free stays unmuted;
//! - the assistant becomes audible at the first reply audio above [`SILENCE_PEAK`] (the call
//!   may carry silence between replies) and stops [`LIVE_AUDIO_QUIET_MS`] after its last;
//!   its message ends when it is no longer audible and no transcript came for
//!   [`LIVE_QUIET_MS`], or at once when the user starts speaking: messages are never left open;
//! - a barge-in flushes the speaker at once, as on the Realtime API. The Live API has no
//!   cancel: the model hears the user (unmuted by the press) and yields; what it still sends
//!   of the cut reply (while the key is held, and after, until that audio has been quiet for
//!   [`LIVE_AUDIO_QUIET_MS`]) is never played;
//! - tools run through the session's Responses delegation: a function call the backend makes
//!   (`response.event`) is shown, run here or asked of the caller (outside tools, approvals),
//!   and answered with `response.item.create` (its output), then `response.create` once no
//!   other call waits; work delegated to the client itself is declined at once with
//!   `session.commentary.append`, so the model never waits on it;
//! - usage comes as the session's cumulative active and paused seconds
//!   ([`ControllerOutput::SessionTime`]); `session.paused` / `resumed` become hints.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::json;
use walkie_openai::live::{
    CloseReason, DelegationTarget, LiveClientEvent, LiveServerEvent, decode_live_server_event,
};

use crate::audio::{AudioChunk, DeviceDirection};
use crate::event::{
    DeferredToolRequests, DeferredToolRequestsEvent, Part, PartDelta, PartIndex,
    RealtimeSessionErrorEvent, SessionEvent, Speaker, ToolCallPart, ToolOutcome,
};
use crate::session::Session;
use crate::turn::config::{NEAR_SPEECH_HOLD_MS, SESSION_CONFIRM_GRACE_MS, TurnConfig, TurnMode};
use crate::turn::controller::{ControllerStats, decode_error_code};
use crate::turn::engine::{TurnEngine, TurnInput};
use crate::turn::family::{FamilyProfile, ProviderFamily};
use crate::turn::openai_map::{MAX_TRANSCRIPT_BYTES, fitting};
use crate::turn::outbox::Outbox;
use crate::turn::output::{
    AudioCommand, ControllerOutput, Diagnostic, ReplyGate, ToolCallRequest, TurnState, UiHint,
};
use crate::turn::press::{Capture, KeyDown, Press, PressDue};
use crate::turn::tools::{
    ToolError, ToolRegistry, WallClock, show_tool_call, tool_answer, tool_context,
    tool_result_event,
};
use crate::turn::user_message::UserMessage;

/// How long a message of either side stays open after its last word (a transcript delta, or
/// the reply's last audible audio) before it ends. The Live API sends no done events; its
/// transcripts trail the audio by a few hundred milliseconds, and a speaker's pause between
/// sentences is shorter than this.
pub const LIVE_QUIET_MS: u64 = 1_500;

/// How long after the last audible reply audio arrived the assistant stops being audible: the
/// jitter buffer's depth and a little more, so a pause between words is not an end.
pub const LIVE_AUDIO_QUIET_MS: u64 = 500;

/// The peak below which reply audio is silence (about -54 dBFS): what a call carries between
/// replies is not the assistant speaking.
pub const SILENCE_PEAK: i16 = 64;

/// The reply item ids the engine makes up, for the speaker's played-time reports.
const REPLY_ITEM_PREFIX: &str = "live_reply_";

/// The item of the `number`th reply (from 1).
fn reply_item_id(number: u64) -> String {
    format!("{REPLY_ITEM_PREFIX}{number}")
}

/// One side's open message.
#[derive(Debug)]
struct OpenMessage {
    index: PartIndex,
    transcript: String,
    /// Its transcript met [`MAX_TRANSCRIPT_BYTES`] and the rest was left out (said once).
    cut: bool,
    /// When it last grew (a transcript delta; for the reply, audible audio too).
    last_activity_ms: u64,
}

/// The reply the user hears (or reads) now.
#[derive(Debug)]
struct Reply {
    message: OpenMessage,
    item_id: String,
    /// When audible audio last arrived, while the reply is audible.
    audible_until_ms: Option<u64>,
    /// How much of it the speaker played.
    played_ms: u64,
    /// Where its words start on the session's timeline (the transcript's `start_ms`): the
    /// user's words from then on were said over it.
    spoken_from_ms: Option<i64>,
}

/// The Live API's engine; see the module documentation.
#[derive(Debug)]
pub struct LiveTurns {
    config: TurnConfig,
    tools: ToolRegistry,
    session: Session,
    outbox: Outbox,
    stats: ControllerStats,
    /// When the data channel opened (`None` while closed).
    opened_at_ms: Option<u64>,
    ready: bool,
    press: Press,
    capture: Capture,
    /// What Walkie last asked of the model's input.
    unmuted: bool,
    pending_mode: Option<TurnMode>,
    user: Option<OpenMessage>,
    /// The user is speaking now (derived: a press, or hands-free words heard).
    user_speaking: bool,
    reply: Option<Reply>,
    replies: u64,
    /// The item the next reply opens (it is named before its first frame plays).
    next_reply_item_id: String,
    paused: bool,
    held_until_ms: Option<u64>,
    /// A barge-in cut the reply: what the model still sends of it (until its audio has been
    /// quiet for [`LIVE_AUDIO_QUIET_MS`], counted from this time) is not played.
    cut_reply_heard_ms: Option<u64>,
    /// Calls of outside tools asked of the caller and not yet answered, by call id (with the
    /// tool's name): the delegated response goes on once all are answered.
    outside_calls: BTreeMap<String, String>,
    /// The shell's wall clock, read at this session time, for tools that need the date.
    wall_clock: Option<(u64, WallClock)>,
}

impl LiveTurns {
    /// An engine for one Live call, whose tools the Responses backend of its delegation calls.
    pub fn new(config: TurnConfig, tools: ToolRegistry) -> Self {
        Self {
            config,
            tools,
            session: Session::default(),
            outbox: Outbox::default(),
            stats: ControllerStats::default(),
            opened_at_ms: None,
            ready: false,
            press: Press::Idle,
            capture: Capture::default(),
            unmuted: true,
            pending_mode: None,
            user: None,
            user_speaking: false,
            reply: None,
            replies: 0,
            next_reply_item_id: reply_item_id(1),
            paused: false,
            held_until_ms: None,
            cut_reply_heard_ms: None,
            outside_calls: BTreeMap::new(),
            wall_clock: None,
        }
    }

    /// The counters.
    pub fn stats(&self) -> ControllerStats {
        self.stats
    }

    fn hands_free(&self) -> bool {
        matches!(self.config.mode, TurnMode::HandsFree(_))
    }

    // ----------------------------------------------------------------------------------------
    // The wire
    // ----------------------------------------------------------------------------------------

    fn server_event(&mut self, event: LiveServerEvent, now_ms: u64) {
        match event {
            LiveServerEvent::SessionStarted { .. } | LiveServerEvent::SessionUpdated { .. } => {
                if !self.ready {
                    self.confirmed();
                }
            }
            LiveServerEvent::SessionPaused => {
                self.paused = true;
                self.hint(UiHint::Paused);
            }
            LiveServerEvent::SessionResumed => {
                if std::mem::take(&mut self.paused) {
                    self.hint(UiHint::Resumed);
                }
            }
            LiveServerEvent::InputTranscriptDelta {
                delta, start_ms, ..
            } => self.user_words(&delta, start_ms, now_ms),
            LiveServerEvent::OutputTranscriptDelta {
                delta, start_ms, ..
            } => self.reply_words(&delta, start_ms, now_ms),
            LiveServerEvent::DelegationCreated { delegation, .. } => {
                // Walkie's tools run through the Responses backend (`response.event`); work
                // handed to the client itself has nothing to run it.
                if delegation.target == DelegationTarget::Client {
                    self.send(LiveClientEvent::CommentaryAppend {
                        content: "No tool can run here for that: tell the user you cannot do \
                                  it on this call."
                            .to_owned(),
                        delegation_id: Some(delegation.id),
                    });
                    self.diagnose(Diagnostic::Ignored {
                        event_type: "session.delegation.created".to_owned(),
                        reason: "work delegated to the client itself is declined: Walkie's \
                                 tools run through the Responses backend",
                    });
                }
            }
            LiveServerEvent::ResponseEvent { event, .. } => self.backend_event(&event, now_ms),
            LiveServerEvent::UsageUpdated { usage, .. } => {
                let active = usage.active_seconds.map_or(usage.seconds, |s| s as f64);
                let paused = usage.paused_seconds.map_or(0.0, |s| s as f64);
                self.outbox.session_time(active, paused);
            }
            LiveServerEvent::SessionClosed { reason, .. } => {
                if reason != CloseReason::CloseRequested {
                    let said = match reason {
                        CloseReason::Expired => "the session reached its time limit",
                        CloseReason::Content => "the provider ended it over its content",
                        CloseReason::RemoteHangup => "the provider hung up",
                        CloseReason::ConnectionLost => "the provider lost the connection",
                        _ => "the provider closed it",
                    };
                    self.emit(
                        SessionEvent::SessionError(Box::new(RealtimeSessionErrorEvent {
                            message: format!("the Live session ended: {said}"),
                            error_type: Some("session_closed".to_owned()),
                            code: Some(format!("{reason:?}").to_lowercase()),
                            recoverable: true,
                        })),
                        now_ms,
                    );
                }
            }
            LiveServerEvent::Error { error } => {
                if let Some(event_id) = &error.client_event_id {
                    let event_type = self.outbox.sent_event_type(event_id);
                    self.diagnose(Diagnostic::ClientEventFailed {
                        event_id: event_id.clone(),
                        event_type,
                        code: Some(error.code.clone()),
                    });
                }
                self.emit(
                    SessionEvent::SessionError(Box::new(RealtimeSessionErrorEvent {
                        message: error.message,
                        error_type: Some(error.kind),
                        code: Some(error.code),
                        recoverable: true,
                    })),
                    now_ms,
                );
            }
            LiveServerEvent::InputAudioMuted
            | LiveServerEvent::InputAudioUnmuted
            | LiveServerEvent::InstructionsAppended { .. }
            | LiveServerEvent::ThinkingAppended { .. }
            | LiveServerEvent::CommentaryAppended { .. }
            | LiveServerEvent::Info { .. } => {}
            LiveServerEvent::Unknown(unknown) => {
                self.stats.unknown_events += 1;
                self.diagnose(Diagnostic::UnknownServerEvent {
                    event_type: unknown.event_type,
                });
            }
        }
    }

    fn confirmed(&mut self) {
        self.ready = true;
        self.hint(UiHint::Ready);
        if self.hands_free() {
            self.open_capture(0);
        }
    }

    fn send(&mut self, event: LiveClientEvent) -> String {
        self.outbox.send(event)
    }

    fn set_unmuted(&mut self, unmuted: bool) {
        if std::mem::replace(&mut self.unmuted, unmuted) != unmuted {
            self.send(if unmuted {
                LiveClientEvent::Unmute
            } else {
                LiveClientEvent::Mute
            });
        }
    }

    // ----------------------------------------------------------------------------------------
    // Tools, through the delegation's Responses backend
    // ----------------------------------------------------------------------------------------

    /// One event of the delegated Responses stream: a function call it finished asking for
    /// (`response.output_item.done` with a `function_call` item) is run; the rest is the
    /// backend's own business.
    fn backend_event(&mut self, event: &serde_json::Value, now_ms: u64) {
        if event["type"] != "response.output_item.done" || event["item"]["type"] != "function_call"
        {
            return;
        }
        let item = &event["item"];
        let (Some(call_id), Some(name)) = (item["call_id"].as_str(), item["name"].as_str()) else {
            return self.diagnose(Diagnostic::Ignored {
                event_type: "response.event".to_owned(),
                reason: "a function call without its call id or name is not run",
            });
        };
        let arguments = item["arguments"].as_str().unwrap_or("{}");
        self.on_function_call(
            call_id.to_owned(),
            name.to_owned(),
            arguments.to_owned(),
            now_ms,
        );
    }

    /// The model called `name`: the call is shown (a tool-call part), then run here (a local
    /// tool) or asked of the caller (an outside one, decided and run there). The reply the
    /// user heard before it is over; what the model says with the result is a reply of its own.
    fn on_function_call(&mut self, call_id: String, name: String, arguments: String, now_ms: u64) {
        // The reply before the call ends as its message, not its turn.
        self.became_inaudible(now_ms);
        if let Some(reply) = self.reply.take()
            && let Err(error) = self.session.end_part(reply.message.index, now_ms)
        {
            self.refused(error);
        }
        let call = ToolCallPart {
            tool_name: name.clone(),
            args: arguments.clone(),
            tool_call_id: call_id.clone(),
        };
        let mut refusals = Vec::new();
        let parsed = show_tool_call(&mut self.session, &call, now_ms, &mut refusals);
        refusals.into_iter().for_each(|error| self.refused(error));
        let outside = self.tools.is_outside(&name);
        if outside && let Ok(arguments) = parsed {
            self.outside_calls.insert(call_id.clone(), name.clone());
            self.emit(
                SessionEvent::DeferredToolRequests(Box::new(DeferredToolRequestsEvent {
                    requests: DeferredToolRequests {
                        approvals: Vec::new(),
                        calls: vec![call],
                    },
                })),
                now_ms,
            );
            self.outbox.tool_call(ToolCallRequest {
                call_id,
                name,
                arguments,
            });
        } else {
            let context = tool_context(now_ms, self.wall_clock);
            let (content, outcome) = tool_answer(self.tools.execute(&name, &arguments, &context));
            self.answer_tool_call(call_id, name, content, outcome, now_ms);
        }
        // The calling reply is done; the one that says the result completes the turn.
        if let Err(error) = self.session.response_done(now_ms) {
            self.refused(error);
        }
    }

    /// Gives the backend what the call of `tool_name` gave (`response.item.create` with the
    /// `function_call_output`, and the session's result event); once no other call waits, the
    /// delegated response goes on (`response.create`).
    fn answer_tool_call(
        &mut self,
        call_id: String,
        tool_name: String,
        content: serde_json::Value,
        outcome: ToolOutcome,
        now_ms: u64,
    ) {
        let output = content.to_string();
        self.emit(
            tool_result_event(call_id.clone(), tool_name, content, outcome),
            now_ms,
        );
        self.send(LiveClientEvent::ResponseItemCreate {
            item: json!({ "type": "function_call_output", "call_id": call_id, "output": output }),
        });
        if self.outside_calls.is_empty() {
            self.send(LiveClientEvent::ResponseCreate);
        }
    }

    // ----------------------------------------------------------------------------------------
    // The user's side
    // ----------------------------------------------------------------------------------------

    /// The user starts speaking: whatever the other side had open ends first (a message is
    /// closed at the next speech start), and the user's message opens.
    fn user_speech_started(&mut self, at_ms: u64) {
        if self.user_speaking {
            return;
        }
        self.end_reply(at_ms);
        self.end_user_message(at_ms);
        self.user_speaking = true;
        self.emit(SessionEvent::InputSpeechStart(Box::default()), at_ms);
        self.open_user_message(at_ms);
    }

    fn user_speech_ended(&mut self, at_ms: u64) {
        if std::mem::take(&mut self.user_speaking) {
            self.emit(SessionEvent::InputSpeechEnd(Box::default()), at_ms);
            if let Some(user) = self.user.as_mut() {
                user.last_activity_ms = at_ms;
            }
        }
    }

    fn open_user_message(&mut self, now_ms: u64) {
        match self.session.start_part(Part::speech(Speaker::User), now_ms) {
            Ok(index) => {
                self.user = Some(OpenMessage {
                    index,
                    transcript: String::new(),
                    cut: false,
                    last_activity_ms: now_ms,
                })
            }
            Err(error) => self.refused(error),
        }
    }

    fn end_user_message(&mut self, now_ms: u64) -> Option<PartIndex> {
        let user = self.user.take()?;
        if let Err(error) = self.session.end_part(user.index, now_ms) {
            self.refused(error);
        }
        Some(user.index)
    }

    /// Words the provider heard from the user, spoken from `spoken_at_ms` of the session's
    /// timeline.
    fn user_words(&mut self, delta: &str, spoken_at_ms: i64, now_ms: u64) {
        if delta.is_empty() {
            return;
        }
        let over_the_reply = self
            .reply
            .as_ref()
            .and_then(|reply| reply.spoken_from_ms)
            .is_some_and(|reply_from_ms| spoken_at_ms >= reply_from_ms);
        if self.user.is_none() || over_the_reply && self.hands_free() {
            if self.hands_free() {
                // Hands-free, the provider's words are the first sign the user talks (the
                // microphone's own detection runs only with a trusted echo canceller): over
                // a reply, they stop it as a key-down would.
                self.barge_in(now_ms);
                self.user_speech_started(now_ms);
            } else {
                // Words after the user's message ended (they trail the audio): a message of
                // their own, with no speech of its own to mark.
                self.open_user_message(now_ms);
            }
        }
        let Some(user) = self.user.as_mut() else {
            return;
        };
        let fits = fitting(user.transcript.len(), delta);
        if fits.len() < delta.len() && !std::mem::replace(&mut user.cut, true) {
            self.transcript_cut(now_ms);
        }
        let Some(user) = self.user.as_mut() else {
            return;
        };
        if fits.is_empty() {
            return;
        }
        user.transcript.push_str(fits);
        user.last_activity_ms = now_ms;
        let update = PartDelta::transcript(
            Speaker::User,
            Arc::from(fits),
            Arc::from(user.transcript.as_str()),
        );
        let index = user.index;
        if let Err(error) = self.session.push_delta(index, update, now_ms) {
            self.refused(error);
        }
    }

    // ----------------------------------------------------------------------------------------
    // The assistant's side
    // ----------------------------------------------------------------------------------------

    /// The reply under way, begun if there is none. The user's message stays open beside it
    /// until its own quiet period: its transcript trails the audio.
    fn reply_for(&mut self, now_ms: u64) -> Option<&mut Reply> {
        if self.reply.is_none() {
            match self
                .session
                .start_part(Part::speech(Speaker::Assistant), now_ms)
            {
                Ok(index) => {
                    self.replies += 1;
                    let item_id = std::mem::replace(
                        &mut self.next_reply_item_id,
                        reply_item_id(self.replies + 1),
                    );
                    self.reply = Some(Reply {
                        message: OpenMessage {
                            index,
                            transcript: String::new(),
                            cut: false,
                            last_activity_ms: now_ms,
                        },
                        item_id,
                        audible_until_ms: None,
                        played_ms: 0,
                        spoken_from_ms: None,
                    });
                    if self.hands_free() {
                        // The model answers: the user has stopped talking.
                        self.user_speech_ended(now_ms);
                    }
                }
                Err(error) => {
                    self.refused(error);
                    return None;
                }
            }
        }
        self.reply.as_mut()
    }

    /// Words of the reply, spoken from `spoken_at_ms` of the session's timeline.
    fn reply_words(&mut self, delta: &str, spoken_at_ms: i64, now_ms: u64) {
        if delta.is_empty()
            || self.user_speaking && !self.hands_free()
            || self.reply.is_none() && self.cut_reply_goes_on(now_ms)
        {
            // Words of a reply cut under the key, or still coming after it: the model yields
            // to the user.
            return;
        }
        let Some(reply) = self.reply_for(now_ms) else {
            return;
        };
        reply.spoken_from_ms.get_or_insert(spoken_at_ms);
        let fits = fitting(reply.message.transcript.len(), delta);
        if fits.len() < delta.len() && !std::mem::replace(&mut reply.message.cut, true) {
            self.transcript_cut(now_ms);
        }
        let Some(reply) = self.reply.as_mut() else {
            return;
        };
        if fits.is_empty() {
            return;
        }
        reply.message.transcript.push_str(fits);
        reply.message.last_activity_ms = now_ms;
        let update = PartDelta::transcript(
            Speaker::Assistant,
            Arc::from(fits),
            Arc::from(reply.message.transcript.as_str()),
        );
        let index = reply.message.index;
        if let Err(error) = self.session.push_delta(index, update, now_ms) {
            self.refused(error);
        }
    }

    /// A message's transcript met [`MAX_TRANSCRIPT_BYTES`]: told once, as the Realtime engine
    /// tells it (a recoverable error the status line words), and the call goes on.
    fn transcript_cut(&mut self, now_ms: u64) {
        self.diagnose(Diagnostic::Ignored {
            event_type: "transcript delta".to_owned(),
            reason: "the message's transcript is at its bound: the rest is left out",
        });
        self.emit(
            SessionEvent::SessionError(Box::new(RealtimeSessionErrorEvent {
                message: format!(
                    "a transcript ran past {} KiB and was cut there",
                    MAX_TRANSCRIPT_BYTES / 1024
                ),
                error_type: Some("transcript_cut".to_owned()),
                code: Some("transcript_too_long".to_owned()),
                recoverable: true,
            })),
            now_ms,
        );
    }

    fn audible_now(&self) -> bool {
        self.reply
            .as_ref()
            .is_some_and(|reply| reply.audible_until_ms.is_some())
    }

    /// The reply became audible: the session says so, and without an echo canceller the mic
    /// is gated while it plays (hands-free, or between presses).
    fn became_audible(&mut self, now_ms: u64) {
        self.emit(SessionEvent::OutputSpeechStart, now_ms);
        if !self.config.echo_canceller {
            self.set_mic_gate(true);
        }
    }

    fn became_inaudible(&mut self, now_ms: u64) {
        if let Some(reply) = self.reply.as_mut()
            && reply.audible_until_ms.take().is_some()
        {
            self.emit(SessionEvent::OutputSpeechEnd, now_ms);
            self.set_mic_gate(false);
            self.release_hold();
        }
    }

    /// The reply ends: its message closes and the turn is complete.
    fn end_reply(&mut self, now_ms: u64) {
        self.became_inaudible(now_ms);
        if self.reply.take().is_some()
            && let Err(error) = self.session.response_done(now_ms)
        {
            self.refused(error);
        }
    }

    /// The user cuts the reply they hear: the speaker is flushed at once, the message marked
    /// with how much was heard, and the reply ends as interrupted. Whether it was a barge-in.
    fn barge_in(&mut self, now_ms: u64) -> bool {
        if !self.audible_now() {
            return false;
        }
        self.command(AudioCommand::FlushPlayback);
        self.held_until_ms = None;
        if let Some(reply) = &self.reply
            && let Err(error) = self
                .session
                .mark_interrupted(reply.message.index, reply.played_ms)
        {
            self.refused(error);
        }
        self.became_inaudible(now_ms);
        self.emit(SessionEvent::ResponseInterrupted, now_ms);
        self.end_reply(now_ms);
        self.cut_reply_heard_ms = Some(now_ms);
        true
    }

    /// Where the turn stands now (told in the outputs as it changes). A reply is owed once the
    /// user has finished speaking and their message waits for the model's answer.
    fn turn_state(&self) -> TurnState {
        TurnState {
            ready: self.ready,
            capturing: self.capture.is_open(),
            assistant_audible: self.audible_now(),
            replying: self.reply.is_some(),
            awaits_reply: self.reply.is_some() || (self.user.is_some() && !self.user_speaking),
            waiting_tool_calls: !self.outside_calls.is_empty(),
            press: self.config.mode.press_mode(),
        }
    }

    /// Whether the reply audio the driver decodes is heard now ([`super::ReplyAudio`]): not while
    /// the key is held, nor the rest of a cut reply; the reply's own silences while it lasts;
    /// between replies, from the next one's first sound.
    fn reply_gate(&self) -> ReplyGate {
        let cut_reply_goes_on = self.reply.is_none() && self.cut_reply_heard_ms.is_some();
        if matches!(self.press, Press::Held { .. }) || cut_reply_goes_on {
            ReplyGate::Drop
        } else if self.reply.is_some() {
            ReplyGate::Play
        } else {
            ReplyGate::FromSound
        }
    }

    /// Whether the reply a barge-in cut is still coming: its audio was heard within
    /// [`LIVE_AUDIO_QUIET_MS`].
    fn cut_reply_goes_on(&mut self, now_ms: u64) -> bool {
        match self.cut_reply_over_at() {
            Some(over_at_ms) if now_ms < over_at_ms => true,
            Some(_) => {
                self.cut_reply_heard_ms = None;
                false
            }
            None => false,
        }
    }

    // ----------------------------------------------------------------------------------------
    // Shared machinery
    // ----------------------------------------------------------------------------------------

    fn set_mic_gate(&mut self, gated: bool) {
        let gated = gated && !matches!(self.press, Press::Held { .. });
        if self.capture.set_gated(gated) {
            self.command(AudioCommand::GateMic { gated });
        }
    }

    fn open_capture(&mut self, pre_roll_ms: u64) {
        if self.capture.set_open(true) {
            self.command(AudioCommand::OpenCapture { pre_roll_ms });
        }
        self.set_unmuted(true);
    }

    fn close_capture(&mut self) {
        if self.capture.set_open(false) {
            self.command(AudioCommand::CloseCapture);
        }
        self.set_unmuted(false);
    }

    fn release_hold(&mut self) {
        if self.held_until_ms.take().is_some() {
            self.command(AudioCommand::HoldPlayback { held: false });
        }
    }

    fn command(&mut self, command: AudioCommand) {
        self.outbox.command(command);
    }

    fn emit(&mut self, event: SessionEvent, now_ms: u64) {
        if let Err(error) = self.session.push(event, now_ms) {
            self.refused(error);
        }
    }

    fn refused(&mut self, error: crate::error::PushError) {
        self.stats.refused_session_events += 1;
        self.diagnose(Diagnostic::SessionRefused(error));
    }

    fn hint(&mut self, hint: UiHint) {
        if self.outbox.note(ControllerOutput::Hint(hint)) {
            self.stats.dropped_notes += 1;
        }
    }

    fn diagnose(&mut self, diagnostic: Diagnostic) {
        if self.outbox.note(ControllerOutput::Diagnostic(diagnostic)) {
            self.stats.dropped_notes += 1;
        }
    }

    fn begin_press(&mut self, now_ms: u64) {
        let stopped_reply = self.barge_in(now_ms);
        self.press = Press::Held {
            down_at_ms: now_ms,
            speech_started: false,
            stopped_reply,
        };
        self.set_mic_gate(false);
        self.open_capture(self.config.pre_roll_ms);
        if !stopped_reply {
            self.press_counts(now_ms);
        }
    }

    /// The press is speech: stamped at key-down.
    fn press_counts(&mut self, down_at_ms: u64) {
        self.press = Press::Held {
            down_at_ms,
            speech_started: true,
            stopped_reply: false,
        };
        self.user_speech_started(down_at_ms);
    }

    fn release(&mut self, now_ms: u64) {
        let Press::Held {
            down_at_ms,
            speech_started,
            ..
        } = self.press
        else {
            return;
        };
        if !speech_started {
            // A tap that stopped the reply: nothing more was said.
            self.press = Press::Idle;
            self.close_capture();
            return self.apply_pending_mode();
        }
        self.press = Press::Tail {
            down_at_ms,
            ends_at_ms: now_ms.saturating_add(self.config.tail_ms),
        };
        if self.config.tail_ms == 0 {
            self.finish_tail(now_ms);
        }
    }

    fn finish_tail(&mut self, at_ms: u64) {
        self.press = Press::Idle;
        if !self.stays_unmuted() {
            self.close_capture();
        }
        self.user_speech_ended(at_ms);
        self.apply_pending_mode();
    }

    /// Toggle and hands-free keep the model hearing the microphone between turns.
    fn stays_unmuted(&self) -> bool {
        self.hands_free()
    }

    fn apply_pending_mode(&mut self) {
        if self.press != Press::Idle {
            return;
        }
        let Some(mode) = self.pending_mode.take() else {
            return;
        };
        self.config.mode = mode;
        if !self.ready {
            return;
        }
        if self.hands_free() {
            self.open_capture(0);
        } else {
            self.close_capture();
        }
    }

    fn advance(&mut self, now_ms: u64) {
        while let Some(due) = self.press.due(&self.config, now_ms) {
            match due {
                PressDue::Counts { down_at_ms } => self.press_counts(down_at_ms),
                PressDue::Overlong { released_at_ms } => {
                    self.hint(UiHint::ReleasedAutomatically {
                        held_ms: self.config.max_press_ms,
                    });
                    self.release(released_at_ms);
                }
                PressDue::TailOver => {
                    let at_ms = self.press.deadline_ms(&self.config).unwrap_or(now_ms);
                    self.finish_tail(at_ms);
                }
            }
        }
        if let Some(opened_at_ms) = self.opened_at_ms
            && !self.ready
            && now_ms >= opened_at_ms.saturating_add(SESSION_CONFIRM_GRACE_MS)
        {
            self.diagnose(Diagnostic::SessionNotConfirmed {
                waited_ms: now_ms.saturating_sub(opened_at_ms),
            });
            self.confirmed();
        }
        if let Some(until_ms) = self.held_until_ms
            && now_ms >= until_ms
        {
            self.diagnose(Diagnostic::NearSpeechUnconfirmed {
                held_ms: NEAR_SPEECH_HOLD_MS,
            });
            self.release_hold();
        }
        if let Some(at_ms) = self.reply_inaudible_at()
            && now_ms >= at_ms
        {
            self.became_inaudible(at_ms);
        }
        if let Some(at_ms) = self.reply_ends_at()
            && now_ms >= at_ms
        {
            self.end_reply(at_ms);
        }
        if let Some(at_ms) = self.user_message_ends_at()
            && now_ms >= at_ms
        {
            self.user_speech_ended(at_ms);
            self.end_user_message(at_ms);
        }
        // A cut reply gone quiet: the speaker takes the next reply from its first sound.
        self.cut_reply_goes_on(now_ms);
    }

    /// When the rest of a cut reply counts as over, if it is still heard.
    fn cut_reply_over_at(&self) -> Option<u64> {
        self.cut_reply_heard_ms
            .map(|heard_ms| heard_ms.saturating_add(LIVE_AUDIO_QUIET_MS))
    }

    fn reply_inaudible_at(&self) -> Option<u64> {
        let until_ms = self.reply.as_ref()?.audible_until_ms?;
        Some(until_ms.saturating_add(LIVE_AUDIO_QUIET_MS))
    }

    fn reply_ends_at(&self) -> Option<u64> {
        let reply = self.reply.as_ref()?;
        if reply.audible_until_ms.is_some() {
            return None;
        }
        Some(reply.message.last_activity_ms.saturating_add(LIVE_QUIET_MS))
    }

    /// When the user's message ends: after the quiet following its last words, and not while
    /// a press holds it (hands-free, its speech ends then too).
    fn user_message_ends_at(&self) -> Option<u64> {
        if self.user_speaking && !self.hands_free() {
            return None;
        }
        Some(
            self.user
                .as_ref()?
                .last_activity_ms
                .saturating_add(LIVE_QUIET_MS),
        )
    }
}

/// The inputs, each taken by [`TurnEngine::handle_input`].
impl LiveTurns {
    /// The session was configured when the call was placed: nothing is sent but, for
    /// push-to-talk, the mute the key lifts.
    fn data_channel_open(&mut self, now_ms: u64) {
        self.advance(now_ms);
        self.outbox.channel_opened();
        self.opened_at_ms = Some(now_ms);
        self.unmuted = true;
        if !self.hands_free() {
            self.set_unmuted(false);
        }
    }

    fn data_channel_closed(&mut self, now_ms: u64) {
        self.advance(now_ms);
        self.outbox.channel_closed();
        self.opened_at_ms = None;
        self.ready = false;
        self.press = Press::Idle;
        self.close_capture();
        self.set_mic_gate(false);
        self.release_hold();
        self.user_speech_ended(now_ms);
        self.end_user_message(now_ms);
        if self.audible_now() {
            self.barge_in(now_ms);
        }
        self.end_reply(now_ms);
        self.cut_reply_heard_ms = None;
        // An answer could only go to the session that asked: the calls end with it.
        self.outside_calls.clear();
        self.paused = false;
        self.apply_pending_mode();
    }

    /// The Live API takes history in the request that places the call (`input`).
    fn restore_items(&mut self, items: Vec<walkie_openai::Item>) {
        if !items.is_empty() {
            self.diagnose(Diagnostic::Ignored {
                event_type: "conversation.item.create".to_owned(),
                reason: "a Live session takes the conversation so far when the call is placed",
            });
        }
    }

    /// Replies come as the model decides: there is no text-only reply to ask for.
    fn set_typed_replies_in_text(&mut self, in_text: bool) {
        self.config.typed_replies_in_text = in_text;
    }

    fn set_turn_mode(&mut self, mode: TurnMode, now_ms: u64) {
        self.advance(now_ms);
        self.pending_mode = Some(mode);
        self.apply_pending_mode();
    }

    fn push_to_talk_down(&mut self, now_ms: u64) {
        self.advance(now_ms);
        let TurnMode::PushToTalk(press_mode) = self.config.mode else {
            // Hands-free, the key stops a reply the user does not want to talk over.
            if self.ready && self.barge_in(now_ms) {
                return;
            }
            return self.diagnose(Diagnostic::Ignored {
                event_type: "push_to_talk_down".to_owned(),
                reason: "the controller is in hands-free mode",
            });
        };
        if !self.ready {
            return self.hint(UiHint::NotReady);
        }
        match self.press.key_down(press_mode) {
            KeyDown::Begins => self.begin_press(now_ms),
            KeyDown::Repeats => self.diagnose(Diagnostic::RepeatedKeyDown),
            KeyDown::Releases => self.release(now_ms),
            KeyDown::GoesOn { down_at_ms } => {
                self.press = Press::Held {
                    down_at_ms,
                    speech_started: true,
                    stopped_reply: false,
                };
            }
        }
    }

    fn push_to_talk_up(&mut self, now_ms: u64) {
        self.advance(now_ms);
        // A press that has not counted stopped a reply (others count at key-down).
        if let TurnMode::PushToTalk(press_mode) = self.config.mode
            && self.press.released_by_key_up(press_mode)
        {
            self.release(now_ms);
        }
    }

    /// The model heard the press as it was spoken: it cannot be taken back, only ended. The
    /// input is muted at once and the user's message ends as it stands.
    fn cancel_press(&mut self, now_ms: u64) {
        self.advance(now_ms);
        if self.press == Press::Idle {
            return;
        }
        self.press = Press::Idle;
        self.close_capture();
        self.user_speech_ended(now_ms);
        let ended = self.end_user_message(now_ms);
        self.apply_pending_mode();
        if let Some(part) = ended {
            self.outbox.answer(ControllerOutput::PressCancelled(part));
        }
    }

    /// The Live API's data channel takes no user messages from a WebRTC client: said, and
    /// nothing is sent.
    fn send_user_message(&mut self, message: &UserMessage, now_ms: u64) {
        self.advance(now_ms);
        if !message.is_empty() {
            self.hint(UiHint::TypedMessagesNotTaken);
        }
    }

    fn server_text(&mut self, text: &str, now_ms: u64) {
        self.advance(now_ms);
        match decode_live_server_event(text) {
            Ok(event) => self.server_event(event, now_ms),
            Err(error) => {
                self.stats.undecodable_events += 1;
                self.emit(
                    SessionEvent::SessionError(Box::new(RealtimeSessionErrorEvent {
                        message: error.to_string(),
                        error_type: Some("undecodable_server_event".to_owned()),
                        code: Some(decode_error_code(&error).to_owned()),
                        recoverable: true,
                    })),
                    now_ms,
                );
                self.diagnose(Diagnostic::Undecodable(error));
            }
        }
    }

    fn tool_finished(
        &mut self,
        call_id: &str,
        result: Result<serde_json::Value, ToolError>,
        now_ms: u64,
    ) {
        self.advance(now_ms);
        let Some(tool_name) = self.outside_calls.remove(call_id) else {
            return self.diagnose(Diagnostic::Ignored {
                event_type: "tool result".to_owned(),
                reason: "no call of this id waits for an answer",
            });
        };
        let (content, outcome) = tool_answer(result);
        self.answer_tool_call(call_id.to_owned(), tool_name, content, outcome, now_ms);
    }

    fn assistant_audio(&mut self, chunk: AudioChunk, now_ms: u64) {
        self.advance(now_ms);
        let audible = super::controller::is_sounding(&chunk);
        let held = matches!(self.press, Press::Held { .. });
        if held || self.reply.is_none() && self.cut_reply_goes_on(now_ms) {
            // The key is held (the model is to listen), or this is the rest of the reply the
            // user cut, which goes on until its audio has been quiet a while: not played.
            if audible && self.cut_reply_heard_ms.is_some() {
                self.cut_reply_heard_ms = Some(now_ms);
            }
            self.stats.dropped_audio_chunks += 1;
            return;
        }
        if self.reply.is_none() && !audible {
            return;
        }
        let was_audible = self.audible_now();
        let Some(reply) = self.reply_for(now_ms) else {
            return;
        };
        if audible {
            reply.audible_until_ms = Some(now_ms);
            reply.message.last_activity_ms = now_ms;
        }
        let index = reply.message.index;
        if audible && !was_audible {
            self.became_audible(now_ms);
        }
        if let Err(error) =
            self.session
                .push_delta(index, PartDelta::assistant_audio(chunk), now_ms)
        {
            self.refused(error);
        }
    }

    fn playback_progress(&mut self, item_id: &str, played_ms: u64) {
        if let Some(reply) = self.reply.as_mut()
            && reply.item_id == item_id
        {
            reply.played_ms = reply.played_ms.max(played_ms);
        }
    }

    /// The derived end of audibility counts from the audio's arrival; the speaker's queue
    /// running dry changes nothing more.
    fn playback_drained(&mut self, now_ms: u64) {
        self.advance(now_ms);
    }

    fn device_changed(&mut self, device: DeviceDirection, now_ms: u64) {
        self.advance(now_ms);
        if device == DeviceDirection::Input && self.capture.is_open() {
            self.command(AudioCommand::CloseCapture);
            self.command(AudioCommand::OpenCapture { pre_roll_ms: 0 });
            self.diagnose(Diagnostic::CaptureReopened);
        }
    }

    fn echo_cancelled(&mut self, converged: bool, now_ms: u64) {
        self.advance(now_ms);
        if self.config.echo_canceller == converged {
            return;
        }
        self.config.echo_canceller = converged;
        if converged {
            self.set_mic_gate(false);
        } else if self.audible_now() {
            self.set_mic_gate(true);
        }
    }

    /// Hands-free with a trusted echo canceller, the microphone heard the user: the reply is
    /// held until the provider's transcript of the user confirms a barge-in, or for
    /// [`NEAR_SPEECH_HOLD_MS`].
    fn near_speech(&mut self, now_ms: u64) {
        self.advance(now_ms);
        if self.config.echo_canceller
            && self.hands_free()
            && self.audible_now()
            && self.held_until_ms.is_none()
        {
            self.held_until_ms = Some(now_ms.saturating_add(NEAR_SPEECH_HOLD_MS));
            self.command(AudioCommand::HoldPlayback { held: true });
        }
    }

    fn wall_clock(&mut self, now_ms: u64, clock: WallClock) {
        self.advance(now_ms);
        self.wall_clock = Some((now_ms, clock));
    }
}

impl TurnEngine for LiveTurns {
    fn profile(&self) -> FamilyProfile {
        ProviderFamily::Live.profile()
    }

    fn handle_input(&mut self, input: TurnInput, now_ms: u64) {
        match input {
            TurnInput::ChannelOpened => self.data_channel_open(now_ms),
            TurnInput::ChannelClosed => self.data_channel_closed(now_ms),
            TurnInput::ConversationSoFar(items) => self.restore_items(items),
            TurnInput::TypedRepliesInText(in_text) => self.set_typed_replies_in_text(in_text),
            TurnInput::SetTurnMode(mode) => self.set_turn_mode(mode, now_ms),
            TurnInput::KeyDown => self.push_to_talk_down(now_ms),
            TurnInput::KeyUp => self.push_to_talk_up(now_ms),
            TurnInput::CancelPress => self.cancel_press(now_ms),
            TurnInput::UserMessage(message) => self.send_user_message(&message, now_ms),
            TurnInput::ServerText(text) => self.server_text(&text, now_ms),
            TurnInput::ToolFinished { call_id, result } => {
                self.tool_finished(&call_id, result, now_ms)
            }
            TurnInput::AssistantAudio(chunk) => self.assistant_audio(chunk, now_ms),
            TurnInput::PlaybackProgress { item_id, played_ms } => {
                self.playback_progress(&item_id, played_ms)
            }
            TurnInput::PlaybackDrained => self.playback_drained(now_ms),
            TurnInput::DeviceChanged(device) => self.device_changed(device, now_ms),
            TurnInput::EchoCancelled { converged } => self.echo_cancelled(converged, now_ms),
            TurnInput::NearSpeech => self.near_speech(now_ms),
            TurnInput::WallClock(clock) => self.wall_clock(now_ms, clock),
            // GPT-Live keeps one conversation and answers nothing beside it.
            TurnInput::Aside(aside) => self.outbox.answer(ControllerOutput::AsideFailed {
                purpose: aside.purpose,
                reason: "GPT-Live answers no question beside the conversation".to_owned(),
                unanswered: false,
            }),
            TurnInput::Tick => self.advance(now_ms),
        }
    }

    fn next_deadline_ms(&self) -> Option<u64> {
        [
            self.press.deadline_ms(&self.config),
            self.opened_at_ms
                .filter(|_| !self.ready)
                .map(|at_ms| at_ms.saturating_add(SESSION_CONFIRM_GRACE_MS)),
            self.held_until_ms,
            self.reply_inaudible_at(),
            self.reply_ends_at(),
            self.user_message_ends_at(),
            self.cut_reply_over_at(),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    fn poll_output(&mut self) -> Option<ControllerOutput> {
        let state = self.turn_state();
        self.outbox.turn_state(state);
        let gate = self.reply_gate();
        // Between replies the next one's first sound is played: counted against the item it
        // opens (named ahead here), so the reply's played time has its first frame too.
        let item_id = match &self.reply {
            Some(reply) => reply.item_id.as_str(),
            None => self.next_reply_item_id.as_str(),
        };
        self.outbox.reply_audio(gate, Some(item_id));
        self.outbox.pop()
    }

    fn session_mut(&mut self) -> &mut Session {
        &mut self.session
    }
}
