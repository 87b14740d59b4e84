//! The transcript the user reads: session events from scripted conversations go through the
//! bridge, and the AG-UI events that come out pass the strict verifier and assemble into the
//! messages a person would expect, in speech-start order.

mod turn_support;

use turn_support::*;
use walkie_agui::{Consumer, Event, Mode, TurnId};
use walkie_session::transcript::{BridgeNote, TranscriptBridge};
use walkie_session::{Part, PartIndex, SessionEvent, Speaker, ToolCallPart};

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

#[test]
fn a_typed_question_is_the_users_message_in_its_own_exchange_and_the_reply_follows_it() {
    let mut talk = Conversation::ready_for_push_to_talk();
    let mut bridge = TranscriptBridge::new("conversation-1");
    let mut events = Vec::new();
    talk.at(1_000).types("  What is the capital of Peru?\n");
    talk.at(1_300)
        .server(&response_created("resp_1"))
        .server(&audio_part_added("resp_1", "item_A1"))
        .server(&output_started("resp_1"))
        .server(&assistant_says("resp_1", "item_A1", "Lima."))
        .server(&response_done("resp_1", "completed"))
        .at(2_000)
        .server(&output_stopped("resp_1"));
    let mut notes = Vec::new();
    for (at_ms, event) in talk.stamped_events() {
        notes.push(bridge.on_event_noted(1_767_225_600_000 + at_ms as i64, &event, &mut events));
    }
    bridge.finish(1_767_225_700_000, &mut events);
    assert_eq!(
        notes[0],
        BridgeNote::MessageOpensTurn {
            turn: TurnId(1),
            speaker: Speaker::User
        }
    );
    assert_eq!(
        strictly_assembled(&events),
        [
            ("user".to_owned(), "What is the capital of Peru?".to_owned()),
            ("assistant".to_owned(), "Lima.".to_owned()),
        ]
    );
    assert_eq!(
        messages(&bridge)[0].0,
        "user-1",
        "numbered as a spoken question"
    );
}

#[test]
fn a_question_typed_during_a_reply_comes_after_it_and_gets_the_next_reply() {
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
    talk.at(2_500).types("Make it short.");
    talk.at(2_600)
        .server(&assistant_says("resp_1", "item_A1", " there was a cat."))
        .server(&response_done("resp_1", "completed"))
        .at(3_000)
        .server(&output_stopped("resp_1"))
        .server(&response_created("resp_2"))
        .server(&audio_part_added("resp_2", "item_A2"))
        .server(&assistant_says("resp_2", "item_A2", "A cat. The end."))
        .server(&response_done("resp_2", "completed"));
    bridge_events(&mut talk, &mut bridge, &mut events);
    bridge.finish(1_767_225_700_000, &mut events);
    assert_eq!(
        strictly_assembled(&events),
        [
            ("user".to_owned(), "Tell me a story.".to_owned()),
            (
                "assistant".to_owned(),
                "Once upon a time there was a cat.".to_owned()
            ),
            ("user".to_owned(), "Make it short.".to_owned()),
            ("assistant".to_owned(), "A cat. The end.".to_owned()),
        ]
    );
}

/// Feeds hand-made session events through the bridge; returns the note of each, and keeps the
/// AG-UI events in `out`.
fn notes_of(
    bridge: &mut TranscriptBridge,
    events: &[SessionEvent],
    out: &mut Vec<Event>,
) -> Vec<BridgeNote> {
    events
        .iter()
        .enumerate()
        .map(|(n, event)| bridge.on_event_noted(1_767_225_600_000 + n as i64, event, out))
        .collect()
}

fn part(index: u32, turn: u64, speaker: Speaker, opens_turn: bool) -> BridgeNote {
    BridgeNote::PartInTurn {
        index: PartIndex(index),
        turn: TurnId(turn),
        speaker,
        opens_turn,
    }
}

fn turn_ended(turn: u64) -> BridgeNote {
    BridgeNote::TurnEnded { turn: TurnId(turn) }
}

/// (message id, text) of the bridge's transcript so far.
fn messages(bridge: &TranscriptBridge) -> Vec<(String, String)> {
    bridge
        .transcript()
        .map(|(id, _, text)| (id.to_owned(), text.to_owned()))
        .collect()
}

