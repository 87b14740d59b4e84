//! The codec's floor for the peer benchmark (bench/peer/run.sh): what Opus costs a client that
//! sends a voice and plays the same voice back, as every client of a realtime speech provider
//! does, with nothing else around it: each 20 ms frame of the WAV encoded, and the packets
//! decoded again, on one thread, as fast as it goes. Printed as CPU milliseconds per second of
//! audio for each direction, at libopus's cheapest effort (complexity 0, the floor of any Opus
//! client) and at the engine's ([`DEFAULT_OPUS_COMPLEXITY`]), so the run's ratio table can say
//! what no client that codes Opus both ways can go under.
//!
//! The CPU time is the thread's own, from the kernel's scheduler statistics
//! (`/proc/thread-self/schedstat`, nanoseconds on the CPU), so other processes on a shared
//! machine do not count; a tight loop keeps the codec's tables in cache, which can only make the
//! floor lower than in a call.
//!
//! `cargo run --release -p walkie-dsp --example codec_floor -- VOICE.wav SECONDS`

use std::process::ExitCode;

use walkie_dsp::FRAME_SAMPLES;
use walkie_dsp::codec::{DEFAULT_OPUS_COMPLEXITY, MAX_PACKET_BYTES, OpusDecoder, OpusEncoder};

/// The engine's bitrate for the microphone.
const BITRATE_BPS: i32 = 32_000;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [voice_path, seconds] = &args[..] else {
        eprintln!("usage: codec_floor VOICE.wav SECONDS");
        return ExitCode::from(2);
    };
    let Some(seconds) = seconds.parse::<u32>().ok().filter(|s| *s > 0) else {
        eprintln!("codec_floor: SECONDS must be a whole number above 0, not {seconds:?}");
        return ExitCode::from(2);
    };
    let voice = match read_voice(voice_path) {
        Ok(voice) => voice,
        Err(why) => {
            eprintln!("codec_floor: {voice_path}: {why}");
            return ExitCode::FAILURE;
        }
    };
    let frames = seconds as usize * 50;
    let mut by_complexity = Vec::new();
    for complexity in [0, DEFAULT_OPUS_COMPLEXITY] {
        match both_ways(&voice, frames, complexity) {
            Ok((encode_ns, decode_ns)) => {
                let per_second = |ns: u64| ns as f64 / 1e6 / f64::from(seconds);
                by_complexity.push(format!(
                    r#"{{"complexity":{complexity},"encodeMsPerS":{:.3},"decodeMsPerS":{:.3}}}"#,
                    per_second(encode_ns),
                    per_second(decode_ns)
                ));
            }
            Err(why) => {
                eprintln!("codec_floor: {why}");
                return ExitCode::FAILURE;
            }
        }
    }
    println!(
        r#"{{"floor":"opus both ways","secondsOfAudio":{seconds},"bitrateBps":{BITRATE_BPS},"byComplexity":[{}]}}"#,
        by_complexity.join(",")
    );
    ExitCode::SUCCESS
}

/// The WAV's samples as the engine hands them to the encoder: 48 kHz mono, as f32.
fn read_voice(path: &str) -> Result<Vec<f32>, String> {
    let reader = hound::WavReader::open(path).map_err(|e| e.to_string())?;
    let spec = reader.spec();
    if spec.sample_rate != 48_000 || spec.channels != 1 || spec.bits_per_sample != 16 {
        return Err(format!(
            "a 48 kHz mono 16-bit WAV is needed, not {} Hz, {} channels, {} bits",
            spec.sample_rate, spec.channels, spec.bits_per_sample
        ));
    }
    let samples = reader
        .into_samples::<i16>()
        .map(|sample| sample.map(|s| f32::from(s) / 32_768.0))
        .collect::<Result<Vec<f32>, _>>()
        .map_err(|e| e.to_string())?;
    if samples.len() < FRAME_SAMPLES {
        return Err("shorter than one 20 ms frame".to_owned());
    }
    Ok(samples)
}

/// Encodes `frames` frames of the voice (repeated as needed) and decodes the packets: the
/// thread's CPU nanoseconds in each direction.
fn both_ways(voice: &[f32], frames: usize, complexity: i32) -> Result<(u64, u64), String> {
    let mut encoder =
        OpusEncoder::with_complexity(BITRATE_BPS, complexity).map_err(|e| e.to_string())?;
    let mut decoder = OpusDecoder::new().map_err(|e| e.to_string())?;
    // Every packet in one buffer made beforehand, so the timed loops allocate nothing.
    let mut packet_bytes = Vec::with_capacity(frames * MAX_PACKET_BYTES);
    let mut packet_ends = Vec::with_capacity(frames);
    let mut packet = [0u8; MAX_PACKET_BYTES];
    let mut voice_frames = voice.chunks_exact(FRAME_SAMPLES).cycle();
    let started = thread_cpu_ns()?;
    for _ in 0..frames {
        let frame = voice_frames
            .next()
            .expect("a cycle of a non-empty voice never ends");
        let len = encoder
            .encode(frame, &mut packet)
            .map_err(|e| e.to_string())?;
        packet_bytes.extend_from_slice(&packet[..len]);
        packet_ends.push(packet_bytes.len());
    }
    let encoded = thread_cpu_ns()?;
    let mut decoded = [0f32; FRAME_SAMPLES];
    let mut start = 0;
    for &end in &packet_ends {
        let packet = &packet_bytes[start..end];
        start = end;
        decoder
            .decode(packet, &mut decoded)
            .map_err(|e| e.to_string())?;
        std::hint::black_box(&decoded);
    }
    let done = thread_cpu_ns()?;
    Ok((encoded - started, done - encoded))
}

/// This thread's time on the CPU so far, in nanoseconds (the first field of its schedstat).
fn thread_cpu_ns() -> Result<u64, String> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat")
        .map_err(|e| format!("reading the thread's CPU time: {e}"))?;
    text.split_whitespace()
        .next()
        .and_then(|field| field.parse().ok())
        .ok_or_else(|| format!("an unreadable schedstat: {text:?}"))
}
