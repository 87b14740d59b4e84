//! The duplex DSP chain for 20 ms of audio, both ways, without devices: device rate → 48 kHz →
//! Opus encode (uplink); jitter buffer → Opus decode → device rate (downlink). One iteration is
//! 20 ms of call audio, so the time per iteration divided by 20 ms is the share of one core.
//!
//! The microphone carries speech (the local provider's voiced syllables) and the downlink
//! decodes what a provider sends (its own libopus encoding of speech): on a tone libopus
//! codes in CELT mode, at a fraction of what speech costs, and the figures would flatter the
//! chain. The encoder alone is also measured at libopus's default complexity (9) and at the
//! engine's ([`DEFAULT_OPUS_COMPLEXITY`]), the choice docs/benchmarks.md explains. The echo
//! canceller's reference through the drift resampler is measured on its own: what following a
//! clock drift costs the uplink. The canceller itself is measured at the engine's rates (the
//! microphone/reference rates in kHz, noise suppression on and off) and at lower ones: what
//! its processing rate costs, against the band the provider uses.
//!
//! `cargo bench -p walkie-dsp --bench dsp_chain`

use criterion::{Criterion, criterion_group, criterion_main};
use walkie_dsp::FRAME_SAMPLES;
use walkie_dsp::codec::{DEFAULT_OPUS_COMPLEXITY, MAX_PACKET_BYTES, OpusDecoder, OpusEncoder};
use walkie_dsp::drift::DriftResampler;
use walkie_dsp::echo::{EchoCanceller, EchoConfig};
use walkie_dsp::jitter::{JitterBuffer, JitterConfig, Playout};
use walkie_dsp::resample::StreamResampler;
use walkie_dsp::testkit::{encode_opus, speech_like};

/// Two seconds of speech at `rate_hz`, as f32.
fn speech(rate_hz: u32) -> Vec<f32> {
    let at_48k: Vec<f32> = speech_like(2_000)
        .iter()
        .map(|&sample| f32::from(sample) / 32_768.0)
        .collect();
    let mut resampler = StreamResampler::new(48_000, rate_hz).expect("resampler");
    let mut out = Vec::with_capacity(resampler.max_output_for(at_48k.len()));
    resampler.process(&at_48k, &mut out);
    out
}

fn duplex(c: &mut Criterion, device_rate_hz: u32) {
    let device_frame = (device_rate_hz / 50) as usize;
    let mic = speech(device_rate_hz);
    let reply = encode_opus(&speech_like(2_000)).expect("the reply encodes");
    let mut up = StreamResampler::new(device_rate_hz, 48_000).expect("resampler");
    let mut down = StreamResampler::new(48_000, device_rate_hz).expect("resampler");
    let mut encoder = OpusEncoder::new(32_000).expect("encoder");
    let mut decoder = OpusDecoder::new().expect("decoder");
    let mut jitter = JitterBuffer::new(JitterConfig::default());
    let mut call = Vec::with_capacity(2 * FRAME_SAMPLES);
    let mut frame = Vec::with_capacity(FRAME_SAMPLES);
    let mut speaker = Vec::with_capacity(2 * device_frame + 1024);
    let mut packet = [0u8; MAX_PACKET_BYTES];
    let mut decoded = [0f32; FRAME_SAMPLES];
    let mut seq = 0u16;
    let mut mic_frames = mic.chunks_exact(device_frame).cycle();
    c.bench_function(
        &format!("20 ms duplex of speech at a {} Hz device", device_rate_hz),
        |b| {
            b.iter(|| {
                call.clear();
                up.process(mic_frames.next().expect("a cycle never ends"), &mut call);
                frame.extend_from_slice(&call);
                if frame.len() >= FRAME_SAMPLES {
                    let len = encoder
                        .encode(&frame[..FRAME_SAMPLES], &mut packet)
                        .expect("encodes");
                    std::hint::black_box(&packet[..len]);
                    frame.drain(..FRAME_SAMPLES);
                    jitter.push(
                        seq,
                        u32::from(seq) * 960,
                        &reply[usize::from(seq) % reply.len()],
                        u64::from(seq) * 20,
                    );
                    seq = seq.wrapping_add(1);
                }
                let n = match jitter.pop(u64::from(seq) * 20) {
                    Playout::Packet(p) => decoder.decode(p, &mut decoded).expect("decodes"),
                    Playout::Recover(p) => decoder.recover(p, &mut decoded).expect("recovers"),
                    Playout::Conceal => decoder.conceal(&mut decoded).expect("conceals"),
                    Playout::Waiting => 0,
                };
                speaker.clear();
                down.process(&decoded[..n], &mut speaker);
                std::hint::black_box(&speaker);
            })
        },
    );
}