fn tool_call_starts(index: u32) -> SessionEvent {
    part_starts(
        index,
        Part::tool_call(ToolCallPart {
            tool_name: "get_time".into(),
            args: "{}".into(),
            tool_call_id: "call_1".into(),
        }),
    )
}

fn tool_call_ends(index: u32) -> SessionEvent {
    SessionEvent::PartEnd(walkie_session::PartEndEvent {
        index: PartIndex(index),
        part: Part::tool_call(ToolCallPart {
            tool_name: "get_time".into(),
            args: "{}".into(),
            tool_call_id: "call_1".into(),
        }),
    })
}

#[test]
fn a_question_and_its_reply_share_one_exchange_that_the_models_turn_complete_ends() {
    let mut bridge = TranscriptBridge::new("conversation-1");
    let mut out = Vec::new();
    let notes = notes_of(
        &mut bridge,
        &[
            speech_starts(0, Speaker::User),
            user_speech_ends(None),
            speech_starts(1, Speaker::Assistant),
            transcript(1, Speaker::Assistant, "Fine", "Fine"),
            speech_ends(1, Speaker::Assistant, Some("Fine."), None),
            speech_ends(0, Speaker::User, Some("How are you?"), None),
            SessionEvent::TurnComplete,
        ],
        &mut out,
    );
    assert_eq!(
        notes,
        [
            part(0, 1, Speaker::User, true),
            BridgeNote::Nothing,
            part(1, 1, Speaker::Assistant, false),
            part(1, 1, Speaker::Assistant, false),
            part(1, 1, Speaker::Assistant, false),
            part(0, 1, Speaker::User, false),
            turn_ended(1),
        ]
    );
    assert_eq!(
        bridge.turn_of(PartIndex(0)),
        None,
        "an ended part has no turn"
    );
    assert_eq!(
        messages(&bridge),
        [
            ("user-1".to_owned(), "How are you?".to_owned()),
            ("assistant-1".to_owned(), "Fine.".to_owned()),
        ],
        "the message ids carry the exchange numbers of the notes"
    );
}

#[test]
fn turn_of_names_the_exchange_of_each_open_part() {
    let mut bridge = TranscriptBridge::new("conversation-1");
    let mut out = Vec::new();
    notes_of(
        &mut bridge,
        &[
            speech_starts(0, Speaker::User),
            speech_starts(1, Speaker::Assistant),
            speech_starts(2, Speaker::User),
        ],
        &mut out,
    );
    assert_eq!(bridge.turn_of(PartIndex(0)), Some(TurnId(1)));
    assert_eq!(bridge.turn_of(PartIndex(1)), Some(TurnId(1)));
    assert_eq!(bridge.turn_of(PartIndex(2)), Some(TurnId(2)));
    assert_eq!(bridge.turn_of(PartIndex(3)), None, "a part never started");
}

#[test]
fn in_a_barge_in_the_cut_reply_stays_in_its_exchange_and_its_turn_complete_ends_that_one() {
    let mut bridge = TranscriptBridge::new("conversation-1");
    let mut out = Vec::new();
    let notes = notes_of(
        &mut bridge,
        &[
            speech_starts(0, Speaker::User),
            speech_ends(0, Speaker::User, Some("Tell me a story."), None),
            speech_starts(1, Speaker::Assistant),
            transcript(1, Speaker::Assistant, "Once upon", "Once upon"),
            // The user speaks while the story is told; then the story is cut and cancelled.
            speech_starts(2, Speaker::User),
            speech_ends(1, Speaker::Assistant, Some("Once upon a time"), Some(800)),
            SessionEvent::TurnComplete,
            speech_ends(2, Speaker::User, Some("A shorter one."), None),
            speech_starts(3, Speaker::Assistant),
            speech_ends(3, Speaker::Assistant, Some("The end."), None),
            SessionEvent::TurnComplete,
        ],
        &mut out,
    );
    assert_eq!(
        notes,
        [
            part(0, 1, Speaker::User, true),
            part(0, 1, Speaker::User, false),
            part(1, 1, Speaker::Assistant, false),
            part(1, 1, Speaker::Assistant, false),
            part(2, 2, Speaker::User, true),
            part(1, 1, Speaker::Assistant, false),
            turn_ended(1),
            part(2, 2, Speaker::User, false),
            part(3, 2, Speaker::Assistant, false),
            part(3, 2, Speaker::Assistant, false),
            turn_ended(2),
        ]
    );
    assert_eq!(
        messages(&bridge),
        [
            ("user-1".to_owned(), "Tell me a story.".to_owned()),
            ("assistant-1".to_owned(), "Once upon a time".to_owned()),
            ("user-2".to_owned(), "A shorter one.".to_owned()),
            ("assistant-2".to_owned(), "The end.".to_owned()),
        ]
    );
}

