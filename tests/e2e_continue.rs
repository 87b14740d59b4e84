//! A past conversation goes on from History: the real window, the real local provider (started
//! in this process, with its trace of what it received), real audio. After one spoken exchange
//! the user presses Connect (a new conversation), opens History, opens the first conversation
//! and continues it: the panel closes, the window shows its messages again, the new call's
//! session is given them (`conversation.item.create`, seen in what the provider received)
//! before any turn, and the next exchange is saved in the first conversation's folder with the
//! numbers after its earlier ones.
//!
//! Slow test (X server, WebKitWebDriver, PulseAudio); it runs in CI.

mod support;

use std::time::Duration;

use fantoccini::{Client, Locator};
use serde_json::Value;
use support::audio::require_test_audio;
use support::{
    AppDirs, Launch, SecretService, UI_TIMEOUT, WebviewApp, click, save_custom_key, wait_for,
};
use support::{spoken_exchange, texts};
use walkie_local::{LocalProvider, ProviderConfig};
use walkie_store::{Store, conversations_dir};

const TEST: &str = "continue";

/// The client events the provider received on its `call`-th call (from 1), as JSON.
fn client_events_of_call(trace: &std::path::Path, call: usize) -> Vec<Value> {
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
    let Some(wanted) = calls.get(call - 1) else {
        return Vec::new();
    };
    lines
        .iter()
        .filter(|line| line["call_id"] == *wanted)
        .map(|line| serde_json::from_str(line["text"].as_str().expect("a text")).expect("JSON"))
        .collect()
}

/// (role, content type, text) of each `conversation.item.create` the call sent before its
/// first commit.
fn restored_before_any_turn(events: &[Value]) -> Vec<(String, String, String)> {
    events
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
        .collect()
}

/// The local provider on loopback, tracing into the test's folder, and Walkie's settings
/// calling it as a custom server; the secret store the app is to be launched with.
async fn local_provider_as_custom_server(dirs: &AppDirs) -> (LocalProvider, SecretService) {
    let provider = LocalProvider::start(ProviderConfig {
        trace_dir: Some(dirs.trace.clone()),
        ..ProviderConfig::default()
    })
    .await
    .expect("a local provider on loopback");
    let settings = serde_json::json!({
        "provider": "custom",
        "customBaseUrl": provider.base_url(),
    });
    std::fs::write(dirs.config.join("settings.json"), settings.to_string())
        .expect("writing the settings");
    (provider, SecretService::start(dirs))
}

/// The provider refuses a call without the token it made for this run; with it saved as the
/// custom key, Walkie calls again and is ready.
async fn connect_with_the_providers_token(client: &Client, token: &str) {
    wait_for(client, "#status", |status| {
        status.starts_with("Not connected: 127.0.0.1 refused the API key")
    })
    .await;
    save_custom_key(client, token).await;
    wait_for(client, "#status", |status| status.starts_with("Ready")).await;
}

