//! The OpenAI Realtime (GA) → session mapping: what each server event does to the turn state and
//! which session events it becomes.
//!
//! Why it lives with the controller: most server events both map to session events and move the
//! turn state (a response becoming active, the assistant becoming audible, a commit failing), and
//! the controller's decisions depend on that state. One `match` over [`ServerEvent`] keeps the
//! mapping table of issue 5 in one place:
//!
//! | server event | session events / effect |
//! |---|---|
//! | `input_audio_buffer.speech_started` / `speech_stopped` | input speech start (+ the user's speech part) / end; a start while audible is a barge-in |
//! | `input_audio_buffer.committed` | binds the push-to-talk utterance to its item |
//! | `output_audio_buffer.started` / `stopped` / `cleared` | output speech start / end |
//! | `…input_audio_transcription.delta` / `completed` | user transcript deltas (keyed by `item_id`) / part end |
//! | `…input_audio_transcription.failed` | user part end, then `RealtimeInputTranscriptionErrorEvent` |
//! | `response.output_audio_transcript.*`, `response.output_text.*` | assistant speech / text parts |
//! | `response.output_audio.delta` | assistant audio deltas (WebSocket; WebRTC audio comes by RTP) |
//! | `response.function_call_arguments.done` | tool-call part, `FunctionToolCall`, local execution, `FunctionToolResult`; `function_call_output` + `response.create` |
//! | `response.done` | cancelled → `RealtimeResponseInterruptedEvent`; parts end; `TurnComplete` unless a tool round goes on; one naming no response ends the active one |
//! | `error` | `RealtimeSessionErrorEvent` naming the failed request (`event_id` and type); recoverable unless its code is on the short fatal list (a parked failure) |
//! | unknown types | ignored, counted, a diagnostic |

use std::sync::Arc;

use serde_json::Value;
use walkie_openai::{
    ClientEvent, ContentPart, ErrorDetail, Item, Response, ResponseStatus, ServerEvent,
    Transcription,
};

use crate::audio::AudioChunk;
use crate::event::{
    DeferredToolRequests, DeferredToolRequestsEvent, PartDelta, PartKind,
    RealtimeInputSpeechEndEvent, RealtimeInputSpeechStartEvent,
    RealtimeInputTranscriptionErrorEvent, RealtimeSessionErrorEvent, SessionEvent, Speaker,
    TextPartDelta, ToolCallPart, ToolOutcome,
};
use crate::turn::config::{Transport, TurnMode};
use crate::turn::controller::TurnController;
use crate::turn::item_parts::UserSlot;
use crate::turn::output::{Diagnostic, ToolCallRequest, UiHint};
use crate::turn::tools::{show_tool_call, tool_answer, tool_result_event};

/// The new text a final transcript adds to what was streamed: `(appended, whole)`. A final text
/// that does not extend the streamed one is a revision: nothing appended, the whole replaced.
fn reconcile(running: &mut String, full: &str) -> Option<(Arc<str>, Arc<str>)> {
    if full == running {
        return None;
    }
    let appended = match full.strip_prefix(running.as_str()) {
        Some(suffix) => Arc::from(suffix),
        None => Arc::from(""),
    };
    running.clear();
    running.push_str(full);
    Some((appended, Arc::from(full)))
}

/// The longest transcript kept of one message, in bytes: far past any spoken reply (an hour
/// of speech is about 60 KB of text), and a bound against a provider that streams without end.
pub const MAX_TRANSCRIPT_BYTES: usize = 256 * 1024;

