//! The `stream_audio()` and `stream_transcripts()` views.
//!
//! Why views: most applications play audio and show transcripts without iterating the session for
//! control flow. A view is fed from the same events as the main stream, at push time, into its own
//! bounded buffer; it neither consumes nor bounds the main stream and does not count as iterating it.
//! A view subscribes when it is first read, so it never replays what happened before, and when full
//! it drops its oldest item (playback must never block the session).
//!
//! The audio view carries only assistant audio deltas: never the WAV snapshot of a finished part, so
//! playing the view plays each sample exactly once.

use std::collections::VecDeque;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::audio::AudioChunk;
use crate::error::ViewError;
use crate::event::{PartIndex, Speaker};

/// Handle of an audio view (see [`crate::Session::stream_audio`]).
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct AudioView {
    pub(crate) id: u32,
}

impl AudioView {
    /// The view's id.
    pub fn id(&self) -> u32 {
        self.id
    }
}

/// Handle of a transcript view (see [`crate::Session::stream_transcripts`]).
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct TranscriptView {
    pub(crate) id: u32,
}

impl TranscriptView {
    /// The view's id.
    pub fn id(&self) -> u32 {
        self.id
    }
}

/// What a transcript view yields.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TranscriptMode {
    /// Every transcript change of both speakers, as it happens.
    Updates,
    /// Each finished speech part with a non-empty transcript. A separate subscription from
    /// updates, so a flood of updates cannot evict a final.
    Finals,
}

/// A transcript change: the appended text and the whole transcript so far (render the latter).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TranscriptUpdate {
    /// The speech part.
    pub index: PartIndex,
    /// Who speaks.
    pub speaker: Speaker,
    /// The appended text; empty on a revision.
    pub delta: Arc<str>,
    /// The whole transcript so far.
    pub transcript: Arc<str>,
}

/// A finished speech part's transcript.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FinalTranscript {
    /// The speech part.
    pub index: PartIndex,
    /// Who spoke.
    pub speaker: Speaker,
    /// The final transcript.
    pub transcript: Arc<str>,
}

/// One item of a transcript view.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum TranscriptItem {
    /// From a speech delta.
    Update(TranscriptUpdate),
    /// From a finished speech part.
    Final(FinalTranscript),
}

#[derive(Debug)]
struct Slot<T> {
    id: u32,
    subscribed: bool,
    capacity: usize,
    buffer: VecDeque<T>,
}

impl<T> Slot<T> {
    fn new(id: u32, capacity: usize) -> Self {
        Self {
            id,
            subscribed: false,
            capacity,
            buffer: VecDeque::new(),
        }
    }

    /// Push, dropping the oldest when full; returns whether something was dropped.
    #[inline]
    fn offer(&mut self, item: T) -> bool {
        let dropped = if self.buffer.len() >= self.capacity {
            self.buffer.pop_front();
            true
        } else {
            false
        };
        if self.capacity > 0 {
            self.buffer.push_back(item);
        }
        dropped || self.capacity == 0
    }

    fn poll(&mut self) -> Option<T> {
        if !self.subscribed {
            // Subscribe on first read: nothing before this moment is replayed.
            self.subscribed = true;
            self.buffer.reserve_exact(self.capacity);
            return None;
        }
        self.buffer.pop_front()
    }
}

#[derive(Debug, Default)]
pub(crate) struct Views {
    audio: Vec<Slot<AudioChunk>>,
    transcripts: Vec<(TranscriptMode, Slot<TranscriptItem>)>,
    /// Ids below this were handed out; a missing one below it was closed.
    next_id: u32,
    /// Fast path: any subscribed audio view at all.
    audio_subscribed: usize,
    updates_subscribed: usize,
    finals_subscribed: usize,
    closed: bool,
}

impl Views {
    pub(crate) fn open_audio(&mut self, capacity: usize) -> AudioView {
        let id = self.take_id();
        if !self.closed {
            self.audio.push(Slot::new(id, capacity));
        }
        AudioView { id }
    }

