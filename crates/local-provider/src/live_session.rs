//! The local provider's side of a Live API (GPT-Live) call, with no I/O: the session a call
//! starts with is checked as the Live API documents it, then client events in, server events
//! out, time as an argument.
//!
//! Why a machine of its own beside [`crate::session::ProviderSession`]: the Live API is another
//! protocol (the model owns turn-taking, the client mutes its input, voice and instructions are
//! fixed at start, usage is counted in seconds), and the test bench must hold Walkie to its
//! contract, not to the Realtime one. What it enforces so far: the session's documented limits at
//! call setup, the mute and unmute acknowledgements, the appended context's place on the
//! session's timeline, the wake policy (a session that has one waits for speech, and pauses
//! after its idle timeout until speech wakes it again: what a muted microphone sends is never
//! speech), usage reported each second (cumulative, active and paused), and the close with its
//! reason and usage. It speaks as the Realtime bench does, on the Live API's terms: the model
//! owns the turn, so a user's turn ends after [`END_OF_TURN_SILENCE_MS`] of silence (what a
//! muted microphone sends is silence) and is answered with the user's own audio played back
//! and a transcript of both sides, as deltas with no done events; speech heard while it
//! answers makes it stop and listen (full duplex). With a Responses delegation that declares
//! function tools it delegates as its scripted model says: the session's instructions name the
//! call ("use current_local_time", as a typed message does on the Realtime bench, see
//! [`crate::tool_calls`]), so each user turn becomes `session.delegation.created` and the
//! backend's `function_call` (`response.event`); once the client has given every output
//! (`response.item.create`) and asked to go on (`response.create`), the reply says what the
//! tool answered.

use serde_json::{Map, Value};

use crate::session::InputFrame;
use walkie_openai::live::{
    CloseReason, InitialRole, LIVE_DEFAULT_VOICE, LIVE_VOICES, LiveAudio, LiveAudioOutput,
    LiveClientEvent, LiveError, LiveServerEvent, LiveSessionConfig, LiveUsage, LiveVoice,
    MAX_INITIAL_MESSAGES, TextKind, decode_live_client_event,
};

/// How long a Live session may last, as the snapshot's `expires_at` says (60 minutes).
const SESSION_LIFETIME_S: u64 = 60 * 60;

/// How often the session reports its usage while it runs.
const USAGE_EVERY_MS: u64 = 1000;

/// The model's own rule for the end of a user's turn: this long without speech after some.
pub(crate) const END_OF_TURN_SILENCE_MS: u64 = 600;

/// Speech shorter than this is not a turn (a click, a cough).
const MIN_TURN_SPEECH_MS: u64 = 100;

/// The loudness a session without a wake policy takes for speech (the policy's default).
const DEFAULT_VAD_THRESHOLD: f32 = 0.5;

/// What the user is saying: the unmuted frames since their speech began.
struct Heard {
    frames: Vec<InputFrame>,
    /// Where the speech began on the session's timeline.
    from_timeline_ms: i64,
    last_speech_ms: u64,
    speech_ms: u64,
}

/// Function calls the delegated backend made for a user's turn, waiting for their outputs.
struct Delegated {
    /// Call id, tool name, and the output once the client gave it.
    calls: Vec<(String, String, Option<String>)>,
    /// The user's audio, played back with the reply.
    frames: Vec<InputFrame>,
}

/// The reply being spoken: its audio paced in real time, its words spread over it.
struct Speaking {
    frames: std::collections::VecDeque<InputFrame>,
    next_frame_ms: u64,
    /// Each piece of the reply's transcript, with when it is said (the call's clock).
    words: std::collections::VecDeque<(u64, String)>,
}

/// What a Live session's configuration breaks of the documented contract: the field and why,
/// as the API's `invalid_request_error` says it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct RefusedSession {
    pub code: &'static str,
    pub param: String,
    pub message: String,
}

fn refused(code: &'static str, param: impl Into<String>, message: String) -> RefusedSession {
    RefusedSession {
        code,
        param: param.into(),
        message,
    }
}

