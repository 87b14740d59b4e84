//! The turn watchdog, in virtual time: a reply whose `output_audio_buffer.stopped` never comes
//! (hands-free would stay gated), or a response whose `response.done` never comes (the next
//! `response.create` would wait forever), is ended within a documented bound, with a
//! diagnostic, and the conversation goes on.

mod turn_support;

use walkie_session::turn::{
    AudioCommand, Diagnostic, RESPONSE_DONE_WATCHDOG_MS, STOPPED_WATCHDOG_MS, Transport, TurnInput,
};
use walkie_session::{AudioChunk, SessionEvent};

use turn_support::*;

/// Hands-free over WebRTC without an echo canceller: the user spoke (item_U1), resp_R1
/// (item_A1) is audible and the mic is gated.
fn audible_reply() -> Conversation {
    let mut talk = Conversation::ready_hands_free(Transport::WebRtc, false);
    talk.at(1_000)
        .server(&speech_started("item_U1", 900))
        .at(2_000)
        .server(&speech_stopped("item_U1", 1_900))
        .server(&committed("item_U1"))
        .server(&user_transcript_completed("item_U1", "Hi"))
        .at(2_100)
        .server(&response_created("resp_R1"))
        .server(&audio_part_added("resp_R1", "item_A1"))
        .server(&output_started("resp_R1"))
        .server(&assistant_says("resp_R1", "item_A1", "Hello"));
    assert_eq!(talk.audio(), [AudioCommand::GateMic { gated: true }]);
    talk.events();
    talk
}

#[test]
fn a_missing_stopped_ends_the_reply_two_seconds_after_its_last_audio() {
    let mut talk = audible_reply();
    talk.at(2_500)
        .server(&response_done("resp_R1", "completed"));
    // The reply's audio goes on arriving in real time after its response.done.
    for at_ms in (2_520..=4_000).step_by(20) {
        talk.controller.handle_input(
            TurnInput::AssistantAudio(AudioChunk::from_samples(vec![100; 480])),
            at_ms,
        );
    }
    assert_eq!(
        talk.controller.next_deadline_ms(),
        Some(4_000 + STOPPED_WATCHDOG_MS),
        "the bound counts from the last audio"
    );
    talk.at(4_000 + STOPPED_WATCHDOG_MS - 1).tick();
    assert_eq!(talk.audio(), [], "still waiting for stopped");
    assert!(talk.controller.is_assistant_audible());

    talk.at(4_000 + STOPPED_WATCHDOG_MS).tick();
    assert_eq!(talk.audio(), [AudioCommand::GateMic { gated: false }]);
    assert!(!talk.controller.is_assistant_audible());
    let events = talk.events();
    assert!(
        events.contains(&SessionEvent::OutputSpeechEnd),
        "{events:?}"
    );
    assert_eq!(events.last(), Some(&SessionEvent::TurnComplete));
    assert!(talk.diagnostics().contains(&Diagnostic::StoppedMissing {
        response_id: "resp_R1".to_owned(),
        waited_ms: STOPPED_WATCHDOG_MS,
    }));
    assert!(talk.failures().is_empty());

    // A late stopped changes nothing; the next utterance is heard and answered.
    talk.at(9_000).server(&output_stopped("resp_R1"));
    assert_eq!(talk.audio(), []);
    talk.at(10_000)
        .server(&speech_started("item_U2", 9_900))
        .server(&speech_stopped("item_U2", 10_500))
        .server(&committed("item_U2"))
        .server(&response_created("resp_R2"));
    assert_eq!(talk.controller.active_response_id(), Some("resp_R2"));
}

#[test]
fn a_stopped_that_comes_in_time_is_not_overtaken_by_the_watchdog() {
    let mut talk = audible_reply();
    talk.at(2_500)
        .server(&response_done("resp_R1", "completed"));
    talk.at(2_500 + STOPPED_WATCHDOG_MS - 10)
        .server(&output_stopped("resp_R1"));
    talk.at(2_500 + STOPPED_WATCHDOG_MS + 1_000).tick();
    assert!(
        !talk
            .diagnostics()
            .iter()
            .any(|diagnostic| matches!(diagnostic, Diagnostic::StoppedMissing { .. })),
        "stopped came: no watchdog"
    );
    assert_eq!(talk.audio(), [AudioCommand::GateMic { gated: false }]);
}

