//! Helpers shared by the integration tests: synthetic audio, drains and stream checks.
#![allow(dead_code)]

use std::collections::HashSet;
use std::sync::Arc;

use walkie_session::{
    AudioChunk, Delivery, Part, PartDelta, PartIndex, Session, SessionEvent, SessionFailure,
    Speaker, StampedEvent,
};

/// A chunk of `sample_count` samples whose values start at `first_sample` and count up, so every
/// sample of a turn is distinguishable.
pub fn counting_chunk(first_sample: i16, sample_count: usize) -> AudioChunk {
    let samples: Vec<i16> = (0..sample_count)
        .map(|i| first_sample.wrapping_add(i as i16))
        .collect();
    AudioChunk::from_samples(samples)
}

/// An assistant audio delta.
pub fn audio_delta(first_sample: i16) -> PartDelta {
    PartDelta::assistant_audio(counting_chunk(first_sample, 4))
}

/// A transcript delta carrying the appended text and the whole transcript so far.
pub fn transcript_delta(speaker: Speaker, appended: &str, whole: &str) -> PartDelta {
    PartDelta::transcript(speaker, Arc::from(appended), Arc::from(whole))
}

/// Everything a late iterator gets right now: iterate, drain, stop.
pub fn drain_late(session: &mut Session) -> Vec<Delivery> {
    let iterator = session.iterate().expect("no other iterator is active");
    let mut delivered = Vec::new();
    while let Some(item) = session.poll_event(&iterator).expect("iterator is active") {
        delivered.push(item);
    }
    session
        .stop_iterating(iterator)
        .expect("iterator is active");
    delivered
}

/// The events among deliveries.
pub fn events(deliveries: &[Delivery]) -> Vec<&StampedEvent> {
    deliveries
        .iter()
        .filter_map(|d| match d {
            Delivery::Event(e) => Some(e),
            Delivery::Failure(_) => None,
        })
        .collect()
}

/// The failures among deliveries.
pub fn failures(deliveries: &[Delivery]) -> Vec<&SessionFailure> {
    deliveries
        .iter()
        .filter_map(|d| match d {
            Delivery::Failure(f) => Some(&f.failure),
            Delivery::Event(_) => None,
        })
        .collect()
}

/// Event kind names, for sequence assertions.
pub fn kinds(deliveries: &[Delivery]) -> Vec<&'static str> {
    deliveries
        .iter()
        .map(|d| match d {
            Delivery::Event(e) => e.event.kind_name(),
            Delivery::Failure(_) => "failure",
        })
        .collect()
}

/// Checks that a consumer that saw `deliveries` (in order, across all its iterations) never got a
/// delta or end without having got its start, and that sequence numbers strictly increase.
pub fn assert_parts_whole_and_ordered(deliveries: &[Delivery]) {
    let mut started: HashSet<PartIndex> = HashSet::new();
    let mut ended: HashSet<PartIndex> = HashSet::new();
    let mut last_seq: Option<u64> = None;
    for delivery in deliveries {
        let seq = match delivery {
            Delivery::Event(e) => e.seq,
            Delivery::Failure(f) => f.seq,
        };
        if let Some(last) = last_seq {
            assert!(seq > last, "sequence went from {last} to {seq}");
        }
        last_seq = Some(seq);
        let Delivery::Event(stamped) = delivery else {
            continue;
        };
        match &stamped.event {
            SessionEvent::PartStart(start) => {
                assert!(
                    started.insert(start.index),
                    "part {} started twice",
                    start.index
                );
            }
            SessionEvent::PartDelta(delta) => {
                assert!(
                    started.contains(&delta.index),
                    "delta of part {} without its start",
                    delta.index
                );
                assert!(
                    !ended.contains(&delta.index),
                    "delta of part {} after its end",
                    delta.index
                );
            }
            SessionEvent::PartEnd(end) => {
                assert!(
                    started.contains(&end.index),
                    "end of part {} without its start",
                    end.index
                );
                assert!(ended.insert(end.index), "part {} ended twice", end.index);
            }
            _ => {}
        }
    }
}

/// Start an assistant speech part.
pub fn start_assistant_speech(session: &mut Session, now_ms: u64) -> PartIndex {
    session
        .start_part(Part::speech(Speaker::Assistant), now_ms)
        .expect("a fresh part starts")
}
