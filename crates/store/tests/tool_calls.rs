//! A tool call the model made, and what it gave, are saved with the conversation: transcript.md
//! says which tool was called with what and what it answered, transcript.json holds them as
//! AG-UI's client assembles them, and both read back the same from the journal.

mod support;

use std::fs;

use support::scripted_conversation::{Feed, START_UNIX_MS, config};
use walkie_session::{
    EnqueuedMessage, EnqueuedMessagesEvent, FunctionToolResultEvent, Part, PartEndEvent, PartIndex,
    PartStartEvent, SessionEvent, StampedEvent, TextPart, ToolCallPart, ToolOutcome, ToolResult,
    ToolReturnPart, UserContent,
};
use walkie_store::files::{TRANSCRIPT_JSON_FILE, TRANSCRIPT_MD_FILE};
use walkie_store::{Recorder, Store};

fn feed_all(recorder: &mut Recorder, feed: &mut Feed, events: Vec<SessionEvent>) {
    for (step, event) in events.into_iter().enumerate() {
        let seq = step as u64 + 1;
        let stamped = StampedEvent {
            seq,
            at_ms: seq * 100,
            event,
        };
        feed.event(recorder, &stamped, START_UNIX_MS + 1_000 * seq as i64);
    }
}

#[test]
fn a_tool_call_and_its_answer_are_saved_in_both_transcripts_and_read_back_the_same() {
    let root = tempfile::tempdir().expect("a temporary root");
    let store = Store::new(root.path());
    let mut recorder = store
        .start(config(), START_UNIX_MS)
        .expect("the recorder starts");
    let mut feed = Feed::new(&recorder);
    let call = ToolCallPart {
        tool_name: "files__read".to_owned(),
        args: r#"{"path":"notes`s.txt"}"#.to_owned(),
        tool_call_id: "call_1".to_owned(),
    };
    let reply = Part::Text(TextPart {
        content: "Your notes say: buy milk.".to_owned(),
    });
    feed_all(
        &mut recorder,
        &mut feed,
        vec![
            SessionEvent::EnqueuedMessages(Box::new(EnqueuedMessagesEvent {
                enqueue_id: "evt_1".to_owned(),
                messages: vec![EnqueuedMessage {
                    parts: vec![UserContent::Text {
                        content: "What do my notes say?".to_owned(),
                    }],
                }],
            })),
            SessionEvent::PartStart(PartStartEvent {
                index: PartIndex(0),
                part: Part::tool_call(call.clone()),
            }),
            SessionEvent::PartEnd(PartEndEvent {
                index: PartIndex(0),
                part: Part::tool_call(call),
            }),
            SessionEvent::FunctionToolResult(Box::new(FunctionToolResultEvent {
                result: ToolResult::ToolReturn(ToolReturnPart {
                    tool_name: "files__read".to_owned(),
                    tool_call_id: "call_1".to_owned(),
                    content: serde_json::Value::String("buy milk".to_owned()),
                    outcome: ToolOutcome::Success,
                }),
            })),
            SessionEvent::PartStart(PartStartEvent {
                index: PartIndex(1),
                part: Part::Text(TextPart::default()),
            }),
            SessionEvent::PartEnd(PartEndEvent {
                index: PartIndex(1),
                part: reply,
            }),
            SessionEvent::TurnComplete,
        ],
    );
    feed.close(&mut recorder, START_UNIX_MS + 10_000)
        .expect("the close saves");
    let dir = recorder.dir().to_owned();

    let markdown = fs::read_to_string(dir.join(TRANSCRIPT_MD_FILE)).unwrap();
    let expected_call = "Called ` files__read ` with\n\n```\n{\"path\":\"notes`s.txt\"}\n```\n";
    let expected_answer = "**Tool** · ";
    assert!(markdown.contains(expected_call), "{markdown}");
    assert!(markdown.contains(expected_answer), "{markdown}");
    assert!(
        markdown.contains("Answered\n\n```\nbuy milk\n```\n"),
        "{markdown}"
    );
    assert!(!markdown.contains("no transcript"), "{markdown}");
    let order: Vec<usize> = [
        "What do my notes say?",
        "files__read",
        "buy milk",
        "Your notes say",
    ]
    .iter()
    .map(|text| markdown.find(text).expect(text))
    .collect();
    assert!(order.windows(2).all(|pair| pair[0] < pair[1]), "{markdown}");

    let json: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(dir.join(TRANSCRIPT_JSON_FILE)).unwrap()).unwrap();
    let messages = json["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 4, "{messages:#?}");
    assert_eq!(
        messages[1],
        serde_json::json!({"id": "call_1", "role": "assistant", "toolCalls": [{
            "id": "call_1", "type": "function",
            "function": {"name": "files__read", "arguments": r#"{"path":"notes`s.txt"}"#},
        }]})
    );
    assert_eq!(
        messages[2],
        serde_json::json!({"id": "call_1-result", "role": "tool", "content": "buy milk",
                           "toolCallId": "call_1"})
    );

    let reopened = store.open(recorder.id()).expect("the conversation opens");
    assert_eq!(reopened.render_markdown(true), markdown);
}
