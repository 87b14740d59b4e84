//! The reference's late-iterator cases: what a consumer that starts iterating late receives, and
//! what an active consumer receives (everything).

mod common;

use common::*;
use walkie_session::{
    Delivery, FailureSource, IterationError, Part, PartDelta, RealtimeInputSpeechStartEvent,
    Session, SessionEvent, SessionFailure, Speaker,
};

fn tool_failure(message: &str) -> SessionFailure {
    SessionFailure {
        source: FailureSource::Tool {
            tool_call_id: "call-1".into(),
            tool_name: "local_time".into(),
        },
        message: message.into(),
    }
}

#[test]
fn a_late_iterator_gets_the_start_and_the_latest_512_deltas_of_a_long_audio_part() {
    let mut session = Session::default();
    let part = start_assistant_speech(&mut session, 0);
    for n in 0..2_000u64 {
        session.push_delta(part, audio_delta(n as i16), n).unwrap();
    }
    session.end_part(part, 2_000).unwrap();

    let delivered = drain_late(&mut session);

    assert_eq!(delivered.len(), 1 + 512 + 1);
    assert_eq!(kinds(&delivered)[0], "part_start");
    assert_eq!(kinds(&delivered)[513], "part_end");
    let first_kept_delta = events(&delivered)[1];
    assert_eq!(
        first_kept_delta.at_ms,
        2_000 - 512,
        "the oldest deltas went first"
    );
    assert_parts_whole_and_ordered(&delivered);
    assert_eq!(session.drop_counters().deltas_evicted, 2_000 - 512);
    assert_eq!(session.drop_counters().structural_evicted, 0);
}

#[test]
fn a_late_iterator_gets_many_short_parts_whole_and_only_the_latest_512_structural_events() {
    let mut session = Session::default();
    for n in 0..1_000u64 {
        let part = start_assistant_speech(&mut session, n);
        for k in 0..3 {
            session.push_delta(part, audio_delta(k), n).unwrap();
        }
        session.end_part(part, n).unwrap();
    }

    let delivered = drain_late(&mut session);
    let kept = events(&delivered);
    let structural = kept
        .iter()
        .filter(|e| !matches!(e.event, SessionEvent::PartDelta(_)))
        .count();
    let deltas = kept.len() - structural;

    assert_eq!(structural, 512, "256 parts keep their start and end");
    assert_eq!(deltas, 512, "the latest 512 deltas are kept");
    assert_parts_whole_and_ordered(&delivered);
    // The oldest kept part is the 744th: 1000 - 256.
    let SessionEvent::PartStart(first_start) = &kept[0].event else {
        panic!(
            "the stream resumes with a part start, got {:?}",
            kept[0].event
        )
    };
    assert_eq!(first_start.index.0, 744);
    let counters = session.drop_counters();
    assert_eq!(
        counters.structural_evicted, 744,
        "the 744 oldest starts overflowed the ring"
    );
    assert_eq!(
        counters.events_dropped(),
        5_000 - 1_024,
        "every event not delivered is counted exactly once"
    );
}

#[test]
fn evicting_the_start_of_an_open_part_drops_its_queued_deltas_and_suppresses_the_rest_of_it() {
    let mut session = Session::default();
    let open_part = start_assistant_speech(&mut session, 0);
    for n in 0..10 {
        session.push_delta(open_part, audio_delta(n), 1).unwrap();
    }
    // 512 structural events after the start push it out of the structural ring.
    for n in 0..512u64 {
        session
            .push(
                SessionEvent::InputSpeechStart(Box::new(RealtimeInputSpeechStartEvent {
                    item_id: Some(format!("item-{n}")),
                })),
                2,
            )
            .unwrap();
    }
    // The part goes on after its start was evicted: these must not reach a late iterator.
    for n in 0..5 {
        session.push_delta(open_part, audio_delta(n), 3).unwrap();
    }
    session.end_part(open_part, 4).unwrap();
    let later_part = start_assistant_speech(&mut session, 5);
    session.push_delta(later_part, audio_delta(0), 5).unwrap();

    let delivered = drain_late(&mut session);

    assert_parts_whole_and_ordered(&delivered);
    assert!(
        events(&delivered)
            .iter()
            .all(|e| e.event.part_index() != Some(open_part)),
        "nothing of the part whose start was evicted reaches the late iterator"
    );
    let counters = session.drop_counters();
    assert_eq!(
        counters.dropped_with_evicted_start, 10,
        "its queued deltas went with the start"
    );
    assert_eq!(
        counters.suppressed_after_eviction,
        5 + 1,
        "later deltas and the end are suppressed"
    );
    assert_eq!(
        kinds(&delivered).last().copied(),
        Some("part_delta"),
        "later parts are unaffected"
    );
}

