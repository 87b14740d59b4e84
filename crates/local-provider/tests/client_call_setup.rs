//! Walkie's own client (`walkie_rtc::Call`) placing real calls on the local provider over
//! loopback WebRTC, in each documented form, with the session the app builds
//! (`TurnConfig::call_session`) and the `session.update` the turn controller sends. Each test
//! asserts the request shape the provider recorded in its trace (`calls.jsonl`,
//! `client-events.jsonl`), what the call started with (`session.created`), and that the
//! controller's update is accepted (`session.updated`, no `error`).

mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::{lines, oracle_traced_provider, scratch_dir};
use serde_json::Value;
use walkie_local::scenario::server_event;
use walkie_local::{HttpFault, LocalProvider, ProviderConfig};
use walkie_openai::{AudioConfig, AudioOutput, ServerEvent, SessionConfig};
use walkie_rtc::{
    Auth, Call, CallConfig, CallEvent, CallForm, Endpoint, MAX_SESSION_BYTES, RtcError, Stage,
};
use walkie_session::turn::{ControllerOutput, ToolRegistry, TurnConfig, TurnController, TurnInput};

const KEY: &str = "sk-local-std";
const WAIT: Duration = Duration::from_secs(10);

/// A provider whose trace the oracle checks too: everything here is sent by Walkie's client.
async fn provider(name: &str) -> (LocalProvider, PathBuf) {
    oracle_traced_provider(name, KEY).await
}

/// The app's push-to-talk turn config with this model, voice and instructions.
fn turn_config(model: &str, voice: &str, instructions: &str) -> TurnConfig {
    TurnConfig::push_to_talk(SessionConfig {
        model: Some(model.to_owned()),
        instructions: Some(instructions.to_owned()),
        audio: Some(AudioConfig {
            output: Some(AudioOutput {
                voice: Some(voice.to_owned()),
                ..AudioOutput::default()
            }),
            ..AudioConfig::default()
        }),
        ..SessionConfig::default()
    })
}

/// Places the call as the app does: created with the controller's call session.
async fn connect(endpoint: Endpoint, config: &TurnConfig) -> Result<Call, RtcError> {
    let session = config.call_session(ToolRegistry::with_builtins().definitions());
    Call::connect(CallConfig::new(endpoint).with_session(session)).await
}

async fn next_server(call: &mut Call, what: &str) -> ServerEvent {
    loop {
        let event = tokio::time::timeout(WAIT, call.next_event())
            .await
            .unwrap_or_else(|_| panic!("no {what} within {WAIT:?}"));
        match event {
            Some(text @ CallEvent::Text(_)) => return server_event(&text).expect("a text"),
            Some(CallEvent::Audio(_)) => {}
            other => panic!("unexpected {other:?} while waiting for {what}"),
        }
    }
}

/// `session.created`'s session, as JSON.
async fn created(call: &mut Call) -> Value {
    match next_server(call, "session.created").await {
        ServerEvent::SessionCreated { session } => {
            serde_json::to_value(&session).expect("a session serialises")
        }
        other => panic!("expected session.created first, got {other:?}"),
    }
}

/// Sends the controller's `session.update` (as on data-channel open) and expects
/// `session.updated`, not an `error`.
async fn update_is_accepted(call: &mut Call, config: TurnConfig) -> Value {
    let mut controller = TurnController::new(config, ToolRegistry::with_builtins());
    controller.handle_input(TurnInput::ChannelOpened, 0);
    let update = std::iter::from_fn(|| controller.poll_output())
        .find_map(|output| match output {
            ControllerOutput::Send(outgoing) => Some(outgoing),
            _ => None,
        })
        .expect("session.update on open");
    call.send(
        update
            .realtime()
            .expect("a Realtime controller sends Realtime events"),
        Some(&update.event_id),
    )
    .await
    .expect("the data channel is open");
    match next_server(call, "session.updated").await {
        ServerEvent::SessionUpdated { session } => {
            serde_json::to_value(&session).expect("a session serialises")
        }
        other => panic!("the update was not accepted: {other:?}"),
    }
}

