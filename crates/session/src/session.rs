//! The session: producer inputs in, one ordered event stream and the views out.
//!
//! Why sans-IO: like str0m, the session is a plain state machine. The producer (the protocol
//! mapping of the next issue, or a test script) pushes events with the caller's time; the consumer
//! polls. Nothing here reads a clock, spawns a task or touches a device, so every behaviour is
//! tested deterministically and the same core runs under any async runtime.
//!
//! What the session owns beyond queueing:
//! - the ordering rules (per part: start, deltas, end; tool results answer executing calls;
//!   output speech start and end alternate), enforced with [`PushError`] before anything changes;
//! - turn completion: [`RealtimeTurnCompleteEvent`](SessionEvent::TurnComplete) is emitted only by
//!   [`Session::response_done`], and only when no tool is executing and the finished response did not
//!   call a tool (speech, a tool call and more speech are one turn);
//! - the late-iterator buffer ([`crate::backlog`]) and the views ([`crate::views`]);
//! - output-audio retention: a finished assistant speech part carries the WAV snapshot of its
//!   deltas when retention is on.

use std::sync::Arc;

use crate::audio::{AudioChunk, WavSnapshot};
use crate::backlog::{Backlog, BacklogLen, Delivery, DropCounters};
use crate::error::{
    FailureSource, IterationError, PushError, SessionFailure, StampedFailure, ViewError,
};
use crate::event::{
    FunctionToolCallEvent, FunctionToolResultEvent, Part, PartDelta, PartDeltaEvent, PartEndEvent,
    PartIndex, PartKind, PartStartEvent, SessionEvent, Speaker, SpeechPart, SpeechPartDelta,
    StampedEvent, TextPart,
};
use crate::parts::{Accumulated, Lookup, PartTable};
use crate::views::FinalTranscript;
use crate::views::{
    AudioView, TranscriptItem, TranscriptMode, TranscriptUpdate, TranscriptView, Views,
};

/// Late-iterator ring size for part deltas (spec: 512).
pub const DELTA_RING_CAPACITY: usize = 512;
/// Late-iterator ring size for structural events (spec: 512).
pub const STRUCTURAL_RING_CAPACITY: usize = 512;
/// Chunks an audio view holds before dropping its oldest.
pub const AUDIO_VIEW_CAPACITY: usize = 32;
/// Items a transcript view holds before dropping its oldest.
pub const TRANSCRIPT_VIEW_CAPACITY: usize = 512;
/// Default output sample rate of the realtime providers (PCM16 mono).
pub const DEFAULT_OUTPUT_SAMPLE_RATE_HZ: u32 = 24_000;

/// Session settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionConfig {
    /// Part deltas kept while nobody iterates.
    pub delta_ring_capacity: usize,
    /// Structural events kept while nobody iterates.
    pub structural_ring_capacity: usize,
    /// Chunks each audio view holds.
    pub audio_view_capacity: usize,
    /// Items each transcript view holds.
    pub transcript_view_capacity: usize,
    /// Attach a WAV snapshot of the whole part to each finished assistant speech part.
    pub retain_output_audio: bool,
    /// Sample rate of assistant audio, for the snapshot.
    pub output_sample_rate_hz: u32,
}

impl Default for SessionConfig {
    fn default() -> Self {
        Self {
            delta_ring_capacity: DELTA_RING_CAPACITY,
            structural_ring_capacity: STRUCTURAL_RING_CAPACITY,
            audio_view_capacity: AUDIO_VIEW_CAPACITY,
            transcript_view_capacity: TRANSCRIPT_VIEW_CAPACITY,
            retain_output_audio: false,
            output_sample_rate_hz: DEFAULT_OUTPUT_SAMPLE_RATE_HZ,
        }
    }
}

/// What [`Session::response_done`] decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResponseDone {
    /// The exchange is over: `RealtimeTurnCompleteEvent` was emitted.
    TurnComplete,
    /// More is expected (a tool is executing, or this response called one): no turn completion.
    MoreExpected {
        /// Tool calls still executing.
        executing_tools: usize,
        /// Whether the finished response started a tool call.
        response_called_a_tool: bool,
    },
}

/// The consumer's handle on the main stream while it iterates. Stop it with
/// [`Session::stop_iterating`]; a second concurrent one is refused.
#[derive(Debug, PartialEq, Eq)]
pub struct EventIterator {
    id: u64,
}

