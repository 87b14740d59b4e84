//! Walkie's own streams, on Linux: a PulseAudio (or PipeWire-Pulse) device on libpulse
//! directly ([`crate::pulse`]), an ALSA device (`alsa:<pcm>`) on alsa-lib ([`crate::pcm`]);
//! each falls back to cpal's stream when it cannot open the device, and `WALKIE_AUDIO_STREAMS`
//! (`alsa`, `cpal`) picks another path for PulseAudio devices. Why: they wake less and cost
//! less than cpal's (docs/benchmarks.md, "Audio engine"). Everything in the device edge that
//! is one platform's is here, behind [`by_name`], [`route`], [`open_capture`] and
//! [`open_playback`]; every other platform has `cpal_only.rs` instead.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::{
    CAPTURE_PERIOD_MS, CpalChoice, DeviceDirection, DeviceError, NativeCapture, NativePlayback,
    Opened, Opening, PERIOD_MS, PlaybackShared, Route, StreamCounters, StreamFormat, StreamHandle,
    TapWriter, capture_ring, f32_to_i16, i16_to_f32, pull_mono, push_mono, reference_tap,
    ring_capacity,
};

/// The running stream, kept to be dropped.
pub(super) enum NativeStream {
    Pulse(crate::pulse::PulseStream),
    Pcm(#[expect(dead_code, reason = "held to be dropped")] crate::pcm::PcmStream),
}

impl NativeStream {
    /// See [`super::Capture::rest`]: only PulseAudio's capture streams read less at rest.
    pub(super) fn rest(&self, resting: bool) {
        if let NativeStream::Pulse(stream) = self {
            stream.rest(resting);
        }
    }
}

/// A stream of Walkie's own, and cpal's to fall back on where there is one.
pub(super) enum NativeRoute {
    /// A PulseAudio device by name, served by [`crate::pulse`]. `cpal` is the fallback if
    /// libpulse cannot open it.
    Pulse {
        name: String,
        rate_hz: u32,
        cpal: CpalChoice,
    },
    /// An ALSA PCM, served by [`crate::pcm`]: every ALSA device, and PulseAudio devices
    /// through the `pulse` plugin. `cpal` is the fallback if the PCM cannot be opened (the
    /// plugin is not installed).
    Pcm {
        name: String,
        rate_hz: u32,
        cpal: Option<CpalChoice>,
    },
}

/// Which code carries a PulseAudio device's streams. `WALKIE_AUDIO_STREAMS` picks another
/// than the default: the way back if one misbehaves on some system, and the baselines the CPU
/// measurement compares against (docs/benchmarks.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum StreamsChoice {
    /// libpulse directly (`src/pulse.rs`): the default.
    Native,
    /// `alsa`: alsa-lib through the ALSA `pulse` plugin (`src/pcm.rs`).
    AlsaPlugin,
    /// `cpal`: cpal's own streams, for every device.
    Cpal,
}

impl StreamsChoice {
    fn from_env() -> Self {
        match std::env::var("WALKIE_AUDIO_STREAMS").as_deref() {
            Ok("alsa") => Self::AlsaPlugin,
            Ok("cpal") => Self::Cpal,
            _ => Self::Native,
        }
    }
}

/// The ALSA PCM that reaches PulseAudio device `name` through the `pulse` plugin, if the name
/// can be written as an argument.
fn pulse_pcm_name(name: &str) -> Option<String> {
    (!name.is_empty() && !name.contains(['"', '\\', '\n']))
        .then(|| format!("pulse:DEVICE=\"{name}\""))
}

/// An ALSA device by its PCM name (`alsa:<pcm>`): opened as it is, whether listed or not (a
/// test's `file` plugin, a name from the user's asoundrc).
pub(super) fn by_name(device_id: Option<&str>) -> Option<Opening> {
    let pcm = device_id?.strip_prefix("alsa:")?;
    Some(Opening {
        route: Route::Native(NativeRoute::Pcm {
            name: pcm.to_owned(),
            rate_hz: crate::CALL_RATE_HZ,
            cpal: None,
        }),
        opened_id: format!("alsa:{pcm}"),
    })
}

