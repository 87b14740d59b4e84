//! Walkie's own client (`walkie_rtc::Call`) placing Live API (GPT-Live) calls on the local
//! provider over loopback WebRTC: the JSON call setup, the session as the provider resolved it,
//! mute and unmute acknowledged, context placed on the session's timeline, the close with its
//! reason and usage, the hang-up on the Live route; and a session outside the documented limits
//! refused before anything is dialled, naming its field. The provider's trace
//! (`calls.jsonl`, `live-client-events.jsonl`) is checked by the oracle against the SDK's
//! `openai.types.live`.

mod common;

use std::time::Duration;

use common::{lines, oracle_traced_provider, speech_frames};
use walkie_local::LocalProvider;
use walkie_openai::live::{
    CloseReason, InitialItem, InitialRole, LiveAudio, LiveAudioOutput, LiveClientEvent,
    LiveServerEvent, LiveSessionConfig, LiveVoice, WakePolicy, decode_live_server_event,
};
use walkie_rtc::{Auth, Call, CallConfig, CallEvent, Endpoint, RtcError};

const KEY: &str = "sk-local-live";
const WAIT: Duration = Duration::from_secs(10);

async fn provider(name: &str) -> (LocalProvider, std::path::PathBuf) {
    oracle_traced_provider(name, KEY).await
}

fn endpoint(provider: &LocalProvider) -> Endpoint {
    Endpoint::custom(&provider.base_url(), Auth::Bearer(KEY.to_owned()))
        .expect("a loopback endpoint")
}

/// A session as Walkie would start one: a model, a voice, instructions, the conversation so far,
/// woken by speech and paused after a quiet half minute.
fn session() -> LiveSessionConfig {
    LiveSessionConfig {
        model: "gpt-live-1.1".to_owned(),
        instructions: Some("You are Walkie. Be brief.".to_owned()),
        audio: Some(LiveAudio {
            output: Some(LiveAudioOutput {
                voice: Some(LiveVoice::Named("cedar".to_owned())),
            }),
            format: None,
        }),
        input: Some(vec![
            InitialItem::message(InitialRole::User, "What is on my calendar today?"),
            InitialItem::message(InitialRole::Assistant, "A dentist at three."),
        ]),
        wake_policy: Some(WakePolicy {
            vad_threshold: Some(0.6),
        }),
        idle_timeout_s: Some(30),
        ..LiveSessionConfig::default()
    }
}

/// The next server event but the usage reports, which come each second whatever happens.
async fn next_live(call: &mut Call, what: &str) -> LiveServerEvent {
    next_live_matching(call, what, |event| {
        !matches!(event, LiveServerEvent::UsageUpdated { .. })
    })
    .await
}

