//! The sound card edge: capture and playback streams whose callbacks (or stream threads) only
//! move samples through lock-free rings ([`rtrb`]) — no allocation, no lock, no logging there.
//!
//! cpal lists the devices and tells the default (on Linux its PulseAudio host wherever a
//! PulseAudio or PipeWire-Pulse server answers, ALSA otherwise). On Linux the streams run on
//! Walkie's own, cheaper code (`device/native.rs`: libpulse and alsa-lib directly); elsewhere,
//! and as the fallback, on cpal's (`device/cpal_only.rs` says so for other platforms). Both
//! sides fill the same rings through the same callbacks below. Errors are grouped by what the
//! caller must decide, as cpal groups them: a device that is gone (fall back to the default), a
//! host that is not running (tell the user), a format the device will not take (pick another).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use cpal::traits::{DeviceTrait, HostTrait, StreamTrait};

// Walkie's own streams where it has them (Linux), cpal's for every device elsewhere: the one
// place the device edge differs by platform.
#[cfg(native_streams)]
mod native;
#[cfg(not(native_streams))]
#[path = "device/cpal_only.rs"]
mod native;

/// How long cpal may take to open a stream before the open counts as failed.
const OPEN_TIMEOUT: Duration = Duration::from_secs(2);

/// The playback period asked for: 10 ms. Short enough that a flush is heard at once (it takes
/// effect at the next period) and a reply starts soon; hosts left to their default buffer up
/// to seconds (a PulseAudio stream's default target is 2 s).
pub const PERIOD_MS: u32 = 10;

/// The capture period asked for: 20 ms, one Opus frame. Nothing waits on a shorter one (the
/// uplink encodes whole frames, and a press sends the warm mic's pre-roll at once), and each
/// period is a wakeup of the sound server's client and of the stream thread: half as many
/// cost measurably less CPU (docs/benchmarks.md).
pub const CAPTURE_PERIOD_MS: u32 = 20;

pub use walkie_session::DeviceDirection;

/// Why a device could not be used, grouped by what the caller does about it.
#[derive(Debug, thiserror::Error)]
pub enum DeviceError {
    /// The device is gone or there is none: fall back to the default, or tell the user.
    #[error("no {direction} available{}", id.as_ref().map(|id| format!(" with id {id}")).unwrap_or_default())]
    Unavailable {
        direction: DeviceDirection,
        id: Option<String>,
    },
    /// The sound system itself is not reachable.
    #[error("the sound system is not available: {0}")]
    Host(String),
    /// The device refused every format Walkie can use.
    #[error("the {direction} does not support a usable format: {reason}")]
    Unsupported {
        direction: DeviceDirection,
        reason: String,
    },
    /// Opening or starting the stream failed for another reason.
    #[error("could not open the {direction}: {reason}")]
    Open {
        direction: DeviceDirection,
        reason: String,
    },
}

impl DeviceError {
    fn from_cpal(direction: DeviceDirection, error: cpal::Error) -> Self {
        use cpal::ErrorKind;
        let reason = error.to_string();
        match error.kind() {
            ErrorKind::DeviceNotAvailable => DeviceError::Unavailable {
                direction,
                id: None,
            },
            ErrorKind::HostUnavailable => DeviceError::Host(reason),
            ErrorKind::UnsupportedConfig | ErrorKind::UnsupportedOperation => {
                DeviceError::Unsupported { direction, reason }
            }
            _ => DeviceError::Open { direction, reason },
        }
    }
}

/// A device as the settings screen lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceInfo {
    /// Stable across runs where the host allows it; what settings persist.
    pub id: String,
    /// Readable, for people.
    pub name: String,
    pub is_default: bool,
}

fn device_info(device: &cpal::Device, default_id: Option<&str>) -> Option<DeviceInfo> {
    let id = device.id().ok()?.to_string();
    let name = device
        .description()
        .map(|description| description.to_string())
        .unwrap_or_else(|_| id.clone());
    Some(DeviceInfo {
        is_default: default_id == Some(id.as_str()),
        id,
        name,
    })
}

/// The devices that can capture (`DeviceDirection::Input`) or play (`DeviceDirection::Output`).
pub fn list_devices(direction: DeviceDirection) -> Result<Vec<DeviceInfo>, DeviceError> {
    list_on(sound_system(), direction)
}