/// Checks a session as `POST /v1/live/sessions` documents it: a model; a built-in voice by
/// name, or a custom one by id; at most 128 history messages of one text part each, of the kind
/// their role takes; a wake threshold from 0 to 1; an idle timeout only with a wake policy.
pub(crate) fn check_session(session: &LiveSessionConfig) -> Result<(), RefusedSession> {
    if session.model.trim().is_empty() {
        return Err(refused(
            "missing_required_parameter",
            "session.model",
            "Missing required parameter: 'session.model'.".to_owned(),
        ));
    }
    if let Some(LiveVoice::Named(voice)) = session
        .audio
        .as_ref()
        .and_then(|audio| audio.output.as_ref())
        .and_then(|output| output.voice.as_ref())
        && !LIVE_VOICES.contains(&voice.as_str())
    {
        return Err(refused(
            "invalid_value",
            "session.audio.output.voice",
            format!(
                "Invalid value: '{voice}'. Supported values are: {}.",
                LIVE_VOICES.join(", ")
            ),
        ));
    }
    let input = session.input.as_deref().unwrap_or_default();
    if input.len() > MAX_INITIAL_MESSAGES {
        return Err(refused(
            "array_above_max_length",
            "session.input",
            format!(
                "Invalid 'session.input': array too long. Expected an array with maximum length \
                 {MAX_INITIAL_MESSAGES}, but got an array with length {} instead.",
                input.len()
            ),
        ));
    }
    for (index, item) in input.iter().enumerate() {
        let param = format!("session.input[{index}].content");
        let [part] = item.content.as_slice() else {
            return Err(refused(
                "invalid_value",
                param,
                format!(
                    "Each history message takes exactly one text part; message {index} has {}.",
                    item.content.len()
                ),
            ));
        };
        let fits = match item.role {
            InitialRole::Assistant => matches!(part.kind, TextKind::OutputText | TextKind::Text),
            InitialRole::Developer | InitialRole::User => part.kind == TextKind::InputText,
        };
        if !fits {
            return Err(refused(
                "invalid_value",
                format!("{param}[0].type"),
                format!(
                    "Message {index} ({:?}) cannot hold a {:?} part.",
                    item.role, part.kind
                ),
            ));
        }
    }
    if let Some(threshold) = session
        .wake_policy
        .as_ref()
        .and_then(|policy| policy.vad_threshold)
        && !(0.0..=1.0).contains(&threshold)
    {
        return Err(refused(
            "decimal_out_of_range",
            "session.wake_policy.vad_threshold",
            format!("Invalid 'session.wake_policy.vad_threshold': {threshold} is not from 0 to 1."),
        ));
    }
    if session.idle_timeout_s.is_some() && session.wake_policy.is_none() {
        return Err(refused(
            "invalid_value",
            "session.idle_timeout_s",
            "An idle timeout pauses a session that a wake policy can wake: set \
             session.wake_policy too."
                .to_owned(),
        ));
    }
    Ok(())
}

/// What the driver does next.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum LiveOutput {
    /// Send this server event with this `event_id`.
    Event {
        event_id: String,
        event: Box<LiveServerEvent>,
    },
    /// Send this Opus frame of `samples` 48 kHz samples as RTP now.
    Audio { opus: bytes::Bytes, samples: u32 },
    /// The session is closed: end the call.
    HangUp,
}

/// A session with a wake policy: whether inference runs, and when speech was last heard.
struct Wake {
    /// Frames at or above this RMS (16-bit units) are speech.
    threshold_rms: f64,
    /// Inference pauses after this long without speech.
    idle_timeout_ms: Option<u64>,
    awake: bool,
    last_speech_ms: u64,
}

/// One Live call's session, on the provider's side.
pub(crate) struct LiveProviderSession {
    /// The resolved session: the request's, with the server's defaults and its own fields.
    session: LiveSessionConfig,
    started_at_ms: u64,
    muted: bool,
    closed: bool,
    next_event: u64,
    wake: Option<Wake>,
    /// Paused time before the current stretch, and when the current paused stretch began.
    paused_ms: u64,
    paused_since_ms: Option<u64>,
    /// When the next usage report is due; `None` before the session has started.
    next_usage_ms: Option<u64>,
    /// Frames at or above this RMS (16-bit units) are speech.
    speech_rms: f64,
    heard: Option<Heard>,
    speaking: Option<Speaking>,
    /// The function tools of the session's Responses delegation.
    delegated_tools: Vec<walkie_openai::Tool>,
    delegated: Option<Delegated>,
    /// Delegations made so far (their ids are numbered).
    delegations: u64,
}

impl LiveProviderSession {
    /// A session created by `request` (already [`check_session`]ed) as call `call_id`, at
    /// `now_unix_s` on the wall clock (for `expires_at`) and `now_ms` on the call's clock.
    pub(crate) fn new(
        call_id: &str,
        request: LiveSessionConfig,
        now_unix_s: u64,
        now_ms: u64,
    ) -> Self {
        let mut session = request;
        let output = session
            .audio
            .get_or_insert_with(LiveAudio::default)
            .output
            .get_or_insert_with(LiveAudioOutput::default);
        output
            .voice
            .get_or_insert_with(|| LiveVoice::Named(LIVE_DEFAULT_VOICE.to_owned()));
        let mut own = Map::new();
        own.insert("id".to_owned(), Value::String(call_id.to_owned()));
        own.insert(
            "expires_at".to_owned(),
            Value::from(now_unix_s + SESSION_LIFETIME_S),
        );
        own.insert("status".to_owned(), Value::String("active".to_owned()));
        session.other.extend(own);
        // With a wake policy, inference waits for the first speech: paused until then.
        let wake = session.wake_policy.as_ref().map(|policy| Wake {
            threshold_rms: crate::session::VadSettings::rms_for_threshold(
                policy.vad_threshold.unwrap_or(0.5) as f32,
            ),
            idle_timeout_ms: session
                .idle_timeout_s
                .map(|seconds| u64::from(seconds) * 1000),
            awake: false,
            last_speech_ms: now_ms,
        });
        let paused_since_ms = wake.as_ref().map(|_| now_ms);
        let delegated_tools = session
            .delegation
            .as_ref()
            .filter(|delegation| delegation["type"] == "responses")
            .and_then(|delegation| delegation["responses"]["tools"].as_array())
            .map(|tools| {
                tools
                    .iter()
                    .filter_map(|tool| serde_json::from_value(tool.clone()).ok())
                    .collect()
            })
            .unwrap_or_default();
        let speech_rms = wake.as_ref().map_or_else(
            || crate::session::VadSettings::rms_for_threshold(DEFAULT_VAD_THRESHOLD),
            |wake| wake.threshold_rms,
        );
        Self {
            session,
            started_at_ms: now_ms,
            muted: false,
            closed: false,
            next_event: 0,
            wake,
            paused_ms: 0,
            paused_since_ms,
            next_usage_ms: None,
            speech_rms,
            heard: None,
            speaking: None,
            delegated_tools,
            delegated: None,
            delegations: 0,
        }
    }

