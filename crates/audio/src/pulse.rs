//! Streams on a PulseAudio (or PipeWire-Pulse) device through libpulse directly: one thread
//! per stream runs its own libpulse main loop and moves each period between the server and a
//! lock-free ring right where the server's request (or data) is handled.
//!
//! Why not through another layer: every wakeup costs CPU, and the layers add wakeups. cpal 0.18's
//! pure-Rust client zero-fills 1 MiB per socket read and polls timing after every period;
//! alsa-lib's `pulse` plugin runs a libpulse thread that asks for timing after every write, plus a
//! thread of its own that the plugin wakes through a pipe. Here a period is one wakeup: the
//! server's request arrives, the period is written in the same main-loop iteration; capture data is
//! read once a period, however often the server posts it (ten times a second while the engine
//! says nothing needs it sooner: between presses). Timing is asked for once a second, only
//! for the latency estimate.
//!
//! The thread's rules are the callback's rules ([`crate::device`]): once the stream runs it
//! only converts samples between a period buffer (allocated before the loop) and the ring,
//! bumps atomics and calls libpulse; it never logs. A stream the server kills (its device
//! removed) counts a fatal error and ends the thread; a suspended device simply stops asking,
//! which the engine sees as a stall. All libpulse objects live and die on the thread.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use libpulse_binding as pa;
use pa::context::subscribe::{Facility, InterestMaskSet, Operation as Change};
use pa::context::{Context, FlagSet as ContextFlags, State as ContextState};
use pa::def::BufferAttr;
use pa::mainloop::standard::Mainloop;
use pa::sample::{Format, Spec};
use pa::stream::{FlagSet as StreamFlags, Latency, PeekResult, SeekMode, State, Stream};
use pa::time::MicroSeconds;

use crate::device::{DeviceDirection, StreamCounters};

/// How long opening may take before it counts as failed.
const OPEN_TIMEOUT: Duration = Duration::from_secs(2);
/// The longest the thread sleeps in the main loop before it looks at its stop flag.
const POLL_AT_MOST: MicroSeconds = MicroSeconds(100_000);
/// How often the latency estimate is refreshed (one round trip to the server).
const TIMING_EVERY: Duration = Duration::from_secs(1);
/// How long a capture stream reads audio as it arrives before it settles to once a period.
const CAPTURE_STEADY_AFTER: Duration = Duration::from_millis(300);
/// Main-loop iterations without blocking that one capture wakeup may take to empty the socket.
const MAX_QUICK_ITERATIONS: u32 = 64;
/// How often a capture stream at rest ([`PulseStream::rest`]) reads what the server sent.
const RESTING_READ_EVERY: Duration = Duration::from_millis(100);
/// Samples in the capture conversion buffer: larger reads are converted in pieces.
const CAPTURE_PIECE_SAMPLES: usize = 4_800;

/// What the stream was set up with (mono i16, at the device's rate).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PulseSetup {
    pub rate_hz: u32,
    pub period_frames: usize,
}

/// A running stream thread; dropping it stops the thread and closes the stream.
pub(crate) struct PulseStream {
    stop: Arc<AtomicBool>,
    resting: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl PulseStream {
    /// A capture stream at rest reads what the server sent every [`RESTING_READ_EVERY`]
    /// instead of every period (what it has not read waits in the socket); leaving rest wakes
    /// the thread to read at once. A playback stream is paced by the server and ignores it.
    pub(crate) fn rest(&self, resting: bool) {
        let was_resting = self.resting.swap(resting, Ordering::AcqRel);
        if was_resting
            && !resting
            && let Some(thread) = &self.thread
        {
            thread.thread().unpark();
        }
    }
}

impl Drop for PulseStream {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(thread) = self.thread.take() {
            // A capture thread between reads sleeps until woken or its read is due.
            thread.thread().unpark();
            let _ = thread.join();
        }
    }
}

/// What a stream's thread hands its `work` closure.
pub(crate) enum Period<'a> {
    /// Playback: fill `samples`; the first of them is heard after `latency`.
    Play {
        samples: &'a mut [i16],
        latency: Duration,
    },
    /// Playback: the server ran dry and played on past the end of what was written; the
    /// thread writes `frames` of zeros in that place, and a period more (see [`Opened::run`]).
    Missed { frames: usize },
    /// Capture: these samples arrived.
    Captured(&'a [i16]),
}

