//! Events per second through the session, with an active iterator and with none, and allocations
//! per delta after warm-up (counting allocator).
//!
//! The synthetic stream is one spoken assistant turn, repeated: a part start, 200 audio deltas of
//! 20 ms (480 samples) with a transcript delta after every tenth, then the response terminal, which
//! makes the session emit the part end and the turn completion: 223 session events per turn.
//! bench/session/compare.py drives pydantic-ai's `RealtimeSession` with the same stream.
#![allow(unsafe_code)] // the counting global allocator; it only forwards to `System`.

use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use criterion::{Criterion, Throughput, criterion_group};
use walkie_session::{AudioChunk, Part, PartDelta, Session, Speaker};

struct CountingAllocator;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

// SAFETY: every method forwards to `System` unchanged; counting is an atomic increment.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: forwarded contract.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: forwarded contract.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: forwarded contract.
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded contract.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

const AUDIO_DELTAS_PER_TURN: u64 = 200;
const TRANSCRIPT_EVERY_N_AUDIO: u64 = 10;
const SAMPLES_PER_CHUNK: usize = 480;
/// Start + 200 audio + 20 transcript deltas + end + turn complete.
const EVENTS_PER_TURN: u64 =
    1 + AUDIO_DELTAS_PER_TURN + AUDIO_DELTAS_PER_TURN / TRANSCRIPT_EVERY_N_AUDIO + 2;

/// The stream's payloads, made once: the producer hands the session shared buffers.
struct Payloads {
    audio: PartDelta,
    transcript: PartDelta,
}

impl Payloads {
    fn new() -> Self {
        Self {
            audio: PartDelta::assistant_audio(AudioChunk::from_samples(vec![
                0i16;
                SAMPLES_PER_CHUNK
            ])),
            transcript: PartDelta::transcript(
                Speaker::Assistant,
                Arc::from(" word"),
                Arc::from("a word"),
            ),
        }
    }
}

/// One synthetic turn into the session; with an iterator, each event is polled as a consumer that
/// keeps up would. Returns the events delivered to the iterator.
#[inline(always)]
fn one_turn(
    session: &mut Session,
    payloads: &Payloads,
    iterator: Option<&walkie_session::EventIterator>,
    now_ms: u64,
) -> u64 {
    let mut delivered = 0;
    let mut drain = |session: &mut Session| {
        if let Some(iterator) = iterator {
            while let Some(item) = session.poll_event(iterator).expect("active iterator") {
                black_box(&item);
                delivered += 1;
            }
        }
    };
    let part = session
        .start_part(Part::speech(Speaker::Assistant), now_ms)
        .expect("fresh part");
    drain(session);
    for n in 0..AUDIO_DELTAS_PER_TURN {
        session
            .push_delta(part, payloads.audio.clone(), now_ms + n * 20)
            .expect("open part");
        drain(session);
        if n % TRANSCRIPT_EVERY_N_AUDIO == TRANSCRIPT_EVERY_N_AUDIO - 1 {
            session
                .push_delta(part, payloads.transcript.clone(), now_ms + n * 20)
                .expect("open part");
            drain(session);
        }
    }
    session.response_done(now_ms + 4_000).expect("open session");
    drain(session);
    delivered
}

fn bench_session_events(c: &mut Criterion) {
    let payloads = Payloads::new();
    let mut group = c.benchmark_group("session_events");
    group.throughput(Throughput::Elements(EVENTS_PER_TURN));

    group.bench_function("no_iterator", |b| {
        let mut session = Session::default();
        let mut now_ms = 0;
        b.iter(|| {
            now_ms += 4_000;
            one_turn(&mut session, &payloads, None, now_ms)
        });
    });

    group.bench_function("active_iterator", |b| {
        let mut session = Session::default();
        let iterator = session.iterate().expect("first iterator");
        let mut now_ms = 0;
        b.iter(|| {
            now_ms += 4_000;
            let delivered = one_turn(&mut session, &payloads, Some(&iterator), now_ms);
            debug_assert_eq!(delivered, EVENTS_PER_TURN);
            delivered
        });
    });
    group.finish();
}

/// Allocations per delta after warm-up, in both modes, printed for docs/benchmarks.md.
fn report_allocations_per_delta() {
    let payloads = Payloads::new();
    for mode in ["no_iterator", "active_iterator"] {
        let mut session = Session::default();
        let iterator =
            (mode == "active_iterator").then(|| session.iterate().expect("first iterator"));
        let part = session
            .start_part(Part::speech(Speaker::Assistant), 0)
            .expect("fresh part");
        let deltas_measured: u64 = 1_000_000;
        let warm_up = 2_000;
        let mut allocations_before = 0;
        for n in 0..warm_up + deltas_measured {
            if n == warm_up {
                allocations_before = ALLOCATIONS.load(Ordering::Relaxed);
            }
            let delta = if n % 11 == 10 {
                &payloads.transcript
            } else {
                &payloads.audio
            };
            session
                .push_delta(part, delta.clone(), n)
                .expect("open part");
            if let Some(iterator) = &iterator {
                while let Some(item) = session.poll_event(iterator).expect("active iterator") {
                    black_box(&item);
                }
            }
        }
        let allocations = ALLOCATIONS.load(Ordering::Relaxed) - allocations_before;
        println!(
            "walkie-session allocations: mode={mode} deltas={deltas_measured} allocations={allocations} per_delta={:.6}",
            allocations as f64 / deltas_measured as f64
        );
    }
}

criterion_group!(benches, bench_session_events);

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
    report_allocations_per_delta();
}