    /// When [`Self::tick`] has work: the next usage report, or the idle timeout.
    pub(crate) fn next_deadline_ms(&self) -> Option<u64> {
        if self.closed {
            return None;
        }
        let idle = self.wake.as_ref().and_then(|wake| {
            wake.idle_timeout_ms
                .filter(|_| wake.awake)
                .map(|timeout| wake.last_speech_ms + timeout)
        });
        let turn_over = self
            .heard
            .as_ref()
            .map(|heard| heard.last_speech_ms + END_OF_TURN_SILENCE_MS);
        let speaking = self.speaking.as_ref().and_then(|speaking| {
            let word = speaking.words.front().map(|(at_ms, _)| *at_ms);
            let frame = (!speaking.frames.is_empty()).then_some(speaking.next_frame_ms);
            [word, frame].into_iter().flatten().min()
        });
        [self.next_usage_ms, idle, turn_over, speaking]
            .into_iter()
            .flatten()
            .min()
    }

    /// Timed work: inference paused after the idle timeout, usage reported each second.
    pub(crate) fn tick(&mut self, now_ms: u64) -> Vec<LiveOutput> {
        let mut out = Vec::new();
        if self.closed {
            return out;
        }
        if let Some(wake) = self.wake.as_mut()
            && wake.awake
            && wake
                .idle_timeout_ms
                .is_some_and(|timeout| now_ms >= wake.last_speech_ms + timeout)
        {
            wake.awake = false;
            self.paused_since_ms = Some(now_ms);
            out.push(self.event(LiveServerEvent::SessionPaused));
        }
        if self
            .heard
            .as_ref()
            .is_some_and(|heard| now_ms >= heard.last_speech_ms + END_OF_TURN_SILENCE_MS)
            && let Some(heard) = self.heard.take()
        {
            self.turn_over(heard, now_ms, &mut out);
        }
        self.speak(now_ms, &mut out);
        if let Some(due) = self.next_usage_ms
            && now_ms >= due
        {
            self.next_usage_ms = Some(now_ms + USAGE_EVERY_MS);
            let usage = self.usage(now_ms);
            out.push(self.event(LiveServerEvent::UsageUpdated {
                usage,
                context_window: None,
            }));
        }
        out
    }

    /// One frame of the client's audio. The model hears silence while the client is muted;
    /// unmuted speech wakes a paused session, stops a reply under way (the model yields to the
    /// user) and begins or continues the user's turn.
    pub(crate) fn on_audio(&mut self, frame: InputFrame, now_ms: u64) -> Vec<LiveOutput> {
        let mut out = Vec::new();
        if self.closed || self.muted {
            return out;
        }
        let speech = frame.rms >= self.speech_rms;
        if speech {
            if let Some(wake) = self.wake.as_mut() {
                wake.last_speech_ms = now_ms;
                if !wake.awake {
                    wake.awake = true;
                    if let Some(since) = self.paused_since_ms.take() {
                        self.paused_ms += now_ms.saturating_sub(since);
                    }
                    out.push(self.event(LiveServerEvent::SessionResumed));
                }
            }
            // Full duplex: the model stops talking when the user talks over it.
            self.speaking = None;
        }
        let from_timeline_ms = self.timeline_ms(now_ms);
        match self.heard.as_mut() {
            Some(heard) => {
                if speech {
                    heard.last_speech_ms = now_ms;
                    heard.speech_ms += frame.ms();
                }
                heard.frames.push(frame);
            }
            None if speech => {
                self.heard = Some(Heard {
                    speech_ms: frame.ms(),
                    frames: vec![frame],
                    from_timeline_ms,
                    last_speech_ms: now_ms,
                })
            }
            None => {}
        }
        out
    }

    /// The model's turn-taking decided the user is done: their words, then the reply (their
    /// audio played back), begun now.
    fn turn_over(&mut self, heard: Heard, now_ms: u64, out: &mut Vec<LiveOutput>) {
        if heard.speech_ms < MIN_TURN_SPEECH_MS {
            return;
        }
        let said = crate::session::describe_user_audio(&heard.frames);
        let to_timeline_ms = self.timeline_ms(now_ms);
        for delta in crate::session::transcript_deltas(&said) {
            out.push(self.event(LiveServerEvent::InputTranscriptDelta {
                delta,
                start_ms: heard.from_timeline_ms,
                end_ms: to_timeline_ms,
            }));
        }
        if let Some(request) = self
            .session
            .instructions
            .as_deref()
            .and_then(|instructions| {
                crate::tool_calls::tool_request(instructions, &self.delegated_tools)
            })
        {
            return self.delegate(request, heard.frames, now_ms, out);
        }
        let audio_ms: u64 = heard.frames.iter().map(InputFrame::ms).sum();
        let reply = format!(
            "This is Walkie's local provider on the Live API. I can't understand speech, so I \
             played your {:.1} seconds of audio back to you.",
            audio_ms as f64 / 1000.0
        );
        self.speak_reply(&reply, heard.frames, now_ms);
    }