#[test]
fn a_turn_complete_with_no_reply_in_progress_leaves_the_new_question_open_for_its_reply() {
    let mut bridge = TranscriptBridge::new("conversation-1");
    let mut out = Vec::new();
    let notes = notes_of(
        &mut bridge,
        &[
            speech_starts(0, Speaker::User),
            speech_starts(1, Speaker::Assistant),
            speech_ends(1, Speaker::Assistant, Some("Hi."), None),
            SessionEvent::TurnComplete,
            // A barge-in on a response that had not said anything yet: it is cancelled.
            speech_starts(2, Speaker::User),
            SessionEvent::TurnComplete,
            speech_starts(3, Speaker::Assistant),
        ],
        &mut out,
    );
    assert_eq!(notes[3], turn_ended(1));
    assert_eq!(notes[5], BridgeNote::Nothing, "exchange 2 has no reply yet");
    assert_eq!(notes[6], part(3, 2, Speaker::Assistant, false));
}

#[test]
fn the_assistant_speaking_again_after_its_reply_opens_an_exchange_of_its_own_each_time() {
    let mut bridge = TranscriptBridge::new("conversation-1");
    let mut out = Vec::new();
    let notes = notes_of(
        &mut bridge,
        &[
            speech_starts(0, Speaker::User),
            speech_ends(0, Speaker::User, Some("What time is it?"), None),
            speech_starts(1, Speaker::Assistant),
            speech_ends(1, Speaker::Assistant, Some("Let me look."), None),
            tool_call_starts(2),
            tool_call_ends(2),
            speech_starts(3, Speaker::Assistant),
            speech_ends(3, Speaker::Assistant, Some("It is noon."), None),
            speech_starts(4, Speaker::Assistant),
            speech_ends(4, Speaker::Assistant, Some("Anything else?"), None),
            SessionEvent::TurnComplete,
        ],
        &mut out,
    );
    assert_eq!(
        notes,
        [
            part(0, 1, Speaker::User, true),
            part(0, 1, Speaker::User, false),
            part(1, 1, Speaker::Assistant, false),
            part(1, 1, Speaker::Assistant, false),
            part(2, 1, Speaker::Assistant, false),
            part(2, 1, Speaker::Assistant, false),
            part(3, 2, Speaker::Assistant, true),
            part(3, 2, Speaker::Assistant, false),
            part(4, 3, Speaker::Assistant, true),
            part(4, 3, Speaker::Assistant, false),
            turn_ended(3),
        ]
    );
    assert_eq!(
        messages(&bridge),
        [
            ("user-1".to_owned(), "What time is it?".to_owned()),
            ("assistant-1".to_owned(), "Let me look.".to_owned()),
            ("assistant-2".to_owned(), "It is noon.".to_owned()),
            ("assistant-3".to_owned(), "Anything else?".to_owned()),
        ],
        "no part's final transcript overwrites another part's words"
    );
}

#[test]
fn a_revised_transcript_replaces_what_was_shown_at_once() {
    let mut bridge = TranscriptBridge::new("conversation-1");
    let mut out = Vec::new();
    notes_of(
        &mut bridge,
        &[
            speech_starts(0, Speaker::User),
            transcript(0, Speaker::User, "Wreck a nice", "Wreck a nice"),
            transcript(0, Speaker::User, "", "Recognize"),
        ],
        &mut out,
    );
    assert_eq!(
        messages(&bridge),
        [("user-1".to_owned(), "Recognize".to_owned())]
    );
}

