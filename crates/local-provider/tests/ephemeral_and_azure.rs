//! Ephemeral keys (`POST /v1/realtime/client_secrets`, then a raw SDP call with `Bearer ek_…`
//! that gets the key's session) and Azure's GA flow under `/openai/v1` (`api-key` to mint, the
//! ephemeral key to call), against the real provider over loopback WebRTC, with the request
//! shapes the trace recorded.

mod common;

use common::{Connected, connect, http, lines, multipart, offer, traced_provider, until};
use serde_json::{Value, json};
use walkie_local::LocalProvider;

const KEY: &str = "sk-local-std";

async fn provider_with_trace(name: &str) -> (LocalProvider, std::path::PathBuf) {
    traced_provider(name, KEY).await
}

async fn answer(request: reqwest::RequestBuilder) -> (u16, Value) {
    let response = request.send().await.expect("the provider answers");
    let status = response.status().as_u16();
    let body = response.json().await.expect("a JSON body");
    (status, body)
}

fn now_unix_s() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970")
        .as_secs()
}

fn trace_text(dir: &std::path::Path) -> String {
    ["calls.jsonl", "client-events.jsonl"]
        .iter()
        .map(|file| std::fs::read_to_string(dir.join(file)).unwrap_or_default())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_secret_gives_the_raw_sdp_call_it_places_its_session() {
    let (provider, dir) = provider_with_trace("ephemeral").await;
    let base = provider.base_url();
    let session = json!({
        "type": "realtime",
        "model": "gpt-realtime",
        "instructions": "From the key.",
        "audio": {"input": {"turn_detection": null}, "output": {"voice": "cedar"}}
    });
    let (status, minted) = answer(
        http()
            .post(format!("{base}/v1/realtime/client_secrets"))
            .bearer_auth(KEY)
            .json(&json!({"expires_after": {"anchor": "created_at", "seconds": 600}, "session": session})),
    )
    .await;
    assert_eq!(status, 200, "{minted}");
    let value = minted["value"].as_str().expect("a value").to_owned();
    assert!(value.starts_with("ek_") && value.len() > 20, "{value}");
    let expires_at = minted["expires_at"].as_u64().expect("unix seconds");
    assert!(expires_at.abs_diff(now_unix_s() + 600) <= 5, "{expires_at}");
    assert_eq!(minted["session"]["object"], "realtime.session");
    assert!(
        minted["session"]["id"]
            .as_str()
            .is_some_and(|id| id.starts_with("sess_"))
    );
    assert_eq!(minted["session"]["instructions"], "From the key.");
    assert_eq!(minted["session"]["audio"]["output"]["voice"], "cedar");

    let pending = offer().await;
    let request = http()
        .post(format!("{base}/v1/realtime/calls"))
        .bearer_auth(&value)
        .header("content-type", "application/sdp")
        .body(pending.sdp().to_owned());
    let Connected { mut peer, call_id } = connect(request, pending).await;
    let (created, _) = until(&mut peer, "session.created").await;
    assert_eq!(created["session"]["model"], "gpt-realtime");
    assert_eq!(created["session"]["instructions"], "From the key.");
    assert_eq!(created["session"]["audio"]["output"]["voice"], "cedar");

    let calls = lines(&dir.join("calls.jsonl"));
    assert_eq!(calls.len(), 2, "{calls:#?}");
    assert_eq!(calls[0]["path"], "/v1/realtime/client_secrets");
    assert_eq!(
        (&calls[0]["form"], &calls[0]["auth"], &calls[0]["status"]),
        (&json!("json"), &json!("bearer"), &json!(200))
    );
    assert_eq!(calls[0]["session"], session);
    assert_eq!(calls[1]["path"], "/v1/realtime/calls");
    assert_eq!(
        (&calls[1]["form"], &calls[1]["auth"], &calls[1]["status"]),
        (&json!("sdp"), &json!("bearer_ephemeral"), &json!(201))
    );
    assert_eq!(calls[1]["call_id"], call_id.as_str());
    let traced = trace_text(&dir);
    assert!(!traced.contains(KEY), "the trace holds the standard key");
    assert!(
        !traced.contains(&value),
        "the trace holds the ephemeral key"
    );
    peer.handle.close().await;

    // A multipart call with the same key: its session part wins where it speaks.
    let pending = offer().await;
    let over = json!({"type": "realtime", "instructions": "From the part."});
    let request = http()
        .post(format!("{base}/v1/realtime/calls"))
        .bearer_auth(&value)
        .multipart(multipart(pending.sdp(), Some(&over)));
    let Connected { mut peer, .. } = connect(request, pending).await;
    let (created, _) = until(&mut peer, "session.created").await;
    assert_eq!(created["session"]["instructions"], "From the part.");
    assert_eq!(created["session"]["audio"]["output"]["voice"], "cedar");
    assert_eq!(created["session"]["model"], "gpt-realtime");
    peer.handle.close().await;
    provider.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_secrets_and_ephemeral_calls_refuse_bad_keys_with_typed_errors() {
    let (provider, dir) = provider_with_trace("ephemeral-refused").await;
    let base = provider.base_url();
    let secrets = format!("{base}/v1/realtime/client_secrets");
    let body = json!({"session": {"type": "realtime"}});
    for request in [
        http().post(&secrets).json(&body),
        http().post(&secrets).bearer_auth("sk-wrong").json(&body),
        http().post(&secrets).header("api-key", KEY).json(&body),
        http().post(&secrets).bearer_auth("ek_0123").json(&body),
    ] {
        let (status, refused) = answer(request).await;
        assert_eq!(status, 401, "{refused}");
        assert_eq!(refused["error"]["type"], "invalid_request_error");
        assert_eq!(refused["error"]["code"], "invalid_api_key");
    }
    let (status, refused) = answer(
        http()
            .post(&secrets)
            .bearer_auth(KEY)
            .json(&json!({"expires_after": {"anchor": "created_at", "seconds": 5}})),
    )
    .await;
    assert_eq!(status, 400);
    assert_eq!(refused["error"]["param"], "expires_after.seconds");
    let (status, refused) = answer(
        http()
            .post(&secrets)
            .bearer_auth(KEY)
            .json(&json!({"session": {"instructions": "no type"}})),
    )
    .await;
    assert_eq!(status, 400);
    assert_eq!(refused["error"]["param"], "session.type");

    let (status, minted) = answer(http().post(&secrets).bearer_auth(KEY).json(&body)).await;
    assert_eq!(status, 200);
    let value = minted["value"].as_str().expect("a value").to_owned();
    let pending = offer().await;
    let call = |key: &str| {
        http()
            .post(format!("{base}/v1/realtime/calls"))
            .bearer_auth(key)
            .header("content-type", "application/sdp")
            .body(pending.sdp().to_owned())
    };
    let (status, refused) = answer(call("ek_unknown")).await;
    assert_eq!(status, 401);
    assert_eq!(refused["error"]["code"], "invalid_api_key");
    provider.expire_client_secrets().await;
    let (status, refused) = answer(call(&value)).await;
    assert_eq!(status, 401);
    assert!(
        refused["error"]["message"]
            .as_str()
            .is_some_and(|message| message.contains("expired")),
        "{refused}"
    );
    assert_eq!(provider.calls_total(), 0);
    // Refused requests are traced with what they carried.
    let calls = lines(&dir.join("calls.jsonl"));
    let refused_secrets: Vec<&Value> = calls
        .iter()
        .filter(|line| line["path"] == "/v1/realtime/client_secrets" && line["status"] == 401)
        .collect();
    assert_eq!(refused_secrets.len(), 4);
    for line in refused_secrets {
        assert_eq!(line["session"], body["session"], "{line}");
    }
    provider.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_azure_flow_mints_with_api_key_and_calls_with_the_ephemeral_key() {
    let (provider, dir) = provider_with_trace("azure").await;
    let base = provider.base_url();
    let secrets = format!("{base}/openai/v1/realtime/client_secrets");
    let calls_url = format!("{base}/openai/v1/realtime/calls");

    let (status, refused) = answer(
        http()
            .post(&secrets)
            .header("api-key", KEY)
            .json(&json!({"session": {"type": "realtime"}})),
    )
    .await;
    assert_eq!(status, 400, "Azure needs the deployment as the model");
    assert_eq!(refused["error"]["param"], "session.model");

    let session =
        json!({"type": "realtime", "model": "my-realtime-deployment", "instructions": "Azure."});
    let (status, minted) = answer(
        http()
            .post(&secrets)
            .header("api-key", KEY)
            .json(&json!({"session": session})),
    )
    .await;
    assert_eq!(status, 200, "{minted}");
    let value = minted["value"].as_str().expect("a value").to_owned();

    // The undocumented old shape (api-key on the calls path) is refused.
    let pending = offer().await;
    let (status, refused) = answer(
        http()
            .post(format!("{calls_url}?model=my-realtime-deployment"))
            .header("api-key", KEY)
            .header("content-type", "application/sdp")
            .body(pending.sdp().to_owned()),
    )
    .await;
    assert_eq!(status, 401, "{refused}");

    let response = http()
        .post(&calls_url)
        .bearer_auth(&value)
        .header("content-type", "application/sdp")
        .body(pending.sdp().to_owned());
    let Connected { mut peer, call_id } = connect(response, pending).await;
    let (created, _) = until(&mut peer, "session.created").await;
    assert_eq!(created["session"]["model"], "my-realtime-deployment");
    assert_eq!(created["session"]["instructions"], "Azure.");

    let status = http()
        .post(format!("{calls_url}/{call_id}/hangup"))
        .header("api-key", KEY)
        .send()
        .await
        .expect("answered")
        .status();
    assert_eq!(status, 200);

    let calls = lines(&dir.join("calls.jsonl"));
    let shape: Vec<(Value, Value, Value, Value, Value)> = calls
        .iter()
        .map(|line| {
            (
                line["path"].clone(),
                line["query"].clone(),
                line["form"].clone(),
                line["auth"].clone(),
                line["status"].clone(),
            )
        })
        .collect();
    let hangup_path = format!("/openai/v1/realtime/calls/{call_id}/hangup");
    assert_eq!(
        shape,
        [
            (
                json!("/openai/v1/realtime/client_secrets"),
                Value::Null,
                json!("json"),
                json!("api_key"),
                json!(400)
            ),
            (
                json!("/openai/v1/realtime/client_secrets"),
                Value::Null,
                json!("json"),
                json!("api_key"),
                json!(200)
            ),
            (
                json!("/openai/v1/realtime/calls"),
                json!("model=my-realtime-deployment"),
                json!("sdp"),
                json!("api_key"),
                json!(401)
            ),
            (
                json!("/openai/v1/realtime/calls"),
                Value::Null,
                json!("sdp"),
                json!("bearer_ephemeral"),
                json!(201)
            ),
            (
                json!(hangup_path),
                Value::Null,
                json!("other"),
                json!("api_key"),
                json!(200)
            ),
        ]
    );
    assert_eq!(calls[1]["session"], session);
    assert_eq!(calls[3]["call_id"], call_id.as_str());
    let traced = trace_text(&dir);
    assert!(
        !traced.contains(KEY) && !traced.contains(&value),
        "a key in the trace"
    );
    peer.handle.close().await;
    provider.shutdown().await;
}
