//! Lenient where Walkie does not care, strict where it does: events shaped as openai-python
//! 3.57's GA types describe them (`types/realtime/*.py`), carrying items, parts, tools and
//! settings this crate does not model, still decode; what Walkie reads stays typed; and an
//! event that ends something is never lost.

use serde_json::json;
use walkie_openai::{
    ContentPart, DecodeError, ImageDetail, Item, RateLimit, ResponseStatus, ServerEvent, Tool,
    Transcription, decode_client_event, decode_server_event,
};

/// `RealtimeResponse` of a finished reply whose `output` holds what Walkie does not model: an
/// MCP call (`RealtimeMcpToolCall`), a function call without `call_id`
/// (`RealtimeConversationItemFunctionCall.call_id` is optional), a user message with an
/// `input_image` part (modelled) and a part of a type Walkie does not know, and an assistant
/// message with a part without `type`.
fn response_done_with_unmodelled_output() -> serde_json::Value {
    json!({"type": "response.done", "event_id": "event_D1", "response": {
        "object": "realtime.response", "id": "resp_1", "status": "completed",
        "status_details": null, "conversation_id": "conv_1",
        "output_modalities": ["audio"], "max_output_tokens": "inf",
        "audio": {"output": {"format": {"type": "audio/pcm", "rate": 24000}, "voice": "marin"}},
        "output": [
            {"id": "item_A", "object": "realtime.item", "type": "message", "role": "assistant",
             "status": "completed", "content": [
                {"type": "output_audio", "transcript": "Hello."},
                {"transcript": "a part without a type"}]},
            {"id": "item_F", "object": "realtime.item", "type": "function_call",
             "status": "completed", "name": "lookup", "arguments": "{}"},
            {"id": "item_M", "type": "mcp_call", "server_label": "deepwiki", "name": "ask",
             "arguments": "{\"q\":1}", "output": "42", "error": null, "approval_request_id": null},
            {"id": "item_U", "type": "message", "role": "user", "content": [
                {"type": "input_image", "image_url": "data:image/png;base64,AAAA", "detail": "auto"},
                {"type": "input_file", "file_id": "file_1"}]}
        ],
        "usage": {"total_tokens": 10, "input_tokens": 4, "output_tokens": 6,
            "input_token_details": {"text_tokens": 4, "audio_tokens": 0, "image_tokens": 0,
                "cached_tokens": 0, "cached_tokens_details": {"text_tokens": 0, "audio_tokens": 0, "image_tokens": 0}},
            "output_token_details": {"text_tokens": 2, "audio_tokens": 4}},
        "metadata": null}})
}

#[test]
fn a_response_done_with_mcp_items_images_and_a_call_without_call_id_still_ends_its_response() {
    let text = response_done_with_unmodelled_output().to_string();
    let ServerEvent::ResponseDone { response } = decode_server_event(&text).expect("decodes")
    else {
        panic!("a response.done");
    };
    assert_eq!(response.id, "resp_1");
    assert_eq!(response.status, ResponseStatus::Completed);
    let [assistant, call, mcp, user] = &response.output[..] else {
        panic!("four items: {:?}", response.output);
    };
    let Item::Message { content, .. } = assistant else {
        panic!("the assistant message stays typed: {assistant:?}");
    };
    assert_eq!(
        content[0],
        ContentPart::OutputAudio {
            transcript: Some("Hello.".to_owned())
        }
    );
    assert_eq!(
        content[1],
        ContentPart::Other(json!({"transcript": "a part without a type"}))
    );
    assert!(
        matches!(call, Item::Other(raw) if raw["name"] == "lookup"),
        "{call:?}"
    );
    assert!(
        matches!(mcp, Item::Other(raw) if raw["server_label"] == "deepwiki"),
        "{mcp:?}"
    );
    assert_eq!(mcp.id(), Some("item_M"), "an unmodelled item keeps its id");
    let Item::Message { content, .. } = user else {
        panic!("the user message stays typed: {user:?}");
    };
    assert_eq!(
        content[0],
        ContentPart::InputImage {
            image_url: "data:image/png;base64,AAAA".to_owned(),
            detail: Some(ImageDetail::Auto)
        },
        "a picture the user showed is read"
    );
    assert!(
        matches!(&content[1], ContentPart::Other(raw) if raw["type"] == "input_file"),
        "a part this crate does not model is kept whole: {:?}",
        content[1]
    );
}