/// The `session.update` texts the provider received.
fn session_updates(dir: &Path) -> Vec<Value> {
    lines(&dir.join("client-events.jsonl"))
        .into_iter()
        .map(|line| {
            serde_json::from_str::<Value>(line["text"].as_str().expect("the text as received"))
                .expect("a JSON client event")
        })
        .filter(|event| event["type"] == "session.update")
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_standard_key_places_a_multipart_call_that_starts_with_the_session() {
    let (provider, dir) = provider("client-multipart").await;
    let config = turn_config(
        "gpt-realtime-mini",
        "cedar",
        "Answer like a lighthouse keeper.",
    );
    let endpoint = Endpoint::custom(&provider.base_url(), Auth::Bearer(KEY.to_owned()))
        .expect("a loopback endpoint");
    assert_eq!(endpoint.form(), CallForm::Automatic);
    let mut call = connect(endpoint, &config).await.expect("the call connects");

    let session = created(&mut call).await;
    assert_eq!(session["model"], "gpt-realtime-mini");
    assert_eq!(session["instructions"], "Answer like a lighthouse keeper.");
    assert_eq!(session["audio"]["output"]["voice"], "cedar");
    assert_eq!(
        session["audio"]["input"]["turn_detection"],
        Value::Null,
        "push-to-talk from the first moment, not the server's VAD"
    );
    update_is_accepted(&mut call, config).await;
    call.hangup().await.expect("the hang-up is accepted");

    let calls = lines(&dir.join("calls.jsonl"));
    let create = &calls[0];
    assert_eq!(create["method"], "POST");
    assert_eq!(create["path"], "/v1/realtime/calls");
    assert_eq!(create["query"], Value::Null);
    assert_eq!(create["form"], "multipart");
    assert_eq!(create["parts"], serde_json::json!(["sdp", "session"]));
    assert_eq!(create["auth"], "bearer");
    assert_eq!(create["status"], 201);
    assert_eq!(create["session"]["type"], "realtime");
    assert_eq!(create["session"]["model"], "gpt-realtime-mini");
    assert!(
        create["session"]["tools"]
            .as_array()
            .is_some_and(|tools| !tools.is_empty()),
        "the tools come with the call"
    );
    assert!(
        calls[1]["path"]
            .as_str()
            .is_some_and(|path| path.ends_with("/hangup")),
        "{calls:?}"
    );
    let updates = session_updates(&dir);
    assert_eq!(updates.len(), 1);
    assert_eq!(updates[0]["session"].get("model"), None);
    provider.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ephemeral_path_mints_a_key_with_the_session_and_calls_with_it() {
    let (provider, dir) = provider("client-ephemeral").await;
    let config = turn_config("gpt-realtime", "marin", "Keep it short.");
    let endpoint = Endpoint::custom(&provider.base_url(), Auth::Bearer(KEY.to_owned()))
        .expect("a loopback endpoint")
        .with_ephemeral_key();
    let mut call = connect(endpoint, &config).await.expect("the call connects");

    let session = created(&mut call).await;
    assert_eq!(session["model"], "gpt-realtime");
    assert_eq!(session["instructions"], "Keep it short.");
    assert_eq!(session["audio"]["output"]["voice"], "marin");
    update_is_accepted(&mut call, config).await;
    call.hangup().await.expect("the hang-up is accepted");

    let calls = lines(&dir.join("calls.jsonl"));
    let (mint, create) = (&calls[0], &calls[1]);
    assert_eq!(mint["path"], "/v1/realtime/client_secrets");
    assert_eq!(mint["form"], "json");
    assert_eq!(mint["auth"], "bearer");
    assert_eq!(mint["session"]["model"], "gpt-realtime");
    assert_eq!(mint["status"], 200);
    assert_eq!(create["path"], "/v1/realtime/calls");
    assert_eq!(create["form"], "sdp");
    assert_eq!(create["auth"], "bearer_ephemeral");
    assert_eq!(create["query"], Value::Null);
    assert_eq!(create["status"], 201);
    assert_eq!(session_updates(&dir)[0]["session"].get("model"), None);
    provider.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn azure_mints_with_the_api_key_and_the_deployment_then_calls_with_the_token() {
    let (provider, dir) = provider("client-azure").await;
    // The settings' model is not what Azure is sent: the deployment is.
    let config = turn_config("gpt-realtime", "cedar", "Be brief.");
    let endpoint =
        Endpoint::azure(&provider.base_url(), KEY, "walkie-deployment").expect("a loopback Azure");
    let mut call = connect(endpoint, &config).await.expect("the call connects");

    let session = created(&mut call).await;
    assert_eq!(session["model"], "walkie-deployment");
    update_is_accepted(&mut call, config).await;
    call.hangup().await.expect("the hang-up is accepted");

    let calls = lines(&dir.join("calls.jsonl"));
    let (mint, create, hangup) = (&calls[0], &calls[1], &calls[2]);
    assert_eq!(mint["path"], "/openai/v1/realtime/client_secrets");
    assert_eq!(mint["query"], Value::Null, "no api-version");
    assert_eq!(mint["form"], "json");
    assert_eq!(mint["auth"], "api_key");
    assert_eq!(mint["session"]["model"], "walkie-deployment");
    assert_eq!(mint["status"], 200);
    assert_eq!(create["path"], "/openai/v1/realtime/calls");
    assert_eq!(create["query"], Value::Null, "no ?model=");
    assert_eq!(create["form"], "sdp");
    assert_eq!(create["auth"], "bearer_ephemeral");
    assert_eq!(create["status"], 201);
    assert!(
        hangup["path"].as_str().is_some_and(
            |path| path.starts_with("/openai/v1/realtime/calls/") && path.ends_with("/hangup")
        ),
        "{hangup}"
    );
    assert_eq!(hangup["auth"], "api_key");
    assert_eq!(session_updates(&dir)[0]["session"].get("model"), None);
    provider.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_azure_key_is_refused_when_minting_with_its_sentence() {
    let (provider, dir) = provider("client-azure-refused").await;
    let endpoint = Endpoint::azure(&provider.base_url(), "not-the-key", "walkie-deployment")
        .expect("a loopback Azure");
    let error = connect(endpoint, &turn_config("gpt-realtime", "cedar", "x"))
        .await
        .err()
        .expect("a wrong key places no call");
    assert!(
        matches!(&error, RtcError::KeyRefused(failure) if failure.stage == Stage::ClientSecret && failure.status == 401),
        "{error:?}"
    );
    assert_eq!(
        error.user_sentence(),
        "Azure OpenAI refused the API key: add a valid key in Settings."
    );
    let calls = lines(&dir.join("calls.jsonl"));
    assert_eq!(calls.len(), 1, "no offer after a refused mint: {calls:?}");
    provider.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn instructions_too_long_for_a_data_channel_message_are_refused_before_dialling() {
    let (provider, dir) = provider("client-long-instructions").await;
    let long = "Speak as a ship's log would, dated and terse. ".repeat(1_800);
    let endpoint = Endpoint::custom(&provider.base_url(), Auth::Bearer(KEY.to_owned()))
        .expect("a loopback endpoint");
    let error = connect(endpoint, &turn_config("gpt-realtime", "cedar", &long))
        .await
        .err()
        .expect("a session the data channel cannot carry places no call");
    assert!(
        matches!(
            error,
            RtcError::SessionTooLarge {
                field: "instructions",
                limit_bytes: MAX_SESSION_BYTES,
                ..
            }
        ),
        "{error:?}"
    );
    assert!(
        error
            .user_sentence()
            .starts_with("The instructions are too long for a call"),
        "{}",
        error.user_sentence()
    );
    assert!(
        !dir.join("calls.jsonl").exists(),
        "nothing reached the provider"
    );
    provider.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_at_the_size_limit_is_created_restated_and_updated_intact() {
    let (provider, dir) = provider("client-limit-instructions").await;
    let tools = ToolRegistry::with_builtins().definitions();
    let bare = serde_json::to_string(&turn_config("gpt-realtime", "cedar", "").call_session(tools))
        .expect("a session serialises")
        .len();
    let instructions = "a".repeat(MAX_SESSION_BYTES - bare);
    let config = turn_config("gpt-realtime", "cedar", &instructions);
    let endpoint = Endpoint::custom(&provider.base_url(), Auth::Bearer(KEY.to_owned()))
        .expect("a loopback endpoint");
    let mut call = connect(endpoint, &config).await.expect("the call connects");

    let session = created(&mut call).await;
    assert_eq!(
        session["instructions"].as_str(),
        Some(instructions.as_str())
    );
    let updated = update_is_accepted(&mut call, config).await;
    assert_eq!(
        updated["instructions"].as_str(),
        Some(instructions.as_str())
    );
    let received = lines(&dir.join("client-events.jsonl"));
    assert!(
        received
            .iter()
            .all(|line| line["text"].as_str().map_or(0, str::len) <= 64 * 1024),
        "every data-channel message fits in 64 KiB"
    );
    call.hangup().await.expect("the hang-up is accepted");
    provider.shutdown().await;
}

async fn faulty_provider(name: &str, fault: HttpFault) -> (LocalProvider, PathBuf) {
    let dir = scratch_dir(name);
    let provider = LocalProvider::start(ProviderConfig {
        token: Some(KEY.to_owned()),
        trace_dir: Some(dir.clone()),
        calls_fault: Some(fault),
        ..ProviderConfig::default()
    })
    .await
    .expect("the provider listens on 127.0.0.1");
    (provider, dir)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_refused_call_is_its_own_typed_error_with_a_sentence_saying_what_to_do() {
    /// Status, message, `Retry-After` seconds, the error expected, its sentence.
    type Case = (
        u16,
        Option<&'static str>,
        Option<u64>,
        fn(&RtcError) -> bool,
        &'static str,
    );
    let cases: [Case; 7] = [
        (
            400,
            Some("Invalid value: 'robot'. Supported values are: 'marin', 'cedar'."),
            None,
            |error| matches!(error, RtcError::BadRequest(_)),
            "OpenAI refused the call: Invalid value: 'robot'. Supported values are: 'marin', 'cedar'. Check the model, voice and instructions in Settings.",
        ),
        (
            401,
            None,
            None,
            |error| matches!(error, RtcError::KeyRefused(failure) if failure.status == 401),
            "OpenAI refused the API key: add a valid key in Settings.",
        ),
        (
            403,
            None,
            None,
            |error| matches!(error, RtcError::KeyRefused(failure) if failure.status == 403),
            "OpenAI does not serve this country or region (Country, region, or territory not supported): use another provider in Settings.",
        ),
        (
            404,
            None,
            None,
            |error| matches!(error, RtcError::NotFound(_)),
            "OpenAI knows no such model or deployment (The model does not exist or you do not have access to it): check the model (for Azure, the deployment name) and the address in Settings.",
        ),
        (
            429,
            None,
            Some(30),
            |error| matches!(error, RtcError::RateLimited { retry_after: Some(after), .. } if *after == Duration::from_secs(30)),
            "OpenAI is rate-limiting this key: reconnect in 30 seconds.",
        ),
        (
            500,
            None,
            None,
            |error| matches!(error, RtcError::ServerError(failure) if failure.status == 500),
            "OpenAI had a server error (500): reconnect in a moment; if it persists, check the provider's status page.",
        ),
        (
            503,
            None,
            None,
            |error| matches!(error, RtcError::ServerError(failure) if failure.status == 503),
            "OpenAI had a server error (503): reconnect in a moment; if it persists, check the provider's status page.",
        ),
    ];
    for (status, message, retry_after_s, expected, sentence) in cases {
        let (provider, dir) = faulty_provider(
            &format!("client-status-{status}"),
            HttpFault::Status {
                status,
                message: message.map(str::to_owned),
                retry_after_s,
            },
        )
        .await;
        let endpoint = Endpoint::custom(&provider.base_url(), Auth::Bearer(KEY.to_owned()))
            .expect("a loopback endpoint")
            .named("OpenAI");
        let error = connect(endpoint, &turn_config("gpt-realtime", "cedar", "x"))
            .await
            .err()
            .unwrap_or_else(|| panic!("a {status} places no call"));
        assert!(expected(&error), "{status}: {error:?}");
        assert_eq!(error.user_sentence(), sentence, "{status}");
        let calls = lines(&dir.join("calls.jsonl"));
        assert_eq!(
            calls.len(),
            1,
            "no hang-up for a call never made: {calls:?}"
        );
        assert_eq!(calls[0]["status"], status);
        provider.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_without_location_still_connects_and_only_the_rest_hang_up_is_skipped() {
    let (provider, dir) = faulty_provider("client-no-location", HttpFault::NoLocation).await;
    let config = turn_config("gpt-realtime", "cedar", "Be brief.");
    let endpoint = Endpoint::custom(&provider.base_url(), Auth::Bearer(KEY.to_owned()))
        .expect("a loopback endpoint");
    let mut call = connect(endpoint, &config)
        .await
        .expect("a 201 with a valid SDP answer connects");
    assert_eq!(call.call_id(), None);
    created(&mut call).await;
    update_is_accepted(&mut call, config).await;
    call.hangup()
        .await
        .expect("closing a call without an id succeeds");
    let calls = lines(&dir.join("calls.jsonl"));
    assert_eq!(
        calls.len(),
        1,
        "no REST hang-up without a call id: {calls:?}"
    );
    provider.shutdown().await;
}

/// The app's push-to-talk config with every session control the current models take: a
/// reasoning effort and one tool at a time, a retention ratio, a faster voice, and a
/// transcription model given words to expect.
fn controls_config(model: &str, transcription: walkie_openai::Transcription) -> TurnConfig {
    let mut config = turn_config(model, "marin", "Be brief.");
    let session = &mut config.session;
    session.reasoning = Some(walkie_openai::Reasoning {
        effort: Some("low".to_owned()),
    });
    session.parallel_tool_calls = Some(false);
    session.truncation = Some(walkie_openai::Truncation::RetentionRatio(
        walkie_openai::RetentionRatio {
            retention_ratio: 0.8,
            token_limits: None,
        },
    ));
    let audio = session.audio.get_or_insert_with(AudioConfig::default);
    audio.output.get_or_insert_with(AudioOutput::default).speed = Some(1.25);
    audio
        .input
        .get_or_insert_with(walkie_openai::AudioInput::default)
        .transcription = Some(Some(transcription));
    config
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_current_models_session_controls_go_with_the_multipart_call_and_the_minted_key() {
    let (provider, dir) = provider("client-session-controls").await;
    let keywords = walkie_openai::Transcription {
        model: "gpt-transcribe".to_owned(),
        keywords: Some(vec!["Walkie".to_owned(), "PipeWire".to_owned()]),
        ..walkie_openai::Transcription::default()
    };
    let delayed = walkie_openai::Transcription {
        model: "gpt-realtime-whisper".to_owned(),
        delay: Some("minimal".to_owned()),
        ..walkie_openai::Transcription::default()
    };
    for (config, endpoint) in [
        (
            controls_config("gpt-realtime-2.1", keywords),
            Endpoint::custom(&provider.base_url(), Auth::Bearer(KEY.to_owned()))
                .expect("a loopback endpoint"),
        ),
        (
            controls_config("gpt-realtime-2.1-mini", delayed),
            Endpoint::custom(&provider.base_url(), Auth::Bearer(KEY.to_owned()))
                .expect("a loopback endpoint")
                .with_ephemeral_key(),
        ),
    ] {
        let mut call = connect(endpoint, &config).await.expect("the call connects");
        let session = created(&mut call).await;
        assert_eq!(session["reasoning"]["effort"], "low", "{session}");
        assert_eq!(session["parallel_tool_calls"], false);
        assert_eq!(session["truncation"]["retention_ratio"], 0.8);
        assert_eq!(session["audio"]["output"]["speed"], 1.25);
        update_is_accepted(&mut call, config).await;
        call.hangup().await.expect("the hang-up is accepted");
    }

    let calls = lines(&dir.join("calls.jsonl"));
    let sessions: Vec<&Value> = calls
        .iter()
        .filter(|call| call["session"].is_object())
        .map(|call| &call["session"])
        .collect();
    assert_eq!(
        sessions.len(),
        2,
        "the multipart session and the minted one: {calls:?}"
    );
    let transcription = |session: &Value| session["audio"]["input"]["transcription"].clone();
    assert_eq!(
        transcription(sessions[0]),
        serde_json::json!({"model": "gpt-transcribe", "keywords": ["Walkie", "PipeWire"]})
    );
    assert_eq!(
        transcription(sessions[1]),
        serde_json::json!({"model": "gpt-realtime-whisper", "delay": "minimal"})
    );
    for session in sessions {
        assert_eq!(
            session["truncation"],
            serde_json::json!({"type": "retention_ratio", "retention_ratio": 0.8})
        );
        assert_eq!(session["reasoning"], serde_json::json!({"effort": "low"}));
    }
    provider.shutdown().await;
}