/// How the device cpal found (`id`, and cpal's own choice to fall back on) is opened.
pub(super) fn route(id: Option<&cpal::DeviceId>, cpal: CpalChoice) -> Route {
    let streams = StreamsChoice::from_env();
    let rate_hz = cpal.1.sample_rate;
    match id.map(|id| (id.host(), id.id())) {
        _ if streams == StreamsChoice::Cpal => Route::Cpal(cpal),
        Some((cpal::HostId::PulseAudio, name)) if streams == StreamsChoice::Native => {
            Route::Native(NativeRoute::Pulse {
                name: name.to_owned(),
                rate_hz,
                cpal,
            })
        }
        Some((cpal::HostId::PulseAudio, name)) => match pulse_pcm_name(name) {
            Some(name) => Route::Native(NativeRoute::Pcm {
                name,
                rate_hz,
                cpal: Some(cpal),
            }),
            None => Route::Cpal(cpal),
        },
        Some((cpal::HostId::Alsa, name)) => Route::Native(NativeRoute::Pcm {
            name: name.to_owned(),
            rate_hz,
            cpal: Some(cpal),
        }),
        _ => Route::Cpal(cpal),
    }
}

/// Opens a capture stream on `route` with a ring holding `ring_ms`, or says which cpal device
/// to open instead.
pub(super) fn open_capture(
    route: NativeRoute,
    ring_ms: u32,
) -> Result<Opened<NativeCapture>, DeviceError> {
    open_either(
        route,
        |name, rate_hz| capture_pulse(name, rate_hz, ring_ms),
        |name, rate_hz| capture_pcm(name, rate_hz, ring_ms),
    )
}

/// Opens a playback stream on `route` (with a reference tap if `reference`), or says which
/// cpal device to open instead.
pub(super) fn open_playback(
    route: NativeRoute,
    ring_ms: u32,
    reference: bool,
) -> Result<Opened<NativePlayback>, DeviceError> {
    open_either(
        route,
        |name, rate_hz| playback_pulse(name, rate_hz, ring_ms, reference),
        |name, rate_hz| playback_pcm(name, rate_hz, ring_ms, reference),
    )
}

/// Opens the route's own stream with `pulse` or `pcm`, falling back to cpal when that fails
/// and the route has a cpal device; the same steps for capture and playback.
fn open_either<T>(
    route: NativeRoute,
    pulse: impl FnOnce(&str, u32) -> Result<T, DeviceError>,
    pcm: impl FnOnce(&str, u32) -> Result<T, DeviceError>,
) -> Result<Opened<T>, DeviceError> {
    match route {
        NativeRoute::Pulse {
            name,
            rate_hz,
            cpal,
        } => match pulse(&name, rate_hz) {
            Ok(opened) => Ok(Opened::Native(opened)),
            Err(error) => {
                note_pcm_fallback(&name, &error);
                Ok(Opened::Cpal(Box::new(cpal)))
            }
        },
        NativeRoute::Pcm {
            name,
            rate_hz,
            cpal,
        } => match pcm(&name, rate_hz) {
            Ok(opened) => Ok(Opened::Native(opened)),
            Err(error) => match cpal {
                Some(cpal) => {
                    note_pcm_fallback(&name, &error);
                    Ok(Opened::Cpal(Box::new(cpal)))
                }
                None => Err(error),
            },
        },
    }
}

/// Frames in one `period_ms` at `rate_hz`.
fn period_frames(rate_hz: u32, period_ms: u32) -> usize {
    (rate_hz * period_ms / 1000).max(1) as usize
}