    pub(crate) fn open_transcripts(
        &mut self,
        mode: TranscriptMode,
        capacity: usize,
    ) -> TranscriptView {
        let id = self.take_id();
        if !self.closed {
            self.transcripts.push((mode, Slot::new(id, capacity)));
        }
        TranscriptView { id }
    }

    fn take_id(&mut self) -> u32 {
        let id = self.next_id;
        self.next_id = self.next_id.wrapping_add(1);
        id
    }

    fn missing(&self, id: u32) -> ViewError {
        if id < self.next_id {
            ViewError::Closed { view: id }
        } else {
            ViewError::Unknown { view: id }
        }
    }

    pub(crate) fn poll_audio(&mut self, view: &AudioView) -> Result<Option<AudioChunk>, ViewError> {
        let missing = self.missing(view.id);
        let slot = self
            .audio
            .iter_mut()
            .find(|s| s.id == view.id)
            .ok_or(missing)?;
        let was_subscribed = slot.subscribed;
        let item = slot.poll();
        if !was_subscribed {
            self.audio_subscribed += 1;
        }
        Ok(item)
    }

    pub(crate) fn poll_transcripts(
        &mut self,
        view: &TranscriptView,
    ) -> Result<Option<TranscriptItem>, ViewError> {
        let missing = self.missing(view.id);
        let (mode, slot) = self
            .transcripts
            .iter_mut()
            .find(|(_, s)| s.id == view.id)
            .ok_or(missing)?;
        let was_subscribed = slot.subscribed;
        let item = slot.poll();
        if !was_subscribed {
            match mode {
                TranscriptMode::Updates => self.updates_subscribed += 1,
                TranscriptMode::Finals => self.finals_subscribed += 1,
            }
        }
        Ok(item)
    }

    pub(crate) fn close_audio(&mut self, view: AudioView) {
        if let Some(at) = self.audio.iter().position(|s| s.id == view.id)
            && self.audio.remove(at).subscribed
        {
            self.audio_subscribed -= 1;
        }
    }

    pub(crate) fn close_transcripts(&mut self, view: TranscriptView) {
        if let Some(at) = self.transcripts.iter().position(|(_, s)| s.id == view.id) {
            let (mode, slot) = self.transcripts.remove(at);
            if slot.subscribed {
                match mode {
                    TranscriptMode::Updates => self.updates_subscribed -= 1,
                    TranscriptMode::Finals => self.finals_subscribed -= 1,
                }
            }
        }
    }

    /// End every view and discard what they hold.
    pub(crate) fn close_all(&mut self) {
        self.audio.clear();
        self.transcripts.clear();
        self.audio_subscribed = 0;
        self.updates_subscribed = 0;
        self.finals_subscribed = 0;
        self.closed = true;
    }

    /// Publish an assistant audio chunk; returns how many chunks views dropped.
    #[inline]
    pub(crate) fn publish_audio(&mut self, chunk: &AudioChunk) -> u64 {
        if self.audio_subscribed == 0 {
            return 0;
        }
        let mut dropped = 0;
        for slot in self.audio.iter_mut().filter(|s| s.subscribed) {
            dropped += u64::from(slot.offer(chunk.clone()));
        }
        dropped
    }

    #[inline]
    pub(crate) fn wants_updates(&self) -> bool {
        self.updates_subscribed > 0
    }

    #[inline]
    pub(crate) fn wants_finals(&self) -> bool {
        self.finals_subscribed > 0
    }

    /// Publish a transcript item to the views of its mode; returns how many items were dropped.
    pub(crate) fn publish_transcript(&mut self, item: &TranscriptItem) -> u64 {
        let mode = match item {
            TranscriptItem::Update(_) => TranscriptMode::Updates,
            TranscriptItem::Final(_) => TranscriptMode::Finals,
        };
        let mut dropped = 0;
        for (_, slot) in self
            .transcripts
            .iter_mut()
            .filter(|(m, s)| *m == mode && s.subscribed)
        {
            dropped += u64::from(slot.offer(item.clone()));
        }
        dropped
    }
}
