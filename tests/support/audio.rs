//! The test PulseAudio server's virtual devices, from the outside: what a test speaks into
//! the virtual microphone ("mic" null sink, whose monitor is the default source) and what it
//! hears from the virtual speaker ("spk", recorded from its monitor). scripts/test.sh starts
//! the server (scripts/pulse.sh) and exports PULSE_SERVER; the app under test inherits it.

// Each test binary uses a part of the support module.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

pub const RATE_HZ: usize = 48_000;

/// Fails with instructions when the test audio server is not running.
pub fn require_test_audio() {
    let server = std::env::var("PULSE_SERVER").unwrap_or_default();
    assert!(
        server.starts_with("unix:") && std::path::Path::new(&server[5..]).exists(),
        "this test needs the test PulseAudio server: run scripts/test.sh, or \
         `export PULSE_SERVER=$(scripts/pulse.sh start target/pulse)` first (PULSE_SERVER={server:?})"
    );
}

/// A pacat or parec process on one of the null sinks, ended when dropped.
pub struct PulseStream {
    child: Child,
    reader: Option<JoinHandle<Vec<u8>>>,
}

fn spawn(program: &str, device: &str) -> Child {
    Command::new(program)
        .args([
            "--device",
            device,
            "--format=s16le",
            "--rate=48000",
            "--channels=1",
            "--raw",
            // Generous buffering: on a loaded 2-core machine a short buffer under- or overruns.
            "--latency-msec=200",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|error| panic!("could not start {program}: {error}"))
}

impl PulseStream {
    /// Starts recording what the virtual speaker plays.
    pub fn record_speaker() -> Self {
        let mut child = spawn("parec", "spk.monitor");
        let mut stdout = child.stdout.take().expect("parec's stdout is piped");
        let reader = std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = stdout.read_to_end(&mut bytes);
            bytes
        });
        Self {
            child,
            reader: Some(reader),
        }
    }

    /// Plays `samples` into the virtual microphone and waits until pacat has drained them.
    pub fn speak_into_microphone(samples: &[i16]) {
        let mut child = spawn("pacat", "mic");
        let bytes: Vec<u8> = samples.iter().flat_map(|s| s.to_le_bytes()).collect();
        {
            let mut stdin = child.stdin.take().expect("pacat's stdin is piped");
            stdin
                .write_all(&bytes)
                .expect("feeding the virtual microphone");
        }
        let _ = child.wait();
    }

    /// Ends the recording and returns the samples heard.
    pub fn end(mut self) -> Vec<i16> {
        let _ = Command::new("kill")
            .arg(self.child.id().to_string())
            .status();
        let _ = self.child.wait();
        let bytes = self
            .reader
            .take()
            .expect("the reader runs until the recorder ends")
            .join()
            .expect("the reader thread only reads");
        bytes
            .chunks_exact(2)
            .map(|b| i16::from_le_bytes([b[0], b[1]]))
            .collect()
    }
}

