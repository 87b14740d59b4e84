//! A scripted conversation in virtual time: feed key presses and server events at chosen
//! instants, then read back exactly what the controller sent, asked of the audio devices, hinted,
//! and emitted on the session stream.
//!
//! Client events are read back without their `event_id`: the ids are the controller's to number.
//! The harness checks every one as it is polled (a non-empty id, the one on the wire, never given
//! to an earlier event of the conversation), and [`Conversation::sent_id`] hands a test the id of
//! an event it answers or asserts on.
#![allow(dead_code)]

use std::sync::Arc;

use serde_json::{Value, json};
use walkie_openai::{SessionConfig, TurnDetection};
use walkie_session::turn::{
    AudioCommand, ControllerOutput, Diagnostic, OutgoingEvent, ToolRegistry, Transport, TurnConfig,
    TurnController, TurnInput, UiHint, WallClock,
};
use walkie_session::{
    Delivery, EventIterator, Part, PartDelta, PartDeltaEvent, PartEndEvent, PartIndex,
    PartStartEvent, RealtimeInputSpeechEndEvent, RealtimeInputSpeechStartEvent,
    RealtimeSessionErrorEvent, SessionEvent, SessionFailure, Speaker, SpeechPart,
};

/// The reference's §6 push-to-talk turn, as the openai crate's tests use it.
pub const PTT_TURN_GA: &str = include_str!("../../../openai/tests/data/ptt-turn-ga.jsonl");
/// More GA events (session.created, speech events, errors, ...).
pub const OTHER_EVENTS_GA: &str = include_str!("../../../openai/tests/data/other-events-ga.jsonl");

pub struct Conversation {
    pub controller: TurnController,
    iterator: EventIterator,
    pub now_ms: u64,
    failures: Vec<SessionFailure>,
    /// The controller's outputs read so far and not yet asked for, by kind.
    polled: Polled,
    /// Every client event sent so far, in order, as its id and type.
    sent_ids: Vec<(String, &'static str)>,
}

/// The controller's one output queue, sorted by kind for tests that ask about one kind.
#[derive(Default)]
pub struct Polled {
    pub sent: Vec<OutgoingEvent>,
    pub audio: Vec<AudioCommand>,
    /// What the audio driver was told to do with the reply audio it decodes, in order.
    pub reply_audio: Vec<walkie_session::turn::ReplyAudio>,
    /// Where the turn stood each time it changed, in order.
    pub turn_states: Vec<walkie_session::turn::TurnState>,
    pub hints: Vec<UiHint>,
    pub diagnostics: Vec<Diagnostic>,
    /// What each response was billed, in order.
    pub billed: Vec<walkie_openai::Usage>,
    /// What each transcription was billed, in order.
    pub transcribed: Vec<walkie_openai::TranscriptionUsage>,
    /// Each `rate_limits.updated`'s limits, in order.
    pub rate_limits: Vec<Vec<walkie_openai::RateLimit>>,
    /// Calls of outside tools asked of the caller, in order.
    pub tool_calls: Vec<walkie_session::turn::ToolCallRequest>,
    /// The user parts presses taken back had opened, in order.
    pub cancelled_parts: Vec<PartIndex>,
    /// How many typed messages went out.
    pub messages_sent: usize,
    /// Each aside's answer or why it has none, in order.
    pub asides: Vec<(walkie_session::turn::AsidePurpose, Result<String, String>)>,
}

impl Conversation {
    pub fn with(config: TurnConfig) -> Self {
        let mut controller = TurnController::new(config, ToolRegistry::with_builtins());
        let iterator = controller
            .session_mut()
            .iterate()
            .expect("a fresh session has no iterator yet");
        Self {
            controller,
            iterator,
            now_ms: 0,
            failures: Vec::new(),
            polled: Polled::default(),
            sent_ids: Vec::new(),
        }
    }

    /// Push-to-talk (hold), channel open at 0 and confirmed by `session.updated` at 50, with the
    /// setup's outputs already read.
    pub fn ready_for_push_to_talk() -> Self {
        Self::ready(TurnConfig::push_to_talk(SessionConfig::default()))
    }

    /// Hands-free over the given transport (server VAD), ready as above.
    pub fn ready_hands_free(transport: Transport, echo_canceller: bool) -> Self {
        let mut config = TurnConfig::hands_free(SessionConfig::default(), server_vad(None));
        config.transport = transport;
        config.echo_canceller = echo_canceller;
        Self::ready(config)
    }

