//! Streams opened straight on an ALSA PCM with alsa-lib: one thread per stream that waits on
//! the PCM and moves one period between the device and a lock-free ring.
//!
//! This carries every ALSA device (`alsa:<pcm>` ids: hardware, `default` where no sound server
//! runs, a test's `file` plugin), opened by its PCM name whether cpal lists it or not. It can
//! also carry a PulseAudio device through the ALSA `pulse` plugin (`pulse:DEVICE="<name>"`,
//! `WALKIE_AUDIO_STREAMS=alsa`), an alternative to libpulse directly ([`crate::pulse`]), which
//! wakes less and queues less at the device.
//!
//! The thread's rules are the callback's rules ([`crate::device`]): once the stream runs, it
//! only converts samples between its period buffer and the ring, bumps atomics and calls
//! alsa-lib; its buffer is allocated before the loop, and it never logs. Errors are counted;
//! one that lasts is reported as fatal and ends the thread, so the engine reopens the device.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use alsa::pcm::{Access, Format, HwParams, IoFormat, PCM};
use alsa::{Direction as AlsaDirection, ValueOr};

use crate::device::{DeviceDirection, StreamCounters};

/// An error that persists this long is fatal: the pulse plugin reports a burst of transient
/// I/O errors right after a stream starts (shared/reference/build-environment.md §8.3), a
/// removed device keeps failing.
const FATAL_AFTER: Duration = Duration::from_millis(300);
/// The longest a thread waits on the PCM before it looks at its stop flag again.
const WAIT_MS: u32 = 100;
/// Between retries while an error lasts.
const RETRY_AFTER: Duration = Duration::from_millis(2);

/// The sample type the PCM runs at: what Walkie can convert without a library.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SampleKind {
    I16,
    F32,
}

/// What the PCM was set up with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PcmSetup {
    pub rate_hz: u32,
    pub channels: u16,
    pub kind: SampleKind,
    pub period_frames: usize,
    pub buffer_frames: usize,
}

/// Opens `name` and sets it up: interleaved i16 (else f32), the channel count and rate
/// nearest to the ones asked, a period of `period_frames` and a buffer of `periods` of them.
pub(crate) fn open(
    name: &str,
    direction: DeviceDirection,
    rate_hz: u32,
    channels: u16,
    period_frames: usize,
    periods: usize,
) -> Result<(PCM, PcmSetup), alsa::Error> {
    let alsa_direction = match direction {
        DeviceDirection::Input => AlsaDirection::Capture,
        DeviceDirection::Output => AlsaDirection::Playback,
    };
    let pcm = PCM::new(name, alsa_direction, true)?;
    let setup = {
        let hw = HwParams::any(&pcm)?;
        hw.set_access(Access::RWInterleaved)?;
        let kind = if hw.set_format(Format::s16()).is_ok() {
            SampleKind::I16
        } else {
            hw.set_format(Format::float())?;
            SampleKind::F32
        };
        let channels = hw.set_channels_near(u32::from(channels.max(1)))?;
        let rate_hz = hw.set_rate_near(rate_hz, ValueOr::Nearest)?;
        let period =
            hw.set_period_size_near(period_frames as alsa::pcm::Frames, ValueOr::Nearest)?;
        let buffer = hw.set_buffer_size_near(period * periods.max(2) as alsa::pcm::Frames)?;
        pcm.hw_params(&hw)?;
        PcmSetup {
            rate_hz,
            channels: u16::try_from(channels).unwrap_or(u16::MAX),
            kind,
            period_frames: usize::try_from(period).unwrap_or(1).max(1),
            buffer_frames: usize::try_from(buffer).unwrap_or(1).max(1),
        }
    };
    {
        let sw = pcm.sw_params_current()?;
        sw.set_avail_min(setup.period_frames as alsa::pcm::Frames)?;
        if direction == DeviceDirection::Output {
            // Start once the whole buffer is queued: no underrun right at the start.
            sw.set_start_threshold(setup.buffer_frames as alsa::pcm::Frames)?;
        }
        pcm.sw_params(&sw)?;
    }
    Ok((pcm, setup))
}

