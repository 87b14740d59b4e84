//! The device edge, bit-exact and fast: alsa-lib's `file` plugin stands in for the sound card.
//! Capture reads a raw file the test wrote; playback writes into a raw file the test reads
//! back. The samples are compared exactly at the device boundary, before any resampling or
//! encoding: real signals (pseudo-noise, sines, a chirp, full-scale extremes) must come through
//! the ring and the stream thread unchanged, whole and in order, with nothing played twice.
//!
//! The plugin's `null` slave has no clock, so these streams run as fast as the CPU allows (a
//! second of audio in milliseconds): the tests stop by frame count, never by time. Real-time
//! behaviour is what the PulseAudio tests (devices.rs, engine.rs) are for.
//!
//! Set-up and tear-down are the tests' own: each writes an asoundrc into a fresh directory
//! under the target dir and runs itself again in a child process with `ALSA_CONFIG_PATH`
//! naming Debian's stock `alsa.conf` and that file. A child process, because alsa-lib reads
//! its configuration once per process and the environment can only be set for a child; the
//! user's own ALSA configuration is never read or touched.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use walkie_audio::device::{Capture, Playback};

/// Set in the child: the directory holding the asoundrc and the raw files.
const CHILD_DIR_ENV: &str = "WALKIE_ALSA_FILE_TEST_DIR";
/// alsa-lib's top-level configuration (libasound2-data); `ALSA_CONFIG_PATH` replaces it, so
/// it must come first.
const STOCK_ALSA_CONF: &str = "/usr/share/alsa/alsa.conf";
const RATE_HZ: usize = 48_000;

/// Pseudo-noise, never zero: every sample that reaches the file can be found and counted.
fn noise(len: usize, seed: u32) -> Vec<i16> {
    (0..len)
        .map(|i| {
            let x = (i as u32 ^ seed).wrapping_mul(2_654_435_761);
            ((x >> 16) as i16).max(-32_767) | 1
        })
        .collect()
}

fn sine(frequency_hz: f64, amplitude: f64, len: usize) -> Vec<i16> {
    (0..len)
        .map(|i| {
            let phase = 2.0 * std::f64::consts::PI * frequency_hz * i as f64 / RATE_HZ as f64;
            (phase.sin() * amplitude * 32_767.0).round() as i16
        })
        .collect()
}

/// A linear sweep from `from_hz` to `to_hz` over `len` samples.
fn chirp(from_hz: f64, to_hz: f64, amplitude: f64, len: usize) -> Vec<i16> {
    let seconds = len as f64 / RATE_HZ as f64;
    let slope = (to_hz - from_hz) / seconds;
    (0..len)
        .map(|i| {
            let t = i as f64 / RATE_HZ as f64;
            let phase = 2.0 * std::f64::consts::PI * (from_hz * t + slope * t * t / 2.0);
            (phase.sin() * amplitude * 32_767.0).round() as i16
        })
        .collect()
}

/// 1.6 s of test signal starting with a nonzero sample: noise, a 440 Hz sine at -6 dBFS, a
/// 100 Hz → 16 kHz chirp at full scale, the extremes of the format, and noise again.
fn signal() -> Vec<i16> {
    let mut samples = noise(RATE_HZ / 5, 0x5EED);
    samples.extend(sine(440.0, 0.5, RATE_HZ / 2));
    samples.extend(chirp(100.0, 16_000.0, 1.0, RATE_HZ / 2));
    samples.extend([i16::MIN, i16::MAX, i16::MIN, -1, 1, i16::MAX].repeat(200));
    samples.extend(noise(RATE_HZ * 2 / 5 - 1_200, 0xC0FFEE));
    samples
}

fn to_bytes(samples: &[i16]) -> Vec<u8> {
    samples.iter().flat_map(|s| s.to_le_bytes()).collect()
}

fn from_bytes(bytes: &[u8]) -> Vec<i16> {
    bytes
        .chunks_exact(2)
        .map(|b| i16::from_le_bytes([b[0], b[1]]))
        .collect()
}

