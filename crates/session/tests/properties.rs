//! Property tests over random event streams and random consumer behaviour: a late iterator never
//! receives a delta or end whose start it did not receive; what is kept stays in order; memory stays
//! bounded however long the session runs; failures arrive exactly once; nothing is lost while an
//! iterator is active; every event is accounted for (delivered, counted as dropped, or queued).

mod common;

use std::sync::Arc;

use common::*;
use proptest::prelude::*;
use walkie_session::{
    Delivery, FailureSource, Part, PartDelta, PartIndex, ResponseDone, Session, SessionConfig,
    SessionEvent, SessionFailure, Speaker, TextPartDelta, ToolCallPart,
};

#[derive(Debug, Clone)]
enum Op {
    StartSpeech(Speaker),
    StartText,
    StartToolCall,
    Delta(usize),
    End(usize),
    Structural,
    Failure,
    ResponseDone,
    Iterate,
    Poll(usize),
    Stop,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => prop_oneof![Just(Speaker::User), Just(Speaker::Assistant)].prop_map(Op::StartSpeech),
        1 => Just(Op::StartText),
        1 => Just(Op::StartToolCall),
        30 => any::<usize>().prop_map(Op::Delta),
        3 => any::<usize>().prop_map(Op::End),
        4 => Just(Op::Structural),
        1 => Just(Op::Failure),
        2 => Just(Op::ResponseDone),
        2 => Just(Op::Iterate),
        3 => (0usize..64).prop_map(Op::Poll),
        2 => Just(Op::Stop),
    ]
}

#[derive(Debug, Clone, Copy)]
enum OpenKind {
    Speech(Speaker),
    Text,
    ToolCall,
}

struct Harness {
    session: Session,
    open: Vec<(PartIndex, OpenKind)>,
    iterator: Option<walkie_session::EventIterator>,
    delivered: Vec<Delivery>,
    accepted_events: u64,
    parked_failures: u64,
    delta_capacity: usize,
    structural_capacity: usize,
}

impl Harness {
    fn new(delta_capacity: usize, structural_capacity: usize) -> Self {
        Self {
            session: Session::new(SessionConfig {
                delta_ring_capacity: delta_capacity,
                structural_ring_capacity: structural_capacity,
                ..SessionConfig::default()
            }),
            open: Vec::new(),
            iterator: None,
            delivered: Vec::new(),
            accepted_events: 0,
            parked_failures: 0,
            delta_capacity,
            structural_capacity,
        }
    }

    fn apply(&mut self, op: Op, now_ms: u64) {
        match op {
            Op::StartSpeech(speaker) => {
                let index = self
                    .session
                    .start_part(Part::speech(speaker), now_ms)
                    .unwrap();
                self.open.push((index, OpenKind::Speech(speaker)));
                self.accepted_events += 1;
            }
            Op::StartText => {
                let index = self.session.start_part(Part::text(), now_ms).unwrap();
                self.open.push((index, OpenKind::Text));
                self.accepted_events += 1;
            }
            Op::StartToolCall => {
                let call = ToolCallPart {
                    tool_name: "local_time".into(),
                    args: "{}".into(),
                    tool_call_id: format!("call-{now_ms}"),
                };
                let index = self
                    .session
                    .start_part(Part::tool_call(call), now_ms)
                    .unwrap();
                self.open.push((index, OpenKind::ToolCall));
                self.accepted_events += 1;
            }
            Op::Delta(pick) => {
                let deltable: Vec<_> = self
                    .open
                    .iter()
                    .filter(|(_, kind)| !matches!(kind, OpenKind::ToolCall))
                    .copied()
                    .collect();
                if deltable.is_empty() {
                    return;
                }
                let (index, kind) = deltable[pick % deltable.len()];
                let delta = match kind {
                    OpenKind::Speech(Speaker::Assistant) => audio_delta(now_ms as i16),
                    OpenKind::Speech(speaker) => PartDelta::transcript(
                        speaker,
                        Arc::from("a"),
                        Arc::from("a".repeat(1 + (now_ms % 5) as usize)),
                    ),
                    OpenKind::Text => PartDelta::Text(TextPartDelta {
                        content_delta: Arc::from("t"),
                    }),
                    OpenKind::ToolCall => unreachable!("filtered out above"),
                };
                self.session.push_delta(index, delta, now_ms).unwrap();
                self.accepted_events += 1;
            }
            Op::End(pick) => {
                if self.open.is_empty() {
                    return;
                }
                let (index, _) = self.open.remove(pick % self.open.len());
                self.session.end_part(index, now_ms).unwrap();
                self.accepted_events += 1;
            }
            Op::Structural => {
                self.session
                    .push(SessionEvent::ResponseInterrupted, now_ms)
                    .unwrap();
                self.accepted_events += 1;
            }
            Op::Failure => {
                self.session.park_failure(
                    SessionFailure {
                        source: FailureSource::Upstream,
                        message: format!("failure at {now_ms}"),
                    },
                    now_ms,
                );
                self.parked_failures += 1;
            }
            Op::ResponseDone => {
                // The session closes the model's open parts itself: one end event each.
                let closing = self
                    .open
                    .iter()
                    .filter(|(_, kind)| !matches!(kind, OpenKind::Speech(Speaker::User)))
                    .count() as u64;
                self.open
                    .retain(|(_, kind)| matches!(kind, OpenKind::Speech(Speaker::User)));
                let done = self.session.response_done(now_ms).unwrap();
                self.accepted_events += closing + u64::from(done == ResponseDone::TurnComplete);
            }
            Op::Iterate => {
                if self.iterator.is_none() {
                    self.iterator = Some(self.session.iterate().unwrap());
                }
            }
            Op::Poll(count) => {
                if let Some(iterator) = &self.iterator {
                    for _ in 0..count {
                        match self.session.poll_event(iterator).unwrap() {
                            Some(item) => self.delivered.push(item),
                            None => break,
                        }
                    }
                }
            }
            Op::Stop => {
                if let Some(iterator) = self.iterator.take() {
                    self.session.stop_iterating(iterator).unwrap();
                }
            }
        }
    }

