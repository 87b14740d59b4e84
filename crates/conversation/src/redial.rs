//! When a dropped call is dialled again: exponential backoff with jitter, a provider's
//! `Retry-After` as a floor, and a bound after which the user decides.
//!
//! Why jitter: many clients dropped by one provider incident must not all call back at the
//! same instant. The first call of a conversation is placed again the same way
//! ([`FirstDial`]) when its refusal may pass. Why a floor of half the delay: the first attempt should come quickly (a
//! loopback or LAN hiccup heals in a few hundred milliseconds), but never at once.

use crate::status::{StatusAction, StatusEvent};

/// How a dropped call is dialled again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RedialPolicy {
    /// The wait before the first attempt (at most; jitter takes up to half of it away).
    pub first_delay_ms: u64,
    /// The wait never grows beyond this (before jitter).
    pub max_delay_ms: u64,
    /// Attempts before the window asks the user.
    pub max_attempts: u32,
}

impl Default for RedialPolicy {
    /// 250 ms, doubling to at most 8 s, six attempts: about 16 s of trying in all.
    fn default() -> Self {
        Self {
            first_delay_ms: 250,
            max_delay_ms: 8_000,
            max_attempts: 6,
        }
    }
}

impl RedialPolicy {
    /// The wait before attempt `attempt` (counted from 1): the delay doubles per attempt up to
    /// [`RedialPolicy::max_delay_ms`], and its upper half is scaled by `jitter_unit` (in
    /// `0.0..1.0`). A `Retry-After` the provider sent is waited out in full.
    pub fn delay_ms(&self, attempt: u32, jitter_unit: f64, retry_after_ms: Option<u64>) -> u64 {
        let doublings = attempt.saturating_sub(1).min(32);
        let delay_ms = self
            .first_delay_ms
            .saturating_mul(1u64 << doublings)
            .min(self.max_delay_ms);
        let half_ms = delay_ms / 2;
        let jittered_ms =
            half_ms + ((delay_ms - half_ms) as f64 * jitter_unit.clamp(0.0, 1.0)) as u64;
        jittered_ms.max(retry_after_ms.unwrap_or(0))
    }
}

/// Why placing a call failed: the one failure of a first call, a redial and the call new
/// settings ask for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DialFailure {
    /// What went wrong and what to do next: a sentence from the provider's refusal, a phrase
    /// for the settings and the local provider ("no API key for OpenAI: add one in Settings").
    pub sentence: String,
    /// Whether calling again may work.
    pub retry: Retry,
    /// Where the dial stopped, which decides the status line's words once nobody calls again.
    pub stage: DialStage,
    /// The error behind it, for Details….
    pub details: Option<String>,
}

/// Where a dial stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DialStage {
    /// The settings name no provider that can be called (no key, an unusable address).
    Settings,
    /// The local provider did not start.
    LocalProvider,
    /// The provider refused the call or could not be reached.
    Provider,
}

impl DialFailure {
    /// A refusal by the provider (or the way to it).
    pub fn refused(sentence: impl Into<String>, retry: Retry) -> Self {
        Self {
            sentence: sentence.into(),
            retry,
            stage: DialStage::Provider,
            details: None,
        }
    }

    /// Settings that cannot be dialled, for `reason` (a phrase that says what to change).
    pub fn settings(reason: impl Into<String>) -> Self {
        Self {
            sentence: reason.into(),
            retry: Retry::Never,
            stage: DialStage::Settings,
            details: None,
        }
    }

    pub fn with_details(mut self, details: impl Into<String>) -> Self {
        self.details = Some(details.into());
        self
    }

