//! A call may drop at any moment of a conversation. Whichever input of a scripted conversation
//! it drops after, the conversation goes on in the next call, and no finished message is lost
//! or doubled: on screen, in the records the store saves, or in what the new call is given.

mod support;
#[path = "../../session/tests/turn_support/mod.rs"]
mod turn_support;

use std::collections::HashSet;

use support::*;
use turn_support::{
    assistant_says, audio_part_added, committed, output_started, output_stopped, response_created,
    response_done, user_transcript_completed,
};
use walkie_agui::{Consumer, Event, Mode};
use walkie_conversation::{Input, Output, Record, TransportInput};
use walkie_openai::{ClientEvent, ContentPart, Item, Role};
use walkie_session::turn::UserMessage;

/// Every message of the script and of the exchange after the drop: none may show twice.
const TEXTS: [&str; 8] = [
    "My cat is called Miso.",
    "Miso is a lovely name.",
    "What do cats eat?",
    "Mostly meat, and some water.",
    "Thanks, that helps.",
    "You are welcome.",
    "Still there?",
    "Yes, still here.",
];

/// One spoken reply on the call: `response_id` says `text` as the item `item_id`.
fn reply(at_ms: u64, response_id: &str, item_id: &str, text: &str) -> Vec<(u64, Input)> {
    let server = |offset_ms: u64, json: String| (at_ms + offset_ms, Input::ServerText(json));
    vec![
        server(0, response_created(response_id)),
        server(10, audio_part_added(response_id, item_id)),
        server(20, output_started(response_id)),
        server(30, assistant_says(response_id, item_id, text)),
        server(100, response_done(response_id, "completed")),
        server(200, output_stopped(response_id)),
    ]
}

/// A push-to-talk conversation of three exchanges: spoken, typed, spoken (its transcript after
/// the reply, as the provider often sends it).
fn script(tail_ms: u64) -> Vec<(u64, Input)> {
    let mut script = vec![
        (1_000, Input::Press),
        (2_000, Input::Release),
        (2_000 + tail_ms, Input::Tick),
        (2_300, Input::ServerText(committed("item_U1"))),
    ];
    script.extend(reply(2_310, "resp_R1", "item_A1", TEXTS[1]));
    script.push((
        2_600,
        Input::ServerText(user_transcript_completed("item_U1", TEXTS[0])),
    ));
    script.push((4_000, Input::SendMessage(UserMessage::text(TEXTS[2]))));
    script.extend(reply(4_100, "resp_R2", "item_A2", TEXTS[3]));
    script.extend([
        (6_000, Input::Press),
        (7_000, Input::Release),
        (7_000 + tail_ms, Input::Tick),
        (7_300, Input::ServerText(committed("item_U3"))),
    ]);
    script.extend(reply(7_310, "resp_R3", "item_A3", TEXTS[5]));
    script.push((
        7_700,
        Input::ServerText(user_transcript_completed("item_U3", TEXTS[4])),
    ));
    script
}

/// The AG-UI events among `outputs` as the webview gets them, and as the records carry them.
fn on_screen(outputs: &[Output]) -> Vec<Event> {
    outputs
        .iter()
        .filter_map(|output| match output {
            Output::Transcript(event) => Some(event.clone()),
            _ => None,
        })
        .collect()
}

fn in_records(outputs: &[Output]) -> Vec<Event> {
    outputs
        .iter()
        .flat_map(|output| match output {
            Output::Record(Record::Event { transcript, .. })
            | Output::Record(Record::Transcript { transcript, .. }) => transcript.clone(),
            _ => Vec::new(),
        })
        .collect()
}

/// The messages the new call is given (`conversation.item.create`), as (role, text).
fn given_to_the_new_call(outputs: &[Output]) -> Vec<(Role, String)> {
    outputs
        .iter()
        .filter_map(|output| match output {
            Output::Send(sent) => match sent.realtime()? {
                ClientEvent::ConversationItemCreate {
                    item: Item::Message { role, content, .. },
                    ..
                } => match &content[..] {
                    [ContentPart::InputText { text }] | [ContentPart::OutputText { text }] => {
                        Some((*role, text.clone()))
                    }
                    _ => None,
                },
                _ => None,
            },
            _ => None,
        })
        .collect()
}

