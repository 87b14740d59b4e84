//! Ordering invariants: part lifecycles, tool pairing, output speech, and turn completion emitted
//! by the session itself.

mod common;

use common::*;
use walkie_session::{
    Delivery, FailureSource, FunctionToolCallEvent, FunctionToolResultEvent, Part, PartDelta,
    PartEndEvent, PartIndex, PartKind, PartStartEvent, PushError, RealtimeSessionErrorEvent,
    ResponseDone, Session, SessionEvent, Speaker, SpeechPart, TextPartDelta, ToolCallPart,
    ToolOutcome, ToolResult, ToolReturnPart,
};

fn lookup_time_call() -> ToolCallPart {
    ToolCallPart {
        tool_name: "local_time".into(),
        args: "{}".into(),
        tool_call_id: "call-7".into(),
    }
}

fn tool_call_event() -> SessionEvent {
    SessionEvent::FunctionToolCall(Box::new(FunctionToolCallEvent {
        part: lookup_time_call(),
        args_valid: Some(true),
    }))
}

fn tool_result_event() -> SessionEvent {
    SessionEvent::FunctionToolResult(Box::new(FunctionToolResultEvent {
        result: ToolResult::ToolReturn(ToolReturnPart {
            tool_name: "local_time".into(),
            tool_call_id: "call-7".into(),
            content: serde_json::json!("14:05"),
            outcome: ToolOutcome::Success,
        }),
    }))
}

fn everything_so_far(session: &mut Session) -> Vec<&'static str> {
    kinds(&drain_late(session))
}

#[test]
fn a_delta_for_a_part_that_never_started_is_refused() {
    let mut session = Session::default();

    let refused = session.push_delta(PartIndex(0), audio_delta(0), 0);

    assert_eq!(
        refused,
        Err(PushError::DeltaBeforeStart {
            index: PartIndex(0)
        })
    );
    assert!(drain_late(&mut session).is_empty(), "nothing was queued");
}

#[test]
fn a_delta_or_end_after_the_end_is_refused() {
    let mut session = Session::default();
    let part = start_assistant_speech(&mut session, 0);
    session.end_part(part, 1).unwrap();

    assert_eq!(
        session.push_delta(part, audio_delta(0), 2),
        Err(PushError::DeltaAfterEnd { index: part })
    );
    assert_eq!(
        session.end_part(part, 2),
        Err(PushError::EndAfterEnd { index: part })
    );
}

#[test]
fn an_end_for_a_part_that_never_started_is_refused() {
    let mut session = Session::default();

    let refused = session.push(
        SessionEvent::PartEnd(PartEndEvent {
            index: PartIndex(3),
            part: Part::speech(Speaker::User),
        }),
        0,
    );

    assert_eq!(
        refused,
        Err(PushError::EndBeforeStart {
            index: PartIndex(3)
        })
    );
}

#[test]
fn a_part_start_must_use_a_fresh_index() {
    let mut session = Session::default();
    let first = start_assistant_speech(&mut session, 0);

    let reused = session.push(
        SessionEvent::PartStart(PartStartEvent {
            index: first,
            part: Part::text(),
        }),
        1,
    );

    assert_eq!(
        reused,
        Err(PushError::PartIndexNotFresh {
            index: first,
            next_index: PartIndex(1)
        })
    );
}

#[test]
fn part_indices_are_shared_by_both_speakers_and_only_grow() {
    let mut session = Session::default();

    let user = session.start_part(Part::speech(Speaker::User), 0).unwrap();
    let assistant = start_assistant_speech(&mut session, 0);
    let text = session.start_part(Part::text(), 0).unwrap();

    assert_eq!(
        (user, assistant, text),
        (PartIndex(0), PartIndex(1), PartIndex(2))
    );
}

#[test]
fn a_text_delta_into_a_speech_part_is_refused() {
    let mut session = Session::default();
    let part = start_assistant_speech(&mut session, 0);

    let refused = session.push_delta(
        part,
        PartDelta::Text(TextPartDelta {
            content_delta: "hi".into(),
        }),
        1,
    );

    assert_eq!(
        refused,
        Err(PushError::DeltaKindMismatch {
            index: part,
            part_kind: PartKind::Speech,
            delta_kind: PartKind::Text
        })
    );
}

