//! `cargo bench -p walkie-local --bench transport`: the WebRTC transport's figures in one run,
//! over loopback with real ICE/DTLS/SCTP/SRTP and real Opus.
//!
//! - POST `/v1/realtime/calls` → data channel open (client → local provider), per call;
//! - `input_audio_buffer.commit` sent → first reply RTP packet received, per turn;
//! - process CPU time per second of duplex audio for the transport alone: two `walkie-rtc`
//!   peers in this process, each sending 50 pre-encoded Opus frames a second and receiving
//!   the other's (no codec work, no provider), CPU read from `/proc/self/stat`.
//!
//! Options (after `--`): `--calls N` (default 20), `--audio-seconds S` (default 20).

use std::time::{Duration, Instant};

use walkie_local::scenario::{encode_opus, speech_like};
use walkie_local::{LocalProvider, ProviderConfig};
use walkie_openai::ClientEvent;
use walkie_rtc::peer::{self, PeerConfig, PeerEvent};
use walkie_rtc::{Call, CallConfig, CallEvent};

/// Process CPU time (user + system) from `/proc/self/stat`, in seconds.
fn process_cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name (which may hold spaces) start at field 3 (state);
    // utime and stime are fields 14 and 15, in clock ticks (USER_HZ, 100 on Linux).
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    Some((utime + stime) / 100.0)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index.min(sorted.len() - 1)]
}

fn summary(name: &str, mut samples: Vec<Duration>) {
    samples.sort();
    println!(
        "{name}: n={} min {:.1} ms, p50 {:.1} ms, p95 {:.1} ms, max {:.1} ms",
        samples.len(),
        samples[0].as_secs_f64() * 1e3,
        percentile(&samples, 0.5).as_secs_f64() * 1e3,
        percentile(&samples, 0.95).as_secs_f64() * 1e3,
        samples[samples.len() - 1].as_secs_f64() * 1e3,
    );
}

async fn calls(count: usize) -> Result<(), String> {
    let provider = LocalProvider::start(ProviderConfig::default())
        .await
        .map_err(|error| format!("the provider did not start: {error}"))?;
    let frames = encode_opus(&speech_like(400)).map_err(|error| error.to_string())?;
    let mut open = Vec::with_capacity(count);
    let mut first_packet = Vec::with_capacity(count);
    for _ in 0..count {
        let endpoint = provider.endpoint();
        let mut call = Call::connect(CallConfig::new(endpoint))
            .await
            .map_err(|error| format!("connect: {error}"))?;
        let timings = call.timings();
        open.push(timings.data_channel_open.duration_since(timings.started));
        let mut tick = tokio::time::interval(Duration::from_millis(20));
        for frame in &frames {
            tick.tick().await;
            call.send_audio(frame.clone(), 960)
                .map_err(|error| error.to_string())?;
        }
        tokio::time::sleep(Duration::from_millis(60)).await;
        let committed = Instant::now();
        call.send(&ClientEvent::InputAudioBufferCommit, None)
            .await
            .map_err(|error| error.to_string())?;
        call.send(&ClientEvent::ResponseCreate { response: None }, None)
            .await
            .map_err(|error| error.to_string())?;
        loop {
            let event = tokio::time::timeout(Duration::from_secs(10), call.next_event())
                .await
                .map_err(|_| "no reply packet within 10 s".to_owned())?;
            match event {
                Some(CallEvent::Audio(audio)) => {
                    first_packet.push(audio.received_at.duration_since(committed));
                    break;
                }
                Some(CallEvent::Ended(reason)) => {
                    return Err(format!("the call ended: {reason:?}"));
                }
                None => return Err("the call ended".to_owned()),
                Some(_) => {}
            }
        }
        call.hangup().await.map_err(|error| error.to_string())?;
    }
    provider.shutdown().await;
    summary("POST /v1/realtime/calls -> data channel open", open);
    summary(
        "input_audio_buffer.commit sent -> first reply RTP packet",
        first_packet,
    );
    Ok(())
}