/// In the child: the test's directory. In the parent (a plain `cargo test`): sets up a fresh
/// directory with `asoundrc` and `capture_in`, runs `test_name` again in a child process
/// configured with it, checks that it passed, removes the directory, and returns `None`.
fn in_child_or_run(test_name: &str, capture_in: &[i16]) -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os(CHILD_DIR_ENV) {
        return Some(PathBuf::from(dir));
    }
    assert!(
        Path::new(STOCK_ALSA_CONF).exists(),
        "alsa-lib's configuration {STOCK_ALSA_CONF} is missing (apt libasound2-data)"
    );
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("alsa-file-{test_name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    std::fs::write(dir.join("capture_in.raw"), to_bytes(capture_in)).expect("the capture input");
    let asoundrc = dir.join("asoundrc");
    // Not shell-expanded: absolute paths. `file` plugins over `null`: capture reads `infile`,
    // playback writes `file`, both raw, in whatever format the stream set up (pinned by the
    // driver: i16 first).
    std::fs::write(
        &asoundrc,
        format!(
            r#"pcm.walkie_test_capture {{
    type file
    slave.pcm "null"
    file "/dev/null"
    infile "{dir}/capture_in.raw"
    format "raw"
}}
pcm.walkie_test_playback {{
    type file
    slave.pcm "null"
    file "{dir}/playback_out.raw"
    format "raw"
    truncate true
}}
"#,
            dir = dir.display()
        ),
    )
    .expect("the asoundrc");
    let output = Command::new(std::env::current_exe().expect("the test binary's path"))
        .args([test_name, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD_DIR_ENV, &dir)
        .env(
            "ALSA_CONFIG_PATH",
            format!("{STOCK_ALSA_CONF}:{}", asoundrc.display()),
        )
        .output()
        .expect("the test binary runs again");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success() && stdout.contains("1 passed"),
        "the child run of {test_name} failed ({}):\n{stdout}\n{stderr}",
        output.status
    );
    std::fs::remove_dir_all(&dir).expect("the scratch directory is removed");
    None
}

fn as_i16(samples: &[f32]) -> Vec<i16> {
    samples
        .iter()
        .map(|&s| (s * 32_768.0).round().clamp(-32_768.0, 32_767.0) as i16)
        .collect()
}

#[test]
fn capture_from_the_file_plugin_is_bit_exact() {
    let sent = signal();
    // Longer than the ring, so the stream never reaches the end of the file (past it, the
    // plugin repeats stale frames).
    let mut infile = sent.clone();
    infile.extend(noise(RATE_HZ * 3, 0xABCD));
    let Some(_dir) = in_child_or_run("capture_from_the_file_plugin_is_bit_exact", &infile) else {
        return;
    };

    // The ring holds 2.5 s: the first 2.5 s the device delivers stay in it, in order.
    let mut capture = Capture::open(Some("alsa:walkie_test_capture"), 2_500)
        .expect("the file plugin's capture PCM opens");
    assert_eq!(capture.format().sample_rate_hz, 48_000);
    assert_eq!(capture.format().channels, 1);
    assert_eq!(capture.device_id(), "alsa:walkie_test_capture");
    let mut captured = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(10);
    while captured.len() < sent.len() {
        assert!(
            Instant::now() < deadline,
            "only {} of {} samples captured",
            captured.len(),
            sent.len()
        );
        if capture.read_into(&mut captured) == 0 {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    let captured = as_i16(&captured[..sent.len()]);
    let first_difference = captured.iter().zip(&sent).position(|(a, b)| a != b);
    assert_eq!(
        first_difference, None,
        "the capture differs from the file at sample {first_difference:?}"
    );
    assert!(
        capture
            .counters()
            .callbacks
            .load(std::sync::atomic::Ordering::Relaxed)
            > 0
    );
}

#[test]
fn playback_into_the_file_plugin_is_bit_exact_whole_and_once() {
    let Some(dir) = in_child_or_run(
        "playback_into_the_file_plugin_is_bit_exact_whole_and_once",
        &[],
    ) else {
        return;
    };
    let played = signal();
    let mut playback = Playback::open(Some("alsa:walkie_test_playback"), 2_500)
        .expect("the file plugin's playback PCM opens");
    assert_eq!(playback.format().sample_rate_hz, 48_000);
    assert_eq!(playback.format().channels, 1);
    // One write: the stream thread takes all of it or none of it per look, so the file holds
    // silence, then the signal in one piece, then silence.
    let samples: Vec<f32> = played.iter().map(|&s| f32::from(s) / 32_768.0).collect();
    let before = playback.played_frames();
    assert_eq!(
        playback.write(&samples),
        samples.len(),
        "the ring takes it all"
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    while playback.played_frames() < before + samples.len() as u64 {
        assert!(Instant::now() < deadline, "the device did not take it all");
        std::thread::sleep(Duration::from_millis(1));
    }
    drop(playback); // stops the stream thread and closes the file

    let out = from_bytes(&std::fs::read(dir.join("playback_out.raw")).expect("the output file"));
    let start = out
        .iter()
        .position(|&s| s != 0)
        .expect("the signal reached the file");
    assert!(
        out.len() >= start + played.len(),
        "the file ends {} samples into the signal",
        out.len() - start
    );
    let written = &out[start..start + played.len()];
    let first_difference = written.iter().zip(&played).position(|(a, b)| a != b);
    assert_eq!(
        first_difference, None,
        "the file differs from what was played at sample {first_difference:?}"
    );
    assert!(
        out[start + played.len()..].iter().all(|&s| s == 0),
        "after the signal only silence: nothing is played twice"
    );
}