    /// The status line once nobody calls again: what went wrong, and the one thing to do
    /// (call again later, or change the settings).
    pub fn status(&self, provider_label: &str) -> StatusEvent {
        let status = match self.stage {
            DialStage::Settings => StatusEvent::needs_settings(&self.sentence),
            DialStage::LocalProvider => StatusEvent::not_connected(&self.sentence),
            DialStage::Provider => StatusEvent::call_refused(provider_label, &self.sentence)
                .with_action(match self.retry {
                    Retry::Later { .. } => StatusAction::TryAgain,
                    Retry::Never => StatusAction::OpenSettings,
                }),
        };
        match &self.details {
            Some(details) => status.with_details(details.clone()),
            None => status,
        }
    }

    /// How long the provider asked to wait before the next call, if it did.
    pub fn retry_after_ms(&self) -> Option<u64> {
        match self.retry {
            Retry::Later { after_ms } => after_ms,
            Retry::Never => None,
        }
    }
}

/// Whether calling again may work.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Retry {
    /// The failure may pass (the network, the provider's 5xx, a 429): call again, not before
    /// `after_ms` when the provider said so.
    Later { after_ms: Option<u64> },
    /// Calling again fails the same way (the key, the address, the settings): the user acts.
    Never,
}

/// The first call of a conversation, placed again while its refusal may pass (a 5xx, a 429,
/// the network to the provider): with the same backoff and bound as a dropped call's redial.
/// The conversations machine holds one for each first call.
#[derive(Debug, Clone)]
pub struct FirstDial {
    policy: RedialPolicy,
    jitter: Jitter,
    /// Calls placed again so far.
    attempts: u32,
    /// Why the last attempt was refused, for the status while the next one is under way.
    last_refusal: String,
}

impl FirstDial {
    /// No attempt made yet; `jitter_seed` seeds the waits' jitter.
    pub fn new(policy: RedialPolicy, jitter_seed: u64) -> Self {
        Self {
            policy,
            jitter: Jitter::new(jitter_seed),
            attempts: 0,
            last_refusal: String::new(),
        }
    }

    /// The status while an attempt is under way: "Connecting to …" for the first; for a call
    /// placed again, the one its wait showed, in the reconnecting state, so the user can stop
    /// the attempt as well as the wait.
    pub fn dialling(&self, provider_label: &str) -> StatusEvent {
        if self.attempts == 0 {
            StatusEvent::connecting(provider_label)
        } else {
            self.placing_again()
        }
    }

    /// The status while a call is placed again: the attempt, and why the last was refused.
    fn placing_again(&self) -> StatusEvent {
        StatusEvent::dialing_again(self.attempts, self.policy.max_attempts, &self.last_refusal)
    }

    /// The call was refused, with `sentence` saying why: how long to wait before the next
    /// attempt, and the status to show meanwhile; `None` when the user decides (the refusal
    /// does not pass, or the attempts are spent).
    pub fn refused(&mut self, retry: Retry, sentence: &str) -> Option<(u64, StatusEvent)> {
        let Retry::Later { after_ms } = retry else {
            return None;
        };
        if self.attempts >= self.policy.max_attempts {
            return None;
        }
        self.attempts += 1;
        let wait_ms = self
            .policy
            .delay_ms(self.attempts, self.jitter.next_unit(), after_ms);
        sentence.clone_into(&mut self.last_refusal);
        Some((wait_ms, self.placing_again()))
    }
}

/// A small deterministic source of jitter (SplitMix64): the machine reads no randomness of
/// its own, so the caller seeds it and tests replay it.
#[derive(Debug, Clone)]
pub(crate) struct Jitter(u64);

impl Jitter {
    pub(crate) fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// The next value in `0.0..1.0`.
    pub(crate) fn next_unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// The next 64 random bits (a seed for another jitter).
    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::status::ConnectionState;

