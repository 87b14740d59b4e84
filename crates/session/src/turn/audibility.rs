//! Audibility: what the user hears of the assistant, and what a barge-in cut.
//!
//! Why a part of its own: whether a reply is audible, which item its audio belongs to, how much
//! of it was played, whether its late audio is still awaited, and whether a cut reply's
//! stragglers are to be dropped are facts the protocol mapping and the controller's turn logic
//! both change, and they must change together (a cut reply is inaudible, its audio suppressed,
//! its played time recorded, all at once). Here they change only through the methods below.

use crate::turn::config::LATE_AUDIO_GRACE_MS;

/// What a barge-in cut: how much of the item was played, for `audio_end_ms`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Cut {
    /// The assistant item whose audio was playing, if known.
    pub item_id: Option<String>,
    /// How much of that item the audio driver had played.
    pub played_ms: u64,
}

/// See the module documentation.
#[derive(Debug, Default)]
pub(super) struct Audibility {
    /// The response the user hears now (between output start and end).
    audible: Option<String>,
    /// The reply cut by the last barge-in: its late output start and audio are suppressed.
    cut: Option<String>,
    /// Audio arriving now belongs to a cut reply: dropped until the next reply's audio part.
    suppressed: bool,
    /// `response.done` came while the reply was still audible over WebRTC: its audio outlives
    /// it, so the reply's parts close (and the turn completes) when the audio stops.
    done_deferred: bool,
    /// After `output_audio_buffer.stopped`: the reply ends when this passes with no more audio.
    late_audio_until_ms: Option<u64>,
    /// When the reply's output last showed life (audio, `response.done`, output start).
    output_activity_ms: u64,
    /// The assistant item the current audio belongs to.
    audio_item: Option<String>,
    /// The audio driver's progress: `(item, played_ms)`.
    played: Option<(String, u64)>,
}

impl Audibility {
    /// The response the user hears now.
    pub fn audible(&self) -> Option<&str> {
        self.audible.as_deref()
    }

    /// Whether the user hears the assistant now.
    pub fn is_audible(&self) -> bool {
        self.audible.is_some()
    }

    /// The assistant item the current audio belongs to.
    pub fn audio_item(&self) -> Option<&str> {
        self.audio_item.as_deref()
    }

    /// Whether audio arriving now is to be played (not a cut reply's straggler).
    pub fn admits_audio(&self) -> bool {
        !self.suppressed
    }

    /// Whether this response was cut by the last barge-in.
    pub fn was_cut(&self, response_id: &str) -> bool {
        self.cut.as_deref() == Some(response_id)
    }

    /// When the reply's output last showed life.
    pub fn output_activity_ms(&self) -> u64 {
        self.output_activity_ms
    }

    /// The reply's output shows life (audio, `response.done`).
    pub fn output_active(&mut self, now_ms: u64) {
        self.output_activity_ms = now_ms;
    }

    /// The response became audible.
    pub fn became_audible(&mut self, response_id: String, now_ms: u64) {
        self.audible = Some(response_id);
        self.output_activity_ms = now_ms;
    }

    /// The assistant stopped being audible: nothing is awaited of it any more.
    pub fn became_inaudible(&mut self) {
        self.late_audio_until_ms = None;
        self.audible = None;
        // The next reply's audio is not this item's: until its audio part names its item, its
        // part takes the first item that speaks in it.
        self.audio_item = None;
    }

    /// A reply's audio part begins (`content_part.added` with audio): its audio is played.
    pub fn audio_part_started(&mut self, item_id: String) {
        self.audio_item = Some(item_id);
        self.suppressed = false;
    }

    /// Audio arrived for this item (WebSocket deltas name it).
    pub fn audio_of(&mut self, item_id: String) {
        self.audio_item = Some(item_id);
    }

    /// Audio arrived: a late-audio wait is extended past it.
    pub fn audio_arrived(&mut self, now_ms: u64) {
        if let Some(until_ms) = &mut self.late_audio_until_ms {
            *until_ms = (*until_ms).max(now_ms.saturating_add(LATE_AUDIO_GRACE_MS));
        }
    }