#[test]
fn a_response_done_reads_its_usage_by_modality_and_a_malformed_usage_as_none() {
    let decoded = decode_server_event(&response_done_with_unmodelled_output().to_string());
    let Ok(ServerEvent::ResponseDone { response }) = decoded else {
        panic!("a response.done: {decoded:?}");
    };
    let usage = response.usage.expect("the usage is read");
    assert_eq!(
        (usage.total_tokens, usage.input_tokens, usage.output_tokens),
        (Some(10), Some(4), Some(6))
    );
    let output = usage.output_token_details.expect("the output by modality");
    assert_eq!(
        (output.text_tokens, output.audio_tokens),
        (Some(2), Some(4))
    );
    let input = usage.input_token_details.expect("the input by modality");
    assert_eq!(input.text_tokens, Some(4));
    assert_eq!(
        input
            .cached_tokens_details
            .and_then(|cached| cached.audio_tokens),
        Some(0)
    );

    for malformed in [json!(-1), json!({"input_tokens": -4}), json!([1, 2])] {
        let mut event = response_done_with_unmodelled_output();
        event["response"]["usage"] = malformed.clone();
        let decoded = decode_server_event(&event.to_string());
        let Ok(ServerEvent::ResponseDone { response }) = decoded else {
            panic!("{malformed}: the response still ends: {decoded:?}");
        };
        assert_eq!(response.usage, None, "{malformed}");
        assert_eq!(response.id, "resp_1", "{malformed}");
    }
}

#[test]
fn unknown_modalities_in_a_response_do_not_lose_it() {
    let mut event = response_done_with_unmodelled_output();
    event["response"]["output_modalities"] = json!(["audio", "video"]);
    let decoded = decode_server_event(&event.to_string()).expect("decodes");
    assert!(
        matches!(&decoded, ServerEvent::ResponseDone { response } if response.id == "resp_1" && response.output_modalities.is_none()),
        "{decoded:?}"
    );
}