/// Opens the stream on device `device` (a PulseAudio sink or source name) and starts its
/// thread. `work` gets every period (see [`Period`]).
pub(crate) fn open(
    device: &str,
    direction: DeviceDirection,
    rate_hz: u32,
    period_ms: u32,
    work: impl FnMut(Period<'_>) + Send + 'static,
    counters: Arc<StreamCounters>,
) -> Result<(PulseStream, PulseSetup), String> {
    let stop = Arc::new(AtomicBool::new(false));
    let resting = Arc::new(AtomicBool::new(false));
    let (ready_tx, ready_rx) = mpsc::channel();
    let thread_stop = stop.clone();
    let thread_resting = resting.clone();
    let device = device.to_owned();
    let name = match direction {
        DeviceDirection::Input => "walkie-pulse-in",
        DeviceDirection::Output => "walkie-pulse-out",
    };
    let thread = std::thread::Builder::new()
        .name(name.to_owned())
        .spawn(move || {
            let opened = Opened::connect(&device, direction, rate_hz, period_ms);
            let mut opened = match opened {
                Ok(opened) => {
                    let _ = ready_tx.send(Ok(opened.setup));
                    opened
                }
                Err(error) => {
                    let _ = ready_tx.send(Err(error));
                    return;
                }
            };
            if direction == DeviceDirection::Output {
                promote_to_real_time();
            }
            opened.run(direction, &thread_stop, &thread_resting, work, &counters);
        })
        .map_err(|error| format!("no thread for the stream: {error}"))?;
    let stream = PulseStream {
        stop,
        resting,
        thread: Some(thread),
    };
    match ready_rx.recv_timeout(OPEN_TIMEOUT) {
        Ok(Ok(setup)) => Ok((stream, setup)),
        Ok(Err(error)) => Err(error),
        Err(_) => Err("the sound server did not answer in time".to_owned()),
    }
}

/// Puts the calling thread (a speaker stream's) at real-time priority when the system allows
/// it (root, `CAP_SYS_NICE` or an `RLIMIT_RTPRIO` limit): answering the server a few
/// milliseconds late is a gap the listener hears, and other threads of the machine (the
/// webview, a browser) must not be able to make it late. Where it is not allowed, the stream
/// runs as before. The thread blocks in the main loop between periods and converts one period
/// per request, so it takes little from the machine's other threads.
fn promote_to_real_time() {
    use thread_priority::{
        RealtimeThreadSchedulePolicy, ThreadPriority, ThreadPriorityValue, ThreadSchedulePolicy,
        set_thread_priority_and_policy, thread_native_id,
    };
    const PRIORITY: u8 = 10;
    let promoted = ThreadPriorityValue::try_from(PRIORITY)
        .map_err(|error| format!("{error:?}"))
        .and_then(|value| {
            set_thread_priority_and_policy(
                thread_native_id(),
                ThreadPriority::Crossplatform(value),
                ThreadSchedulePolicy::Realtime(RealtimeThreadSchedulePolicy::Fifo),
            )
            .map_err(|error| format!("{error:?}"))
        });
    match promoted {
        Ok(()) => log::debug!("the speaker stream's thread runs at real-time priority"),
        Err(error) => log::debug!("the speaker stream's thread keeps its priority: {error}"),
    }
}

/// The libpulse objects of one stream; they never leave the stream's thread. Fields drop in
/// declaration order: the stream and the context must go before the main loop they use.
struct Opened {
    stream: Stream,
    context: Context,
    mainloop: Mainloop,
    setup: PulseSetup,
}

impl Opened {
    fn connect(
        device: &str,
        direction: DeviceDirection,
        rate_hz: u32,
        period_ms: u32,
    ) -> Result<Self, String> {
        let deadline = Instant::now() + OPEN_TIMEOUT;
        let mut mainloop = Mainloop::new().ok_or("no libpulse main loop")?;
        let mut context = Context::new(&mainloop, "Walkie").ok_or("no libpulse context")?;
        context
            .connect(None, ContextFlags::NOAUTOSPAWN, None)
            .map_err(|error| format!("cannot reach the sound server: {error}"))?;
        loop {
            iterate(&mut mainloop)?;
            match context.get_state() {
                ContextState::Ready => break,
                ContextState::Failed | ContextState::Terminated => {
                    return Err("the sound server refused the connection".to_owned());
                }
                _ if Instant::now() > deadline => return Err("connecting timed out".to_owned()),
                _ => {}
            }
        }
        let spec = Spec {
            format: Format::S16NE,
            channels: 1,
            rate: rate_hz,
        };
        if !spec.is_valid() {
            return Err(format!("unusable sample spec {spec:?}"));
        }
        let period_frames = (rate_hz * period_ms / 1000).max(1) as usize;
        let period_bytes = u32::try_from(period_frames * 2).unwrap_or(u32::MAX);
        let label = match direction {
            DeviceDirection::Input => "Walkie microphone",
            DeviceDirection::Output => "Walkie speaker",
        };
        let mut stream =
            Stream::new(&mut context, label, &spec, None).ok_or("no libpulse stream")?;
        // Three periods queued for playback: the server asks for one period at a time, so the
        // thread has two periods to answer before the server runs dry (one is too little on a
        // loaded machine), and a flush takes effect at the next
        // request (what the server already holds, up to three periods, still plays).
        // ADJUST_LATENCY makes that the whole latency (the device's own buffer included).
        // No pre-buffering (prebuf 0): a server that runs dry keeps its clock and plays
        // silence, rather than stopping until three periods are queued again and playing the
        // rest of the stream later than written. The echo canceller's reference is what was
        // written, in order: a stream that slipped against it would move the echo path for the
        // rest of the call.
        let attr = BufferAttr {
            maxlength: u32::MAX,
            tlength: period_bytes.saturating_mul(3),
            prebuf: 0,
            minreq: period_bytes,
            fragsize: period_bytes,
        };
        // DONT_MOVE: a stream whose device goes away dies (and the engine reopens and reports
        // it) instead of being moved behind the engine's back.
        let flags =
            StreamFlags::ADJUST_LATENCY | StreamFlags::INTERPOLATE_TIMING | StreamFlags::DONT_MOVE;
        match direction {
            // Corked until the first periods are written: without pre-buffering the server
            // would start at once, and drop what arrives for the moments it already played.
            DeviceDirection::Output => stream.connect_playback(
                Some(device),
                Some(&attr),
                flags | StreamFlags::START_CORKED,
                None,
                None,
            ),
            DeviceDirection::Input => stream.connect_record(Some(device), Some(&attr), flags),
        }
        .map_err(|error| format!("cannot open {device}: {error}"))?;
        loop {
            iterate(&mut mainloop)?;
            match stream.get_state() {
                State::Ready => break,
                State::Failed | State::Terminated => {
                    return Err(format!("the sound server refused the stream on {device}"));
                }
                _ if Instant::now() > deadline => return Err("opening timed out".to_owned()),
                _ => {}
            }
        }
        Ok(Self {
            stream,
            context,
            mainloop,
            setup: PulseSetup {
                rate_hz,
                period_frames,
            },
        })
    }

    /// Moves periods until `stop`. Playback: the server asks for what it played since its
    /// last request, so what it asked for and was not yet written, beyond the queue's target
    /// length, is how far it has played past the end of what was written (it ran dry, and
    /// without pre-buffering it played silence and kept its clock). Whatever is written there
    /// the server drops: the thread writes zeros in its place (and tells `work`), plus one
    /// period more for what the server may have played since it asked, so that the reply
    /// resumes after the gap, as the listener heard it, rather than losing what fell in it.
    /// The server's word that it ran dry gets that period of zeros too, before anything else
    /// is written. What was written before either arrived can still fall in the gap.
    fn run(
        &mut self,
        direction: DeviceDirection,
        stop: &AtomicBool,
        resting: &AtomicBool,
        mut work: impl FnMut(Period<'_>),
        counters: &StreamCounters,
    ) {
        let period = self.setup.period_frames;
        let mut samples = vec![0i16; period.max(CAPTURE_PIECE_SAMPLES)];
        let mut bytes = vec![0u8; period * 2];
        let mut next_timing = Instant::now();
        let period_time = Duration::from_secs_f64(period as f64 / f64::from(self.setup.rate_hz));
        let mut last_read = Instant::now();
        let mut wait = POLL_AT_MOST;
        let mut read_since_sleep = false;
        let mut quick_iterations = 0;
        let steady_from = Instant::now() + CAPTURE_STEADY_AFTER;
        // libpulse calls back on this thread, during dispatch; the count moves to the atomic
        // counters after it.
        let underflows = std::rc::Rc::new(std::cell::Cell::new(0u64));
        // The server said it ran dry, and the period of zeros owed for it is not written yet.
        let mut gap_reported = false;
        if direction == DeviceDirection::Output {
            let counted = underflows.clone();
            self.stream
                .set_underflow_callback(Some(Box::new(move || counted.set(counted.get() + 1))));
        }
        let devices = self.hear_device_changes(direction);
        while !stop.load(Ordering::Acquire) {
            let dispatched = match self
                .mainloop
                .prepare(Some(wait))
                .and_then(|()| self.mainloop.poll())
                .and_then(|_| self.mainloop.dispatch())
            {
                Ok(dispatched) => dispatched,
                Err(_) => {
                    counters.record_error(true);
                    return;
                }
            };
            if matches!(self.stream.get_state(), State::Failed | State::Terminated) {
                counters.record_error(true);
                return;
            }
            devices.tell(counters);
            let underflowed = underflows.replace(0);
            if underflowed > 0 {
                gap_reported = true;
                counters
                    .server_underflows
                    .fetch_add(underflowed, Ordering::Relaxed);
            }
            match direction {
                DeviceDirection::Output => {
                    if Instant::now() >= next_timing {
                        next_timing = Instant::now() + TIMING_EVERY;
                        drop(self.stream.update_timing_info(None));
                    }
                    'write: while let Some(room) = self
                        .stream
                        .writable_size()
                        .filter(|&room| room >= bytes.len())
                    {
                        let queue_bytes = self
                            .stream
                            .get_buffer_attr()
                            .map_or(usize::MAX, |attr| attr.tlength as usize);
                        let behind_bytes = room.saturating_sub(queue_bytes);
                        if behind_bytes > 0 || gap_reported {
                            gap_reported = false;
                            let gap_frames = (behind_bytes + bytes.len()).min(room) / 2;
                            work(Period::Missed { frames: gap_frames });
                            bytes.fill(0);
                            let mut left = gap_frames * 2;
                            while left > 0 {
                                let piece = left.min(bytes.len());
                                if self
                                    .stream
                                    .write_copy(&bytes[..piece], 0, SeekMode::Relative)
                                    .is_err()
                                {
                                    counters.record_error(false);
                                    break 'write;
                                }
                                left -= piece;
                            }
                            continue;
                        }
                        let latency = match self.stream.get_latency() {
                            Ok(Latency::Positive(MicroSeconds(us))) => Duration::from_micros(us),
                            _ => Duration::ZERO,
                        };
                        let period_samples = &mut samples[..period];
                        work(Period::Play {
                            samples: period_samples,
                            latency,
                        });
                        for (pair, sample) in bytes.chunks_exact_mut(2).zip(period_samples.iter()) {
                            pair.copy_from_slice(&sample.to_ne_bytes());
                        }
                        if self
                            .stream
                            .write_copy(&bytes, 0, SeekMode::Relative)
                            .is_err()
                        {
                            counters.record_error(false);
                            break;
                        }
                    }
                    if self.stream.is_corked().unwrap_or(false) {
                        drop(self.stream.uncork(None));
                    }
                }
                DeviceDirection::Input => loop {
                    match self.stream.peek() {
                        Ok(PeekResult::Data(data)) => {
                            for piece in data.chunks(samples.len() * 2) {
                                let count = piece.len() / 2;
                                for (sample, pair) in samples.iter_mut().zip(piece.chunks_exact(2))
                                {
                                    *sample = i16::from_ne_bytes([pair[0], pair[1]]);
                                }
                                work(Period::Captured(&samples[..count]));
                            }
                            read_since_sleep = true;
                        }
                        Ok(PeekResult::Hole(_)) => {}
                        Ok(PeekResult::Empty) => break,
                        Err(_) => {
                            counters.record_error(false);
                            break;
                        }
                    }
                    if self.stream.discard().is_err() {
                        counters.record_error(false);
                        break;
                    }
                },
            }
            if direction == DeviceDirection::Input {
                // Captured audio is read once a period, whatever the server's pace: it posts
                // data as its source produces it (a null sink's monitor every 10 ms, a desktop
                // microphone as often as its quickest reader asks), but the uplink takes whole
                // 20 ms frames, so reading sooner would only cost wakeups. Meanwhile the data
                // waits in the socket. Once awake, every message already there is taken
                // without blocking (libpulse handles one per iteration); then, if audio came,
                // the thread sleeps out the period. Not in the stream's first moments: a
                // press in privacy mode waits for the first audio of a stream just opened.
                // (At most a bounded number of quick iterations in a row: a source of events
                // that never settles must not turn this into a busy loop.)
                if dispatched > 0 && quick_iterations < MAX_QUICK_ITERATIONS {
                    quick_iterations += 1;
                    wait = MicroSeconds(0);
                    continue;
                }
                quick_iterations = 0;
                wait = POLL_AT_MOST;
                if !read_since_sleep || Instant::now() < steady_from {
                    continue;
                }
                let read_every = if resting.load(Ordering::Acquire) {
                    RESTING_READ_EVERY
                } else {
                    period_time
                };
                let next_read = last_read + read_every;
                let now = Instant::now();
                if now < next_read {
                    // Woken early when the stream leaves its rest (a press).
                    std::thread::park_timeout(next_read - now);
                }
                last_read = Instant::now();
                read_since_sleep = false;
            }
        }
        let _ = self.stream.disconnect();
        self.context.disconnect();
    }

    /// Subscribes to the server's news of the devices of `direction` (one coming or going) and
    /// of its defaults moving: what the engine's device list judges ([`StreamCounters`]), so
    /// that it reads the list only after such news instead of every second.
    fn hear_device_changes(&mut self, direction: DeviceDirection) -> DeviceNews {
        let news = DeviceNews::default();
        let changed = news.changed.clone();
        let facility_of_direction = match direction {
            DeviceDirection::Input => Facility::Source,
            DeviceDirection::Output => Facility::Sink,
        };
        self.context
            .set_subscribe_callback(Some(Box::new(move |facility, change, _index| {
                let device_came_or_went = facility == Some(facility_of_direction)
                    && matches!(change, Some(Change::New | Change::Removed));
                if device_came_or_went || facility == Some(Facility::Server) {
                    changed.set(true);
                }
            })));
        let mask = match direction {
            DeviceDirection::Input => InterestMaskSet::SOURCE,
            DeviceDirection::Output => InterestMaskSet::SINK,
        } | InterestMaskSet::SERVER;
        let subscribed = news.subscribed.clone();
        // The server's answer comes in a later iteration; the operation need not be kept.
        drop(self.context.subscribe(mask, move |success| {
            subscribed.set(Some(success));
        }));
        news
    }
}

/// What the server said of its devices in the last main-loop iteration (libpulse calls back
/// on the stream's thread, during dispatch); [`DeviceNews::tell`] moves it to the atomic
/// counters after.
#[derive(Default)]
struct DeviceNews {
    changed: std::rc::Rc<std::cell::Cell<bool>>,
    /// The subscription's answer, until told.
    subscribed: std::rc::Rc<std::cell::Cell<Option<bool>>>,
}

impl DeviceNews {
    fn tell(&self, counters: &StreamCounters) {
        if let Some(subscribed) = self.subscribed.take() {
            // What changed before the subscription took effect was not heard: the list is
            // read once more after it.
            counters.devices_changed.store(true, Ordering::Release);
            counters
                .hears_device_changes
                .store(subscribed, Ordering::Release);
        }
        if self.changed.replace(false) {
            counters.devices_changed.store(true, Ordering::Release);
        }
    }
}

/// One main-loop iteration while opening, waiting at most [`POLL_AT_MOST`] for the server.
fn iterate(mainloop: &mut Mainloop) -> Result<(), String> {
    mainloop
        .prepare(Some(POLL_AT_MOST))
        .and_then(|()| mainloop.poll())
        .and_then(|_| mainloop.dispatch())
        .map(|_| ())
        .map_err(|error| format!("the libpulse main loop failed: {error}"))
}
