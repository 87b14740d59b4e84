//! Whether an open device stream has to be reopened, judged from what its callbacks counted and
//! what the device list says, at times the caller gives.
//!
//! Why pure: these are timing rules — a stream whose callbacks stop is dead (a removed
//! PulseAudio sink says nothing), errors alone must not tear a stream down (PulseAudio's
//! start-up bursts), the list is read far less often than the counters — and they are tested
//! here in virtual time, while the engine's workers read the counters and the device list.

/// How often a stream's counters are looked at.
pub const HEALTH_EVERY_MS: u64 = 100;
/// How often the device list is due (the engine skips a due read when the stream heard from
/// the sound server that nothing changed).
pub const DEVICE_LIST_EVERY_MS: u64 = 1_000;
/// A stream whose callbacks stop for this long is dead.
pub const STALL_AFTER_MS: u64 = 400;

/// What a stream's callbacks have counted since it opened.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StreamCounts {
    pub callbacks: u64,
    /// Errors the stream reported and went on after.
    pub errors: u64,
    /// Errors that ended the stream (its device gone).
    pub fatal_errors: u64,
}

/// Why a stream is to be reopened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reopen {
    /// The stream reported its device gone.
    DeviceGone,
    /// Its callbacks stopped for [`STALL_AFTER_MS`].
    Stalled,
    /// The device the user chose is listed again, after the stream fell back to the default.
    ChosenDeviceBack,
    /// The device the user chose is no longer listed.
    ChosenDeviceGone,
    /// The stream follows the default (chosen so, or fallen back to it), and the default is
    /// another device now.
    DefaultChanged,
}

impl Reopen {
    /// Why, as the log says it.
    pub fn reason(self) -> &'static str {
        match self {
            Reopen::DeviceGone => "the stream reported its device gone",
            Reopen::Stalled => "the stream stalled",
            Reopen::ChosenDeviceBack => "the chosen device is back",
            Reopen::ChosenDeviceGone => "the chosen device is gone",
            Reopen::DefaultChanged => "the default device changed",
        }
    }
}

/// What one look at a stream found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HealthCheck {
    /// Nothing to do: not due yet, or the stream is well. `new_errors` were counted since the
    /// last look (to be logged; they alone change nothing).
    Fine { new_errors: u64 },
    /// Reopen the stream.
    Reopen(Reopen),
    /// The counters are well and the device list is due: read it and judge it with
    /// [`judge_listing`].
    ListDue { new_errors: u64 },
}

/// Whether the device list asks for a stream to be reopened: the device the user chose is
/// listed again after the stream fell back to the default, or is no longer listed; or the
/// stream follows the default (chosen so, or fallen back to it) and the default moved.
/// `chosen_listed`: whether the chosen device is listed (`None`: the user chose the default);
/// `default_is_another` is asked only of a stream that follows the default.
pub fn judge_listing(
    chosen_listed: Option<bool>,
    fell_back: bool,
    default_is_another: impl FnOnce() -> bool,
) -> Option<Reopen> {
    match chosen_listed {
        Some(true) if fell_back => return Some(Reopen::ChosenDeviceBack),
        Some(false) if !fell_back => return Some(Reopen::ChosenDeviceGone),
        _ => {}
    }
    let follows_default = chosen_listed.is_none() || fell_back;
    (follows_default && default_is_another()).then_some(Reopen::DefaultChanged)
}

/// The watch over one open stream; see the module documentation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamHealth {
    next_look_ms: u64,
    next_list_ms: u64,
    seen: StreamCounts,
    callbacks_moved_at_ms: u64,
}

impl StreamHealth {
    /// A stream that opened at `now_ms` (its counters from zero): looked at from now, its
    /// device list read a second from now.
    pub fn opened(now_ms: u64) -> Self {
        Self {
            next_look_ms: now_ms,
            next_list_ms: now_ms.saturating_add(DEVICE_LIST_EVERY_MS),
            seen: StreamCounts::default(),
            callbacks_moved_at_ms: now_ms,
        }
    }