impl EventIterator {
    /// This iterator's id.
    pub fn id(&self) -> u64 {
        self.id
    }
}

/// A realtime session's event stream (sans-IO).
#[derive(Debug)]
pub struct Session {
    config: SessionConfig,
    closed: bool,
    next_seq: u64,
    parts: PartTable,
    executing_tools: Vec<String>,
    response_called_a_tool: bool,
    output_audible: bool,
    backlog: Backlog,
    active_iterator: Option<u64>,
    next_iterator_id: u64,
    views: Views,
    counters: DropCounters,
    #[cfg(feature = "stream")]
    pub(crate) iterator_waker: Option<std::task::Waker>,
}

impl Default for Session {
    fn default() -> Self {
        Self::new(SessionConfig::default())
    }
}

impl Session {
    /// A session with these settings.
    pub fn new(config: SessionConfig) -> Self {
        let backlog = Backlog::new(config.delta_ring_capacity, config.structural_ring_capacity);
        Self {
            config,
            closed: false,
            next_seq: 0,
            parts: PartTable::default(),
            executing_tools: Vec::new(),
            response_called_a_tool: false,
            output_audible: false,
            backlog,
            active_iterator: None,
            next_iterator_id: 0,
            views: Views::default(),
            counters: DropCounters::default(),
            #[cfg(feature = "stream")]
            iterator_waker: None,
        }
    }

    /// The settings.
    pub fn config(&self) -> &SessionConfig {
        &self.config
    }

    // ----------------------------------------------------------------------------------------
    // Producer side
    // ----------------------------------------------------------------------------------------

    /// Start a part at the next free index and emit its `PartStartEvent`.
    pub fn start_part(&mut self, part: Part, now_ms: u64) -> Result<PartIndex, PushError> {
        let index = self.parts.next_index();
        self.push(
            SessionEvent::PartStart(PartStartEvent { index, part }),
            now_ms,
        )?;
        Ok(index)
    }

    /// Emit a delta for an open part.
    #[inline]
    pub fn push_delta(
        &mut self,
        index: PartIndex,
        delta: PartDelta,
        now_ms: u64,
    ) -> Result<(), PushError> {
        self.check_open()?;
        self.accept_delta(PartDeltaEvent { index, delta }, now_ms)
    }

    /// End an open part with what the session accumulated (transcript, text, retained audio).
    pub fn end_part(&mut self, index: PartIndex, now_ms: u64) -> Result<(), PushError> {
        self.check_open()?;
        let slot = match self.parts.lookup(index) {
            Lookup::Open(slot) => slot,
            Lookup::NeverStarted => return Err(PushError::EndBeforeStart { index }),
            Lookup::Ended => return Err(PushError::EndAfterEnd { index }),
        };
        let part = self.final_part(slot);
        self.accept_end(slot, PartEndEvent { index, part }, now_ms);
        Ok(())
    }

    /// Record that playback of an open speech part was cut after `interrupted_at_ms` of its audio
    /// (a barge-in). The part keeps streaming until it ends; its final [`SpeechPart`] then carries
    /// `interrupted_at_ms`. Emits nothing by itself. A second call replaces the first.
    pub fn mark_interrupted(
        &mut self,
        index: PartIndex,
        interrupted_at_ms: u64,
    ) -> Result<(), PushError> {
        self.check_open()?;
        let slot = match self.parts.lookup(index) {
            Lookup::Open(slot) => slot,
            Lookup::NeverStarted => return Err(PushError::InterruptBeforeStart { index }),
            Lookup::Ended => return Err(PushError::InterruptAfterEnd { index }),
        };
        let open = self.parts.get_mut(slot);
        let part_kind = open.accumulated.kind();
        if part_kind != PartKind::Speech {
            return Err(PushError::InterruptNotSpeech { index, part_kind });
        }
        open.interrupted_at_ms = Some(interrupted_at_ms);
        Ok(())
    }

    /// Park a failure for the consumer: never dropped, delivered exactly once (by the iterator, or
    /// returned from [`Session::close`] when nobody took it).
    pub fn park_failure(&mut self, failure: SessionFailure, now_ms: u64) {
        if self.closed {
            return self.closed_failures_sink(failure);
        }
        let seq = self.take_seq();
        self.backlog.push_failure(StampedFailure {
            seq,
            at_ms: now_ms,
            failure,
        });
        self.wake_iterator();
    }