impl Drop for PulseStream {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Speech-like audio: a voiced source with a wandering pitch, two formants and syllables of
/// 220 ms — loud enough for a voice-activity detector, varied enough to tell a repeat.
pub fn speech_like(seconds: f64) -> Vec<i16> {
    let count = (RATE_HZ as f64 * seconds) as usize;
    let mut phase = 0.0f64;
    (0..count)
        .map(|i| {
            let t = i as f64 / RATE_HZ as f64;
            let f0 = 140.0 + 30.0 * (2.0 * std::f64::consts::PI * 1.3 * t).sin();
            phase += 2.0 * std::f64::consts::PI * f0 / RATE_HZ as f64;
            let source: f64 = (1..=18)
                .map(|k| {
                    let freq = f0 * k as f64;
                    let formant = 1.0
                        + 2.0 * (-((freq - 700.0) / 200.0).powi(2)).exp()
                        + 1.5 * (-((freq - 1200.0) / 250.0).powi(2)).exp();
                    formant * (k as f64 * phase).sin() / k as f64
                })
                .sum();
            let syllable = (t % 0.22) / 0.22;
            let envelope = if syllable < 0.82 {
                (std::f64::consts::PI * syllable / 0.82).sin().powi(2)
            } else {
                0.05
            };
            (source * envelope * 5_000.0).clamp(-32_000.0, 32_000.0) as i16
        })
        .collect()
}

/// The duration, in 20 ms frames, from the first to the last frame louder than -30 dBFS: how
/// long the sound lasts, whatever silence surrounds it. The threshold sits well above the
/// quiet gaps between syllables (about -42 dBFS), which a codec may push either way.
pub fn sounding_span_frames(samples: &[i16]) -> usize {
    let loud: Vec<usize> = samples
        .chunks_exact(RATE_HZ / 50)
        .enumerate()
        .filter(|(_, frame)| {
            let energy: f64 = frame.iter().map(|&s| f64::from(s) * f64::from(s)).sum();
            let rms = (energy / frame.len() as f64).sqrt();
            rms > 32_768.0 * 10f64.powf(-30.0 / 20.0)
        })
        .map(|(index, _)| index)
        .collect();
    match (loud.first(), loud.last()) {
        (Some(first), Some(last)) => last - first + 1,
        _ => 0,
    }
}

/// The span, in 20 ms frames, of the first sound in `samples`: from its first frame louder
/// than -30 dBFS to the last before 300 ms of quiet. A reply cut off and a later reply are two
/// sounds; [`sounding_span_frames`] would span both.
pub fn first_sound_frames(samples: &[i16]) -> usize {
    let threshold = 32_768.0 * 10f64.powf(-30.0 / 20.0);
    let mut first = None;
    let mut last = 0;
    for (index, frame) in samples.chunks_exact(RATE_HZ / 50).enumerate() {
        let rms = (energy(frame) / frame.len() as f64).sqrt();
        if rms > threshold {
            first.get_or_insert(index);
            last = index;
        } else if first.is_some() && index - last >= 15 {
            break;
        }
    }
    first.map_or(0, |first| last - first + 1)
}

/// The signal's energy (sum of squares): played twice, it doubles.
pub fn energy(samples: &[i16]) -> f64 {
    samples.iter().map(|&s| f64::from(s) * f64::from(s)).sum()
}

/// The virtual speaker heard by the virtual microphone, as a laptop's microphone hears its
/// speakers: a PulseAudio loopback from the speaker's monitor into the microphone sink,
/// `latency_ms` late and `gain_db` quieter. Unloaded when dropped.
///
/// A fixed path, as a room is: the loopback's rate adjustment is off (`adjust_time=0`; the two
/// null sinks share one clock). Left on, it resamples continually to hold its latency, an echo
/// path whose delay keeps moving, which the echo canceller does not follow
/// (docs/benchmarks.md, clock drift). `WALKIE_LOOPBACK_ADJUST_TIME_S` turns it on, every that
/// many seconds, to measure that.
pub struct SpeakerIntoMicrophone {
    module: String,
}

impl SpeakerIntoMicrophone {
    pub fn load(latency_ms: u32, gain_db: f32) -> Self {
        let output = Command::new("pactl")
            .args([
                "load-module",
                "module-loopback",
                "source=spk.monitor",
                "sink=mic",
                &format!("latency_msec={latency_ms}"),
                &format!(
                    "adjust_time={}",
                    std::env::var("WALKIE_LOOPBACK_ADJUST_TIME_S").unwrap_or_else(|_| "0".into())
                ),
                "source_dont_move=true",
                "sink_dont_move=true",
            ])
            .output()
            .expect("pactl runs");
        assert!(output.status.success(), "the loopback loads: {output:?}");
        let module = String::from_utf8_lossy(&output.stdout).trim().to_owned();
        let loopback = Self { module };
        let inputs = Command::new("pactl")
            .args(["list", "sink-inputs"])
            .output()
            .expect("pactl runs");
        let listing = String::from_utf8_lossy(&inputs.stdout);
        // Blocks of "Sink Input #N" … "Owner Module: M".
        let input = listing
            .split("Sink Input #")
            .skip(1)
            .find(|block| {
                block
                    .lines()
                    .any(|line| line.trim() == format!("Owner Module: {}", loopback.module))
            })
            .and_then(|block| block.lines().next())
            .map(|id| id.trim().to_owned())
            .unwrap_or_else(|| panic!("the loopback's sink input is listed: {listing}"));
        let status = Command::new("pactl")
            .args(["set-sink-input-volume", &input, &format!("{gain_db}dB")])
            .status()
            .expect("pactl runs");
        assert!(status.success(), "the loopback's volume is set");
        loopback
    }
}

impl Drop for SpeakerIntoMicrophone {
    fn drop(&mut self) {
        let _ = Command::new("pactl")
            .args(["unload-module", &self.module])
            .status();
    }
}

/// A 10 ms frame at least this loud (RMS) is sound, not silence or codec residue.
pub const SOUND_RMS: f64 = 300.0;

/// Records the virtual speaker with a short buffer and stamps each 10 ms frame with the time
/// it was read: a frame is heard no later than its stamp.
pub struct TimedRecorder {
    frames: Arc<Mutex<Vec<(Instant, f64)>>>,
    child: Child,
}

impl TimedRecorder {
    pub fn start() -> Self {
        let mut child = Command::new("parec")
            .args(["--device=spk.monitor", "--format=s16le", "--rate=48000"])
            .args(["--channels=1", "--raw", "--latency-msec=10"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("parec (pulseaudio-utils)");
        let mut stdout = child.stdout.take().expect("parec's stdout is piped");
        let frames = Arc::new(Mutex::new(Vec::new()));
        let sink = frames.clone();
        std::thread::spawn(move || {
            let frame_bytes = RATE_HZ / 100 * 2;
            let mut frame = vec![0u8; frame_bytes];
            while stdout.read_exact(&mut frame).is_ok() {
                let read_at = Instant::now();
                let sum: f64 = frame
                    .chunks_exact(2)
                    .map(|b| f64::from(i16::from_le_bytes([b[0], b[1]])).powi(2))
                    .sum();
                let rms = (sum / (frame_bytes / 2) as f64).sqrt();
                sink.lock()
                    .expect("only this thread writes")
                    .push((read_at, rms));
            }
        });
        Self { frames, child }
    }

    pub async fn first_sound_after(&self, after: Instant, within: Duration) -> Instant {
        let deadline = after + within;
        loop {
            let found = self
                .frames
                .lock()
                .expect("the reader never panics holding it")
                .iter()
                .find(|(at, rms)| *at > after && *rms >= SOUND_RMS)
                .map(|(at, _)| *at);
            if let Some(at) = found {
                return at;
            }
            assert!(
                Instant::now() < deadline,
                "no reply was heard within {within:?}"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
}

impl TimedRecorder {
    /// When the sound stopped for good after `after`: the read time of the first frame of the
    /// silence that lasts to the end of what was recorded.
    pub fn silent_from(&self, after: Instant) -> Instant {
        let frames = self
            .frames
            .lock()
            .expect("the reader never panics holding it");
        let last_sound = frames
            .iter()
            .filter(|(at, rms)| *at > after && *rms >= SOUND_RMS)
            .map(|(at, _)| *at)
            .next_back();
        match last_sound {
            // The first frame read after the last sounding one.
            Some(last) => frames
                .iter()
                .map(|(at, _)| *at)
                .find(|at| *at > last)
                .unwrap_or(last),
            None => after,
        }
    }
}

impl Drop for TimedRecorder {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl TimedRecorder {
    /// When the sound stopped after `after` for at least `lasting`: the read time of the
    /// first silent frame of the first such silence, if one was recorded.
    pub fn silence_lasting(&self, after: Instant, lasting: Duration) -> Option<Instant> {
        let frames = self
            .frames
            .lock()
            .expect("the reader never panics holding it");
        let mut silent_since = None;
        for &(at, rms) in frames.iter().filter(|(at, _)| *at > after) {
            if rms >= SOUND_RMS {
                silent_since = None;
                continue;
            }
            let since = *silent_since.get_or_insert(at);
            if at.duration_since(since) >= lasting {
                return Some(since);
            }
        }
        None
    }
}