    /// Looks at the stream at `now_ms`, its counters standing at `counts` (at most once per
    /// [`HEALTH_EVERY_MS`]; sooner is [`HealthCheck::Fine`] without a look).
    pub fn look(&mut self, now_ms: u64, counts: StreamCounts) -> HealthCheck {
        if now_ms < self.next_look_ms {
            return HealthCheck::Fine { new_errors: 0 };
        }
        self.next_look_ms = now_ms.saturating_add(HEALTH_EVERY_MS);
        let new_errors = counts.errors.saturating_sub(self.seen.errors);
        self.seen.errors = self.seen.errors.max(counts.errors);
        if counts.fatal_errors > self.seen.fatal_errors {
            self.seen.fatal_errors = counts.fatal_errors;
            return HealthCheck::Reopen(Reopen::DeviceGone);
        }
        if counts.callbacks != self.seen.callbacks {
            self.seen.callbacks = counts.callbacks;
            self.callbacks_moved_at_ms = now_ms;
        } else if now_ms.saturating_sub(self.callbacks_moved_at_ms) >= STALL_AFTER_MS {
            return HealthCheck::Reopen(Reopen::Stalled);
        }
        if now_ms < self.next_list_ms {
            return HealthCheck::Fine { new_errors };
        }
        self.next_list_ms = now_ms.saturating_add(DEVICE_LIST_EVERY_MS);
        HealthCheck::ListDue { new_errors }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(callbacks: u64, errors: u64, fatal_errors: u64) -> StreamCounts {
        StreamCounts {
            callbacks,
            errors,
            fatal_errors,
        }
    }

    #[test]
    fn a_stream_whose_callbacks_keep_coming_is_well_and_one_whose_callbacks_stop_is_stalled() {
        let mut health = StreamHealth::opened(0);
        for look in 0..10 {
            let now_ms = look * HEALTH_EVERY_MS;
            assert!(matches!(
                health.look(now_ms, counts(look, 0, 0)),
                HealthCheck::Fine { .. }
            ));
        }
        // The callbacks stop at 900 ms: still well 399 ms on, stalled at 400.
        assert!(matches!(
            health.look(900 + 300, counts(9, 0, 0)),
            HealthCheck::Fine { .. } | HealthCheck::ListDue { .. }
        ));
        assert_eq!(
            health.look(900 + STALL_AFTER_MS, counts(9, 0, 0)),
            HealthCheck::Reopen(Reopen::Stalled)
        );
    }

    #[test]
    fn errors_alone_are_told_once_and_never_reopen_a_stream_but_a_fatal_one_does() {
        let mut health = StreamHealth::opened(0);
        assert_eq!(
            health.look(0, counts(1, 3, 0)),
            HealthCheck::Fine { new_errors: 3 }
        );
        assert_eq!(
            health.look(100, counts(2, 3, 0)),
            HealthCheck::Fine { new_errors: 0 },
            "the same errors are not told again"
        );
        assert_eq!(
            health.look(200, counts(3, 3, 1)),
            HealthCheck::Reopen(Reopen::DeviceGone)
        );
    }

    #[test]
    fn the_counters_are_looked_at_ten_times_a_second_and_the_list_once() {
        let mut health = StreamHealth::opened(0);
        assert!(matches!(
            health.look(0, counts(1, 0, 0)),
            HealthCheck::Fine { .. }
        ));
        // Between looks, even a fatal error waits for the next one.
        assert_eq!(
            health.look(50, counts(1, 0, 1)),
            HealthCheck::Fine { new_errors: 0 }
        );
        assert_eq!(
            health.look(100, counts(2, 0, 1)),
            HealthCheck::Reopen(Reopen::DeviceGone)
        );
        let lists: Vec<u64> = (2..=30)
            .map(|look| look * HEALTH_EVERY_MS)
            .filter(|&now_ms| {
                matches!(
                    health.look(now_ms, counts(now_ms, 0, 1)),
                    HealthCheck::ListDue { .. }
                )
            })
            .collect();
        assert_eq!(lists, [1_000, 2_000, 3_000]);
    }

    #[test]
    fn the_list_reopens_for_a_chosen_device_back_or_gone_and_a_moved_default_it_follows() {
        let moved = || true;
        assert_eq!(
            judge_listing(Some(true), true, moved),
            Some(Reopen::ChosenDeviceBack)
        );
        assert_eq!(
            judge_listing(Some(false), false, moved),
            Some(Reopen::ChosenDeviceGone)
        );
        assert_eq!(
            judge_listing(Some(false), true, moved),
            Some(Reopen::DefaultChanged),
            "fallen back, it follows the default"
        );
        assert_eq!(
            judge_listing(None, false, moved),
            Some(Reopen::DefaultChanged)
        );
        assert_eq!(judge_listing(None, false, || false), None);
        assert_eq!(
            judge_listing(Some(true), false, || panic!(
                "a chosen device asks no default"
            )),
            None,
            "a chosen device stays whatever the default does"
        );
    }
}