    /// The model finished its response. Closes the response's open parts (the model's: text,
    /// tool-call and assistant speech; user speech keeps going, its transcript may come later), then
    /// emits `RealtimeTurnCompleteEvent` unless a tool is executing or this response called one.
    pub fn response_done(&mut self, now_ms: u64) -> Result<ResponseDone, PushError> {
        self.check_open()?;
        loop {
            let next_open = self.parts.open_indices_of(Speaker::Assistant).next();
            let Some(index) = next_open else { break };
            self.end_part(index, now_ms)?;
        }
        let response_called_a_tool = std::mem::take(&mut self.response_called_a_tool);
        if self.executing_tools.is_empty() && !response_called_a_tool {
            self.enqueue(SessionEvent::TurnComplete, now_ms);
            Ok(ResponseDone::TurnComplete)
        } else {
            Ok(ResponseDone::MoreExpected {
                executing_tools: self.executing_tools.len(),
                response_called_a_tool,
            })
        }
    }

    /// Push any event. Checks the ordering rules first; on error nothing changes.
    ///
    /// A `RealtimeSessionErrorEvent` with `recoverable: false` is not an event: it is parked as a
    /// failure. `RealtimeTurnCompleteEvent` is refused: only [`Session::response_done`] emits it.
    #[inline]
    pub fn push(&mut self, event: SessionEvent, now_ms: u64) -> Result<(), PushError> {
        self.check_open()?;
        match event {
            SessionEvent::PartDelta(delta) => self.accept_delta(delta, now_ms),
            SessionEvent::PartStart(start) => self.accept_start(start, now_ms),
            SessionEvent::PartEnd(end) => {
                let slot = self.check_end(&end)?;
                self.accept_end(slot, end, now_ms);
                Ok(())
            }
            SessionEvent::TurnComplete => Err(PushError::TurnCompleteIsSessionOwned),
            SessionEvent::FunctionToolCall(call) => self.accept_tool_call(call, now_ms),
            SessionEvent::FunctionToolResult(result) => self.accept_tool_result(result, now_ms),
            SessionEvent::OutputSpeechStart => {
                if self.output_audible {
                    return Err(PushError::OutputSpeechAlreadyStarted);
                }
                self.output_audible = true;
                self.enqueue(SessionEvent::OutputSpeechStart, now_ms);
                Ok(())
            }
            SessionEvent::OutputSpeechEnd => {
                if !self.output_audible {
                    return Err(PushError::OutputSpeechEndWithoutStart);
                }
                self.output_audible = false;
                self.enqueue(SessionEvent::OutputSpeechEnd, now_ms);
                Ok(())
            }
            SessionEvent::SessionError(error) if !error.recoverable => {
                let error = *error;
                self.park_failure(
                    SessionFailure {
                        source: FailureSource::FatalProviderError {
                            error_type: error.error_type,
                            code: error.code,
                        },
                        message: error.message,
                    },
                    now_ms,
                );
                Ok(())
            }
            other @ (SessionEvent::DeferredToolRequests(_)
            | SessionEvent::DeferredToolResults(_)
            | SessionEvent::EnqueuedMessages(_)
            | SessionEvent::InputSpeechStart(_)
            | SessionEvent::InputSpeechEnd(_)
            | SessionEvent::ResponseInterrupted
            | SessionEvent::InputTranscriptionError(_)
            | SessionEvent::SessionReconnect(_)
            | SessionEvent::SessionError(_)) => {
                self.enqueue(other, now_ms);
                Ok(())
            }
        }
    }

    fn check_open(&self) -> Result<(), PushError> {
        if self.closed {
            Err(PushError::Closed)
        } else {
            Ok(())
        }
    }

    fn accept_start(&mut self, start: PartStartEvent, now_ms: u64) -> Result<(), PushError> {
        let next_index = self.parts.next_index();
        if start.index < next_index {
            return Err(PushError::PartIndexNotFresh {
                index: start.index,
                next_index,
            });
        }
        let accumulated = match &start.part {
            Part::Speech(speech) => Accumulated::Speech {
                speaker: speech.speaker,
                transcript: speech.transcript.clone(),
                retained_samples: (self.config.retain_output_audio
                    && speech.speaker == Speaker::Assistant)
                    .then(Vec::new),
            },
            Part::Text(text) => Accumulated::Text {
                content: text.content.clone(),
            },
            Part::ToolCall(call) => {
                self.response_called_a_tool = true;
                Accumulated::ToolCall(call.clone())
            }
        };
        self.parts.open(start.index, accumulated);
        self.enqueue(SessionEvent::PartStart(start), now_ms);
        Ok(())
    }