    pub fn ready(config: TurnConfig) -> Self {
        let mut conversation = Self::with(config);
        conversation
            .controller
            .handle_input(TurnInput::ChannelOpened, 0);
        conversation
            .at(50)
            .server(&session_updated_with_transcription());
        conversation.sent();
        conversation.audio();
        conversation.hints();
        conversation.events();
        conversation
    }

    pub fn at(&mut self, now_ms: u64) -> &mut Self {
        self.now_ms = now_ms;
        self
    }

    pub fn key_down(&mut self) -> &mut Self {
        self.controller
            .handle_input(TurnInput::KeyDown, self.now_ms);
        self
    }

    pub fn key_up(&mut self) -> &mut Self {
        self.controller.handle_input(TurnInput::KeyUp, self.now_ms);
        self
    }

    /// The user types `text` (and sends it) at the current time.
    pub fn types(&mut self, text: &str) -> &mut Self {
        self.sends(&walkie_session::turn::UserMessage::text(text))
    }

    /// The user sends `message` (text, pictures or both) at the current time.
    pub fn sends(&mut self, message: &walkie_session::turn::UserMessage) -> &mut Self {
        let now = self.now_ms;
        self.controller
            .handle_input(TurnInput::UserMessage(message.clone()), now);
        self
    }

    /// The user takes the press under way back (Escape) at `now_ms`: the user part it had
    /// opened, as the controller names it.
    pub fn cancel_press_at(&mut self, now_ms: u64) -> Option<PartIndex> {
        self.controller.handle_input(TurnInput::CancelPress, now_ms);
        let cancelled = std::mem::take(&mut self.poll().cancelled_parts);
        assert!(
            cancelled.len() <= 1,
            "one press opens one part: {cancelled:?}"
        );
        cancelled.into_iter().next()
    }

    /// How many typed messages went out since the last call.
    pub fn messages_sent(&mut self) -> usize {
        std::mem::take(&mut self.poll().messages_sent)
    }

    pub fn tick(&mut self) -> &mut Self {
        self.controller.handle_input(TurnInput::Tick, self.now_ms);
        self
    }

    /// One data-channel message.
    pub fn server(&mut self, text: &str) -> &mut Self {
        self.controller
            .handle_input(TurnInput::ServerText(text.to_owned()), self.now_ms);
        self
    }

    /// Several messages, one per line (`#` lines are annotations).
    pub fn server_lines(&mut self, lines: &str) -> &mut Self {
        for line in lines
            .lines()
            .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        {
            self.server(line);
        }
        self
    }

    /// The controller's outputs since the last call, in the order it gave them.
    pub fn outputs(&mut self) -> Vec<ControllerOutput> {
        let outputs: Vec<ControllerOutput> =
            std::iter::from_fn(|| self.controller.poll_output()).collect();
        for output in &outputs {
            if let ControllerOutput::Send(event) = output {
                self.check_id(event);
            }
        }
        outputs
    }

    fn poll(&mut self) -> &mut Polled {
        while let Some(output) = self.controller.poll_output() {
            match output {
                ControllerOutput::Send(event) => {
                    self.check_id(&event);
                    self.polled.sent.push(event)
                }
                ControllerOutput::Audio(command) => self.polled.audio.push(command),
                ControllerOutput::TurnState(state) => self.polled.turn_states.push(state),
                ControllerOutput::ReplyAudio(reply_audio) => {
                    self.polled.reply_audio.push(reply_audio)
                }
                ControllerOutput::Hint(hint) => self.polled.hints.push(hint),
                ControllerOutput::Diagnostic(diagnostic) => {
                    self.polled.diagnostics.push(diagnostic)
                }
                ControllerOutput::Billed(usage) => self.polled.billed.push(usage),
                ControllerOutput::ToolCall(request) => self.polled.tool_calls.push(request),
                ControllerOutput::Transcribed(usage) => self.polled.transcribed.push(usage),
                ControllerOutput::RateLimits(limits) => self.polled.rate_limits.push(limits),
                ControllerOutput::PressCancelled(part) => self.polled.cancelled_parts.push(part),
                ControllerOutput::MessageSent => self.polled.messages_sent += 1,
                ControllerOutput::AsideAnswered { purpose, text } => {
                    self.polled.asides.push((purpose, Ok(text)))
                }
                ControllerOutput::AsideFailed {
                    purpose, reason, ..
                } => self.polled.asides.push((purpose, Err(reason))),
                ControllerOutput::SessionTime { .. } => {
                    panic!("the Realtime controller reports tokens, never session time")
                }
            }
        }
        &mut self.polled
    }

