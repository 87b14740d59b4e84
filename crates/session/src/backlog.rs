//! The late-iterator backlog: two bounded rings and an unbounded failure lane, merged by sequence
//! number.
//!
//! Why this shape: while nobody iterates, the session must keep only the latest 512 part deltas and
//! the latest 512 structural events, evicting oldest first, yet deliver what it kept in the original
//! order. A single deque would make "remove the oldest delta" a scan; three FIFO queues make every
//! eviction O(1) at the front, and every event's `seq` restores the global order at delivery (the
//! smallest head wins). Failures live in their own lane because they are never dropped.
//!
//! Eviction of a part's start takes the part with it: its queued deltas and end are removed, and if
//! the part is still open it is marked suppressed so its future deltas and end are dropped at push.
//! A start still queued and already closed implies its end is still queued (delivery and structural
//! eviction are both oldest-first), so the cascade for a closed part scans only the delta-ring prefix
//! older than that end; for a short part that is the front of the ring.

use std::collections::VecDeque;

use crate::error::StampedFailure;
use crate::event::{PartIndex, SessionEvent, StampedEvent};
use crate::parts::PartTable;

/// Drops observed on the session, by cause.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct DropCounters {
    /// Part deltas evicted because the delta ring was full (nobody iterating).
    pub deltas_evicted: u64,
    /// Structural events evicted because the structural ring was full (nobody iterating).
    pub structural_evicted: u64,
    /// Queued deltas and ends removed together with their evicted part start.
    pub dropped_with_evicted_start: u64,
    /// Deltas and ends that arrived for a part whose start had been evicted.
    pub suppressed_after_eviction: u64,
    /// Audio chunks an audio view dropped because it was full.
    pub audio_chunks_dropped: u64,
    /// Transcript items a transcript view dropped because it was full.
    pub transcript_items_dropped: u64,
}

impl DropCounters {
    /// Every event the main stream lost, whatever the cause (views not included).
    pub fn events_dropped(&self) -> u64 {
        self.deltas_evicted
            + self.structural_evicted
            + self.dropped_with_evicted_start
            + self.suppressed_after_eviction
    }
}

/// How much the backlog holds right now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BacklogLen {
    /// Queued part deltas.
    pub deltas: usize,
    /// Queued structural events.
    pub structural: usize,
    /// Parked failures.
    pub failures: usize,
}

impl BacklogLen {
    /// Retained events (failures not included).
    pub fn events(&self) -> usize {
        self.deltas + self.structural
    }
}

/// One item delivered to the iterator.
#[derive(Debug, Clone, PartialEq)]
pub enum Delivery {
    /// An event.
    Event(StampedEvent),
    /// A failure (delivered exactly once).
    Failure(StampedFailure),
}

#[derive(Debug)]
pub(crate) struct Backlog {
    deltas: VecDeque<StampedEvent>,
    structural: VecDeque<StampedEvent>,
    failures: VecDeque<StampedFailure>,
    delta_capacity: usize,
    structural_capacity: usize,
}

impl Backlog {
    pub(crate) fn new(delta_capacity: usize, structural_capacity: usize) -> Self {
        Self {
            // One spare slot: a push precedes the trim that brings the ring back to capacity.
            deltas: VecDeque::with_capacity(delta_capacity + 1),
            structural: VecDeque::with_capacity(structural_capacity + 1),
            failures: VecDeque::new(),
            delta_capacity,
            structural_capacity,
        }
    }

    pub(crate) fn len(&self) -> BacklogLen {
        BacklogLen {
            deltas: self.deltas.len(),
            structural: self.structural.len(),
            failures: self.failures.len(),
        }
    }

    #[inline]
    pub(crate) fn push_event(&mut self, event: StampedEvent) {
        match event.event {
            SessionEvent::PartDelta(_) => self.deltas.push_back(event),
            _ => self.structural.push_back(event),
        }
    }

    pub(crate) fn push_failure(&mut self, failure: StampedFailure) {
        self.failures.push_back(failure);
    }

    /// The oldest item of all three lanes.
    #[inline]
    pub(crate) fn pop(&mut self) -> Option<Delivery> {
        let delta_seq = self.deltas.front().map_or(u64::MAX, |e| e.seq);
        let structural_seq = self.structural.front().map_or(u64::MAX, |e| e.seq);
        let failure_seq = self.failures.front().map_or(u64::MAX, |f| f.seq);
        if failure_seq < delta_seq && failure_seq < structural_seq {
            return self.failures.pop_front().map(Delivery::Failure);
        }
        if delta_seq < structural_seq {
            self.deltas.pop_front().map(Delivery::Event)
        } else {
            self.structural.pop_front().map(Delivery::Event)
        }
    }

    /// Bring both rings back within capacity (only while nobody iterates).
    #[inline]
    pub(crate) fn trim(&mut self, parts: &mut PartTable, counters: &mut DropCounters) {
        while self.deltas.len() > self.delta_capacity {
            self.deltas.pop_front();
            counters.deltas_evicted += 1;
        }
        while self.structural.len() > self.structural_capacity {
            self.evict_oldest_structural(parts, counters);
        }
    }

    #[cold]
    fn evict_oldest_structural(&mut self, parts: &mut PartTable, counters: &mut DropCounters) {
        let Some(evicted) = self.structural.pop_front() else {
            return;
        };
        counters.structural_evicted += 1;
        let SessionEvent::PartStart(start) = &evicted.event else {
            return;
        };
        let index = start.index;
        if parts.suppress(index) {
            // Still open: every queued delta goes, and the rest of the part is suppressed at push.
            counters.dropped_with_evicted_start += self.remove_deltas_of(index, u64::MAX);
            return;
        }
        // Closed: its end is queued; remove it and the deltas older than it.
        let end_position = self
            .structural
            .iter()
            .position(|e| matches!(&e.event, SessionEvent::PartEnd(end) if end.index == index));
        let deltas_before_seq = match end_position.and_then(|at| self.structural.remove(at)) {
            Some(end) => {
                counters.dropped_with_evicted_start += 1;
                end.seq
            }
            None => u64::MAX,
        };
        counters.dropped_with_evicted_start += self.remove_deltas_of(index, deltas_before_seq);
    }

    /// Remove queued deltas of `index` older than `before_seq`; returns how many.
    fn remove_deltas_of(&mut self, index: PartIndex, before_seq: u64) -> u64 {
        let is_of_part =
            |e: &StampedEvent| matches!(&e.event, SessionEvent::PartDelta(d) if d.index == index);
        let mut removed = 0;
        while self.deltas.front().is_some_and(is_of_part) {
            self.deltas.pop_front();
            removed += 1;
        }
        if before_seq == u64::MAX {
            let before = self.deltas.len();
            self.deltas.retain(|e| !is_of_part(e));
            return removed + (before - self.deltas.len()) as u64;
        }
        let mut position = 0;
        while let Some(event) = self.deltas.get(position) {
            if event.seq >= before_seq {
                break;
            }
            if is_of_part(event) {
                self.deltas.remove(position);
                removed += 1;
            } else {
                position += 1;
            }
        }
        removed
    }

    /// Discard every event; failures are returned (they must still be delivered once).
    pub(crate) fn discard_all(&mut self) -> VecDeque<StampedFailure> {
        self.deltas.clear();
        self.structural.clear();
        std::mem::take(&mut self.failures)
    }
}