#[test]
fn a_speech_delta_naming_the_other_speaker_is_refused() {
    let mut session = Session::default();
    let user = session.start_part(Part::speech(Speaker::User), 0).unwrap();

    let refused = session.push_delta(user, audio_delta(0), 1);

    assert_eq!(
        refused,
        Err(PushError::SpeakerMismatch {
            index: user,
            part_speaker: Speaker::User,
            given_speaker: Speaker::Assistant
        })
    );
}

#[test]
fn an_empty_speech_delta_is_refused() {
    let mut session = Session::default();
    let part = start_assistant_speech(&mut session, 0);

    let refused = session.push_delta(
        part,
        PartDelta::Speech(walkie_session::SpeechPartDelta {
            speaker: Speaker::Assistant,
            transcript_delta: None,
            transcript: None,
            audio_chunk: None,
        }),
        1,
    );

    assert_eq!(refused, Err(PushError::EmptySpeechDelta { index: part }));
}

#[test]
fn a_part_cannot_end_as_another_kind() {
    let mut session = Session::default();
    let part = start_assistant_speech(&mut session, 0);

    let refused = session.push(
        SessionEvent::PartEnd(PartEndEvent {
            index: part,
            part: Part::text(),
        }),
        1,
    );

    assert_eq!(
        refused,
        Err(PushError::EndKindMismatch {
            index: part,
            started: PartKind::Speech,
            ended: PartKind::Text
        })
    );
}

#[test]
fn the_producer_cannot_emit_turn_complete() {
    let mut session = Session::default();

    assert_eq!(
        session.push(SessionEvent::TurnComplete, 0),
        Err(PushError::TurnCompleteIsSessionOwned)
    );
}

#[test]
fn a_spoken_exchange_ends_with_the_session_emitting_turn_complete() {
    let mut session = Session::default();
    let user = session.start_part(Part::speech(Speaker::User), 0).unwrap();
    session
        .push_delta(user, transcript_delta(Speaker::User, "hello", "hello"), 1)
        .unwrap();
    session.end_part(user, 2).unwrap();
    let reply = start_assistant_speech(&mut session, 3);
    session.push_delta(reply, audio_delta(0), 4).unwrap();
    session
        .push_delta(reply, transcript_delta(Speaker::Assistant, "hi", "hi"), 5)
        .unwrap();
    session.push_delta(reply, audio_delta(4), 6).unwrap();
    session
        .push_delta(
            reply,
            transcript_delta(Speaker::Assistant, " there", "hi there"),
            7,
        )
        .unwrap();

    let done = session.response_done(8).unwrap();
    let delivered = drain_late(&mut session);

    assert_eq!(done, ResponseDone::TurnComplete);
    assert_eq!(
        kinds(&delivered),
        vec![
            "part_start",
            "part_delta",
            "part_end",
            "part_start",
            "part_delta",
            "part_delta",
            "part_delta",
            "part_delta",
            "part_end",
            "realtime_turn_complete"
        ]
    );
    let SessionEvent::PartEnd(reply_end) = &events(&delivered)[8].event else {
        panic!("the assistant part ends before turn completion")
    };
    let Part::Speech(final_reply) = &reply_end.part else {
        panic!("the reply is speech")
    };
    assert_eq!(final_reply.transcript.as_deref(), Some("hi there"));
    assert_eq!(final_reply.audio, None, "no retention by default");
}

