//! Settings' microphone test: the chosen microphone opened on its own, beside any call, and its
//! level sent to the dialog a few times a second until the dialog stops it (or a minute
//! passes, so a test left running does not keep the microphone open).
//!
//! Why a thread of its own: opening a device blocks, and reading it is a loop; neither belongs
//! on the async runtime. The thread only reads the capture ring and meters it.

use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tauri::{AppHandle, Emitter};
use walkie_audio::device::Capture;
use walkie_audio::meter::LevelMeter;

use crate::CommandError;

/// The event the dialog listens to: a [`MicTestReport`].
pub(crate) const MIC_TEST_EVENT: &str = "walkie://mic-test";
/// A test stops by itself after this long.
const LONGEST_TEST: Duration = Duration::from_secs(60);
/// How often the ring is read (the meter reads 20 times a second of audio).
const READ_EVERY: Duration = Duration::from_millis(50);
/// The capture ring: room for a few reads.
const RING_MS: u32 = 500;

/// One piece of news of test number `test` (the number [`mic_test_start`] returned), so the
/// dialog can tell a test it stopped from the one it started after.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub(crate) struct MicTestReport {
    test: u64,
    #[serde(flatten)]
    news: MicTestNews,
}

/// What the dialog is told of the test.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub(crate) enum MicTestNews {
    /// A reading of the microphone's level.
    Level {
        #[serde(rename = "rmsDbfs")]
        rms_dbfs: f32,
    },
    /// The microphone could not be opened: why.
    Failed { reason: String },
    /// The test ended (stopped, or after a minute).
    Stopped,
}

/// The test running now, if any (setting its flag stops it), and the last test's number.
#[derive(Default)]
pub(crate) struct MicTest {
    running: Mutex<Option<Arc<AtomicBool>>>,
    started: AtomicU64,
}

impl MicTest {
    fn replace(&self, next: Option<Arc<AtomicBool>>) {
        let mut running = self
            .running
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(stop) = running.take() {
            stop.store(true, Ordering::Relaxed);
        }
        *running = next;
    }
}

/// Opens `device` (empty: the system default) and reports its level until stopped; a test
/// already running is stopped first. Returns the new test's number.
#[tauri::command]
pub(crate) fn mic_test_start(
    app: AppHandle,
    test: tauri::State<'_, MicTest>,
    device: String,
) -> Result<u64, CommandError> {
    let stop = Arc::new(AtomicBool::new(false));
    test.replace(Some(stop.clone()));
    let number = test.started.fetch_add(1, Ordering::Relaxed) + 1;
    let device = Some(device.trim().to_owned()).filter(|device| !device.is_empty());
    std::thread::Builder::new()
        .name("walkie-mic-test".to_owned())
        .spawn(move || run(&app, number, device.as_deref(), &stop))
        .map_err(|error| CommandError::Background(error.to_string()))?;
    Ok(number)
}

/// Stops the running test, if any.
#[tauri::command]
pub(crate) fn mic_test_stop(test: tauri::State<'_, MicTest>) {
    test.replace(None);
}

fn run(app: &AppHandle, test: u64, device: Option<&str>, stop: &AtomicBool) {
    let tell = |news: MicTestNews| {
        if let Err(error) = app.emit(MIC_TEST_EVENT, MicTestReport { test, news }) {
            log::warn!("the microphone test could not reach the window: {error}");
        }
    };
    let mut capture = match Capture::open(device, RING_MS) {
        Ok(capture) => capture,
        Err(error) => {
            log::info!("the microphone test could not open the microphone: {error}");
            tell(MicTestNews::Failed {
                reason: error.to_string(),
            });
            return;
        }
    };
    let mut meter = LevelMeter::new(capture.format().sample_rate_hz, 20);
    let mut samples = Vec::new();
    let started = Instant::now();
    while !stop.load(Ordering::Relaxed) && started.elapsed() < LONGEST_TEST {
        std::thread::sleep(READ_EVERY);
        samples.clear();
        capture.read_into(&mut samples);
        let mut newest = None;
        meter.feed(&samples, |level| newest = Some(level));
        if let Some(level) = newest {
            tell(MicTestNews::Level {
                rms_dbfs: level.rms_dbfs,
            });
        }
    }
    drop(capture);
    tell(MicTestNews::Stopped);
}
