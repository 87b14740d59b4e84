//! A response.done (or output_audio_buffer.stopped) the controller cannot fully decode, or one
//! that names no response (the SDK makes a response's `id` optional), still ends what it ends:
//! the turn completes and the next `response.create` goes out at once, not at the watchdog.

mod turn_support;

use walkie_session::turn::{LATE_AUDIO_GRACE_MS, Transport};
use walkie_session::{SessionEvent, Speaker};

use turn_support::*;

#[test]
fn a_response_done_with_unmodelled_items_and_a_huge_number_still_completes_the_turn() {
    let mut talk = Conversation::ready_for_push_to_talk();
    talk.utterance(1_000, 1_400);
    talk.sent();
    talk.at(1_500)
        .server(&committed("item_U1"))
        .server(&response_created("resp_R1"))
        .server(&assistant_says("resp_R1", "item_A1", "Hello"));
    // Another utterance meanwhile: its create waits for the response.done.
    talk.utterance(2_000, 2_400);
    assert_eq!(talk.sent(), [commit()]);
    talk.events();

    talk.at(3_000).server(
        r#"{"type":"response.done","event_id":"e","response":{"id":"resp_R1","status":"completed",
            "output":[{"type":"mcp_call","id":"item_M","server_label":"x","name":"y","arguments":"{}"},
                      {"type":"function_call","name":"lookup","arguments":"{}"}],
            "usage":{"total_tokens":1e999}}}"#,
    );
    let events = talk.events();
    assert!(events.contains(&SessionEvent::TurnComplete), "{events:?}");
    assert!(
        !events
            .iter()
            .any(|event| matches!(event, SessionEvent::SessionError(_))),
        "nothing to report: {events:?}"
    );
    assert_eq!(talk.sent(), [create_response()]);
}