#[test]
fn speech_a_tool_call_and_more_speech_are_one_turn() {
    let mut session = Session::default();
    let speech = start_assistant_speech(&mut session, 0);
    session
        .push_delta(
            speech,
            transcript_delta(Speaker::Assistant, "Let me look.", "Let me look."),
            1,
        )
        .unwrap();
    session.end_part(speech, 2).unwrap();
    let call = session
        .start_part(Part::tool_call(lookup_time_call()), 3)
        .unwrap();
    session.end_part(call, 3).unwrap();
    session.push(tool_call_event(), 4).unwrap();

    let after_calling_response = session.response_done(5).unwrap();
    session.push(tool_result_event(), 6).unwrap();
    let answer = start_assistant_speech(&mut session, 7);
    session
        .push_delta(
            answer,
            transcript_delta(Speaker::Assistant, "It is 14:05.", "It is 14:05."),
            8,
        )
        .unwrap();
    let after_answer = session.response_done(9).unwrap();

    assert_eq!(
        after_calling_response,
        ResponseDone::MoreExpected {
            executing_tools: 1,
            response_called_a_tool: true
        }
    );
    assert_eq!(after_answer, ResponseDone::TurnComplete);
    let sequence = everything_so_far(&mut session);
    assert_eq!(
        sequence,
        vec![
            "part_start",
            "part_delta",
            "part_end",
            "part_start",
            "part_end",
            "function_tool_call",
            "function_tool_result",
            "part_start",
            "part_delta",
            "part_end",
            "realtime_turn_complete"
        ]
    );
    assert_eq!(
        sequence
            .iter()
            .filter(|k| **k == "realtime_turn_complete")
            .count(),
        1,
        "exactly one turn completion, and it is last"
    );
}

#[test]
fn no_turn_completes_while_a_tool_is_executing() {
    let mut session = Session::default();
    let call = session
        .start_part(Part::tool_call(lookup_time_call()), 0)
        .unwrap();
    session.end_part(call, 0).unwrap();
    session.push(tool_call_event(), 1).unwrap();
    session.response_done(2).unwrap();
    // The model keeps talking during the slow tool, in a response of its own.
    let speech = start_assistant_speech(&mut session, 3);
    session.push_delta(speech, audio_delta(0), 4).unwrap();

    let while_tool_runs = session.response_done(5).unwrap();

    assert_eq!(
        while_tool_runs,
        ResponseDone::MoreExpected {
            executing_tools: 1,
            response_called_a_tool: false
        }
    );
    assert!(!everything_so_far(&mut session).contains(&"realtime_turn_complete"));
}

#[test]
fn an_interrupted_response_still_completes_the_turn() {
    let mut session = Session::default();
    let reply = start_assistant_speech(&mut session, 0);
    session.push_delta(reply, audio_delta(0), 1).unwrap();
    session.push(SessionEvent::ResponseInterrupted, 2).unwrap();

    assert_eq!(
        session.response_done(3).unwrap(),
        ResponseDone::TurnComplete
    );
    assert_eq!(
        everything_so_far(&mut session),
        vec![
            "part_start",
            "part_delta",
            "realtime_response_interrupted",
            "part_end",
            "realtime_turn_complete"
        ]
    );
}

#[test]
fn response_done_leaves_an_open_user_part_open_for_its_late_transcript() {
    let mut session = Session::default();
    let user = session.start_part(Part::speech(Speaker::User), 0).unwrap();
    let reply = start_assistant_speech(&mut session, 1);
    session.push_delta(reply, audio_delta(0), 2).unwrap();
    session.response_done(3).unwrap();

    session
        .push_delta(
            user,
            transcript_delta(Speaker::User, "late words", "late words"),
            4,
        )
        .unwrap();
    session.end_part(user, 5).unwrap();

    assert_eq!(session.open_part_count(), 0);
}

#[test]
fn a_result_without_an_executing_call_is_refused() {
    let mut session = Session::default();

    assert_eq!(
        session.push(tool_result_event(), 0),
        Err(PushError::ToolResultWithoutCall {
            tool_call_id: "call-7".into()
        })
    );
}

#[test]
fn the_same_call_cannot_execute_twice_at_once() {
    let mut session = Session::default();
    session.push(tool_call_event(), 0).unwrap();

    assert_eq!(
        session.push(tool_call_event(), 1),
        Err(PushError::DuplicateToolCall {
            tool_call_id: "call-7".into()
        })
    );
}