/// The next server event `wanted` takes, skipping the others.
async fn next_live_matching(
    call: &mut Call,
    what: &str,
    wanted: impl Fn(&LiveServerEvent) -> bool,
) -> LiveServerEvent {
    loop {
        let event = tokio::time::timeout(WAIT, call.next_event())
            .await
            .unwrap_or_else(|_| panic!("no {what} within {WAIT:?}"));
        match event {
            Some(CallEvent::Text(text)) => {
                let event = decode_live_server_event(&text)
                    .unwrap_or_else(|error| panic!("{what}: {error}: {text}"));
                if wanted(&event) {
                    return event;
                }
            }
            Some(CallEvent::Audio(_)) => {}
            other => panic!("unexpected {other:?} while waiting for {what}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_live_call_starts_with_its_session_mutes_appends_and_closes_with_its_usage() {
    let (provider, dir) = provider("live-call-setup").await;
    let mut call = Call::connect(CallConfig::new(endpoint(&provider)).with_live_session(session()))
        .await
        .expect("the Live call connects");
    let session_id = call.call_id().expect("the session's id").to_owned();
    assert!(session_id.starts_with("live_local_"), "{session_id}");

    let LiveServerEvent::SessionStarted { session: started } =
        next_live(&mut call, "session.started").await
    else {
        panic!("session.started first");
    };
    assert_eq!(started.model, "gpt-live-1.1");
    assert_eq!(
        started.audio.and_then(|audio| audio.output?.voice),
        Some(LiveVoice::Named("cedar".to_owned()))
    );
    assert_eq!(started.input.as_deref().map(<[_]>::len), Some(2));
    assert_eq!(started.other["id"], session_id.as_str());
    assert_eq!(started.other["status"], "active");

    // Push-to-talk on the Live API: muted until the key is held.
    call.send_live(&LiveClientEvent::Mute, Some("evt_mute"))
        .await
        .expect("the data channel is open");
    assert_eq!(
        next_live(&mut call, "muted").await,
        LiveServerEvent::InputAudioMuted
    );
    call.send_live(&LiveClientEvent::Unmute, None)
        .await
        .expect("the data channel is open");
    assert_eq!(
        next_live(&mut call, "unmuted").await,
        LiveServerEvent::InputAudioUnmuted
    );
    call.send_live(
        &LiveClientEvent::CommentaryAppend {
            content: "It is 10:42.".to_owned(),
            delegation_id: None,
        },
        None,
    )
    .await
    .expect("the data channel is open");
    let LiveServerEvent::CommentaryAppended { start_ms, end_ms } =
        next_live(&mut call, "commentary appended").await
    else {
        panic!("session.commentary.appended");
    };
    assert!(0 <= start_ms && start_ms <= end_ms, "{start_ms}..{end_ms}");

    call.send_live(&LiveClientEvent::Close, None)
        .await
        .expect("the data channel is open");
    let LiveServerEvent::SessionClosed { reason, usage } =
        next_live(&mut call, "session.closed").await
    else {
        panic!("session.closed");
    };
    assert_eq!(reason, CloseReason::CloseRequested);
    let usage = usage.expect("the close says what was used");
    assert_eq!(
        usage.active_seconds.unwrap_or(0) + usage.paused_seconds.unwrap_or(0),
        usage.seconds as u64,
        "{usage:?}"
    );

    // What the provider recorded: one JSON call on the Live route, with the whole body.
    let calls = lines(&dir.join("calls.jsonl"));
    let live: Vec<_> = calls
        .iter()
        .filter(|call| call["path"] == "/v1/live/sessions")
        .collect();
    assert_eq!(live.len(), 1, "{calls:?}");
    assert_eq!(live[0]["form"], "json");
    assert_eq!(live[0]["status"], 201);
    assert_eq!(live[0]["live_session"]["session"]["model"], "gpt-live-1.1");
    assert_eq!(live[0]["live_session"]["transport"]["type"], "webrtc");
    assert!(
        live[0]["session"].is_null(),
        "a Live body is not a Realtime session"
    );
    let sent = lines(&dir.join("live-client-events.jsonl"));
    let types: Vec<String> = sent
        .iter()
        .map(|line| {
            let event: serde_json::Value =
                serde_json::from_str(line["text"].as_str().unwrap_or("{}")).unwrap_or_default();
            event["type"].as_str().unwrap_or_default().to_owned()
        })
        .collect();
    assert_eq!(
        types,
        [
            "session.input_audio.mute",
            "session.input_audio.unmute",
            "session.commentary.append",
            "session.close"
        ]
    );
    assert!(
        !dir.join("client-events.jsonl").exists(),
        "no Live event is filed as a Realtime one"
    );
    drop(call);
    provider.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn speech_wakes_a_live_session_and_its_idle_timeout_pauses_it_with_the_time_billed_apart() {
    let (provider, _dir) = provider("live-call-wake").await;
    let woken_by_speech = LiveSessionConfig {
        idle_timeout_s: Some(1),
        wake_policy: Some(WakePolicy {
            vad_threshold: None,
        }),
        ..session()
    };
    let mut call =
        Call::connect(CallConfig::new(endpoint(&provider)).with_live_session(woken_by_speech))
            .await
            .expect("the Live call connects");
    next_live(&mut call, "session.started").await;
    for frame in speech_frames(10) {
        call.send_audio(frame, 960).expect("the call sends audio");
    }
    assert_eq!(
        next_live(&mut call, "resumed").await,
        LiveServerEvent::SessionResumed
    );
    // Nothing more is said: the bench answers the turn (its transcripts and audio), and a
    // second after that inference pauses.
    assert_eq!(
        next_live_matching(&mut call, "paused", |event| {
            matches!(event, LiveServerEvent::SessionPaused)
                || !matches!(
                    event,
                    LiveServerEvent::UsageUpdated { .. }
                        | LiveServerEvent::InputTranscriptDelta { .. }
                        | LiveServerEvent::OutputTranscriptDelta { .. }
                )
        })
        .await,
        LiveServerEvent::SessionPaused
    );
    let LiveServerEvent::UsageUpdated { usage, .. } =
        next_live_matching(&mut call, "a report with paused time", |event| {
            matches!(event, LiveServerEvent::UsageUpdated { usage, .. }
                if usage.paused_seconds.unwrap_or(0) >= 1)
        })
        .await
    else {
        unreachable!("only a usage report matches");
    };
    assert_eq!(
        usage.active_seconds.unwrap_or(0) + usage.paused_seconds.unwrap_or(0),
        usage.seconds as u64,
        "{usage:?}"
    );
    // Speech wakes it again.
    for frame in speech_frames(10) {
        call.send_audio(frame, 960).expect("the call sends audio");
    }
    assert_eq!(
        next_live(&mut call, "resumed again").await,
        LiveServerEvent::SessionResumed
    );
    call.hangup().await.expect("the hang-up is accepted");
    provider.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_live_call_is_hung_up_on_the_live_route() {
    let (provider, dir) = provider("live-call-hangup").await;
    let mut call = Call::connect(CallConfig::new(endpoint(&provider)).with_live_session(session()))
        .await
        .expect("the Live call connects");
    next_live(&mut call, "session.started").await;
    let session_id = call.call_id().expect("the session's id").to_owned();
    call.hangup().await.expect("the hang-up is accepted");
    let calls = lines(&dir.join("calls.jsonl"));
    let hangup = calls
        .iter()
        .find(|call| call["path"] == format!("/v1/live/sessions/{session_id}/hangup"))
        .unwrap_or_else(|| panic!("a hang-up on the Live route: {calls:?}"));
    assert_eq!(hangup["status"], 200);
    provider.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_live_session_outside_the_documented_limits_is_refused_naming_its_field() {
    let (provider, _dir) = provider("live-call-refused").await;
    let too_long = LiveSessionConfig {
        input: Some(vec![InitialItem::message(InitialRole::User, "hi"); 129]),
        ..session()
    };
    let refused = Call::connect(CallConfig::new(endpoint(&provider)).with_live_session(too_long))
        .await
        .err()
        .expect("129 history messages are refused");
    let RtcError::BadRequest(failure) = &refused else {
        panic!("a bad request: {refused:?}");
    };
    assert_eq!(failure.code.as_deref(), Some("array_above_max_length"));
    assert!(failure.message.contains("maximum length 128"), "{failure}");
    let unknown_voice = LiveSessionConfig {
        audio: Some(LiveAudio {
            output: Some(LiveAudioOutput {
                voice: Some(LiveVoice::Named("nova".to_owned())),
            }),
            format: None,
        }),
        ..session()
    };
    let refused =
        Call::connect(CallConfig::new(endpoint(&provider)).with_live_session(unknown_voice))
            .await
            .err()
            .expect("a voice the Live API does not have is refused");
    assert!(
        refused.to_string().contains("'nova'"),
        "the refusal names the voice: {refused}"
    );
    provider.shutdown().await;
}
