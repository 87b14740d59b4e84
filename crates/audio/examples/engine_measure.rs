//! The engine measured on real devices (the test PulseAudio server's null sinks): CPU per second
//! of duplex audio, key-down → first encoded frame (warm mic and privacy mode), and RTP arrival →
//! sample at the device.
//!
//! ```sh
//! export PULSE_SERVER=$(scripts/pulse.sh start target/pulse-audio-dev)
//! cargo run --release -p walkie-audio --example engine_measure
//! scripts/pulse.sh stop target/pulse-audio-dev
//! ```

use std::io::Write;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use walkie_audio::codec::{MAX_PACKET_BYTES, OpusEncoder};
use walkie_audio::engine::{Engine, EngineConfig, EngineEvent};
use walkie_session::PlaybackSink;
use walkie_session::turn::AudioCommand;

/// CPU time of the whole process: every thread, including the ones that already ended (a
/// reopened stream's threads, cpal's short-lived helpers). Summing /proc/self/task would miss
/// those and under-count.
#[allow(unsafe_code)] // one libc call, no safe equivalent in std
fn process_cpu() -> Duration {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `now` is a valid, writable timespec; the clock id is a constant the kernel knows.
    let status = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut now) };
    assert_eq!(status, 0, "CLOCK_PROCESS_CPUTIME_ID is readable");
    Duration::new(now.tv_sec as u64, now.tv_nsec as u32)
}

/// CPU time and wakeups (voluntary context switches) per thread name, for the breakdown.
fn cpu_by_thread() -> std::collections::BTreeMap<String, (Duration, u64)> {
    let mut by_name = std::collections::BTreeMap::new();
    for task in std::fs::read_dir("/proc/self/task").expect("/proc is mounted") {
        let path = task.expect("a task entry").path();
        let name = std::fs::read_to_string(path.join("comm")).unwrap_or_default();
        let ns = std::fs::read_to_string(path.join("schedstat"))
            .ok()
            .and_then(|text| text.split_whitespace().next()?.parse::<u64>().ok())
            .unwrap_or(0);
        let wakeups = std::fs::read_to_string(path.join("status"))
            .ok()
            .and_then(|text| {
                text.lines()
                    .find_map(|line| line.strip_prefix("voluntary_ctxt_switches:"))?
                    .trim()
                    .parse::<u64>()
                    .ok()
            })
            .unwrap_or(0);
        let entry = by_name
            .entry(name.trim().to_owned())
            .or_insert((Duration::ZERO, 0));
        entry.0 += Duration::from_nanos(ns);
        entry.1 += wakeups;
    }
    by_name
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let index = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[index]
}

fn summary(name: &str, mut values_ms: Vec<f64>) {
    values_ms.sort_by(f64::total_cmp);
    println!(
        "{name}: n={} p50={:.1} ms p95={:.1} ms max={:.1} ms",
        values_ms.len(),
        percentile(&values_ms, 0.5),
        percentile(&values_ms, 0.95),
        values_ms.last().copied().unwrap_or_default()
    );
}

/// A tone into the virtual mic for `seconds`, fed by pacat from a thread.
fn feed_mic(seconds: u32) -> std::process::Child {
    let mut child = Command::new("pacat")
        .args([
            "--device=mic",
            "--format=s16le",
            "--rate=48000",
            "--channels=1",
            "--raw",
            "--latency-msec=50",
        ])
        .stdin(Stdio::piped())
        .spawn()
        .expect("pacat runs");
    let mut stdin = child.stdin.take().expect("pacat's stdin is piped");
    std::thread::spawn(move || {
        let bytes: Vec<u8> = (0..48_000 * seconds as usize)
            .flat_map(|i| {
                let phase = 2.0 * std::f32::consts::PI * 440.0 * i as f32 / 48_000.0;
                ((phase.sin() * 0.3 * 32_767.0) as i16).to_le_bytes()
            })
            .collect();
        let _ = stdin.write_all(&bytes);
    });
    child
}