    fn check_bounded(&self) {
        if self.iterator.is_none() {
            let len = self.session.backlog_len();
            assert!(len.deltas <= self.delta_capacity, "{len:?}");
            assert!(len.structural <= self.structural_capacity, "{len:?}");
        }
    }
}

fn run(ops: Vec<Op>, delta_capacity: usize, structural_capacity: usize) {
    let mut harness = Harness::new(delta_capacity, structural_capacity);
    for (n, op) in ops.into_iter().enumerate() {
        let losing_before = lossy_drops(&harness.session);
        // Stopping an iterator trims at once; any other step taken while iterating loses nothing.
        let iterating = harness.iterator.is_some() && !matches!(op, Op::Stop);
        harness.apply(op, n as u64);
        if iterating {
            assert_eq!(
                lossy_drops(&harness.session),
                losing_before,
                "nothing is evicted while an iterator is active"
            );
        }
        harness.check_bounded();
    }
    // Drain the rest with a final late iterator, as a consumer would.
    if let Some(iterator) = harness.iterator.take() {
        harness.session.stop_iterating(iterator).unwrap();
    }
    harness.check_bounded();
    let queued = harness.session.backlog_len();
    let rest = drain_late(&mut harness.session);
    assert_eq!(
        events(&rest).len(),
        queued.events(),
        "a late iterator gets exactly what was kept"
    );
    assert_eq!(failures(&rest).len(), queued.failures);
    harness.delivered.extend(rest);

    assert_parts_whole_and_ordered(&harness.delivered);
    let delivered_events = events(&harness.delivered).len() as u64;
    assert_eq!(
        delivered_events + harness.session.drop_counters().events_dropped(),
        harness.accepted_events,
        "every accepted event was delivered or counted as dropped"
    );
    assert_eq!(
        failures(&harness.delivered).len() as u64,
        harness.parked_failures,
        "every failure delivered exactly once"
    );
    assert!(harness.session.close().is_empty());
}

/// Drops that would be losses for an active iterator (suppression of a part whose start was
/// evicted earlier is not: that iterator never saw the start).
fn lossy_drops(session: &Session) -> u64 {
    let counters = session.drop_counters();
    counters.deltas_evicted + counters.structural_evicted + counters.dropped_with_evicted_start
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(192))]

    #[test]
    fn random_streams_through_small_rings_keep_every_guarantee(
        ops in prop::collection::vec(op(), 0..1_500),
        delta_capacity in 1usize..16,
        structural_capacity in 1usize..16,
    ) {
        run(ops, delta_capacity, structural_capacity);
    }

}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    #[test]
    fn random_streams_through_the_spec_rings_keep_every_guarantee(
        ops in prop::collection::vec(op(), 0..4_000),
    ) {
        run(ops, 512, 512);
    }
}

#[test]
fn a_session_running_for_a_million_events_without_an_iterator_keeps_at_most_1024_events() {
    let mut session = Session::default();
    let mut peak_retained = 0;
    for turn in 0..2_000u64 {
        let user = session
            .start_part(Part::speech(Speaker::User), turn)
            .unwrap();
        session
            .push_delta(user, transcript_delta(Speaker::User, "hi", "hi"), turn)
            .unwrap();
        session.end_part(user, turn).unwrap();
        let reply = start_assistant_speech(&mut session, turn);
        for n in 0..500 {
            session.push_delta(reply, audio_delta(n), turn).unwrap();
        }
        session.response_done(turn).unwrap();
        peak_retained = peak_retained.max(session.backlog_len().events());
    }

    assert!(peak_retained <= 1_024, "peak {peak_retained}");
    assert_parts_whole_and_ordered(&drain_late(&mut session));
}
