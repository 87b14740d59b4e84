//! Item parts: which provider item each open session part belongs to.
//!
//! Why a part of its own: the provider names items (`item_id`), the session numbers parts
//! (`PartIndex`), and the two meet late and out of order — a push-to-talk utterance has a part
//! before the server commits it to an item, a transcript may arrive after its part ended, the
//! assistant's audio may come before its item is named, a function call's name comes in one
//! event and its arguments in another. The binding is kept here, bounded against a provider that
//! invents ids, and changed only through the methods below; opening and ending the session's
//! parts stays with the controller.

use std::collections::VecDeque;

use crate::event::{PartIndex, PartKind};

/// User parts open at once, at most: each waits for its item's transcript (a few at most in
/// any real conversation).
pub const MAX_OPEN_USER_PARTS: usize = 8;

/// Ended user items remembered, so a late duplicate transcript does not open a second part.
const REMEMBERED_ENDED_ITEMS: usize = 64;

/// Function calls whose name is remembered until their arguments come: one or two per reply in
/// any real conversation.
const REMEMBERED_FUNCTION_NAMES: usize = 64;

/// An open user speech part.
#[derive(Debug)]
struct UserPart {
    index: PartIndex,
    /// Known from `speech_started` (hands-free) or `input_audio_buffer.committed` (push-to-talk).
    item_id: Option<String>,
    transcript: String,
    /// The commit this utterance was sent with (push-to-talk), for matching an empty-commit error.
    commit_event_id: Option<String>,
    /// Its transcript met the cap and was cut (told once).
    cut: bool,
}

/// The open assistant part (speech or text): at most one, the model speaks one item at a time.
#[derive(Debug)]
struct AssistantPart {
    index: PartIndex,
    kind: PartKind,
    item_id: Option<String>,
    text: String,
    /// Its text met the cap and was cut (told once).
    cut: bool,
}

/// A user part's place among the open ones (valid until the next change).
pub(super) type UserSlot = usize;

/// See the module documentation.
#[derive(Debug, Default)]
pub(super) struct ItemParts {
    user: Vec<UserPart>,
    ended_user_items: VecDeque<String>,
    assistant: Option<AssistantPart>,
    function_names: VecDeque<(String, String)>,
}

impl ItemParts {
    // ---- user parts ----

    /// Whether the open user parts are at [`MAX_OPEN_USER_PARTS`].
    pub fn user_parts_full(&self) -> bool {
        self.user.len() >= MAX_OPEN_USER_PARTS
    }

    /// A user part opened (for `item_id` when known); its slot.
    pub fn user_opened(&mut self, index: PartIndex, item_id: Option<String>) -> UserSlot {
        self.user.push(UserPart {
            index,
            item_id,
            transcript: String::new(),
            commit_event_id: None,
            cut: false,
        });
        self.user.len() - 1
    }

    /// The user part at `slot` ends: its index, for ending the session's part. Its item is
    /// remembered so that a late duplicate does not reopen it.
    pub fn user_ended(&mut self, slot: UserSlot) -> PartIndex {
        let part = self.user.remove(slot);
        if let Some(item_id) = part.item_id {
            if self.ended_user_items.len() == REMEMBERED_ENDED_ITEMS {
                self.ended_user_items.pop_front();
            }
            self.ended_user_items.push_back(item_id);
        }
        part.index
    }

    /// The open user part of this item.
    pub fn user_slot_of(&self, item_id: &str) -> Option<UserSlot> {
        self.user
            .iter()
            .position(|part| part.item_id.as_deref() == Some(item_id))
    }

    /// Whether this item's user part already ended.
    pub fn user_item_ended(&self, item_id: &str) -> bool {
        self.ended_user_items.iter().any(|ended| ended == item_id)
    }

    /// The part index at `slot`.
    pub fn user_index(&self, slot: UserSlot) -> PartIndex {
        self.user[slot].index
    }

    /// The running transcript of the user part at `slot`.
    pub fn user_transcript(&mut self, slot: UserSlot) -> &mut String {
        &mut self.user[slot].transcript
    }

    /// The user part at `slot` had text cut off: whether that is news (the first cut).
    pub fn user_cut(&mut self, slot: UserSlot) -> bool {
        !std::mem::replace(&mut self.user[slot].cut, true)
    }

    /// The newest press not yet committed (no item, no commit).
    pub fn uncommitted_user_slot(&self) -> Option<UserSlot> {
        self.user
            .iter()
            .rposition(|part| part.item_id.is_none() && part.commit_event_id.is_none())
    }

    /// The newest press not yet committed goes out with this commit.
    pub fn user_committed(&mut self, commit_event_id: &str) {
        if let Some(slot) = self.uncommitted_user_slot() {
            self.user[slot].commit_event_id = Some(commit_event_id.to_owned());
        }
    }

    /// The server committed `item_id`: unless a part already has it, the oldest part without
    /// an item is its utterance.
    pub fn bind_committed_item(&mut self, item_id: &str) {
        if self.user_slot_of(item_id).is_some() {
            return;
        }
        if let Some(part) = self.user.iter_mut().find(|part| part.item_id.is_none()) {
            part.item_id = Some(item_id.to_owned());
        }
    }

    /// The user part sent with this commit (or, failing that, the newest sent with any).
    pub fn user_slot_of_commit(&self, commit_event_id: Option<&str>) -> Option<UserSlot> {
        self.user
            .iter()
            .position(|part| {
                part.commit_event_id.is_some() && part.commit_event_id.as_deref() == commit_event_id
            })
            .or_else(|| {
                self.user
                    .iter()
                    .rposition(|part| part.commit_event_id.is_some())
            })
    }