fn duplex_cpu() {
    let (frames_tx, frames) = mpsc::channel::<Vec<u8>>();
    // The app's loop sleeps until a worker wakes it, then takes every event queued.
    let (wake_tx, wakes) = mpsc::channel::<()>();
    let (engine, events) = Engine::start(
        EngineConfig::default(),
        move |opus: &[u8], _| {
            let _ = frames_tx.send(opus.to_vec());
        },
        move || {
            let _ = wake_tx.send(());
        },
    )
    .expect("the engine starts");
    std::thread::sleep(Duration::from_millis(500));
    let mut mic = feed_mic(14);
    let mut player = engine.player();
    player.begin_item("item_duplex");
    engine.apply(AudioCommand::OpenCapture { pre_roll_ms: 300 });
    std::thread::sleep(Duration::from_millis(500));
    let seconds = 10;
    let started = Instant::now();
    let cpu_before = process_cpu();
    let threads_before = cpu_by_thread();
    let mut seq = 0u16;
    let mut played_chunks = 0u64;
    let mut event_counts = std::collections::BTreeMap::new();
    let mut wake_count = 0u64;
    while started.elapsed() < Duration::from_secs(seconds) {
        // The app's part, woken as the app's loop is (once per worker pass that queued
        // events): uplink frames go to the "transport", here looped back as RTP (each frame
        // is followed by its SentAudio event), decoded audio goes back to the player.
        if wakes.recv_timeout(Duration::from_millis(100)).is_ok() {
            wake_count += 1;
        }
        while wakes.try_recv().is_ok() {
            wake_count += 1;
        }
        for opus in frames.try_iter() {
            engine.receive_rtp(seq, u32::from(seq) * 960, &opus, Instant::now());
            seq = seq.wrapping_add(1);
        }
        for event in events.try_iter() {
            let kind = match &event {
                EngineEvent::AssistantAudio(_) => "AssistantAudio",
                EngineEvent::SentAudio(_) => "SentAudio",
                EngineEvent::PlaybackProgress { .. } => "PlaybackProgress",
                EngineEvent::PlaybackDrained => "PlaybackDrained",
                EngineEvent::Level { .. } => "Level",
                _ => "device",
            };
            *event_counts.entry(kind).or_insert(0u64) += 1;
            if let EngineEvent::AssistantAudio(chunk) = event {
                player.play(&chunk);
                played_chunks += 1;
            }
        }
    }
    let cpu = process_cpu() - cpu_before;
    let wall = started.elapsed();
    // Threads that ended during the run are missing here (the total above has them).
    for (name, (total, wakeups)) in cpu_by_thread() {
        let (cpu_before, wakeups_before) = threads_before.get(&name).copied().unwrap_or_default();
        println!(
            "  {name}: {:.2} % of one core, {:.0} wakeups/s",
            100.0 * total.saturating_sub(cpu_before).as_secs_f64() / wall.as_secs_f64(),
            wakeups.saturating_sub(wakeups_before) as f64 / wall.as_secs_f64()
        );
    }
    engine.apply(AudioCommand::CloseCapture);
    let stats = engine.stats();
    println!(
        "duplex: {:.2} % of one core ({:.1} ms CPU per second of audio), {} frames looped, {} chunks played, jitter {:?}, playback xruns {} frames",
        100.0 * cpu.as_secs_f64() / wall.as_secs_f64(),
        1000.0 * cpu.as_secs_f64() / wall.as_secs_f64(),
        seq,
        played_chunks,
        stats.jitter,
        stats.playback_xrun_frames
    );
    let per_second: Vec<String> = event_counts
        .iter()
        .map(|(kind, count)| format!("{kind} {:.0}", *count as f64 / wall.as_secs_f64()))
        .collect();
    println!(
        "  engine events per second: {}; the app woken {:.0} times a second",
        per_second.join(", "),
        wake_count as f64 / wall.as_secs_f64()
    );
    println!(
        "  output period {} frames, stream reopens {}",
        stats.output_period_frames, stats.stream_reopens
    );
    let _ = mic.kill();
    let _ = mic.wait();
}

