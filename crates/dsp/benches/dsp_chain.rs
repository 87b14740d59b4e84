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
//! clock drift costs the uplink.
//!
//! `cargo bench -p walkie-dsp --bench dsp_chain`

use criterion::{Criterion, criterion_group, criterion_main};
use walkie_dsp::FRAME_SAMPLES;
use walkie_dsp::codec::{DEFAULT_OPUS_COMPLEXITY, MAX_PACKET_BYTES, OpusDecoder, OpusEncoder};
use walkie_dsp::drift::DriftResampler;
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
                let n = match jitter.pop() {
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

fn chain(c: &mut Criterion) {
    duplex(c, 48_000);
    duplex(c, 44_100);
    encoder(c, 9);
    encoder(c, DEFAULT_OPUS_COMPLEXITY);
    drift(c);
}

criterion_group!(benches, chain);
criterion_main!(benches);