/// Waits until the provider has taken `calls` calls in all.
async fn wait_for_calls(provider: &LocalProvider, calls: u64) {
    let deadline = tokio::time::Instant::now() + UI_TIMEOUT;
    while provider.calls_total() < calls {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the provider took {} calls, not {calls}",
            provider.calls_total()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Waits until the data folder holds `count` conversations.
async fn wait_for_conversations(store: &Store, count: usize) {
    let deadline = tokio::time::Instant::now() + UI_TIMEOUT;
    loop {
        let saved = store.list().expect("the conversations");
        if saved.len() == count {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{} conversations, not {count}: {saved:?}",
            saved.len()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn e2e_a_past_conversation_continued_from_history_is_given_to_the_new_call_and_goes_on_in_its_folder()
 {
    require_test_audio();
    let dirs = AppDirs::fresh(TEST);
    let (provider, secrets) = local_provider_as_custom_server(&dirs).await;
    let app = WebviewApp::launch_with(TEST, Launch::in_dirs(&dirs, Some(&secrets))).await;
    let store = Store::new(conversations_dir(app.data_dir()));
    let trace = dirs.trace.clone();
    let token = provider.token().to_owned();
    app.run(|client| async move {
        connect_with_the_providers_token(&client, &token).await;
        spoken_exchange(&client, 1.2, 0).await;
        let spent_before = wait_for(&client, "#spending", |line| {
            line.contains(" tokens · ") && line.contains(" · $")
        })
        .await;
        let said_before = texts(&client, "user").await;
        let replied_before = texts(&client, "assistant").await;
        assert_eq!((said_before.len(), replied_before.len()), (1, 1));
        let saved = store.list().expect("the conversations");
        assert_eq!(saved.len(), 1, "{saved:?}");
        let first = saved[0].id.clone();

        // Connect: a new conversation, in a folder of its own.
        click(&client, "#connect").await;
        wait_for_calls(&provider, 2).await;
        wait_for(&client, "#status", |status| status.starts_with("Ready")).await;
        wait_for_conversations(&store, 2).await;
        // A new conversation has spent nothing: its spending line goes away.
        support::wait_for_script(
            &client,
            "return document.querySelector('#spending').parentElement.hidden;",
            Value::Bool(true),
        )
        .await;

        // Every transcript event the window gets from now on.
        client
            .execute(
                "window.transcriptSeen = [];
                 return window.__TAURI__.event
                   .listen('walkie://updates', (event) => window.transcriptSeen.push(
                     ...event.payload.filter((update) => update.kind === 'transcript')
                       .map((update) => update.payload)))
                   .then(() => true);",
                vec![],
            )
            .await
            .expect("listening to the transcript events");

        // History: open the first conversation and continue it.
        click(&client, "#open-history").await;
        let item = format!("#history-list .history-item[data-id='{first}']");
        wait_for(&client, &item, |text| text.contains(&said_before[0])).await;
        click(&client, &item).await;
        wait_for(
            &client,
            "#history-transcript article[data-message-id='user-1'] .message-text",
            |text| text == said_before[0].as_str(),
        )
        .await;
        let button = client
            .find(Locator::Id("history-continue"))
            .await
            .expect("the Continue button");
        assert_eq!(
            button.text().await.expect("its label"),
            "Continue this conversation"
        );
        button.click().await.expect("pressing Continue");
        let deadline = tokio::time::Instant::now() + UI_TIMEOUT;
        loop {
            let open = client
                .execute("return document.getElementById('history').open;", vec![])
                .await
                .expect("reading the panel");
            if open == Value::Bool(false) {
                break;
            }
            let error = client
                .execute(
                    "return document.getElementById('history-error').textContent;",
                    vec![],
                )
                .await
                .expect("reading the panel's error");
            assert!(
                tokio::time::Instant::now() < deadline,
                "the panel is still open: {error}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        // The continued conversation goes on from what it had spent.
        wait_for(&client, "#spending", |line| line == spent_before).await;

        // A new call, given the earlier exchange before any turn of its own.
        wait_for_calls(&provider, 3).await;
        let expected_restored = [
            (
                "user".to_owned(),
                "input_text".to_owned(),
                said_before[0].clone(),
            ),
            (
                "assistant".to_owned(),
                "output_text".to_owned(),
                replied_before[0].clone(),
            ),
        ];
        let deadline = tokio::time::Instant::now() + UI_TIMEOUT;
        let restored = loop {
            let restored = restored_before_any_turn(&client_events_of_call(&trace, 3));
            if restored.len() >= expected_restored.len() || tokio::time::Instant::now() >= deadline
            {
                break restored;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        assert_eq!(restored, expected_restored);
        wait_for(&client, "#status", |status| status.starts_with("Ready")).await;

        // The window was shown the earlier messages again.
        let seen = client
            .execute("return window.transcriptSeen;", vec![])
            .await
            .expect("the transcript events seen");
        let snapshot = seen
            .as_array()
            .expect("a list of events")
            .iter()
            .find(|event| event["type"] == "MESSAGES_SNAPSHOT")
            .unwrap_or_else(|| panic!("no MESSAGES_SNAPSHOT in {seen}"));
        let shown: Vec<(&str, &str)> = snapshot["messages"]
            .as_array()
            .expect("messages")
            .iter()
            .map(|message| {
                (
                    message["id"].as_str().unwrap_or_default(),
                    message["content"].as_str().unwrap_or_default(),
                )
            })
            .collect();
        assert_eq!(
            shown,
            [
                ("user-1", said_before[0].as_str()),
                ("assistant-1", replied_before[0].as_str())
            ]
        );

        // The next exchange goes on beside the earlier one, on screen and in the same folder.
        spoken_exchange(&client, 0.8, 1).await;
        let said = texts(&client, "user").await;
        let replied = texts(&client, "assistant").await;
        assert_eq!(said.len(), 2, "{said:?}");
        assert_eq!(replied.len(), 2, "{replied:?}");
        assert_eq!(
            (&said[0], &replied[0]),
            (&said_before[0], &replied_before[0])
        );
        assert_ne!(said[1], said[0], "0.8 s is described unlike 1.2 s");

        let saved = store.list().expect("the conversations");
        assert_eq!(saved.len(), 2, "no third folder: {saved:?}");
        let conversation = store.open(&first).expect("the first conversation");
        let saved_messages: Vec<(&str, &str)> = conversation
            .messages()
            .iter()
            .map(|message| (message.id(), message.content().unwrap_or_default()))
            .collect();
        assert_eq!(
            saved_messages,
            [
                ("user-1", said[0].as_str()),
                ("assistant-1", replied[0].as_str()),
                ("user-2", said[1].as_str()),
                ("assistant-2", replied[1].as_str()),
            ]
        );
        assert_eq!(conversation.reopenings().len(), 1);
        let dir = store.dir_of(&first).expect("its folder");
        assert!(dir.join("turns/0001-user.wav").is_file());
        assert!(dir.join("turns/0002-user.wav").is_file());
    })
    .await;
}

/// After three spoken turns the model is asked beside the conversation for its title: the
/// request goes out (the oracle checks it against the SDK's types with every other client
/// event), the provider's answer becomes the conversation's name in History, and the
/// provider's conversation took nothing from it (its trace of the items it holds).
#[tokio::test(flavor = "multi_thread")]
async fn e2e_after_three_turns_the_model_names_the_conversation_beside_it_adding_nothing_to_it() {
    require_test_audio();
    let test = "titled";
    let dirs = AppDirs::fresh(test);
    let (provider, secrets) = local_provider_as_custom_server(&dirs).await;
    let app = WebviewApp::launch_with(test, Launch::in_dirs(&dirs, Some(&secrets))).await;
    let store = Store::new(conversations_dir(app.data_dir()));
    let trace = dirs.trace.clone();
    let token = provider.token().to_owned();
    app.run(|client| async move {
        connect_with_the_providers_token(&client, &token).await;
        for replies_before in 0..3 {
            spoken_exchange(&client, 0.8, replies_before).await;
        }
        let deadline = tokio::time::Instant::now() + UI_TIMEOUT;
        let title = loop {
            let saved = store.list().expect("the conversations");
            assert_eq!(saved.len(), 1, "{saved:?}");
            let conversation = store.open(&saved[0].id).expect("it reads");
            if let Some(title) = conversation.title() {
                break title.to_owned();
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "no title after three turns"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        assert_eq!(title, "Talking with Walkie's local provider");
        let asked: Vec<Value> = client_events_of_call(&trace, 1)
            .into_iter()
            .filter(|event| {
                event["type"] == "response.create" && event["response"]["conversation"] == "none"
            })
            .collect();
        assert_eq!(asked.len(), 1, "asked once: {asked:?}");
        assert_eq!(
            asked[0]["response"]["output_modalities"],
            serde_json::json!(["text"])
        );
        assert_eq!(
            texts(&client, "assistant").await.len(),
            3,
            "the title is not said"
        );
        click(&client, "#open-history").await;
        wait_for(&client, "#history-list", |text| text.contains(&title)).await;
        support::screenshot(&client, "history-titled").await;
    })
    .await;
    // The provider's conversation holds the three turns, each question and its reply: the
    // title's response added nothing.
    let items = std::fs::read_to_string(dirs.trace.join("conversation.jsonl"))
        .expect("the provider's conversation trace");
    assert_eq!(items.lines().count(), 6, "{items}");
}
