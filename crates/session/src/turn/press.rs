//! The press: where the push-to-talk key stands, and the capture it holds open.
//!
//! Why a part of its own: a press is timed (it counts as a turn only after a minimum, longer
//! when it stopped a reply; it is released automatically after a maximum; its tail runs after
//! key-up), and the capture and mic gate it opens are audio commands that must be sent once per
//! change. The timing rules and the once-per-change bookkeeping live here; what a press does
//! to the conversation stays with the controller.

use crate::turn::config::{PressMode, TurnConfig};

/// Where the push-to-talk key stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(super) enum Press {
    #[default]
    Idle,
    /// The key is down (or toggled on). `speech_started`: the press lasted long enough to count,
    /// and the user's speech start was emitted (stamped with `down_at_ms`). `stopped_reply`:
    /// the press cut an audible reply off, so it counts as a turn only when held past
    /// [`TurnConfig::interrupt_hold_ms`]; a tap only stops the reply.
    Held {
        down_at_ms: u64,
        speech_started: bool,
        stopped_reply: bool,
    },
    /// The key is up; capture runs until `ends_at_ms`, then the commit.
    Tail { down_at_ms: u64, ends_at_ms: u64 },
}

/// What a key-down does to the press under way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum KeyDown {
    /// No press: one begins.
    Begins,
    /// The key is held already (hold mode): nothing changes.
    Repeats,
    /// The press ends (toggle mode's second press).
    Releases,
    /// Pressed again within the tail: the same utterance goes on, from `down_at_ms`.
    GoesOn { down_at_ms: u64 },
}

/// What is due of a press at a given time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum PressDue {
    /// Held long enough: the press counts as a turn, the user's speech starts at `down_at_ms`.
    Counts { down_at_ms: u64 },
    /// Held for the maximum: released automatically at `released_at_ms`.
    Overlong { released_at_ms: u64 },
    /// The tail is over: commit.
    TailOver,
}

impl Press {
    /// What a key-down in `mode` does to this press ([`PressMode::held_after_key_down`]).
    pub fn key_down(&self, mode: PressMode) -> KeyDown {
        match *self {
            Press::Idle => KeyDown::Begins,
            Press::Tail { down_at_ms, .. } => KeyDown::GoesOn { down_at_ms },
            Press::Held { .. } if mode.held_after_key_down(true) => KeyDown::Repeats,
            Press::Held { .. } => KeyDown::Releases,
        }
    }

    /// Whether a key-up in `mode` ends this press: any held press in hold mode
    /// ([`PressMode::held_after_key_up`]); in toggle mode only a tap that stopped a reply and
    /// has not counted as a turn (a toggled press goes on until the next press).
    pub fn released_by_key_up(&self, mode: PressMode) -> bool {
        match *self {
            Press::Held {
                stopped_reply,
                speech_started,
                ..
            } => !mode.held_after_key_up(true) || (stopped_reply && !speech_started),
            Press::Idle | Press::Tail { .. } => false,
        }
    }

    /// How long a press must be held to count as a turn: a press that stopped a reply longer
    /// than one that did not, so a tap to stop is not answered.
    pub fn counts_after_ms(config: &TurnConfig, stopped_reply: bool) -> u64 {
        if stopped_reply {
            config.min_press_ms.max(config.interrupt_hold_ms)
        } else {
            config.min_press_ms
        }
    }

    /// When the next thing is due of this press.
    pub fn deadline_ms(&self, config: &TurnConfig) -> Option<u64> {
        match *self {
            Press::Idle => None,
            Press::Held {
                down_at_ms,
                speech_started: true,
                ..
            } => Some(down_at_ms.saturating_add(config.max_press_ms)),
            Press::Held {
                down_at_ms,
                speech_started: false,
                stopped_reply,
            } => Some(down_at_ms.saturating_add(Self::counts_after_ms(config, stopped_reply))),
            Press::Tail { ends_at_ms, .. } => Some(ends_at_ms),
        }
    }

    /// What is due by `now_ms`, if anything.
    pub fn due(&self, config: &TurnConfig, now_ms: u64) -> Option<PressDue> {
        if self.deadline_ms(config).is_none_or(|at_ms| now_ms < at_ms) {
            return None;
        }
        match *self {
            Press::Idle => None,
            Press::Held {
                down_at_ms,
                speech_started: false,
                ..
            } => Some(PressDue::Counts { down_at_ms }),
            Press::Held { down_at_ms, .. } => Some(PressDue::Overlong {
                released_at_ms: down_at_ms.saturating_add(config.max_press_ms),
            }),
            Press::Tail { .. } => Some(PressDue::TailOver),
        }
    }
}