#[test]
fn a_stopped_with_an_odd_response_id_still_ends_the_audible_reply() {
    let mut talk = Conversation::ready_hands_free(Transport::WebRtc, false);
    talk.at(1_000)
        .server(&speech_started("item_U1", 900))
        .server(&speech_stopped("item_U1", 1_500))
        .server(&committed("item_U1"))
        .server(&response_created("resp_R1"))
        .server(&audio_part_added("resp_R1", "item_A1"))
        .server(&output_started("resp_R1"))
        .at(2_000)
        .server(&response_done("resp_R1", "completed"))
        .server(r#"{"type":"output_audio_buffer.stopped","event_id":"e","response_id":{"id":"resp_R1"}}"#);
    talk.at(2_000 + LATE_AUDIO_GRACE_MS).tick();
    assert!(!talk.controller.is_assistant_audible());
    assert_eq!(talk.events().last(), Some(&SessionEvent::TurnComplete));
}

/// The SDK makes every field of a response optional: `"response": {}` names no response.
const RESPONSE_DONE_WITHOUT_ID: &str = r#"{"type":"response.done","event_id":"e","response":{}}"#;
const RESPONSE_CREATED_WITHOUT_ID: &str =
    r#"{"type":"response.created","event_id":"e","response":{}}"#;

#[test]
fn a_response_done_without_an_id_ends_the_active_response_and_the_next_turn_is_answered() {
    let mut talk = Conversation::ready_for_push_to_talk();
    talk.utterance(1_000, 1_400);
    talk.sent();
    talk.at(1_500)
        .server(&committed("item_U1"))
        .server(&response_created("resp_R1"))
        .server(&assistant_says("resp_R1", "item_A1", "Hello"));
    // Another utterance meanwhile: its create waits for the response.done.
    talk.utterance(2_000, 2_400);
    assert_eq!(talk.sent(), [commit()]);
    talk.events();

    talk.at(3_000).server(RESPONSE_DONE_WITHOUT_ID);
    let events = talk.events();
    assert!(events.contains(&SessionEvent::TurnComplete), "{events:?}");
    assert!(
        !events
            .iter()
            .any(|event| matches!(event, SessionEvent::SessionError(_))),
        "nothing to report: {events:?}"
    );
    assert_eq!(talk.controller.active_response_id(), None);
    assert_eq!(
        talk.sent(),
        [create_response()],
        "at once, not when the watchdog gives up on resp_R1"
    );

    talk.at(3_100)
        .server(&committed("item_U2"))
        .server(&response_created("resp_R2"))
        .server(&assistant_says("resp_R2", "item_A2", "Again"))
        .at(3_500)
        .server(&response_done("resp_R2", "completed"));
    let events = talk.events();
    assert!(
        events.contains(&transcript(3, Speaker::Assistant, "Again", "Again")),
        "the next turn is answered: {events:?}"
    );
    assert_eq!(events.last(), Some(&SessionEvent::TurnComplete));
    assert!(talk.diagnostics().is_empty(), "no watchdog, nothing odd");
}

#[test]
fn a_response_created_and_done_without_ids_are_the_in_flight_response() {
    let mut talk = Conversation::ready_for_push_to_talk();
    talk.utterance(1_000, 1_400);
    talk.sent();
    talk.at(1_500)
        .server(&committed("item_U1"))
        .server(RESPONSE_CREATED_WITHOUT_ID)
        .server(&assistant_says("resp_R1", "item_A1", "Hello"));
    talk.utterance(2_000, 2_400);
    assert_eq!(
        talk.sent(),
        [commit()],
        "the id-less response is active: the next create waits for it"
    );
    talk.events();

    talk.at(3_000)
        .server(&response_done("resp_R1", "completed"));
    assert!(talk.events().contains(&SessionEvent::TurnComplete));
    assert_eq!(
        talk.controller.active_response_id(),
        None,
        "a response.done that names it ends the response its response.created did not name"
    );
    assert_eq!(talk.sent(), [create_response()]);

    talk.at(3_100)
        .server(RESPONSE_CREATED_WITHOUT_ID)
        .server(&assistant_says("resp_R2", "item_A2", "Again"))
        .at(3_500)
        .server(RESPONSE_DONE_WITHOUT_ID);
    assert_eq!(talk.events().last(), Some(&SessionEvent::TurnComplete));
    assert_eq!(talk.controller.active_response_id(), None);
}

#[test]
fn a_response_done_without_an_id_answers_a_create_whose_created_was_lost() {
    let mut talk = Conversation::ready_for_push_to_talk();
    talk.utterance(1_000, 1_400);
    assert_eq!(talk.sent()[1], create_response());
    talk.at(1_500)
        .server(&committed("item_U1"))
        .server(r#"{"type":"response.created","event_id":"e","response":"resp_R1"}"#)
        .server(&assistant_says("resp_R1", "item_A1", "Hello"));
    talk.utterance(2_000, 2_400);
    assert_eq!(
        talk.sent(),
        [commit()],
        "the first create is still in flight"
    );
    talk.events();

    talk.at(3_000).server(RESPONSE_DONE_WITHOUT_ID);
    assert!(talk.events().contains(&SessionEvent::TurnComplete));
    assert_eq!(talk.sent(), [create_response()]);
}

#[test]
fn a_barge_in_on_a_response_without_an_id_cancels_the_in_progress_response() {
    let mut talk = Conversation::ready_for_push_to_talk();
    talk.utterance(1_000, 1_400);
    talk.sent();
    talk.at(1_500)
        .server(&committed("item_U1"))
        .server(RESPONSE_CREATED_WITHOUT_ID)
        .server(&audio_part_added("resp_R1", "item_A1"))
        .server(&output_started("resp_R1"))
        .server(&assistant_says("resp_R1", "item_A1", "Once upon a time"));
    talk.sent();
    talk.events();

    talk.at(2_000).key_down();
    assert_eq!(
        talk.sent(),
        [
            serde_json::json!({"type": "response.cancel"}),
            clear_output(),
        ],
        "no made-up id: a cancel without one cancels the in-progress response"
    );
    talk.events();
    talk.at(2_050)
        .server(r#"{"type":"response.done","event_id":"e","response":{"status":"cancelled"}}"#);
    let events = talk.events();
    assert_eq!(events.first(), Some(&SessionEvent::ResponseInterrupted));
    assert_eq!(events.last(), Some(&SessionEvent::TurnComplete));
    assert_eq!(talk.controller.active_response_id(), None);
    talk.at(2_600).key_up().at(2_800).tick();
    assert_eq!(
        talk.sent(),
        [commit(), create_response()],
        "the cancel is answered: the next turn is asked for at once"
    );
}

#[test]
fn ten_thousand_invented_user_items_never_hold_more_than_a_few_parts_open() {
    use walkie_session::turn::MAX_OPEN_USER_PARTS;
    let mut talk = Conversation::ready_for_push_to_talk();
    let mut most_open = 0;
    for n in 0..10_000 {
        talk.at(1_000 + n)
            .server(&user_said(&format!("item_invented_{n}"), "la"));
        most_open = most_open.max(talk.controller.session_mut().open_part_count());
        talk.events();
    }
    assert_eq!(most_open, MAX_OPEN_USER_PARTS);
    // A real turn still gets its part and its reply.
    talk.utterance(20_000, 20_400);
    talk.at(20_500)
        .server(&committed("item_U1"))
        .server(&response_created("resp_R1"))
        .server(&assistant_says("resp_R1", "item_A1", "Hello"))
        .server(&response_done("resp_R1", "completed"));
    assert!(talk.events().contains(&SessionEvent::TurnComplete));
}

#[test]
fn a_reply_streaming_without_end_keeps_at_most_the_transcript_cap() {
    use walkie_session::turn::MAX_TRANSCRIPT_BYTES;
    use walkie_session::{PartDelta, PartDeltaEvent, PartEndEvent};
    let mut talk = Conversation::ready_for_push_to_talk();
    talk.utterance(1_000, 1_400);
    talk.at(1_500)
        .server(&committed("item_U1"))
        .server(&response_created("resp_R1"));
    // 16 MiB of transcript in 256 deltas of 64 KiB: 64 times the cap.
    let chunk = "é".repeat(32 * 1024);
    let mut longest_bytes = 0;
    let mut cut_notices = Vec::new();
    for n in 0..256u64 {
        talk.at(2_000 + n)
            .server(&assistant_says("resp_R1", "item_A1", &chunk));
        for event in talk.events() {
            if let SessionEvent::SessionError(error) = &event {
                cut_notices.push(error.clone());
            }
            if let SessionEvent::PartDelta(PartDeltaEvent {
                delta: PartDelta::Speech(speech),
                ..
            }) = event
            {
                let whole = speech.transcript.as_deref().unwrap_or_default();
                longest_bytes = longest_bytes.max(whole.len());
            }
        }
    }
    assert!(
        longest_bytes <= MAX_TRANSCRIPT_BYTES,
        "{longest_bytes} bytes kept"
    );
    assert!(
        longest_bytes > MAX_TRANSCRIPT_BYTES - 4,
        "the cap is filled, on a character boundary"
    );
    assert_eq!(
        cut_notices.len(),
        1,
        "the cut is told once: {cut_notices:?}"
    );
    assert_eq!(cut_notices[0].error_type.as_deref(), Some("transcript_cut"));
    assert!(cut_notices[0].recoverable, "the call goes on");
    talk.at(5_000)
        .server(&response_done("resp_R1", "completed"));
    let ended = talk.events().into_iter().find_map(|event| match event {
        SessionEvent::PartEnd(PartEndEvent { part, .. }) => Some(part),
        _ => None,
    });
    assert!(ended.is_some(), "the reply still ends");
}
