//! The wire format: camelCase fields, SCREAMING_SNAKE_CASE types, optional fields omitted,
//! explicit nulls rejected, unknown fields tolerated and unknown event types passed through.

use serde_json::json;
use walkie_agui::{Consumer, Event, Message, Mode, OtherKind, Role, Rule};

#[test]
fn events_encode_with_camel_case_fields_and_omit_absent_optionals() {
    let event = Event::from_value(&json!({"type": "TEXT_MESSAGE_START", "messageId": "m1"}))
        .expect("valid");
    assert_eq!(
        serde_json::to_value(&event).expect("encodes"),
        json!({"type": "TEXT_MESSAGE_START", "messageId": "m1"})
    );
}

#[test]
fn every_field_survives_a_decode_encode_round_trip() {
    let wire = json!({
        "type": "TEXT_MESSAGE_CHUNK", "messageId": "u1", "role": "user", "name": "ann", "delta": "Hi",
        "subagentRunId": "s1", "metadata": {"lang": "en"}, "timestamp": 1767225600000_i64, "rawEvent": {"x": 1}
    });
    let event = Event::from_value(&wire).expect("valid");
    assert_eq!(serde_json::to_value(&event).expect("encodes"), wire);
}

#[test]
fn explicit_null_on_an_optional_field_is_a_schema_error_naming_the_field() {
    for field in [
        "role",
        "name",
        "metadata",
        "rawEvent",
        "timestamp",
        "subagentRunId",
    ] {
        let mut wire = json!({"type": "TEXT_MESSAGE_START", "messageId": "m1"});
        wire[field] = serde_json::Value::Null;
        let error = Event::from_value(&wire).expect_err("null is rejected");
        assert_eq!(error.field.as_deref(), Some(field));
    }
}

#[test]
fn unknown_fields_are_tolerated_and_dropped() {
    let event = Event::from_value(
        &json!({"type": "TEXT_MESSAGE_END", "messageId": "m1", "futureField": 1}),
    )
    .expect("unknown fields are fine");
    assert_eq!(
        serde_json::to_value(&event).expect("encodes"),
        json!({"type": "TEXT_MESSAGE_END", "messageId": "m1"})
    );
}

#[test]
fn unknown_event_types_pass_through_verbatim_and_do_not_disturb_the_stream() {
    let wire = json!({"type": "HOLOGRAM_PROJECTED", "angle": 42});
    let event = Event::from_value(&wire).expect("unknown types decode");
    let Event::Other(other) = &event else {
        panic!("expected a pass-through event")
    };
    assert_eq!(other.kind, OtherKind::Unknown);
    assert_eq!(serde_json::to_value(&event).expect("encodes"), wire);

    // Even as the very first event it is not a lifecycle violation: it is ignored.
    let mut consumer = Consumer::new(Mode::Consumer);
    consumer.push(&event).expect("ignored");
    consumer
        .push_value(&json!({"type": "RUN_STARTED", "threadId": "t", "runId": "r"}))
        .expect("first real event");
}

