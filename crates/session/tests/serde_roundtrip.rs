//! Every event of the spec's table goes to the journal and the webview as JSON and comes back
//! unchanged, under its pydantic-ai `event_kind` name.

mod common;

use std::collections::BTreeMap;

use common::*;
use walkie_session::*;

fn call() -> ToolCallPart {
    ToolCallPart {
        tool_name: "local_time".into(),
        args: r#"{"zone":"local"}"#.into(),
        tool_call_id: "call-1".into(),
    }
}

fn one_of_each() -> Vec<SessionEvent> {
    vec![
        SessionEvent::PartStart(PartStartEvent {
            index: PartIndex(0),
            part: Part::speech(Speaker::User),
        }),
        SessionEvent::PartDelta(PartDeltaEvent {
            index: PartIndex(1),
            delta: audio_delta(-3),
        }),
        SessionEvent::PartDelta(PartDeltaEvent {
            index: PartIndex(1),
            delta: transcript_delta(Speaker::Assistant, " there", "hi there"),
        }),
        SessionEvent::PartDelta(PartDeltaEvent {
            index: PartIndex(2),
            delta: PartDelta::Text(TextPartDelta {
                content_delta: "text".into(),
            }),
        }),
        SessionEvent::PartEnd(PartEndEvent {
            index: PartIndex(1),
            part: Part::Speech(SpeechPart {
                speaker: Speaker::Assistant,
                transcript: Some("hi there".into()),
                audio: Some(WavSnapshot::new(24_000, vec![1i16, -2, 3])),
                interrupted_at_ms: Some(120),
            }),
        }),
        SessionEvent::PartStart(PartStartEvent {
            index: PartIndex(3),
            part: Part::tool_call(call()),
        }),
        SessionEvent::FunctionToolCall(Box::new(FunctionToolCallEvent {
            part: call(),
            args_valid: Some(true),
        })),
        SessionEvent::FunctionToolResult(Box::new(FunctionToolResultEvent {
            result: ToolResult::ToolReturn(ToolReturnPart {
                tool_name: "local_time".into(),
                tool_call_id: "call-1".into(),
                content: serde_json::json!({"time": "14:05"}),
                outcome: ToolOutcome::Success,
            }),
        })),
        SessionEvent::FunctionToolResult(Box::new(FunctionToolResultEvent {
            result: ToolResult::RetryPrompt(RetryPromptPart {
                tool_name: "local_time".into(),
                tool_call_id: "call-2".into(),
                content: "zone must be an IANA name".into(),
            }),
        })),
        SessionEvent::DeferredToolRequests(Box::new(DeferredToolRequestsEvent {
            requests: DeferredToolRequests {
                approvals: vec![call()],
                calls: vec![],
            },
        })),
        SessionEvent::DeferredToolResults(Box::new(DeferredToolResultsEvent {
            results: DeferredToolResults {
                approvals: BTreeMap::from([(
                    "call-1".to_owned(),
                    ToolApproval::Denied {
                        message: "not now".into(),
                    },
                )]),
                calls: BTreeMap::new(),
            },
        })),
        SessionEvent::EnqueuedMessages(Box::new(EnqueuedMessagesEvent {
            enqueue_id: "enq-1".into(),
            messages: vec![EnqueuedMessage {
                parts: vec![UserContent::Text {
                    content: "remind me".into(),
                }],
            }],
        })),
        SessionEvent::InputSpeechStart(Box::new(RealtimeInputSpeechStartEvent {
            item_id: Some("item-1".into()),
        })),
        SessionEvent::InputSpeechEnd(Box::new(RealtimeInputSpeechEndEvent {
            item_id: Some("item-1".into()),
        })),
        SessionEvent::ResponseInterrupted,
        SessionEvent::InputTranscriptionError(Box::new(RealtimeInputTranscriptionErrorEvent {
            message: "audio too short".into(),
            error_type: Some("invalid_request_error".into()),
            code: Some("audio_unintelligible".into()),
            item_id: Some("item-1".into()),
            content_index: Some(0),
        })),
        SessionEvent::OutputSpeechStart,
        SessionEvent::OutputSpeechEnd,
        SessionEvent::TurnComplete,
        SessionEvent::SessionReconnect(RealtimeSessionReconnectEvent {
            state_restored: false,
        }),
        SessionEvent::SessionError(Box::new(RealtimeSessionErrorEvent {
            message: "no active response".into(),
            error_type: Some("invalid_request_error".into()),
            code: Some("response_cancel_not_active".into()),
            recoverable: true,
        })),
    ]
}

#[test]
fn every_event_round_trips_through_json_under_its_event_kind() {
    for (seq, event) in one_of_each().into_iter().enumerate() {
        let stamped = StampedEvent {
            seq: seq as u64,
            at_ms: 1_000 + seq as u64,
            event,
        };

        let json = serde_json::to_value(&stamped).unwrap();
        let back: StampedEvent = serde_json::from_value(json.clone()).unwrap();

        assert_eq!(json["event_kind"], stamped.event.kind_name(), "{json}");
        assert_eq!(back, stamped, "{json}");
    }
}

#[test]
fn the_event_table_has_seventeen_kinds_and_all_are_covered() {
    let mut kinds: Vec<&str> = one_of_each().iter().map(SessionEvent::kind_name).collect();
    kinds.sort_unstable();
    kinds.dedup();

    assert_eq!(kinds.len(), 17);
}

#[test]
fn an_audio_chunk_is_base64_pcm16_little_endian() {
    let chunk = AudioChunk::from_samples(vec![1i16, -1]);

    let json = serde_json::to_value(&chunk).unwrap();

    assert_eq!(json, serde_json::json!("AQD//w=="));
    assert_eq!(serde_json::from_value::<AudioChunk>(json).unwrap(), chunk);
}

#[test]
fn odd_pcm_bytes_are_a_typed_error_naming_the_length() {
    assert_eq!(
        AudioChunk::from_pcm16_le(&[1, 2, 3]),
        Err(AudioError::OddPcmByteCount { byte_count: 3 })
    );
}

#[test]
fn a_wav_snapshot_that_is_not_mono_pcm16_is_refused() {
    let mut wav = WavSnapshot::new(24_000, vec![0i16; 4]).to_wav_bytes();
    wav[22] = 2; // two channels

    assert_eq!(
        WavSnapshot::from_wav_bytes(&wav),
        Err(AudioError::UnsupportedWavFormat {
            format: 1,
            channels: 2,
            bits_per_sample: 16
        })
    );
}

#[test]
fn a_malformed_journal_line_is_an_error_not_a_panic() {
    let bad_audio = r#"{"seq":0,"at_ms":0,"event_kind":"part_delta","index":0,
        "delta":{"part_delta_kind":"speech","speaker":"assistant","audio_chunk":"AQD"}}"#;
    let unknown_kind = r#"{"seq":0,"at_ms":0,"event_kind":"nonsense"}"#;

    assert!(serde_json::from_str::<StampedEvent>(bad_audio).is_err());
    assert!(serde_json::from_str::<StampedEvent>(unknown_kind).is_err());
}
