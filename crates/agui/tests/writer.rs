//! The transcript writer turns speech and transcript signals into AG-UI events that Walkie's own
//! strict check accepts, with the user's message placed at their speech start.

mod common;

use common::{assert_passes_agui_verify_strict, strict_consumer, texts};
use walkie_agui::{Event, Speaker, TranscriptInput, TranscriptWriter, TurnId};

const T1: TurnId = TurnId(1);
const T2: TurnId = TurnId(2);

fn write(inputs: &[TranscriptInput<'_>]) -> Vec<Event> {
    let mut writer = TranscriptWriter::new("thread-1");
    let mut events = Vec::new();
    for (step, input) in inputs.iter().enumerate() {
        writer.push(1_000 + step as i64, *input, &mut events);
    }
    writer.finish(9_999, &mut events);
    events
}

fn owned(rows: &[(&str, &str, &str)]) -> Vec<(String, String, String)> {
    rows.iter()
        .map(|(a, b, c)| (a.to_string(), b.to_string(), c.to_string()))
        .collect()
}

fn types(events: &[Event]) -> Vec<&str> {
    events.iter().map(Event::type_name).collect()
}

#[test]
fn the_user_message_opens_at_speech_start_so_it_sits_before_the_reply() {
    use TranscriptInput::*;
    let events = write(&[
        SpeechStarted {
            turn: T1,
            speaker: Speaker::User,
        },
        SpeechStopped {
            turn: T1,
            speaker: Speaker::User,
        },
        TranscriptDelta {
            turn: T1,
            speaker: Speaker::Assistant,
            delta: "Hello",
        },
        TranscriptDelta {
            turn: T1,
            speaker: Speaker::User,
            delta: "Hi there",
        },
        TranscriptDone {
            turn: T1,
            speaker: Speaker::User,
            transcript: "Hi there",
        },
        TranscriptDone {
            turn: T1,
            speaker: Speaker::Assistant,
            transcript: "Hello!",
        },
        TurnComplete { turn: T1 },
    ]);
    assert_passes_agui_verify_strict(&events);
    let consumer = strict_consumer(&events);
    assert_eq!(
        texts(&consumer),
        owned(&[
            ("user-1", "user", "Hi there"),
            ("assistant-1", "assistant", "Hello!")
        ])
    );
    assert_eq!(
        &types(&events)[..3],
        ["RUN_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_END"]
    );
}

#[test]
fn a_late_transcript_reopens_the_closed_user_message_and_appends() {
    use TranscriptInput::*;
    let events = write(&[
        SpeechStarted {
            turn: T1,
            speaker: Speaker::User,
        },
        TranscriptDelta {
            turn: T1,
            speaker: Speaker::User,
            delta: "What's ",
        },
        SpeechStopped {
            turn: T1,
            speaker: Speaker::User,
        },
        TranscriptDelta {
            turn: T1,
            speaker: Speaker::User,
            delta: "the time?",
        },
        TranscriptDone {
            turn: T1,
            speaker: Speaker::User,
            transcript: "What's the time?",
        },
    ]);
    assert_passes_agui_verify_strict(&events);
    let starts = events
        .iter()
        .filter(|e| matches!(e, Event::TextMessageStart(s) if s.message_id == "user-1"))
        .count();
    assert_eq!(starts, 2, "the message was opened once and reopened once");
    assert_eq!(
        texts(&strict_consumer(&events)),
        owned(&[("user-1", "user", "What's the time?")])
    );
}

#[test]
fn a_transcript_arriving_after_its_turn_finished_lands_in_a_new_run_of_that_turn() {
    use TranscriptInput::*;
    let events = write(&[
        SpeechStarted {
            turn: T1,
            speaker: Speaker::User,
        },
        SpeechStopped {
            turn: T1,
            speaker: Speaker::User,
        },
        TranscriptDelta {
            turn: T1,
            speaker: Speaker::Assistant,
            delta: "Sure.",
        },
        TurnComplete { turn: T1 },
        TranscriptDone {
            turn: T1,
            speaker: Speaker::User,
            transcript: "Book a table",
        },
    ]);
    assert_passes_agui_verify_strict(&events);
    let run_ids: Vec<&str> = events
        .iter()
        .filter_map(|e| {
            if let Event::RunStarted(run) = e {
                Some(run.run_id.as_str())
            } else {
                None
            }
        })
        .collect();
    assert_eq!(run_ids, ["run-1", "run-1-2"]);
    assert_eq!(
        texts(&strict_consumer(&events)),
        owned(&[
            ("user-1", "user", "Book a table"),
            ("assistant-1", "assistant", "Sure.")
        ])
    );
}

#[test]
fn the_assistant_message_streams_one_content_event_per_token() {
    use TranscriptInput::*;
    let tokens = ["It", "'s", " ten", " past", " three", "."];
    let mut inputs = vec![SpeechStarted {
        turn: T1,
        speaker: Speaker::User,
    }];
    inputs.extend(tokens.iter().map(|token| TranscriptDelta {
        turn: T1,
        speaker: Speaker::Assistant,
        delta: token,
    }));
    let events = write(&inputs);
    assert_passes_agui_verify_strict(&events);
    let assistant_deltas: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            Event::TextMessageContent(content) if content.message_id == "assistant-1" => {
                Some(content.delta.as_str())
            }
            _ => None,
        })
        .collect();
    assert_eq!(assistant_deltas, tokens);
}

