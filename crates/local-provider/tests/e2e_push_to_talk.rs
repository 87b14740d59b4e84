//! End to end over loopback: the client transport (`walkie-rtc`) calls the local provider —
//! HTTP SDP exchange, real ICE/DTLS/SCTP/SRTP, real Opus — and does a push-to-talk turn with
//! generated speech-like audio. The reply must be the user's own audio, the events must come in
//! the GA order, and the hang-up must end the call on both sides.

use std::time::{Duration, Instant};

use bytes::Bytes;
use walkie_local::scenario::server_event;
use walkie_local::{LocalProvider, ProviderConfig};
use walkie_openai::{
    AudioConfig, AudioInput, ClientEvent, ServerEvent, SessionConfig, SessionKind, Transcription,
};
use walkie_rtc::{Auth, Call, CallConfig, CallEvent, Endpoint, RtcError};

const RATE: usize = 48_000;
const FRAME: usize = 960;

/// Speech-like audio: 0.2 s of silence, 1.6 s of voiced "syllables" (a harmonic source with a
/// moving pitch, 180 ms on / 40 ms dip envelopes), 0.3 s of silence. 16-bit mono, 48 kHz.
fn speech_like() -> Vec<i16> {
    let lead = RATE / 5;
    let speech = RATE * 16 / 10;
    let tail = RATE * 3 / 10;
    let mut pcm = vec![0i16; lead + speech + tail];
    let mut phase = 0.0f64;
    for i in 0..speech {
        let t = i as f64 / RATE as f64;
        let f0 = 140.0 + 30.0 * (2.0 * std::f64::consts::PI * 1.3 * t).sin();
        phase += 2.0 * std::f64::consts::PI * f0 / RATE as f64;
        let source: f64 = (1..=18)
            .map(|k| {
                // A crude vowel: harmonics near 700 Hz and 1200 Hz are stronger.
                let freq = f0 * k as f64;
                let formant = 1.0
                    + 2.0 * (-((freq - 700.0) / 200.0).powi(2)).exp()
                    + 1.5 * (-((freq - 1200.0) / 250.0).powi(2)).exp();
                formant * (k as f64 * phase).sin() / k as f64
            })
            .sum();
        let syllable = (t % 0.22) / 0.22;
        let envelope = if syllable < 0.82 {
            (std::f64::consts::PI * syllable / 0.82).sin().powi(2)
        } else {
            0.05
        };
        pcm[lead + i] = (source * envelope * 4500.0).clamp(-32_000.0, 32_000.0) as i16;
    }
    pcm
}

fn encode(pcm: &[i16]) -> Vec<Bytes> {
    let mut encoder = opus::Encoder::new(48_000, opus::Channels::Mono, opus::Application::Voip)
        .expect("libopus makes an encoder for 48 kHz mono");
    pcm.chunks_exact(FRAME)
        .map(|frame| {
            Bytes::from(
                encoder
                    .encode_vec(frame, 1500)
                    .expect("a 20 ms frame encodes"),
            )
        })
        .collect()
}

fn frame_rms(pcm: &[i16]) -> Vec<f64> {
    pcm.chunks_exact(FRAME)
        .map(|frame| {
            let energy: f64 = frame.iter().map(|s| f64::from(*s).powi(2)).sum();
            (energy / FRAME as f64).sqrt()
        })
        .collect()
}

fn correlation(a: &[f64], b: &[f64]) -> f64 {
    let n = a.len().min(b.len()) as f64;
    let (ma, mb) = (a.iter().sum::<f64>() / n, b.iter().sum::<f64>() / n);
    let (mut num, mut da, mut db) = (0.0, 0.0, 0.0);
    for (x, y) in a.iter().zip(b) {
        num += (x - ma) * (y - mb);
        da += (x - ma).powi(2);
        db += (y - mb).powi(2);
    }
    num / (da.sqrt() * db.sqrt())
}

async fn next(call: &mut Call, what: &str) -> CallEvent {
    tokio::time::timeout(Duration::from_secs(10), call.next_event())
        .await
        .unwrap_or_else(|_| panic!("no event within 10 s while waiting for {what}"))
        .unwrap_or_else(|| panic!("the call ended while waiting for {what}"))
}