fn key_down_to_first_frame(privacy_mic: bool, presses: usize) -> Vec<f64> {
    let (frames_tx, frames) = mpsc::channel::<Instant>();
    let (engine, _events) = Engine::start(
        EngineConfig {
            privacy_mic,
            ..EngineConfig::default()
        },
        move |_: &[u8], _| {
            let _ = frames_tx.send(Instant::now());
        },
        || {},
    )
    .expect("the engine starts");
    std::thread::sleep(Duration::from_millis(800));
    let mut latencies = Vec::new();
    for _ in 0..presses {
        let pressed = Instant::now();
        engine.apply(AudioCommand::OpenCapture { pre_roll_ms: 300 });
        let first = frames
            .recv_timeout(Duration::from_secs(5))
            .expect("a frame after the press");
        latencies.push((first - pressed).as_secs_f64() * 1000.0);
        std::thread::sleep(Duration::from_millis(200));
        engine.apply(AudioCommand::CloseCapture);
        std::thread::sleep(Duration::from_millis(400));
        while frames.try_recv().is_ok() {}
    }
    latencies
}

fn arrival_to_device(talkspurts: usize) -> Vec<f64> {
    let (engine, events) =
        Engine::start(EngineConfig::default(), |_: &[u8], _| {}, || {}).expect("the engine starts");
    std::thread::sleep(Duration::from_millis(800));
    let mut player = engine.player();
    let mut encoder = OpusEncoder::new(32_000).expect("encoder");
    let tone: Vec<f32> = (0..960)
        .map(|i| (2.0 * std::f32::consts::PI * 440.0 * i as f32 / 48_000.0).sin() * 0.3)
        .collect();
    let mut packet = [0u8; MAX_PACKET_BYTES];
    let len = encoder.encode(&tone, &mut packet).expect("encodes");
    let mut seq = 0u16;
    let mut latencies = Vec::new();
    let mut device_ms = Vec::new();
    for _ in 0..talkspurts {
        let before = engine.stats().talkspurt_start_frame;
        let arrived = Instant::now();
        let mut next_packet = arrived;
        let mut measured = None;
        let mut sent = 0;
        while measured.is_none() && arrived.elapsed() < Duration::from_secs(2) {
            if sent < 5 && Instant::now() >= next_packet {
                engine.receive_rtp(seq, u32::from(seq) * 960, &packet[..len], Instant::now());
                seq = seq.wrapping_add(1);
                sent += 1;
                next_packet += Duration::from_millis(20);
            }
            while let Ok(event) = events.try_recv() {
                if let EngineEvent::AssistantAudio(chunk) = event {
                    player.play(&chunk);
                }
            }
            let start = engine.stats().talkspurt_start_frame;
            if start != before
                && let Some(clock) = engine.playback_clock()
                && clock.played_frames > start
                && clock.frames_before_last_callback <= start
            {
                let into_callback = Duration::from_secs_f64(
                    (start - clock.frames_before_last_callback) as f64 / 48_000.0,
                );
                let at_device = clock.last_callback_at + into_callback + clock.output_latency;
                measured = Some((at_device - arrived).as_secs_f64() * 1000.0);
                device_ms.push(clock.output_latency.as_secs_f64() * 1000.0);
            }
            std::thread::sleep(Duration::from_micros(500));
        }
        if let Some(ms) = measured {
            latencies.push(ms);
        }
        std::thread::sleep(Duration::from_millis(400));
        while let Ok(event) = events.try_recv() {
            if let EngineEvent::AssistantAudio(chunk) = event {
                player.play(&chunk);
            }
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    summary(
        "  of which the device's own latency, as the host estimates it",
        device_ms,
    );
    latencies
}

fn main() {
    assert!(
        std::env::var("PULSE_SERVER").is_ok(),
        "start the test PulseAudio server first (see the module docs)"
    );
    // The machine's load matters: on 2 shared cores every wakeup costs more when builds run.
    println!(
        "load average: {}",
        std::fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .trim()
    );
    // `engine_measure cpu latency`: only some parts; none named: all of them.
    let parts: Vec<String> = std::env::args().skip(1).collect();
    let wanted = |part: &str| parts.is_empty() || parts.iter().any(|p| p == part);
    if wanted("cpu") {
        duplex_cpu();
    }
    if wanted("latency") {
        summary(
            "key-down -> first encoded frame, warm mic",
            key_down_to_first_frame(false, 30),
        );
        summary(
            "key-down -> first encoded frame, privacy mode (mic closed outside presses)",
            key_down_to_first_frame(true, 15),
        );
        summary(
            "RTP arrival -> first sample at the device (default jitter target)",
            arrival_to_device(30),
        );
    }
}