#[test]
fn a_revised_final_transcript_is_restated_by_a_snapshot_not_patched() {
    use TranscriptInput::*;
    let events = write(&[
        SpeechStarted {
            turn: T1,
            speaker: Speaker::User,
        },
        TranscriptDelta {
            turn: T1,
            speaker: Speaker::User,
            delta: "Wreck a nice",
        },
        TranscriptDelta {
            turn: T1,
            speaker: Speaker::Assistant,
            delta: "Okay",
        },
        TranscriptDone {
            turn: T1,
            speaker: Speaker::User,
            transcript: "Recognise speech",
        },
    ]);
    assert_passes_agui_verify_strict(&events);
    assert!(types(&events).contains(&"MESSAGES_SNAPSHOT"));
    assert_eq!(
        texts(&strict_consumer(&events)),
        owned(&[
            ("user-1", "user", "Recognise speech"),
            ("assistant-1", "assistant", "Okay")
        ])
    );
}

#[test]
fn a_barge_in_finishes_the_interrupted_turn_before_the_next_one_starts() {
    use TranscriptInput::*;
    let events = write(&[
        SpeechStarted {
            turn: T1,
            speaker: Speaker::User,
        },
        TranscriptDone {
            turn: T1,
            speaker: Speaker::User,
            transcript: "Tell me a story",
        },
        SpeechStarted {
            turn: T1,
            speaker: Speaker::Assistant,
        },
        TranscriptDelta {
            turn: T1,
            speaker: Speaker::Assistant,
            delta: "Once upon",
        },
        SpeechStarted {
            turn: T2,
            speaker: Speaker::User,
        },
        TranscriptDelta {
            turn: T1,
            speaker: Speaker::Assistant,
            delta: " a time",
        },
        TranscriptDone {
            turn: T2,
            speaker: Speaker::User,
            transcript: "Stop",
        },
    ]);
    assert_passes_agui_verify_strict(&events);
    assert_eq!(
        texts(&strict_consumer(&events)),
        owned(&[
            ("user-1", "user", "Tell me a story"),
            ("assistant-1", "assistant", "Once upon a time"),
            ("user-2", "user", "Stop"),
        ])
    );
}

#[test]
fn every_event_carries_the_time_of_the_signal_that_caused_it() {
    use TranscriptInput::*;
    let mut writer = TranscriptWriter::new("thread-1");
    let mut events = Vec::new();
    writer.push(
        1_234,
        SpeechStarted {
            turn: T1,
            speaker: Speaker::User,
        },
        &mut events,
    );
    let json = serde_json::to_value(&events).expect("events serialise");
    for event in json.as_array().expect("array") {
        assert_eq!(event["timestamp"], 1_234, "{event}");
    }
}

