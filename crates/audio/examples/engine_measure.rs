//! The engine measured on real devices (the test PulseAudio server's null sinks): CPU per second
//! of duplex audio (and with echo cancellation, side by side), key-down → first encoded frame
//! (warm mic and privacy mode), and RTP arrival → sample at the device.
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

use walkie_audio::codec::{DEFAULT_OPUS_COMPLEXITY, MAX_PACKET_BYTES, OpusEncoder};
use walkie_audio::engine::{Engine, EngineConfig, EngineEvent};
use walkie_dsp::testkit::{encode_opus, speech_like};
use walkie_session::turn::{AudioCommand, ReplyAudio, ReplyGate};

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

/// `seconds` of speech-like audio (the local provider's voiced syllables) into the virtual mic,
/// fed by pacat from a thread. Speech, not a tone: on a tone libopus codes in CELT mode, which
/// costs a fifth of what speech (SILK) costs, and the figure would flatter the engine.
fn feed_mic(seconds: u32) -> std::process::Child {
    // Made first, before any measuring starts: the synthesis takes about a second of CPU.
    let bytes: Vec<u8> = speech_like(u64::from(seconds) * 1000)
        .iter()
        .flat_map(|sample| sample.to_le_bytes())
        .collect();
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
        let _ = stdin.write_all(&bytes);
    });
    child
}

/// CPU time (user + system) of another process so far, from /proc/<pid>/stat.
fn child_cpu(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("the child runs");
    // Fields after the command name (which may hold spaces): utime and stime are the 12th
    // and 13th of them, in clock ticks.
    let after_name = &stat[stat.rfind(')').expect("stat has the name in parentheses") + 2..];
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    let ticks: u64 =
        fields[11].parse::<u64>().expect("utime") + fields[12].parse::<u64>().expect("stime");
    // SAFETY: sysconf only reads a constant of the system.
    #[allow(unsafe_code)]
    let ticks_per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as u64;
    Duration::from_secs_f64(ticks as f64 / ticks_per_second as f64)
}

/// The floor under any client of the sound server on this machine: PulseAudio's own tools
/// moving the same audio with no processing at all, for the same 10 s, at the engine's
/// buffering (playback: 20 ms queued, asked for 10 ms at a time; capture: 20 ms fragments),
/// with the same feed into the virtual mic.
fn bare_clients_cpu(seconds: u64) -> f64 {
    let mut mic = feed_mic(seconds as u32 + 4);
    let spawn = |args: &[&str]| {
        Command::new(args[0])
            .args(&args[1..])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .expect("pulseaudio-utils run")
    };
    let format = ["--format=s16le", "--rate=48000", "--channels=1", "--raw"];
    let mut play_args = vec![
        "pacat",
        "--device=spk",
        "--latency-msec=20",
        "--process-time-msec=10",
    ];
    play_args.extend(format);
    let mut record_args = vec!["parec", "--device=mic.monitor", "--latency-msec=20"];
    record_args.extend(format);
    let mut play = spawn(&play_args);
    let mut record = spawn(&record_args);
    let mut speaker = play.stdin.take().expect("pacat's stdin is piped");
    let feeder = std::thread::spawn(move || {
        let silence = vec![0u8; 48_000 * 2 * (seconds as usize + 4)];
        let _ = speaker.write_all(&silence);
    });
    std::thread::sleep(Duration::from_millis(1_000));
    let before = child_cpu(play.id()) + child_cpu(record.id());
    let started = Instant::now();
    std::thread::sleep(Duration::from_secs(seconds));
    let cpu = child_cpu(play.id()) + child_cpu(record.id()) - before;
    let share = 100.0 * cpu.as_secs_f64() / started.elapsed().as_secs_f64();
    for child in [&mut play, &mut record, &mut mic] {
        let _ = child.kill();
        let _ = child.wait();
    }
    let _ = feeder.join();
    share
}

fn duplex_cpu(opus_complexity: i32, echo_cancellation: bool) -> f64 {
    // What the provider sends: its own encoding of speech (libopus's defaults, as the local
    // provider encodes its replies), one packet for each frame the uplink sends.
    let reply = encode_opus(&speech_like(30_000)).expect("the reply encodes");
    let (frames_tx, frames) = mpsc::channel::<Vec<u8>>();
    // The app's loop sleeps until a worker wakes it, then takes every event queued.
    let (wake_tx, wakes) = mpsc::channel::<()>();
    let (engine, events) = Engine::start(
        EngineConfig {
            opus_complexity,
            echo_cancellation,
            ..EngineConfig::default()
        },
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
    engine.reply_audio(&ReplyAudio {
        gate: ReplyGate::Play,
        item_id: Some("item_duplex".to_owned()),
    });
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
        // events): each uplink frame goes to the "transport" and a reply packet comes back as
        // RTP (each frame is followed by its SentAudio event); the engine plays what it decodes
        // and the app takes the decoded chunks (for the transcript and the recording).
        if wakes.recv_timeout(Duration::from_millis(100)).is_ok() {
            wake_count += 1;
        }
        while wakes.try_recv().is_ok() {
            wake_count += 1;
        }
        for _sent in frames.try_iter() {
            let packet = &reply[usize::from(seq) % reply.len()];
            engine.receive_rtp(seq, u32::from(seq) * 960, packet, Instant::now());
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
            if let EngineEvent::AssistantAudio(_) = event {
                played_chunks += 1;
            }
        }
    }
    let cpu = process_cpu() - cpu_before;
    let wall = started.elapsed();
    assert!(
        seq > 0 && played_chunks > 0,
        "no audio went round (is the sound server still up?): {seq} packets, {played_chunks} chunks"
    );
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
        "duplex{}: {:.2} % of one core ({:.1} ms CPU per second of audio), {} reply packets received, {} chunks played, jitter {:?}, playback xruns {} frames",
        if echo_cancellation {
            " with echo cancellation"
        } else {
            ""
        },
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
    100.0 * cpu.as_secs_f64() / wall.as_secs_f64()
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
            // The engine plays what it decodes; the app's share is taking the events.
            while events.try_recv().is_ok() {}
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
        while events.try_recv().is_ok() {}
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
    // `engine_measure cpu echo latency`: only some parts; none named: all of them.
    // `--complexity N`: the microphone's Opus complexity (the engine's default otherwise).
    let mut parts: Vec<String> = std::env::args().skip(1).collect();
    let mut opus_complexity = DEFAULT_OPUS_COMPLEXITY;
    if let Some(at) = parts.iter().position(|part| part == "--complexity") {
        opus_complexity = parts
            .get(at + 1)
            .and_then(|value| value.parse().ok())
            .expect("--complexity takes a number from 0 to 10");
        parts.drain(at..at + 2);
    }
    println!("microphone Opus complexity {opus_complexity}");
    let wanted = |part: &str| parts.is_empty() || parts.iter().any(|p| p == part);
    if wanted("cpu") {
        let engine = duplex_cpu(opus_complexity, false);
        let floor = bare_clients_cpu(10);
        println!(
            "bare pacat + parec, same audio and buffering, no processing: {floor:.2} % of one core; the engine is {:.2}x that",
            engine / floor
        );
    }
    if wanted("echo") {
        // Side by side in one run: the same duplex speech without and with the canceller.
        let without = duplex_cpu(opus_complexity, false);
        let with = duplex_cpu(opus_complexity, true);
        println!(
            "echo cancellation adds {:.2} % of one core ({with:.2} % with, {without:.2} % without: {:.2}x)",
            with - without,
            with / without
        );
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
