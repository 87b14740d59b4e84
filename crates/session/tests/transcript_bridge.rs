//! The transcript the user reads: session events from scripted conversations go through the
//! bridge, and the AG-UI events that come out pass the strict verifier and assemble into the
//! messages a person would expect, in speech-start order.

mod turn_support;

use turn_support::*;
use walkie_agui::{Consumer, Event, Mode};
use walkie_session::transcript::TranscriptBridge;

/// Feeds every session event since the last call through the bridge.
fn bridge_events(talk: &mut Conversation, bridge: &mut TranscriptBridge, out: &mut Vec<Event>) {
    for (at_ms, event) in talk.stamped_events() {
        bridge.on_event(1_767_225_600_000 + at_ms as i64, &event, out);
    }
}

/// (role, text) of each assembled message, after a strict check of the producer's obligations.
fn strictly_assembled(events: &[Event]) -> Vec<(String, String)> {
    let mut consumer = Consumer::new(Mode::Strict);
    for (index, event) in events.iter().enumerate() {
        if let Err(violation) = consumer.push(event) {
            panic!("event {index} breaks the AG-UI rules: {violation:?}\n{events:#?}");
        }
    }
    consumer
        .messages()
        .iter()
        .map(|m| {
            (
                m.role_name().to_owned(),
                m.content().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

#[test]
fn a_push_to_talk_turn_shows_the_user_before_the_reply_even_though_their_words_came_last() {
    let mut talk = Conversation::ready_for_push_to_talk();
    let mut bridge = TranscriptBridge::new("conversation-1");
    let mut events = Vec::new();
    talk.utterance(1_000, 2_000);
    bridge_events(&mut talk, &mut bridge, &mut events);
    talk.at(2_300).server_lines(PTT_TURN_GA);
    bridge_events(&mut talk, &mut bridge, &mut events);
    bridge.finish(1_767_225_610_000, &mut events);

    assert_eq!(
        strictly_assembled(&events),
        [
            ("user".to_owned(), "How are you?".to_owned()),
            (
                "assistant".to_owned(),
                "I'm doing well, thank you!".to_owned()
            ),
        ]
    );
}

#[test]
fn the_user_message_opens_at_the_press_and_the_reply_streams_word_by_word() {
    let mut talk = Conversation::ready_for_push_to_talk();
    let mut bridge = TranscriptBridge::new("conversation-1");
    let mut events = Vec::new();
    talk.utterance(1_000, 2_000);
    bridge_events(&mut talk, &mut bridge, &mut events);
    let user_start = events
        .iter()
        .position(|e| matches!(e, Event::TextMessageStart(s) if s.message_id.starts_with("user")))
        .expect("the user's message opened with the press");
    assert!(
        events[..user_start]
            .iter()
            .all(|e| !matches!(e, Event::TextMessageStart(_))),
        "nothing opens before the user's message"
    );

    talk.at(2_300).server_lines(PTT_TURN_GA);
    bridge_events(&mut talk, &mut bridge, &mut events);
    let reply_deltas: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            Event::TextMessageContent(c) if c.message_id.starts_with("assistant") => {
                Some(c.delta.as_str())
            }
            _ => None,
        })
        .collect();
    assert_eq!(reply_deltas, ["I'm", " doing well, thank you!"]);
}

#[test]
fn two_exchanges_make_four_messages_in_the_order_they_were_spoken() {
    let mut talk = Conversation::ready_for_push_to_talk();
    let mut bridge = TranscriptBridge::new("conversation-1");
    let mut events = Vec::new();
    for (round, base_ms) in [(1, 1_000u64), (2, 10_000)] {
        talk.utterance(base_ms, base_ms + 1_000);
        let (response, user_item, reply_item) = (
            format!("resp_{round}"),
            format!("item_U{round}"),
            format!("item_A{round}"),
        );
        talk.at(base_ms + 1_300)
            .server(&committed(&user_item))
            .server(&response_created(&response))
            .server(&audio_part_added(&response, &reply_item))
            .server(&output_started(&response))
            .server(&assistant_says(
                &response,
                &reply_item,
                &format!("Reply {round}."),
            ))
            .server(&response_done(&response, "completed"))
            .server(&user_transcript_completed(
                &user_item,
                &format!("Question {round}?"),
            ))
            .at(base_ms + 3_000)
            .server(&output_stopped(&response));
        bridge_events(&mut talk, &mut bridge, &mut events);
    }
    bridge.finish(1_767_225_700_000, &mut events);
    assert_eq!(
        strictly_assembled(&events),
        [
            ("user".to_owned(), "Question 1?".to_owned()),
            ("assistant".to_owned(), "Reply 1.".to_owned()),
            ("user".to_owned(), "Question 2?".to_owned()),
            ("assistant".to_owned(), "Reply 2.".to_owned()),
        ]
    );
}

#[test]
fn a_barge_in_keeps_the_cut_reply_and_puts_the_new_question_after_it() {
    let mut talk = Conversation::ready_for_push_to_talk();
    let mut bridge = TranscriptBridge::new("conversation-1");
    let mut events = Vec::new();
    talk.utterance(1_000, 2_000);
    talk.at(2_300)
        .server(&committed("item_U1"))
        .server(&response_created("resp_1"))
        .server(&audio_part_added("resp_1", "item_A1"))
        .server(&output_started("resp_1"))
        .server(&assistant_says("resp_1", "item_A1", "Once upon a time"))
        .server(&user_transcript_completed("item_U1", "Tell me a story."));
    bridge_events(&mut talk, &mut bridge, &mut events);
    // The user presses again while the story is being told.
    talk.utterance(3_000, 4_000);
    talk.at(4_100)
        .server(&output_cleared("resp_1"))
        .server(&response_done("resp_1", "cancelled"));
    bridge_events(&mut talk, &mut bridge, &mut events);
    bridge.finish(1_767_225_700_000, &mut events);

    let messages = strictly_assembled(&events);
    assert_eq!(
        messages[..3],
        [
            ("user".to_owned(), "Tell me a story.".to_owned()),
            ("assistant".to_owned(), "Once upon a time".to_owned()),
            ("user".to_owned(), String::new()),
        ]
    );
}

mod random_conversations {
    use super::*;
    use proptest::prelude::*;

    /// One step of a conversation a person and a server might produce, in any order.
    #[derive(Debug, Clone)]
    enum Step {
        Press { held_ms: u64 },
        Committed(u8),
        ResponseCreated(u8),
        AudioPart(u8, u8),
        Started(u8),
        Says(u8, u8),
        Done(u8, bool),
        UserDelta(u8),
        UserCompleted(u8),
        UserFailed(u8),
        Stopped(u8),
        Cleared(u8),
    }

    fn step() -> impl Strategy<Value = Step> {
        let id = 0u8..3;
        prop_oneof![
            (50u64..1_500).prop_map(|held_ms| Step::Press { held_ms }),
            id.clone().prop_map(Step::Committed),
            id.clone().prop_map(Step::ResponseCreated),
            (id.clone(), id.clone()).prop_map(|(r, i)| Step::AudioPart(r, i)),
            id.clone().prop_map(Step::Started),
            (id.clone(), id.clone()).prop_map(|(r, i)| Step::Says(r, i)),
            (id.clone(), any::<bool>()).prop_map(|(r, c)| Step::Done(r, c)),
            id.clone().prop_map(Step::UserDelta),
            id.clone().prop_map(Step::UserCompleted),
            id.clone().prop_map(Step::UserFailed),
            id.clone().prop_map(Step::Stopped),
            id.prop_map(Step::Cleared),
        ]
    }

    fn play(talk: &mut Conversation, step: &Step) {
        let now = talk.now_ms + 100;
        talk.at(now);
        match step {
            Step::Press { held_ms } => {
                talk.utterance(now, now + held_ms);
            }
            Step::Committed(i) => {
                talk.server(&committed(&format!("item_U{i}")));
            }
            Step::ResponseCreated(r) => {
                talk.server(&response_created(&format!("resp_{r}")));
            }
            Step::AudioPart(r, i) => {
                talk.server(&audio_part_added(
                    &format!("resp_{r}"),
                    &format!("item_A{i}"),
                ));
            }
            Step::Started(r) => {
                talk.server(&output_started(&format!("resp_{r}")));
            }
            Step::Says(r, i) => {
                talk.server(&assistant_says(
                    &format!("resp_{r}"),
                    &format!("item_A{i}"),
                    "word ",
                ));
            }
            Step::Done(r, completed) => {
                let status = if *completed { "completed" } else { "cancelled" };
                talk.server(&response_done(&format!("resp_{r}"), status));
            }
            Step::UserDelta(i) => {
                talk.server(&user_said(&format!("item_U{i}"), "hello "));
            }
            Step::UserCompleted(i) => {
                talk.server(&user_transcript_completed(
                    &format!("item_U{i}"),
                    "hello there",
                ));
            }
            Step::UserFailed(i) => {
                talk.server(&user_transcription_failed(&format!("item_U{i}")));
            }
            Step::Stopped(r) => {
                talk.server(&output_stopped(&format!("resp_{r}")));
            }
            Step::Cleared(r) => {
                talk.server(&output_cleared(&format!("resp_{r}")));
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        #[test]
        fn whatever_the_server_and_the_user_do_the_transcript_obeys_ag_ui(
            steps in prop::collection::vec(step(), 0..40)
        ) {
            let mut talk = Conversation::ready_for_push_to_talk();
            let mut bridge = TranscriptBridge::new("conversation-1");
            let mut events = Vec::new();
            for step in &steps {
                play(&mut talk, step);
                bridge_events(&mut talk, &mut bridge, &mut events);
            }
            bridge.finish(1_767_300_000_000, &mut events);
            let mut consumer = Consumer::new(Mode::Strict);
            for (index, event) in events.iter().enumerate() {
                prop_assert!(consumer.push(event).is_ok(), "event {} of {:?}", index, events);
            }
        }
    }
}
