//! A whole push-to-talk turn in the real window, with real audio: the test speaks into the
//! virtual microphone of the test PulseAudio server while holding Space, the app sends it over
//! WebRTC to the local provider running inside it, the provider speaks it back, and the test
//! hears the reply on the virtual speaker and reads both sides in the transcript.

mod support;

use std::time::Duration;

use fantoccini::actions::{InputSource, KeyAction, KeyActions};
use fantoccini::key::Key;
use support::audio::{PulseStream, energy, require_test_audio, sounding_span_frames, speech_like};
use support::{WebviewApp, rendered_text, wait_for, wait_for_text};

const READY: &str = "Ready (the local provider): hold Space or the button to talk.";

#[tokio::test(flavor = "multi_thread")]
async fn e2e_a_spoken_turn_is_heard_back_once_and_both_sides_appear_in_order() {
    require_test_audio();
    let app = WebviewApp::launch("spoken_turn").await;
    app.run(|client| async move {
        wait_for_text(&client, "#status", READY).await;
        let speaker = PulseStream::record_speaker();
        let words = speech_like(1.6);

        let space: char = Key::Space.into();
        client
            .perform_actions(KeyActions::new("keyboard".into()).then(KeyAction::Down { value: space }))
            .await
            .unwrap();
        wait_for_text(&client, "#status", "Listening… release to send.").await;
        let spoken = words.clone();
        tokio::task::spawn_blocking(move || PulseStream::speak_into_microphone(&spoken))
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(300)).await;
        client
            .perform_actions(KeyActions::new("keyboard".into()).then(KeyAction::Up { value: space }))
            .await
            .unwrap();

        // The reply is spoken, then the app is ready again.
        wait_for(&client, "#status", |status| status.starts_with("Speaking")).await;
        wait_for_text(&client, "#status", READY).await;
        tokio::time::sleep(Duration::from_millis(500)).await;
        let heard = speaker.end();

        let user = rendered_text(&client, "#transcript article[data-role='user'] .message-text")
            .await
            .expect("the user's turn is in the transcript");
        assert!(
            user.starts_with('[') && user.ends_with(" s of speech]"),
            "the local provider describes the audio it got: {user:?}"
        );
        let reply = rendered_text(&client, "#transcript article[data-role='assistant'] .message-text")
            .await
            .expect("the reply is in the transcript");
        assert!(reply.contains("played your"), "{reply:?}");
        // The echo lasts as long as what was said (±10 %), and it was played once: twice
        // would double its energy, a lost half would halve it.
        let (said_frames, heard_frames) = (sounding_span_frames(&words), sounding_span_frames(&heard));
        let length_ratio = heard_frames as f64 / said_frames as f64;
        assert!(
            (0.9..=1.1).contains(&length_ratio),
            "the reply sounded for {heard_frames} frames against {said_frames} spoken \
             ({length_ratio:.2}); the provider got {user} and said {reply:?}"
        );
        let energy_ratio = energy(&heard) / energy(&words);
        assert!(
            (0.5..=1.5).contains(&energy_ratio),
            "the reply carried {energy_ratio:.2} times the energy of what was said"
        );

        let order = client
            .execute(
                "return [...document.querySelectorAll('#transcript article')].map(a => a.dataset.role);",
                vec![],
            )
            .await
            .unwrap();
        assert_eq!(order, serde_json::json!(["user", "assistant"]));
    })
    .await;
}