    /// The backend a task is delegated to calls `request`'s tool, as many times as it says.
    fn delegate(
        &mut self,
        request: crate::tool_calls::ToolRequest,
        frames: Vec<InputFrame>,
        now_ms: u64,
        out: &mut Vec<LiveOutput>,
    ) {
        self.delegations += 1;
        let number = self.delegations;
        let delegation_id = format!("del_local_{number}");
        out.push(self.event(LiveServerEvent::DelegationCreated {
            delegation: walkie_openai::live::Delegation {
                id: delegation_id.clone(),
                target: walkie_openai::live::DelegationTarget::Responses,
                response_id: Some(format!("resp_local_{number}")),
            },
            offset_ms: self.timeline_ms(now_ms),
        }));
        let mut calls = Vec::new();
        for index in 0..request.count {
            let call_id = format!("call_local_{number}_{index}");
            let item = serde_json::json!({
                "type": "function_call",
                "id": format!("fc_local_{number}_{index}"),
                "call_id": call_id,
                "name": request.name,
                "arguments": request.arguments,
                "status": "completed",
            });
            out.push(self.event(LiveServerEvent::ResponseEvent {
                event: serde_json::json!({
                    "type": "response.output_item.done",
                    "output_index": index,
                    "sequence_number": index + 1,
                    "item": item,
                }),
                delegation_id: Some(delegation_id.clone()),
            }));
            calls.push((call_id, request.name.clone(), None));
        }
        self.delegated = Some(Delegated { calls, frames });
    }

    /// A `session.update`, as the API documents it: the delegation's settings change (its type
    /// may not); the model, the instructions, the audio and the startup input are fixed at
    /// start, and an update naming one is refused, naming it.
    fn update(&mut self, session: &Value) -> Result<(), RefusedSession> {
        let Some(fields) = session.as_object() else {
            return Err(refused(
                "invalid_type",
                "session",
                "Invalid 'session': expected an object.".to_owned(),
            ));
        };
        for fixed in ["model", "instructions", "audio", "input"] {
            if fields.contains_key(fixed) {
                return Err(refused(
                    "immutable_field",
                    format!("session.{fixed}"),
                    format!(
                        "'session.{fixed}' cannot change once the session has started: the \
                         model, the instructions, the audio and the input are fixed at start."
                    ),
                ));
            }
        }
        if let Some(delegation) = fields.get("delegation") {
            let now = self
                .session
                .delegation
                .as_ref()
                .map_or("client", |current| {
                    current["type"].as_str().unwrap_or("client")
                });
            let asked = delegation["type"].as_str().unwrap_or("client");
            if asked != now {
                return Err(refused(
                    "immutable_field",
                    "session.delegation.type",
                    format!(
                        "The delegation type cannot change: the session delegates to '{now}', \
                         not '{asked}'."
                    ),
                ));
            }
            self.session.delegation = Some(delegation.clone());
        }
        Ok(())
    }

    /// The client's output of a delegated call.
    fn delegated_output(&mut self, item: &Value) {
        let (Some(delegated), Some(call_id)) = (self.delegated.as_mut(), item["call_id"].as_str())
        else {
            return;
        };
        if item["type"] != "function_call_output" {
            return;
        }
        let output = match &item["output"] {
            Value::String(text) => text.clone(),
            other => other.to_string(),
        };
        if let Some((_, _, answered)) = delegated.calls.iter_mut().find(|(id, _, _)| id == call_id)
        {
            *answered = Some(output);
        }
    }

    /// The client asked the backend to go on: once every call is answered, the reply says what
    /// the last one gave, over the user's audio played back.
    fn delegated_reply(&mut self, now_ms: u64) {
        let answered = self.delegated.as_ref().is_some_and(|delegated| {
            delegated
                .calls
                .iter()
                .all(|(_, _, output)| output.is_some())
        });
        if !answered {
            return;
        }
        let Some(delegated) = self.delegated.take() else {
            return;
        };
        let Some((_, name, Some(output))) = delegated.calls.last() else {
            return;
        };
        let reply = format!(
            "This is Walkie's local provider on the Live API. The {name} tool answered: {}",
            crate::session::cut_chars(output, 200)
        );
        self.speak_reply(&reply, delegated.frames, now_ms);
    }

    /// Speaks `reply` from `now_ms`, `frames` as its audio, its words spread over it.
    fn speak_reply(&mut self, reply: &str, frames: Vec<InputFrame>, now_ms: u64) {
        let audio_ms: u64 = frames.iter().map(InputFrame::ms).sum();
        let pieces = crate::session::transcript_deltas(reply);
        let step_ms = audio_ms / (pieces.len() as u64).max(1);
        let words = pieces
            .into_iter()
            .enumerate()
            .map(|(index, piece)| (now_ms + index as u64 * step_ms, piece))
            .collect();
        self.speaking = Some(Speaking {
            frames: frames.into(),
            next_frame_ms: now_ms,
            words,
        });
    }

