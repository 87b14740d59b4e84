//! Zero allocations per delta after warm-up, counted by a counting global allocator.
//!
//! Why a test and not only a benchmark figure: the hot path (an audio delta through validation,
//! the views and the backlog) must stay allocation-free as the code changes, with or without an
//! active iterator. Allocations are counted per thread so parallel tests do not disturb each other.
#![allow(unsafe_code)] // a global allocator is an unsafe trait; it only forwards to `System`.

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::Arc;

use common::*;
use walkie_session::{PartDelta, Session, SessionConfig, Speaker, TranscriptMode};

thread_local! {
    static ALLOCATIONS_ON_THIS_THREAD: Cell<u64> = const { Cell::new(0) };
}

struct CountingAllocator;

fn count_one() {
    // `try_with`: the allocator may run while this thread's locals are being torn down.
    let _ = ALLOCATIONS_ON_THIS_THREAD.try_with(|count| count.set(count.get() + 1));
}

// SAFETY: every method forwards to `System` with the caller's arguments unchanged; counting touches
// only a thread-local `Cell` and never allocates.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count_one();
        // SAFETY: forwarded contract.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count_one();
        // SAFETY: forwarded contract.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count_one();
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

fn allocations_during(work: impl FnOnce()) -> u64 {
    let before = ALLOCATIONS_ON_THIS_THREAD.with(Cell::get);
    work();
    ALLOCATIONS_ON_THIS_THREAD.with(Cell::get) - before
}

/// Deltas prepared up front: cloning one is a reference-count increment.
fn prepared_deltas() -> (PartDelta, PartDelta) {
    let audio = audio_delta(7);
    let transcript =
        PartDelta::transcript(Speaker::Assistant, Arc::from(" word"), Arc::from("a word"));
    (audio, transcript)
}

#[test]
fn audio_and_transcript_deltas_allocate_nothing_after_warm_up_while_nobody_iterates() {
    let mut session = Session::default();
    let (audio, transcript) = prepared_deltas();
    let part = start_assistant_speech(&mut session, 0);
    for n in 0..2_000 {
        session.push_delta(part, audio.clone(), n).unwrap();
    }

    let allocations = allocations_during(|| {
        for n in 0..10_000 {
            session.push_delta(part, audio.clone(), n).unwrap();
            session.push_delta(part, transcript.clone(), n).unwrap();
        }
    });

    assert_eq!(
        allocations, 0,
        "allocations for 20 000 deltas through full rings"
    );
    assert!(
        session.drop_counters().deltas_evicted > 0,
        "the rings were evicting"
    );
}

#[test]
fn deltas_allocate_nothing_after_warm_up_with_an_active_iterator() {
    let mut session = Session::default();
    let (audio, transcript) = prepared_deltas();
    let iterator = session.iterate().unwrap();
    let part = start_assistant_speech(&mut session, 0);
    for n in 0..100 {
        session.push_delta(part, audio.clone(), n).unwrap();
        while session.poll_event(&iterator).unwrap().is_some() {}
    }

    let allocations = allocations_during(|| {
        for n in 0..10_000 {
            session.push_delta(part, audio.clone(), n).unwrap();
            session.push_delta(part, transcript.clone(), n).unwrap();
            while session.poll_event(&iterator).unwrap().is_some() {}
        }
    });

    assert_eq!(allocations, 0);
}

#[test]
fn deltas_allocate_nothing_after_warm_up_with_views_subscribed() {
    let mut session = Session::new(SessionConfig::default());
    let (audio, transcript) = prepared_deltas();
    let audio_view = session.stream_audio();
    let updates = session.stream_transcripts(TranscriptMode::Updates);
    session.poll_audio(&audio_view).unwrap();
    session.poll_transcripts(&updates).unwrap();
    let part = start_assistant_speech(&mut session, 0);
    for n in 0..2_000 {
        session.push_delta(part, audio.clone(), n).unwrap();
        session.push_delta(part, transcript.clone(), n).unwrap();
    }

    let allocations = allocations_during(|| {
        for n in 0..10_000 {
            session.push_delta(part, audio.clone(), n).unwrap();
            session.push_delta(part, transcript.clone(), n).unwrap();
            if n % 3 == 0 {
                while session.poll_audio(&audio_view).unwrap().is_some() {}
            }
            if n % 7 == 0 {
                while session.poll_transcripts(&updates).unwrap().is_some() {}
            }
        }
    });

    assert_eq!(allocations, 0);
}

#[test]
fn the_counting_allocator_sees_an_allocation() {
    let allocations = allocations_during(|| {
        std::hint::black_box(vec![1u8; 16]);
    });

    assert_eq!(allocations, 1);
}
