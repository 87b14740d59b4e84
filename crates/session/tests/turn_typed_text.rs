//! Typing during a call, scripted in virtual time: a typed message joins the conversation as
//! the user's `input_text` item, a reply is asked for (after the one under way, never cutting
//! it), and the session reports the message delivered for the transcript.

mod turn_support;

use serde_json::json;
use walkie_openai::SessionConfig;
use walkie_session::turn::{MAX_USER_TEXT_BYTES, TurnConfig, TurnInput, UiHint};
use walkie_session::{EnqueuedMessagesEvent, SessionEvent, UserContent};

use turn_support::*;

/// The typed texts the session reported delivered, with the id each went out under.
fn delivered(talk: &mut Conversation) -> Vec<(String, String)> {
    talk.events()
        .into_iter()
        .filter_map(|event| match event {
            SessionEvent::EnqueuedMessages(delivered) => {
                let EnqueuedMessagesEvent {
                    enqueue_id,
                    messages,
                } = *delivered;
                let text = messages
                    .iter()
                    .flat_map(|message| &message.parts)
                    .filter_map(|part| match part {
                        UserContent::Text { content } => Some(content.as_str()),
                        UserContent::Image(_) => None,
                    })
                    .collect::<String>();
                Some((enqueue_id, text))
            }
            _ => None,
        })
        .collect()
}

#[test]
fn a_typed_message_goes_out_as_the_users_input_text_item_then_asks_for_a_reply() {
    let mut talk = Conversation::ready_for_push_to_talk();
    talk.at(1_000).types("  What time is it in Lima?\n");
    assert_eq!(
        talk.sent(),
        [
            json!({
                "type": "conversation.item.create",
                "item": {
                    "type": "message",
                    "role": "user",
                    "content": [{"type": "input_text", "text": "What time is it in Lima?"}]
                }
            }),
            json!({"type": "response.create"}),
        ]
    );
    let item_id = talk.sent_id("conversation.item.create");
    assert_eq!(
        delivered(&mut talk),
        [(item_id, "What time is it in Lima?".to_owned())],
        "delivered under the id of the event that carried it"
    );
    assert_eq!(talk.audio(), [], "the microphone is not touched");
    assert_eq!(talk.messages_sent(), 1, "the driver is told it went out");
}

#[test]
fn a_message_typed_during_a_reply_waits_for_it_to_end_and_does_not_cut_it() {
    let mut talk = Conversation::ready_for_push_to_talk();
    talk.utterance(1_000, 2_000);
    talk.at(2_300)
        .server(&committed("item_U1"))
        .server(&response_created("resp_1"))
        .server(&audio_part_added("resp_1", "item_A1"))
        .server(&output_started("resp_1"))
        .server(&assistant_says("resp_1", "item_A1", "Once upon a time"));
    talk.sent();
    talk.audio();
    talk.at(2_500).types("Make it short.");
    let sent = talk.sent();
    assert_eq!(
        sent.iter()
            .map(|event| event["type"].clone())
            .collect::<Vec<_>>(),
        [json!("conversation.item.create")],
        "no cancel, no clear, and the reply is asked for later"
    );
    assert_eq!(talk.audio(), [], "the speaker is not flushed");
    talk.at(2_800).server(&response_done("resp_1", "completed"));
    assert_eq!(talk.sent(), [json!({"type": "response.create"})]);
}

#[test]
fn a_blank_message_sends_nothing_and_says_nothing() {
    let mut talk = Conversation::ready_for_push_to_talk();
    talk.at(1_000).types(" \n\t ");
    assert!(talk.sent().is_empty());
    assert_eq!(talk.messages_sent(), 0);
    assert!(talk.hints().is_empty());
    assert!(delivered(&mut talk).is_empty());
}

#[test]
fn a_message_too_long_for_one_data_channel_message_is_refused_whole_and_said() {
    let mut talk = Conversation::ready_for_push_to_talk();
    // Quotes double when escaped: half the bound in characters is over it on the wire.
    let quoted = "\"".repeat(MAX_USER_TEXT_BYTES / 2 + 1);
    talk.at(1_000).types(&quoted);
    assert!(talk.sent().is_empty());
    assert_eq!(
        talk.messages_sent(),
        0,
        "the driver is not told it went out"
    );
    assert_eq!(
        talk.hints(),
        [UiHint::TextTooLong {
            max_bytes: MAX_USER_TEXT_BYTES
        }]
    );
    let longest = "a".repeat(MAX_USER_TEXT_BYTES - 2);
    talk.at(2_000).types(&longest);
    assert_eq!(
        talk.sent().len(),
        2,
        "the longest message that fits goes out"
    );
    assert_eq!(talk.messages_sent(), 1);
}

#[test]
fn a_message_typed_before_the_session_is_set_up_is_not_sent_and_says_so() {
    let mut talk = Conversation::with(TurnConfig::push_to_talk(SessionConfig::default()));
    talk.controller.handle_input(TurnInput::ChannelOpened, 0);
    talk.sent();
    talk.at(10).types("Hello?");
    assert!(talk.sent().is_empty());
    assert_eq!(talk.messages_sent(), 0);
    assert_eq!(talk.hints(), [UiHint::NotReady]);
}

fn answering_typed_messages_in_text() -> Conversation {
    Conversation::ready(TurnConfig {
        typed_replies_in_text: true,
        ..TurnConfig::push_to_talk(SessionConfig::default())
    })
}

#[test]
fn with_typed_replies_in_text_a_typed_message_asks_for_text_alone_and_a_spoken_turn_for_the_sessions_audio()
 {
    let mut talk = answering_typed_messages_in_text();
    talk.at(1_000).types("What time is it in Lima?");
    let sent = talk.sent();
    assert_eq!(
        sent.last(),
        Some(&json!({"type": "response.create", "response": {"output_modalities": ["text"]}}))
    );
    talk.at(1_200)
        .server(&response_created("resp_1"))
        .server(&response_done("resp_1", "completed"));
    talk.sent();

    talk.utterance(2_000, 3_000);
    let sent = talk.sent();
    assert_eq!(
        sent.last(),
        Some(&json!({"type": "response.create"})),
        "a spoken turn is answered as the session says"
    );
}

#[test]
fn creates_that_wait_for_a_reply_are_answered_in_text_only_if_every_one_asked_so() {
    let mut talk = answering_typed_messages_in_text();
    talk.utterance(1_000, 2_000);
    talk.at(2_300)
        .server(&committed("item_U1"))
        .server(&response_created("resp_1"));
    talk.sent();
    talk.at(2_500).types("And in Quito?");
    talk.sent();
    talk.at(2_800).server(&response_done("resp_1", "completed"));
    assert_eq!(
        talk.sent(),
        [json!({"type": "response.create", "response": {"output_modalities": ["text"]}})],
        "the one waiting was typed"
    );

    talk.at(3_000).server(&response_created("resp_2"));
    talk.at(3_100).types("And in Bogotá?");
    talk.utterance(3_200, 4_000);
    talk.sent();
    talk.at(4_500).server(&response_done("resp_2", "completed"));
    assert_eq!(
        talk.sent(),
        [json!({"type": "response.create"})],
        "a spoken turn waits too: its answer is spoken"
    );
}

#[test]
fn without_the_setting_a_typed_message_is_answered_as_the_session_says() {
    let mut talk = Conversation::ready_for_push_to_talk();
    talk.at(1_000).types("Hello?");
    assert_eq!(
        talk.sent().last(),
        Some(&json!({"type": "response.create"}))
    );
}
