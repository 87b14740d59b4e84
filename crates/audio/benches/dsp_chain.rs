//! The duplex DSP chain for 20 ms of audio, both ways, without devices: device rate → 48 kHz →
//! Opus encode (uplink); jitter buffer → Opus decode → device rate (downlink). One iteration is
//! 20 ms of call audio, so the time per iteration divided by 20 ms is the share of one core.
//!
//! `cargo bench -p walkie-audio --bench dsp_chain`

use criterion::{Criterion, criterion_group, criterion_main};
use walkie_audio::FRAME_SAMPLES;
use walkie_audio::codec::{MAX_PACKET_BYTES, OpusDecoder, OpusEncoder};
use walkie_audio::jitter::{JitterBuffer, JitterConfig, Playout};
use walkie_audio::resample::StreamResampler;

fn speech_like(len: usize, rate_hz: u32) -> Vec<f32> {
    (0..len)
        .map(|i| {
            let t = i as f32 / rate_hz as f32;
            0.3 * (2.0 * std::f32::consts::PI * 220.0 * t).sin()
                + 0.1 * (2.0 * std::f32::consts::PI * 1_870.0 * t).sin()
        })
        .collect()
}

fn duplex(c: &mut Criterion, device_rate_hz: u32) {
    let device_frame = (device_rate_hz / 50) as usize;
    let mic = speech_like(device_frame, device_rate_hz);
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
    c.bench_function(
        &format!("20 ms duplex at a {} Hz device", device_rate_hz),
        |b| {
            b.iter(|| {
                call.clear();
                up.process(&mic, &mut call);
                frame.extend_from_slice(&call);
                if frame.len() >= FRAME_SAMPLES {
                    let len = encoder
                        .encode(&frame[..FRAME_SAMPLES], &mut packet)
                        .expect("encodes");
                    frame.drain(..FRAME_SAMPLES);
                    jitter.push(
                        seq,
                        u32::from(seq) * 960,
                        &packet[..len],
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

fn chain(c: &mut Criterion) {
    duplex(c, 48_000);
    duplex(c, 44_100);
}

criterion_group!(benches, chain);
criterion_main!(benches);
