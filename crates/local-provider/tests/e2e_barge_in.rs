//! Barge-in over real WebRTC against the local provider: the reply streams in real time, so
//! cutting it is meaningful — push-to-talk (`response.cancel` + `output_audio_buffer.clear` +
//! `conversation.item.truncate`, as the turn controller sends them) and hands-free (the
//! server VAD hears the user and cuts the reply itself, `turn_detected`).

use std::time::{Duration, Instant};

use walkie_local::scenario::{self, Scenario, encode_opus, server_event, speech_like};
use walkie_local::{LocalProvider, ProviderConfig};
use walkie_openai::{
    AudioConfig, AudioInput, ClientEvent, Item, ItemStatus, Response, ResponseStatus, ServerEvent,
    SessionConfig, SessionKind,
};
use walkie_rtc::{Call, CallConfig, CallEvent};

async fn next(call: &mut Call, what: &str) -> CallEvent {
    tokio::time::timeout(Duration::from_secs(10), call.next_event())
        .await
        .unwrap_or_else(|_| panic!("no event within 10 s while waiting for {what}"))
        .unwrap_or_else(|| panic!("the call ended while waiting for {what}"))
}

/// Reads until a server event of `wanted` type; returns it and every call event on the way.
async fn until(call: &mut Call, wanted: &str) -> (ServerEvent, Vec<CallEvent>) {
    let mut seen = Vec::new();
    loop {
        let other = next(call, wanted).await;
        match (server_event(&other), &other) {
            (Some(event), _) if event.event_type() == wanted => return (event, seen),
            (Some(ServerEvent::Error { error }), _) => {
                panic!("the provider sent an error while waiting for {wanted}: {error:?}")
            }
            (Some(_), _) | (None, CallEvent::Audio(_)) => seen.push(other),
            _ => panic!("unexpected {other:?} while waiting for {wanted}"),
        }
    }
}

fn audio_count(events: &[CallEvent]) -> usize {
    events
        .iter()
        .filter(|event| matches!(event, CallEvent::Audio(_)))
        .count()
}

fn server_types(events: &[CallEvent]) -> Vec<String> {
    events
        .iter()
        .filter_map(server_event)
        .map(|event| event.event_type().to_owned())
        .collect()
}

