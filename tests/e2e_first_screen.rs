//! The app in the real webview: the window opens, connects over real WebRTC to the local
//! provider running inside the app, and what Rust emits as events — the status line and the
//! transcript — is what the page shows.
//!
//! Slow tests (each starts an X server, WebKitWebDriver and the app): their names start with
//! `e2e_`, and they run in every CI run.

mod support;

use std::time::Duration;

use fantoccini::Locator;
use fantoccini::actions::{InputSource, KeyAction, KeyActions};
use fantoccini::key::Key;
use support::{WebviewApp, rendered_text, wait_for, wait_for_text};

const READY: &str = "Ready (the local provider): hold Space or the button to talk.";

#[tokio::test(flavor = "multi_thread")]
async fn e2e_the_window_opens_and_connects_to_the_local_provider() {
    let app = WebviewApp::launch("first_screen").await;
    let conversations = app.data_dir().join("conversations");
    app.run(|client| async move {
        assert_eq!(client.title().await.unwrap(), "Walkie");
        // Only Rust says "Ready", and only after session.updated came back over the data channel.
        wait_for_text(&client, "#status", READY).await;
        let status = client.find(Locator::Id("status")).await.unwrap();
        assert_eq!(
            status.attr("data-state").await.unwrap().as_deref(),
            Some("ready")
        );
        support::screenshot(&client, "ready").await;
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
        // The new conversation is being saved in the data folder the app was given.
        let saved: Vec<_> = std::fs::read_dir(&conversations)
            .expect("the app made its conversations folder under WALKIE_DATA_DIR")
            .flatten()
            .collect();
        assert_eq!(saved.len(), 1, "one conversation folder: {saved:?}");
        assert!(saved[0].path().join("journal.jsonl").exists());
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn e2e_holding_space_sends_the_microphone_and_the_user_turn_appears_in_the_transcript() {
    let app = WebviewApp::launch("space_push_to_talk").await;
    app.run(|client| async move {
        wait_for_text(&client, "#status", READY).await;
        support::space(&client, true).await;
        let ptt = client.find(Locator::Id("ptt")).await.unwrap();
        assert_eq!(
            ptt.attr("aria-pressed").await.unwrap().as_deref(),
            Some("true")
        );
        wait_for_text(&client, "#status", "Listening… release to send.").await;
        tokio::time::sleep(Duration::from_millis(400)).await;
        support::space(&client, false).await;
        assert_eq!(
            ptt.attr("aria-pressed").await.unwrap().as_deref(),
            Some("false")
        );
        let said = the_silence_sent_is_described(&client).await;
        assert_eq!(
            rendered_text(
                &client,
                "#transcript article.message[data-role='user'] .message-speaker"
            )
            .await
            .as_deref(),
            Some("You")
        );
        let reply = wait_for(
            &client,
            "#transcript article.message[data-role='assistant'] .message-text",
            |text| text.contains("played your"),
        )
        .await;

        // Copy the whole transcript, then paste it where the user could: a text field.
        support::click(&client, "#copy-transcript").await;
        wait_for_text(&client, "#status", "Copied the transcript.").await;
        support::click(&client, "#open-settings").await;
        support::open_advanced(&client).await;
        let field = client
            .find(Locator::Css("#settings [name=instructions]"))
            .await
            .unwrap();
        field.clear().await.unwrap();
        field.click().await.unwrap();
        let paste = KeyActions::new("paste".to_owned())
            .then(KeyAction::Down {
                value: Key::Control.into(),
            })
            .then(KeyAction::Down { value: 'v' })
            .then(KeyAction::Up { value: 'v' })
            .then(KeyAction::Up {
                value: Key::Control.into(),
            });
        client.perform_actions(paste).await.unwrap();
        let pasted = wait_for_value(&client, "#settings [name=instructions]").await;
        assert_eq!(pasted, format!("You: {said}\n\nWalkie: {reply}"));
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn e2e_holding_enter_on_the_focused_talk_control_talks_like_holding_space() {
    let app = WebviewApp::launch("enter_push_to_talk").await;
    app.run(|client| async move {
        wait_for_text(&client, "#status", READY).await;
        // A keyboard user reaches the control with Tab; here it is focused directly.
        client
            .execute("document.getElementById('ptt').focus();", vec![])
            .await
            .unwrap();
        let enter = |down: bool| {
            let enter: char = Key::Enter.into();
            KeyActions::new("keyboard".into()).then(if down {
                KeyAction::Down { value: enter }
            } else {
                KeyAction::Up { value: enter }
            })
        };
        client.perform_actions(enter(true)).await.unwrap();
        wait_for_text(&client, "#status", "Listening… release to send.").await;
        let ptt = client.find(Locator::Id("ptt")).await.unwrap();
        assert_eq!(
            ptt.attr("aria-pressed").await.unwrap().as_deref(),
            Some("true"),
            "Enter held on the control presses it"
        );
        tokio::time::sleep(Duration::from_millis(400)).await;
        client.perform_actions(enter(false)).await.unwrap();
        the_silence_sent_is_described(&client).await;
        wait_for(
            &client,
            "#transcript article.message[data-role='assistant'] .message-text",
            |text| text.contains("played your"),
        )
        .await;
    })
    .await;
}

/// Nobody spoke into the (virtual) microphone: the local provider describes the silence it
/// received, in the user's turn that opened at the press. Returns that description.
async fn the_silence_sent_is_described(client: &fantoccini::Client) -> String {
    let said = wait_for(
        client,
        "#transcript article.message[data-role='user'] .message-text",
        |text| text.ends_with(" s of silence]"),
    )
    .await;
    assert!(said.starts_with('['), "{said:?}");
    said
}

/// Waits until a form field holds something; returns it.
async fn wait_for_value(client: &fantoccini::Client, css: &str) -> String {
    let deadline = std::time::Instant::now() + support::UI_TIMEOUT;
    loop {
        let value = client
            .find(Locator::Css(css))
            .await
            .unwrap()
            .prop("value")
            .await
            .unwrap()
            .unwrap_or_default();
        if !value.is_empty() || std::time::Instant::now() > deadline {
            return value;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn e2e_connect_hangs_up_and_connects_again() {
    let app = WebviewApp::launch("reconnect").await;
    app.run(|client| async move {
        wait_for_text(&client, "#status", READY).await;
        support::click(&client, "#connect").await;
        // The status leaves Ready while the new call is set up, then comes back to it.
        support::wait_for(&client, "#status", |text| text != READY).await;
        wait_for_text(&client, "#status", READY).await;
    })
    .await;
}