fn list_on(host: &cpal::Host, direction: DeviceDirection) -> Result<Vec<DeviceInfo>, DeviceError> {
    let default = match direction {
        DeviceDirection::Input => host.default_input_device(),
        DeviceDirection::Output => host.default_output_device(),
    };
    let default_id = default.and_then(|d| d.id().ok()).map(|id| id.to_string());
    let devices = host
        .devices()
        .map_err(|error| DeviceError::from_cpal(direction, error))?;
    Ok(devices
        .filter(|device| match direction {
            DeviceDirection::Input => device.supports_input(),
            DeviceDirection::Output => device.supports_output(),
        })
        .filter_map(|device| device_info(&device, default_id.as_deref()))
        .collect())
}

/// The chosen device, or the default when none is chosen.
fn find_device(direction: DeviceDirection, id: Option<&str>) -> Result<cpal::Device, DeviceError> {
    let host = sound_system();
    let unavailable = || DeviceError::Unavailable {
        direction,
        id: id.map(str::to_owned),
    };
    match id {
        Some(id) => {
            let parsed: cpal::DeviceId = id.parse().map_err(|_| unavailable())?;
            host.device_by_id(&parsed).ok_or_else(unavailable)
        }
        None => match direction {
            DeviceDirection::Input => host.default_input_device(),
            DeviceDirection::Output => host.default_output_device(),
        }
        .ok_or_else(unavailable),
    }
}

/// The process's one connection to the sound system. cpal's PulseAudio host keeps its server
/// connection after it is dropped, so a host per call (each engine start, each device list)
/// would pile up connections until the server refuses more (64 by default; a redial soak hit
/// it after 34 calls); one host for the process keeps them constant.
fn sound_system() -> &'static cpal::Host {
    static HOST: std::sync::OnceLock<cpal::Host> = std::sync::OnceLock::new();
    HOST.get_or_init(cpal::default_host)
}

/// Watches the devices on one long-lived connection to the sound system, for the engine's
/// periodic checks (a chosen device that vanished, a default that moved). Opening a host per
/// check would open a new server connection each time.
pub struct DeviceProbe {
    host: &'static cpal::Host,
}

impl std::fmt::Debug for DeviceProbe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DeviceProbe")
    }
}

impl DeviceProbe {
    pub fn new() -> Self {
        Self {
            host: sound_system(),
        }
    }

    pub fn list(&self, direction: DeviceDirection) -> Result<Vec<DeviceInfo>, DeviceError> {
        list_on(self.host, direction)
    }

    /// The id of the current default device, if there is one.
    pub fn default_id(&self, direction: DeviceDirection) -> Option<String> {
        match direction {
            DeviceDirection::Input => self.host.default_input_device(),
            DeviceDirection::Output => self.host.default_output_device(),
        }
        .and_then(|device| device.id().ok())
        .map(|id| id.to_string())
    }
}

impl Default for DeviceProbe {
    fn default() -> Self {
        Self::new()
    }
}

/// Counters the callbacks bump (atomics only), read by the worker and the UI.
#[derive(Debug, Default)]
pub struct StreamCounters {
    /// Frames that did not fit the ring and were dropped (capture) or frames of silence
    /// played because the ring was empty (playback).
    pub xrun_frames: AtomicU64,
    /// Errors cpal reported on the stream since it opened.
    pub errors: AtomicU64,
    /// Of those, the ones saying the device is gone or the stream is dead: reopen.
    pub fatal_errors: AtomicU64,
    /// Data callbacks so far: a count that stops moving means a stalled stream.
    pub callbacks: AtomicU64,
    /// The largest callback seen, in frames: the device period actually granted.
    pub max_callback_frames: AtomicU64,
    /// Times the sound server ran out of what this playback stream wrote (PulseAudio's
    /// underflow): the stream's thread answered too late, and the listener heard a gap. The
    /// ring running dry is `xrun_frames` instead; this one the engine cannot see otherwise.
    pub server_underflows: AtomicU64,
    /// Silence the sound server played past the end of what this playback stream had written
    /// when it ran dry, in frames, as the stream's thread bridged it (what it wrote before it
    /// could tell, and the server dropped, is not in it).
    pub server_gap_frames: AtomicU64,
    /// Set once the stream hears of the sound server's device changes (PulseAudio's
    /// subscription to its sinks or sources, and to the server's defaults): from then on the
    /// device list needs reading only when [`StreamCounters::devices_changed`] says so.
    pub hears_device_changes: AtomicBool,
    /// A device of the stream's direction came or went, or the server's default moved, since
    /// the engine last read the device list (meaningful once `hears_device_changes`).
    pub devices_changed: AtomicBool,
}

impl StreamCounters {
    /// Whether the device list is worth reading now: always, unless the stream hears of
    /// the server's changes and none came since the last time this was asked.
    pub fn device_list_may_have_changed(&self) -> bool {
        let changed = self.devices_changed.swap(false, Ordering::AcqRel);
        changed || !self.hears_device_changes.load(Ordering::Acquire)
    }