    /// What of the reply is due by `now_ms`: its audio frames, in real time, and its words.
    fn speak(&mut self, now_ms: u64, out: &mut Vec<LiveOutput>) {
        let Some(speaking) = self.speaking.as_mut() else {
            return;
        };
        let mut due_words = Vec::new();
        while speaking
            .words
            .front()
            .is_some_and(|(at_ms, _)| *at_ms <= now_ms)
        {
            if let Some((at_ms, word)) = speaking.words.pop_front() {
                due_words.push((at_ms, word));
            }
        }
        let mut due_frames = Vec::new();
        while speaking.next_frame_ms <= now_ms
            && let Some(frame) = speaking.frames.pop_front()
        {
            speaking.next_frame_ms += frame.ms().max(1);
            due_frames.push(frame);
        }
        if speaking.frames.is_empty() && speaking.words.is_empty() {
            self.speaking = None;
            if let Some(wake) = self.wake.as_mut() {
                // Speaking is activity too: the idle timeout counts from the reply's end.
                wake.last_speech_ms = now_ms;
            }
        }
        for (at_ms, delta) in due_words {
            let start_ms = self.timeline_ms(at_ms);
            out.push(self.event(LiveServerEvent::OutputTranscriptDelta {
                delta,
                start_ms,
                end_ms: start_ms,
            }));
        }
        out.extend(due_frames.into_iter().map(|frame| LiveOutput::Audio {
            opus: frame.opus,
            samples: frame.samples,
        }));
    }

    /// Whether the client's audio is muted for the model (it hears silence).
    #[cfg(test)]
    pub(crate) fn is_muted(&self) -> bool {
        self.muted
    }

    fn event(&mut self, event: LiveServerEvent) -> LiveOutput {
        self.next_event += 1;
        LiveOutput::Event {
            event_id: format!("event_live_{:06}", self.next_event),
            event: Box::new(event),
        }
    }

    /// Where `now_ms` is on the session's timeline.
    fn timeline_ms(&self, now_ms: u64) -> i64 {
        i64::try_from(now_ms.saturating_sub(self.started_at_ms)).unwrap_or(i64::MAX)
    }

    /// The billable time so far, in whole seconds: paused while inference waits for speech,
    /// active the rest, the two adding up to the total.
    fn usage(&self, now_ms: u64) -> LiveUsage {
        let total_ms = now_ms.saturating_sub(self.started_at_ms);
        let paused_ms = self.paused_ms
            + self
                .paused_since_ms
                .map_or(0, |since| now_ms.saturating_sub(since));
        let seconds = total_ms / 1000;
        let paused_seconds = (paused_ms / 1000).min(seconds);
        LiveUsage {
            seconds: seconds as f64,
            active_seconds: Some(seconds - paused_seconds),
            paused_seconds: Some(paused_seconds),
        }
    }

    /// The data channel opened: the session has started, and reports its usage from now on.
    pub(crate) fn on_connect(&mut self, now_ms: u64) -> Vec<LiveOutput> {
        self.next_usage_ms = Some(now_ms + USAGE_EVERY_MS);
        let session = self.session.clone();
        vec![self.event(LiveServerEvent::SessionStarted { session })]
    }