    /// Remembers a client event's id, which must be new to the conversation.
    fn check_id(&mut self, event: &OutgoingEvent) {
        let event_type = event.event.event_type();
        assert!(
            !event.event_id.is_empty(),
            "{event_type} was sent without an id"
        );
        if let Some((_, earlier)) = self.sent_ids.iter().find(|(id, _)| *id == event.event_id) {
            panic!(
                "{event_type} was sent under {}, the id of an earlier {earlier}",
                event.event_id
            );
        }
        self.sent_ids.push((event.event_id.clone(), event_type));
    }

    /// Everything sent since the last call, as JSON without the `event_id` (each event's id is
    /// checked as it is read, and the wire text must carry it; see [`Self::sent_id`]).
    pub fn sent(&mut self) -> Vec<Value> {
        std::mem::take(&mut self.poll().sent)
            .iter()
            .map(|event| {
                let mut json: Value =
                    serde_json::from_str(&event.to_json()).expect("client events are JSON");
                let on_the_wire = json
                    .as_object_mut()
                    .expect("client events are JSON objects")
                    .remove("event_id");
                assert_eq!(
                    on_the_wire,
                    Some(json!(event.event_id)),
                    "the wire text carries the event's id"
                );
                json
            })
            .collect()
    }

    /// The id of the last client event of this type sent so far (read back or not yet).
    pub fn sent_id(&mut self, event_type: &str) -> String {
        self.last_sent_id(event_type).unwrap_or_else(|| {
            panic!(
                "no {event_type} was sent; the controller sent {:?}",
                self.sent_ids.iter().map(|(_, t)| t).collect::<Vec<_>>()
            )
        })
    }

    /// As [`Self::sent_id`], or `None` while no event of this type was sent.
    pub fn last_sent_id(&mut self, event_type: &str) -> Option<String> {
        self.poll();
        self.sent_ids
            .iter()
            .rev()
            .find(|(_, t)| *t == event_type)
            .map(|(id, _)| id.clone())
    }

    pub fn audio(&mut self) -> Vec<AudioCommand> {
        std::mem::take(&mut self.poll().audio)
    }

    /// What the audio driver was told to do with the reply audio it decodes, since the last
    /// look.
    pub fn reply_audio(&mut self) -> Vec<walkie_session::turn::ReplyAudio> {
        std::mem::take(&mut self.poll().reply_audio)
    }

    /// Where the turn stood each time it changed since the last look.
    pub fn turn_states(&mut self) -> Vec<walkie_session::turn::TurnState> {
        std::mem::take(&mut self.poll().turn_states)
    }

    pub fn hints(&mut self) -> Vec<UiHint> {
        std::mem::take(&mut self.poll().hints)
    }

    pub fn diagnostics(&mut self) -> Vec<Diagnostic> {
        std::mem::take(&mut self.poll().diagnostics)
    }

    /// What responses were billed since the last call, in order.
    pub fn billed(&mut self) -> Vec<walkie_openai::Usage> {
        std::mem::take(&mut self.poll().billed)
    }

    /// What transcriptions were billed since the last call, in order.
    pub fn transcribed(&mut self) -> Vec<walkie_openai::TranscriptionUsage> {
        std::mem::take(&mut self.poll().transcribed)
    }

    /// The rate limits the provider reported since the last call, in order.
    pub fn rate_limits(&mut self) -> Vec<Vec<walkie_openai::RateLimit>> {
        std::mem::take(&mut self.poll().rate_limits)
    }

    /// Session events since the last call, with the time each was stamped with.
    pub fn stamped_events(&mut self) -> Vec<(u64, SessionEvent)> {
        let mut events = Vec::new();
        while let Some(delivery) = self
            .controller
            .session_mut()
            .poll_event(&self.iterator)
            .expect("the test's iterator stays active")
        {
            match delivery {
                Delivery::Event(stamped) => events.push((stamped.at_ms, stamped.event)),
                Delivery::Failure(stamped) => self.failures.push(stamped.failure),
            }
        }
        events
    }

    /// Session events since the last call.
    pub fn events(&mut self) -> Vec<SessionEvent> {
        self.stamped_events().into_iter().map(|(_, e)| e).collect()
    }

    /// Failures delivered so far.
    pub fn failures(&mut self) -> Vec<SessionFailure> {
        self.stamped_events();
        std::mem::take(&mut self.failures)
    }

    /// Hold the key from `down_ms` to `up_ms` and let the tail run out.
    pub fn utterance(&mut self, down_ms: u64, up_ms: u64) -> &mut Self {
        self.at(down_ms).key_down();
        self.at(up_ms).key_up();
        self.at(up_ms + 200).tick()
    }