/// A running PCM thread; dropping it stops the thread and closes the PCM.
pub(crate) struct PcmStream {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Drop for PcmStream {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Starts the thread that serves `pcm`. `work` gets every period: for playback, the buffer to
/// fill and how long until its first sample is heard; for capture, the samples read.
pub(crate) fn spawn<T>(
    pcm: PCM,
    setup: PcmSetup,
    direction: DeviceDirection,
    work: impl FnMut(&mut [T], Duration) + Send + 'static,
    counters: Arc<StreamCounters>,
) -> std::io::Result<PcmStream>
where
    T: IoFormat + Default + Send + 'static,
{
    let stop = Arc::new(AtomicBool::new(false));
    let thread_stop = stop.clone();
    let name = match direction {
        DeviceDirection::Input => "walkie-pcm-in",
        DeviceDirection::Output => "walkie-pcm-out",
    };
    let thread = std::thread::Builder::new()
        .name(name.to_owned())
        .spawn(move || {
            let mut health = Health {
                counters,
                failing_since: None,
            };
            match direction {
                DeviceDirection::Input => capture(&pcm, setup, &thread_stop, &mut health, work),
                DeviceDirection::Output => playback(&pcm, setup, &thread_stop, &mut health, work),
            }
        })?;
    Ok(PcmStream {
        stop,
        thread: Some(thread),
    })
}

/// Error counting and recovery for one stream.
struct Health {
    counters: Arc<StreamCounters>,
    failing_since: Option<Instant>,
}

impl Health {
    /// Counts an error and tries to recover (an xrun, a suspend). `false`: the error has
    /// lasted past [`FATAL_AFTER`], the stream is dead.
    fn failed(&mut self, pcm: &PCM, error: alsa::Error) -> bool {
        if error.errno() == libc::EAGAIN {
            // Nothing to move yet: wait for the device instead of spinning.
            let _ = pcm.wait(Some(WAIT_MS));
            return true;
        }
        self.counters.record_error(false);
        if pcm.try_recover(error, true).is_ok() {
            self.failing_since = None;
            return true;
        }
        let now = Instant::now();
        let since = *self.failing_since.get_or_insert(now);
        if now.duration_since(since) >= FATAL_AFTER {
            self.counters.record_error(true);
            return false;
        }
        std::thread::sleep(RETRY_AFTER);
        true
    }

    fn succeeded(&mut self) {
        self.failing_since = None;
    }
}

fn capture<T: IoFormat + Default>(
    pcm: &PCM,
    setup: PcmSetup,
    stop: &AtomicBool,
    health: &mut Health,
    mut work: impl FnMut(&mut [T], Duration),
) {
    let channels = usize::from(setup.channels.max(1));
    let mut buffer = vec![T::default(); setup.period_frames * channels];
    let io = match pcm.io_checked::<T>() {
        Ok(io) => io,
        Err(_) => {
            health.counters.record_error(true);
            return;
        }
    };
    if let Err(error) = pcm.start()
        && !health.failed(pcm, error)
    {
        return;
    }
    while !stop.load(Ordering::Acquire) {
        match pcm.wait(Some(WAIT_MS)) {
            Ok(true) => {}
            Ok(false) => continue,
            Err(error) => {
                if !health.failed(pcm, error) {
                    return;
                }
                continue;
            }
        }
        match io.readi(&mut buffer) {
            Ok(frames) => {
                health.succeeded();
                if frames > 0 {
                    work(&mut buffer[..frames * channels], Duration::ZERO);
                }
            }
            Err(error) => {
                if !health.failed(pcm, error) {
                    return;
                }
            }
        }
    }
}

fn playback<T: IoFormat + Default>(
    pcm: &PCM,
    setup: PcmSetup,
    stop: &AtomicBool,
    health: &mut Health,
    mut work: impl FnMut(&mut [T], Duration),
) {
    let channels = usize::from(setup.channels.max(1));
    let period = setup.period_frames;
    let rate_hz = f64::from(setup.rate_hz.max(1));
    let mut buffer = vec![T::default(); period * channels];
    let io = match pcm.io_checked::<T>() {
        Ok(io) => io,
        Err(_) => {
            health.counters.record_error(true);
            return;
        }
    };
    // How much of the period in `buffer` has been written, in samples.
    let mut written = buffer.len();
    while !stop.load(Ordering::Acquire) {
        if written == buffer.len() {
            // Take the next period from the ring only once the device has room for it: a
            // flush then takes effect at the next period, not one later.
            let room = match pcm.avail_update() {
                Ok(frames) => usize::try_from(frames).unwrap_or(0),
                Err(error) => {
                    if !health.failed(pcm, error) {
                        return;
                    }
                    continue;
                }
            };
            if room < period {
                if let Err(error) = pcm.wait(Some(WAIT_MS))
                    && !health.failed(pcm, error)
                {
                    return;
                }
                continue;
            }
            let queued = pcm
                .delay()
                .ok()
                .and_then(|frames| u64::try_from(frames).ok())
                .unwrap_or(0);
            work(
                &mut buffer,
                Duration::from_secs_f64(queued as f64 / rate_hz),
            );
            written = 0;
        }
        match io.writei(&buffer[written..]) {
            Ok(frames) => {
                health.succeeded();
                written += frames * channels;
            }
            Err(error) => {
                if !health.failed(pcm, error) {
                    return;
                }
            }
        }
    }
}
