//! Both documented forms of `POST /v1/realtime/calls` against the real provider over loopback
//! WebRTC: the raw SDP offer, and multipart with `sdp` and `session` parts (the session is
//! honoured from the first event on). And the trace the oracle reads: every request and every
//! data-channel text, never the key.

mod common;

use common::{
    Connected, WAIT, calls, connect, http, lines, multipart, offer, raw_sdp, scratch_dir, send,
    traced_provider, until,
};
use serde_json::{Value, json};
use walkie_local::{LocalProvider, ProviderConfig};

const KEY: &str = "sk-never-traced";

fn multipart_session() -> Value {
    json!({
        "type": "realtime",
        "model": "gpt-realtime",
        "instructions": "Answer in one short sentence.",
        "output_modalities": ["audio"],
        "audio": {
            "input": {
                "format": {"type": "audio/pcm", "rate": 24000},
                "transcription": {"model": "gpt-4o-mini-transcribe", "language": "en"},
                "turn_detection": {"type": "server_vad", "silence_duration_ms": 700, "create_response": true}
            },
            "output": {"format": {"type": "audio/pcm", "rate": 24000}, "voice": "marin"}
        },
        "tools": [{"type": "function", "name": "get_time", "description": "Local time", "parameters": {"type": "object", "properties": {}}}]
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_raw_sdp_call_connects_and_starts_on_the_provider_defaults() {
    let provider = LocalProvider::start(ProviderConfig::default())
        .await
        .expect("the provider listens");
    let pending = offer().await;
    let Connected { mut peer, .. } =
        connect(raw_sdp(calls(&provider), pending.sdp()), pending).await;
    let (created, _) = until(&mut peer, "session.created").await;
    let session = &created["session"];
    assert_eq!(session["model"], "walkie-local-echo");
    assert_eq!(session["instructions"], "");
    assert_eq!(session["audio"]["output"]["voice"], "echo-of-you");
    assert_eq!(session["audio"]["input"]["turn_detection"], Value::Null);
    peer.handle.close().await;
    provider.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_multipart_call_starts_with_the_session_it_was_created_with() {
    let provider = LocalProvider::start(ProviderConfig::default())
        .await
        .expect("the provider listens");
    let pending = offer().await;
    let request = calls(&provider).multipart(multipart(pending.sdp(), Some(&multipart_session())));
    let Connected { mut peer, .. } = connect(request, pending).await;
    let (created, _) = until(&mut peer, "session.created").await;
    let session = &created["session"];
    assert_eq!(session["model"], "gpt-realtime");
    assert_eq!(session["instructions"], "Answer in one short sentence.");
    assert_eq!(session["audio"]["output"]["voice"], "marin");
    assert_eq!(
        session["audio"]["input"]["transcription"]["model"],
        "gpt-4o-mini-transcribe"
    );
    let detection = &session["audio"]["input"]["turn_detection"];
    assert_eq!(detection["type"], "server_vad");
    assert_eq!(detection["silence_duration_ms"], 700);
    assert_eq!(session["tools"][0]["name"], "get_time");

    // The session is in force, not only shown: an update of one field keeps the others.
    send(
        &peer,
        r#"{"type":"session.update","session":{"type":"realtime","instructions":"Shorter."}}"#,
    )
    .await;
    let (updated, _) = until(&mut peer, "session.updated").await;
    assert_eq!(updated["session"]["instructions"], "Shorter.");
    assert_eq!(updated["session"]["audio"]["output"]["voice"], "marin");
    assert_eq!(
        updated["session"]["audio"]["input"]["turn_detection"]["type"],
        "server_vad"
    );
    peer.handle.close().await;
    provider.shutdown().await;
}

async fn refused(request: reqwest::RequestBuilder) -> (u16, Value) {
    let response = request.send().await.expect("the provider answers");
    let status = response.status().as_u16();
    let body: Value = response.json().await.expect("an OpenAI-shaped error body");
    (status, body)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_call_requests_get_typed_errors() {
    let provider = LocalProvider::start(ProviderConfig::default())
        .await
        .expect("the provider listens");
    let pending = offer().await;

    let no_sdp = reqwest::multipart::Form::new().text("session", multipart_session().to_string());
    let (status, body) = refused(calls(&provider).multipart(no_sdp)).await;
    assert_eq!(status, 400);
    assert_eq!(body["error"]["code"], "missing_required_parameter");
    assert_eq!(body["error"]["param"], "sdp");

    let untyped = json!({"instructions": "no type"});
    let (status, body) =
        refused(calls(&provider).multipart(multipart(pending.sdp(), Some(&untyped)))).await;
    assert_eq!(status, 400);
    assert_eq!(body["error"]["param"], "session.type");
    assert_eq!(body["error"]["type"], "invalid_request_error");

    let not_json = reqwest::multipart::Form::new()
        .text("sdp", pending.sdp().to_owned())
        .text("session", "{not json");
    let (status, body) = refused(calls(&provider).multipart(not_json)).await;
    assert_eq!(status, 400);
    assert_eq!(body["error"]["code"], "invalid_json");

    let (status, body) = refused(
        calls(&provider)
            .header("content-type", "text/plain")
            .body(pending.sdp().to_owned()),
    )
    .await;
    assert_eq!(status, 415);
    assert_eq!(body["error"]["code"], "unsupported_content_type");
    assert_eq!(provider.calls_total(), 0, "no call was created");
    provider.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_trace_records_every_request_and_client_text_and_never_the_key() {
    let (provider, dir) = traced_provider("trace", KEY).await;
    let client = http();
    let base = provider.base_url();
    let pending = offer().await;
    let request = client
        .post(format!("{base}/v1/realtime/calls?probe=1"))
        .bearer_auth(KEY)
        .multipart(multipart(pending.sdp(), Some(&multipart_session())));
    let Connected { mut peer, call_id } = connect(request, pending).await;
    until(&mut peer, "session.created").await;
    let update = r#"{"type":"session.update","event_id":"evt_1","session":{"type":"realtime","instructions":"Ünïcode \"quoted\"\n"}}"#;
    send(&peer, update).await;
    until(&mut peer, "session.updated").await;
    send(&peer, "{not json").await;
    until(&mut peer, "error").await;

    // A raw SDP call refused for its key is recorded too.
    let refused_offer = offer().await;
    let status = client
        .post(format!("{base}/v1/realtime/calls"))
        .bearer_auth("sk-wrong")
        .header("content-type", "application/sdp")
        .body(refused_offer.sdp().to_owned())
        .send()
        .await
        .expect("answered")
        .status();
    assert_eq!(status, 401);
    let status = client
        .post(format!("{base}/v1/realtime/calls/{call_id}/hangup"))
        .bearer_auth(KEY)
        .send()
        .await
        .expect("answered")
        .status();
    assert_eq!(status, 200);

    let calls = lines(&dir.join("calls.jsonl"));
    assert_eq!(calls.len(), 3, "{calls:#?}");
    let created = &calls[0];
    assert_eq!(created["method"], "POST");
    assert_eq!(created["path"], "/v1/realtime/calls");
    assert_eq!(created["query"], "probe=1");
    assert!(
        created["content_type"]
            .as_str()
            .is_some_and(|value| value.starts_with("multipart/form-data; boundary=")),
        "{created}"
    );
    assert_eq!(created["form"], "multipart");
    assert_eq!(created["parts"], json!(["sdp", "session"]));
    assert_eq!(created["auth"], "bearer");
    assert_eq!(created["session"], multipart_session());
    assert_eq!(created["status"], 201);
    assert_eq!(created["call_id"], call_id.as_str());
    let raw = &calls[1];
    assert_eq!(
        (&raw["form"], &raw["parts"], &raw["status"]),
        (&json!("sdp"), &json!([]), &json!(401))
    );
    assert_eq!(
        (&raw["query"], &raw["session"]),
        (&Value::Null, &Value::Null)
    );
    assert_eq!(raw["call_id"], Value::Null);
    let hangup = &calls[2];
    assert_eq!(
        hangup["path"],
        format!("/v1/realtime/calls/{call_id}/hangup")
    );
    assert_eq!(
        (&hangup["status"], &hangup["auth"]),
        (&json!(200), &json!("bearer"))
    );

    let texts = lines(&dir.join("client-events.jsonl"));
    assert_eq!(texts.len(), 2, "{texts:#?}");
    assert_eq!(texts[0]["text"], update, "the text exactly as received");
    assert_eq!(texts[1]["text"], "{not json");
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970")
        .as_millis() as u64;
    for line in &texts {
        assert_eq!(line["call_id"], call_id.as_str());
        let at = line["received_at_unix_ms"].as_u64().expect("a number");
        assert!(
            at <= now_ms && now_ms - at < WAIT.as_millis() as u64 * 3,
            "{at}"
        );
    }
    for file in ["calls.jsonl", "client-events.jsonl"] {
        let text = std::fs::read_to_string(dir.join(file)).expect("readable");
        assert!(!text.contains(KEY), "{file} holds the key");
        assert!(!text.contains("sk-wrong"), "{file} holds a presented key");
        assert!(text.ends_with('\n'), "{file} ends with a whole line");
    }
    peer.handle.close().await;
    provider.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_provider_binary_keeps_the_trace_named_by_walkie_local_trace() {
    use tokio::io::AsyncBufReadExt;
    let dir = scratch_dir("trace-env");
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_walkie-local-provider"))
        .args(["--port", "0"])
        .env(walkie_local::TRACE_ENV, &dir)
        .env_remove("WALKIE_LOCAL_TOKEN")
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("the binary starts");
    let stdout = child.stdout.take().expect("piped stdout");
    let mut stdout = tokio::io::BufReader::new(stdout);
    let mut first = String::new();
    tokio::time::timeout(WAIT, stdout.read_line(&mut first))
        .await
        .expect("the binary says where it listens")
        .expect("stdout is readable");
    // No token was given: it made one for this run, and says it once.
    let mut second = String::new();
    tokio::time::timeout(WAIT, stdout.read_line(&mut second))
        .await
        .expect("the binary says which token it wants")
        .expect("stdout is readable");
    let token = second
        .split("Bearer ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .expect("the token follows Bearer")
        .to_owned();
    assert!(token.len() >= 32, "{second}");
    let base = first
        .trim()
        .rsplit(' ')
        .next()
        .expect("a URL at the end")
        .to_owned();
    let status = http()
        .post(format!("{base}/v1/realtime?model=gpt-4o-realtime-preview"))
        .header("content-type", "application/sdp")
        .body("v=0")
        .send()
        .await
        .expect("answered")
        .status();
    assert_eq!(status, 400, "the retired beta endpoint");
    let status = http()
        .post(format!("{base}/v1/realtime/sessions"))
        .bearer_auth("sk-not-traced")
        .json(&json!({"model": "gpt-4o-realtime-preview"}))
        .send()
        .await
        .expect("answered")
        .status();
    assert_eq!(status, 404, "a path the provider does not serve");
    let status = http()
        .post(format!("{base}/v1/realtime/calls"))
        .bearer_auth(&token)
        .header("content-type", "text/plain")
        .body("v=0")
        .send()
        .await
        .expect("answered")
        .status();
    assert_eq!(status, 415, "past the token check");
    child.kill().await.expect("the binary stops");
    let calls = lines(&dir.join("calls.jsonl"));
    assert_eq!(calls.len(), 3, "{calls:?}");
    let trace = std::fs::read_to_string(dir.join("calls.jsonl")).expect("the trace");
    assert!(!trace.contains(&token), "the trace holds the token");
    assert_eq!(calls[0]["path"], "/v1/realtime");
    assert_eq!(calls[0]["query"], "model=gpt-4o-realtime-preview");
    assert_eq!(calls[0]["auth"], "none");
    assert_eq!(
        (
            &calls[1]["path"],
            &calls[1]["form"],
            &calls[1]["auth"],
            &calls[1]["status"]
        ),
        (
            &json!("/v1/realtime/sessions"),
            &json!("json"),
            &json!("bearer"),
            &json!(404)
        )
    );
}