    pub fn set_wall_clock(&mut self, clock: WallClock) -> &mut Self {
        self.controller
            .handle_input(TurnInput::WallClock(clock), self.now_ms);
        self
    }
}

pub fn server_vad(interrupt_response: Option<bool>) -> TurnDetection {
    TurnDetection::ServerVad {
        threshold: None,
        prefix_padding_ms: None,
        silence_duration_ms: None,
        idle_timeout_ms: None,
        create_response: None,
        interrupt_response,
    }
}

// ---------------------------------------------------------------------------------------------
// Server events (GA shapes)
// ---------------------------------------------------------------------------------------------

pub fn session_updated_with_transcription() -> String {
    json!({"type": "session.updated", "event_id": "event_S1", "session": {
        "type": "realtime", "object": "realtime.session", "id": "sess_1",
        "audio": {"input": {"transcription": {"model": "gpt-4o-mini-transcribe"}, "turn_detection": null}}}})
    .to_string()
}

pub fn response_created(response_id: &str) -> String {
    json!({"type": "response.created", "event_id": "event_rc", "response": {
        "object": "realtime.response", "id": response_id, "status": "in_progress", "output": []}})
    .to_string()
}

pub fn response_done(response_id: &str, status: &str) -> String {
    let details = match status {
        "cancelled" => json!({"type": "cancelled", "reason": "client_cancelled"}),
        _ => Value::Null,
    };
    json!({"type": "response.done", "event_id": "event_rd", "response": {
        "object": "realtime.response", "id": response_id, "status": status,
        "status_details": details, "output": []}})
    .to_string()
}

pub fn audio_part_added(response_id: &str, item_id: &str) -> String {
    json!({"type": "response.content_part.added", "event_id": "event_cp", "response_id": response_id,
        "item_id": item_id, "output_index": 0, "content_index": 0, "part": {"type": "audio", "transcript": ""}})
    .to_string()
}

pub fn output_started(response_id: &str) -> String {
    json!({"type": "output_audio_buffer.started", "event_id": "event_os", "response_id": response_id})
        .to_string()
}

pub fn output_stopped(response_id: &str) -> String {
    json!({"type": "output_audio_buffer.stopped", "event_id": "event_ot", "response_id": response_id})
        .to_string()
}

pub fn output_cleared(response_id: &str) -> String {
    json!({"type": "output_audio_buffer.cleared", "event_id": "event_oc", "response_id": response_id})
        .to_string()
}

pub fn assistant_says(response_id: &str, item_id: &str, delta: &str) -> String {
    json!({"type": "response.output_audio_transcript.delta", "event_id": "event_td",
        "response_id": response_id, "item_id": item_id, "output_index": 0, "content_index": 0, "delta": delta})
    .to_string()
}

pub fn assistant_audio_b64(response_id: &str, item_id: &str, samples: &[i16]) -> String {
    use base64::Engine as _;
    let bytes: Vec<u8> = samples.iter().flat_map(|s| s.to_le_bytes()).collect();
    json!({"type": "response.output_audio.delta", "event_id": "event_ad",
        "response_id": response_id, "item_id": item_id, "output_index": 0, "content_index": 0,
        "delta": base64::engine::general_purpose::STANDARD.encode(bytes)})
    .to_string()
}

pub fn committed(item_id: &str) -> String {
    json!({"type": "input_audio_buffer.committed", "event_id": "event_cm", "previous_item_id": null, "item_id": item_id})
        .to_string()
}

pub fn user_said(item_id: &str, delta: &str) -> String {
    json!({"type": "conversation.item.input_audio_transcription.delta", "event_id": "event_ud",
        "item_id": item_id, "content_index": 0, "delta": delta})
    .to_string()
}

pub fn user_transcript_completed(item_id: &str, transcript: &str) -> String {
    json!({"type": "conversation.item.input_audio_transcription.completed", "event_id": "event_uc",
        "item_id": item_id, "content_index": 0, "transcript": transcript})
    .to_string()
}

pub fn user_transcription_failed(item_id: &str) -> String {
    json!({"type": "conversation.item.input_audio_transcription.failed", "event_id": "event_uf",
        "item_id": item_id, "content_index": 0, "error": {"type": "transcription_error",
        "code": "audio_unintelligible", "message": "Audio could not be transcribed"}})
    .to_string()
}

pub fn speech_started(item_id: &str, audio_start_ms: u64) -> String {
    json!({"type": "input_audio_buffer.speech_started", "event_id": "event_ss",
        "audio_start_ms": audio_start_ms, "item_id": item_id})
    .to_string()
}

pub fn speech_stopped(item_id: &str, audio_end_ms: u64) -> String {
    json!({"type": "input_audio_buffer.speech_stopped", "event_id": "event_st",
        "audio_end_ms": audio_end_ms, "item_id": item_id})
    .to_string()
}

pub fn server_error(code: &str, message: &str, event_id: Option<&str>) -> String {
    json!({"type": "error", "event_id": "event_err", "error": {
        "type": "invalid_request_error", "code": code, "message": message, "param": null, "event_id": event_id}})
    .to_string()
}

pub fn function_call_added(response_id: &str, item_id: &str, call_id: &str, name: &str) -> String {
    json!({"type": "response.output_item.added", "event_id": "event_fa", "response_id": response_id,
        "output_index": 0, "item": {"id": item_id, "object": "realtime.item", "type": "function_call",
        "status": "in_progress", "call_id": call_id, "name": name, "arguments": ""}})
    .to_string()
}

pub fn function_arguments_delta(
    response_id: &str,
    item_id: &str,
    call_id: &str,
    delta: &str,
) -> String {
    json!({"type": "response.function_call_arguments.delta", "event_id": "event_fd",
        "response_id": response_id, "item_id": item_id, "output_index": 0, "call_id": call_id, "delta": delta})
    .to_string()
}

pub fn function_arguments_done(
    response_id: &str,
    item_id: &str,
    call_id: &str,
    name: &str,
    arguments: &str,
) -> String {
    json!({"type": "response.function_call_arguments.done", "event_id": "event_fz",
        "response_id": response_id, "item_id": item_id, "output_index": 0, "call_id": call_id,
        "name": name, "arguments": arguments})
    .to_string()
}

// ---------------------------------------------------------------------------------------------
// Expected client events
// ---------------------------------------------------------------------------------------------

// As `Conversation::sent` reads them back: without the `event_id`.

pub fn clear_input() -> Value {
    json!({"type": "input_audio_buffer.clear"})
}

pub fn commit() -> Value {
    json!({"type": "input_audio_buffer.commit"})
}

pub fn create_response() -> Value {
    json!({"type": "response.create"})
}

pub fn cancel_response(response_id: &str) -> Value {
    json!({"type": "response.cancel", "response_id": response_id})
}

pub fn clear_output() -> Value {
    json!({"type": "output_audio_buffer.clear"})
}

// ---------------------------------------------------------------------------------------------
// Expected session events
// ---------------------------------------------------------------------------------------------

pub fn user_speech_starts(item_id: Option<&str>) -> SessionEvent {
    SessionEvent::InputSpeechStart(Box::new(RealtimeInputSpeechStartEvent {
        item_id: item_id.map(str::to_owned),
    }))
}

pub fn user_speech_ends(item_id: Option<&str>) -> SessionEvent {
    SessionEvent::InputSpeechEnd(Box::new(RealtimeInputSpeechEndEvent {
        item_id: item_id.map(str::to_owned),
    }))
}

pub fn part_starts(index: u32, part: Part) -> SessionEvent {
    SessionEvent::PartStart(PartStartEvent {
        index: PartIndex(index),
        part,
    })
}

pub fn speech_starts(index: u32, speaker: Speaker) -> SessionEvent {
    part_starts(index, Part::speech(speaker))
}

pub fn transcript(index: u32, speaker: Speaker, appended: &str, whole: &str) -> SessionEvent {
    SessionEvent::PartDelta(PartDeltaEvent {
        index: PartIndex(index),
        delta: PartDelta::transcript(speaker, Arc::from(appended), Arc::from(whole)),
    })
}

pub fn speech_ends(
    index: u32,
    speaker: Speaker,
    final_transcript: Option<&str>,
    interrupted_at_ms: Option<u64>,
) -> SessionEvent {
    SessionEvent::PartEnd(PartEndEvent {
        index: PartIndex(index),
        part: Part::Speech(SpeechPart {
            speaker,
            transcript: final_transcript.map(Arc::from),
            audio: None,
            interrupted_at_ms,
        }),
    })
}

pub fn recoverable_error(message: &str, error_type: &str, code: &str) -> SessionEvent {
    SessionEvent::SessionError(Box::new(RealtimeSessionErrorEvent {
        message: message.to_owned(),
        error_type: Some(error_type.to_owned()),
        code: Some(code.to_owned()),
        recoverable: true,
    }))
}

/// No client events (an empty list with its type spelled out for `assert_eq!`).
pub fn nothing_sent() -> Vec<Value> {
    Vec::new()
}
