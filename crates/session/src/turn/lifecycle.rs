//! The session's lifecycle: opened, confirmed, transcribing, near its cap, closed.
//!
//! Why a part of its own: a data channel opening starts two clocks (the grace for
//! `session.updated` to confirm the configuration, and the provider's session cap counted from
//! the first opening), and a close resets what a new session may change again (the voice).
//! These facts and their deadlines live here, polled as [`LifecycleDue`] items in time order;
//! what each means for the conversation stays with the controller.

use crate::turn::config::{SESSION_CONFIRM_GRACE_MS, TurnConfig};

/// What is due of the lifecycle at a given time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum LifecycleDue {
    /// `session.updated` did not come within the grace: the session is taken as confirmed.
    ConfirmationOverdue { waited_ms: u64 },
    /// The provider's session cap is near.
    LimitNear { remaining_ms: u64 },
    /// The provider's session cap is reached.
    LimitReached,
}

/// See the module documentation.
#[derive(Debug)]
pub(super) struct Lifecycle {
    /// The assistant has produced audio in this session: `voice` can no longer change.
    assistant_audio_started: bool,
    connected_at_ms: Option<u64>,
    confirmed: bool,
    transcribes: bool,
    limit_warned: bool,
    limit_reached: bool,
    /// When the data channel last opened, while `session.updated` has not come.
    awaiting_confirmation_since_ms: Option<u64>,
}

impl Default for Lifecycle {
    fn default() -> Self {
        Self {
            assistant_audio_started: false,
            connected_at_ms: None,
            confirmed: false,
            transcribes: true,
            limit_warned: false,
            limit_reached: false,
            awaiting_confirmation_since_ms: None,
        }
    }
}

impl Lifecycle {
    /// The data channel opened at `now_ms`; the cap counts from the first opening.
    pub fn opened(&mut self, now_ms: u64) {
        self.connected_at_ms.get_or_insert(now_ms);
        if !self.confirmed {
            self.awaiting_confirmation_since_ms = Some(now_ms);
        }
    }

    /// The data channel closed: the next one is a new session, whose voice can be set again.
    pub fn closed(&mut self) {
        self.assistant_audio_started = false;
        self.confirmed = false;
        self.awaiting_confirmation_since_ms = None;
    }

    /// `session.updated` confirmed the configuration (or its grace ran out).
    pub fn confirmed(&mut self) {
        self.awaiting_confirmation_since_ms = None;
        self.confirmed = true;
    }

    /// Whether the configuration is confirmed (the key works).
    pub fn is_confirmed(&self) -> bool {
        self.confirmed
    }

    /// The assistant produced audio: the voice is fixed for this session.
    pub fn assistant_audio_started(&mut self) {
        self.assistant_audio_started = true;
    }

    /// Whether `session.update` may still set the voice.
    pub fn voice_can_change(&self) -> bool {
        !self.assistant_audio_started
    }

    /// Whether the confirmed session transcribes the user's audio.
    pub fn set_transcribes(&mut self, transcribes: bool) {
        self.transcribes = transcribes;
    }

    /// Whether the user's utterances get transcripts.
    pub fn transcribes(&self) -> bool {
        self.transcribes
    }

    fn confirmation_due_ms(&self) -> Option<u64> {
        self.awaiting_confirmation_since_ms
            .map(|since_ms| since_ms.saturating_add(SESSION_CONFIRM_GRACE_MS))
    }

    fn limit_due_ms(&self, config: &TurnConfig) -> Option<u64> {
        let connected_at_ms = self.connected_at_ms?;
        if !self.limit_warned {
            Some(
                connected_at_ms.saturating_add(
                    config
                        .session_limit_ms
                        .saturating_sub(config.session_limit_warning_ms),
                ),
            )
        } else if !self.limit_reached {
            Some(connected_at_ms.saturating_add(config.session_limit_ms))
        } else {
            None
        }
    }

    /// When the next thing is due.
    pub fn deadline_ms(&self, config: &TurnConfig) -> Option<u64> {
        [self.confirmation_due_ms(), self.limit_due_ms(config)]
            .into_iter()
            .flatten()
            .min()
    }

    /// The next thing due by `now_ms`, once each (poll until `None`).
    pub fn poll_due(&mut self, config: &TurnConfig, now_ms: u64) -> Option<LifecycleDue> {
        if let (Some(since_ms), Some(due_ms)) = (
            self.awaiting_confirmation_since_ms,
            self.confirmation_due_ms(),
        ) && now_ms >= due_ms
        {
            self.awaiting_confirmation_since_ms = None;
            return Some(LifecycleDue::ConfirmationOverdue {
                waited_ms: now_ms - since_ms,
            });
        }
        let connected_at_ms = self.connected_at_ms?;
        let limit_at_ms = connected_at_ms.saturating_add(config.session_limit_ms);
        if self
            .limit_due_ms(config)
            .is_none_or(|due_ms| now_ms < due_ms)
        {
            return None;
        }
        if !self.limit_warned {
            self.limit_warned = true;
            return Some(LifecycleDue::LimitNear {
                remaining_ms: limit_at_ms.saturating_sub(now_ms),
            });
        }
        self.limit_reached = true;
        Some(LifecycleDue::LimitReached)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> TurnConfig {
        TurnConfig {
            session_limit_ms: 60_000,
            session_limit_warning_ms: 10_000,
            ..TurnConfig::push_to_talk(walkie_openai::SessionConfig::default())
        }
    }

    fn all_due(lifecycle: &mut Lifecycle, now_ms: u64) -> Vec<LifecycleDue> {
        std::iter::from_fn(|| lifecycle.poll_due(&config(), now_ms)).collect()
    }

    #[test]
    fn an_unconfirmed_session_is_confirmed_once_the_grace_runs_out() {
        let mut lifecycle = Lifecycle::default();
        lifecycle.opened(1_000);
        let due_ms = 1_000 + SESSION_CONFIRM_GRACE_MS;
        assert_eq!(lifecycle.deadline_ms(&config()), Some(due_ms));
        assert_eq!(all_due(&mut lifecycle, due_ms - 1), []);
        assert_eq!(
            all_due(&mut lifecycle, due_ms + 5),
            [LifecycleDue::ConfirmationOverdue {
                waited_ms: SESSION_CONFIRM_GRACE_MS + 5
            }]
        );
    }

    #[test]
    fn the_cap_warns_then_ends_each_once_counted_from_the_first_opening() {
        let mut lifecycle = Lifecycle::default();
        lifecycle.opened(0);
        lifecycle.confirmed();
        lifecycle.closed();
        lifecycle.opened(30_000);
        lifecycle.confirmed();
        assert_eq!(lifecycle.deadline_ms(&config()), Some(50_000));
        assert_eq!(
            all_due(&mut lifecycle, 52_000),
            [LifecycleDue::LimitNear {
                remaining_ms: 8_000
            }]
        );
        assert_eq!(
            all_due(&mut lifecycle, 61_000),
            [LifecycleDue::LimitReached]
        );
        assert_eq!(all_due(&mut lifecycle, 90_000), []);
        assert_eq!(lifecycle.deadline_ms(&config()), None);
    }

    #[test]
    fn a_new_session_may_set_the_voice_again() {
        let mut lifecycle = Lifecycle::default();
        lifecycle.assistant_audio_started();
        assert!(!lifecycle.voice_can_change());
        lifecycle.closed();
        assert!(lifecycle.voice_can_change());
    }
}