    fn callback(&self, frames: usize) {
        self.callbacks.fetch_add(1, Ordering::Relaxed);
        self.max_callback_frames
            .fetch_max(frames as u64, Ordering::Relaxed);
    }

    fn error(&self, error: &cpal::Error) {
        self.record_error(matches!(
            error.kind(),
            cpal::ErrorKind::DeviceNotAvailable | cpal::ErrorKind::StreamInvalidated
        ));
    }

    /// One error; `fatal`: the stream is dead and must be reopened.
    pub(crate) fn record_error(&self, fatal: bool) {
        self.errors.fetch_add(1, Ordering::Relaxed);
        if fatal {
            self.fatal_errors.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// What the device runs at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StreamFormat {
    pub sample_rate_hz: u32,
    pub channels: u16,
}

fn stream_config(
    device: &cpal::Device,
    direction: DeviceDirection,
) -> Result<(cpal::StreamConfig, cpal::SampleFormat), DeviceError> {
    let supported = match direction {
        DeviceDirection::Input => device.default_input_config(),
        DeviceDirection::Output => device.default_output_config(),
    }
    .map_err(|error| DeviceError::from_cpal(direction, error))?;
    let format = supported.sample_format();
    let period_frames = supported.sample_rate() * PERIOD_MS / 1000;
    let buffer_size = match supported.buffer_size() {
        cpal::SupportedBufferSize::Range { min, max } if (*min..=*max).contains(&period_frames) => {
            cpal::BufferSize::Fixed(period_frames)
        }
        _ => cpal::BufferSize::Default,
    };
    let config = cpal::StreamConfig {
        channels: supported.channels(),
        sample_rate: supported.sample_rate(),
        buffer_size,
    };
    Ok((config, format))
}

/// An open microphone. Samples arrive down-mixed to mono, as f32 at the device's rate.
pub struct Capture {
    stream: StreamHandle,
    ring: rtrb::Consumer<f32>,
    marks: rtrb::Consumer<DeviceMark>,
    format: StreamFormat,
    counters: Arc<StreamCounters>,
    device_id: String,
}

impl std::fmt::Debug for Capture {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Capture")
            .field("format", &self.format)
            .finish()
    }
}

/// Where a stream stood at one of its callbacks: frame `frames` of the stream (counted from
/// its first, silence included) is heard (a speaker) or was captured (a microphone) at `at`.
/// What the echo canceller measures the two clocks against each other by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceMark {
    pub at: Instant,
    pub frames: u64,
}

/// Marks a callback may leave before the reader takes them (over a second of periods); a
/// full ring drops the newest, which the reader sees as a gap.
const MARKS_HELD: usize = 256;

/// A stream's callback's end of its marks. Allocation-free.
struct MarkWriter {
    marks: rtrb::Producer<DeviceMark>,
    frames: u64,
}

fn mark_ring() -> (MarkWriter, rtrb::Consumer<DeviceMark>) {
    let (marks, reader) = rtrb::RingBuffer::new(MARKS_HELD);
    (MarkWriter { marks, frames: 0 }, reader)
}

impl MarkWriter {
    /// The stream's frame count now stands at `at` (a full ring drops the mark).
    fn mark(&mut self, at: Instant) {
        let _dropped_when_full = self.marks.push(DeviceMark {
            at,
            frames: self.frames,
        });
    }

    fn advance(&mut self, frames: usize) {
        self.frames += frames as u64;
    }
}

/// A capture callback's end of the ring, and of its marks.
struct CaptureWriter {
    samples: rtrb::Producer<f32>,
    marks: MarkWriter,
}

/// A ring for a capture stream at `rate_hz` holding `ring_ms`, and its marks.
fn capture_ring(rate_hz: u32, ring_ms: u32) -> (CaptureWriter, CaptureReader) {
    let (samples, sample_reader) = rtrb::RingBuffer::new(ring_capacity(rate_hz, ring_ms));
    let (marks, mark_reader) = mark_ring();
    (
        CaptureWriter { samples, marks },
        CaptureReader {
            samples: sample_reader,
            marks: mark_reader,
        },
    )
}

/// The reader's end of a capture ring.
struct CaptureReader {
    samples: rtrb::Consumer<f32>,
    marks: rtrb::Consumer<DeviceMark>,
}