#[test]
fn while_the_response_is_active_a_quiet_audible_reply_is_not_ended_by_the_stopped_watchdog() {
    let mut talk = audible_reply();
    talk.at(2_100 + STOPPED_WATCHDOG_MS * 3).tick();
    assert!(talk.controller.is_assistant_audible());
    assert_eq!(talk.audio(), []);
}

#[test]
fn a_missing_response_done_ends_the_response_after_thirty_silent_seconds_and_the_next_create_goes_out()
 {
    let mut talk = Conversation::ready_for_push_to_talk();
    talk.utterance(1_000, 1_400);
    assert_eq!(talk.sent(), [commit(), create_response()]);
    talk.at(1_700)
        .server(&committed("item_U1"))
        .server(&response_created("resp_R1"))
        .at(2_000)
        .server(&assistant_says("resp_R1", "item_A1", "Half a sentence"));
    talk.events();
    assert_eq!(
        talk.controller.next_deadline_ms(),
        Some(2_000 + RESPONSE_DONE_WATCHDOG_MS)
    );

    // Another utterance while the reply is active: its create waits for response.done.
    talk.utterance(3_000, 3_400);
    assert_eq!(talk.sent(), [commit()]);

    talk.at(3_400 + 200 + RESPONSE_DONE_WATCHDOG_MS).tick();
    assert_eq!(
        talk.controller.active_response_id(),
        None,
        "the response was ended"
    );
    assert_eq!(talk.sent(), [create_response()]);
    let events = talk.events();
    assert!(
        events.iter().any(|event| matches!(event,
            SessionEvent::SessionError(error) if error.recoverable
                && error.code.as_deref() == Some("response_done_missing"))),
        "{events:?}"
    );
    assert!(talk.failures().is_empty(), "the call goes on");
    assert!(
        talk.diagnostics()
            .iter()
            .any(|diagnostic| matches!(diagnostic,
        Diagnostic::ResponseDoneMissing { response_id: Some(id), .. } if id == "resp_R1"))
    );
}

#[test]
fn a_create_never_answered_is_forgotten_after_thirty_silent_seconds() {
    let mut talk = Conversation::ready_for_push_to_talk();
    talk.utterance(60_000, 60_400);
    assert_eq!(talk.sent().len(), 2, "the commit and the create");
    assert_eq!(
        talk.controller.next_deadline_ms(),
        Some(60_600 + RESPONSE_DONE_WATCHDOG_MS),
        "counted from the create, not from the last server event"
    );
    talk.at(60_600 + RESPONSE_DONE_WATCHDOG_MS).tick();
    assert!(talk.diagnostics().iter().any(|diagnostic| matches!(
        diagnostic,
        Diagnostic::ResponseDoneMissing {
            response_id: None,
            ..
        }
    )));
    talk.utterance(100_000, 100_400);
    assert_eq!(
        talk.sent(),
        [commit(), create_response()],
        "the next create is not held back"
    );
}

#[test]
fn a_streaming_response_never_trips_the_response_watchdog() {
    let mut talk = Conversation::ready_for_push_to_talk();
    talk.utterance(1_000, 1_400);
    talk.at(1_700).server(&response_created("resp_R1"));
    let mut at_ms = 1_700;
    while at_ms < 1_700 + RESPONSE_DONE_WATCHDOG_MS * 2 {
        at_ms += RESPONSE_DONE_WATCHDOG_MS / 3;
        talk.at(at_ms)
            .server(&assistant_says("resp_R1", "item_A1", "more "));
    }
    assert_eq!(talk.controller.active_response_id(), Some("resp_R1"));
}

#[test]
fn a_silent_response_whose_created_named_no_id_is_ended_by_the_watchdog_with_a_readable_message() {
    let mut talk = Conversation::ready_for_push_to_talk();
    talk.utterance(1_000, 1_400);
    talk.sent();
    talk.at(1_700)
        .server(&committed("item_U1"))
        .server(r#"{"type":"response.created","event_id":"e","response":{}}"#);
    talk.utterance(3_000, 3_400);
    assert_eq!(talk.sent(), [commit()]);
    talk.events();

    talk.at(3_400 + 200 + RESPONSE_DONE_WATCHDOG_MS).tick();
    assert_eq!(talk.controller.active_response_id(), None);
    assert_eq!(talk.sent(), [create_response()]);
    let events = talk.events();
    assert!(
        events.iter().any(|event| matches!(event,
            SessionEvent::SessionError(error) if error.message.starts_with("the active response got no response.done within"))),
        "{events:?}"
    );
}