#[test]
fn output_speech_start_and_end_alternate() {
    let mut session = Session::default();

    assert_eq!(
        session.push(SessionEvent::OutputSpeechEnd, 0),
        Err(PushError::OutputSpeechEndWithoutStart)
    );
    session.push(SessionEvent::OutputSpeechStart, 1).unwrap();
    assert!(session.is_output_audible());
    assert_eq!(
        session.push(SessionEvent::OutputSpeechStart, 2),
        Err(PushError::OutputSpeechAlreadyStarted)
    );
    session.push(SessionEvent::OutputSpeechEnd, 3).unwrap();
    assert!(!session.is_output_audible());
}

#[test]
fn a_fatal_provider_error_is_delivered_as_a_failure_not_as_an_event() {
    let mut session = Session::default();
    session
        .push(
            SessionEvent::SessionError(Box::new(RealtimeSessionErrorEvent {
                message: "socket closed".into(),
                error_type: Some("connection_closed".into()),
                code: None,
                recoverable: false,
            })),
            0,
        )
        .unwrap();

    let delivered = drain_late(&mut session);

    assert!(matches!(
        &delivered[..],
        [Delivery::Failure(f)] if matches!(f.failure.source, FailureSource::FatalProviderError { .. })
            && f.failure.message == "socket closed"
    ));
}

#[test]
fn a_recoverable_provider_error_is_an_event() {
    let mut session = Session::default();
    session
        .push(
            SessionEvent::SessionError(Box::new(RealtimeSessionErrorEvent {
                message: "no active response".into(),
                error_type: Some("invalid_request_error".into()),
                code: Some("response_cancel_not_active".into()),
                recoverable: true,
            })),
            0,
        )
        .unwrap();

    assert_eq!(
        everything_so_far(&mut session),
        vec!["realtime_session_error"]
    );
}

#[test]
fn a_producer_supplied_final_part_wins_over_the_accumulated_one() {
    let mut session = Session::default();
    let user = session.start_part(Part::speech(Speaker::User), 0).unwrap();
    session
        .push_delta(user, transcript_delta(Speaker::User, "helo", "helo"), 1)
        .unwrap();
    session
        .push(
            SessionEvent::PartEnd(PartEndEvent {
                index: user,
                part: Part::Speech(SpeechPart {
                    transcript: Some("hello".into()),
                    ..SpeechPart::empty(Speaker::User)
                }),
            }),
            2,
        )
        .unwrap();

    let delivered = drain_late(&mut session);
    let SessionEvent::PartEnd(end) = &events(&delivered)[2].event else {
        panic!("the third event is the end")
    };
    assert_eq!(
        end.part,
        Part::Speech(SpeechPart {
            transcript: Some("hello".into()),
            ..SpeechPart::empty(Speaker::User)
        })
    );
}

#[test]
fn a_delta_only_transcript_is_completed_with_the_whole_transcript_so_far() {
    let mut session = Session::default();
    let part = start_assistant_speech(&mut session, 0);
    for piece in ["Good", " morning"] {
        session
            .push_delta(
                part,
                PartDelta::Speech(walkie_session::SpeechPartDelta {
                    speaker: Speaker::Assistant,
                    transcript_delta: Some(piece.into()),
                    transcript: None,
                    audio_chunk: None,
                }),
                1,
            )
            .unwrap();
    }

    let delivered = drain_late(&mut session);
    let SessionEvent::PartDelta(second) = &events(&delivered)[2].event else {
        panic!("the third event is the second delta")
    };
    let PartDelta::Speech(speech) = &second.delta else {
        panic!("a speech delta")
    };
    assert_eq!(speech.transcript.as_deref(), Some("Good morning"));
}

#[test]
fn a_closed_session_refuses_input() {
    let mut session = Session::default();
    session.close();

    assert_eq!(session.start_part(Part::text(), 0), Err(PushError::Closed));
    assert_eq!(session.response_done(0), Err(PushError::Closed));
}
