//! Message id → slot lookup, tuned for how text messages arrive: runs of CONTENT events for the
//! same id. The last id looked up is remembered, so a run of deltas costs a short string compare
//! instead of a hash per event; otherwise a fast (foldhash, randomly seeded) hash map answers.
//! Remembering copies the id into a reused buffer, so it allocates only while ids grow longer.

use std::collections::HashMap;

#[derive(Debug, Clone, Default)]
pub(crate) struct IdIndex {
    slots: HashMap<String, usize, foldhash::fast::RandomState>,
    recent_id: String,
    /// The slot of `recent_id`, or `None` when nothing is remembered.
    recent_slot: Option<usize>,
}

impl IdIndex {
    pub(crate) fn get(&mut self, id: &str) -> Option<usize> {
        if let Some(slot) = self.recent_slot
            && self.recent_id == id
        {
            return Some(slot);
        }
        let slot = *self.slots.get(id)?;
        self.remember(id, slot);
        Some(slot)
    }

    /// Looks up without remembering (for `&self` callers).
    pub(crate) fn peek(&self, id: &str) -> Option<usize> {
        self.slots.get(id).copied()
    }

    pub(crate) fn insert(&mut self, id: &str, slot: usize) {
        self.slots.insert(id.to_owned(), slot);
        self.remember(id, slot);
    }

    pub(crate) fn clear(&mut self) {
        self.slots.clear();
        self.recent_slot = None;
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = (&str, usize)> {
        self.slots.iter().map(|(id, &slot)| (id.as_str(), slot))
    }

    fn remember(&mut self, id: &str, slot: usize) {
        self.recent_id.clear();
        self.recent_id.push_str(id);
        self.recent_slot = Some(slot);
    }
}