async fn next_server(call: &mut Call, what: &str) -> ServerEvent {
    loop {
        match next(call, what).await {
            text @ CallEvent::Text(_) => return server_event(&text).expect("a text"),
            CallEvent::Audio(_) => {}
            other => panic!("unexpected {other:?} while waiting for {what}"),
        }
    }
}

fn ptt_session() -> SessionConfig {
    SessionConfig {
        kind: SessionKind::Realtime,
        instructions: Some("Be brief.".to_owned()),
        audio: Some(AudioConfig {
            input: Some(AudioInput {
                transcription: Some(Some(Transcription {
                    model: "gpt-4o-mini-transcribe".to_owned(),
                    language: Some("en".to_owned()),
                    prompt: None,
                    ..Transcription::default()
                })),
                turn_detection: Some(None),
                ..AudioInput::default()
            }),
            output: None,
        }),
        ..SessionConfig::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_push_to_talk_turn_is_echoed_over_real_webrtc() {
    let trace_dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("push-to-talk-trace-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&trace_dir);
    let provider = LocalProvider::start(ProviderConfig {
        token: Some("local-secret".to_owned()),
        trace_dir: Some(trace_dir.clone()),
        ..ProviderConfig::default()
    })
    .await
    .expect("the provider listens on 127.0.0.1");
    let endpoint = Endpoint::custom(
        &provider.base_url(),
        Auth::Bearer("local-secret".to_owned()),
    )
    .expect("a loopback http URL is allowed");
    let mut call = Call::connect(CallConfig::new(endpoint))
        .await
        .expect("the call connects");
    let timings = call.timings();
    assert!(
        call.call_id()
            .is_some_and(|id| id.starts_with("rtc_local_")),
        "{:?}",
        call.call_id()
    );

    // session.created comes first, then session.updated answers session.update.
    let ServerEvent::SessionCreated { session } = next_server(&mut call, "session.created").await
    else {
        panic!("the first server event is not session.created");
    };
    assert_eq!(session.model.as_deref(), Some("walkie-local-echo"));
    call.send(
        &ClientEvent::SessionUpdate {
            session: Box::new(ptt_session()),
        },
        Some("evt_update"),
    )
    .await
    .expect("the data channel is open");
    let ServerEvent::SessionUpdated { session } = next_server(&mut call, "session.updated").await
    else {
        panic!("session.update is not answered by session.updated");
    };
    assert_eq!(session.instructions.as_deref(), Some("Be brief."));

    // Key down: clear the buffer, then speak.
    call.send(&ClientEvent::InputAudioBufferClear, None)
        .await
        .expect("sent");
    assert_eq!(
        next_server(&mut call, "cleared").await,
        ServerEvent::InputAudioBufferCleared
    );
    let pcm = speech_like();
    let frames = encode(&pcm);
    let mut tick = tokio::time::interval(Duration::from_millis(20));
    for frame in &frames {
        tick.tick().await;
        call.send_audio(frame.clone(), FRAME as u32)
            .expect("the call is up");
    }
    // Key up, with the usual short tail so the last frames land before the commit.
    tokio::time::sleep(Duration::from_millis(60)).await;
    let committed_at = Instant::now();
    call.send(&ClientEvent::InputAudioBufferCommit, None)
        .await
        .expect("sent");
    call.send(&ClientEvent::ResponseCreate { response: None }, None)
        .await
        .expect("sent");

    let mut types: Vec<String> = Vec::new();
    let mut reply = Vec::new();
    let mut first_reply_packet = None;
    let mut user_transcript = None;
    let mut reply_transcript = None;
    loop {
        match next(&mut call, "the reply").await {
            text @ CallEvent::Text(_) => {
                let event = server_event(&text).expect("a text");
                let kind = event.event_type().to_owned();
                match &event {
                    ServerEvent::InputTranscriptionCompleted { transcript, .. } => {
                        user_transcript = Some(transcript.clone())
                    }
                    ServerEvent::OutputAudioTranscriptDone { transcript, .. } => {
                        reply_transcript = Some(transcript.clone())
                    }
                    ServerEvent::Error { error } => panic!("the provider sent an error: {error:?}"),
                    _ => {}
                }
                if types.last() != Some(&kind) {
                    types.push(kind.clone());
                }
                if kind == "output_audio_buffer.stopped" {
                    break;
                }
            }
            CallEvent::Audio(audio) => {
                first_reply_packet.get_or_insert(audio.received_at);
                reply.push(audio);
            }
            other => panic!("unexpected {other:?} during the reply"),
        }
    }
    assert_eq!(
        types,
        [
            "input_audio_buffer.committed",
            "conversation.item.added",
            "conversation.item.done",
            "response.created",
            "response.output_item.added",
            "conversation.item.added",
            "response.content_part.added",
            "output_audio_buffer.started",
            "response.output_audio_transcript.delta",
            "response.output_audio.done",
            "response.output_audio_transcript.done",
            "response.content_part.done",
            "response.output_item.done",
            "response.done",
            "conversation.item.input_audio_transcription.completed",
            "output_audio_buffer.stopped",
        ],
        "the GA event sequence of a push-to-talk turn"
    );

    // The user transcript describes the audio: about 1.6 s of speech.
    let user_transcript = user_transcript.expect("transcription was enabled");
    let seconds: f64 = user_transcript
        .strip_prefix('[')
        .and_then(|rest| rest.strip_suffix(" s of speech]"))
        .and_then(|number| number.parse().ok())
        .unwrap_or_else(|| panic!("not a speech description: {user_transcript:?}"));
    assert!(
        (1.3..=1.8).contains(&seconds),
        "{seconds} s of speech detected in 1.6 s of speech-like audio"
    );
    let reply_transcript = reply_transcript.expect("the reply has a transcript");
    assert!(
        reply_transcript.contains("played your") && reply_transcript.contains("local provider"),
        "the reply says what it did: {reply_transcript:?}"
    );

    // The reply is the user's own audio: every frame, in order, and it decodes to the same
    // loudness contour.
    assert_eq!(reply.len(), frames.len(), "every sent frame is played back");
    for (i, (got, sent)) in reply.iter().zip(&frames).enumerate() {
        assert_eq!(
            &got.payload, sent,
            "reply frame {i} is the user's frame {i}"
        );
    }
    let mut decoder = opus::Decoder::new(48_000, opus::Channels::Mono)
        .expect("libopus makes a decoder for 48 kHz mono");
    let mut decoded = Vec::with_capacity(pcm.len());
    let mut buffer = vec![0i16; 5760];
    for packet in &reply {
        let n = decoder
            .decode(&packet.payload, &mut buffer, false)
            .expect("the reply frames are valid Opus");
        decoded.extend_from_slice(&buffer[..n]);
    }
    let r = correlation(&frame_rms(&pcm), &frame_rms(&decoded));
    assert!(
        r > 0.9,
        "decoded reply loudness follows the speech (r = {r:.3})"
    );
    for pair in reply.windows(2) {
        assert_eq!(
            pair[1].sequence_number,
            pair[0].sequence_number.wrapping_add(1)
        );
    }

    let post_to_open = timings.data_channel_open.duration_since(timings.started);
    let ice_to_open = timings
        .ice_connected
        .map(|ice| timings.data_channel_open.duration_since(ice));
    let commit_to_first_packet = first_reply_packet
        .expect("reply packets arrived")
        .duration_since(committed_at);
    eprintln!(
        "figures: POST→DC open {post_to_open:?}, ICE connected→DC open {ice_to_open:?}, commit→first reply RTP packet {commit_to_first_packet:?}"
    );
    assert!(
        ice_to_open.is_some_and(|d| d <= Duration::from_millis(50)),
        "the data channel opened {ice_to_open:?} after ICE connected (target ≤ 50 ms)"
    );

    // The trace says when the reply's first packet left, after the commit arrived: the
    // provider's part of the turn, for a benchmark to tell from the client's.
    let trace_line = |file: &str, wanted: &dyn Fn(&serde_json::Value) -> bool| {
        std::fs::read_to_string(trace_dir.join(file))
            .unwrap_or_else(|error| panic!("{file}: {error}"))
            .lines()
            .map(|line| serde_json::from_str::<serde_json::Value>(line).expect("a JSON line"))
            .find(|line| wanted(line))
            .unwrap_or_else(|| panic!("no such line in {file}"))
    };
    let commit = trace_line("client-events.jsonl", &|line| {
        line["text"]
            .as_str()
            .is_some_and(|text| text.contains("input_audio_buffer.commit"))
    });
    let replies = std::fs::read_to_string(trace_dir.join("replies.jsonl")).expect("replies.jsonl");
    assert_eq!(replies.lines().count(), 1, "one reply, one line: {replies}");
    let reply = trace_line("replies.jsonl", &|_| true);
    assert_eq!(reply["call_id"], commit["call_id"]);
    assert!(
        reply["response_id"]
            .as_str()
            .is_some_and(|id| id.starts_with("resp_"))
    );
    let sent_at = reply["first_audio_sent_at_unix_ms"]
        .as_u64()
        .expect("a time");
    let received_at = commit["received_at_unix_ms"].as_u64().expect("a time");
    assert!(
        (received_at..received_at + 1_000).contains(&sent_at),
        "the first reply packet left {} ms after the commit arrived",
        sent_at as i64 - received_at as i64
    );

    // Hang up: the provider ends its side.
    call.hangup().await.expect("the hang-up is accepted");
    let deadline = Instant::now() + Duration::from_secs(5);
    while provider.active_calls().await > 0 {
        assert!(
            Instant::now() < deadline,
            "the provider still has the call 5 s after hang-up"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    provider.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusals_are_typed_errors_and_the_call_survives_them() {
    let provider = LocalProvider::start(ProviderConfig {
        token: Some("right".to_owned()),
        ..ProviderConfig::default()
    })
    .await
    .expect("the provider listens on 127.0.0.1");

    // A wrong key: the provider's JSON error message comes through.
    let wrong = Endpoint::custom(&provider.base_url(), Auth::Bearer("wrong".to_owned()))
        .expect("valid URL");
    match Call::connect(CallConfig::new(wrong)).await {
        Err(RtcError::KeyRefused(failure)) => {
            assert_eq!(failure.status, 401);
            assert_eq!(failure.code.as_deref(), Some("invalid_api_key"));
        }
        Err(other) => panic!("expected a 401 with a JSON error, got {other}"),
        Ok(_) => panic!("a wrong key must not connect"),
    }

    // A dead port: a typed network error, quickly.
    let dead = Endpoint::custom("http://127.0.0.1:9", Auth::None).expect("valid URL");
    assert!(matches!(
        Call::connect(CallConfig::new(dead)).await,
        Err(RtcError::Network { .. })
    ));

    let endpoint =
        Endpoint::custom(&provider.base_url(), Auth::Bearer("right".to_owned())).expect("valid");
    let mut call = Call::connect(CallConfig::new(endpoint))
        .await
        .expect("the call connects");
    assert!(matches!(
        next_server(&mut call, "session.created").await,
        ServerEvent::SessionCreated { .. }
    ));

    // A beta-shaped session.update gets the real error, with the client's event id.
    call.peer()
        .send_text(r#"{"type":"session.update","event_id":"beta1","session":{"modalities":["audio","text"],"voice":"alloy"}}"#)
        .await
        .expect("sent");
    let ServerEvent::Error { error } = next_server(&mut call, "the beta error").await else {
        panic!("a beta shape must be answered with an error");
    };
    assert_eq!(error.code.as_deref(), Some("beta_api_shape_disabled"));
    assert_eq!(error.event_id.as_deref(), Some("beta1"));
    assert_eq!(
        error.message,
        "The Realtime Beta API is no longer supported. Please use /v1/realtime for the GA API."
    );

    // An empty commit: the documented error, and the session goes on.
    call.send(&ClientEvent::InputAudioBufferCommit, Some("c1"))
        .await
        .expect("sent");
    let ServerEvent::Error { error } = next_server(&mut call, "the empty-commit error").await
    else {
        panic!("an empty commit must be answered with an error");
    };
    assert_eq!(
        error.code.as_deref(),
        Some("input_audio_buffer_commit_empty")
    );
    assert!(error.is_recoverable());
    call.send(&ClientEvent::InputAudioBufferClear, None)
        .await
        .expect("the call survived the errors");
    assert_eq!(
        next_server(&mut call, "cleared").await,
        ServerEvent::InputAudioBufferCleared
    );

    // The provider hangs up (shutdown): the client sees the call end, as a typed event.
    provider.shutdown().await;
    loop {
        match next(&mut call, "the end of the call").await {
            CallEvent::Ended(_) => break,
            CallEvent::Text(_) | CallEvent::Audio(_) => {}
            other => panic!("unexpected {other:?} while the provider hangs up"),
        }
    }
    assert!(call.next_event().await.is_none(), "nothing after the end");
}