async fn ptt_turn(call: &mut Call, speech_ms: u64) -> Instant {
    call.send(&ClientEvent::InputAudioBufferClear, None)
        .await
        .expect("sent");
    until(call, "input_audio_buffer.cleared").await;
    let frames = encode_opus(&speech_like(speech_ms)).expect("encodes");
    let mut tick = tokio::time::interval(Duration::from_millis(20));
    for frame in frames {
        tick.tick().await;
        call.send_audio(frame, 960).expect("the call is up");
    }
    tokio::time::sleep(Duration::from_millis(60)).await;
    let committed = Instant::now();
    call.send(&ClientEvent::InputAudioBufferCommit, None)
        .await
        .expect("sent");
    call.send(&ClientEvent::ResponseCreate { response: None }, None)
        .await
        .expect("sent");
    committed
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_push_to_talk_barge_in_cuts_the_streaming_reply() {
    let provider = LocalProvider::start(ProviderConfig::default())
        .await
        .expect("the provider listens");
    let endpoint = provider.endpoint();
    let mut call = Call::connect(CallConfig::new(endpoint))
        .await
        .expect("the call connects");
    until(&mut call, "session.created").await;
    let ptt = SessionConfig {
        kind: SessionKind::Realtime,
        audio: Some(AudioConfig {
            input: Some(AudioInput {
                turn_detection: Some(None),
                ..AudioInput::default()
            }),
            output: None,
        }),
        ..SessionConfig::default()
    };
    call.send(
        &ClientEvent::SessionUpdate {
            session: Box::new(ptt),
        },
        None,
    )
    .await
    .expect("sent");
    until(&mut call, "session.updated").await;

    // A 2 s turn; its reply takes 2 s to play and 1 s to "generate".
    ptt_turn(&mut call, 2000).await;
    let (added, _) = until(&mut call, "response.output_item.added").await;
    let ServerEvent::ResponseOutputItemAdded {
        response_id, item, ..
    } = added
    else {
        unreachable!("until returns the wanted type");
    };
    let item_id = item.id().expect("the reply item has an id").to_owned();
    let (_, before) = until(&mut call, "output_audio_buffer.started").await;
    assert!(!server_types(&before).iter().any(|t| t == "response.done"));
    // Listen to ~300 ms of the reply, then barge in as the turn controller does.
    let mut heard = 0;
    let listen_until = Instant::now() + Duration::from_millis(300);
    while Instant::now() < listen_until {
        if let Ok(Some(event)) =
            tokio::time::timeout_at(listen_until.into(), call.next_event()).await
        {
            match (server_event(&event), event) {
                (None, CallEvent::Audio(_)) => heard += 1,
                (Some(event), _) => assert_ne!(
                    event.event_type(),
                    "response.done",
                    "the reply is still being generated 300 ms in"
                ),
                (None, other) => panic!("unexpected {other:?}"),
            }
        }
    }
    assert!(
        (10..=20).contains(&heard),
        "{heard} frames in 300 ms: real time"
    );
    call.send(
        &ClientEvent::ResponseCancel {
            response_id: Some(response_id.clone()),
        },
        Some("cancel1"),
    )
    .await
    .expect("sent");
    call.send(&ClientEvent::OutputAudioBufferClear, None)
        .await
        .expect("sent");
    let played_ms = heard as u64 * 20;
    call.send(
        &ClientEvent::ConversationItemTruncate {
            item_id: item_id.clone(),
            content_index: 0,
            audio_end_ms: played_ms.saturating_sub(100),
        },
        None,
    )
    .await
    .expect("sent");

    let (done, _) = until(&mut call, "response.done").await;
    let ServerEvent::ResponseDone { response } = done else {
        unreachable!();
    };
    let Response {
        id,
        status,
        status_details,
        output,
        ..
    } = response;
    assert_eq!(id, response_id);
    assert_eq!(status, ResponseStatus::Cancelled);
    assert_eq!(
        status_details.and_then(|details| details.reason).as_deref(),
        Some("client_cancelled")
    );
    assert!(matches!(
        &output[..],
        [Item::Message {
            status: Some(ItemStatus::Incomplete),
            ..
        }]
    ));
    let (cleared, between) = until(&mut call, "output_audio_buffer.cleared").await;
    assert_eq!(
        cleared,
        ServerEvent::OutputAudioBufferCleared {
            response_id: response_id.clone()
        }
    );
    assert!(
        audio_count(&between) <= 3,
        "the buffer kept playing only until the clear"
    );
    let (truncated, _) = until(&mut call, "conversation.item.truncated").await;
    assert_eq!(
        truncated,
        ServerEvent::ConversationItemTruncated {
            item_id,
            content_index: 0,
            audio_end_ms: played_ms - 100
        }
    );
    // Silence after the cut: no audio, no `stopped` for the cut reply.
    let quiet_until = Instant::now() + Duration::from_millis(500);
    if let Ok(Some(event)) = tokio::time::timeout_at(quiet_until.into(), call.next_event()).await {
        panic!("nothing is sent after the cut, got {event:?}");
    }

    // The next turn works as usual, after the cut.
    ptt_turn(&mut call, 600).await;
    let (_, reply) = until(&mut call, "output_audio_buffer.stopped").await;
    assert_eq!(audio_count(&reply), 30, "the next reply plays in full");
    assert!(server_types(&reply).iter().any(|t| t == "response.done"));

    call.hangup().await.expect("hung up");
    provider.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hands_free_barge_in_is_cut_by_the_server_vad() {
    let path = format!(
        "{}/scenarios/hands-free-barge-in.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let scenario = Scenario::from_json(&std::fs::read_to_string(&path).expect("the scenario file"))
        .expect("a valid scenario");
    let provider = LocalProvider::start(ProviderConfig::default())
        .await
        .expect("the provider listens");
    let report = tokio::time::timeout(
        Duration::from_secs(60),
        scenario::run(&scenario, &provider.base_url(), provider.auth()),
    )
    .await
    .expect("the scenario does not hang")
    .expect("the scenario passes");

    let events: Vec<ServerEvent> = report.events.iter().filter_map(server_event).collect();
    // The server restated its VAD settings.
    assert!(events.iter().any(|event| matches!(event,
        ServerEvent::SessionUpdated { session } if session.audio.as_ref()
            .and_then(|audio| audio.input.as_ref())
            .is_some_and(|input| matches!(input.turn_detection, Some(Some(_)))))));
    // Two turns, each heard by the VAD; the first reply cut by the second.
    let starts: Vec<usize> = events
        .iter()
        .enumerate()
        .filter(|(_, event)| matches!(event, ServerEvent::SpeechStarted { .. }))
        .map(|(i, _)| i)
        .collect();
    assert_eq!(starts.len(), 2);
    let ServerEvent::SpeechStarted { audio_start_ms, .. } = &events[starts[0]] else {
        unreachable!();
    };
    assert!(
        (50..=200).contains(audio_start_ms),
        "speech at ~400 ms minus 300 ms of padding: {audio_start_ms}"
    );
    let cut: Vec<&str> = events[starts[1]..]
        .iter()
        .map(|event| event.event_type())
        .take(7)
        .collect();
    assert_eq!(
        cut,
        [
            "input_audio_buffer.speech_started",
            "output_audio_buffer.cleared",
            "response.output_audio.done",
            "response.output_audio_transcript.done",
            "response.content_part.done",
            "response.output_item.done",
            "response.done",
        ]
    );
    let cancelled = events[starts[1]..].iter().find_map(|event| match event {
        ServerEvent::ResponseDone { response } => Some(response.clone()),
        _ => None,
    });
    let cancelled = cancelled.expect("the first reply's end");
    assert_eq!(cancelled.status, ResponseStatus::Cancelled);
    assert_eq!(
        cancelled
            .status_details
            .and_then(|details| details.reason)
            .as_deref(),
        Some("turn_detected")
    );
    // Each reply's events are in the GA order: started before stopped/cleared, one each.
    let buffer: Vec<&str> = events
        .iter()
        .map(|event| event.event_type())
        .filter(|kind| kind.starts_with("output_audio_buffer."))
        .collect();
    assert_eq!(
        buffer,
        [
            "output_audio_buffer.started",
            "output_audio_buffer.cleared",
            "output_audio_buffer.started",
            "output_audio_buffer.stopped"
        ]
    );
    // Audio from the first reply stops at the cut (a packet or two may be in flight).
    let cleared_at = report
        .events
        .iter()
        .position(|event| {
            matches!(
                server_event(event),
                Some(ServerEvent::OutputAudioBufferCleared { .. })
            )
        })
        .expect("cleared");
    let second_started = report
        .events
        .iter()
        .rposition(|event| {
            matches!(
                server_event(event),
                Some(ServerEvent::OutputAudioBufferStarted { .. })
            )
        })
        .expect("the second reply");
    let late = report.events[cleared_at..second_started]
        .iter()
        .filter(|event| matches!(event, CallEvent::Audio(_)))
        .count();
    assert!(late <= 2, "{late} packets of the cut reply after the cut");
    assert_eq!(report.hangup, Some(Ok(())));
    provider.shutdown().await;
}
