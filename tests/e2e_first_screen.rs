//! The first screen in the real webview: the window opens, its controls reach Rust, and what
//! Rust emits as events is what the page shows.
//!
//! Slow tests (each starts an X server, WebKitWebDriver and the app): their names start with
//! `e2e_`, and they run in every CI run.

mod support;

use fantoccini::Locator;
use fantoccini::actions::{InputSource, KeyAction, KeyActions};
use fantoccini::key::Key;
use support::{WebviewApp, rendered_text, wait_for_text};

#[tokio::test(flavor = "multi_thread")]
async fn e2e_the_window_opens_on_the_first_screen() {
    let app = WebviewApp::launch("first_screen").await;
    app.run(|client| async move {
        assert_eq!(client.title().await.unwrap(), "Walkie");
        wait_for_text(&client, "#status", "Not connected").await;
        assert_eq!(
            rendered_text(&client, "#ptt").await.as_deref(),
            Some("Hold to talk")
        );
        let ptt = client.find(Locator::Id("ptt")).await.unwrap();
        assert_eq!(
            ptt.attr("aria-pressed").await.unwrap().as_deref(),
            Some("false")
        );
        let transcript = client.find(Locator::Id("transcript")).await.unwrap();
        assert_eq!(
            transcript.attr("role").await.unwrap().as_deref(),
            Some("log")
        );
        let settings = client.find(Locator::Id("open-settings")).await.unwrap();
        assert_eq!(
            settings.attr("aria-label").await.unwrap().as_deref(),
            Some("Settings")
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn e2e_connect_shows_the_status_rust_emits() {
    let app = WebviewApp::launch("connect_status").await;
    app.run(|client| async move {
        client
            .find(Locator::Id("connect"))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
        // This sentence exists only in Rust: the page can show it only if the event arrived.
        wait_for_text(
            &client,
            "#status",
            "Not connected: this build has no realtime provider yet.",
        )
        .await;
        let state = client.find(Locator::Id("status")).await.unwrap();
        assert_eq!(
            state.attr("data-state").await.unwrap().as_deref(),
            Some("not_connected")
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn e2e_holding_space_presses_push_to_talk_and_rust_answers() {
    let app = WebviewApp::launch("space_push_to_talk").await;
    app.run(|client| async move {
        wait_for_text(&client, "#status", "Not connected").await;
        let space: char = Key::Space.into();
        client
            .perform_actions(
                KeyActions::new("keyboard".into()).then(KeyAction::Down { value: space }),
            )
            .await
            .unwrap();
        let ptt = client.find(Locator::Id("ptt")).await.unwrap();
        assert_eq!(
            ptt.attr("aria-pressed").await.unwrap().as_deref(),
            Some("true")
        );
        wait_for_text(
            &client,
            "#status",
            "Not connected: push-to-talk needs a session.",
        )
        .await;
        client
            .perform_actions(
                KeyActions::new("keyboard".into()).then(KeyAction::Up { value: space }),
            )
            .await
            .unwrap();
        assert_eq!(
            ptt.attr("aria-pressed").await.unwrap().as_deref(),
            Some("false")
        );
    })
    .await;
}
