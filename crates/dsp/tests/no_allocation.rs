//! The DSP a call's audio goes through allocates nothing per frame once set up: the uplink's
//! resample → Opus encode, the downlink's jitter buffer → Opus decode (FEC, concealment) →
//! resample, the meters and the pre-roll. Counted by a global allocator that counts each
//! thread's allocations, over 10 s of speech after a warm-up. The echo canceller's processing
//! (sonora's AEC3) allocates inside, on the uplink worker: counted and reported, and the stage
//! around it must add nothing.

#![allow(unsafe_code)] // a counting allocator: GlobalAlloc is an unsafe trait

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use walkie_dsp::FRAME_SAMPLES;
use walkie_dsp::codec::{MAX_PACKET_BYTES, OpusDecoder, OpusEncoder};
use walkie_dsp::echo::{EchoCanceller, EchoConfig, EchoStage};
use walkie_dsp::jitter::{JitterBuffer, JitterConfig, Playout};
use walkie_dsp::meter::LevelMeter;
use walkie_dsp::preroll::PreRoll;
use walkie_dsp::resample::StreamResampler;
use walkie_dsp::testkit::{encode_opus, speech_like, speech_like_f32};

thread_local! {
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

struct Counting;

// SAFETY: every call is forwarded to the system allocator unchanged; the count is a
// thread-local `Cell` with a const initialiser, which itself never allocates.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.with(|count| count.set(count.get() + 1));
        // SAFETY: the caller's contract is the system allocator's.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System.alloc` with this `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.with(|count| count.set(count.get() + 1));
        // SAFETY: as for `dealloc`, and `new_size` is the caller's to keep valid.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static COUNTING: Counting = Counting;

/// Allocations made on this thread while `work` ran.
fn allocations_in(work: impl FnOnce()) -> u64 {
    let before = ALLOCATIONS.with(Cell::get);
    work();
    ALLOCATIONS.with(Cell::get) - before
}

/// 20 ms pieces of a 44.1 kHz device, as the uplink reads them.
const DEVICE_RATE_HZ: u32 = 44_100;
const DEVICE_PIECE: usize = 882;

#[test]
fn the_uplink_resamples_meters_keeps_the_pre_roll_and_encodes_without_allocating() {
    let mut to_call_rate = StreamResampler::new(48_000, DEVICE_RATE_HZ).expect("a resampler");
    let mut device_speech = Vec::new();
    to_call_rate.process(&speech_like_f32(11_000), &mut device_speech);

    let mut resampler = StreamResampler::new(DEVICE_RATE_HZ, 48_000).expect("a resampler");
    let mut meter = LevelMeter::new(DEVICE_RATE_HZ, 30);
    let mut preroll = PreRoll::new(48_000, 300);
    let mut encoder = OpusEncoder::new(32_000).expect("an encoder");
    let mut call = Vec::with_capacity(resampler.max_output_for(DEVICE_PIECE) + FRAME_SAMPLES);
    let mut frame = Vec::with_capacity(FRAME_SAMPLES);
    let mut packet = Box::new([0u8; MAX_PACKET_BYTES]);
    let mut levels = 0;
    let mut packets = 0;
    let mut pass = |piece: &[f32]| {
        meter.feed(piece, |_| levels += 1);
        call.clear();
        resampler.process(piece, &mut call);
        preroll.push(&call);
        for &sample in &call {
            frame.push(sample);
            if frame.len() == FRAME_SAMPLES {
                encoder.encode(&frame, &mut packet).expect("encodes");
                packets += 1;
                frame.clear();
            }
        }
    };
    let (warm_up, measured) = device_speech.split_at(DEVICE_PIECE * 50);
    for piece in warm_up.chunks_exact(DEVICE_PIECE) {
        pass(piece);
    }
    let allocations = allocations_in(|| {
        for piece in measured.chunks_exact(DEVICE_PIECE) {
            pass(piece);
        }
    });
    assert!(
        packets > 450,
        "10 s of speech was encoded: {packets} packets"
    );
    assert!(levels > 250, "the meter read it: {levels} readings");
    assert_eq!(allocations, 0, "allocations over {packets} frames");
}

#[test]
fn the_downlink_buffers_decodes_recovers_conceals_and_resamples_without_allocating() {
    let packets = encode_opus(&speech_like(11_000)).expect("the reply encodes");
    let mut jitter = JitterBuffer::new(JitterConfig::default());
    let mut decoder = OpusDecoder::new().expect("a decoder");
    let mut resampler = StreamResampler::new(48_000, DEVICE_RATE_HZ).expect("a resampler");
    let mut decoded = Box::new([0.0f32; FRAME_SAMPLES]);
    let mut device = Vec::with_capacity(resampler.max_output_for(FRAME_SAMPLES));
    let mut played = 0;
    let mut pass = |seq: usize| {
        // Every 25th packet is lost: the next one's FEC or concealment stands in.
        if seq % 25 != 7 {
            jitter.push(
                seq as u16,
                (seq * FRAME_SAMPLES) as u32,
                &packets[seq],
                seq as u64 * 20,
            );
        }
        let samples = match jitter.pop(seq as u64 * 20) {
            Playout::Packet(packet) => decoder.decode(packet, &mut decoded),
            Playout::Recover(next) => decoder.recover(next, &mut decoded),
            Playout::Conceal => decoder.conceal(&mut decoded),
            Playout::Waiting => return,
        }
        .expect("decodes");
        device.clear();
        resampler.process(&decoded[..samples], &mut device);
        played += 1;
    };
    for seq in 0..50 {
        pass(seq);
    }
    let allocations = allocations_in(|| {
        for seq in 50..packets.len() {
            pass(seq);
        }
    });
    assert!(played > 450, "the reply played: {played} frames");
    assert!(
        jitter.stats().concealed + jitter.stats().recovered > 0,
        "losses were covered"
    );
    assert_eq!(allocations, 0, "allocations over {played} frames");
}

#[test]
fn the_echo_stage_allocates_nothing_beyond_what_its_canceller_does() {
    let speech = speech_like_f32(6_000);
    let config = EchoConfig {
        capture_rate_hz: 48_000,
        render_rate_hz: 48_000,
        noise_suppression: true,
    };
    let mut canceller = EchoCanceller::new(config).expect("48 kHz is supported");
    let mut stage = EchoStage::new(48_000, true).expect("48 kHz is supported");
    let mut frame = vec![0.0f32; 480];
    let mut sent = Vec::with_capacity(speech.len());
    let (warm_up, measured) = speech.split_at(48_000);
    for piece in warm_up.chunks_exact(480) {
        canceller.played(piece).expect("reference");
        frame.copy_from_slice(piece);
        canceller.captured(&mut frame, 40).expect("capture");
        stage.played(piece).expect("reference");
        stage.captured(piece, &mut sent, 40).expect("capture");
    }
    let by_the_canceller = allocations_in(|| {
        for piece in measured.chunks_exact(480) {
            canceller.played(piece).expect("reference");
            frame.copy_from_slice(piece);
            canceller.captured(&mut frame, 40).expect("capture");
        }
    });
    let by_the_stage = allocations_in(|| {
        for piece in measured.chunks_exact(480) {
            stage.played(piece).expect("reference");
            stage.captured(piece, &mut sent, 40).expect("capture");
        }
    });
    let frames = measured.len() / 480;
    println!(
        "the canceller (sonora's AEC3 + noise suppression): {by_the_canceller} allocations over \
         {frames} 10 ms frames ({:.1} a frame); the stage around it: {by_the_stage}",
        by_the_canceller as f64 / frames as f64
    );
    assert_eq!(
        sent.len(),
        speech.len(),
        "every frame went through the stage"
    );
    assert_eq!(
        by_the_stage, by_the_canceller,
        "the stage adds none of its own"
    );
}