    /// The server sent the reply's last audio: it ends once [`LATE_AUDIO_GRACE_MS`] pass with
    /// no more arriving.
    pub fn await_late_audio(&mut self, now_ms: u64) {
        self.late_audio_until_ms = Some(now_ms.saturating_add(LATE_AUDIO_GRACE_MS));
    }

    /// When the late-audio wait ends, if one runs.
    pub fn late_audio_until_ms(&self) -> Option<u64> {
        self.late_audio_until_ms
    }

    /// The audio driver played `played_ms` of `item_id` so far.
    pub fn played(&mut self, item_id: &str, played_ms: u64) {
        match &mut self.played {
            Some((item, played)) if item == item_id => *played = (*played).max(played_ms),
            _ => self.played = Some((item_id.to_owned(), played_ms)),
        }
    }

    /// A barge-in: the audible reply is cut (its stragglers suppressed) and what was heard of
    /// it is returned; `None` when nothing was audible. The caller then makes it inaudible.
    pub fn cut(&mut self) -> Option<Cut> {
        let response_id = self.audible.clone()?;
        self.cut = Some(response_id);
        self.suppressed = true;
        let played_ms = match (&self.played, &self.audio_item) {
            (Some((item, played_ms)), Some(current)) if item == current => *played_ms,
            _ => 0,
        };
        Some(Cut {
            item_id: self.audio_item.clone(),
            played_ms,
        })
    }

    /// The response cut by the last barge-in is done: it is no longer watched for.
    pub fn forget_cut_if(&mut self, is_done: impl FnOnce(&str) -> bool) {
        if self.cut.as_deref().is_some_and(is_done) {
            self.cut = None;
        }
    }

    /// The reply's `response.done` waits for its audio to stop.
    pub fn defer_done(&mut self) {
        self.done_deferred = true;
    }

    /// Takes the deferred `response.done`, if one waits.
    pub fn take_deferred_done(&mut self) -> bool {
        std::mem::take(&mut self.done_deferred)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cut_reports_what_was_played_of_the_current_item_only() {
        let mut audibility = Audibility::default();
        audibility.audio_part_started("item_a".to_owned());
        audibility.became_audible("resp_a".to_owned(), 10);
        audibility.played("item_a", 400);
        audibility.played("item_a", 300);
        assert_eq!(
            audibility.cut(),
            Some(Cut {
                item_id: Some("item_a".to_owned()),
                played_ms: 400
            })
        );
        assert!(!audibility.admits_audio());
        assert!(audibility.was_cut("resp_a"));

        audibility.became_inaudible();
        audibility.audio_part_started("item_b".to_owned());
        audibility.became_audible("resp_b".to_owned(), 20);
        assert!(audibility.admits_audio());
        assert_eq!(audibility.cut().map(|cut| cut.played_ms), Some(0));
    }

    #[test]
    fn nothing_is_cut_when_nothing_is_audible() {
        let mut audibility = Audibility::default();
        assert_eq!(audibility.cut(), None);
        assert!(audibility.admits_audio());
    }

    #[test]
    fn late_audio_extends_the_wait_and_inaudibility_ends_it() {
        let mut audibility = Audibility::default();
        audibility.became_audible("resp".to_owned(), 0);
        audibility.audio_arrived(50);
        assert_eq!(audibility.late_audio_until_ms(), None);
        audibility.await_late_audio(100);
        audibility.audio_arrived(400);
        assert_eq!(
            audibility.late_audio_until_ms(),
            Some(400 + LATE_AUDIO_GRACE_MS)
        );
        audibility.became_inaudible();
        assert_eq!(audibility.late_audio_until_ms(), None);
        assert!(!audibility.is_audible());
    }

    #[test]
    fn a_deferred_done_is_taken_once() {
        let mut audibility = Audibility::default();
        audibility.defer_done();
        assert!(audibility.take_deferred_done());
        assert!(!audibility.take_deferred_done());
    }
}