/// The messages a stream of events assembles to, checking it obeys AG-UI (strictly, as
/// Walkie's own output must); (role, text, message id).
fn assembled(events: &[Event], what: &str, dropped_after: usize) -> Vec<(String, String, String)> {
    let mut consumer = Consumer::new(Mode::Strict);
    for (index, event) in events.iter().enumerate() {
        if let Err(violation) = consumer.push(event) {
            panic!(
                "dropped after input {dropped_after}: {what} event {index} breaks AG-UI: {violation:?}"
            );
        }
    }
    consumer
        .messages()
        .iter()
        .map(|message| {
            (
                message.role_name().to_owned(),
                message.content().unwrap_or_default().to_owned(),
                message.id().to_owned(),
            )
        })
        .collect()
}

/// The ids of the messages whose TEXT_MESSAGE_END is among `events`.
fn ended(events: &[Event]) -> HashSet<String> {
    events
        .iter()
        .filter_map(|event| match event {
            Event::TextMessageEnd(end) => Some(end.message_id.clone()),
            _ => None,
        })
        .collect()
}

fn role_name(role: Role) -> &'static str {
    match role {
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::System => "system",
    }
}

#[test]
fn whichever_input_the_call_drops_after_no_finished_message_is_lost_or_doubled() {
    let tail_ms = Call::ready().config.tail_ms;
    let script = script(tail_ms);
    for dropped_after in 0..=script.len() {
        let mut call = Call::ready();
        let mut outputs = Vec::new();
        for (at_ms, input) in script.iter().take(dropped_after).cloned() {
            outputs.extend(call.input(at_ms, input));
        }
        let before_drop = on_screen(&outputs);
        let drop_ms = script[..dropped_after]
            .last()
            .map_or(500, |(at_ms, _)| at_ms + 1);
        outputs.extend(call.input(
            drop_ms,
            Input::Transport(TransportInput::Closed("the connection failed".to_owned())),
        ));

        // The next call: placed at the machine's deadline, opened, its session confirmed.
        let redial_ms = call
            .machine
            .next_deadline_ms()
            .unwrap_or_else(|| panic!("dropped after input {dropped_after}: no redial"));
        let next_call = redial(&mut call);
        let given = given_to_the_new_call(&next_call);
        outputs.extend(next_call);

        // One more exchange, on the new call.
        let now_ms = redial_ms + 1_000;
        outputs.extend(call.input(now_ms, Input::SendMessage(UserMessage::text(TEXTS[6]))));
        for (at_ms, input) in reply(now_ms + 100, "resp_N1", "item_N1", TEXTS[7]) {
            outputs.extend(call.input(at_ms, input));
        }
        outputs.extend(call.input(now_ms + 2_000, Input::HangUp));

        let screen = on_screen(&outputs);
        assert_eq!(
            in_records(&outputs),
            screen,
            "dropped after input {dropped_after}: the records hold what the screen showed"
        );
        let messages = assembled(&screen, "the screen's", dropped_after);
        for text in TEXTS {
            let shown = messages
                .iter()
                .filter(|(_, content, _)| content == text)
                .count();
            assert!(
                shown <= 1,
                "dropped after input {dropped_after}: {text:?} shows {shown} times: {messages:?}"
            );
            let given_times = given.iter().filter(|(_, given)| given == text).count();
            assert!(
                given_times <= 1,
                "dropped after input {dropped_after}: {text:?} given {given_times} times"
            );
        }
        for text in &TEXTS[6..] {
            assert!(
                messages.iter().any(|(_, content, _)| content == text),
                "dropped after input {dropped_after}: the new call's {text:?} is shown: {messages:?}"
            );
        }
        let finished_before_drop = ended(&before_drop);
        for (role, content, id) in &messages {
            if !finished_before_drop.contains(id) || content.is_empty() {
                continue;
            }
            let given_times = given
                .iter()
                .filter(|(given_role, text)| role_name(*given_role) == role && text == content)
                .count();
            assert_eq!(
                given_times, 1,
                "dropped after input {dropped_after}: the finished {role} message {content:?} \
                 is given to the new call once: {given:?}"
            );
        }
    }
}
