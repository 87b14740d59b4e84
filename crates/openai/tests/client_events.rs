//! What Walkie sends: exactly the GA shapes, and the local provider's reading of them.

use serde_json::{Value, json};
use walkie_openai::{
    AudioConfig, AudioFormat, AudioInput, AudioOutput, ClientEvent, DecodeError, Item, Modality,
    SessionConfig, Tool, Transcription, decode_client_event,
};

fn wire(event: &ClientEvent, event_id: Option<&str>) -> Value {
    serde_json::from_str(&event.to_json(event_id)).unwrap()
}

fn push_to_talk_session() -> SessionConfig {
    SessionConfig {
        model: Some("gpt-realtime".into()),
        instructions: Some("You are a concise desktop assistant.".into()),
        output_modalities: Some(vec![Modality::Audio]),
        audio: Some(AudioConfig {
            input: Some(AudioInput {
                format: Some(AudioFormat::pcm_24khz()),
                noise_reduction: None,
                transcription: Some(Some(Transcription {
                    model: "gpt-4o-mini-transcribe".into(),
                    language: None,
                    prompt: None,
                    ..Transcription::default()
                })),
                turn_detection: Some(None),
            }),
            output: Some(AudioOutput {
                format: None,
                voice: Some("marin".into()),
                speed: None,
            }),
        }),
        tools: Some(vec![Tool::Function {
            name: "get_time".into(),
            description: Some("Current local time".into()),
            parameters: json!({"type": "object", "properties": {}, "required": []}),
        }]),
        ..SessionConfig::default()
    }
}

#[test]
fn a_push_to_talk_session_update_is_the_ga_shape_with_turn_detection_null() {
    let event = ClientEvent::SessionUpdate {
        session: Box::new(push_to_talk_session()),
    };
    assert_eq!(
        wire(&event, Some("cli_001")),
        json!({
            "type": "session.update",
            "event_id": "cli_001",
            "session": {
                "type": "realtime",
                "model": "gpt-realtime",
                "instructions": "You are a concise desktop assistant.",
                "output_modalities": ["audio"],
                "audio": {
                    "input": {
                        "format": {"type": "audio/pcm", "rate": 24000},
                        "transcription": {"model": "gpt-4o-mini-transcribe"},
                        "turn_detection": null
                    },
                    "output": {"voice": "marin"}
                },
                "tools": [{"type": "function", "name": "get_time", "description": "Current local time",
                           "parameters": {"type": "object", "properties": {}, "required": []}}]
            }
        })
    );
}

#[test]
fn fields_left_as_they_are_are_omitted_and_cleared_fields_are_null() {
    let leave = ClientEvent::SessionUpdate {
        session: Box::new(SessionConfig {
            audio: Some(AudioConfig {
                input: Some(AudioInput::default()),
                output: None,
            }),
            ..SessionConfig::default()
        }),
    };
    assert_eq!(
        wire(&leave, None),
        json!({"type": "session.update", "session": {"type": "realtime", "audio": {"input": {}}}})
    );
    let clear = ClientEvent::SessionUpdate {
        session: Box::new(SessionConfig {
            audio: Some(AudioConfig {
                input: Some(AudioInput {
                    transcription: Some(None),
                    ..AudioInput::default()
                }),
                output: None,
            }),
            ..SessionConfig::default()
        }),
    };
    assert_eq!(
        wire(&clear, None)["session"]["audio"]["input"],
        json!({"transcription": null})
    );
}