async fn duplex_cpu(seconds: u64) -> Result<(), String> {
    let config = PeerConfig::default();
    let pending = peer::offer(&config)
        .await
        .map_err(|error| error.to_string())?;
    let (mut b, answer) = peer::answer(&config, pending.sdp())
        .await
        .map_err(|error| error.to_string())?;
    let mut a = pending.accept(&answer).map_err(|error| error.to_string())?;
    for (peer, name) in [(&mut a, "offerer"), (&mut b, "answerer")] {
        loop {
            match tokio::time::timeout(Duration::from_secs(10), peer.events.recv()).await {
                Ok(Some(PeerEvent::Connected { .. })) => break,
                Ok(Some(PeerEvent::Failed { reason })) => return Err(format!("{name}: {reason}")),
                Ok(Some(_)) => {}
                Ok(None) | Err(_) => return Err(format!("{name} did not connect")),
            }
        }
    }
    let frames = encode_opus(&speech_like(1000)).map_err(|error| error.to_string())?;
    let total = seconds * 50;
    // Receivers count packets until told to stop.
    let count = |mut peer: walkie_rtc::Peer| {
        tokio::spawn(async move {
            let mut received = 0u64;
            while let Some(event) = peer.events.recv().await {
                match event {
                    PeerEvent::Audio(_) => received += 1,
                    PeerEvent::Closed | PeerEvent::Failed { .. } => break,
                    _ => {}
                }
            }
            received
        })
    };
    let (a_handle, b_handle) = (a.handle.clone(), b.handle.clone());
    let a_rx = count(a);
    let b_rx = count(b);
    let cpu_before = process_cpu_seconds().ok_or("no /proc/self/stat")?;
    let wall_before = Instant::now();
    let mut tick = tokio::time::interval(Duration::from_millis(20));
    for i in 0..total {
        tick.tick().await;
        let frame = frames[i as usize % frames.len()].clone();
        a_handle
            .send_audio(frame.clone(), 960)
            .map_err(|error| error.to_string())?;
        b_handle
            .send_audio(frame, 960)
            .map_err(|error| error.to_string())?;
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    let cpu = process_cpu_seconds().ok_or("no /proc/self/stat")? - cpu_before;
    let wall = wall_before.elapsed().as_secs_f64();
    a_handle.close().await;
    b_handle.close().await;
    let a_got = a_rx.await.map_err(|error| error.to_string())?;
    let b_got = b_rx.await.map_err(|error| error.to_string())?;
    println!(
        "duplex audio, transport alone: {seconds} s, {total} frames each way sent, {a_got}/{b_got} received; process CPU {cpu:.2} s over {wall:.1} s wall = {:.1} ms CPU per second of duplex audio for both peers ({:.1} ms per peer, {:.2}% of one core per peer)",
        cpu / seconds as f64 * 1e3,
        cpu / seconds as f64 * 1e3 / 2.0,
        cpu / seconds as f64 * 100.0 / 2.0,
    );
    if a_got < total * 99 / 100 || b_got < total * 99 / 100 {
        return Err(format!("packets lost: {a_got}/{b_got} of {total}"));
    }
    Ok(())
}

fn option(args: &[String], name: &str, default: u64) -> Result<u64, String> {
    match args.iter().position(|arg| arg == name) {
        Some(index) => args
            .get(index + 1)
            .and_then(|value| value.parse().ok())
            .ok_or_else(|| format!("{name} needs a number")),
        None => Ok(default),
    }
}

fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let run = || -> Result<(), String> {
        let calls_n = option(&args, "--calls", 20)?;
        let seconds = option(&args, "--audio-seconds", 20)?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .map_err(|error| error.to_string())?;
        runtime.block_on(async {
            calls(usize::try_from(calls_n).unwrap_or(20)).await?;
            duplex_cpu(seconds.max(1)).await
        })
    };
    match run() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("transport bench failed: {error}");
            std::process::ExitCode::FAILURE
        }
    }
}
