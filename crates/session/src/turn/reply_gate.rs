//! The audio driver's side of [`ReplyAudio`](super::ReplyAudio): what becomes of each frame of
//! reply audio it decodes.
//!
//! Why a part of its own: the engine's downlink plays decoded frames without asking the app,
//! so the rule it applies must be the controller's word exactly; kept pure here, the downlink
//! and the tests that replay a conversation's outputs (to know what the speaker played) apply
//! the same rule.

use std::sync::Arc;

use crate::audio::AudioChunk;
use crate::turn::controller::is_sounding;
use crate::turn::output::ReplyGate;

/// See the module documentation. Flushes are counted in epochs: a word told before the latest
/// flush gives way to it, since a flush drops the reply audio decoded after it.
#[derive(Debug, Clone, Default)]
pub struct DecodedReplyAudio {
    gate: ReplyGate,
    item: Option<Arc<str>>,
    told_in_epoch: u64,
    /// Under [`ReplyGate::FromSound`]: the reply has sounded, so everything is played.
    sounded: bool,
}

impl DecodedReplyAudio {
    /// The controller's latest word, given while the flush epoch stood at `told_in_epoch`; the
    /// epoch stands at `flush_epoch` now.
    pub fn tell(
        &mut self,
        gate: ReplyGate,
        item: Option<Arc<str>>,
        told_in_epoch: u64,
        flush_epoch: u64,
    ) {
        if gate != ReplyGate::FromSound || self.gate_now(flush_epoch) != ReplyGate::FromSound {
            // A new wait for sound; a renamed item keeps what it heard.
            self.sounded = false;
        }
        self.gate = gate;
        self.item = item;
        self.told_in_epoch = told_in_epoch;
    }

    /// What is done with reply audio decoded now: the word told, unless a flush came after it.
    pub fn gate_now(&self, flush_epoch: u64) -> ReplyGate {
        if self.told_in_epoch < flush_epoch {
            ReplyGate::Drop
        } else {
            self.gate
        }
    }

    /// Whether a frame decoded now is played ([`Self::item`] says against which item it counts).
    pub fn admit(&mut self, chunk: &AudioChunk, flush_epoch: u64) -> bool {
        match self.gate_now(flush_epoch) {
            ReplyGate::Drop => false,
            ReplyGate::FromSound if !self.sounded => {
                self.sounded = is_sounding(chunk);
                self.sounded
            }
            ReplyGate::FromSound | ReplyGate::Play => true,
        }
    }

    /// The item what is played counts against, when named.
    pub fn item(&self) -> Option<&Arc<str>> {
        self.item.as_ref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn silence() -> AudioChunk {
        AudioChunk::from_samples(vec![0; 960])
    }

    fn sound() -> AudioChunk {
        AudioChunk::from_samples(vec![1_000; 960])
    }

    #[test]
    fn between_replies_silence_is_skipped_and_the_reply_plays_whole_from_its_first_sound() {
        let mut decoded = DecodedReplyAudio::default();
        assert!(!decoded.admit(&silence(), 0));
        assert!(decoded.admit(&sound(), 0));
        assert!(
            decoded.admit(&silence(), 0),
            "a pause inside the reply plays"
        );
    }

    #[test]
    fn naming_the_item_keeps_a_reply_that_has_sounded_playing_and_a_new_wait_starts_over() {
        let mut decoded = DecodedReplyAudio::default();
        assert!(decoded.admit(&sound(), 0));
        decoded.tell(ReplyGate::FromSound, Some(Arc::from("item_A")), 0, 0);
        assert!(decoded.admit(&silence(), 0));
        assert_eq!(decoded.item().map(|item| &**item), Some("item_A"));
        decoded.tell(ReplyGate::Play, Some(Arc::from("item_A")), 0, 0);
        decoded.tell(ReplyGate::FromSound, None, 0, 0);
        assert!(
            !decoded.admit(&silence(), 0),
            "the reply is over: silence waits again"
        );
    }

    #[test]
    fn a_flush_drops_what_is_decoded_after_it_until_a_later_word() {
        let mut decoded = DecodedReplyAudio::default();
        decoded.tell(ReplyGate::Play, Some(Arc::from("item_A")), 0, 0);
        assert!(!decoded.admit(&sound(), 1), "flushed after the word");
        // A word told before the flush but taken after it gives way to the flush too.
        decoded.tell(ReplyGate::Play, Some(Arc::from("item_A")), 0, 1);
        assert!(!decoded.admit(&sound(), 1));
        decoded.tell(ReplyGate::FromSound, Some(Arc::from("item_B")), 1, 1);
        assert!(!decoded.admit(&silence(), 1));
        assert!(decoded.admit(&sound(), 1));
    }

    #[test]
    fn a_cut_reply_is_not_played_at_all() {
        let mut decoded = DecodedReplyAudio::default();
        decoded.tell(ReplyGate::Drop, None, 0, 0);
        assert!(!decoded.admit(&sound(), 0));
        assert!(!decoded.admit(&silence(), 0));
    }
}
