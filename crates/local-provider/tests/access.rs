//! Who may use the provider: a caller holding the token it made for this run, and only
//! through a `Host` that names it (127.0.0.1 or localhost with its port), so that neither
//! another program on the machine nor a web page that rebinds a DNS name to 127.0.0.1 can place
//! calls or mint keys. The token never reaches the trace.

mod common;

use common::{Connected, calls, connect, http, lines, multipart, offer, raw_sdp, scratch_dir};
use serde_json::{Value, json};
use walkie_local::{LocalProvider, ProviderConfig};

async fn refused(request: reqwest::RequestBuilder) -> (u16, Value) {
    let response = request.send().await.expect("the provider answers");
    let status = response.status().as_u16();
    let body = response.json().await.expect("an OpenAI-shaped error body");
    (status, body)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_run_makes_its_own_token_and_refuses_calls_without_it() {
    let dir = scratch_dir("access-token");
    let provider = LocalProvider::start(ProviderConfig {
        trace_dir: Some(dir.clone()),
        ..ProviderConfig::default()
    })
    .await
    .expect("the provider listens");
    let other = LocalProvider::start(ProviderConfig::default())
        .await
        .expect("a second provider listens");
    let token = provider.token().to_owned();
    assert!(
        token.len() >= 32,
        "a token hard to guess: {} chars",
        token.len()
    );
    assert_ne!(token, other.token(), "each run makes its own");
    let base = provider.base_url();
    let pending = offer().await;

    let no_token = http()
        .post(format!("{base}/v1/realtime/calls"))
        .multipart(multipart(pending.sdp(), None));
    let (status, body) = refused(no_token).await;
    assert_eq!(
        (status, &body["error"]["code"]),
        (401, &json!("invalid_api_key"))
    );
    let (status, _) = refused(
        http()
            .post(format!("{base}/v1/realtime/calls"))
            .bearer_auth(other.token())
            .multipart(multipart(pending.sdp(), None)),
    )
    .await;
    assert_eq!(status, 401, "another run's token");
    let (status, _) = refused(
        http()
            .post(format!("{base}/v1/realtime/client_secrets"))
            .json(&json!({"session": {"type": "realtime"}})),
    )
    .await;
    assert_eq!(status, 401, "no key is minted without the token");
    assert_eq!(provider.calls_total(), 0);

    let Connected { peer, .. } = connect(raw_sdp(calls(&provider), pending.sdp()), pending).await;
    assert_eq!(provider.calls_total(), 1);
    peer.handle.close().await;

    let trace = lines(&dir.join("calls.jsonl"));
    assert_eq!(trace.len(), 4, "{trace:#?}");
    let text = std::fs::read_to_string(dir.join("calls.jsonl")).expect("the trace");
    assert!(!text.contains(&token), "the trace holds the token");
    assert!(
        !text.contains(other.token()),
        "the trace holds a presented token"
    );
    assert!(
        !format!(
            "{:?}",
            ProviderConfig {
                token: Some(token.clone()),
                ..ProviderConfig::default()
            }
        )
        .contains(&token),
        "a printed config shows no token"
    );
    provider.shutdown().await;
    other.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_header_that_does_not_name_the_provider_is_refused_whatever_the_token() {
    let provider = LocalProvider::start(ProviderConfig::default())
        .await
        .expect("the provider listens");
    let port = provider.addr().port();
    let pending = offer().await;
    for host in [
        format!("rebound.example:{port}"),
        "127.0.0.1".to_owned(),
        format!("127.0.0.1:{}", port.wrapping_add(1)),
        format!("[::1]:{port}"),
    ] {
        let (status, body) =
            refused(raw_sdp(calls(&provider), pending.sdp()).header(reqwest::header::HOST, &host))
                .await;
        assert_eq!(status, 421, "Host {host}: {body}");
        assert_eq!(body["error"]["code"], "invalid_host", "{body}");
        let message = body["error"]["message"].as_str().expect("a message");
        assert!(
            message.contains(&format!("127.0.0.1:{port}")),
            "it says which address to use: {message}"
        );
    }
    let (status, _) = refused(
        http()
            .post(format!(
                "{}/v1/realtime/client_secrets",
                provider.base_url()
            ))
            .bearer_auth(provider.token())
            .header(reqwest::header::HOST, format!("rebound.example:{port}"))
            .json(&json!({"session": {"type": "realtime"}})),
    )
    .await;
    assert_eq!(status, 421, "minting is refused too");
    assert_eq!(provider.calls_total(), 0);

    // The provider's own names are accepted, in any case.
    let request = raw_sdp(calls(&provider), pending.sdp())
        .header(reqwest::header::HOST, format!("LocalHost:{port}"));
    let Connected { peer, .. } = connect(request, pending).await;
    peer.handle.close().await;
    provider.shutdown().await;
}