/// Capture buffers hold several periods: they add no latency when read at once, and give
/// the reader slack on a loaded machine.
const CAPTURE_PERIODS: usize = 4;
/// Playback buffers hold two: what is queued at the device is what a flush cannot take back.
const PLAYBACK_PERIODS: usize = 2;

fn from_alsa(direction: DeviceDirection, name: &str, error: alsa::Error) -> DeviceError {
    let reason = format!("ALSA PCM {name}: {error}");
    match error.errno() {
        libc::ENOENT | libc::ENODEV | libc::ENXIO | libc::EBUSY => DeviceError::Unavailable {
            direction,
            id: Some(format!("alsa:{name}")),
        },
        libc::EINVAL => DeviceError::Unsupported { direction, reason },
        _ => DeviceError::Open { direction, reason },
    }
}

/// The faster stream path could not open the device but cpal can: say so once per process,
/// so a missing library or plugin is visible without flooding the log.
fn note_pcm_fallback(name: &str, error: &DeviceError) {
    static NOTED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if !NOTED.swap(true, Ordering::Relaxed) {
        log::warn!(
            "could not open {name} directly ({error}); using cpal's stream, which costs more CPU"
        );
    }
}

fn capture_pulse(name: &str, rate_hz: u32, ring_ms: u32) -> Result<NativeCapture, DeviceError> {
    let direction = DeviceDirection::Input;
    let (mut writer, reader) = capture_ring(rate_hz, ring_ms);
    let counters = Arc::new(StreamCounters::default());
    let data_counters = counters.clone();
    let (stream, setup) = crate::pulse::open(
        name,
        direction,
        rate_hz,
        CAPTURE_PERIOD_MS,
        move |period| {
            if let crate::pulse::Period::Captured(data) = period {
                push_mono(&mut writer, data, 1, i16_to_f32, &data_counters);
            }
        },
        counters.clone(),
    )
    .map_err(|reason| DeviceError::Open { direction, reason })?;
    let format = StreamFormat {
        sample_rate_hz: setup.rate_hz,
        channels: 1,
    };
    Ok((
        StreamHandle::Native(NativeStream::Pulse(stream)),
        reader,
        format,
        counters,
    ))
}

fn capture_pcm(name: &str, rate_hz: u32, ring_ms: u32) -> Result<NativeCapture, DeviceError> {
    let direction = DeviceDirection::Input;
    let (pcm, setup) = crate::pcm::open(
        name,
        direction,
        rate_hz,
        1,
        period_frames(rate_hz, CAPTURE_PERIOD_MS),
        CAPTURE_PERIODS,
    )
    .map_err(|error| from_alsa(direction, name, error))?;
    let channels = usize::from(setup.channels.max(1));
    let format = StreamFormat {
        sample_rate_hz: setup.rate_hz,
        channels: setup.channels,
    };
    let (mut writer, reader) = capture_ring(setup.rate_hz, ring_ms);
    let counters = Arc::new(StreamCounters::default());
    let data_counters = counters.clone();
    let spawned = match setup.kind {
        crate::pcm::SampleKind::I16 => crate::pcm::spawn::<i16>(
            pcm,
            setup,
            direction,
            move |data, _| push_mono(&mut writer, data, channels, i16_to_f32, &data_counters),
            counters.clone(),
        ),
        crate::pcm::SampleKind::F32 => crate::pcm::spawn::<f32>(
            pcm,
            setup,
            direction,
            move |data, _| push_mono(&mut writer, data, channels, |s| s, &data_counters),
            counters.clone(),
        ),
    }
    .map_err(|error| DeviceError::Open {
        direction,
        reason: format!("no thread for the stream: {error}"),
    })?;
    Ok((
        StreamHandle::Native(NativeStream::Pcm(spawned)),
        reader,
        format,
        counters,
    ))
}