    #[inline]
    fn accept_delta(&mut self, mut delta: PartDeltaEvent, now_ms: u64) -> Result<(), PushError> {
        let index = delta.index;
        let slot = match self.parts.lookup(index) {
            Lookup::Open(slot) => slot,
            Lookup::NeverStarted => return Err(PushError::DeltaBeforeStart { index }),
            Lookup::Ended => return Err(PushError::DeltaAfterEnd { index }),
        };
        let open = self.parts.get_mut(slot);
        let suppressed = open.suppressed;
        match (&mut open.accumulated, &mut delta.delta) {
            (
                Accumulated::Speech {
                    speaker,
                    transcript,
                    retained_samples,
                },
                PartDelta::Speech(speech),
            ) => {
                if speech.speaker != *speaker {
                    return Err(PushError::SpeakerMismatch {
                        index,
                        part_speaker: *speaker,
                        given_speaker: speech.speaker,
                    });
                }
                if speech.audio_chunk.is_none()
                    && speech.transcript.is_none()
                    && speech.transcript_delta.is_none()
                {
                    return Err(PushError::EmptySpeechDelta { index });
                }
                normalise_transcript(transcript, speech);
                if let (Some(samples), Some(chunk)) = (retained_samples, &speech.audio_chunk) {
                    samples.extend_from_slice(chunk.samples());
                }
                let speaker = *speaker;
                self.publish_speech_delta(index, speaker, speech);
            }
            (Accumulated::Text { content }, PartDelta::Text(text)) => {
                content.push_str(&text.content_delta);
            }
            (accumulated, given) => {
                return Err(PushError::DeltaKindMismatch {
                    index,
                    part_kind: accumulated.kind(),
                    delta_kind: given.part_kind(),
                });
            }
        }
        if suppressed {
            self.counters.suppressed_after_eviction += 1;
            return Ok(());
        }
        self.enqueue(SessionEvent::PartDelta(delta), now_ms);
        Ok(())
    }

    #[inline]
    fn publish_speech_delta(
        &mut self,
        index: PartIndex,
        speaker: Speaker,
        speech: &SpeechPartDelta,
    ) {
        if speaker == Speaker::Assistant
            && let Some(chunk) = &speech.audio_chunk
        {
            self.counters.audio_chunks_dropped += self.views.publish_audio(chunk);
        }
        if self.views.wants_updates()
            && let Some(transcript) = &speech.transcript
        {
            let item = TranscriptItem::Update(TranscriptUpdate {
                index,
                speaker,
                delta: speech
                    .transcript_delta
                    .clone()
                    .unwrap_or_else(|| Arc::from("")),
                transcript: transcript.clone(),
            });
            self.counters.transcript_items_dropped += self.views.publish_transcript(&item);
        }
    }

    fn check_end(&self, end: &PartEndEvent) -> Result<usize, PushError> {
        let index = end.index;
        let slot = match self.parts.lookup(index) {
            Lookup::Open(slot) => slot,
            Lookup::NeverStarted => return Err(PushError::EndBeforeStart { index }),
            Lookup::Ended => return Err(PushError::EndAfterEnd { index }),
        };
        let open = self.parts.get(slot);
        let started = open.accumulated.kind();
        let ended = end.part.kind();
        if started != ended {
            return Err(PushError::EndKindMismatch {
                index,
                started,
                ended,
            });
        }
        if let (Some(part_speaker), Part::Speech(speech)) = (open.accumulated.speaker(), &end.part)
            && speech.speaker != part_speaker
        {
            return Err(PushError::SpeakerMismatch {
                index,
                part_speaker,
                given_speaker: speech.speaker,
            });
        }
        Ok(slot)
    }

    /// The final part built from what the open part accumulated.
    fn final_part(&self, slot: usize) -> Part {
        let open = self.parts.get(slot);
        match &open.accumulated {
            Accumulated::Speech {
                speaker,
                transcript,
                ..
            } => Part::Speech(SpeechPart {
                speaker: *speaker,
                transcript: transcript
                    .as_ref()
                    .filter(|t| !t.trim().is_empty())
                    .map(|t| Arc::from(t.trim())),
                audio: None,
                interrupted_at_ms: open.interrupted_at_ms,
            }),
            Accumulated::Text { content } => Part::Text(TextPart {
                content: content.clone(),
            }),
            Accumulated::ToolCall(call) => Part::ToolCall(call.clone()),
        }
    }