/// Writes one callback's interleaved frames, down-mixed, into the ring, and marks where the
/// stream stands after them. Allocation-free.
fn push_mono<T: Copy>(
    writer: &mut CaptureWriter,
    data: &[T],
    channels: usize,
    to_f32: impl Fn(T) -> f32,
    counters: &StreamCounters,
) {
    let frames = data.len() / channels;
    counters.callback(frames);
    let ring = &mut writer.samples;
    let room = ring.slots().min(frames);
    if let Ok(chunk) = ring.write_chunk_uninit(room) {
        let scale = 1.0 / channels as f32;
        chunk.fill_from_iter(
            data.chunks_exact(channels)
                .map(|frame| frame.iter().map(|&s| to_f32(s)).sum::<f32>() * scale),
        );
    }
    if room < frames {
        counters
            .xrun_frames
            .fetch_add((frames - room) as u64, Ordering::Relaxed);
    }
    writer.marks.advance(frames);
    writer.marks.mark(Instant::now());
}

/// How a stream is opened.
enum Route {
    /// A stream of Walkie's own ([`native`]), with cpal's to fall back on where it has one.
    #[cfg_attr(
        not(native_streams),
        expect(dead_code, reason = "none on this platform")
    )]
    Native(native::NativeRoute),
    /// cpal's own stream.
    Cpal(CpalChoice),
}

/// What opening a stream in either direction starts with: the route, and the id actually
/// opened (the default resolved), for fallback reports.
struct Opening {
    route: Route,
    opened_id: String,
}

impl Opening {
    fn prepare(direction: DeviceDirection, device_id: Option<&str>) -> Result<Self, DeviceError> {
        if let Some(opening) = native::by_name(device_id) {
            return Ok(opening);
        }
        let device = find_device(direction, device_id)?;
        let parsed_id = device.id().ok();
        let opened_id = parsed_id
            .as_ref()
            .map(|id| id.to_string())
            .unwrap_or_else(|| device_id.unwrap_or_default().to_owned());
        let (config, sample_format) = stream_config(&device, direction)?;
        let route = native::route(parsed_id.as_ref(), (device, config, sample_format));
        Ok(Self { route, opened_id })
    }
}

fn ring_capacity(rate_hz: u32, ring_ms: u32) -> usize {
    (rate_hz as usize * ring_ms as usize / 1000).max(1024)
}

/// A playback stream of Walkie's own (libpulse or an ALSA PCM): the stream, the ring it
/// plays from, its format, what it shares, and its reference tap.
type NativePlayback = (
    StreamHandle,
    rtrb::Producer<f32>,
    StreamFormat,
    Arc<PlaybackShared>,
    Option<TapReader>,
);

/// A capture stream of Walkie's own: the stream, its ring, its format and its counters.
type NativeCapture = (
    StreamHandle,
    CaptureReader,
    StreamFormat,
    Arc<StreamCounters>,
);

/// cpal's device, configuration and sample format: what a stream falls back to.
type CpalChoice = (cpal::Device, cpal::StreamConfig, cpal::SampleFormat);

/// What a [`Route`] opened: a stream of Walkie's own (libpulse or an ALSA PCM), or the cpal
/// device to open one on.
#[cfg_attr(
    not(native_streams),
    expect(dead_code, reason = "none on this platform")
)]
enum Opened<T> {
    Native(T),
    /// Boxed: opened once per stream, and it keeps the enum small.
    Cpal(Box<CpalChoice>),
}

/// The running stream behind a [`Capture`] or [`Playback`]: dropping it closes the stream.
enum StreamHandle {
    Cpal(#[expect(dead_code, reason = "held to be dropped")] cpal::Stream),
    #[cfg_attr(
        not(native_streams),
        expect(dead_code, reason = "none on this platform")
    )]
    Native(native::NativeStream),
}

impl StreamHandle {
    /// Whether anything needs the stream's audio within a period ([`Capture::rest`]); cpal's
    /// streams go on as they are.
    fn rest(&self, resting: bool) {
        match self {
            StreamHandle::Native(native) => native.rest(resting),
            StreamHandle::Cpal(_) => {}
        }
    }
}

impl Capture {
    /// At rest (`true`), nothing needs the microphone's audio within a period: a stream of
    /// Walkie's own on PulseAudio then reads what the server sent ten times a second rather
    /// than once a period, and `false` has it read at once and every period again. Nothing
    /// captured is lost either way: what is not read yet waits at the server.
    pub fn rest(&self, resting: bool) {
        self.stream.rest(resting);
    }

