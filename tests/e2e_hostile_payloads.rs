//! A provider that sends valid JSON no JSON value can hold never stops the conversation: the
//! real window, the real local provider (in this process, so the test can give it its faults),
//! real audio. In the first turn the provider sends the three payloads that once panicked the
//! decoder — a number beyond `f64` (`1e999`), a lone surrogate escape (`"\ud800"`) and nesting
//! past serde_json's limit — among the reply's events. The window says it got a message it
//! could not read and that the call goes on, never shows an error, and the next turn is
//! answered; the saved conversation holds the same four messages the window shows.
//!
//! Slow test (X server, WebKitWebDriver, PulseAudio); it runs in CI.

mod support;

use serde_json::Value;
use support::audio::require_test_audio;
use support::{
    AppDirs, Launch, SecretService, WebviewApp, spoken_exchange, status_state,
    talk_to_custom_server, texts,
};
use walkie_local::fault::Fault;
use walkie_local::{LocalProvider, ProviderConfig};
use walkie_store::{Store, conversations_dir};

const TEST: &str = "hostile_payloads";

fn hostile(at_event: u64, text: String) -> Fault {
    Fault::Malformed {
        at_event,
        text: Some(text),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn e2e_the_three_payloads_that_panicked_the_decoder_mid_turn_leave_the_call_going() {
    require_test_audio();
    let dirs = AppDirs::fresh(TEST);
    let deep = format!(
        r#"{{"type":"vendor.deep","event_id":"event_h3","payload":{}1{}}}"#,
        "[".repeat(200),
        "]".repeat(200)
    );
    // Server events 1 and 2 set the session up; from 3 on they answer the first turn.
    let provider = LocalProvider::start(ProviderConfig {
        trace_dir: Some(dirs.trace.clone()),
        faults: vec![
            hostile(
                5,
                r#"{"type":"vendor.big","event_id":"event_h1","n":1e999}"#.to_owned(),
            ),
            hostile(
                7,
                r#"{"type":"vendor.surrogate","event_id":"event_h2","s":"\ud800"}"#.to_owned(),
            ),
            hostile(9, deep),
        ],
        ..ProviderConfig::default()
    })
    .await
    .expect("a local provider on loopback");
    let secrets = SecretService::start(&dirs);
    let app = WebviewApp::launch_with(TEST, Launch::in_dirs(&dirs, Some(&secrets))).await;
    let data_dir = app.data_dir().to_owned();
    let (base_url, token) = (provider.base_url(), provider.token().to_owned());
    app.run(|client| async move {
        talk_to_custom_server(&client, &base_url, &token).await;
        // Every state the status line takes from now on, however briefly.
        client
            .execute(
                "window.statesSeen = [];
                 const line = document.getElementById('status');
                 new MutationObserver(() => window.statesSeen.push(line.dataset.state))
                   .observe(line, { attributes: true, attributeFilter: ['data-state'] });",
                vec![],
            )
            .await
            .expect("watching the status line");

        spoken_exchange(&client, 1.2, 0).await;
        let status = client
            .execute("return document.getElementById('status').title;", vec![])
            .await
            .expect("the status sentence");
        assert_eq!(
            status.as_str(),
            Some("The provider sent a message Walkie could not read; the call goes on."),
            "the window says what happened, and that nothing is lost"
        );
        assert_eq!(status_state(&client).await.as_deref(), Some("ready"));

        spoken_exchange(&client, 0.8, 1).await;
        let said = texts(&client, "user").await;
        let replied = texts(&client, "assistant").await;
        assert_eq!((said.len(), replied.len()), (2, 2), "{said:?} {replied:?}");
        assert_ne!(said[1], said[0], "0.8 s is described unlike 1.2 s");

        let states: Vec<Value> = serde_json::from_value(
            client
                .execute("return window.statesSeen;", vec![])
                .await
                .expect("the states seen"),
        )
        .expect("a list");
        assert!(
            !states.iter().any(|state| state == "error"),
            "the window never showed an error: {states:?}"
        );

        // On disk: one conversation, the same four messages, in order.
        let store = Store::new(conversations_dir(&data_dir));
        let saved: Vec<_> = store
            .list()
            .expect("the conversations")
            .into_iter()
            .filter(|saved| saved.turn_count > 0)
            .collect();
        assert_eq!(saved.len(), 1, "{saved:?}");
        let conversation = store.open(&saved[0].id).expect("the conversation");
        let saved_texts: Vec<&str> = conversation
            .messages()
            .iter()
            .map(|message| message.content().unwrap_or_default())
            .collect();
        assert_eq!(saved_texts, [&said[0], &replied[0], &said[1], &replied[1]]);
    })
    .await;
    assert_eq!(
        provider.calls_total(),
        1,
        "one call carried both turns: no redial"
    );
}
