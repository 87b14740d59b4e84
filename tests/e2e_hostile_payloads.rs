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
    AppDirs, Launch, SecretService, WebviewApp, accessibility_violations, click, rendered_text,
    screenshot, spoken_exchange, status_state, talk_to_custom_server, texts,
    texts_of_the_saved_conversation,
};
use walkie_local::fault::{Fault, unrepresentable_payloads};
use walkie_local::{LocalProvider, ProviderConfig};

const TEST: &str = "hostile_payloads";

#[tokio::test(flavor = "multi_thread")]
async fn e2e_the_three_payloads_that_panicked_the_decoder_mid_turn_leave_the_call_going() {
    require_test_audio();
    let dirs = AppDirs::fresh(TEST);
    // Server events 1 and 2 set the session up; from 3 on they answer the first turn.
    let provider = LocalProvider::start(ProviderConfig {
        trace_dir: Some(dirs.trace.clone()),
        faults: [5, 7, 9]
            .into_iter()
            .zip(unrepresentable_payloads())
            .map(|(at_event, text)| Fault::Malformed {
                at_event,
                text: Some(text),
            })
            .collect(),
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
            Some("Call goes on: the provider sent a message Walkie could not read."),
            "the window says what happened, and that nothing is lost"
        );
        assert_eq!(status_state(&client).await.as_deref(), Some("ready"));
        assert_eq!(
            rendered_text(&client, "#banner [data-role=text]")
                .await
                .as_deref(),
            Some("The provider sent a message Walkie could not read."),
            "the whole sentence in the banner, whatever the window's width"
        );
        screenshot(&client, "provider-notice").await;
        let violations = accessibility_violations(&client).await;
        assert!(
            violations.is_empty(),
            "the notice passes axe: {violations:#?}"
        );
        click(&client, "#banner [data-role=action]").await;
        assert_eq!(
            client
                .execute("return document.getElementById('banner').hidden;", vec![])
                .await
                .expect("the banner's state")
                .as_bool(),
            Some(true),
            "OK puts the notice away"
        );

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
        let saved = texts_of_the_saved_conversation(&data_dir, "one call, one conversation");
        assert_eq!(
            saved,
            [&said[0], &replied[0], &said[1], &replied[1]].map(String::as_str)
        );
    })
    .await;
    assert_eq!(
        provider.calls_total(),
        1,
        "one call carried both turns: no redial"
    );
}