    /// Opens the chosen microphone (`None`: the default) with a ring holding `ring_ms`.
    pub fn open(device_id: Option<&str>, ring_ms: u32) -> Result<Self, DeviceError> {
        let direction = DeviceDirection::Input;
        let Opening { route, opened_id } = Opening::prepare(direction, device_id)?;
        let (device, config, sample_format) = match route {
            Route::Native(route) => match native::open_capture(route, ring_ms)? {
                Opened::Native((stream, reader, format, counters)) => {
                    return Ok(Self {
                        stream,
                        ring: reader.samples,
                        marks: reader.marks,
                        format,
                        counters,
                        device_id: opened_id,
                    });
                }
                Opened::Cpal(choice) => *choice,
            },
            Route::Cpal(choice) => choice,
        };
        let channels = usize::from(config.channels.max(1));
        let format = StreamFormat {
            sample_rate_hz: config.sample_rate,
            channels: config.channels,
        };
        let (mut writer, reader) = capture_ring(format.sample_rate_hz, ring_ms);
        let counters = Arc::new(StreamCounters::default());
        let (data_counters, error_counters) = (counters.clone(), counters.clone());
        let on_error = move |error: cpal::Error| error_counters.error(&error);
        let stream = match sample_format {
            cpal::SampleFormat::F32 => device.build_input_stream::<f32, _, _>(
                config,
                move |data: &[f32], _| {
                    push_mono(&mut writer, data, channels, |s| s, &data_counters)
                },
                on_error,
                Some(OPEN_TIMEOUT),
            ),
            cpal::SampleFormat::I16 => device.build_input_stream::<i16, _, _>(
                config,
                move |data: &[i16], _| {
                    push_mono(&mut writer, data, channels, i16_to_f32, &data_counters)
                },
                on_error,
                Some(OPEN_TIMEOUT),
            ),
            other => {
                return Err(DeviceError::Unsupported {
                    direction,
                    reason: format!("sample format {other} (Walkie reads f32 or i16)"),
                });
            }
        }
        .map_err(|error| DeviceError::from_cpal(direction, error))?;
        stream
            .play()
            .map_err(|error| DeviceError::from_cpal(direction, error))?;
        Ok(Self {
            stream: StreamHandle::Cpal(stream),
            ring: reader.samples,
            marks: reader.marks,
            format,
            counters,
            device_id: opened_id,
        })
    }

    pub fn format(&self) -> StreamFormat {
        self.format
    }

    /// The id of the device actually opened (the default's own id when none was chosen).
    pub fn device_id(&self) -> &str {
        &self.device_id
    }

    pub fn counters(&self) -> &StreamCounters {
        &self.counters
    }

    /// Where the stream stood at each callback since the last call, oldest first.
    pub fn read_marks(&mut self, mut each: impl FnMut(DeviceMark)) {
        while let Ok(mark) = self.marks.pop() {
            each(mark);
        }
    }

    /// Moves every captured sample so far into `out`; returns how many.
    pub fn read_into(&mut self, out: &mut Vec<f32>) -> usize {
        let available = self.ring.slots();
        let Ok(chunk) = self.ring.read_chunk(available) else {
            return 0;
        };
        let (first, second) = chunk.as_slices();
        out.extend_from_slice(first);
        out.extend_from_slice(second);
        chunk.commit_all();
        available
    }
}

/// What the playback callback shares with the rest of the program: atomics only.
#[derive(Debug)]
struct PlaybackShared {
    flush_requested: AtomicU64,
    flush_honoured: AtomicU64,
    /// `played_frames` right after the last flush was requested, and when it was honoured:
    /// their difference is what played after a barge-in.
    flush_requested_at_frames: AtomicU64,
    flush_honoured_at_frames: AtomicU64,
    played_frames: AtomicU64,
    /// The reply is held ([`PlaybackFlusher::hold`]): the device plays silence and the ring
    /// keeps what is queued.
    held: AtomicBool,
    /// When the last callback started (ns since the stream opened) and `played_frames` then.
    last_callback_ns: AtomicU64,
    frames_before_last_callback: AtomicU64,
    /// cpal's estimate of the time from a callback to its first sample being heard.
    output_latency_us: AtomicU64,
    counters: Arc<StreamCounters>,
    opened: Instant,
}

impl PlaybackShared {
    fn new() -> Arc<Self> {
        Arc::new(Self {
            flush_requested: AtomicU64::new(0),
            flush_honoured: AtomicU64::new(0),
            flush_requested_at_frames: AtomicU64::new(0),
            flush_honoured_at_frames: AtomicU64::new(0),
            played_frames: AtomicU64::new(0),
            held: AtomicBool::new(false),
            last_callback_ns: AtomicU64::new(0),
            frames_before_last_callback: AtomicU64::new(0),
            output_latency_us: AtomicU64::new(0),
            counters: Arc::new(StreamCounters::default()),
            opened: Instant::now(),
        })
    }