fn playback_pulse(
    name: &str,
    rate_hz: u32,
    ring_ms: u32,
    reference: bool,
) -> Result<NativePlayback, DeviceError> {
    let direction = DeviceDirection::Output;
    let (producer, mut consumer) = rtrb::RingBuffer::new(ring_capacity(rate_hz, ring_ms));
    let (mut tap, tap_reader) = reference_tap(reference, rate_hz);
    let shared = PlaybackShared::new();
    let thread_shared = shared.clone();
    let (stream, setup) = crate::pulse::open(
        name,
        direction,
        rate_hz,
        PERIOD_MS,
        move |period| match period {
            crate::pulse::Period::Play { samples, latency } => pull_mono(
                &mut consumer,
                samples,
                1,
                f32_to_i16,
                &thread_shared,
                latency,
                &mut tap,
            ),
            crate::pulse::Period::Missed { frames } => {
                tap_missed_silence(frames, &thread_shared, &mut tap);
            }
            crate::pulse::Period::Captured(_) => {}
        },
        shared.counters.clone(),
    )
    .map_err(|reason| DeviceError::Open { direction, reason })?;
    let format = StreamFormat {
        sample_rate_hz: setup.rate_hz,
        channels: 1,
    };
    Ok((
        StreamHandle::Native(NativeStream::Pulse(stream)),
        producer,
        format,
        shared,
        tap_reader,
    ))
}

fn playback_pcm(
    name: &str,
    rate_hz: u32,
    ring_ms: u32,
    reference: bool,
) -> Result<NativePlayback, DeviceError> {
    let direction = DeviceDirection::Output;
    let (pcm, setup) = crate::pcm::open(
        name,
        direction,
        rate_hz,
        1,
        period_frames(rate_hz, PERIOD_MS),
        PLAYBACK_PERIODS,
    )
    .map_err(|error| from_alsa(direction, name, error))?;
    let channels = usize::from(setup.channels.max(1));
    let format = StreamFormat {
        sample_rate_hz: setup.rate_hz,
        channels: setup.channels,
    };
    let (producer, mut consumer) = rtrb::RingBuffer::new(ring_capacity(setup.rate_hz, ring_ms));
    let (mut tap, tap_reader) = reference_tap(reference, setup.rate_hz);
    let shared = PlaybackShared::new();
    let thread_shared = shared.clone();
    let spawned = match setup.kind {
        crate::pcm::SampleKind::I16 => crate::pcm::spawn::<i16>(
            pcm,
            setup,
            direction,
            move |data, latency| {
                pull_mono(
                    &mut consumer,
                    data,
                    channels,
                    f32_to_i16,
                    &thread_shared,
                    latency,
                    &mut tap,
                )
            },
            shared.counters.clone(),
        ),
        crate::pcm::SampleKind::F32 => crate::pcm::spawn::<f32>(
            pcm,
            setup,
            direction,
            move |data, latency| {
                pull_mono(
                    &mut consumer,
                    data,
                    channels,
                    |s| s,
                    &thread_shared,
                    latency,
                    &mut tap,
                )
            },
            shared.counters.clone(),
        ),
    }
    .map_err(|error| DeviceError::Open {
        direction,
        reason: format!("no thread for the stream: {error}"),
    })?;
    Ok((
        StreamHandle::Native(NativeStream::Pcm(spawned)),
        producer,
        format,
        shared,
        tap_reader,
    ))
}

/// The sound server ran dry and played `frames` of silence that nothing was written for: the
/// reference tap gets the same silence, so that what it holds stays in step with what the
/// device played. Allocation-free.
fn tap_missed_silence(frames: usize, shared: &PlaybackShared, reference: &mut Option<TapWriter>) {
    shared
        .counters
        .server_gap_frames
        .fetch_add(frames as u64, Ordering::Relaxed);
    if let Some(tap) = reference.as_mut() {
        tap.marks.advance(frames);
    }
    if let Some(tap) = reference.as_mut()
        && let Ok(silence) = tap.samples.write_chunk(tap.samples.slots().min(frames))
    {
        // Default-initialised: zeros.
        silence.commit_all();
    }
}
