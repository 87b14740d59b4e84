//! Hands-free on speakers, in the real window: the virtual speaker is looped back into the
//! virtual microphone (60 ms late, 6 dB down), as a laptop's microphone hears its speakers,
//! and the local provider's voice detection listens to what Walkie sends. Walkie's echo
//! canceller (on by default) must keep every reply out of what is sent — 20 replies, none
//! interrupted by itself — while the user can still talk over a reply and stop it.

mod support;

use std::time::Duration;

use support::audio::{PulseStream, SpeakerIntoMicrophone, require_test_audio, speech_like};
use support::{AppDirs, Launch, WebviewApp, texts, wait_for};

/// Each reply's mark in the transcript ("interrupted" or null), in order.
async fn assistant_states(client: &fantoccini::Client) -> Vec<Option<String>> {
    let states = client
        .execute(
            "return [...document.querySelectorAll('#transcript article[data-role=assistant]')]\
               .map(a => a.dataset.state ?? null);",
            vec![],
        )
        .await
        .unwrap();
    serde_json::from_value(states).unwrap()
}

async fn status_text(client: &fantoccini::Client) -> String {
    support::rendered_text(client, "#status")
        .await
        .unwrap_or_default()
}

const LISTENING: &str = "Listening (the local provider): just talk";

/// Says `seconds` of speech into the microphone, hands-free, and waits for the reply to
/// start (the status says the assistant speaks) and to end (listening again).
async fn spoken_turn(client: &fantoccini::Client, seconds: f64) {
    let words = speech_like(seconds);
    tokio::task::spawn_blocking(move || PulseStream::speak_into_microphone(&words))
        .await
        .unwrap();
    wait_for(client, "#status", |status| status.starts_with("Speaking")).await;
    wait_for(client, "#status", |status| status.starts_with(LISTENING)).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn e2e_hands_free_on_speakers_never_interrupts_itself_and_the_user_can_talk_over_a_reply() {
    require_test_audio();
    let dirs = AppDirs::fresh("hands_free_on_speakers");
    std::fs::write(dirs.config.join("settings.json"), r#"{"handsFree": true}"#)
        .expect("writing the settings");
    let _echo = SpeakerIntoMicrophone::load(60, -6.0);
    let app = WebviewApp::launch_with("hands_free_on_speakers", Launch::in_dirs(&dirs, None)).await;
    app.run(|client| async move {
        wait_for(&client, "#status", |status| status.starts_with(LISTENING)).await;
        for turn in 1..=20 {
            spoken_turn(&client, 1.2).await;
            let replies = texts(&client, "assistant").await;
            assert_eq!(replies.len(), turn, "one reply per turn: {replies:?}");
        }
        let states = assistant_states(&client).await;
        assert_eq!(
            states,
            vec![None; 20],
            "no reply was interrupted by its own echo"
        );
        assert_eq!(
            texts(&client, "user").await.len(),
            20,
            "no echo became a turn of the user's"
        );

        // A long reply, and the user talks over it: the reply stops and is marked.
        let words = speech_like(3.0);
        tokio::task::spawn_blocking(move || PulseStream::speak_into_microphone(&words))
            .await
            .unwrap();
        wait_for(&client, "#status", |status| status.starts_with("Speaking")).await;
        tokio::time::sleep(Duration::from_millis(600)).await;
        let over = speech_like(1.0);
        tokio::task::spawn_blocking(move || PulseStream::speak_into_microphone(&over))
            .await
            .unwrap();
        let mut states = Vec::new();
        for _ in 0..100 {
            states = assistant_states(&client).await;
            if states
                .get(20)
                .is_some_and(|state| state.as_deref() == Some("interrupted"))
            {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert_eq!(
            states.get(20).cloned().flatten().as_deref(),
            Some("interrupted"),
            "the user's voice over the reply cut it (status: {})",
            status_text(&client).await
        );
        support::screenshot(&client, "hands_free_on_speakers").await;
    })
    .await;
}