    /// One text message on the data channel.
    pub(crate) fn on_client_text(&mut self, text: &str, now_ms: u64) -> Vec<LiveOutput> {
        if self.closed {
            return Vec::new();
        }
        let (client_event_id, event) = match decode_live_client_event(text) {
            Ok(decoded) => decoded,
            Err(error) => {
                let error = LiveError {
                    code: "invalid_client_event".to_owned(),
                    message: error.to_string(),
                    kind: "invalid_request_error".to_owned(),
                    param: None,
                    client_event_id: None,
                };
                return vec![self.event(LiveServerEvent::Error { error })];
            }
        };
        let at_ms = self.timeline_ms(now_ms);
        let reply = match event {
            LiveClientEvent::SessionUpdate { session } => match self.update(&session) {
                Ok(()) => LiveServerEvent::SessionUpdated {
                    session: self.session.clone(),
                },
                Err(refused) => LiveServerEvent::Error {
                    error: LiveError {
                        code: refused.code.to_owned(),
                        message: refused.message,
                        kind: "invalid_request_error".to_owned(),
                        param: Some(refused.param),
                        client_event_id,
                    },
                },
            },
            LiveClientEvent::Mute => {
                self.muted = true;
                LiveServerEvent::InputAudioMuted
            }
            LiveClientEvent::Unmute => {
                self.muted = false;
                LiveServerEvent::InputAudioUnmuted
            }
            LiveClientEvent::InstructionsAppend { .. } => LiveServerEvent::InstructionsAppended {
                start_ms: at_ms,
                end_ms: at_ms,
            },
            LiveClientEvent::ThinkingAppend { .. } => LiveServerEvent::ThinkingAppended {
                start_ms: at_ms,
                end_ms: at_ms,
            },
            LiveClientEvent::CommentaryAppend { .. } => LiveServerEvent::CommentaryAppended {
                start_ms: at_ms,
                end_ms: at_ms,
            },
            LiveClientEvent::ResponseItemCreate { item } => {
                self.delegated_output(&item);
                return Vec::new();
            }
            LiveClientEvent::ResponseCreate => {
                self.delegated_reply(now_ms);
                return Vec::new();
            }
            LiveClientEvent::Close => {
                self.closed = true;
                let closed = LiveServerEvent::SessionClosed {
                    reason: CloseReason::CloseRequested,
                    usage: Some(self.usage(now_ms)),
                };
                return vec![self.event(closed), LiveOutput::HangUp];
            }
        };
        vec![self.event(reply)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use walkie_openai::live::{InitialItem, InitialText, WakePolicy};

    fn request() -> LiveSessionConfig {
        LiveSessionConfig {
            model: "gpt-live-1.1".to_owned(),
            instructions: Some("Be brief.".to_owned()),
            ..LiveSessionConfig::default()
        }
    }

    fn events(outputs: Vec<LiveOutput>) -> Vec<LiveServerEvent> {
        outputs
            .into_iter()
            .filter_map(|output| match output {
                LiveOutput::Event { event, .. } => Some(*event),
                LiveOutput::HangUp | LiveOutput::Audio { .. } => None,
            })
            .collect()
    }

    #[test]
    fn a_started_session_is_the_request_with_the_default_voice_and_its_own_id() {
        let mut live = LiveProviderSession::new("live_1", request(), 1_000, 0);
        let started = events(live.on_connect(5));
        let [LiveServerEvent::SessionStarted { session }] = &started[..] else {
            panic!("one session.started");
        };
        assert_eq!(session.model, "gpt-live-1.1");
        assert_eq!(session.instructions.as_deref(), Some("Be brief."));
        assert_eq!(
            session
                .audio
                .as_ref()
                .unwrap()
                .output
                .as_ref()
                .unwrap()
                .voice,
            Some(LiveVoice::Named("marin".to_owned()))
        );
        assert_eq!(session.other["id"], "live_1");
        assert_eq!(session.other["expires_at"], 1_000 + 3_600);
    }

    #[test]
    fn mute_and_unmute_are_acknowledged_and_appended_context_is_placed_on_the_timeline() {
        let mut live = LiveProviderSession::new("live_1", request(), 0, 1_000);
        assert_eq!(
            events(live.on_client_text(r#"{"type":"session.input_audio.mute"}"#, 1_200)),
            [LiveServerEvent::InputAudioMuted]
        );
        assert!(live.is_muted());
        assert_eq!(
            events(live.on_client_text(r#"{"type":"session.input_audio.unmute"}"#, 1_300)),
            [LiveServerEvent::InputAudioUnmuted]
        );
        assert!(!live.is_muted());
        assert_eq!(
            events(live.on_client_text(
                r#"{"type":"session.commentary.append","content":"It is 10:42.","delegation_id":null}"#,
                3_500
            )),
            [LiveServerEvent::CommentaryAppended {
                start_ms: 2_500,
                end_ms: 2_500
            }]
        );
    }

    #[test]
    fn a_close_ends_the_session_with_its_reason_and_whole_seconds_then_nothing_more() {
        let mut live = LiveProviderSession::new("live_1", request(), 0, 0);
        let outputs = live.on_client_text(r#"{"type":"session.close"}"#, 4_900);
        assert_eq!(outputs.last(), Some(&LiveOutput::HangUp));
        assert_eq!(
            events(outputs),
            [LiveServerEvent::SessionClosed {
                reason: CloseReason::CloseRequested,
                usage: Some(LiveUsage {
                    seconds: 4.0,
                    active_seconds: Some(4),
                    paused_seconds: Some(0)
                })
            }]
        );
        assert!(
            live.on_client_text(r#"{"type":"session.input_audio.mute"}"#, 5_000)
                .is_empty()
        );
    }

    fn woken_by_speech(idle_timeout_s: Option<u32>) -> LiveProviderSession {
        LiveProviderSession::new(
            "live_1",
            LiveSessionConfig {
                wake_policy: Some(WakePolicy {
                    vad_threshold: None,
                }),
                idle_timeout_s,
                ..request()
            },
            0,
            0,
        )
    }

    /// Loud enough to be speech at the default threshold (−40 dBFS is 328).
    const SPEECH_RMS: f64 = 3_000.0;

    /// A 20 ms frame of this loudness.
    fn frame(rms: f64) -> InputFrame {
        InputFrame {
            opus: bytes::Bytes::from_static(&[0xf8, 0xff, 0xfe]),
            samples: 960,
            rms,
        }
    }

    /// Runs the session's timed work at each of its deadlines up to `until_ms`.
    fn run_until(live: &mut LiveProviderSession, until_ms: u64) -> Vec<LiveOutput> {
        let mut out = Vec::new();
        while let Some(at_ms) = live.next_deadline_ms().filter(|at_ms| *at_ms <= until_ms) {
            out.extend(live.tick(at_ms));
        }
        out
    }

    fn not_usage(outputs: Vec<LiveOutput>) -> Vec<LiveServerEvent> {
        events(outputs)
            .into_iter()
            .filter(|event| !matches!(event, LiveServerEvent::UsageUpdated { .. }))
            .collect()
    }

    #[test]
    fn a_session_with_a_wake_policy_waits_for_speech_and_pauses_after_its_idle_timeout() {
        let mut live = woken_by_speech(Some(2));
        live.on_connect(0);
        assert!(
            live.on_audio(frame(50.0), 100).is_empty(),
            "quiet is not speech"
        );
        assert_eq!(
            events(live.on_audio(frame(SPEECH_RMS), 500)),
            [LiveServerEvent::SessionResumed]
        );
        assert!(
            live.on_audio(frame(SPEECH_RMS), 520).is_empty(),
            "already awake"
        );
        // 40 ms of sound is not a turn: nothing is answered.
        assert_eq!(not_usage(run_until(&mut live, 1_499)), []);
        // Speech at 1,500 ms: the idle timeout runs from there.
        live.on_audio(frame(SPEECH_RMS), 1_500);
        assert_eq!(not_usage(run_until(&mut live, 3_499)), []);
        assert_eq!(
            not_usage(run_until(&mut live, 3_500)),
            [LiveServerEvent::SessionPaused]
        );
        // Speech wakes it again; a muted microphone never does.
        live.on_client_text(r#"{"type":"session.input_audio.mute"}"#, 3_600);
        assert!(live.on_audio(frame(SPEECH_RMS), 3_700).is_empty());
        live.on_client_text(r#"{"type":"session.input_audio.unmute"}"#, 3_800);
        assert_eq!(
            events(live.on_audio(frame(SPEECH_RMS), 4_500)),
            [LiveServerEvent::SessionResumed]
        );
    }

    /// A second of speech from 1,000 ms, unmuted; the time of its last frame.
    fn a_second_of_speech(live: &mut LiveProviderSession) -> u64 {
        for number in 0..50 {
            live.on_audio(frame(SPEECH_RMS), 1_000 + number * 20);
        }
        1_980
    }

    #[test]
    fn a_turn_ends_after_the_models_silence_and_is_answered_with_the_users_audio_and_both_transcripts()
     {
        let mut live = LiveProviderSession::new("live_1", request(), 0, 0);
        live.on_connect(0);
        let last_ms = a_second_of_speech(&mut live);
        assert_eq!(
            not_usage(run_until(&mut live, last_ms + END_OF_TURN_SILENCE_MS - 1)),
            [],
            "the model waits for its silence"
        );
        let answered = run_until(&mut live, last_ms + END_OF_TURN_SILENCE_MS + 2_000);
        let audio_frames = answered
            .iter()
            .filter(|output| matches!(output, LiveOutput::Audio { .. }))
            .count();
        assert_eq!(audio_frames, 50, "the user's second played back");
        let said: String = not_usage(answered.clone())
            .iter()
            .filter_map(|event| match event {
                LiveServerEvent::InputTranscriptDelta { delta, .. } => Some(delta.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(said, "[1.0 s of speech]");
        let replied: String = not_usage(answered)
            .iter()
            .filter_map(|event| match event {
                LiveServerEvent::OutputTranscriptDelta { delta, .. } => Some(delta.as_str()),
                _ => None,
            })
            .collect();
        assert!(
            replied.contains("played your 1.0 seconds of audio back"),
            "{replied}"
        );
        assert_eq!(
            not_usage(run_until(&mut live, 10_000)),
            [],
            "no done event, nothing more"
        );
    }

    #[test]
    fn muting_ends_the_users_turn_as_silence_would() {
        let mut live = LiveProviderSession::new("live_1", request(), 0, 0);
        live.on_connect(0);
        let last_ms = a_second_of_speech(&mut live);
        live.on_client_text(r#"{"type":"session.input_audio.mute"}"#, last_ms + 100);
        // What a muted microphone sends is silence, however loud.
        live.on_audio(frame(SPEECH_RMS), last_ms + 200);
        let events = not_usage(run_until(&mut live, last_ms + END_OF_TURN_SILENCE_MS));
        assert!(
            matches!(
                events.first(),
                Some(LiveServerEvent::InputTranscriptDelta { .. })
            ),
            "{events:?}"
        );
    }

    #[test]
    fn speech_over_the_reply_stops_it_and_is_heard_as_the_next_turn() {
        let mut live = LiveProviderSession::new("live_1", request(), 0, 0);
        live.on_connect(0);
        let last_ms = a_second_of_speech(&mut live);
        let reply_from_ms = last_ms + END_OF_TURN_SILENCE_MS;
        let started = run_until(&mut live, reply_from_ms + 100);
        assert!(
            started
                .iter()
                .any(|output| matches!(output, LiveOutput::Audio { .. }))
        );
        live.on_audio(frame(SPEECH_RMS), reply_from_ms + 120);
        let after = run_until(&mut live, reply_from_ms + 500);
        assert!(
            !after
                .iter()
                .any(|output| matches!(output, LiveOutput::Audio { .. })),
            "the model stopped talking"
        );
    }

    #[test]
    fn usage_is_reported_each_second_with_the_paused_time_apart_and_adding_up() {
        let mut live = woken_by_speech(Some(1));
        live.on_connect(0);
        // Asleep until 2,500 ms, awake until the timeout at 3,500, asleep again to 6,000.
        live.on_audio(frame(SPEECH_RMS), 2_500);
        let reported = events(run_until(&mut live, 6_000));
        let Some(LiveServerEvent::UsageUpdated { usage, .. }) = reported.last() else {
            panic!("a usage report: {reported:?}");
        };
        assert_eq!(
            usage,
            &LiveUsage {
                seconds: 6.0,
                active_seconds: Some(1),
                paused_seconds: Some(5)
            }
        );
        // Without a wake policy every second is active.
        let mut always_on = LiveProviderSession::new("live_2", request(), 0, 0);
        always_on.on_connect(0);
        assert_eq!(always_on.next_deadline_ms(), Some(1_000));
        assert_eq!(
            events(always_on.tick(1_000)),
            [LiveServerEvent::UsageUpdated {
                usage: LiveUsage {
                    seconds: 1.0,
                    active_seconds: Some(1),
                    paused_seconds: Some(0)
                },
                context_window: None
            }]
        );
    }

    #[test]
    fn an_update_may_change_the_delegation_but_never_the_voice_instructions_or_delegation_type() {
        let mut live = LiveProviderSession::new("live_1", request(), 0, 0);
        for (update, param) in [
            (r#"{"audio":{"output":{"voice":"cedar"}}}"#, "session.audio"),
            (r#"{"instructions":"Be verbose."}"#, "session.instructions"),
            (
                r#"{"delegation":{"type":"responses","responses":{"model":"m"}}}"#,
                "session.delegation.type",
            ),
        ] {
            let text =
                format!(r#"{{"type":"session.update","event_id":"evt_u","session":{update}}}"#);
            let answered = events(live.on_client_text(&text, 10));
            let [LiveServerEvent::Error { error }] = &answered[..] else {
                panic!("{update}: {answered:?}");
            };
            assert_eq!(error.param.as_deref(), Some(param), "{update}");
            assert_eq!(error.client_event_id.as_deref(), Some("evt_u"));
        }
        let accepted = events(live.on_client_text(
            r#"{"type":"session.update","session":{"delegation":{"type":"client","acknowledgement_delay_ms":200}}}"#,
            20,
        ));
        let [LiveServerEvent::SessionUpdated { session }] = &accepted[..] else {
            panic!("{accepted:?}");
        };
        assert_eq!(
            session.delegation.as_ref().unwrap()["acknowledgement_delay_ms"],
            200
        );
        assert_eq!(
            session.instructions.as_deref(),
            Some("Be brief."),
            "unchanged"
        );
    }

    #[test]
    fn a_client_event_of_the_realtime_api_is_an_error_naming_it_and_the_session_goes_on() {
        let mut live = LiveProviderSession::new("live_1", request(), 0, 0);
        let answered = events(live.on_client_text(r#"{"type":"input_audio_buffer.commit"}"#, 10));
        let [LiveServerEvent::Error { error }] = &answered[..] else {
            panic!("one error");
        };
        assert!(
            error.message.contains("input_audio_buffer.commit"),
            "{error:?}"
        );
        assert_eq!(
            events(live.on_client_text(r#"{"type":"session.input_audio.mute"}"#, 20)),
            [LiveServerEvent::InputAudioMuted]
        );
    }

    #[test]
    fn a_session_outside_the_documented_limits_is_refused_naming_the_field() {
        assert_eq!(check_session(&request()), Ok(()));
        let refused_param = |session: LiveSessionConfig| check_session(&session).unwrap_err().param;
        assert_eq!(
            refused_param(LiveSessionConfig {
                model: " ".to_owned(),
                ..request()
            }),
            "session.model"
        );
        let message = |role| InitialItem::message(role, "hi");
        assert_eq!(
            refused_param(LiveSessionConfig {
                input: Some(vec![message(InitialRole::User); 129]),
                ..request()
            }),
            "session.input"
        );
        assert_eq!(
            check_session(&LiveSessionConfig {
                input: Some(vec![message(InitialRole::User); 128]),
                ..request()
            }),
            Ok(())
        );
        let mut two_parts = message(InitialRole::User);
        two_parts.content.push(InitialText {
            kind: TextKind::InputText,
            text: "again".to_owned(),
        });
        assert_eq!(
            refused_param(LiveSessionConfig {
                input: Some(vec![message(InitialRole::Assistant), two_parts]),
                ..request()
            }),
            "session.input[1].content"
        );
        let mut user_as_output = message(InitialRole::User);
        user_as_output.content[0].kind = TextKind::OutputText;
        assert_eq!(
            refused_param(LiveSessionConfig {
                input: Some(vec![user_as_output]),
                ..request()
            }),
            "session.input[0].content[0].type"
        );
        assert_eq!(
            refused_param(LiveSessionConfig {
                audio: Some(LiveAudio {
                    output: Some(LiveAudioOutput {
                        voice: Some(LiveVoice::Named("nova".to_owned()))
                    }),
                    format: None
                }),
                ..request()
            }),
            "session.audio.output.voice"
        );
        assert_eq!(
            refused_param(LiveSessionConfig {
                wake_policy: Some(WakePolicy {
                    vad_threshold: Some(1.5)
                }),
                ..request()
            }),
            "session.wake_policy.vad_threshold"
        );
        assert_eq!(
            refused_param(LiveSessionConfig {
                idle_timeout_s: Some(30),
                ..request()
            }),
            "session.idle_timeout_s"
        );
    }
}