    // ---- the assistant part ----

    /// The open assistant part if it can carry this item and kind. A part opened without an
    /// item (audio before its `content_part.added`) adopts the first item named for it.
    pub fn assistant_for(&mut self, item_id: Option<&str>, kind: PartKind) -> Option<PartIndex> {
        let part = self.assistant.as_mut()?;
        let same_item = match (&part.item_id, item_id) {
            (Some(open), Some(given)) => open == given,
            _ => true,
        };
        if part.kind != kind || !same_item {
            return None;
        }
        if part.item_id.is_none() {
            part.item_id = item_id.map(str::to_owned);
        }
        Some(part.index)
    }

    /// An assistant part opened.
    pub fn assistant_opened(&mut self, index: PartIndex, kind: PartKind, item_id: Option<&str>) {
        self.assistant = Some(AssistantPart {
            index,
            kind,
            item_id: item_id.map(str::to_owned),
            text: String::new(),
            cut: false,
        });
    }

    /// The open assistant part is no longer tracked: its index, for ending it.
    pub fn assistant_closed(&mut self) -> Option<PartIndex> {
        self.assistant.take().map(|part| part.index)
    }

    /// The open assistant speech part, if the open part is speech.
    pub fn assistant_speech(&self) -> Option<PartIndex> {
        self.assistant
            .as_ref()
            .filter(|part| part.kind == PartKind::Speech)
            .map(|part| part.index)
    }

    /// The open assistant part's running text.
    pub fn assistant_text(&mut self) -> Option<&mut String> {
        self.assistant.as_mut().map(|part| &mut part.text)
    }

    /// The open assistant part had text cut off: whether that is news (the first cut).
    pub fn assistant_cut(&mut self) -> bool {
        self.assistant
            .as_mut()
            .is_some_and(|part| !std::mem::replace(&mut part.cut, true))
    }

    // ---- function calls ----

    /// A function call's item named its function (its arguments come later).
    pub fn function_named(&mut self, call_id: String, name: String) {
        if self.function_names.len() == REMEMBERED_FUNCTION_NAMES {
            self.function_names.pop_front();
        }
        self.function_names.push_back((call_id, name));
    }

    /// The name remembered for this call, taken.
    pub fn take_function_name(&mut self, call_id: &str) -> Option<String> {
        let at = self
            .function_names
            .iter()
            .position(|(id, _)| id == call_id)?;
        self.function_names.remove(at).map(|(_, name)| name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn index(n: u32) -> PartIndex {
        PartIndex(n)
    }

    #[test]
    fn a_committed_item_binds_the_oldest_press_without_one() {
        let mut parts = ItemParts::default();
        parts.user_opened(index(1), None);
        parts.user_opened(index(2), None);
        parts.bind_committed_item("item_a");
        assert_eq!(parts.user_slot_of("item_a"), Some(0));
        parts.bind_committed_item("item_a");
        assert_eq!(parts.user_slot_of("item_a"), Some(0));
        assert_eq!(parts.uncommitted_user_slot(), Some(1));
    }

    #[test]
    fn an_ended_item_is_remembered_within_a_bound() {
        let mut parts = ItemParts::default();
        for n in 0..=REMEMBERED_ENDED_ITEMS as u32 {
            let slot = parts.user_opened(index(n), Some(format!("item_{n}")));
            assert_eq!(parts.user_ended(slot), index(n));
        }
        assert!(!parts.user_item_ended("item_0"));
        assert!(parts.user_item_ended("item_1"));
        assert!(parts.user_item_ended(&format!("item_{REMEMBERED_ENDED_ITEMS}")));
    }

    #[test]
    fn an_empty_commit_finds_the_press_it_was_sent_with() {
        let mut parts = ItemParts::default();
        parts.user_opened(index(1), None);
        parts.user_committed("evt_1");
        parts.user_opened(index(2), None);
        parts.user_committed("evt_2");
        assert_eq!(parts.user_slot_of_commit(Some("evt_1")), Some(0));
        assert_eq!(parts.user_slot_of_commit(Some("evt_unknown")), Some(1));
        assert_eq!(parts.user_slot_of_commit(None), Some(1));
    }

    #[test]
    fn the_assistant_part_adopts_the_first_item_named_and_refuses_another() {
        let mut parts = ItemParts::default();
        parts.assistant_opened(index(3), PartKind::Speech, None);
        assert_eq!(
            parts.assistant_for(Some("item_a"), PartKind::Speech),
            Some(index(3))
        );
        assert_eq!(parts.assistant_for(Some("item_b"), PartKind::Speech), None);
        assert_eq!(parts.assistant_for(Some("item_a"), PartKind::Text), None);
        assert_eq!(parts.assistant_speech(), Some(index(3)));
        assert_eq!(parts.assistant_closed(), Some(index(3)));
        assert_eq!(parts.assistant_speech(), None);
    }

    #[test]
    fn function_names_are_taken_once_and_bounded() {
        let mut parts = ItemParts::default();
        for n in 0..=REMEMBERED_FUNCTION_NAMES {
            parts.function_named(format!("call_{n}"), format!("tool_{n}"));
        }
        assert_eq!(parts.take_function_name("call_0"), None);
        assert_eq!(
            parts.take_function_name("call_1").as_deref(),
            Some("tool_1")
        );
        assert_eq!(parts.take_function_name("call_1"), None);
    }
}
