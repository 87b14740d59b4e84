//! Real devices in real time: streams on the test PulseAudio server's null sinks ("mic"
//! and "spk", started by scripts/test.sh through scripts/pulse.sh). What a test plays into the
//! virtual mic must arrive bit-exact; what the engine plays must reach the virtual speaker once,
//! whole and in order; a flush must cut it off at the device's next period.

mod common;

use std::io::Write;
use std::sync::Mutex;
use std::sync::atomic::Ordering;
use std::time::Duration;

use common::{
    PulseClient, assert_heard_in_order, from_bytes, pattern, require_test_server, to_bytes,
    wait_until, wakeups_of,
};
use walkie_audio::device::{Capture, DeviceDirection, Playback, list_devices};

/// The null sinks are shared by every test of this file: one test at a time.
static SINKS: Mutex<()> = Mutex::new(());

#[test]
fn the_virtual_devices_are_listed_with_the_defaults_marked() {
    require_test_server();
    let _sinks = SINKS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let inputs = list_devices(DeviceDirection::Input).unwrap();
    let outputs = list_devices(DeviceDirection::Output).unwrap();
    let default_input = inputs
        .iter()
        .find(|d| d.is_default)
        .expect("a default input");
    let default_output = outputs
        .iter()
        .find(|d| d.is_default)
        .expect("a default output");
    assert!(default_input.id.contains("mic.monitor"), "{inputs:?}");
    assert!(default_output.id.contains("spk"), "{outputs:?}");
    assert!(outputs.iter().all(|d| !d.name.is_empty()));
}

#[test]
fn what_is_played_into_the_virtual_mic_is_captured_bit_exact() {
    require_test_server();
    let _sinks = SINKS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let mut capture = Capture::open(None, 4_000).expect("the default microphone opens");
    assert_eq!(capture.format().sample_rate_hz, 48_000);
    let sent = pattern(48_000);
    let mut player = PulseClient::spawn("pacat", "mic");
    player
        .0
        .stdin
        .take()
        .expect("pacat's stdin")
        .write_all(&to_bytes(&sent))
        .expect("feeding the virtual mic");

    let mut captured = Vec::new();
    let mut start = None;
    wait_until(
        "the whole second of audio to be captured",
        Duration::from_secs(10),
        || {
            capture.read_into(&mut captured);
            if start.is_none() {
                start = captured.iter().position(|&s| s != 0.0);
            }
            start.is_some_and(|start| captured.len() >= start + sent.len())
        },
    );
    let start = start.expect("the pattern arrived");
    let received: Vec<i16> = captured[start..start + sent.len()]
        .iter()
        .map(|&s| (s * 32_768.0) as i16)
        .collect();
    if let Some(at) = received.iter().zip(&sent).position(|(a, b)| a != b) {
        let around = at.saturating_sub(3)..(at + 5).min(sent.len());
        panic!(
            "captured audio differs from what the mic played at sample {at}: got {:?}, sent {:?}",
            &received[around.clone()],
            &sent[around]
        );
    }
    assert_eq!(
        capture
            .counters()
            .xrun_frames
            .load(std::sync::atomic::Ordering::Relaxed),
        0
    );
    drop(player);
}

fn as_f32(samples: &[i16]) -> Vec<f32> {
    samples.iter().map(|&s| f32::from(s) / 32_768.0).collect()
}