    fn accept_end(&mut self, slot: usize, mut end: PartEndEvent, now_ms: u64) {
        let closed = self.parts.close(slot);
        if let (
            Accumulated::Speech {
                retained_samples: Some(samples),
                ..
            },
            Part::Speech(speech),
        ) = (closed.accumulated, &mut end.part)
            && speech.audio.is_none()
        {
            speech.audio = Some(WavSnapshot::new(self.config.output_sample_rate_hz, samples));
        }
        if let Part::Speech(speech) = &end.part
            && self.views.wants_finals()
            && let Some(transcript) = speech.transcript.as_ref().filter(|t| !t.is_empty())
        {
            let item = TranscriptItem::Final(FinalTranscript {
                index: end.index,
                speaker: speech.speaker,
                transcript: transcript.clone(),
            });
            self.counters.transcript_items_dropped += self.views.publish_transcript(&item);
        }
        if closed.suppressed {
            self.counters.suppressed_after_eviction += 1;
            return;
        }
        self.enqueue(SessionEvent::PartEnd(end), now_ms);
    }

    fn accept_tool_call(
        &mut self,
        call: Box<FunctionToolCallEvent>,
        now_ms: u64,
    ) -> Result<(), PushError> {
        let id = &call.part.tool_call_id;
        if self.executing_tools.iter().any(|t| t == id) {
            return Err(PushError::DuplicateToolCall {
                tool_call_id: id.clone(),
            });
        }
        self.executing_tools.push(id.clone());
        self.enqueue(SessionEvent::FunctionToolCall(call), now_ms);
        Ok(())
    }

    fn accept_tool_result(
        &mut self,
        result: Box<FunctionToolResultEvent>,
        now_ms: u64,
    ) -> Result<(), PushError> {
        let id = result.result.tool_call_id();
        let Some(at) = self.executing_tools.iter().position(|t| t == id) else {
            return Err(PushError::ToolResultWithoutCall {
                tool_call_id: id.to_owned(),
            });
        };
        self.executing_tools.remove(at);
        self.enqueue(SessionEvent::FunctionToolResult(result), now_ms);
        Ok(())
    }

    #[inline]
    fn take_seq(&mut self) -> u64 {
        let seq = self.next_seq;
        self.next_seq += 1;
        seq
    }

    #[inline]
    fn enqueue(&mut self, event: SessionEvent, at_ms: u64) {
        let seq = self.take_seq();
        self.backlog.push_event(StampedEvent { seq, at_ms, event });
        if self.active_iterator.is_none() {
            self.backlog.trim(&mut self.parts, &mut self.counters);
        }
        self.wake_iterator();
    }

    #[inline]
    fn wake_iterator(&mut self) {
        #[cfg(feature = "stream")]
        if let Some(waker) = self.iterator_waker.take() {
            waker.wake();
        }
    }

    fn closed_failures_sink(&mut self, failure: SessionFailure) {
        // After close there is no consumer left; keep it so `close` can still hand it over once.
        let seq = self.take_seq();
        self.backlog.push_failure(StampedFailure {
            seq,
            at_ms: 0,
            failure,
        });
    }

    // ----------------------------------------------------------------------------------------
    // Consumer side: the main stream
    // ----------------------------------------------------------------------------------------

    /// Start iterating the main stream. While an iterator is active nothing is dropped; a second
    /// concurrent iterator is an error. A new iterator resumes with whatever was kept.
    pub fn iterate(&mut self) -> Result<EventIterator, IterationError> {
        if self.closed {
            return Err(IterationError::Closed);
        }
        if self.active_iterator.is_some() {
            return Err(IterationError::AlreadyIterating);
        }
        let id = self.next_iterator_id;
        self.next_iterator_id += 1;
        self.active_iterator = Some(id);
        Ok(EventIterator { id })
    }

    /// The next item of the stream, or `None` when nothing is waiting right now.
    #[inline]
    pub fn poll_event(
        &mut self,
        iterator: &EventIterator,
    ) -> Result<Option<Delivery>, IterationError> {
        self.check_iterator(iterator)?;
        Ok(self.backlog.pop())
    }