/// The start of `text` that fits after `kept_bytes` of transcript within
/// [`MAX_TRANSCRIPT_BYTES`], cut on a character boundary.
pub(super) fn fitting(kept_bytes: usize, text: &str) -> &str {
    let room = MAX_TRANSCRIPT_BYTES.saturating_sub(kept_bytes);
    if text.len() <= room {
        return text;
    }
    let mut end = room;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

impl TurnController {
    pub(super) fn map_server_event(&mut self, event: ServerEvent, now_ms: u64) {
        match event {
            ServerEvent::SessionCreated { .. }
            | ServerEvent::InputAudioBufferCleared
            | ServerEvent::ConversationItemAdded { .. }
            | ServerEvent::ConversationItemDone { .. }
            | ServerEvent::ConversationItemTruncated { .. }
            | ServerEvent::ConversationItemDeleted { .. }
            | ServerEvent::ConversationItemRetrieved { .. }
            | ServerEvent::ResponseOutputItemDone { .. }
            | ServerEvent::ResponseContentPartDone { .. }
            | ServerEvent::OutputAudioDone { .. }
            | ServerEvent::FunctionCallArgumentsDelta { .. } => {}
            ServerEvent::RateLimitsUpdated { rate_limits } => self.rate_limits(rate_limits),
            ServerEvent::SessionUpdated { session } => {
                self.lifecycle.set_transcribes(matches!(
                    session.audio.as_ref().and_then(|audio| audio.input.as_ref()),
                    Some(input) if matches!(input.transcription, Some(Some(Transcription { .. })))
                ));
                if !self.lifecycle.is_confirmed() {
                    self.session_confirmed_now();
                }
            }
            ServerEvent::SpeechStarted { item_id, .. } => self.on_speech_started(item_id, now_ms),
            ServerEvent::SpeechStopped { item_id, .. } => {
                if self.is_hands_free("input_audio_buffer.speech_stopped") {
                    self.emit(
                        SessionEvent::InputSpeechEnd(Box::new(RealtimeInputSpeechEndEvent {
                            item_id: Some(item_id),
                        })),
                        now_ms,
                    );
                }
            }
            ServerEvent::InputAudioBufferTimeoutTriggered { .. } => {}
            ServerEvent::InputAudioBufferCommitted { item_id, .. } => {
                self.on_committed(item_id, now_ms)
            }
            ServerEvent::InputTranscriptionDelta { item_id, delta, .. } => {
                self.on_user_transcript(&item_id, &delta, false, now_ms)
            }
            ServerEvent::InputTranscriptionCompleted {
                item_id,
                transcript,
                usage,
                ..
            } => {
                if let Some(usage) = usage {
                    self.transcribed(usage);
                }
                self.on_user_transcript(&item_id, &transcript, true, now_ms)
            }
            ServerEvent::InputTranscriptionFailed {
                item_id,
                content_index,
                error,
            } => self.on_transcription_failed(item_id, content_index, error, now_ms),
            ServerEvent::ResponseCreated { response } => {
                // A new reply begins: the previous one's audio is over whatever it said.
                self.finish_pending_response(now_ms);
                self.on_response_created(response)
            }
            ServerEvent::ResponseDone { response } => self.on_response_done(response, now_ms),
            ServerEvent::ResponseOutputItemAdded { item, .. } => {
                if let Item::FunctionCall { call_id, name, .. } = item {
                    self.parts.function_named(call_id, name);
                }
            }
            ServerEvent::ResponseContentPartAdded {
                response_id,
                item_id,
                part,
                ..
            } => {
                if matches!(part, ContentPart::OutputAudio { .. }) && !self.is_cut(&response_id) {
                    self.audibility.audio_part_started(item_id);
                }
            }
            ServerEvent::OutputAudioTranscriptDelta {
                response_id,
                item_id,
                delta,
                ..
            } => self.on_assistant_text(
                &response_id,
                &item_id,
                &delta,
                PartKind::Speech,
                false,
                now_ms,
            ),
            ServerEvent::OutputAudioTranscriptDone {
                response_id,
                item_id,
                transcript,
                ..
            } => self.on_assistant_text(
                &response_id,
                &item_id,
                &transcript,
                PartKind::Speech,
                true,
                now_ms,
            ),
            ServerEvent::OutputTextDelta {
                response_id,
                item_id,
                delta,
                ..
            } => self.on_assistant_text(
                &response_id,
                &item_id,
                &delta,
                PartKind::Text,
                false,
                now_ms,
            ),
            ServerEvent::OutputTextDone {
                response_id,
                item_id,
                text,
                ..
            } => {
                self.on_assistant_text(&response_id, &item_id, &text, PartKind::Text, true, now_ms)
            }
            ServerEvent::OutputAudioDelta {
                response_id,
                item_id,
                delta,
                ..
            } => self.on_output_audio_delta(&response_id, item_id, &delta, now_ms),
            ServerEvent::FunctionCallArgumentsDone {
                response_id,
                call_id,
                name,
                arguments,
                ..
            } => self.on_function_call(&response_id, call_id, name, arguments, now_ms),
            ServerEvent::OutputAudioBufferStarted { response_id } => {
                if self.is_cut(&response_id) {
                    self.diagnose(Diagnostic::Ignored {
                        event_type: "output_audio_buffer.started".to_owned(),
                        reason: "the response was cut by a barge-in",
                    });
                } else if !self.audibility.is_audible() {
                    self.output_became_audible(response_id, now_ms);
                }
            }
            ServerEvent::OutputAudioBufferStopped { .. } => self.output_stopped(now_ms),
            ServerEvent::OutputAudioBufferCleared { .. } => self.output_became_inaudible(now_ms),
            ServerEvent::Error { error } => self.on_error(error, now_ms),
            ServerEvent::Unknown(unknown) => {
                self.stats.unknown_events += 1;
                self.diagnose(Diagnostic::UnknownServerEvent {
                    event_type: unknown.event_type,
                });
            }
        }
    }

    fn is_hands_free(&mut self, event_type: &str) -> bool {
        if matches!(self.config.mode, TurnMode::HandsFree(_)) {
            return true;
        }
        self.diagnose(Diagnostic::Ignored {
            event_type: event_type.to_owned(),
            reason: "server VAD events are not expected in push-to-talk mode",
        });
        false
    }

    /// A response whose output must not reach the user: cut by a barge-in, or discarded.
    pub(super) fn is_cut(&self, response_id: &str) -> bool {
        self.audibility.was_cut(response_id) || self.responses.is_discarded(response_id)
    }

    fn is_discarded(&self, response_id: &str) -> bool {
        self.responses.is_discarded(response_id)
    }

    // ----------------------------------------------------------------------------------------
    // User side
    // ----------------------------------------------------------------------------------------

    fn on_speech_started(&mut self, item_id: String, now_ms: u64) {
        if !self.is_hands_free("input_audio_buffer.speech_started") {
            return;
        }
        self.utterance_heard();
        self.barge_in(now_ms);
        self.emit(
            SessionEvent::InputSpeechStart(Box::new(RealtimeInputSpeechStartEvent {
                item_id: Some(item_id.clone()),
            })),
            now_ms,
        );
        if self.parts.user_slot_of(&item_id).is_none() {
            self.open_user_part(Some(item_id), now_ms);
        }
    }

    fn on_committed(&mut self, item_id: String, now_ms: u64) {
        self.parts.bind_committed_item(&item_id);
        if !self.lifecycle.transcribes()
            && let Some(slot) = self.parts.user_slot_of(&item_id)
        {
            // No transcript will come: the utterance is complete as audio.
            self.end_user_part(slot, now_ms);
        }
        self.utterance_committed();
    }

    fn user_slot_for(&mut self, item_id: &str, now_ms: u64) -> Option<UserSlot> {
        if let Some(slot) = self.parts.user_slot_of(item_id) {
            return Some(slot);
        }
        if self.parts.user_item_ended(item_id) {
            self.diagnose(Diagnostic::Ignored {
                event_type: "conversation.item.input_audio_transcription".to_owned(),
                reason: "the user's part for this item already ended",
            });
            return None;
        }
        self.open_user_part(Some(item_id.to_owned()), now_ms)
    }

    fn on_user_transcript(&mut self, item_id: &str, text: &str, is_final: bool, now_ms: u64) {
        let Some(slot) = self.user_slot_for(item_id, now_ms) else {
            return;
        };
        let kept_bytes = if is_final {
            0
        } else {
            self.parts.user_transcript(slot).len()
        };
        let fits = fitting(kept_bytes, text);
        if fits.len() < text.len() && self.parts.user_cut(slot) {
            self.transcript_cut(is_final, now_ms);
        }
        let text = fits;
        let index = self.parts.user_index(slot);
        let transcript = self.parts.user_transcript(slot);
        let update = if is_final {
            reconcile(transcript, text)
        } else if text.is_empty() {
            None
        } else {
            transcript.push_str(text);
            Some((Arc::from(text), Arc::from(transcript.as_str())))
        };
        if let Some((appended, whole)) = update
            && let Err(error) = self.session.push_delta(
                index,
                PartDelta::transcript(Speaker::User, appended, whole),
                now_ms,
            )
        {
            self.refused(error);
        }
        if is_final {
            self.end_user_part(slot, now_ms);
        }
    }

    /// A transcript met [`MAX_TRANSCRIPT_BYTES`] and was cut: diagnosed, and told as a
    /// recoverable error (the call goes on). Once per part.
    fn transcript_cut(&mut self, is_final: bool, now_ms: u64) {
        self.diagnose(Diagnostic::Ignored {
            event_type: if is_final {
                "transcript.done"
            } else {
                "transcript.delta"
            }
            .to_owned(),
            reason: "a transcript longer than 256 KiB is cut there",
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

    fn on_transcription_failed(
        &mut self,
        item_id: String,
        content_index: u32,
        error: ErrorDetail,
        now_ms: u64,
    ) {
        let Some(slot) = self.user_slot_for(&item_id, now_ms) else {
            return;
        };
        self.end_user_part(slot, now_ms);
        self.emit(
            SessionEvent::InputTranscriptionError(Box::new(RealtimeInputTranscriptionErrorEvent {
                message: error.message,
                error_type: Some(error.kind),
                code: error.code,
                item_id: Some(item_id),
                content_index: Some(content_index),
            })),
            now_ms,
        );
    }

    // ----------------------------------------------------------------------------------------
    // Assistant side
    // ----------------------------------------------------------------------------------------

    fn on_assistant_text(
        &mut self,
        response_id: &str,
        item_id: &str,
        text: &str,
        kind: PartKind,
        is_final: bool,
        now_ms: u64,
    ) {
        if self.is_discarded(response_id) || (!is_final && text.is_empty()) {
            return;
        }
        let Some(index) = self.assistant_part_for(Some(item_id), kind, now_ms) else {
            return;
        };
        let kept_bytes = match (self.parts.assistant_text(), is_final) {
            (Some(running), false) => running.len(),
            _ => 0,
        };
        let fits = fitting(kept_bytes, text);
        if fits.len() < text.len() && self.parts.assistant_cut() {
            self.transcript_cut(is_final, now_ms);
        }
        let text = fits;
        if !is_final && text.is_empty() {
            return;
        }
        let Some(running) = self.parts.assistant_text() else {
            return;
        };
        let update = if is_final {
            reconcile(running, text)
        } else {
            running.push_str(text);
            Some((Arc::from(text), Arc::from(running.as_str())))
        };
        let Some((appended, whole)) = update else {
            return;
        };
        let delta = match kind {
            PartKind::Text if appended.is_empty() => return,
            PartKind::Text => PartDelta::Text(TextPartDelta {
                content_delta: appended,
            }),
            PartKind::Speech | PartKind::ToolCall => {
                PartDelta::transcript(Speaker::Assistant, appended, whole)
            }
        };
        if let Err(error) = self.session.push_delta(index, delta, now_ms) {
            self.refused(error);
        }
    }

    fn on_output_audio_delta(
        &mut self,
        response_id: &str,
        item_id: String,
        base64_pcm16: &str,
        now_ms: u64,
    ) {
        if self.is_cut(response_id) {
            self.stats.dropped_audio_chunks += 1;
            return;
        }
        use base64::Engine as _;
        let chunk = base64::engine::general_purpose::STANDARD
            .decode(base64_pcm16)
            .map_err(|error| error.to_string())
            .and_then(|bytes| AudioChunk::from_pcm16_le(&bytes).map_err(|e| e.to_string()));
        match chunk {
            Ok(chunk) => {
                self.audibility.audio_of(item_id);
                self.push_assistant_audio(chunk, now_ms);
            }
            Err(reason) => self.emit(
                SessionEvent::SessionError(Box::new(RealtimeSessionErrorEvent {
                    message: format!(
                        "response.output_audio.delta carries no PCM16 audio: {reason}"
                    ),
                    error_type: Some("undecodable_server_event".to_owned()),
                    code: Some("bad_audio".to_owned()),
                    recoverable: true,
                })),
                now_ms,
            ),
        }
    }

    fn on_function_call(
        &mut self,
        response_id: &str,
        call_id: String,
        name: Option<String>,
        arguments: String,
        now_ms: u64,
    ) {
        if self.is_cut(response_id) {
            return self.diagnose(Diagnostic::Ignored {
                event_type: "response.function_call_arguments.done".to_owned(),
                reason: "the response calling the tool was cut; the call is not run",
            });
        }
        let remembered = self.parts.take_function_name(&call_id);
        let tool_name = name.or(remembered).unwrap_or_default();
        self.end_assistant_part(now_ms);
        let call = ToolCallPart {
            tool_name: tool_name.clone(),
            args: arguments.clone(),
            tool_call_id: call_id.clone(),
        };
        let mut refusals = Vec::new();
        let parsed = show_tool_call(&mut self.session, &call, now_ms, &mut refusals);
        refusals.into_iter().for_each(|error| self.refused(error));
        if self.tools.is_outside(&tool_name)
            && let Ok(parsed) = parsed
        {
            // Decided and run by the caller; the reply waits for every such answer.
            self.outside_calls
                .insert(call_id.clone(), tool_name.clone());
            self.emit(
                SessionEvent::DeferredToolRequests(Box::new(DeferredToolRequestsEvent {
                    requests: DeferredToolRequests {
                        approvals: Vec::new(),
                        calls: vec![call],
                    },
                })),
                now_ms,
            );
            self.request_tool_call(ToolCallRequest {
                call_id,
                name: tool_name,
                arguments: parsed,
            });
            return;
        }
        let context = self.tool_context(now_ms);
        let (content, outcome) = tool_answer(self.tools.execute(&tool_name, &arguments, &context));
        self.answer_tool_call(call_id, tool_name, content, outcome, now_ms);
    }

    /// Tells the model what its call of `tool_name` gave (`function_call_output`, and the
    /// session's result event), then asks for the reply once no other call waits and no
    /// response that could still make one is active.
    pub(super) fn answer_tool_call(
        &mut self,
        call_id: String,
        tool_name: String,
        content: Value,
        outcome: ToolOutcome,
        now_ms: u64,
    ) {
        let output = content.to_string();
        self.emit(
            tool_result_event(call_id.clone(), tool_name, content, outcome),
            now_ms,
        );
        self.send(ClientEvent::ConversationItemCreate {
            previous_item_id: None,
            item: Item::function_call_output(call_id, output),
        });
        if !self.outside_calls.is_empty() {
            return;
        }
        if self.responses.can_create() {
            self.request_response();
        } else {
            self.tool_reply_owed = true;
        }
    }

    /// A `response.created` answers the create in flight. One without an id (the SDK makes it
    /// optional) makes the active response one whose id is unknown, kept as `""`.
    fn on_response_created(&mut self, response: Response) {
        if let Some(discarded) = self.responses.created(response.id) {
            // The create that went out with an empty commit: nothing to answer, cancel it.
            self.send(cancel_of(&discarded));
        }
    }

    /// A `response.done` ends the response it names. One active at a time, so a done that names
    /// no response, or a response whose `response.created` named none (an empty id either way),
    /// ends the active one; with none active, it answers the create in flight (whose
    /// `response.created` was lost) so that the next create is not held back.
    pub(super) fn on_response_done(&mut self, response: Response, now_ms: u64) {
        self.audibility.output_active(now_ms);
        // Billed whatever became of it: a response cancelled or discarded was still generated.
        if let Some(usage) = response.usage.clone() {
            self.billed(usage);
        }
        let done = self.responses.done(response.id);
        let id = done.id.clone();
        if !done.discarded {
            match response.status {
                ResponseStatus::Cancelled => {
                    self.emit(SessionEvent::ResponseInterrupted, now_ms);
                }
                ResponseStatus::Failed => {
                    let details = response.status_details.as_ref();
                    let error = details.and_then(|d| d.error.as_ref());
                    let code = error
                        .and_then(|e| e.get("code"))
                        .and_then(|c| c.as_str())
                        .map(str::to_owned);
                    let error_type = error
                        .and_then(|e| e.get("type"))
                        .and_then(|c| c.as_str())
                        .map(str::to_owned);
                    let message = if id.is_empty() {
                        "a response failed".to_owned()
                    } else {
                        format!("response {id} failed")
                    };
                    self.emit(
                        SessionEvent::SessionError(Box::new(RealtimeSessionErrorEvent {
                            message,
                            error_type,
                            code,
                            recoverable: true,
                        })),
                        now_ms,
                    );
                }
                ResponseStatus::InProgress
                | ResponseStatus::Completed
                | ResponseStatus::Incomplete => {}
            }
        }
        if self.config.transport == Transport::WebRtc && self.audibility.is_audible() {
            // Over WebRTC generation runs ahead of playback: the reply's audio keeps arriving
            // after its response.done. Its speech part stays open for that audio, and the
            // turn completes when the audio stops (output_audio_buffer.stopped or .cleared).
            self.audibility.defer_done();
        } else {
            self.finish_response(now_ms);
        }
        self.audibility.forget_cut_if(|cut| done.is(cut));
        self.flush_queued_create();
        if self.tool_reply_owed && self.outside_calls.is_empty() {
            self.tool_reply_owed = false;
            // A create that just went out (the user spoke meanwhile) answers the tools too.
            if self.responses.can_create() {
                self.request_response();
            }
        }
    }

    // ----------------------------------------------------------------------------------------
    // Errors
    // ----------------------------------------------------------------------------------------

    fn on_error(&mut self, error: ErrorDetail, now_ms: u64) {
        let failed_type = error
            .event_id
            .as_deref()
            .and_then(|id| self.sent_event_type(id));
        if let Some(event_id) = &error.event_id {
            self.diagnose(Diagnostic::ClientEventFailed {
                event_id: event_id.clone(),
                event_type: failed_type,
                code: error.code.clone(),
            });
        }
        match error.code.as_deref() {
            Some("input_audio_buffer_commit_empty") => {
                self.on_empty_commit(error.event_id.as_deref(), now_ms)
            }
            // A create raced an active response we had not heard of: ask again after it.
            Some("conversation_already_has_active_response")
                if self
                    .responses
                    .create_crossed_a_response(error.event_id.as_deref()) => {}
            Some("response_cancel_not_active") => self.responses.cancel_refused(),
            _ => self.forget_failed_request(error.event_id.as_deref()),
        }
        let recoverable = error.is_recoverable();
        let message = match (&error.event_id, failed_type) {
            (Some(event_id), Some(event_type)) => {
                format!("{} (answering {event_type} {event_id})", error.message)
            }
            (Some(event_id), None) => format!("{} (answering {event_id})", error.message),
            (None, _) => error.message,
        };
        self.emit(
            SessionEvent::SessionError(Box::new(RealtimeSessionErrorEvent {
                message,
                error_type: Some(error.kind),
                code: error.code,
                recoverable,
            })),
            now_ms,
        );
    }

    /// A request the server refused is not waited for: a refused `response.create` no longer
    /// holds back the next one, a refused `response.cancel` no longer counts as sent.
    fn forget_failed_request(&mut self, event_id: Option<&str>) {
        let Some(event_id) = event_id else {
            return;
        };
        if self.responses.create_refused(event_id) {
            self.flush_queued_create();
        }
        if self.sent_event_type(event_id) == Some("response.cancel") {
            self.responses.cancel_refused();
        }
    }

    /// The server heard nothing: the utterance ends untranscribed, and the response asked for
    /// with it is withdrawn (dropped if still queued, cancelled and hidden if already sent).
    fn on_empty_commit(&mut self, event_id: Option<&str>, now_ms: u64) {
        if let Some(slot) = self.parts.user_slot_of_commit(event_id) {
            self.end_user_part(slot, now_ms);
        }
        self.hint(UiHint::NothingHeard);
        self.responses.commit_was_empty(event_id);
    }
}

/// A `response.cancel` for this response: one whose id is unknown (empty) is cancelled as "the
/// in-progress response", a cancel without `response_id`, rather than by a made-up id.
pub(super) fn cancel_of(response_id: &str) -> ClientEvent {
    ClientEvent::ResponseCancel {
        response_id: (!response_id.is_empty()).then(|| response_id.to_owned()),
    }
}