#[test]
fn a_failure_at_the_front_of_a_huge_backlog_is_kept_and_delivered_first_exactly_once() {
    let mut session = Session::default();
    session.park_failure(tool_failure("the tool crashed"), 0);
    let part = start_assistant_speech(&mut session, 1);
    for n in 0..100_000u64 {
        session.push_delta(part, audio_delta(n as i16), 2).unwrap();
        if n % 100 == 0 {
            session.push(SessionEvent::ResponseInterrupted, 2).unwrap();
        }
    }

    let first_iteration = drain_late(&mut session);
    let second_iteration = drain_late(&mut session);

    assert!(
        matches!(first_iteration[0], Delivery::Failure(_)),
        "the failure comes first"
    );
    assert_eq!(
        failures(&first_iteration),
        vec![&tool_failure("the tool crashed")]
    );
    assert!(first_iteration.len() <= 1_024 + 1);
    assert_parts_whole_and_ordered(&first_iteration);
    assert!(
        second_iteration.is_empty(),
        "the failure is not delivered twice"
    );
    assert!(
        session.close().is_empty(),
        "nothing is left to surface at close"
    );
}

#[test]
fn an_active_iterator_receives_all_10_000_deltas_even_when_it_polls_late() {
    let mut session = Session::default();
    let iterator = session.iterate().unwrap();
    let part = start_assistant_speech(&mut session, 0);
    for n in 0..10_000u64 {
        session.push_delta(part, audio_delta(n as i16), n).unwrap();
    }
    session.end_part(part, 10_000).unwrap();

    let mut delivered = Vec::new();
    while let Some(item) = session.poll_event(&iterator).unwrap() {
        delivered.push(item);
    }

    assert_eq!(delivered.len(), 10_002);
    assert_parts_whole_and_ordered(&delivered);
    assert_eq!(session.drop_counters().events_dropped(), 0);
}

#[test]
fn views_read_while_nobody_iterates_do_not_count_as_iterating_and_the_backlog_stays_bounded() {
    let mut session = Session::default();
    let audio = session.stream_audio();
    assert_eq!(
        session.poll_audio(&audio).unwrap(),
        None,
        "first read subscribes"
    );
    let part = start_assistant_speech(&mut session, 0);
    let mut played_chunks = 0;
    for n in 0..2_000u64 {
        session.push_delta(part, audio_delta(n as i16), n).unwrap();
        while session.poll_audio(&audio).unwrap().is_some() {
            played_chunks += 1;
        }
    }

    assert_eq!(played_chunks, 2_000, "the view got every chunk");
    assert!(!session.is_iterating());
    assert_eq!(
        session.backlog_len().deltas,
        512,
        "the main stream is still bounded"
    );
    let delivered = drain_late(&mut session);
    assert_eq!(
        delivered.len(),
        1 + 512,
        "the view consumed nothing of the main stream"
    );
    assert_parts_whole_and_ordered(&delivered);
}