    /// Stop iterating. The backlog is trimmed to the rings at once.
    pub fn stop_iterating(&mut self, iterator: EventIterator) -> Result<(), IterationError> {
        self.check_iterator(&iterator)?;
        self.active_iterator = None;
        #[cfg(feature = "stream")]
        {
            self.iterator_waker = None;
        }
        self.backlog.trim(&mut self.parts, &mut self.counters);
        Ok(())
    }

    pub(crate) fn check_iterator(&self, iterator: &EventIterator) -> Result<(), IterationError> {
        if self.closed {
            return Err(IterationError::Closed);
        }
        if self.active_iterator != Some(iterator.id) {
            return Err(IterationError::NotActive {
                iterator: iterator.id,
            });
        }
        Ok(())
    }

    /// Whether an iterator is active.
    pub fn is_iterating(&self) -> bool {
        self.active_iterator.is_some()
    }

    // ----------------------------------------------------------------------------------------
    // Consumer side: views
    // ----------------------------------------------------------------------------------------

    /// A bounded view over assistant speech audio deltas. It subscribes when first polled.
    pub fn stream_audio(&mut self) -> AudioView {
        self.views.open_audio(self.config.audio_view_capacity)
    }

    /// The next audio chunk of a view (the first poll subscribes and returns `None`).
    #[inline]
    pub fn poll_audio(&mut self, view: &AudioView) -> Result<Option<AudioChunk>, ViewError> {
        self.views.poll_audio(view)
    }

    /// End an audio view, discarding what it holds.
    pub fn close_audio_view(&mut self, view: AudioView) {
        self.views.close_audio(view);
    }

    /// A bounded view over both speakers' transcripts. It subscribes when first polled.
    pub fn stream_transcripts(&mut self, mode: TranscriptMode) -> TranscriptView {
        self.views
            .open_transcripts(mode, self.config.transcript_view_capacity)
    }

    /// The next transcript item of a view (the first poll subscribes and returns `None`).
    pub fn poll_transcripts(
        &mut self,
        view: &TranscriptView,
    ) -> Result<Option<TranscriptItem>, ViewError> {
        self.views.poll_transcripts(view)
    }

    /// End a transcript view, discarding what it holds.
    pub fn close_transcript_view(&mut self, view: TranscriptView) {
        self.views.close_transcripts(view);
    }

    // ----------------------------------------------------------------------------------------
    // Lifecycle and observation
    // ----------------------------------------------------------------------------------------

    /// Close the session: views end (their items discarded), queued events are discarded, and
    /// every failure nobody received is returned, so each is still delivered exactly once.
    /// Idempotent: a second close returns only failures parked after the first.
    pub fn close(&mut self) -> Vec<SessionFailure> {
        self.closed = true;
        self.active_iterator = None;
        self.views.close_all();
        #[cfg(feature = "stream")]
        if let Some(waker) = self.iterator_waker.take() {
            waker.wake();
        }
        self.backlog
            .discard_all()
            .into_iter()
            .map(|stamped| stamped.failure)
            .collect()
    }

    /// Whether the session was closed.
    pub fn is_closed(&self) -> bool {
        self.closed
    }

    /// Drops so far, by cause.
    pub fn drop_counters(&self) -> DropCounters {
        self.counters
    }

    /// What the backlog holds now.
    pub fn backlog_len(&self) -> BacklogLen {
        self.backlog.len()
    }

    /// Parts open now.
    pub fn open_part_count(&self) -> usize {
        self.parts.open_count()
    }

    /// Whether the assistant is audible (between output speech start and end).
    pub fn is_output_audible(&self) -> bool {
        self.output_audible
    }
}

/// Keep the running transcript and make every transcript delta carry the whole transcript so far.
#[inline]
fn normalise_transcript(running: &mut Option<Arc<str>>, speech: &mut SpeechPartDelta) {
    match (&speech.transcript, &speech.transcript_delta) {
        (Some(whole), _) => *running = Some(whole.clone()),
        (None, Some(appended)) => {
            // Delta-only producer: build the whole transcript (allocates; producers that send the
            // cumulative transcript avoid this).
            let mut whole = running.as_deref().unwrap_or("").to_owned();
            whole.push_str(appended);
            let whole: Arc<str> = Arc::from(whole);
            *running = Some(whole.clone());
            speech.transcript = Some(whole);
        }
        (None, None) => {}
    }
}