    fn request_flush(&self) {
        self.held.store(false, Ordering::Release);
        self.flush_requested.fetch_add(1, Ordering::AcqRel);
        self.flush_requested_at_frames.store(
            self.played_frames.load(Ordering::Acquire),
            Ordering::Release,
        );
    }
}

/// A handle that flushes a [`Playback`] from another thread (the barge-in path), without
/// waiting for whoever owns the stream.
#[derive(Clone, Debug)]
pub struct PlaybackFlusher(Arc<PlaybackShared>);

impl PlaybackFlusher {
    /// Everything queued is dropped at the device's next period (and a hold ends).
    pub fn flush(&self) {
        self.0.request_flush();
    }

    /// From the device's next period, silence instead of what is queued, which waits
    /// (`true`); or what is queued again, from where it stopped (`false`).
    pub fn hold(&self, held: bool) {
        self.0.held.store(held, Ordering::Release);
    }

    /// Where the speaker stands, for latency measurements.
    pub fn clock(&self) -> PlaybackClock {
        let shared = &self.0;
        PlaybackClock {
            played_frames: shared.played_frames.load(Ordering::Acquire),
            last_callback_at: shared.opened
                + Duration::from_nanos(shared.last_callback_ns.load(Ordering::Relaxed)),
            frames_before_last_callback: shared.frames_before_last_callback.load(Ordering::Relaxed),
            output_latency: Duration::from_micros(shared.output_latency_us.load(Ordering::Relaxed)),
        }
    }

    /// Whether the last flush has been carried out by the callback.
    pub fn flush_done(&self) -> bool {
        self.0.flush_honoured.load(Ordering::Acquire)
            == self.0.flush_requested.load(Ordering::Acquire)
    }

    /// What the last flush cost (meaningful once [`Self::flush_done`]).
    pub fn last_flush(&self) -> FlushReport {
        FlushReport {
            requested_at_frames: self.0.flush_requested_at_frames.load(Ordering::Acquire),
            honoured_at_frames: self.0.flush_honoured_at_frames.load(Ordering::Acquire),
        }
    }

    /// The stream's counters.
    pub fn counters(&self) -> &StreamCounters {
        &self.0.counters
    }
}

/// Where the speaker stands: what was handed to the device, and when.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlaybackClock {
    pub played_frames: u64,
    /// The start of the last callback.
    pub last_callback_at: Instant,
    pub frames_before_last_callback: u64,
    /// From a callback to its first sample being heard, as the host estimates it.
    pub output_latency: Duration,
}

/// What the last flush cost, in frames handed to the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlushReport {
    pub requested_at_frames: u64,
    pub honoured_at_frames: u64,
}

impl FlushReport {
    /// Frames handed to the device between the request and the flush taking effect.
    pub fn frames_after_request(&self) -> u64 {
        self.honoured_at_frames
            .saturating_sub(self.requested_at_frames)
    }
}

/// An open speaker. It plays exactly what is written to it, mono f32 at the device's rate,
/// and nothing else; between writes it plays silence.
pub struct Playback {
    _stream: StreamHandle,
    ring: rtrb::Producer<f32>,
    format: StreamFormat,
    shared: Arc<PlaybackShared>,
    device_id: String,
    reference: Option<TapReader>,
}

/// What a playback stream played, as it left for the device: the echo canceller's reference.
pub struct PlayedReference {
    /// Mono samples at `rate_hz`, silence included, in the order they were played.
    pub samples: rtrb::Consumer<f32>,
    /// Where the stream stood at each callback (`frames` counts the samples above from the
    /// stream's first; `at` is when the callback's first is heard).
    pub marks: rtrb::Consumer<DeviceMark>,
    pub rate_hz: u32,
    /// The stream's clock (its output latency is the reference's lead over the speaker).
    pub clock: PlaybackFlusher,
}

impl std::fmt::Debug for PlayedReference {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PlayedReference")
            .field("rate_hz", &self.rate_hz)
            .finish_non_exhaustive()
    }
}

/// How much played audio the reference tap holds for a reader that falls behind.
const REFERENCE_TAP_MS: u32 = 1000;

/// The speaker callback's end of the reference tap: what it played, and where it stood.
struct TapWriter {
    samples: rtrb::Producer<f32>,
    marks: MarkWriter,
}

/// The reader's end of the reference tap.
struct TapReader {
    samples: rtrb::Consumer<f32>,
    marks: rtrb::Consumer<DeviceMark>,
}

