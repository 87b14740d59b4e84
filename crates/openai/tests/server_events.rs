//! Decoding what the provider sends: the GA sequence of a push-to-talk turn, legacy names,
//! unknown events, and text that is not an event at all.

use walkie_openai::{
    ContentPart, DecodeError, ErrorDetail, Item, ResponseStatus, Role, ServerEvent, TextPosition,
    decode_server_event,
};

const PTT_TURN: &str = include_str!("data/ptt-turn-ga.jsonl");

fn decode(text: &str) -> ServerEvent {
    decode_server_event(text).unwrap_or_else(|error| panic!("{text} did not decode: {error}"))
}

#[test]
fn every_event_of_a_ga_push_to_talk_turn_decodes_to_its_type() {
    let types: Vec<String> = PTT_TURN
        .lines()
        .map(|line| decode(line).event_type().to_owned())
        .collect();
    let expected: Vec<String> = PTT_TURN
        .lines()
        .map(|line| {
            let value: serde_json::Value = serde_json::from_str(line).unwrap();
            value["type"].as_str().unwrap().to_owned()
        })
        .collect();
    assert_eq!(types, expected);
    assert!(types.iter().all(|t| t != "unknown"));
}

#[test]
fn the_turn_carries_the_ids_and_text_the_session_needs() {
    let events: Vec<ServerEvent> = PTT_TURN.lines().map(decode).collect();
    assert!(events.contains(&ServerEvent::InputAudioBufferCommitted {
        item_id: "item_U1".into(),
        previous_item_id: None,
    }));
    let deltas: String = events
        .iter()
        .filter_map(|event| match event {
            ServerEvent::OutputAudioTranscriptDelta { item_id, delta, .. }
                if item_id == "item_A1" =>
            {
                Some(delta.as_str())
            }
            _ => None,
        })
        .collect();
    assert_eq!(deltas, "I'm doing well, thank you!");
    assert!(events.contains(&ServerEvent::InputTranscriptionCompleted {
        item_id: "item_U1".into(),
        content_index: 0,
        transcript: "How are you?".into(),
        usage: Some(walkie_openai::TranscriptionUsage::Duration { seconds: 2.0 }),
    }));
    let done = events
        .iter()
        .find_map(|event| match event {
            ServerEvent::ResponseDone { response } => Some(response),
            _ => None,
        })
        .expect("the turn has a response.done");
    assert_eq!(done.id, "resp_R1");
    assert_eq!(done.status, ResponseStatus::Completed);
    assert_eq!(
        done.output,
        vec![Item::Message {
            id: Some("item_A1".into()),
            role: Role::Assistant,
            status: Some(walkie_openai::ItemStatus::Completed),
            content: vec![ContentPart::OutputAudio {
                transcript: Some("I'm doing well, thank you!".into())
            }],
        }]
    );
    assert_eq!(
        events.last(),
        Some(&ServerEvent::OutputAudioBufferStopped {
            response_id: "resp_R1".into()
        })
    );
}

#[test]
fn unknown_fields_such_as_obfuscation_are_ignored() {
    let event = decode(
        r#"{"type":"response.output_audio_transcript.delta","event_id":"e","response_id":"r","item_id":"i","output_index":0,"content_index":0,"delta":"hi","obfuscation":"SZo0PESyHqsCm","brand_new":{"x":1}}"#,
    );
    assert!(
        matches!(event, ServerEvent::OutputAudioTranscriptDelta { delta, .. } if delta == "hi")
    );
}

#[test]
fn legacy_beta_names_are_read_as_their_ga_meaning() {
    let transcript = decode(
        r#"{"type":"response.audio_transcript.delta","response_id":"r","item_id":"i","output_index":0,"content_index":0,"delta":"Hel"}"#,
    );
    assert_eq!(
        transcript.event_type(),
        "response.output_audio_transcript.delta"
    );

    let text = decode(
        r#"{"type":"response.text.done","response_id":"r","item_id":"i","output_index":0,"content_index":0,"text":"ok"}"#,
    );
    assert_eq!(text.event_type(), "response.output_text.done");

    let audio_done = decode(
        r#"{"type":"response.audio.done","response_id":"r","item_id":"i","output_index":0,"content_index":0}"#,
    );
    assert_eq!(audio_done.event_type(), "response.output_audio.done");

    let created = decode(
        r#"{"type":"conversation.item.created","previous_item_id":null,"item":{"id":"item_1","type":"message","role":"assistant","content":[{"type":"audio","transcript":"hi"}]}}"#,
    );
    match created {
        ServerEvent::ConversationItemAdded { item, .. } => assert_eq!(
            item,
            Item::Message {
                id: Some("item_1".into()),
                role: Role::Assistant,
                status: None,
                content: vec![ContentPart::OutputAudio {
                    transcript: Some("hi".into())
                }],
            }
        ),
        other => panic!("expected conversation.item.added, got {other:?}"),
    }
}

#[test]
fn an_unknown_event_type_is_kept_whole_and_is_not_an_error() {
    let text = r#"{"type":"mcp_list_tools.in_progress","event_id":"e9","item_id":"x"}"#;
    match decode(text) {
        ServerEvent::Unknown(unknown) => {
            assert_eq!(unknown.event_type, "mcp_list_tools.in_progress");
            assert_eq!(unknown.raw["item_id"], "x");
        }
        other => panic!("expected an unknown event, got {other:?}"),
    }
}

#[test]
fn malformed_json_is_a_syntax_error_that_points_at_the_problem() {
    let text = "{\"type\":\"error\",\n \"error\": {\"message\": oops}}";
    match decode_server_event(text) {
        Err(DecodeError::Syntax {
            position, snippet, ..
        }) => {
            assert_eq!(position.line, 2);
            assert!(text[position.byte_offset..].starts_with("oops}"));
            assert!(snippet.contains("oops"), "snippet {snippet:?}");
        }
        other => panic!("expected a syntax error, got {other:?}"),
    }
}

