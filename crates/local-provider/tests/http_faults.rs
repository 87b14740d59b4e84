//! The calls endpoint's injected HTTP faults, as a client sees them: each error status with the
//! API's error body (and `Retry-After` when asked), a limited number of failing calls, and a
//! call answered without `Location` that still connects.

mod common;

use common::{calls, offer, raw_sdp, until};
use serde_json::Value;
use walkie_local::{HttpFault, LocalProvider, ProviderConfig};
use walkie_rtc::PeerEvent;

async fn provider(fault: HttpFault, times: Option<u64>) -> LocalProvider {
    LocalProvider::start(ProviderConfig {
        calls_fault: Some(fault),
        calls_fault_times: times,
        ..ProviderConfig::default()
    })
    .await
    .expect("the provider listens")
}

async fn post_offer(provider: &LocalProvider, sdp: &str) -> reqwest::Response {
    raw_sdp(calls(provider), sdp)
        .send()
        .await
        .expect("the provider answers")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_error_status_comes_with_the_api_error_body() {
    let pending = offer().await;
    let cases: [(u16, Option<&str>, Option<u64>, &str); 7] = [
        (
            400,
            Some("Invalid 'session.audio': bad"),
            None,
            "invalid_request_error",
        ),
        (401, None, None, "invalid_request_error"),
        (403, None, None, "request_forbidden"),
        (404, None, None, "invalid_request_error"),
        (429, None, Some(7), "requests"),
        (500, None, None, "server_error"),
        (503, None, None, "server_error"),
    ];
    for (status, message, retry_after_s, kind) in cases {
        let provider = provider(
            HttpFault::Status {
                status,
                message: message.map(str::to_owned),
                retry_after_s,
            },
            None,
        )
        .await;
        let response = post_offer(&provider, pending.sdp()).await;
        assert_eq!(response.status().as_u16(), status);
        let retry_after = response
            .headers()
            .get("retry-after")
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned);
        assert_eq!(
            retry_after,
            retry_after_s.map(|s| s.to_string()),
            "{status}"
        );
        assert!(response.headers().get("location").is_none());
        let body: Value = response.json().await.expect("a JSON error body");
        let error = &body["error"];
        assert_eq!(error["type"], kind, "{status}: {body}");
        assert!(
            error["code"].is_string() && error["param"].is_null(),
            "{body}"
        );
        let text = error["message"].as_str().expect("a message");
        assert!(!text.is_empty());
        if let Some(message) = message {
            assert_eq!(text, message);
        }
        assert_eq!(provider.calls_total(), 0, "no call behind a {status}");
        provider.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_limited_fault_fails_only_the_first_calls() {
    let provider = provider(
        HttpFault::Status {
            status: 503,
            message: None,
            retry_after_s: Some(1),
        },
        Some(1),
    )
    .await;
    let pending = offer().await;
    assert_eq!(post_offer(&provider, pending.sdp()).await.status(), 503);
    let retried = post_offer(&provider, pending.sdp()).await;
    assert_eq!(retried.status(), 201);
    assert!(retried.headers().get("location").is_some());
    provider.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_answered_without_location_still_connects() {
    let provider = provider(HttpFault::NoLocation, None).await;
    let pending = offer().await;
    let response = post_offer(&provider, pending.sdp()).await;
    assert_eq!(response.status(), 201);
    assert!(response.headers().get("location").is_none());
    let answer = response.text().await.expect("the SDP answer");
    let mut peer = pending.accept(&answer).expect("the answer applies");
    tokio::time::timeout(common::WAIT, async {
        while !matches!(
            peer.events.recv().await,
            Some(PeerEvent::DataChannelOpen { .. })
        ) {}
    })
    .await
    .expect("the data channel opens");
    until(&mut peer, "session.created").await;
    assert_eq!(provider.calls_total(), 1);
    peer.handle.close().await;
    provider.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_multipart_call_is_traced_with_its_parts_and_session() {
    let dir = common::scratch_dir("fault-trace");
    let provider = LocalProvider::start(ProviderConfig {
        calls_fault: Some(HttpFault::Status {
            status: 429,
            message: None,
            retry_after_s: Some(2),
        }),
        trace_dir: Some(dir.clone()),
        ..ProviderConfig::default()
    })
    .await
    .expect("the provider listens");
    let pending = offer().await;
    let session = serde_json::json!({"type": "realtime", "instructions": "Seen by the oracle."});
    let status = calls(&provider)
        .multipart(common::multipart(pending.sdp(), Some(&session)))
        .send()
        .await
        .expect("answered")
        .status();
    assert_eq!(status, 429);
    let calls = common::lines(&dir.join("calls.jsonl"));
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0]["parts"], serde_json::json!(["sdp", "session"]));
    assert_eq!(calls[0]["session"], session);
    assert_eq!(calls[0]["status"], 429);
    assert_eq!(calls[0]["call_id"], Value::Null);
    provider.shutdown().await;
}