#[test]
fn deserialize_goes_through_the_same_strict_decoder() {
    let event: Event =
        serde_json::from_str(r#"{"type":"TEXT_MESSAGE_CONTENT","messageId":"m1","delta":""}"#)
            .expect("valid");
    assert_eq!(event.type_name(), "TEXT_MESSAGE_CONTENT");
    let error = serde_json::from_str::<Event>(
        r#"{"type":"TEXT_MESSAGE_CONTENT","messageId":"m1","delta":null}"#,
    );
    assert!(error.is_err());
}

#[test]
fn history_messages_are_typed_by_role() {
    let roles = [
        ("assistant", Role::Assistant),
        ("user", Role::User),
        ("system", Role::System),
        ("developer", Role::Developer),
    ];
    for (wire_role, role) in roles {
        let message = Message::from_value(&json!({"id": "x", "role": wire_role, "content": "c"}))
            .expect("valid");
        assert_eq!(message.role(), Some(role));
        let typed = matches!(
            (&message, role),
            (Message::Assistant(_), Role::Assistant)
                | (Message::User(_), Role::User)
                | (Message::System(_), Role::System)
                | (Message::Developer(_), Role::Developer)
        );
        assert!(typed, "{wire_role} becomes its own message type");
    }
    let tool =
        Message::from_value(&json!({"id": "t", "role": "tool", "content": "r", "toolCallId": "c"}))
            .expect("valid");
    assert!(matches!(tool, Message::Other(_)));
    assert_eq!(
        serde_json::to_value(&tool).expect("encodes"),
        json!({"id": "t", "role": "tool", "content": "r", "toolCallId": "c"})
    );
}

#[test]
fn metadata_merges_per_key_with_the_last_write_winning_and_null_values_kept() {
    let mut consumer = Consumer::new(Mode::Strict);
    for event in [
        json!({"type": "RUN_STARTED", "threadId": "t", "runId": "r"}),
        json!({"type": "TEXT_MESSAGE_START", "messageId": "m1", "metadata": {"a": 1, "b": {"deep": 1}}}),
        json!({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "x", "metadata": {"b": {"other": 2}, "c": null}}),
        json!({"type": "TEXT_MESSAGE_END", "messageId": "m1", "metadata": {"a": 3}}),
        json!({"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}),
    ] {
        consumer.push_value(&event).expect("valid stream");
    }
    assert_eq!(
        consumer.messages()[0]
            .metadata()
            .cloned()
            .map(serde_json::Value::Object),
        Some(json!({"a": 3, "b": {"other": 2}, "c": null}))
    );
}

#[test]
fn a_violation_is_fatal_and_sticks() {
    let mut consumer = Consumer::new(Mode::Consumer);
    consumer
        .push_value(&json!({"type": "RUN_STARTED", "threadId": "t", "runId": "r"}))
        .expect("valid");
    let first = consumer
        .push_value(&json!({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "x"}))
        .expect_err("not open");
    assert_eq!((first.rule, first.event_index), (Rule::ContentNotOpen, 1));
    let again = consumer
        .push_value(&json!({"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}))
        .expect_err("still failed");
    assert_eq!(again, first);
}

#[test]
fn every_rule_has_a_distinct_conformance_id() {
    let ids: std::collections::HashSet<&str> = Rule::ALL.iter().map(|rule| rule.as_str()).collect();
    assert_eq!(ids.len(), Rule::ALL.len());
}

/// A tool-call event missing what it takes to apply it is a schema error naming the field.
#[test]
fn a_tool_call_event_without_its_ids_or_content_is_a_schema_error_naming_the_field() {
    let cases = [
        (
            r#"{"type":"TOOL_CALL_START","toolCallId":"c"}"#,
            "toolCallName",
        ),
        (
            r#"{"type":"TOOL_CALL_ARGS","toolCallId":"c","delta":7}"#,
            "delta",
        ),
        (r#"{"type":"TOOL_CALL_END"}"#, "toolCallId"),
        (
            r#"{"type":"TOOL_CALL_START","toolCallId":"c","toolCallName":"n","parentMessageId":null}"#,
            "parentMessageId",
        ),
        (
            r#"{"type":"TOOL_CALL_RESULT","messageId":"m","toolCallId":"c"}"#,
            "content",
        ),
        (
            r#"{"type":"TOOL_CALL_RESULT","messageId":"m","toolCallId":"c","content":"x","role":"user"}"#,
            "role",
        ),
    ];
    for (text, field) in cases {
        let error = Event::from_json_str(text).expect_err(text);
        assert_eq!(error.field.as_deref(), Some(field), "{text}: {error}");
    }
    assert!(
        Event::from_json_str(
            r#"{"type":"TOOL_CALL_RESULT","messageId":"m","toolCallId":"c","content":[{"type":"text","text":"x"}]}"#
        )
        .is_ok(),
        "content may be an array of parts"
    );
}

#[test]
fn text_shapes_a_value_cannot_hold_are_judged_like_the_value_they_parse_to() {
    // A JSON array is not an event, whatever it holds; the last of two equal keys counts; an
    // escaped delta is unescaped; a lone surrogate escape is not text; a huge timestamp is no
    // timestamp.
    let cases: [(&str, Result<serde_json::Value, Option<&str>>); 6] = [
        (r#"["TEXT_MESSAGE_END", "m1"]"#, Err(None)),
        (
            r#"{"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "a", "delta": "b"}"#,
            Ok(json!({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "b"})),
        ),
        (
            r#"{"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": null, "delta": "b"}"#,
            Ok(json!({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "b"})),
        ),
        (
            " \n{\"delta\": \"say \\\"hi\\\"\\n\", \"messageId\": \"m1\", \"type\": \"TEXT_MESSAGE_CONTENT\"}",
            Ok(json!({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "say \"hi\"\n"})),
        ),
        (
            r#"{"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "\ud800"}"#,
            Err(None),
        ),
        (
            r#"{"type": "TEXT_MESSAGE_END", "messageId": "m1", "timestamp": -9223372036854775808}"#,
            Err(Some("timestamp")),
        ),
    ];
    for (text, expected) in cases {
        let decoded = Event::from_json_str(text);
        match expected {
            Ok(wire) => assert_eq!(
                serde_json::to_value(decoded.expect("decodes")).expect("encodes"),
                wire,
                "{text}"
            ),
            Err(field) => {
                let error = decoded.expect_err(text);
                assert_eq!(error.field.as_deref(), field, "{text}: {}", error.message);
            }
        }
        let mut consumer = Consumer::new(Mode::Consumer);
        consumer
            .push_json(r#"{"type": "RUN_STARTED", "threadId": "t", "runId": "r"}"#)
            .expect("a run starts");
        consumer
            .push_json(r#"{"type": "TEXT_MESSAGE_START", "messageId": "m1"}"#)
            .expect("m1 opens");
        let pushed = consumer.push_json(text);
        assert_eq!(pushed.is_ok(), Event::from_json_str(text).is_ok(), "{text}");
    }
}
