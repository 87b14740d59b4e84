//! One direction's device: the choice, the fallback to the default, and the stream's health
//! (`walkie_dsp::health` judges; this reads the counters and the device list for it).

use super::*;

/// A device stream the engine watches.
pub(super) trait WatchedStream {
    fn device_id(&self) -> &str;
    fn counters(&self) -> &StreamCounters;
}

impl WatchedStream for Capture {
    fn device_id(&self) -> &str {
        Capture::device_id(self)
    }
    fn counters(&self) -> &StreamCounters {
        Capture::counters(self)
    }
}

impl WatchedStream for Playback {
    fn device_id(&self) -> &str {
        Playback::device_id(self)
    }
    fn counters(&self) -> &StreamCounters {
        Playback::counters(self)
    }
}

/// One direction's device choice, fallback and health.
pub(super) struct DeviceSlot {
    pub(super) direction: DeviceDirection,
    /// The user's choice (`None`: follow the default).
    pub(super) wanted: Option<String>,
    pub(super) probe: Option<DeviceProbe>,
    pub(super) fell_back: bool,
    pub(super) unavailable_reported: bool,
    pub(super) retry_at: Instant,
    /// The open stream's watch, on milliseconds since `epoch`.
    pub(super) health: StreamHealth,
    pub(super) epoch: Instant,
    pub(super) error_log: RateLimitedLog,
    pub(super) open_log: RateLimitedLog,
}

impl DeviceSlot {
    pub(super) fn new(direction: DeviceDirection, wanted: Option<String>) -> Self {
        let now = Instant::now();
        Self {
            direction,
            wanted,
            probe: None,
            fell_back: false,
            unavailable_reported: false,
            retry_at: now,
            health: StreamHealth::opened(0),
            epoch: now,
            error_log: RateLimitedLog::default(),
            open_log: RateLimitedLog::default(),
        }
    }

    /// Opens the wanted device, or the default when it cannot be used; reports what happened.
    pub(super) fn open<T: WatchedStream>(
        &mut self,
        previous_id: Option<&str>,
        open: impl Fn(Option<&str>) -> Result<T, DeviceError>,
        events: &Events,
    ) -> Option<T> {
        let now = Instant::now();
        let direction = self.direction;
        let wanted_result = match self.wanted.as_deref() {
            Some(wanted) => open(Some(wanted)),
            None => open(None),
        };
        let (stream, fell_back_because) = match (wanted_result, self.wanted.as_deref()) {
            (Ok(stream), _) => (stream, None),
            (Err(error), Some(_)) => match open(None) {
                Ok(stream) => (stream, Some(error.to_string())),
                Err(default_error) => {
                    self.report_unavailable(now, default_error, events);
                    return None;
                }
            },
            (Err(error), None) => {
                self.report_unavailable(now, error, events);
                return None;
            }
        };
        self.unavailable_reported = false;
        self.health = StreamHealth::opened(self.ms(now));
        let using = stream.device_id().to_owned();
        match (fell_back_because, &self.wanted) {
            (Some(reason), Some(wanted)) => {
                if !self.fell_back || previous_id != Some(using.as_str()) {
                    log::warn!("the {direction} {wanted} is not usable ({reason}); using {using}");
                    events.send(EngineEvent::DeviceFellBack {
                        direction,
                        wanted: wanted.clone(),
                        using,
                        reason,
                    });
                }
                self.fell_back = true;
            }
            _ => {
                self.fell_back = false;
                if previous_id.is_some_and(|previous| previous != using) {
                    log::info!("the {direction} is now {using}");
                    events.send(EngineEvent::DeviceChanged { direction, using });
                }
            }
        }
        Some(stream)
    }

    pub(super) fn report_unavailable(&mut self, now: Instant, error: DeviceError, events: &Events) {
        self.retry_at = now + RETRY_OPEN_EVERY;
        self.open_log.warn(
            now,
            format_args!("cannot open a {}: {error}; retrying", self.direction),
        );
        if !self.unavailable_reported {
            self.unavailable_reported = true;
            events.send(EngineEvent::DeviceUnavailable {
                direction: self.direction,
                reason: error.to_string(),
            });
        }
    }

    /// `at` on the watch's clock.
    pub(super) fn ms(&self, at: Instant) -> u64 {
        at.saturating_duration_since(self.epoch).as_millis() as u64
    }

    /// Whether the open stream must be reopened, as [`StreamHealth`] judges what its counters
    /// and the device list say; this reads them (counting the list's reads in `list_reads`)
    /// and logs the errors it counted.
    pub(super) fn needs_reopen(
        &mut self,
        stream: &impl WatchedStream,
        now: Instant,
        list_reads: &AtomicU64,
    ) -> Option<Reopen> {
        let counters = stream.counters();
        let counts = StreamCounts {
            callbacks: counters.callbacks.load(Ordering::Relaxed),
            errors: counters.errors.load(Ordering::Relaxed),
            fatal_errors: counters.fatal_errors.load(Ordering::Relaxed),
        };
        let (new_errors, list_due) = match self.health.look(self.ms(now), counts) {
            HealthCheck::Reopen(why) => return Some(why),
            HealthCheck::Fine { new_errors } => (new_errors, false),
            HealthCheck::ListDue { new_errors } => (new_errors, true),
        };
        if new_errors > 0 {
            self.error_log.warn(
                now,
                format_args!("{new_errors} error(s) on the {} stream", self.direction),
            );
        }
        // Between the server's news of its devices (where the stream hears them), the list
        // the last read saw still stands.
        if !list_due || !counters.device_list_may_have_changed() {
            return None;
        }
        list_reads.fetch_add(1, Ordering::Relaxed);
        let direction = self.direction;
        let probe = self.probe.get_or_insert_with(DeviceProbe::new);
        let devices = probe.list(direction).ok()?;
        let chosen_listed = self
            .wanted
            .as_deref()
            .map(|wanted| devices.iter().any(|device| device.id == wanted));
        judge_listing(chosen_listed, self.fell_back, || {
            probe
                .default_id(direction)
                .is_some_and(|default| default != stream.device_id())
        })
    }
}
