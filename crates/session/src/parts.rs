//! Open-part bookkeeping: which part indices are open, what each has accumulated, and which were
//! cut loose by eviction.
//!
//! Why it exists: the ordering rule "start before its deltas before its end, per index" needs the
//! set of open indices; the session closes open assistant parts itself at a response terminal, so it
//! needs their running transcript (and retained audio); and the late-iterator rule "dropping a
//! part's start suppresses the rest of that part" needs a per-part flag that outlives the evicted
//! start. Indices are handed out monotonically, so the open set is a vector kept sorted by index.

use std::sync::Arc;

use crate::event::{PartIndex, PartKind, Speaker, ToolCallPart};

/// What an open part has accumulated so far.
#[derive(Debug)]
pub(crate) enum Accumulated {
    Speech {
        speaker: Speaker,
        transcript: Option<Arc<str>>,
        /// Samples kept for the WAV snapshot (only when retention is on for this speaker).
        retained_samples: Option<Vec<i16>>,
    },
    Text {
        content: String,
    },
    ToolCall(Box<ToolCallPart>),
}

impl Accumulated {
    pub(crate) fn kind(&self) -> PartKind {
        match self {
            Accumulated::Speech { .. } => PartKind::Speech,
            Accumulated::Text { .. } => PartKind::Text,
            Accumulated::ToolCall(_) => PartKind::ToolCall,
        }
    }

    pub(crate) fn speaker(&self) -> Option<Speaker> {
        match self {
            Accumulated::Speech { speaker, .. } => Some(*speaker),
            _ => None,
        }
    }
}

#[derive(Debug)]
pub(crate) struct OpenPart {
    pub(crate) index: PartIndex,
    pub(crate) accumulated: Accumulated,
    /// The part's start was evicted while nobody iterated: its later deltas and end are dropped.
    pub(crate) suppressed: bool,
    /// Where playback of this (speech) part was cut, relative to its audio, once interrupted.
    pub(crate) interrupted_at_ms: Option<u64>,
}

/// Where an index stands.
pub(crate) enum Lookup {
    Open(usize),
    NeverStarted,
    Ended,
}

#[derive(Debug, Default)]
pub(crate) struct PartTable {
    open: Vec<OpenPart>,
    next_index: u32,
}

impl PartTable {
    pub(crate) fn next_index(&self) -> PartIndex {
        PartIndex(self.next_index)
    }

    pub(crate) fn lookup(&self, index: PartIndex) -> Lookup {
        if index.0 >= self.next_index {
            return Lookup::NeverStarted;
        }
        match self.open.binary_search_by_key(&index, |p| p.index) {
            Ok(slot) => Lookup::Open(slot),
            Err(_) => Lookup::Ended,
        }
    }

    pub(crate) fn get(&self, slot: usize) -> &OpenPart {
        &self.open[slot]
    }

    pub(crate) fn get_mut(&mut self, slot: usize) -> &mut OpenPart {
        &mut self.open[slot]
    }

    /// Open a part at `index` (the caller checked it is fresh).
    pub(crate) fn open(&mut self, index: PartIndex, accumulated: Accumulated) {
        self.next_index = index.0.saturating_add(1);
        // Indices only grow, so pushing keeps the vector sorted.
        self.open.push(OpenPart {
            index,
            accumulated,
            suppressed: false,
            interrupted_at_ms: None,
        });
    }

    pub(crate) fn close(&mut self, slot: usize) -> OpenPart {
        self.open.remove(slot)
    }

    /// Mark an open part as cut loose; returns whether it was open.
    pub(crate) fn suppress(&mut self, index: PartIndex) -> bool {
        match self.lookup(index) {
            Lookup::Open(slot) => {
                self.open[slot].suppressed = true;
                true
            }
            Lookup::NeverStarted | Lookup::Ended => false,
        }
    }

    /// Indices of open parts of this speaker, oldest first.
    pub(crate) fn open_indices_of(&self, speaker: Speaker) -> impl Iterator<Item = PartIndex> + '_ {
        self.open
            .iter()
            .filter(move |p| match &p.accumulated {
                Accumulated::Speech { speaker: s, .. } => *s == speaker,
                // Text and tool-call parts are the model's.
                Accumulated::Text { .. } | Accumulated::ToolCall(_) => {
                    speaker == Speaker::Assistant
                }
            })
            .map(|p| p.index)
    }

    pub(crate) fn open_count(&self) -> usize {
        self.open.len()
    }
}