#[test]
fn the_turn_events_are_the_bare_ga_shapes() {
    assert_eq!(
        wire(&ClientEvent::InputAudioBufferClear, Some("e1")),
        json!({"type": "input_audio_buffer.clear", "event_id": "e1"})
    );
    assert_eq!(
        ClientEvent::InputAudioBufferCommit.to_json(None),
        r#"{"type":"input_audio_buffer.commit"}"#
    );
    assert_eq!(
        ClientEvent::ResponseCreate { response: None }.to_json(Some("e2")),
        r#"{"event_id":"e2","type":"response.create"}"#
    );
    assert_eq!(
        wire(&ClientEvent::ResponseCancel { response_id: None }, None),
        json!({"type": "response.cancel"})
    );
    assert_eq!(
        wire(&ClientEvent::OutputAudioBufferClear, None),
        json!({"type": "output_audio_buffer.clear"})
    );
    assert_eq!(
        wire(
            &ClientEvent::ConversationItemTruncate {
                item_id: "item_A1".into(),
                content_index: 0,
                audio_end_ms: 1500
            },
            None
        ),
        json!({"type": "conversation.item.truncate", "item_id": "item_A1", "content_index": 0, "audio_end_ms": 1500})
    );
    assert_eq!(
        wire(
            &ClientEvent::ConversationItemCreate {
                previous_item_id: None,
                item: Item::function_call_output("call_1", r#"{"time":"10:42"}"#)
            },
            None
        ),
        json!({"type": "conversation.item.create",
               "item": {"type": "function_call_output", "call_id": "call_1", "output": "{\"time\":\"10:42\"}"}})
    );
}

#[test]
fn every_client_event_reads_back_as_itself_with_its_event_id() {
    let events = vec![
        ClientEvent::SessionUpdate {
            session: Box::new(push_to_talk_session()),
        },
        ClientEvent::InputAudioBufferAppend {
            audio: "AAAA".into(),
        },
        ClientEvent::InputAudioBufferClear,
        ClientEvent::InputAudioBufferCommit,
        ClientEvent::OutputAudioBufferClear,
        ClientEvent::ResponseCreate { response: None },
        ClientEvent::ResponseCancel {
            response_id: Some("resp_1".into()),
        },
        ClientEvent::ConversationItemCreate {
            previous_item_id: Some("root".into()),
            item: Item::user_text("hello"),
        },
        ClientEvent::ConversationItemTruncate {
            item_id: "item_1".into(),
            content_index: 0,
            audio_end_ms: 10,
        },
        ClientEvent::ConversationItemDelete {
            item_id: "item_1".into(),
        },
        ClientEvent::ConversationItemRetrieve {
            item_id: "item_1".into(),
        },
    ];
    for (index, event) in events.into_iter().enumerate() {
        let id = format!("cli_{index}");
        let text = event.to_json(Some(&id));
        assert_eq!(wire(&event, None)["type"], event.event_type());
        assert_eq!(decode_client_event(&text), Ok((Some(id), event)));
    }
}

#[test]
fn a_beta_session_update_is_refused_as_a_beta_shape() {
    let flat = r#"{"type":"session.update","session":{"modalities":["audio","text"],"voice":"verse","turn_detection":null}}"#;
    match decode_client_event(flat) {
        Err(DecodeError::BetaShape { event_type, reason }) => {
            assert_eq!(event_type, "session.update");
            assert!(
                reason.contains("modalities") && reason.contains("voice"),
                "{reason}"
            );
        }
        other => panic!("expected a beta shape error, got {other:?}"),
    }
    let untyped = r#"{"type":"session.update","session":{"instructions":"hi"}}"#;
    assert!(matches!(
        decode_client_event(untyped),
        Err(DecodeError::BetaShape { .. })
    ));
    let beta_response = r#"{"type":"response.create","response":{"modalities":["text"]}}"#;
    assert!(matches!(
        decode_client_event(beta_response),
        Err(DecodeError::BetaShape { .. })
    ));
    let beta_only = r#"{"type":"transcription_session.update","session":{}}"#;
    assert!(matches!(
        decode_client_event(beta_only),
        Err(DecodeError::BetaShape { .. })
    ));
}

#[test]
fn a_type_outside_the_ga_client_union_is_refused_by_name() {
    assert_eq!(
        decode_client_event(r#"{"type":"session.created","session":{"type":"realtime"}}"#),
        Err(DecodeError::UnknownClientEvent {
            event_type: "session.created".into()
        })
    );
}

#[test]
fn an_infinite_output_limit_can_be_built_outside_the_crate() {
    let session = SessionConfig {
        max_output_tokens: Some(walkie_openai::MaxOutputTokens::Infinite(
            walkie_openai::InfiniteTokens::Inf,
        )),
        ..SessionConfig::default()
    };
    let event = ClientEvent::SessionUpdate {
        session: Box::new(session),
    };
    assert_eq!(wire(&event, None)["session"]["max_output_tokens"], "inf");
}
