//! A call the provider drops comes back with its conversation: the real window, the real
//! local provider (started in this process, so the test can drop its calls), real audio. After
//! one spoken exchange the provider ends the call; Walkie says it is reconnecting, calls again,
//! gives the new session the exchange so far (`conversation.item.create`, seen in what the
//! provider received), and the next exchange appears under messages of its own beside the
//! first, on the screen and in the one saved conversation.
//!
//! Slow test (X server, WebKitWebDriver, PulseAudio); it runs in CI.

mod support;

use std::time::Duration;

use fantoccini::Locator;
use serde_json::Value;
use support::audio::require_test_audio;
use support::{
    AppDirs, Launch, SecretService, UI_TIMEOUT, WebviewApp, click, talk_to_custom_server, wait_for,
};
use support::{spoken_exchange, texts, texts_of_the_saved_conversation};
use walkie_local::{LocalProvider, ProviderConfig};

const TEST: &str = "redial";

/// The client events the provider received on its last call, as JSON.
fn client_events_of_last_call(trace: &std::path::Path) -> Vec<Value> {
    let lines = std::fs::read_to_string(trace.join("client-events.jsonl")).unwrap_or_default();
    let lines: Vec<Value> = lines
        .lines()
        .map(|line| serde_json::from_str(line).expect("a trace line is JSON"))
        .collect();
    let mut calls: Vec<&str> = Vec::new();
    for line in &lines {
        let id = line["call_id"].as_str().expect("a call id");
        if !calls.contains(&id) {
            calls.push(id);
        }
    }
    let Some(wanted) = calls.last() else {
        return Vec::new();
    };
    lines
        .iter()
        .filter(|line| line["call_id"] == *wanted)
        .map(|line| serde_json::from_str(line["text"].as_str().expect("a text")).expect("JSON"))
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn e2e_a_dropped_call_comes_back_with_the_conversation_so_far_and_goes_on_beside_it() {
    require_test_audio();
    let dirs = AppDirs::fresh(TEST);
    let provider = LocalProvider::start(ProviderConfig {
        trace_dir: Some(dirs.trace.clone()),
        ..ProviderConfig::default()
    })
    .await
    .expect("a local provider on loopback");
    // The provider wants the token it made: Settings gets it as the custom provider's key.
    let secrets = SecretService::start(&dirs);
    let app = WebviewApp::launch_with(TEST, Launch::in_dirs(&dirs, Some(&secrets))).await;
    let data_dir = app.data_dir().to_owned();
    let trace = dirs.trace.clone();
    let (base_url, token) = (provider.base_url(), provider.token().to_owned());
    app.run(|client| async move {
        talk_to_custom_server(&client, &base_url, &token).await;
        spoken_exchange(&client, 1.2, 0).await;
        let said_before = texts(&client, "user").await;
        let replied_before = texts(&client, "assistant").await;

        // Every status the line shows from now on, however briefly.
        client
            .execute(
                "window.statusesSeen = [];
                 const line = document.getElementById('status');
                 new MutationObserver(() => window.statusesSeen.push(line.textContent.trim()))
                   .observe(line, { childList: true, characterData: true, subtree: true });",
                vec![],
            )
            .await
            .expect("watching the status line");
        let calls_before_drop = provider.calls_total() as usize;
        assert_eq!(provider.drop_calls().await, 1, "one call to drop");
        let deadline = tokio::time::Instant::now() + UI_TIMEOUT;
        while provider.calls_total() as usize <= calls_before_drop {
            assert!(
                tokio::time::Instant::now() < deadline,
                "Walkie never called again"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        wait_for(&client, "#status", |status| status.starts_with("Ready")).await;
        let seen = client
            .execute("return window.statusesSeen;", vec![])
            .await
            .expect("the statuses seen");
        let seen: Vec<String> = serde_json::from_value(seen).expect("a list of texts");
        assert!(
            seen.iter()
                .any(|status| status.starts_with("Reconnecting… (attempt 1 of 6)")),
            "{seen:?}"
        );
        assert_eq!(
            client
                .find(Locator::Css("#connect"))
                .await
                .expect("the Connect button")
                .text()
                .await
                .expect("its label"),
            "New conversation",
            "Cancel only while reconnecting; back in a call, it starts a new conversation"
        );

        // The new session was given the exchange so far, before any turn of its own.
        let second_call = client_events_of_last_call(&trace);
        let restored: Vec<(String, String, String)> = second_call
            .iter()
            .take_while(|event| event["type"] != "input_audio_buffer.commit")
            .filter(|event| event["type"] == "conversation.item.create")
            .map(|event| {
                let item = &event["item"];
                let part = &item["content"][0];
                (
                    item["role"].as_str().unwrap_or_default().to_owned(),
                    part["type"].as_str().unwrap_or_default().to_owned(),
                    part["text"].as_str().unwrap_or_default().to_owned(),
                )
            })
            .collect();
        assert_eq!(
            restored,
            [
                (
                    "user".to_owned(),
                    "input_text".to_owned(),
                    said_before[0].clone()
                ),
                (
                    "assistant".to_owned(),
                    "output_text".to_owned(),
                    replied_before[0].clone()
                ),
            ]
        );

        // The next exchange is a message pair of its own, beside the first.
        spoken_exchange(&client, 0.8, 1).await;
        let said = texts(&client, "user").await;
        let replied = texts(&client, "assistant").await;
        assert_eq!(said.len(), 2, "{said:?}");
        assert_eq!(replied.len(), 2, "{replied:?}");
        assert_eq!(said[0], said_before[0], "the first question is untouched");
        assert_eq!(
            replied[0], replied_before[0],
            "the first reply is untouched"
        );
        assert_ne!(said[1], said[0], "0.8 s is described unlike 1.2 s");

        // One saved conversation holds all four messages, in order.
        let saved = texts_of_the_saved_conversation(
            &data_dir,
            "the redial went on in the same conversation",
        );
        assert_eq!(
            saved,
            [&said[0], &replied[0], &said[1], &replied[1]].map(String::as_str)
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn e2e_while_a_gone_provider_is_redialled_the_connect_button_cancels_the_attempts() {
    let dirs = AppDirs::fresh("redial_cancel");
    let provider = LocalProvider::start(ProviderConfig::default())
        .await
        .expect("a local provider on loopback");
    let secrets = SecretService::start(&dirs);
    let app =
        WebviewApp::launch_with("redial_cancel", Launch::in_dirs(&dirs, Some(&secrets))).await;
    let (base_url, token) = (provider.base_url(), provider.token().to_owned());
    app.run(|client| async move {
        talk_to_custom_server(&client, &base_url, &token).await;

        // The provider goes away for good: every redial finds its port closed.
        provider.shutdown().await;
        wait_for(&client, "#status", |status| {
            status.starts_with("Reconnecting… (attempt")
        })
        .await;
        wait_for(&client, "#connect", |label| label == "Cancel").await;
        click(&client, "#connect").await;
        wait_for(&client, "#status", |status| {
            status == "Not connected: reconnecting was cancelled. Press Connect to try again."
        })
        .await;
        wait_for(&client, "#connect", |label| label == "Connect").await;
    })
    .await;
}