#[test]
fn a_response_done_that_does_not_match_the_protocol_still_ends_its_response() {
    for (what, mutate) in [
        (
            "a number beyond f64 in its usage",
            Box::new(|event: &mut serde_json::Value| {
                event["response"]["usage"] = json!("USAGE");
            }) as Box<dyn Fn(&mut serde_json::Value)>,
        ),
        (
            "an odd status_details",
            Box::new(|event: &mut serde_json::Value| {
                event["response"]["status_details"] = json!(["cancelled"]);
            }),
        ),
        (
            "an output that is no list",
            Box::new(|event: &mut serde_json::Value| {
                event["response"]["output"] = json!({"item": 1});
            }),
        ),
    ] {
        let mut event = response_done_with_unmodelled_output();
        event["response"]["status"] = json!("cancelled");
        mutate(&mut event);
        let text = event
            .to_string()
            .replace("\"USAGE\"", r#"{"total_tokens":1e999,"s":"\ud800"}"#);
        let decoded = decode_server_event(&text).unwrap_or_else(|error| panic!("{what}: {error}"));
        let ServerEvent::ResponseDone { response } = decoded else {
            panic!("{what}: {decoded:?}");
        };
        assert_eq!(response.id, "resp_1", "{what}");
        assert_eq!(response.status, ResponseStatus::Cancelled, "{what}");
    }
}

#[test]
fn a_response_created_that_does_not_match_the_protocol_still_names_its_response() {
    let text = r#"{"type":"response.created","event_id":"e","response":{"id":"resp_2","status":"queued","output":{"x":1e999}}}"#;
    let decoded = decode_server_event(text).expect("decodes");
    assert!(
        matches!(&decoded, ServerEvent::ResponseCreated { response }
            if response.id == "resp_2" && response.status == ResponseStatus::InProgress),
        "{decoded:?}"
    );
}

/// The minimal instances the oracle builds from openai-python 3.57's models, where every field
/// of `RealtimeResponse` is optional: `"response": {}`.
#[test]
fn a_response_done_or_created_without_any_response_field_decodes_with_an_empty_id() {
    let done = r#"{"event_id":"event_001","response":{},"type":"response.done"}"#;
    assert!(matches!(decode_server_event(done).expect("decodes"),
            ServerEvent::ResponseDone { response } if response.id.is_empty() && response.status == ResponseStatus::Completed));
    let created = r#"{"event_id":"event_001","response":{},"type":"response.created"}"#;
    assert!(matches!(decode_server_event(created).expect("decodes"),
            ServerEvent::ResponseCreated { response } if response.id.is_empty() && response.status == ResponseStatus::InProgress));
}

#[test]
fn a_failed_response_done_without_an_id_keeps_its_status_details() {
    let text = json!({"type": "response.done", "event_id": "e", "response": {"status": "failed",
        "status_details": {"type": "failed", "error": {"type": "server_error", "code": "overloaded"}}}});
    let ServerEvent::ResponseDone { response } =
        decode_server_event(&text.to_string()).expect("decodes")
    else {
        panic!("a response.done");
    };
    assert_eq!(response.id, "");
    assert_eq!(response.status, ResponseStatus::Failed);
    let details = response.status_details.expect("read");
    assert_eq!(details.error.expect("read")["code"], "overloaded");
}

#[test]
fn a_response_done_without_an_id_that_does_not_match_the_protocol_still_ends_a_response() {
    let mut event = response_done_with_unmodelled_output();
    event["response"]
        .as_object_mut()
        .expect("an object")
        .remove("id");
    event["response"]["status"] = json!("cancelled");
    event["response"]["output"] = json!(7);
    let decoded = decode_server_event(&event.to_string()).expect("a terminal event is never lost");
    assert!(
        matches!(&decoded, ServerEvent::ResponseDone { response }
            if response.id.is_empty() && response.status == ResponseStatus::Cancelled),
        "{decoded:?}"
    );
}

#[test]
fn a_transcription_delta_without_a_delta_adds_nothing() {
    let text = r#"{"event_id":"event_001","item_id":"item_001","type":"conversation.item.input_audio_transcription.delta"}"#;
    assert_eq!(
        decode_server_event(text).expect("decodes"),
        ServerEvent::InputTranscriptionDelta {
            item_id: "item_001".to_owned(),
            content_index: 0,
            delta: String::new(),
        }
    );
}

#[test]
fn a_failed_transcription_with_an_empty_error_still_fails_its_item() {
    let text = r#"{"content_index":1,"error":{},"event_id":"event_001","item_id":"item_001","type":"conversation.item.input_audio_transcription.failed"}"#;
    let ServerEvent::InputTranscriptionFailed {
        item_id,
        content_index,
        error,
    } = decode_server_event(text).expect("decodes")
    else {
        panic!("a failed transcription");
    };
    assert_eq!((item_id.as_str(), content_index), ("item_001", 1));
    assert_eq!((error.kind.as_str(), error.message.as_str()), ("", ""));
    assert_eq!(
        (error.code, error.param, error.event_id),
        (None, None, None)
    );
}

#[test]
fn rate_limits_with_missing_fields_read_as_absent_not_as_zero() {
    let text = r#"{"event_id":"event_001","rate_limits":[{},{"name":"tokens","limit":100,"remaining":40,"reset_seconds":1.5}],"type":"rate_limits.updated"}"#;
    let ServerEvent::RateLimitsUpdated { rate_limits } =
        decode_server_event(text).expect("decodes")
    else {
        panic!("a rate_limits.updated");
    };
    assert_eq!(
        rate_limits,
        [
            RateLimit {
                name: None,
                limit: None,
                remaining: None,
                reset_seconds: None
            },
            RateLimit {
                name: Some("tokens".to_owned()),
                limit: Some(100),
                remaining: Some(40),
                reset_seconds: Some(1.5)
            }
        ]
    );
}

#[test]
fn buffer_events_with_an_odd_response_id_still_end_the_audio() {
    let stopped =
        json!({"type": "output_audio_buffer.stopped", "event_id": "e", "response_id": 42});
    assert_eq!(
        decode_server_event(&stopped.to_string()).expect("decodes"),
        ServerEvent::OutputAudioBufferStopped {
            response_id: String::new()
        }
    );
    let cleared = json!({"type": "output_audio_buffer.cleared", "event_id": "e"});
    assert_eq!(
        decode_server_event(&cleared.to_string()).expect("decodes"),
        ServerEvent::OutputAudioBufferCleared {
            response_id: String::new()
        }
    );
    let done = json!({"type": "response.output_audio.done", "event_id": "e", "response_id": "resp_1",
        "item_id": "item_A", "output_index": "zero", "content_index": 0});
    assert!(matches!(
        decode_server_event(&done.to_string()).expect("decodes"),
        ServerEvent::OutputAudioDone { response_id, item_id, .. } if response_id == "resp_1" && item_id == "item_A"
    ));
}

/// `RealtimeSessionCreateResponse` with an MCP tool, a custom voice given as an object, and a
/// turn detection type from a newer server.
fn session_updated_with_unmodelled_settings() -> serde_json::Value {
    json!({"type": "session.updated", "event_id": "event_S1", "session": {
        "type": "realtime", "object": "realtime.session", "id": "sess_1",
        "model": "gpt-realtime", "output_modalities": ["audio"],
        "instructions": "Be brief.",
        "audio": {
            "input": {"format": {"type": "audio/pcm", "rate": 24000},
                "transcription": {"model": "gpt-4o-mini-transcribe", "language": "en"},
                "noise_reduction": {"type": "near_field"},
                "turn_detection": {"type": "future_vad", "sensitivity": 3}},
            "output": {"format": {"type": "audio/pcm", "rate": 24000},
                "voice": {"id": "voice_custom_1"}, "speed": 1.0}},
        "tools": [
            {"type": "function", "name": "lookup", "description": "Look up", "parameters": {"type": "object"}},
            {"type": "mcp", "server_label": "deepwiki", "server_url": "https://mcp.deepwiki.com/mcp",
             "require_approval": "never"}],
        "tool_choice": "auto", "max_output_tokens": "inf", "tracing": null,
        "truncation": "auto", "prompt": null, "expires_at": 0, "include": null}})
}

#[test]
fn a_session_with_mcp_tools_a_voice_object_and_a_new_vad_keeps_what_walkie_reads() {
    let text = session_updated_with_unmodelled_settings().to_string();
    let ServerEvent::SessionUpdated { session } = decode_server_event(&text).expect("decodes")
    else {
        panic!("a session.updated");
    };
    let input = session
        .audio
        .as_ref()
        .and_then(|audio| audio.input.as_ref())
        .expect("audio.input is read");
    assert!(
        matches!(&input.transcription, Some(Some(Transcription { model, .. })) if model == "gpt-4o-mini-transcribe"),
        "the transcription setting Walkie reads survives: {input:?}"
    );
    assert_eq!(session.instructions.as_deref(), Some("Be brief."));
    assert_eq!(
        session.other["audio.input.turn_detection"],
        json!({"type": "future_vad", "sensitivity": 3}),
        "kept raw"
    );
    assert_eq!(
        session.other["audio.output.voice"],
        json!({"id": "voice_custom_1"})
    );
    let tools = session.tools.as_ref().expect("tools are read");
    assert!(matches!(&tools[0], Tool::Function { name, .. } if name == "lookup"));
    assert!(matches!(&tools[1], Tool::Other(raw) if raw["type"] == "mcp"));
}

#[test]
fn a_session_created_with_the_same_settings_is_read_too() {
    let mut event = session_updated_with_unmodelled_settings();
    event["type"] = json!("session.created");
    assert!(matches!(
        decode_server_event(&event.to_string()).expect("decodes"),
        ServerEvent::SessionCreated { session } if session.model.as_deref() == Some("gpt-realtime")
    ));
}

#[test]
fn events_whose_fields_walkie_reads_stay_strict() {
    let delta = json!({"type": "response.output_audio_transcript.delta", "event_id": "e",
        "response_id": "resp_1", "item_id": "item_A", "output_index": 0, "content_index": 0});
    let error = decode_server_event(&delta.to_string()).expect_err("no delta");
    assert!(matches!(error, DecodeError::Schema { .. }), "{error:?}");
    let started = json!({"type": "input_audio_buffer.speech_started", "event_id": "e",
        "audio_start_ms": "soon", "item_id": "item_U"});
    let error = decode_server_event(&started.to_string()).expect_err("not a number");
    assert!(matches!(error, DecodeError::Schema { .. }), "{error:?}");
}

#[test]
fn a_client_sending_what_is_only_kept_raw_from_the_server_gets_a_schema_error_at_the_field() {
    for (text, field) in [
        (
            r#"{"type":"conversation.item.create","item":{"type":"function_call_output","output":"{}"}}"#,
            "\"item\"",
        ),
        (
            r#"{"type":"conversation.item.create","item":{"type":"message","role":"user","content":[{"type":"input_image","detail":"low"}]}}"#,
            "\"content\"",
        ),
        (
            r#"{"type":"session.update","session":{"type":"realtime","tools":[{"type":"mcp","server_label":"x"}]}}"#,
            "\"tools\"",
        ),
    ] {
        let error = decode_client_event(text).expect_err(text);
        let DecodeError::Schema { position, .. } = &error else {
            panic!("{text}: {error:?}");
        };
        assert!(text[position.byte_offset..].starts_with(field), "{error}");
    }
    let (_, event) = decode_client_event(
        r#"{"type":"conversation.item.create","item":{"type":"function_call_output","call_id":"c1","output":"{}"}}"#,
    )
    .expect("a modelled item decodes");
    assert_eq!(event.event_type(), "conversation.item.create");
}