#[test]
fn events_about_unknown_parts_or_no_exchange_note_nothing_and_write_nothing() {
    let mut bridge = TranscriptBridge::new("conversation-1");
    let mut out = Vec::new();
    let notes = notes_of(
        &mut bridge,
        &[
            transcript(7, Speaker::User, "hello", "hello"),
            speech_ends(7, Speaker::User, Some("hello"), None),
            tool_call_starts(8),
            user_speech_ends(None),
            SessionEvent::TurnComplete,
        ],
        &mut out,
    );
    assert!(notes.iter().all(|note| *note == BridgeNote::Nothing));
    assert!(out.is_empty(), "{out:?}");
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
        Types,
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
            Just(Step::Types),
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
            Step::Types => {
                talk.types("a typed question");
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        #[test]
        fn whatever_the_server_and_the_user_do_the_transcript_obeys_ag_ui_and_exchanges_are_in_order(
            steps in prop::collection::vec(step(), 0..40)
        ) {
            let mut talk = Conversation::ready_for_push_to_talk();
            let mut bridge = TranscriptBridge::new("conversation-1");
            let mut events = Vec::new();
            let mut opened = 0u64;
            let mut ended = std::collections::BTreeSet::new();
            for step in &steps {
                play(&mut talk, step);
                for (at_ms, event) in talk.stamped_events() {
                    let note = bridge.on_event_noted(at_ms as i64, &event, &mut events);
                    match note {
                        BridgeNote::PartInTurn { turn, opens_turn: true, .. } => {
                            opened += 1;
                            prop_assert_eq!(turn, TurnId(opened), "exchanges open in order");
                        }
                        BridgeNote::PartInTurn { index, turn, .. } => {
                            prop_assert!(turn.0 >= 1 && turn.0 <= opened);
                            if !matches!(event, SessionEvent::PartEnd(_)) {
                                prop_assert_eq!(bridge.turn_of(index), Some(turn));
                            }
                        }
                        BridgeNote::TurnEnded { turn } => {
                            prop_assert!(ended.insert(turn), "exchange {:?} ended twice", turn);
                        }
                        BridgeNote::MessageOpensTurn { turn, .. } => {
                            opened += 1;
                            prop_assert_eq!(turn, TurnId(opened), "exchanges open in order");
                        }
                        BridgeNote::Nothing => {}
                    }
                }
            }
            bridge.finish(1_767_300_000_000, &mut events);
            let mut consumer = Consumer::new(Mode::Strict);
            for (index, event) in events.iter().enumerate() {
                prop_assert!(consumer.push(event).is_ok(), "event {} of {:?}", index, events);
            }
        }
    }
}

/// A long tool call and its long answer are told to a new session cut to a readable length,
/// each marked where it was cut.
#[test]
fn a_long_tool_call_and_answer_are_told_cut_to_a_readable_length() {
    use walkie_session::transcript::RESTORED_TOOL_ANSWER_CHARS;
    use walkie_session::{FunctionToolResultEvent, ToolOutcome, ToolResult, ToolReturnPart};
    let mut bridge = TranscriptBridge::new("conversation-1");
    let mut out = Vec::new();
    let long = "x".repeat(5 * RESTORED_TOOL_ANSWER_CHARS);
    notes_of(
        &mut bridge,
        &[
            speech_starts(0, Speaker::User),
            part_starts(
                1,
                Part::tool_call(ToolCallPart {
                    tool_name: "files__write".into(),
                    args: format!(r#"{{"text":"{long}"}}"#),
                    tool_call_id: "call_9".into(),
                }),
            ),
            SessionEvent::FunctionToolResult(Box::new(FunctionToolResultEvent {
                result: ToolResult::ToolReturn(ToolReturnPart {
                    tool_name: "files__write".into(),
                    tool_call_id: "call_9".into(),
                    content: serde_json::Value::String(long.clone()),
                    outcome: ToolOutcome::Success,
                }),
            })),
        ],
        &mut out,
    );
    let told: Vec<String> = bridge.restorable().map(|(_, text)| text).collect();
    let call = told
        .iter()
        .find(|text| text.starts_with("[I called the tool files__write with "))
        .expect("the call is told");
    let answer = told
        .iter()
        .find(|text| text.starts_with("[The tool answered: "))
        .expect("the answer is told");
    for text in [call, answer] {
        assert!(
            text.chars().count() < RESTORED_TOOL_ANSWER_CHARS + 60,
            "{} characters",
            text.chars().count()
        );
        assert!(text.contains('…'), "marked where it was cut");
    }
}