/// Whether capture is open and the mic gated, as last commanded.
#[derive(Debug, Default)]
pub(super) struct Capture {
    open: bool,
    gated: bool,
}

impl Capture {
    /// Whether capture is open.
    pub fn is_open(&self) -> bool {
        self.open
    }

    /// Capture is to be open (`true`) or closed: whether that is a change (to command).
    pub fn set_open(&mut self, open: bool) -> bool {
        std::mem::replace(&mut self.open, open) != open
    }

    /// The mic is to be gated (`true`) or not: whether that is a change (to command).
    pub fn set_gated(&mut self, gated: bool) -> bool {
        std::mem::replace(&mut self.gated, gated) != gated
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> TurnConfig {
        TurnConfig {
            min_press_ms: 200,
            interrupt_hold_ms: 600,
            max_press_ms: 60_000,
            ..TurnConfig::push_to_talk(walkie_openai::SessionConfig::default())
        }
    }

    #[test]
    fn a_press_that_stopped_a_reply_counts_later_than_one_that_did_not() {
        let config = config();
        let plain = Press::Held {
            down_at_ms: 1_000,
            speech_started: false,
            stopped_reply: false,
        };
        let stopping = Press::Held {
            down_at_ms: 1_000,
            speech_started: false,
            stopped_reply: true,
        };
        assert_eq!(plain.due(&config, 1_199), None);
        assert_eq!(
            plain.due(&config, 1_200),
            Some(PressDue::Counts { down_at_ms: 1_000 })
        );
        assert_eq!(stopping.due(&config, 1_599), None);
        assert_eq!(stopping.deadline_ms(&config), Some(1_600));
    }

    #[test]
    fn a_counted_press_is_released_at_the_maximum_and_a_tail_ends_at_its_time() {
        let config = config();
        let held = Press::Held {
            down_at_ms: 0,
            speech_started: true,
            stopped_reply: false,
        };
        assert_eq!(
            held.due(&config, 70_000),
            Some(PressDue::Overlong {
                released_at_ms: 60_000
            })
        );
        let tail = Press::Tail {
            down_at_ms: 0,
            ends_at_ms: 500,
        };
        assert_eq!(tail.due(&config, 499), None);
        assert_eq!(tail.due(&config, 500), Some(PressDue::TailOver));
        assert_eq!(Press::Idle.deadline_ms(&config), None);
    }

    #[test]
    fn capture_commands_are_given_once_per_change() {
        let mut capture = Capture::default();
        assert!(capture.set_open(true), "opening is a change");
        assert!(!capture.set_open(true), "opening again is not");
        assert!(capture.set_gated(true), "gating is a change");
        assert!(!capture.set_gated(true), "gating again is not");
        assert!(capture.set_open(false), "closing is a change");
        assert!(!capture.is_open());
    }

    #[test]
    fn a_key_down_begins_repeats_ends_or_goes_on_as_the_press_mode_says() {
        let held = Press::Held {
            down_at_ms: 0,
            speech_started: true,
            stopped_reply: false,
        };
        let tail = Press::Tail {
            down_at_ms: 0,
            ends_at_ms: 500,
        };
        for mode in [PressMode::Hold, PressMode::Toggle] {
            assert_eq!(Press::Idle.key_down(mode), KeyDown::Begins);
            assert_eq!(tail.key_down(mode), KeyDown::GoesOn { down_at_ms: 0 });
        }
        assert_eq!(held.key_down(PressMode::Hold), KeyDown::Repeats);
        assert_eq!(held.key_down(PressMode::Toggle), KeyDown::Releases);
    }

    #[test]
    fn a_key_up_ends_a_held_press_but_a_toggled_one_only_when_it_was_a_tap_that_stopped_a_reply() {
        let counted = Press::Held {
            down_at_ms: 0,
            speech_started: true,
            stopped_reply: false,
        };
        let tap_over_a_reply = Press::Held {
            down_at_ms: 0,
            speech_started: false,
            stopped_reply: true,
        };
        assert!(counted.released_by_key_up(PressMode::Hold));
        assert!(!counted.released_by_key_up(PressMode::Toggle));
        assert!(tap_over_a_reply.released_by_key_up(PressMode::Toggle));
        assert!(!Press::Idle.released_by_key_up(PressMode::Hold));
    }

    #[test]
    fn a_press_carried_to_the_next_call_follows_the_same_rule() {
        assert!(PressMode::Hold.held_after_key_down(true), "a repeat");
        assert!(
            !PressMode::Toggle.held_after_key_down(true),
            "the second press"
        );
        assert!(PressMode::Toggle.held_after_key_down(false));
        assert!(!PressMode::Hold.held_after_key_up(true));
        assert!(PressMode::Toggle.held_after_key_up(true));
    }
}