#[test]
fn empty_deltas_write_nothing() {
    use TranscriptInput::*;
    let mut writer = TranscriptWriter::new("thread-1");
    let mut events = Vec::new();
    writer.push(
        1,
        SpeechStarted {
            turn: T1,
            speaker: Speaker::User,
        },
        &mut events,
    );
    let before = events.len();
    writer.push(
        2,
        TranscriptDelta {
            turn: T1,
            speaker: Speaker::User,
            delta: "",
        },
        &mut events,
    );
    assert_eq!(events.len(), before);
}

#[test]
fn the_synthetic_benchmark_conversation_passes_strict_verification() {
    let events = walkie_agui::synthetic::conversation(5_000);
    assert!(events.len() >= 5_000);
    assert_passes_agui_verify_strict(&events);
    let consumer = strict_consumer(&events);
    assert!(
        consumer
            .messages()
            .iter()
            .all(|m| !m.content().unwrap_or_default().is_empty())
    );
}

#[test]
fn a_continued_transcript_restates_the_saved_messages_in_a_run_and_numbers_on() {
    use TranscriptInput::*;
    // The saved conversation's stream, ended (its last run finished).
    let mut saved = write(&[
        SpeechStarted {
            turn: T1,
            speaker: Speaker::User,
        },
        TranscriptDone {
            turn: T1,
            speaker: Speaker::User,
            transcript: "My cat is called Miso.",
        },
        TranscriptDone {
            turn: T1,
            speaker: Speaker::Assistant,
            transcript: "A lovely name.",
        },
        TurnComplete { turn: T1 },
    ]);
    let earlier: Vec<(String, walkie_agui::Role, String)> = strict_consumer(&saved)
        .messages()
        .iter()
        .map(|message| {
            (
                message.id().to_owned(),
                message.role().expect("a text message"),
                message.content().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    let mut writer = TranscriptWriter::continuing("thread-1", earlier);
    let mut continued = Vec::new();
    writer.restate(20_000, &mut continued);
    assert_eq!(
        types(&continued),
        ["RUN_STARTED", "MESSAGES_SNAPSHOT", "RUN_FINISHED"]
    );
    let next = TurnId(2);
    writer.push(
        20_100,
        SpeechStarted {
            turn: next,
            speaker: Speaker::User,
        },
        &mut continued,
    );
    writer.push(
        20_200,
        TranscriptDone {
            turn: next,
            speaker: Speaker::User,
            transcript: "What does it eat?",
        },
        &mut continued,
    );
    writer.finish(20_300, &mut continued);
    // The new view's stream, and the saved one followed by it, are both valid.
    assert_passes_agui_verify_strict(&continued);
    saved.extend(continued);
    assert_passes_agui_verify_strict(&saved);
    assert_eq!(
        texts(&strict_consumer(&saved)),
        owned(&[
            ("user-1", "user", "My cat is called Miso."),
            ("assistant-1", "assistant", "A lovely name."),
            ("user-2", "user", "What does it eat?"),
        ])
    );
}

/// A message's metadata (what a typed message showed) is stamped on its next event, kept by
/// a snapshot that restates the message, and kept by a writer that goes on from it.
#[test]
fn annotated_metadata_is_stamped_once_and_survives_restatements_and_continuing() {
    use TranscriptInput::*;
    let metadata: walkie_agui::JsonObject =
        serde_json::from_value(serde_json::json!({"pictures": [{"widthPx": 64}]})).unwrap();
    let user = Speaker::User;
    let mut writer = TranscriptWriter::new("thread-1");
    let mut events = Vec::new();
    for input in [
        SpeechStarted {
            turn: T1,
            speaker: user,
        },
        Annotate {
            turn: T1,
            speaker: user,
            metadata: &metadata,
        },
        TranscriptDone {
            turn: T1,
            speaker: user,
            transcript: "What is this?",
        },
    ] {
        writer.push(1_000, input, &mut events);
    }
    writer.finish(1_100, &mut events);
    assert_passes_agui_verify_strict(&events);
    let stamped: Vec<&str> = events
        .iter()
        .filter(|event| {
            serde_json::to_value(event).unwrap()["metadata"] == serde_json::json!(metadata)
        })
        .map(Event::type_name)
        .collect();
    assert_eq!(
        stamped,
        ["TEXT_MESSAGE_CONTENT"],
        "stamped on the next event alone"
    );
    let assembled = strict_consumer(&events);
    assert_eq!(assembled.messages()[0].metadata(), Some(&metadata));

    let mut restated = Vec::new();
    writer.restate(2_000, &mut restated);
    let snapshot = serde_json::to_value(&restated[1]).unwrap();
    assert_eq!(
        snapshot["messages"][0]["metadata"],
        serde_json::json!(metadata)
    );

    let earlier = writer
        .transcript()
        .map(|(id, role, text)| walkie_agui::EarlierMessage::Text {
            message_id: id.to_owned(),
            role,
            text: text.to_owned(),
            metadata: writer.metadata(id).cloned(),
        });
    let mut continued = TranscriptWriter::continuing("thread-1", earlier.collect::<Vec<_>>());
    let mut again = Vec::new();
    continued.restate(3_000, &mut again);
    let snapshot = serde_json::to_value(&again[1]).unwrap();
    assert_eq!(
        snapshot["messages"][0]["metadata"],
        serde_json::json!(metadata)
    );
}

/// A tool call and its result are written as AG-UI's tool-call events, inside the run of their
/// exchange (a new run when the exchange's run already finished), and a consumer assembles the
/// same history the writer restates: the call held by an assistant message, the result a tool
/// message answering it. A saved conversation goes on with both, and a repeated call id or a
/// second result is not written again.
#[test]
fn a_tool_call_and_its_result_are_tool_call_events_the_history_keeps() {
    use TranscriptInput::*;
    let mut writer = TranscriptWriter::new("thread-1");
    let mut events = Vec::new();
    for input in [
        SpeechStarted {
            turn: T1,
            speaker: Speaker::User,
        },
        TranscriptDone {
            turn: T1,
            speaker: Speaker::User,
            transcript: "What time is it?",
        },
        ToolCall {
            turn: T1,
            call_id: "call_7",
            tool_name: "clock__now",
            arguments: r#"{"zone":"UTC"}"#,
        },
        TurnComplete { turn: T1 },
        ToolResult {
            turn: T1,
            call_id: "call_7",
            content: r#"{"time":"12:00"}"#,
        },
        ToolCall {
            turn: T1,
            call_id: "call_7",
            tool_name: "clock__now",
            arguments: "{}",
        },
        ToolResult {
            turn: T1,
            call_id: "call_7",
            content: "again",
        },
        TranscriptDone {
            turn: T1,
            speaker: Speaker::Assistant,
            transcript: "It is noon.",
        },
    ] {
        writer.push(1_000, input, &mut events);
    }
    writer.finish(1_100, &mut events);
    assert_passes_agui_verify_strict(&events);
    assert_eq!(
        types(&events),
        [
            "RUN_STARTED",
            "TEXT_MESSAGE_START",
            "TEXT_MESSAGE_CONTENT",
            "TEXT_MESSAGE_END",
            "TOOL_CALL_START",
            "TOOL_CALL_ARGS",
            "TOOL_CALL_END",
            "RUN_FINISHED",
            "RUN_STARTED",
            "TOOL_CALL_RESULT",
            "TEXT_MESSAGE_START",
            "TEXT_MESSAGE_CONTENT",
            "TEXT_MESSAGE_END",
            "RUN_FINISHED",
        ]
    );
    let result = serde_json::to_value(&events[9]).unwrap();
    assert_eq!(
        result,
        serde_json::json!({
            "type": "TOOL_CALL_RESULT",
            "messageId": "call_7-result",
            "toolCallId": "call_7",
            "content": r#"{"time":"12:00"}"#,
            "role": "tool",
            "timestamp": 1_000,
        })
    );
    let assembled = serde_json::to_value(strict_consumer(&events).messages()).unwrap();
    assert_eq!(
        assembled,
        serde_json::json!([
            {"id": "user-1", "role": "user", "content": "What time is it?"},
            {"id": "call_7", "role": "assistant", "toolCalls": [{
                "id": "call_7", "type": "function",
                "function": {"name": "clock__now", "arguments": r#"{"zone":"UTC"}"#},
            }]},
            {"id": "call_7-result", "role": "tool", "content": r#"{"time":"12:00"}"#,
             "toolCallId": "call_7"},
            {"id": "assistant-1", "role": "assistant", "content": "It is noon."},
        ])
    );
    assert_eq!(serde_json::to_value(writer.messages()).unwrap(), assembled);

    let saved = strict_consumer(&events).messages().to_vec();
    let mut continued = TranscriptWriter::continuing(
        "thread-1",
        saved.into_iter().map(walkie_agui::EarlierMessage::from),
    );
    let mut again = Vec::new();
    continued.restate(3_000, &mut again);
    let mut with_restatement = events.clone();
    with_restatement.extend(again);
    assert_eq!(
        serde_json::to_value(strict_consumer(&with_restatement).messages()).unwrap(),
        assembled,
        "a restatement after continuing keeps the tool call and its result"
    );
    let mut repeated = Vec::new();
    continued.push(
        4_000,
        ToolCall {
            turn: T2,
            call_id: "call_7",
            tool_name: "clock__now",
            arguments: "{}",
        },
        &mut repeated,
    );
    assert!(
        repeated.is_empty(),
        "a call id already saved is not written again"
    );
}

#[test]
fn a_mark_is_a_custom_event_inside_its_messages_run_even_after_that_run_finished() {
    use TranscriptInput::*;
    let fields = walkie_agui::JsonObject::from_iter([(
        "latencyMs".to_owned(),
        serde_json::Value::from(310),
    )]);
    let events = write(&[
        TranscriptDelta {
            turn: T1,
            speaker: Speaker::Assistant,
            delta: "Once upon a time",
        },
        Mark {
            turn: T1,
            speaker: Speaker::Assistant,
            name: "walkie.latency",
            fields: &fields,
        },
        TurnComplete { turn: T1 },
        Mark {
            turn: T1,
            speaker: Speaker::Assistant,
            name: "walkie.interrupted",
            fields: &walkie_agui::JsonObject::new(),
        },
        // A message never written is not marked.
        Mark {
            turn: T2,
            speaker: Speaker::User,
            name: "walkie.cancelled",
            fields: &walkie_agui::JsonObject::new(),
        },
    ]);
    assert_passes_agui_verify_strict(&events);
    assert_eq!(
        types(&events),
        [
            "RUN_STARTED",
            "TEXT_MESSAGE_START",
            "TEXT_MESSAGE_CONTENT",
            "CUSTOM",
            "TEXT_MESSAGE_END",
            "RUN_FINISHED",
            "RUN_STARTED",
            "CUSTOM",
            "RUN_FINISHED",
        ]
    );
    let customs: Vec<serde_json::Value> = events
        .iter()
        .filter(|event| event.type_name() == "CUSTOM")
        .map(|event| serde_json::to_value(event).expect("events serialise"))
        .collect();
    assert_eq!(customs[0]["name"], "walkie.latency");
    assert_eq!(customs[0]["value"]["messageId"], "assistant-1");
    assert_eq!(customs[0]["value"]["latencyMs"], 310);
    assert_eq!(customs[1]["name"], "walkie.interrupted");
    assert_eq!(customs[1]["value"]["messageId"], "assistant-1");
}