/// A reference tap for a stream at `rate_hz`, when one is wanted.
fn reference_tap(wanted: bool, rate_hz: u32) -> (Option<TapWriter>, Option<TapReader>) {
    if !wanted {
        return (None, None);
    }
    let (samples, sample_reader) = rtrb::RingBuffer::new(ring_capacity(rate_hz, REFERENCE_TAP_MS));
    let (marks, mark_reader) = mark_ring();
    (
        Some(TapWriter { samples, marks }),
        Some(TapReader {
            samples: sample_reader,
            marks: mark_reader,
        }),
    )
}

impl std::fmt::Debug for Playback {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Playback")
            .field("format", &self.format)
            .field("device_id", &self.device_id)
            .finish()
    }
}

/// Fills one callback's interleaved buffer from the ring, up-mixing mono to every channel,
/// and copies what it played (silence included) to the reference tap, if there is one: the
/// echo canceller's reference is what left for the device, not what was queued. Honours a
/// pending flush first. Allocation-free.
fn pull_mono<T: Copy>(
    ring: &mut rtrb::Consumer<f32>,
    data: &mut [T],
    channels: usize,
    from_f32: impl Fn(f32) -> T,
    shared: &PlaybackShared,
    latency: Duration,
    reference: &mut Option<TapWriter>,
) {
    let frames = data.len() / channels;
    let before = shared.played_frames.load(Ordering::Relaxed);
    shared.counters.callback(frames);
    if let Some(tap) = reference.as_mut() {
        tap.marks.mark(Instant::now() + latency);
        tap.marks.advance(frames);
    }
    shared
        .last_callback_ns
        .store(shared.opened.elapsed().as_nanos() as u64, Ordering::Relaxed);
    shared
        .frames_before_last_callback
        .store(before, Ordering::Relaxed);
    shared
        .output_latency_us
        .store(latency.as_micros() as u64, Ordering::Relaxed);
    let requested = shared.flush_requested.load(Ordering::Acquire);
    if shared.flush_honoured.load(Ordering::Relaxed) != requested {
        let queued = ring.slots();
        if let Ok(chunk) = ring.read_chunk(queued) {
            chunk.commit_all();
        }
        shared
            .flush_honoured_at_frames
            .store(before, Ordering::Release);
        shared.flush_honoured.store(requested, Ordering::Release);
    }
    let held = shared.held.load(Ordering::Acquire);
    let available = if held { 0 } else { ring.slots().min(frames) };
    let mut played = 0usize;
    if let Ok(chunk) = ring.read_chunk(available) {
        let (first, second) = chunk.as_slices();
        for (frame, &sample) in data
            .chunks_exact_mut(channels)
            .zip(first.iter().chain(second.iter()))
        {
            frame.fill(from_f32(sample));
            played += 1;
        }
        if let Some(tap) = reference.as_mut() {
            // A full tap (nobody reading it) drops what does not fit.
            let (_, rest) = tap.samples.push_partial_slice(first);
            if rest.is_empty() {
                let _ = tap.samples.push_partial_slice(second);
            }
        }
        chunk.commit_all();
    }
    for frame in data.chunks_exact_mut(channels).skip(played) {
        frame.fill(from_f32(0.0));
    }
    if let Some(tap) = reference.as_mut()
        && let Ok(silence) = tap
            .samples
            .write_chunk(tap.samples.slots().min(frames - played))
    {
        // Default-initialised: zeros, the silence that played.
        silence.commit_all();
    }
    shared
        .played_frames
        .fetch_add(played as u64, Ordering::Release);
    // A held reply is silent by request: the ring did not run dry.
    if played < frames && !held {
        shared
            .counters
            .xrun_frames
            .fetch_add((frames - played) as u64, Ordering::Relaxed);
    }
}

fn callback_latency(info: &cpal::OutputCallbackInfo) -> Duration {
    let timestamp = info.timestamp();
    timestamp.playback.duration_since(timestamp.callback)
}

fn i16_to_f32(sample: i16) -> f32 {
    f32::from(sample) / 32_768.0
}

fn f32_to_i16(sample: f32) -> i16 {
    (sample * 32_768.0).round().clamp(-32_768.0, 32_767.0) as i16
}

impl Playback {
    /// Opens the chosen speaker (`None`: the default) with a ring holding `ring_ms`.
    pub fn open(device_id: Option<&str>, ring_ms: u32) -> Result<Self, DeviceError> {
        Self::open_with_reference(device_id, ring_ms, false)
    }