fn write_all(playback: &mut Playback, mut samples: &[f32]) {
    while !samples.is_empty() {
        let written = playback.write(samples);
        samples = &samples[written..];
        if !samples.is_empty() {
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

#[test]
fn a_turn_played_through_the_engine_reaches_the_speaker_once_whole_and_in_order() {
    require_test_server();
    let _sinks = SINKS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let recorder = PulseClient::spawn("parec", "spk.monitor");
    std::thread::sleep(Duration::from_millis(100));
    let mut playback = Playback::open(None, 500).expect("the default speaker opens");
    let turn = pattern(24_000);
    write_all(&mut playback, &as_f32(&turn));
    wait_until(
        "the turn to be handed to the device",
        Duration::from_secs(10),
        || playback.played_frames() >= turn.len() as u64,
    );
    std::thread::sleep(Duration::from_millis(300));
    let recorded = from_bytes(&recorder.end());

    let heard: Vec<i16> = recorded.into_iter().filter(|&s| s != 0).collect();
    let server_underflows = playback
        .counters()
        .server_underflows
        .load(Ordering::Relaxed);
    assert_heard_in_order(&heard, &turn, server_underflows, "the turn");
    assert_eq!(playback.played_frames(), turn.len() as u64);
}

#[test]
fn a_flush_cuts_playback_at_the_next_period_and_nothing_queued_is_heard_after() {
    require_test_server();
    let _sinks = SINKS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let recorder = PulseClient::spawn("parec", "spk.monitor");
    std::thread::sleep(Duration::from_millis(100));
    let mut playback = Playback::open(None, 3_000).expect("the default speaker opens");
    let long_reply = pattern(96_000);
    write_all(&mut playback, &as_f32(&long_reply));
    wait_until(
        "a quarter second to be played",
        Duration::from_secs(10),
        || playback.played_frames() >= 12_000,
    );
    playback.flush();
    wait_until(
        "the callback to honour the flush",
        Duration::from_secs(2),
        || playback.flush_done(),
    );
    let played_at_flush = playback.played_frames();
    std::thread::sleep(Duration::from_millis(400));
    assert_eq!(
        playback.played_frames(),
        played_at_flush,
        "nothing plays after the flush"
    );
    let recorded = from_bytes(&recorder.end());

    let heard: Vec<i16> = recorded.into_iter().filter(|&s| s != 0).collect();
    assert!(
        played_at_flush < long_reply.len() as u64 / 2,
        "the flush came early in the reply"
    );
    let server_underflows = playback
        .counters()
        .server_underflows
        .load(Ordering::Relaxed);
    assert_heard_in_order(
        &heard,
        &long_reply[..played_at_flush as usize],
        server_underflows,
        "what was played before the flush",
    );
    assert!(
        playback.free_samples() > 3 * 48_000 - 1_000,
        "the ring is empty after the flush"
    );
}

/// The names of this process's threads.
fn thread_names() -> Vec<String> {
    std::fs::read_dir("/proc/self/task")
        .expect("/proc is mounted")
        .filter_map(|task| std::fs::read_to_string(task.ok()?.path().join("comm")).ok())
        .map(|name| name.trim().to_owned())
        .collect()
}

#[test]
fn pulseaudio_devices_run_on_libpulse_directly_not_on_a_fallback() {
    require_test_server();
    let _sinks = SINKS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    // The cheap path is the point: a silent fallback to cpal's streams would still play, at a
    // multiple of the CPU.
    let capture = Capture::open(None, 500).expect("the default microphone opens");
    let playback = Playback::open(None, 500).expect("the default speaker opens");
    let names = thread_names();
    assert!(
        names.iter().any(|name| name == "walkie-pulse-in"),
        "{names:?}"
    );
    assert!(
        names.iter().any(|name| name.starts_with("walkie-pulse-ou")),
        "{names:?}"
    );
    assert!(capture.device_id().starts_with("pulseaudio:"));
    assert!(playback.device_id().starts_with("pulseaudio:"));
}

#[test]
fn the_microphone_is_read_once_a_period_though_the_server_posts_every_10_ms_and_keeps_up() {
    require_test_server();
    let _sinks = SINKS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    // The test server's mic is a null sink's monitor, which a 10 ms keep-alive reader makes
    // post every 10 ms: a thread that woke for each post would wake 100 times a second.
    let mut capture = Capture::open(None, 2_000).expect("the default microphone opens");
    let mut captured = Vec::with_capacity(96_000);
    std::thread::sleep(Duration::from_millis(800));
    capture.read_into(&mut captured);
    captured.clear();
    let wakeups_before = wakeups_of("walkie-pulse-in");
    let started = std::time::Instant::now();
    std::thread::sleep(Duration::from_secs(2));
    capture.read_into(&mut captured);
    let seconds = started.elapsed().as_secs_f64();
    let wakeups_per_second = (wakeups_of("walkie-pulse-in") - wakeups_before) as f64 / seconds;
    assert!(
        wakeups_per_second < 70.0,
        "the capture thread woke {wakeups_per_second:.0} times a second (a 20 ms period is 50)"
    );
    let captured_seconds = captured.len() as f64 / 48_000.0;
    assert!(
        (captured_seconds - seconds).abs() < 0.06,
        "{captured_seconds:.3} s of audio came in {seconds:.3} s: reading less often must not fall behind"
    );
}

/// Frames a stream's marks say it moved per second of the host's clock, from its second
/// second on (its first fills buffers).
fn frames_per_second(marks: &[walkie_audio::device::DeviceMark]) -> f64 {
    let first = marks
        .iter()
        .find(|mark| mark.at >= marks[0].at + Duration::from_secs(1))
        .expect("marks over more than a second");
    let last = marks.last().expect("marks");
    (last.frames - first.frames) as f64 / (last.at - first.at).as_secs_f64()
}

#[test]
fn each_stream_marks_where_it_stands_and_its_marks_count_every_frame_it_moved() {
    require_test_server();
    let _sinks = SINKS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let mut capture = Capture::open(None, 4_000).expect("the default microphone opens");
    let mut playback =
        Playback::open_with_reference(None, 500, true).expect("the default speaker opens");
    let mut reference = playback
        .take_reference()
        .expect("a reference tap was asked for");
    let (mut captured, mut capture_marks) = (Vec::new(), Vec::new());
    let (mut played, mut playback_marks) = (0u64, Vec::new());
    let started = std::time::Instant::now();
    wait_until("3 s of both streams", Duration::from_secs(10), || {
        capture.read_marks(|mark| capture_marks.push(mark));
        capture.read_into(&mut captured);
        while let Ok(mark) = reference.marks.pop() {
            playback_marks.push(mark);
        }
        if let Ok(chunk) = reference.samples.read_chunk(reference.samples.slots()) {
            played += chunk.len() as u64;
            chunk.commit_all();
        }
        started.elapsed() >= Duration::from_secs(3)
    });
    for (stream, marks) in [("microphone", &capture_marks), ("speaker", &playback_marks)] {
        assert!(
            marks
                .windows(2)
                .all(|pair| pair[1].frames > pair[0].frames && pair[1].at >= pair[0].at),
            "the {stream}'s marks move forward"
        );
        let rate = frames_per_second(marks);
        assert!(
            (rate / 48_000.0 - 1.0).abs() < 0.02,
            "the {stream} moved {rate:.0} frames a second by its marks"
        );
    }
    // A capture mark counts the frames delivered with it, a speaker's those handed over
    // before it: each stream's last mark is within a callback or two of what was read.
    let last_captured = capture_marks.last().expect("microphone marks").frames;
    let last_handed = playback_marks.last().expect("speaker marks").frames;
    for (stream, marked, read) in [
        ("microphone", last_captured, captured.len() as u64),
        ("speaker", last_handed, played),
    ] {
        assert!(
            marked.abs_diff(read) <= 48_000 / 20,
            "the {stream}'s last mark says {marked} frames, {read} were read"
        );
    }
}