#[test]
fn forty_chunks_overflow_a_32_chunk_audio_view_but_a_late_iterator_still_sees_all_41_events() {
    let mut session = Session::default();
    let audio = session.stream_audio();
    session.poll_audio(&audio).unwrap();
    let part = start_assistant_speech(&mut session, 0);
    for n in 0..40 {
        session.push_delta(part, audio_delta(n * 10), 0).unwrap();
    }

    let mut kept = Vec::new();
    while let Some(chunk) = session.poll_audio(&audio).unwrap() {
        kept.push(chunk.samples()[0]);
    }
    let delivered = drain_late(&mut session);

    assert_eq!(
        kept,
        (8..40).map(|n| n * 10).collect::<Vec<i16>>(),
        "the last 32 chunks"
    );
    assert_eq!(session.drop_counters().audio_chunks_dropped, 8);
    assert_eq!(delivered.len(), 41);
}

#[test]
fn stopping_an_iterator_trims_the_backlog_at_once() {
    let mut session = Session::default();
    let iterator = session.iterate().unwrap();
    let part = start_assistant_speech(&mut session, 0);
    for n in 0..3_000 {
        session.push_delta(part, audio_delta(n as i16), 0).unwrap();
    }
    assert_eq!(
        session.backlog_len().deltas,
        3_000,
        "nothing is dropped while iterating"
    );

    session.stop_iterating(iterator).unwrap();

    assert_eq!(session.backlog_len().deltas, 512);
    assert_eq!(session.drop_counters().deltas_evicted, 3_000 - 512);
}

#[test]
fn a_second_concurrent_iterator_is_refused() {
    let mut session = Session::default();
    let _first = session.iterate().unwrap();

    assert_eq!(session.iterate(), Err(IterationError::AlreadyIterating));
}

#[test]
fn iterating_again_after_stopping_resumes_with_what_was_kept() {
    let mut session = Session::default();
    let first = session.iterate().unwrap();
    let part = start_assistant_speech(&mut session, 0);
    session.push_delta(part, audio_delta(0), 1).unwrap();
    assert!(session.poll_event(&first).unwrap().is_some(), "the start");
    session.stop_iterating(first).unwrap();
    session.push_delta(part, audio_delta(1), 2).unwrap();
    session.end_part(part, 3).unwrap();

    let resumed = drain_late(&mut session);

    assert_eq!(
        kinds(&resumed),
        vec!["part_delta", "part_delta", "part_end"]
    );
    assert_eq!(
        events(&resumed)[0].at_ms,
        1,
        "it resumes where the first iterator stopped"
    );
}

#[test]
fn a_user_part_and_an_assistant_part_may_overlap_and_both_survive_a_late_iterator() {
    let mut session = Session::default();
    let user = session.start_part(Part::speech(Speaker::User), 0).unwrap();
    let assistant = start_assistant_speech(&mut session, 1);
    session
        .push_delta(user, transcript_delta(Speaker::User, "hel", "hel"), 2)
        .unwrap();
    session.push_delta(assistant, audio_delta(0), 3).unwrap();
    session
        .push_delta(user, transcript_delta(Speaker::User, "lo", "hello"), 4)
        .unwrap();
    session.end_part(user, 5).unwrap();
    session
        .push_delta(
            assistant,
            PartDelta::assistant_audio(counting_chunk(9, 2)),
            6,
        )
        .unwrap();
    session.end_part(assistant, 7).unwrap();

    let delivered = drain_late(&mut session);

    assert_eq!(
        kinds(&delivered),
        vec![
            "part_start",
            "part_start",
            "part_delta",
            "part_delta",
            "part_delta",
            "part_end",
            "part_delta",
            "part_end"
        ]
    );
    assert_parts_whole_and_ordered(&delivered);
}

#[test]
fn closing_hands_over_failures_nobody_received_exactly_once() {
    let mut session = Session::default();
    session.park_failure(tool_failure("boom"), 0);

    assert_eq!(session.close(), vec![tool_failure("boom")]);
    assert!(session.close().is_empty(), "a second close has nothing new");
    assert_eq!(session.iterate(), Err(IterationError::Closed));
}