    /// As [`Self::open`]; with `reference`, what the stream plays is also copied to a tap
    /// that [`Self::take_reference`] hands out (for the echo canceller).
    pub fn open_with_reference(
        device_id: Option<&str>,
        ring_ms: u32,
        reference: bool,
    ) -> Result<Self, DeviceError> {
        let direction = DeviceDirection::Output;
        let Opening { route, opened_id } = Opening::prepare(direction, device_id)?;
        let (device, config, sample_format) = match route {
            Route::Native(route) => match native::open_playback(route, ring_ms, reference)? {
                Opened::Native((stream, ring, format, shared, tap)) => {
                    return Ok(Self {
                        _stream: stream,
                        ring,
                        format,
                        shared,
                        device_id: opened_id,
                        reference: tap,
                    });
                }
                Opened::Cpal(choice) => *choice,
            },
            Route::Cpal(choice) => choice,
        };
        let channels = usize::from(config.channels.max(1));
        let format = StreamFormat {
            sample_rate_hz: config.sample_rate,
            channels: config.channels,
        };
        let (producer, mut consumer) =
            rtrb::RingBuffer::new(ring_capacity(format.sample_rate_hz, ring_ms));
        let (mut tap, tap_reader) = reference_tap(reference, format.sample_rate_hz);
        let shared = PlaybackShared::new();
        let callback_shared = shared.clone();
        let error_counters = shared.counters.clone();
        let on_error = move |error: cpal::Error| error_counters.error(&error);
        let stream = match sample_format {
            cpal::SampleFormat::F32 => device.build_output_stream::<f32, _, _>(
                config,
                move |data: &mut [f32], info| {
                    pull_mono(
                        &mut consumer,
                        data,
                        channels,
                        |s| s,
                        &callback_shared,
                        callback_latency(info),
                        &mut tap,
                    )
                },
                on_error,
                Some(OPEN_TIMEOUT),
            ),
            cpal::SampleFormat::I16 => device.build_output_stream::<i16, _, _>(
                config,
                move |data: &mut [i16], info| {
                    pull_mono(
                        &mut consumer,
                        data,
                        channels,
                        f32_to_i16,
                        &callback_shared,
                        callback_latency(info),
                        &mut tap,
                    )
                },
                on_error,
                Some(OPEN_TIMEOUT),
            ),
            other => {
                return Err(DeviceError::Unsupported {
                    direction,
                    reason: format!("sample format {other} (Walkie writes f32 or i16)"),
                });
            }
        }
        .map_err(|error| DeviceError::from_cpal(direction, error))?;
        stream
            .play()
            .map_err(|error| DeviceError::from_cpal(direction, error))?;
        Ok(Self {
            _stream: StreamHandle::Cpal(stream),
            ring: producer,
            format,
            shared,
            device_id: opened_id,
            reference: tap_reader,
        })
    }

    pub fn format(&self) -> StreamFormat {
        self.format
    }

    /// The id of the device actually opened (the default's own id when none was chosen).
    pub fn device_id(&self) -> &str {
        &self.device_id
    }

    pub fn counters(&self) -> &StreamCounters {
        &self.shared.counters
    }

    /// The reference tap, once (see [`Self::open_with_reference`]).
    pub fn take_reference(&mut self) -> Option<PlayedReference> {
        let tap = self.reference.take()?;
        Some(PlayedReference {
            samples: tap.samples,
            marks: tap.marks,
            rate_hz: self.format.sample_rate_hz,
            clock: self.flusher(),
        })
    }

    /// Queues samples to play; returns how many fit (the rest is the caller's to retry).
    pub fn write(&mut self, samples: &[f32]) -> usize {
        let (written, _) = self.ring.push_partial_slice(samples);
        written.len()
    }

    /// Room left in the ring, in samples.
    pub fn free_samples(&self) -> usize {
        self.ring.slots()
    }

    /// Frames handed to the device so far: what was (or is about to be) heard.
    pub fn played_frames(&self) -> u64 {
        self.shared.played_frames.load(Ordering::Acquire)
    }

    /// Where the speaker stands, for latency measurements.
    pub fn clock(&self) -> PlaybackClock {
        self.flusher().clock()
    }

    /// Barge-in: everything queued is dropped at the device's next period.
    pub fn flush(&self) {
        self.shared.request_flush();
    }

    /// A handle that can flush this stream from another thread.
    pub fn flusher(&self) -> PlaybackFlusher {
        PlaybackFlusher(self.shared.clone())
    }

    /// Whether the last flush has been carried out by the callback.
    pub fn flush_done(&self) -> bool {
        self.flusher().flush_done()
    }

    /// What the last flush cost (meaningful once [`Self::flush_done`]).
    pub fn last_flush(&self) -> FlushReport {
        self.flusher().last_flush()
    }
}
