//! Hands-free on speakers, in the real window: the virtual speaker is looped back into the
//! virtual microphone (60 ms late, 6 dB down), as a laptop's microphone hears its speakers,
//! and the local provider's voice detection listens to what Walkie sends. As installed, the
//! microphone is muted while a reply plays: no reply is cut by its own echo. With "Interrupt a
//! reply by speaking", the echo canceller lets the user's voice through once it has learnt the
//! room, and the user can stop a reply by talking over it.

mod support;

use std::time::{Duration, Instant};

use support::audio::{
    PulseStream, SpeakerIntoMicrophone, TimedRecorder, require_test_audio, speech_like,
};
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

/// Starts the app hands-free with the virtual speaker heard by the virtual microphone, with
/// voice barge-in as given, and waits until it listens.
async fn launch_on_speakers(name: &'static str, voice_barge_in: bool) -> WebviewApp {
    let dirs = AppDirs::fresh(name);
    std::fs::write(
        dirs.config.join("settings.json"),
        format!(r#"{{"handsFree": true, "voiceBargeIn": {voice_barge_in}}}"#),
    )
    .expect("writing the settings");
    WebviewApp::launch_with(name, Launch::in_dirs(&dirs, None)).await
}

#[tokio::test(flavor = "multi_thread")]
async fn e2e_hands_free_on_speakers_never_interrupts_itself_and_with_voice_barge_in_the_user_can_talk_over_a_reply()
 {
    require_test_audio();
    let _echo = SpeakerIntoMicrophone::load(60, -6.0);

    // As installed: the microphone is muted while a reply plays, so no echo reaches the
    // provider, whatever the canceller does.
    let app = launch_on_speakers("speakers_muted_while_speaking", false).await;
    app.run(|client| async move {
        wait_for(&client, "#status", |status| status.starts_with(LISTENING)).await;
        for turn in 1..=10 {
            spoken_turn(&client, 1.2).await;
            let replies = texts(&client, "assistant").await;
            assert_eq!(replies.len(), turn, "one reply per turn: {replies:?}");
        }
        assert_eq!(
            assistant_states(&client).await,
            vec![None; 10],
            "no reply was interrupted by its own echo"
        );
        assert_eq!(
            texts(&client, "user").await.len(),
            10,
            "no echo became a turn of the user's"
        );
    })
    .await;

    // With voice barge-in: once the canceller has learnt the room (two short replies), long
    // replies play to their end with the microphone open, and the user's voice over one stops
    // it, and the reply is marked. WALKIE_SPEAKERS_LONG_REPLIES (default 1) asks for more long
    // replies played through first, WALKIE_SPEAKERS_BARGE_INS (default 1) for more replies
    // talked over, each timed from the user's first word to the speaker's silence: the
    // measures of docs/benchmarks.md, "Echo cancellation".
    let long_replies: usize = std::env::var("WALKIE_SPEAKERS_LONG_REPLIES")
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(1)
        .max(1);
    let barge_ins: usize = std::env::var("WALKIE_SPEAKERS_BARGE_INS")
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(1)
        .max(1);
    let app = launch_on_speakers("speakers_voice_barge_in", true).await;
    app.run(|client| async move {
        wait_for(&client, "#status", |status| status.starts_with(LISTENING)).await;
        for _ in 0..2 {
            spoken_turn(&client, 1.5).await;
        }
        for _ in 1..long_replies {
            spoken_turn(&client, 3.0).await;
        }
        let states = assistant_states(&client).await;
        let cut_by_their_echo = states.iter().filter(|state| state.is_some()).count();
        eprintln!(
            "voice barge-in: {cut_by_their_echo} of {} replies cut by their own echo",
            states.len()
        );
        assert_eq!(
            states,
            vec![None; long_replies + 1],
            "every reply played to its end: none was cut by its own echo"
        );
        let mut stopped_after_ms = Vec::new();
        for barge_in in 1..=barge_ins {
            let replies_before = assistant_states(&client).await.len();
            let words = speech_like(3.0);
            tokio::task::spawn_blocking(move || PulseStream::speak_into_microphone(&words))
                .await
                .unwrap();
            wait_for(&client, "#status", |status| status.starts_with("Speaking")).await;
            // A second into the reply, whatever its echo did meanwhile.
            tokio::time::sleep(Duration::from_millis(600)).await;
            let states = assistant_states(&client).await;
            assert!(
                status_text(&client).await.starts_with("Speaking")
                    && states.len() == replies_before + 1
                    && states[replies_before].is_none(),
                "long reply {barge_in} was still playing before the user spoke over it: \
                 {states:?}"
            );
            let speaker = TimedRecorder::start();
            // Before pacat starts: the time to the reply's end is over- rather than understated.
            let spoke_at = Instant::now();
            let over = speech_like(1.0);
            tokio::task::spawn_blocking(move || PulseStream::speak_into_microphone(&over))
                .await
                .unwrap();
            let mut states = Vec::new();
            for _ in 0..100 {
                states = assistant_states(&client).await;
                if states
                    .get(replies_before)
                    .is_some_and(|state| state.as_deref() == Some("interrupted"))
                {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            assert_eq!(
                states.get(replies_before).cloned().flatten().as_deref(),
                Some("interrupted"),
                "the user's voice over reply {barge_in} cut it (status: {})",
                status_text(&client).await
            );
            // The reply stopped where the speaker fell silent for longer than any pause inside
            // it (the user's own turn is answered only after they stop and a silence follows).
            let stopped_at = speaker
                .silence_lasting(spoke_at, Duration::from_millis(300))
                .expect("the speaker fell silent once the reply was cut");
            stopped_after_ms.push(stopped_at.duration_since(spoke_at).as_millis());
            // The answer to what the user said over the reply, before the next round.
            for _ in 0..100 {
                if texts(&client, "assistant").await.len() == replies_before + 2
                    && status_text(&client).await.starts_with(LISTENING)
                {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
        stopped_after_ms.sort_unstable();
        let p95 = stopped_after_ms[(stopped_after_ms.len() * 95).div_ceil(100) - 1];
        eprintln!(
            "voice barge-in: the speaker fell silent {stopped_after_ms:?} ms after the user \
             started speaking over the reply (p95 {p95} ms, {barge_ins} times)"
        );
        support::screenshot(&client, "hands_free_on_speakers").await;
    })
    .await;
}