    #[test]
    fn a_first_call_refused_for_a_passing_reason_is_placed_again_up_to_the_bound() {
        let policy = RedialPolicy::default();
        let mut first = FirstDial::new(policy, 7);
        let sentence = "127.0.0.1 had a server error (503): reconnect in a moment.";
        for attempt in 1..=policy.max_attempts {
            let (wait_ms, status) = first
                .refused(Retry::Later { after_ms: None }, sentence)
                .expect("attempts are left");
            let shortest_ms = policy.delay_ms(attempt, 0.0, None);
            let longest_ms = policy.delay_ms(attempt, 1.0, None);
            assert!(
                (shortest_ms..=longest_ms).contains(&wait_ms),
                "{wait_ms} ms"
            );
            assert_eq!(status.state, ConnectionState::Reconnecting);
            assert!(
                status
                    .detail
                    .starts_with(&format!("Calling again (attempt {attempt} of 6)…")),
                "{}",
                status.detail
            );
            assert!(status.detail.ends_with(sentence), "{}", status.detail);
        }
        assert_eq!(
            first.refused(Retry::Later { after_ms: None }, sentence),
            None
        );
    }

    #[test]
    fn every_attempt_says_so_and_can_be_cancelled_while_under_way() {
        let mut first = FirstDial::new(RedialPolicy::default(), 7);
        let connecting = first.dialling("OpenAI");
        assert_eq!(connecting.state, ConnectionState::Connecting);
        assert_eq!(connecting.detail, "Connecting to OpenAI…");
        assert!(connecting.cancellable, "the first attempt too");
        let sentence = "the network to api.openai.com is down: check your connection.";
        let (_, waiting) = first
            .refused(Retry::Later { after_ms: None }, sentence)
            .expect("attempts are left");
        let under_way = first.dialling("OpenAI");
        assert_eq!(under_way, waiting, "the attempt keeps the wait's status");
        assert_eq!(under_way.state, ConnectionState::Reconnecting);
        assert!(under_way.detail.ends_with(sentence), "{}", under_way.detail);
        assert!(under_way.cancellable);
    }

    #[test]
    fn a_first_call_refused_for_good_is_not_placed_again_and_a_retry_after_is_waited_out() {
        let mut first = FirstDial::new(RedialPolicy::default(), 7);
        assert_eq!(first.refused(Retry::Never, "refused the API key."), None);
        let (wait_ms, _) = first
            .refused(
                Retry::Later {
                    after_ms: Some(7_000),
                },
                "is rate-limiting this key.",
            )
            .expect("a 429 passes");
        assert_eq!(wait_ms, 7_000);
    }

    #[test]
    fn the_wait_doubles_per_attempt_up_to_the_cap_and_jitter_takes_at_most_half() {
        let policy = RedialPolicy::default();
        assert_eq!(policy.delay_ms(1, 0.0, None), 125);
        assert_eq!(policy.delay_ms(1, 1.0, None), 250);
        assert_eq!(policy.delay_ms(2, 1.0, None), 500);
        assert_eq!(policy.delay_ms(3, 0.5, None), 750);
        assert_eq!(policy.delay_ms(10, 1.0, None), 8_000);
        assert_eq!(policy.delay_ms(u32::MAX, 0.0, None), 4_000);
    }

    #[test]
    fn a_retry_after_longer_than_the_backoff_is_waited_out() {
        let policy = RedialPolicy::default();
        assert_eq!(policy.delay_ms(1, 0.5, Some(7_000)), 7_000);
        assert_eq!(policy.delay_ms(6, 1.0, Some(100)), 8_000);
    }

    #[test]
    fn jitter_spreads_over_the_unit_interval_and_replays_from_its_seed() {
        let mut jitter = Jitter::new(42);
        let values: Vec<f64> = (0..1_000).map(|_| jitter.next_unit()).collect();
        assert!(values.iter().all(|value| (0.0..1.0).contains(value)));
        let below_half = values.iter().filter(|value| **value < 0.5).count();
        assert!(
            (400..600).contains(&below_half),
            "{below_half} of 1000 below 0.5"
        );
        let mut again = Jitter::new(42);
        assert_eq!(again.next_unit(), values[0]);
    }
}