#[test]
fn text_cut_short_is_a_syntax_error_at_its_end() {
    let text = r#"{"type":"response.done","response":{"id":"#;
    match decode_server_event(text) {
        Err(DecodeError::Syntax {
            position: TextPosition { byte_offset, .. },
            ..
        }) => assert_eq!(byte_offset, text.len()),
        other => panic!("expected a syntax error, got {other:?}"),
    }
}

#[test]
fn a_known_event_missing_a_field_is_a_schema_error_naming_it() {
    let error =
        decode_server_event(r#"{"type":"input_audio_buffer.speech_started","audio_start_ms":120}"#)
            .unwrap_err();
    match &error {
        DecodeError::Schema {
            event_type,
            message,
            ..
        } => {
            assert_eq!(event_type, "input_audio_buffer.speech_started");
            assert!(message.contains("item_id"), "{message}");
        }
        other => panic!("expected a schema error, got {other:?}"),
    }
    assert!(
        error
            .to_string()
            .contains("input_audio_buffer.speech_started")
    );
}

#[test]
fn json_that_is_not_an_event_says_so() {
    for text in ["[1,2]", "42", r#"{"event_id":"e1"}"#, r#"{"type":7}"#] {
        assert!(
            matches!(
                decode_server_event(text),
                Err(DecodeError::NotAnEvent { .. })
            ),
            "{text}"
        );
    }
}

fn error_with(code: Option<&str>, message: &str) -> ErrorDetail {
    ErrorDetail {
        kind: "invalid_request_error".into(),
        code: code.map(str::to_owned),
        message: message.into(),
        param: None,
        event_id: None,
    }
}

#[test]
fn races_empty_requests_and_unknown_errors_are_recoverable() {
    for code in [
        "response_cancel_not_active",
        "input_audio_buffer_commit_empty",
        "conversation_already_has_active_response",
        "invalid_value",
        "server_error",
        "rate_limit_exceeded",
        "a_code_from_next_year",
    ] {
        assert!(error_with(Some(code), "x").is_recoverable(), "{code}");
    }
    assert!(error_with(None, "something else").is_recoverable());
}

#[test]
fn only_the_short_fatal_list_ends_the_session() {
    for (code, message) in [
        (
            "beta_api_shape_disabled",
            "The Realtime Beta API is no longer supported.",
        ),
        (
            "session_expired",
            "Your session hit the maximum duration of 60 minutes.",
        ),
        ("invalid_api_key", "Incorrect API key provided."),
        ("insufficient_quota", "You exceeded your current quota."),
    ] {
        assert!(!error_with(Some(code), message).is_recoverable(), "{code}");
    }
    assert!(
        !error_with(None, "Your session hit the maximum duration of 15 minutes.").is_recoverable(),
        "an expired session without its code"
    );
}

const OTHER_EVENTS: &str = include_str!("data/other-events-ga.jsonl");

#[test]
fn every_sample_event_names_its_own_type_and_survives_the_providers_encoding() {
    for line in PTT_TURN.lines().chain(OTHER_EVENTS.lines()) {
        let event = decode(line);
        let wire_type: serde_json::Value = serde_json::from_str(line).unwrap();
        assert_eq!(event.event_type(), wire_type["type"], "{line}");
        let encoded = event.to_json("event_x");
        assert_eq!(decode(&encoded), event, "{encoded}");
        let reread: serde_json::Value = serde_json::from_str(&encoded).unwrap();
        assert_eq!(reread["event_id"], "event_x");
    }
}

#[test]
fn a_session_restated_by_the_server_keeps_the_fields_walkie_does_not_model() {
    let ServerEvent::SessionCreated { session } = decode(OTHER_EVENTS.lines().next().unwrap())
    else {
        panic!("the first sample is session.created");
    };
    assert_eq!(session.other["id"], "sess_1");
    assert_eq!(session.other["expires_at"], 1767225600);
    let input = session.audio.unwrap().input.unwrap();
    assert_eq!(input.transcription, Some(None));
    assert!(matches!(
        input.turn_detection,
        Some(Some(walkie_openai::TurnDetection::ServerVad {
            silence_duration_ms: Some(500),
            ..
        }))
    ));
}

#[test]
fn an_error_always_carries_param_and_reads_without_it() {
    let event = ServerEvent::Error {
        error: error_with(Some("invalid_value"), "Invalid value."),
    };
    let wire: serde_json::Value = serde_json::from_str(&event.to_json("event_e")).unwrap();
    assert!(
        wire["error"]
            .as_object()
            .is_some_and(|error| error.get("param") == Some(&serde_json::Value::Null)),
        "the GA error shape carries \"param\": null: {wire}"
    );
    let mut with_param = error_with(Some("invalid_value"), "Invalid value.");
    with_param.param = Some("type".to_owned());
    let wire: serde_json::Value =
        serde_json::from_str(&ServerEvent::Error { error: with_param }.to_json("event_f")).unwrap();
    assert_eq!(wire["error"]["param"], "type");
    // Reading stays lenient: an error without `param` decodes, as one with null does.
    for text in [
        r#"{"type":"error","event_id":"e1","error":{"type":"server_error","message":"boom"}}"#,
        r#"{"type":"error","event_id":"e1","error":{"type":"server_error","message":"boom","param":null}}"#,
    ] {
        let ServerEvent::Error { error } = decode(text) else {
            panic!("{text} is an error event");
        };
        assert_eq!(error.param, None, "{text}");
        assert_eq!(error.message, "boom");
    }
}
