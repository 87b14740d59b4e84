//! A whole push-to-talk turn in the real window, with real audio: the test speaks into the
//! virtual microphone of the test PulseAudio server while holding Space, the app sends it over
//! WebRTC to the local provider running inside it, the provider speaks it back, and the test
//! hears the reply on the virtual speaker and reads both sides in the transcript.

mod support;

use std::time::Duration;

use support::audio::{
    PulseStream, RATE_HZ, energy, first_sound_frames, require_test_audio, sounding_span_frames,
    speech_like,
};
use support::{WebviewApp, rendered_text, statuses_seen, wait_for, wait_for_text, watch_statuses};

/// The virtual microphone and speaker are shared: one conversation test at a time.
static AUDIO_DEVICES: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Waits for the one conversation folder whose transcript.md satisfies `complete`.
async fn saved_conversation(
    conversations: &std::path::Path,
    complete: impl Fn(&str) -> bool,
) -> std::path::PathBuf {
    let deadline = std::time::Instant::now() + support::UI_TIMEOUT;
    let mut seen = String::new();
    while std::time::Instant::now() < deadline {
        if let Ok(entries) = std::fs::read_dir(conversations) {
            for entry in entries.flatten() {
                let transcript = std::fs::read_to_string(entry.path().join("transcript.md"));
                if let Ok(text) = transcript {
                    if complete(&text) {
                        return entry.path();
                    }
                    seen = text;
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!(
        "no saved transcript under {} is complete; last seen:\n{seen}",
        conversations.display()
    );
}

const READY: &str = "Ready (the local provider): hold Space or the button to talk.";

/// One push-to-talk turn: the key goes down, `words` go into the microphone, and the key
/// comes up 300 ms after them (inside the tail, so their end is sent).
async fn say_with_the_key(client: &fantoccini::Client, words: &[i16]) {
    support::space(client, true).await;
    wait_for_text(client, "#status", "Listening… release to send.").await;
    let spoken = words.to_vec();
    tokio::task::spawn_blocking(move || PulseStream::speak_into_microphone(&spoken))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    support::space(client, false).await;
}

/// Who speaks in each transcript message, in order ("user" or "assistant").
async fn transcript_roles(client: &fantoccini::Client) -> serde_json::Value {
    client
        .execute(
            "return [...document.querySelectorAll('#transcript article')].map(a => a.dataset.role);",
            vec![],
        )
        .await
        .unwrap()
}

/// How many turns the provider was sent (`input_audio_buffer.commit` in its trace).
fn commits_received(trace: &std::path::Path) -> usize {
    std::fs::read_to_string(trace)
        .expect("the provider's trace")
        .lines()
        .filter(|line| line.contains(r#"\"type\":\"input_audio_buffer.commit\""#))
        .count()
}

/// Each reply's mark in the transcript ("interrupted" or null), in order.
async fn assistant_states(client: &fantoccini::Client) -> serde_json::Value {
    client
        .execute(
            "return [...document.querySelectorAll('#transcript article[data-role=assistant]')]\
               .map(a => a.dataset.state ?? null);",
            vec![],
        )
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn e2e_a_spoken_turn_is_heard_back_once_and_both_sides_appear_in_order() {
    require_test_audio();
    let _devices = AUDIO_DEVICES.lock().await;
    let app = WebviewApp::launch("spoken_turn").await;
    let conversations = app.data_dir().join("conversations");
    app.run(|client| async move {
        wait_for_text(&client, "#status", READY).await;
        let speaker = PulseStream::record_speaker();
        let words = speech_like(1.6);

        support::space(&client, true).await;
        wait_for_text(&client, "#status", "Listening… release to send.").await;
        let spoken = words.clone();
        let speaking =
            tokio::task::spawn_blocking(move || PulseStream::speak_into_microphone(&spoken));
        wait_for_ring(&client, |level| level >= 0.3).await;
        support::screenshot(&client, "listening").await;
        speaking.await.unwrap();
        tokio::time::sleep(Duration::from_millis(300)).await;
        support::space(&client, false).await;

        // The reply is spoken, then the app is ready again.
        wait_for(&client, "#status", |status| status.starts_with("Speaking")).await;
        // The speaker's meter moves with the reply.
        let mut loudest_dbfs = -60.0;
        for _ in 0..100 {
            let value = client
                .execute(
                    "return document.getElementById('output-level').value;",
                    vec![],
                )
                .await
                .unwrap();
            loudest_dbfs = value.as_f64().unwrap_or(-60.0).max(loudest_dbfs);
            if loudest_dbfs > -40.0 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(
            loudest_dbfs > -40.0,
            "the speaker meter stayed at {loudest_dbfs} dBFS"
        );
        support::screenshot(&client, "speaking").await;
        wait_for_text(&client, "#status", READY).await;
        tokio::time::sleep(Duration::from_millis(500)).await;
        let heard = speaker.end();

        let user = rendered_text(
            &client,
            "#transcript article[data-role='user'] .message-text",
        )
        .await
        .expect("the user's turn is in the transcript");
        assert!(
            user.starts_with('[') && user.ends_with(" s of speech]"),
            "the local provider describes the audio it got: {user:?}"
        );
        let reply = rendered_text(
            &client,
            "#transcript article[data-role='assistant'] .message-text",
        )
        .await
        .expect("the reply is in the transcript");
        assert!(reply.contains("played your"), "{reply:?}");
        // How long the reply took to be heard, from the key coming up, shows beside it.
        let latency = rendered_text(
            &client,
            "#transcript article[data-role='assistant'] .message-latency",
        )
        .await
        .expect("the reply's latency is shown");
        let seconds: f64 = latency
            .strip_suffix(" s")
            .and_then(|figure| figure.parse().ok())
            .unwrap_or_else(|| panic!("a figure in seconds: {latency:?}"));
        assert!(
            (0.05..10.0).contains(&seconds),
            "release to first sound: {latency}"
        );
        // What the conversation spent shows under the meters, as the provider billed it: the
        // reply's tokens and the speech transcribed by the minute. The demo bills nothing: it
        // is costed as OpenAI would bill it.
        let spent = wait_for(&client, "#spending", |line| {
            line.contains(" tokens") && line.contains(" s transcribed")
        })
        .await;
        let (count, rest) = spent
            .split_once(" tokens · ")
            .unwrap_or_else(|| panic!("tokens, then the speech transcribed: {spent:?}"));
        let tokens: u64 = count
            .parse()
            .unwrap_or_else(|_| panic!("under a thousand tokens for one turn: {spent:?}"));
        assert!(
            (40..1_000).contains(&tokens),
            "a few seconds of speech each way and the instructions: {spent:?}"
        );
        let (transcribed, cost) = rest
            .split_once(" s transcribed · free ($")
            .unwrap_or_else(|| panic!("the seconds transcribed, then the cost: {spent:?}"));
        let seconds: u64 = transcribed
            .parse()
            .unwrap_or_else(|_| panic!("whole seconds: {spent:?}"));
        assert!(
            (1..=20).contains(&seconds),
            "a few seconds of speech: {spent:?}"
        );
        assert!(cost.ends_with(" on gpt-realtime-2.1)"), "{spent:?}");
        support::screenshot(&client, "spent").await;
        // The echo lasts as long as what was said (±10 %), and it was played once: twice
        // would double its energy, a lost half would halve it.
        let (said_frames, heard_frames) =
            (sounding_span_frames(&words), sounding_span_frames(&heard));
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

        let order = transcript_roles(&client).await;
        assert_eq!(order, serde_json::json!(["user", "assistant"]));

        // The conversation is on disk: the transcript with both turns, and a valid WAV for each.
        let folder = saved_conversation(&conversations, |transcript| {
            transcript.contains(&user) && transcript.contains("played your")
        })
        .await;
        let user_wav = hound::WavReader::open(folder.join("turns/0001-user.wav"))
            .expect("the user's turn is saved as a WAV");
        assert!(
            user_wav.duration() >= 48_000,
            "the user's WAV holds what was sent: {} samples",
            user_wav.duration()
        );
        let reply_wav = hound::WavReader::open(folder.join("turns/0001-assistant.wav"))
            .expect("the reply is saved as a WAV");
        assert!(
            reply_wav.duration() >= 48_000,
            "the reply's WAV holds what was heard: {} samples",
            reply_wav.duration()
        );
        // What it spent is saved with it: the tokens the window showed, and their cost.
        let deadline = std::time::Instant::now() + support::UI_TIMEOUT;
        let spent = loop {
            let saved = std::fs::read_to_string(folder.join("transcript.json"))
                .ok()
                .and_then(|json| serde_json::from_str::<serde_json::Value>(&json).ok())
                .map(|json| json["spent"].clone());
            // The reply is billed first, its transcription after it.
            if let Some(spent) =
                saved.filter(|spent| spent["responses"] == 1 && spent["transcriptions"] == 1)
            {
                break spent;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "transcript.json never said what the reply was billed"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        assert_eq!(spent["totalTokens"], tokens, "{spent}");
        assert!(
            spent["costUsd"].as_f64().is_some_and(|cost| cost > 0.0),
            "{spent}"
        );
        assert_eq!(
            spent["models"],
            serde_json::json!(["gpt-realtime-2.1", "gpt-realtime-whisper"]),
            "the reply costed at the realtime model's prices, the speech at the transcription model's"
        );
        // The speech was transcribed by gpt-realtime-whisper, billed by its duration: about as
        // long as what was said.
        assert_eq!(spent["transcriptions"], 1, "{spent}");
        let said_seconds = sounding_span_frames(&words) as f64 / RATE_HZ as f64;
        let transcribed_seconds = spent["transcribedSeconds"].as_f64().unwrap_or(0.0);
        assert!(
            transcribed_seconds >= said_seconds * 0.9,
            "{transcribed_seconds} s transcribed of {said_seconds:.2} s said: {spent}"
        );
        assert_eq!(spent["unpricedTranscriptions"], 0, "{spent}");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn e2e_pressing_during_the_reply_cuts_it_off_and_starts_the_next_turn() {
    require_test_audio();
    let _devices = AUDIO_DEVICES.lock().await;
    let app = WebviewApp::launch("barge_in").await;
    app.run(|client| async move {
        wait_for_text(&client, "#status", READY).await;
        let speaker = PulseStream::record_speaker();
        // Long enough that a press 1.2 s in, however late a loaded machine lands it, cuts
        // well before 60 %.
        let words = speech_like(4.0);
        say_with_the_key(&client, &words).await;

        // The long echo plays for a while; then the user presses again.
        wait_for(&client, "#status", |status| status.starts_with("Speaking")).await;
        tokio::time::sleep(Duration::from_millis(1_200)).await;
        support::space(&client, true).await;
        wait_for_text(&client, "#status", "Listening… release to send.").await;
        support::screenshot(&client, "barge_in").await;
        // Held past the 400 ms a stop-only tap may last: the press is a turn of its own.
        tokio::time::sleep(Duration::from_millis(700)).await;
        let speaker_meter = client
            .execute(
                "return document.getElementById('output-level').value;",
                vec![],
            )
            .await
            .unwrap();
        assert_eq!(
            speaker_meter.as_f64(),
            Some(-60.0),
            "the cut reply's meter fell with its sound"
        );
        support::space(&client, false).await;
        // The second, silent turn gets its (silent) echo; then all is quiet.
        wait_for(&client, "#transcript", |text| {
            text.contains("s of silence]")
        })
        .await;
        wait_for_text(&client, "#status", READY).await;
        tokio::time::sleep(Duration::from_millis(500)).await;
        let heard = speaker.end();

        // The cut reply is the first sound; the next turn's echo (of a silent press) is another.
        let (said_frames, heard_frames) =
            (sounding_span_frames(&words), first_sound_frames(&heard));
        assert!(
            heard_frames > 0 && heard_frames * 10 < said_frames * 6,
            "the cut reply sounded for {heard_frames} frames of the {said_frames} said"
        );
        let order = transcript_roles(&client).await;
        assert_eq!(
            order,
            serde_json::json!(["user", "assistant", "user", "assistant"]),
            "the cut reply stays in place and the new turn follows it"
        );
        let states = assistant_states(&client).await;
        assert_eq!(
            states,
            serde_json::json!(["interrupted", null]),
            "the cut reply, and only it, is marked interrupted"
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn e2e_a_tap_during_the_reply_only_stops_it_and_sends_no_turn() {
    require_test_audio();
    let _devices = AUDIO_DEVICES.lock().await;
    let app = WebviewApp::launch("tap_to_stop").await;
    let received = app.dirs().trace.join("client-events.jsonl");
    app.run(|client| async move {
        wait_for_text(&client, "#status", READY).await;
        say_with_the_key(&client, &speech_like(3.0)).await;
        wait_for(&client, "#status", |status| status.starts_with("Speaking")).await;
        assert_eq!(
            rendered_text(&client, "#ptt .ptt-label").await.as_deref(),
            Some("Speaking: press to stop")
        );
        // A tap, as long as a deliberate one (past the 150 ms a press needs to count as a
        // turn when nothing plays).
        support::space(&client, true).await;
        tokio::time::sleep(Duration::from_millis(250)).await;
        support::space(&client, false).await;
        wait_for_text(&client, "#status", READY).await;
        assert_eq!(
            assistant_states(&client).await,
            serde_json::json!(["interrupted"]),
            "the reply was cut off"
        );
        // The next turn follows the first exchange directly: the tap left no turn between.
        say_with_the_key(&client, &speech_like(1.0)).await;
        wait_for(&client, "#transcript article:nth-of-type(4)", |text| {
            text.contains("played your")
        })
        .await;
        wait_for_text(&client, "#status", READY).await;
        assert_eq!(
            transcript_roles(&client).await,
            serde_json::json!(["user", "assistant", "user", "assistant"]),
            "no turn for the tap"
        );
        // History shows the saved conversation with the cut reply marked, as the window does.
        support::click(&client, "#open-history").await;
        wait_for(&client, "#history-list .history-item", |text| !text.is_empty()).await;
        support::click(&client, "#history-list .history-item").await;
        wait_for(
            &client,
            "#history-transcript article[data-message-id='assistant-2'] .message-text",
            |text| text.contains("played your"),
        )
        .await;
        let marks = client
            .execute(
                "return [...document.querySelectorAll('#history-transcript article[data-role=assistant]')]\
                   .map(a => a.dataset.state ?? null);",
                vec![],
            )
            .await
            .unwrap();
        assert_eq!(
            marks,
            serde_json::json!(["interrupted", null]),
            "History marks the reply that was cut off"
        );
    })
    .await;
    // What the provider received: two turns committed, the tap's audio cleared.
    assert_eq!(
        commits_received(&received),
        2,
        "the provider was sent two turns"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn e2e_escape_while_talking_takes_the_recording_back_and_sends_nothing() {
    require_test_audio();
    let _devices = AUDIO_DEVICES.lock().await;
    let app = WebviewApp::launch("escape_cancels").await;
    let received = app.dirs().trace.join("client-events.jsonl");
    let data_dir = app.data_dir().to_owned();
    app.run(|client| async move {
        wait_for_text(&client, "#status", READY).await;
        support::space(&client, true).await;
        wait_for_text(&client, "#status", "Listening… release to send.").await;
        let hint = rendered_text(&client, "#ptt-hint")
            .await
            .unwrap_or_default();
        assert!(
            hint.ends_with("Esc to cancel"),
            "the hint says how: {hint:?}"
        );
        let spoken = speech_like(1.0);
        let speaking =
            tokio::task::spawn_blocking(move || PulseStream::speak_into_microphone(&spoken));
        // The ring around the talk control follows the voice.
        let ring = wait_for_ring(&client, |level| level >= 0.3).await;
        assert!(ring <= 1.0, "{ring}");
        speaking.await.unwrap();
        support::press(&client, fantoccini::key::Key::Escape).await;
        wait_for_text(&client, "#status", "Not sent: the recording was cancelled.").await;
        assert_eq!(wait_for_ring(&client, |level| level == 0.0).await, 0.0);
        support::space(&client, false).await;
        // Marked "not sent (cancelled)" after the speaker's name (a CSS label).
        wait_for(
            &client,
            "#transcript article[data-state=cancelled]",
            |text| text.starts_with("You"),
        )
        .await;

        // The next turn is answered, after the one taken back.
        say_with_the_key(&client, &speech_like(1.0)).await;
        wait_for(&client, "#transcript article:nth-of-type(3)", |text| {
            text.contains("played your")
        })
        .await;
        wait_for_text(&client, "#status", READY).await;
        assert_eq!(
            transcript_roles(&client).await,
            serde_json::json!(["user", "user", "assistant"]),
            "the recording taken back stays, marked, with no reply"
        );

        // History shows it the same way.
        support::click(&client, "#open-history").await;
        let current = "#history-list .history-item[data-current]";
        wait_for(&client, current, |text| !text.is_empty()).await;
        support::click(&client, current).await;
        wait_for(&client, "#history-transcript", |text| text.contains("played your")).await;
        wait_for(
            &client,
            "#history-transcript article[data-state=cancelled]",
            |text| text.starts_with("You"),
        )
        .await;
        let marked = client
            .execute(
                "return document.querySelectorAll('#history-transcript article[data-state=cancelled]').length;",
                vec![],
            )
            .await
            .unwrap();
        assert_eq!(marked, serde_json::json!(1), "only the one taken back");
        support::click(&client, "#history-close").await;
    })
    .await;
    assert_eq!(
        commits_received(&received),
        1,
        "the provider was sent one turn"
    );
    // And so does the saved conversation.
    let store = walkie_store::Store::new(walkie_store::conversations_dir(&data_dir));
    let saved = store.list().expect("the conversations");
    let conversation = store.open(&saved[0].id).expect("the conversation");
    let cancelled: Vec<bool> = conversation
        .messages()
        .iter()
        .map(|message| conversation.message_cancelled(message.id()))
        .collect();
    assert_eq!(
        cancelled,
        [true, false, false],
        "the first message was taken back"
    );
    let markdown = std::fs::read_to_string(
        walkie_store::conversations_dir(&data_dir)
            .join(&saved[0].id)
            .join("transcript.md"),
    )
    .expect("transcript.md");
    assert_eq!(
        markdown.matches("not sent (cancelled)").count(),
        1,
        "{markdown}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn e2e_a_conversation_deleted_in_history_leaves_the_window_too() {
    require_test_audio();
    let _devices = AUDIO_DEVICES.lock().await;
    let app = WebviewApp::launch("delete_leaves_the_window").await;
    app.run(|client| async move {
        wait_for_text(&client, "#status", READY).await;
        say_with_the_key(&client, &speech_like(1.0)).await;
        wait_for(&client, "#transcript", |text| text.contains("played your")).await;
        wait_for_text(&client, "#status", READY).await;
        // A new conversation: the first stays on screen.
        watch_statuses(&client).await;
        support::click(&client, "#connect").await;
        let deadline = tokio::time::Instant::now() + support::UI_TIMEOUT;
        loop {
            let seen = statuses_seen(&client).await;
            if seen.iter().any(|status| status.starts_with("Connecting"))
                && seen.last().is_some_and(|status| status == READY)
            {
                break;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "no new call: {seen:?}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(transcript_roles(&client).await, serde_json::json!(["user", "assistant"]));

        // Delete the first in History.
        support::click(&client, "#open-history").await;
        let first = "#history-list .history-item:not([data-current])";
        wait_for(&client, first, |text| !text.is_empty()).await;
        support::click(&client, first).await;
        wait_for(&client, "#history-transcript", |text| text.contains("played your")).await;
        support::click(&client, "#history-delete").await;
        support::click(&client, "#history-confirm-delete").await;
        wait_for_text(&client, "#history-notice", "Conversation deleted.").await;
        support::click(&client, "#history-close").await;

        let left = client
            .execute(
                "return document.querySelectorAll('#transcript .message, #transcript .conversation-divider').length;",
                vec![],
            )
            .await
            .unwrap();
        assert_eq!(left, serde_json::json!(0), "its messages and divider are gone");
    })
    .await;
}

/// Waits until the talk control's microphone ring (`--mic-level`, 0 to 1) is `wanted`.
async fn wait_for_ring(client: &fantoccini::Client, wanted: impl Fn(f64) -> bool) -> f64 {
    let deadline = tokio::time::Instant::now() + support::UI_TIMEOUT;
    loop {
        let level = client
            .execute(
                "return document.getElementById('ptt').style.getPropertyValue('--mic-level');",
                vec![],
            )
            .await
            .unwrap();
        let level: f64 = level.as_str().unwrap_or_default().parse().unwrap_or(0.0);
        if wanted(level) {
            return level;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the ring stays at {level}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn e2e_switching_to_hands_free_mid_call_keeps_the_call_and_the_key_then_only_interrupts() {
    require_test_audio();
    let _devices = AUDIO_DEVICES.lock().await;
    let app = WebviewApp::launch("hands_free_switch").await;
    let settings_file = app.dirs().config.join("settings.json");
    app.run(|client| async move {
        wait_for_text(&client, "#status", READY).await;
        // A push-to-talk turn first.
        say_with_the_key(&client, &speech_like(1.0)).await;
        wait_for(&client, "#transcript", |text| text.contains("played your")).await;
        wait_for_text(&client, "#status", READY).await;

        // From here on, every status the page shows is kept: a new call would show
        // "Connecting…" and "Setting up the session…" on its way.
        watch_statuses(&client).await;
        client
            .find(fantoccini::Locator::Id("hands-free"))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
        wait_for(&client, "#status", |status| {
            status.starts_with("Listening (the local provider): just talk")
        })
        .await;
        support::screenshot(&client, "hands_free").await;

        // Spoken without the key: the provider's VAD hears the words and the pause, and answers.
        tokio::task::spawn_blocking(|| PulseStream::speak_into_microphone(&speech_like(2.0)))
            .await
            .unwrap();
        wait_for(&client, "#status", |status| status.starts_with("Speaking")).await;
        // The key is not a turn control any more, but it still stops the reply.
        support::space(&client, true).await;
        support::space(&client, false).await;
        // Cut, its words stop where the reply was (the transcript of the rest never comes).
        wait_for(&client, "#status", |status| {
            status.starts_with("Listening (the local provider): just talk")
        })
        .await;
        // The cut reply is marked once its part has ended at the session.
        let mut states = serde_json::Value::Null;
        for _ in 0..50 {
            states = assistant_states(&client).await;
            if states == serde_json::json!([null, "interrupted"]) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert_eq!(
            states,
            serde_json::json!([null, "interrupted"]),
            "the key cut the hands-free reply"
        );
        let order = transcript_roles(&client).await;
        assert_eq!(
            order,
            serde_json::json!(["user", "assistant", "user", "assistant"]),
            "the hands-free turn follows the push-to-talk one in the same conversation"
        );
        let seen = statuses_seen(&client).await;
        assert!(
            !seen.is_empty()
                && seen
                    .iter()
                    .all(|status| !status.contains("Connecting") && !status.contains("Setting up")),
            "the call was kept, not replaced: {seen:?}"
        );
        let saved = std::fs::read_to_string(&settings_file).expect("the switch is saved");
        assert!(saved.contains("\"handsFree\": true"), "{saved}");
    })
    .await;
}

/// The dialog's meter level, in dBFS.
async fn mic_test_level(client: &fantoccini::Client) -> f64 {
    client
        .execute(
            "return document.querySelector('#settings [data-role=mic-test-level]').value;",
            vec![],
        )
        .await
        .unwrap()
        .as_f64()
        .unwrap_or(f64::NAN)
}

#[tokio::test(flavor = "multi_thread")]
async fn e2e_the_microphone_test_in_settings_follows_the_voice_and_stops_when_asked() {
    require_test_audio();
    let _devices = AUDIO_DEVICES.lock().await;
    let app = WebviewApp::launch("mic_test").await;
    app.run(|client| async move {
        wait_for_text(&client, "#status", READY).await;
        support::open_settings(&client).await;
        support::click(&client, "#settings [data-action=mic-test]").await;
        wait_for_text(&client, "#settings [data-action=mic-test]", "Stop test").await;
        assert_eq!(
            mic_test_level(&client).await,
            -60.0,
            "silence shows as the floor"
        );
        let spoken = speech_like(1.5);
        let speaking =
            tokio::task::spawn_blocking(move || PulseStream::speak_into_microphone(&spoken));
        let deadline = tokio::time::Instant::now() + support::UI_TIMEOUT;
        let mut loudest = f64::NEG_INFINITY;
        while loudest < -40.0 {
            loudest = loudest.max(mic_test_level(&client).await);
            assert!(
                tokio::time::Instant::now() < deadline,
                "the bar never rose: {loudest} dBFS"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        client
            .execute(
                "document.querySelector('#settings [data-role=mic-test-level]')\
                   .scrollIntoView({ block: 'center' });",
                vec![],
            )
            .await
            .unwrap();
        support::screenshot(&client, "settings-mic-test").await;
        speaking.await.unwrap();
        support::click(&client, "#settings [data-action=mic-test]").await;
        wait_for_text(
            &client,
            "#settings [data-action=mic-test]",
            "Test microphone",
        )
        .await;
        assert_eq!(
            mic_test_level(&client).await,
            -60.0,
            "stopped, the bar rests"
        );
        // The call under way was never touched.
        let title = client
            .execute("return document.getElementById('status').title;", vec![])
            .await
            .unwrap();
        assert_eq!(title, serde_json::json!(READY));
    })
    .await;
}

/// A question typed mid-call is answered, and shows in order after the spoken turn, in the
/// window and in the saved transcript; Space typed into the field is a space, not a press.
#[tokio::test(flavor = "multi_thread")]
async fn e2e_a_question_typed_mid_call_is_answered_and_saved_in_order() {
    require_test_audio();
    let _devices = AUDIO_DEVICES.lock().await;
    let app = WebviewApp::launch("typed_question").await;
    let conversations = app.data_dir().join("conversations");
    const TYPED: &str = "What is the capital of Peru?";
    app.run(|client| async move {
        wait_for_text(&client, "#status", READY).await;
        support::spoken_exchange(&client, 1.0, 0).await;
        watch_statuses(&client).await;
        let field = client
            .find(fantoccini::Locator::Css("#compose-text"))
            .await
            .expect("the field to type in");
        field.click().await.expect("focusing the field");
        field.send_keys(TYPED).await.expect("typing");
        support::press(&client, fantoccini::key::Key::Enter).await;
        let replies = wait_for(&client, "#transcript", |text| {
            text.contains(&format!("here is what you wrote: {TYPED}"))
        })
        .await;
        assert!(!replies.is_empty());
        assert_eq!(
            support::texts(&client, "user")
                .await
                .last()
                .map(String::as_str),
            Some(TYPED)
        );
        assert_eq!(
            transcript_roles(&client).await,
            serde_json::json!(["user", "assistant", "user", "assistant"])
        );
        let left = client
            .execute(
                "return document.getElementById('compose-text').value;",
                vec![],
            )
            .await
            .unwrap();
        assert_eq!(
            left,
            serde_json::json!(""),
            "the field is emptied once sent"
        );
        assert!(
            !statuses_seen(&client)
                .await
                .iter()
                .any(|status| status.starts_with("Listening")),
            "the spaces typed never pressed the talk key"
        );
        support::screenshot(&client, "typed-question").await;
    })
    .await;
    let folder = saved_conversation(&conversations, |transcript| {
        transcript.contains("here is what you wrote")
    })
    .await;
    let saved = std::fs::read_to_string(folder.join("transcript.md")).unwrap();
    let typed_at = saved.find(TYPED).expect("the typed question is saved");
    let reply_at = saved
        .find("here is what you wrote")
        .expect("its reply is saved");
    let spoken_reply_at = saved.find("played your").expect("the spoken turn's reply");
    assert!(
        spoken_reply_at < typed_at && typed_at < reply_at,
        "in order: {saved}"
    );
}

/// A photo attached with the file dialog goes to the provider as `input_image` with the question
/// typed beside it: the window shows its thumbnail and the provider's reply names the size it
/// received; the picture is saved as a file of the turn and transcript.md shows it. A file
/// that is not a picture is refused with a sentence naming it, and nothing is attached.
#[tokio::test(flavor = "multi_thread")]
async fn e2e_a_picture_attached_with_a_question_reaches_the_provider_and_is_shown_and_saved() {
    require_test_audio();
    let _devices = AUDIO_DEVICES.lock().await;
    let app = WebviewApp::launch("picture_shown").await;
    let conversations = app.data_dir().join("conversations");
    let received = app.dirs().trace.join("client-events.jsonl");
    // A 1600 × 1200 photo-like PNG (gradients under a little noise): larger than is sent.
    let photo = app.dirs().root.join("holiday photo.png");
    let mut state: u32 = 0x9E37_79B9;
    image::RgbImage::from_fn(1600, 1200, |x, y| {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        image::Rgb([(x / 7) as u8, (y / 5) as u8, 96 + (state % 8) as u8])
    })
    .save(&photo)
    .expect("writing the photo");
    let not_a_picture = app.dirs().root.join("notes.png");
    std::fs::write(&not_a_picture, "shopping: eggs, flour").expect("writing the text file");
    const QUESTION: &str = "What is in this picture?";
    app.run(|client| async move {
        wait_for_text(&client, "#status", READY).await;
        let chooser = client
            .find(fantoccini::Locator::Css("#compose input[type=file]"))
            .await
            .expect("the file input behind Picture…");
        support::step(|| "choosing a file that is not a picture".to_owned());
        chooser
            .send_keys(&not_a_picture.to_string_lossy())
            .await
            .expect("choosing the file");
        let refused = wait_for(&client, "#compose-note", |text| text.contains("cannot be shown")).await;
        assert_eq!(
            refused,
            "“notes.png” cannot be shown: it is not a picture Walkie reads (PNG, JPEG, WebP, GIF \
             or BMP). Choose another picture."
        );
        support::step(|| "choosing the photo".to_owned());
        chooser
            .send_keys(&photo.to_string_lossy())
            .await
            .expect("choosing the photo");
        let attached = wait_for(&client, "#compose-note", |text| text.contains("is attached")).await;
        assert_eq!(
            attached,
            "holiday photo.png is attached, to be sent at 1024 × 768 (from 1600 × 1200)."
        );
        support::screenshot(&client, "picture-attached").await;
        assert_eq!(
            support::accessibility_violations(&client).await,
            Vec::<String>::new(),
            "with a picture waiting to be sent"
        );
        let field = client
            .find(fantoccini::Locator::Css("#compose-text"))
            .await
            .expect("the field to type in");
        field.click().await.expect("focusing the field");
        field.send_keys(QUESTION).await.expect("typing");
        support::press(&client, fantoccini::key::Key::Enter).await;
        wait_for(&client, "#transcript", |text| {
            text.contains("you showed me a picture: 1024 by 768 pixels.")
        })
        .await;
        assert_eq!(
            support::texts(&client, "user").await,
            [QUESTION.to_owned()]
        );
        let shown = client
            .execute(
                "const pictures = [...document.querySelectorAll(\
                   '#transcript article[data-role=user] img.message-picture')];\
                 const waiting = document.querySelectorAll('#compose .attachment').length;\
                 return { pictures: pictures.map((p) => [p.alt, p.complete && p.naturalWidth > 0]), waiting };",
                vec![],
            )
            .await
            .unwrap();
        assert_eq!(
            shown,
            serde_json::json!({
                "pictures": [["Picture 1, 1024 × 768 pixels", true]],
                "waiting": 0
            }),
            "the thumbnail is in the message, and no longer waits to be sent"
        );
        support::screenshot(&client, "picture-shown").await;
    })
    .await;
    let sent_pictures: Vec<serde_json::Value> = support::client_events(&received)
        .into_iter()
        .filter(|event| event["type"] == "conversation.item.create")
        .map(|event| event["item"]["content"].clone())
        .collect();
    assert_eq!(sent_pictures.len(), 1, "{sent_pictures:?}");
    assert_eq!(sent_pictures[0][0]["type"], "input_image");
    assert!(
        sent_pictures[0][0]["image_url"]
            .as_str()
            .is_some_and(|url| url.starts_with("data:image/jpeg;base64,")),
    );
    assert_eq!(sent_pictures[0][1]["text"], QUESTION);

    let folder = saved_conversation(&conversations, |transcript| {
        transcript.contains("you showed me a picture")
    })
    .await;
    let saved = std::fs::read_to_string(folder.join("transcript.md")).unwrap();
    let picture_at = saved
        .find("![picture 1](turns/0001-user-1.jpg)")
        .expect("the picture is linked in transcript.md");
    let question_at = saved.find(QUESTION).expect("the question is saved");
    assert!(
        picture_at < question_at,
        "the picture, then the question: {saved}"
    );
    let file =
        image::open(folder.join("turns/0001-user-1.jpg")).expect("the saved picture is a JPEG");
    assert_eq!((file.width(), file.height()), (1024, 768));
}

/// Screenshot… lists the whole screen and the windows on it (Walkie's among them), by keyboard
/// alone: arrows move, Escape closes and gives the focus back, Enter takes one. A window's
/// screenshot sent alone reaches the provider as `input_image` and asks for no reply; the
/// question typed after it is answered, and the answer names the picture.
#[tokio::test(flavor = "multi_thread")]
async fn e2e_a_screenshot_of_a_window_is_taken_by_keyboard_and_sent_alone_without_a_reply() {
    require_test_audio();
    let _devices = AUDIO_DEVICES.lock().await;
    let app = WebviewApp::launch("screenshot_shown").await;
    let received = app.dirs().trace.join("client-events.jsonl");
    app.run(|client| async move {
        wait_for_text(&client, "#status", READY).await;
        let menu_items = |client: fantoccini::Client| async move {
            let titles = client
                .execute(
                    "return [...document.querySelectorAll('#screenshot-menu button')]\
                       .map((item) => item.textContent);",
                    vec![],
                )
                .await
                .expect("the menu's items");
            serde_json::from_value::<Vec<String>>(titles).expect("texts")
        };
        let focused = |client: fantoccini::Client| async move {
            client
                .execute("return document.activeElement.textContent;", vec![])
                .await
                .unwrap()
        };
        client
            .find(fantoccini::Locator::Css("[data-action=screenshot]"))
            .await
            .expect("the Screenshot… button")
            .click()
            .await
            .expect("opening the menu");
        wait_for(&client, "#screenshot-menu", |text| {
            text.contains("The whole screen")
        })
        .await;
        let titles = menu_items(client.clone()).await;
        assert_eq!(titles.first().map(String::as_str), Some("The whole screen"));
        assert!(titles.iter().any(|title| title == "Walkie"), "{titles:?}");
        assert_eq!(focused(client.clone()).await, "The whole screen");
        support::screenshot(&client, "screenshot-menu").await;
        assert_eq!(
            support::accessibility_violations(&client).await,
            Vec::<String>::new(),
            "with the screenshot menu open"
        );
        support::press(&client, fantoccini::key::Key::Escape).await;
        assert_eq!(
            focused(client.clone()).await,
            "Screenshot…",
            "Escape gives the focus back"
        );
        let hidden = client
            .execute(
                "return document.getElementById('screenshot-menu').hidden;",
                vec![],
            )
            .await
            .unwrap();
        assert_eq!(hidden, serde_json::json!(true));

        support::press(&client, fantoccini::key::Key::Enter).await;
        wait_for(&client, "#screenshot-menu", |text| text.contains("Walkie")).await;
        let walkie_at = menu_items(client.clone())
            .await
            .iter()
            .position(|title| title == "Walkie")
            .expect("Walkie's window is listed");
        for _ in 0..walkie_at {
            support::press(&client, fantoccini::key::Key::Down).await;
        }
        assert_eq!(focused(client.clone()).await, "Walkie");
        support::press(&client, fantoccini::key::Key::Enter).await;
        let attached = wait_for(&client, "#compose-note", |text| {
            text.contains("is attached")
        })
        .await;
        assert!(
            attached.starts_with("Screenshot of Walkie is attached"),
            "{attached}"
        );
        // The focus is back in the field: Enter sends the picture alone.
        support::press(&client, fantoccini::key::Key::Enter).await;
        wait_for(&client, "#compose-note", str::is_empty).await;
        support::wait_for_script(
            &client,
            "return [...document.querySelectorAll('#transcript img.message-picture')]\
               .filter((p) => p.complete && p.naturalWidth > 0).length;",
            serde_json::json!(1),
        )
        .await;
        let field = client
            .find(fantoccini::Locator::Css("#compose-text"))
            .await
            .expect("the field to type in");
        field
            .send_keys("What is on my screen?")
            .await
            .expect("typing");
        support::press(&client, fantoccini::key::Key::Enter).await;
        let transcript = wait_for(&client, "#transcript", |text| {
            text.contains("you showed me a picture:")
        })
        .await;
        assert_eq!(
            transcript
                .matches("This is Walkie's local provider")
                .count(),
            1,
            "one reply, to the question, not to the picture alone: {transcript}"
        );
        support::screenshot(&client, "screenshot-shown").await;
    })
    .await;
    let sent: Vec<serde_json::Value> = support::client_events(&received)
        .into_iter()
        .filter(|event: &serde_json::Value| {
            ["conversation.item.create", "response.create"]
                .contains(&event["type"].as_str().unwrap_or(""))
        })
        .map(|event| match event["type"].as_str() {
            Some("conversation.item.create") => event["item"]["content"][0]["type"].clone(),
            _ => event["type"].clone(),
        })
        .collect();
    assert_eq!(
        sent,
        serde_json::json!(["input_image", "input_text", "response.create"])
            .as_array()
            .unwrap()
            .clone(),
        "the picture alone asked for no reply"
    );
}

/// The built-in local-time tool, called for real: the local provider's scripted model calls it
/// when asked in words, the app runs it and sends its `function_call_output`, and the reply
/// says what it answered (the user's local date and time).
#[tokio::test(flavor = "multi_thread")]
async fn e2e_the_built_in_local_time_tool_is_called_and_its_answer_reaches_the_model() {
    require_test_audio();
    let _devices = AUDIO_DEVICES.lock().await;
    let app = WebviewApp::launch("local_time_tool").await;
    let received = app.dirs().trace.join("client-events.jsonl");
    app.run(|client| async move {
        wait_for_text(&client, "#status", READY).await;
        let field = client
            .find(fantoccini::Locator::Css("#compose-text"))
            .await
            .expect("the field to type in");
        field.click().await.expect("focusing the field");
        field
            .send_keys("What time is it? use get_current_local_time")
            .await
            .expect("typing");
        support::press(&client, fantoccini::key::Key::Enter).await;
        let reply = wait_for(&client, "#transcript", |text| {
            text.contains("The get_current_local_time tool answered:")
        })
        .await;
        assert!(reply.contains("local_time"), "{reply}");
    })
    .await;
    let outputs: Vec<serde_json::Value> = support::client_events(&received)
        .into_iter()
        .filter(|event| event["item"]["type"] == "function_call_output")
        .map(|event| event["item"].clone())
        .collect();
    assert_eq!(outputs.len(), 1, "{outputs:?}");
    let answered: serde_json::Value =
        serde_json::from_str(outputs[0]["output"].as_str().expect("an output text"))
            .expect("the output is JSON");
    assert!(answered["local_time"].is_string(), "{answered}");
}

/// With "Answer typed messages in text", a typed question is answered in writing and the
/// speaker stays silent; a spoken turn after it is still answered aloud.
#[tokio::test(flavor = "multi_thread")]
async fn e2e_a_typed_question_answered_in_text_plays_nothing_and_a_spoken_turn_still_speaks() {
    require_test_audio();
    let _devices = AUDIO_DEVICES.lock().await;
    let dirs = support::AppDirs::fresh("typed_in_text");
    std::fs::write(
        dirs.config.join("settings.json"),
        serde_json::json!({ "provider": "local", "typedRepliesInText": true }).to_string(),
    )
    .expect("writing the settings");
    let app = WebviewApp::launch_with("typed_in_text", support::Launch::in_dirs(&dirs, None)).await;
    let received = app.dirs().trace.join("client-events.jsonl");
    const TYPED: &str = "What is the capital of Peru?";
    app.run(|client| async move {
        wait_for_text(&client, "#status", READY).await;
        let speaker = PulseStream::record_speaker();
        let field = client
            .find(fantoccini::Locator::Css("#compose-text"))
            .await
            .expect("the field to type in");
        field.click().await.expect("focusing the field");
        field.send_keys(TYPED).await.expect("typing");
        support::press(&client, fantoccini::key::Key::Enter).await;
        wait_for(&client, "#transcript", |text| {
            text.contains(&format!("here is what you wrote: {TYPED}"))
        })
        .await;
        wait_for_text(&client, "#status", READY).await;
        let heard = speaker.end();
        let loudest = heard.iter().map(|sample| sample.unsigned_abs()).max();
        assert!(
            loudest.unwrap_or(0) < 100,
            "the speaker stayed silent: its loudest sample was {loudest:?}"
        );
        // A spoken turn is still answered aloud (Space outside the field, where it is a key).
        client
            .execute("document.activeElement.blur(); return true;", vec![])
            .await
            .expect("leaving the field");
        support::spoken_exchange(&client, 1.0, 1).await;
        assert_eq!(
            transcript_roles(&client).await,
            serde_json::json!(["user", "assistant", "user", "assistant"])
        );
    })
    .await;
    let sent = std::fs::read_to_string(&received).expect("the provider's trace");
    // Each line holds one data-channel text as the provider received it.
    let creates: Vec<serde_json::Value> = sent
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line["text"].as_str()?).ok())
        .filter(|event| event["type"] == "response.create")
        .collect();
    assert_eq!(creates.len(), 2, "{creates:?}");
    assert_eq!(
        creates[0]["response"]["output_modalities"],
        serde_json::json!(["text"]),
        "the typed question asked for text alone"
    );
    assert!(
        creates[1].get("response").is_none(),
        "the spoken turn asked for the session's audio: {}",
        creates[1]
    );
}