fn encoder(c: &mut Criterion, complexity: i32) {
    let mic = speech(48_000);
    let mut frames = mic.chunks_exact(FRAME_SAMPLES).cycle();
    let mut encoder = OpusEncoder::with_complexity(32_000, complexity).expect("encoder");
    let mut packet = [0u8; MAX_PACKET_BYTES];
    c.bench_function(
        &format!("Opus encode, 20 ms of speech, complexity {complexity}"),
        |b| {
            b.iter(|| {
                let len = encoder
                    .encode(frames.next().expect("a cycle never ends"), &mut packet)
                    .expect("encodes");
                std::hint::black_box(&packet[..len]);
            })
        },
    );
}

fn drift(c: &mut Criterion) {
    let reference = speech(48_000);
    let mut frames = reference.chunks_exact(FRAME_SAMPLES).cycle();
    let mut resampler = DriftResampler::new(48_000).expect("48 kHz");
    resampler.set_drift_ppm(1_000.0);
    let mut out = Vec::with_capacity(2 * FRAME_SAMPLES);
    c.bench_function(
        "20 ms of the echo reference through the drift resampler at +1000 ppm",
        |b| {
            b.iter(|| {
                out.clear();
                resampler.process(frames.next().expect("a cycle never ends"), &mut out);
                std::hint::black_box(&out);
            })
        },
    );
}

/// 20 ms of double talk through the canceller: the reply it is given as played, and the
/// microphone hearing it (delayed 60 ms, 12 dB down) over the near speaker's own speech.
fn canceller(
    c: &mut Criterion,
    capture_rate_hz: u32,
    render_rate_hz: u32,
    noise_suppression: bool,
) {
    let mut canceller = EchoCanceller::new(EchoConfig {
        capture_rate_hz,
        render_rate_hz,
        noise_suppression,
    })
    .expect("the canceller's rates");
    let reply = speech(render_rate_hz);
    // The same reply at the microphone's rate, as it reaches the microphone.
    let reply_heard = speech(capture_rate_hz);
    let near = speech(capture_rate_hz);
    let echo_delay = capture_rate_hz as usize / 1000 * 60;
    let mic: Vec<f32> = (0..near.len())
        .map(|i| {
            let echo = reply_heard[(i + reply_heard.len() - echo_delay) % reply_heard.len()];
            0.5 * near[(i + near.len() / 3) % near.len()] + 0.25 * echo
        })
        .collect();
    let render_frame = canceller.render_frame_samples();
    let capture_frame = canceller.capture_frame_samples();
    let mut played = reply.chunks_exact(render_frame).cycle();
    let mut heard = mic.chunks_exact(capture_frame).cycle();
    let mut frame = vec![0f32; capture_frame];
    c.bench_function(
        &format!(
            "canceller, 20 ms of double talk: {}/{} kHz, noise suppression {}",
            capture_rate_hz / 1000,
            render_rate_hz / 1000,
            if noise_suppression { "on" } else { "off" }
        ),
        |b| {
            b.iter(|| {
                for _ in 0..2 {
                    canceller
                        .played(played.next().expect("a cycle never ends"))
                        .expect("a frame of the render rate");
                    frame.copy_from_slice(heard.next().expect("a cycle never ends"));
                    canceller
                        .captured(&mut frame, 60)
                        .expect("a frame of the capture rate");
                }
                std::hint::black_box(&frame);
            })
        },
    );
}

fn chain(c: &mut Criterion) {
    duplex(c, 48_000);
    duplex(c, 44_100);
    encoder(c, 9);
    encoder(c, DEFAULT_OPUS_COMPLEXITY);
    drift(c);
    canceller(c, 48_000, 48_000, true);
    canceller(c, 48_000, 48_000, false);
    canceller(c, 32_000, 32_000, true);
    canceller(c, 16_000, 16_000, true);
}

criterion_group!(benches, chain);
criterion_main!(benches);
