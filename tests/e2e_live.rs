//! GPT-Live in the real window, with real audio: the settings name a Live model, so the app
//! places a Live API call (`POST /v1/live/sessions`) on the local provider inside it, holds the
//! model muted except while the key is held, and derives every turn boundary itself (the Live
//! API sends no speech or done events). The test speaks into the virtual microphone, hears the
//! reply on the virtual speaker, reads both sides, and finds the conversation saved.

mod support;

use std::time::Duration;

use support::audio::{PulseStream, energy, require_test_audio, sounding_span_frames, speech_like};
use support::{WebviewApp, rendered_text, wait_for, wait_for_text};

/// The virtual microphone and speaker are shared: one conversation test at a time.
static AUDIO_DEVICES: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

const READY: &str = "Ready (the local provider): hold Space or the button to talk.";

/// A fresh app whose settings choose GPT-Live on the local provider, with `more` settings.
async fn live_app(test_name: &'static str, more: serde_json::Value) -> WebviewApp {
    let dirs = support::AppDirs::fresh(test_name);
    let mut settings =
        serde_json::json!({ "provider": "local", "model": "gpt-live-1.1", "voice": "marin" });
    if let (Some(settings), Some(more)) = (settings.as_object_mut(), more.as_object()) {
        settings.extend(more.clone());
    }
    std::fs::write(dirs.config.join("settings.json"), settings.to_string())
        .expect("writing the settings");
    WebviewApp::launch_with(test_name, support::Launch::in_dirs(&dirs, None)).await
}

/// Who speaks in each transcript message, and each reply's mark, in order.
const MARKS: &str = "return [...document.querySelectorAll('#transcript article')]\
    .map(a => a.dataset.role + (a.dataset.state ? ':' + a.dataset.state : ''));";

/// Speaks `words` into the microphone while the key is held, and lets go 300 ms after them.
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

/// How many 20 ms frames of `samples` are louder than -30 dBFS: how long something sounded,
/// whatever the gaps between.
fn loud_frames(samples: &[i16]) -> usize {
    samples
        .chunks_exact(support::audio::RATE_HZ / 50)
        .filter(|frame| {
            let energy: f64 = frame.iter().map(|&s| f64::from(s) * f64::from(s)).sum();
            (energy / frame.len() as f64).sqrt() > 32_768.0 * 10f64.powf(-30.0 / 20.0)
        })
        .count()
}

/// The Live client events the provider received, by type, in order.
fn live_events_received(trace: &std::path::Path) -> Vec<String> {
    std::fs::read_to_string(trace.join("live-client-events.jsonl"))
        .expect("the provider's Live trace")
        .lines()
        .map(|line| {
            let line: serde_json::Value = serde_json::from_str(line).expect("a JSON line");
            let event: serde_json::Value = line["text"]
                .as_str()
                .and_then(|text| serde_json::from_str(text).ok())
                .unwrap_or_else(|| line["event"].clone());
            event["type"].as_str().unwrap_or_default().to_owned()
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn e2e_a_pressed_turn_on_gpt_live_is_heard_once_shown_costed_by_the_minute_and_saved() {
    require_test_audio();
    let _devices = AUDIO_DEVICES.lock().await;
    let app = live_app("live_turn", serde_json::json!({})).await;
    let conversations = app.data_dir().join("conversations");
    let trace = app.dirs().trace.clone();
    app.run(|client| async move {
        wait_for_text(&client, "#status", READY).await;
        let speaker = PulseStream::record_speaker();
        let words = speech_like(1.6);
        support::space(&client, true).await;
        wait_for_text(&client, "#status", "Listening… release to send.").await;
        let spoken = words.clone();
        tokio::task::spawn_blocking(move || PulseStream::speak_into_microphone(&spoken))
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(300)).await;
        support::space(&client, false).await;

        // The model decides when the user is done; its reply is heard, then all is quiet.
        wait_for(&client, "#status", |status| status.starts_with("Speaking")).await;
        support::screenshot(&client, "live_speaking").await;
        wait_for_text(&client, "#status", READY).await;
        tokio::time::sleep(Duration::from_millis(500)).await;
        let heard = speaker.end();

        let user = rendered_text(
            &client,
            "#transcript article[data-role='user'] .message-text",
        )
        .await
        .expect("the user's turn is in the transcript");
        assert!(user.ends_with(" s of speech]"), "{user:?}");
        let reply = wait_for(
            &client,
            "#transcript article[data-role='assistant'] .message-text",
            |reply| reply.contains("played your"),
        )
        .await;
        assert!(reply.contains("on the Live API"), "{reply:?}");
        let (said_frames, heard_frames) =
            (sounding_span_frames(&words), sounding_span_frames(&heard));
        let length_ratio = heard_frames as f64 / said_frames as f64;
        assert!(
            (0.9..=1.1).contains(&length_ratio),
            "the reply sounded for {heard_frames} frames against {said_frames} spoken"
        );
        let energy_ratio = energy(&heard) / energy(&words);
        assert!(
            (0.5..=1.5).contains(&energy_ratio),
            "the reply carried {energy_ratio:.2} times the energy of what was said: played once"
        );
        // Billed by the second, costed per minute as OpenAI would (the demo bills nothing).
        let spent = wait_for(&client, "#spending", |line| line.contains(" live")).await;
        assert!(spent.contains("free ($"), "{spent:?}");
        assert!(spent.ends_with(" on gpt-live-1.1)"), "{spent:?}");
        support::screenshot(&client, "live_spent").await;

        // Saved: both messages in the transcript, a WAV for each side.
        let deadline = std::time::Instant::now() + support::UI_TIMEOUT;
        let folder = loop {
            let found = std::fs::read_dir(&conversations).ok().and_then(|entries| {
                entries.flatten().map(|entry| entry.path()).find(|folder| {
                    std::fs::read_to_string(folder.join("transcript.md"))
                        .is_ok_and(|text| text.contains(&user) && text.contains("played your"))
                })
            });
            if let Some(folder) = found {
                break folder;
            }
            assert!(std::time::Instant::now() < deadline, "no saved transcript");
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        for wav in ["turns/0001-user.wav", "turns/0001-assistant.wav"] {
            let reader = hound::WavReader::open(folder.join(wav))
                .unwrap_or_else(|error| panic!("{wav}: {error}"));
            assert!(reader.duration() >= 48_000, "{wav}: {}", reader.duration());
        }

        // A typed message is not taken: the line says to speak it, and the text stays.
        let field = client
            .find(fantoccini::Locator::Css("#compose-text"))
            .await
            .expect("the field to type in");
        field.click().await.expect("focusing the field");
        field.send_keys("What time is it?").await.expect("typing");
        support::press(&client, fantoccini::key::Key::Enter).await;
        wait_for(&client, "#compose-note", |note| {
            note.contains("takes speech only; hold the key and say it")
        })
        .await;
        let kept = client
            .execute(
                "return document.getElementById('compose-text').value;",
                vec![],
            )
            .await
            .unwrap();
        assert_eq!(kept, serde_json::json!("What time is it?"));
    })
    .await;
    // The model was muted but while the key was held; nothing of the Realtime API was sent.
    let sent = live_events_received(&trace);
    assert_eq!(
        sent.iter()
            .filter(|kind| kind.as_str() != "session.close")
            .cloned()
            .collect::<Vec<_>>(),
        [
            "session.input_audio.mute",
            "session.input_audio.unmute",
            "session.input_audio.mute"
        ],
        "{sent:?}"
    );
    assert!(
        !trace.join("client-events.jsonl").exists(),
        "no Realtime client event"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn e2e_the_key_over_a_gpt_live_reply_silences_it_and_none_of_it_plays_after() {
    require_test_audio();
    let _devices = AUDIO_DEVICES.lock().await;
    let app = live_app("live_barge_in", serde_json::json!({})).await;
    app.run(|client| async move {
        wait_for_text(&client, "#status", READY).await;
        let speaker = PulseStream::record_speaker();
        let words = speech_like(4.0);
        say_with_the_key(&client, &words).await;
        wait_for(&client, "#status", |status| status.starts_with("Speaking")).await;
        tokio::time::sleep(Duration::from_millis(1_200)).await;
        // The key cuts the reply; the user says something short while holding it.
        say_with_the_key(&client, &speech_like(1.0)).await;
        // The cut reply's words stop where it was cut; the second reply is whole.
        support::wait_for_script(
            &client,
            MARKS,
            serde_json::json!(["user", "assistant:interrupted", "user", "assistant"]),
        )
        .await;
        wait_for(&client, "#transcript", |text| text.contains("played your")).await;
        wait_for_text(&client, "#status", READY).await;
        tokio::time::sleep(Duration::from_millis(500)).await;
        let heard = speaker.end();
        // What sounded: the cut part of the first reply and the whole second (1 s), far less
        // than the first reply played out: none of its rest played after the key.
        let (said, heard, second) = (
            loud_frames(&words),
            loud_frames(&heard),
            loud_frames(&speech_like(1.0)),
        );
        assert!(
            heard < said * 6 / 10 + second * 12 / 10,
            "{heard} loud frames sounded; the first reply alone had {said}, the second {second}"
        );
        support::screenshot(&client, "live_barge_in").await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn e2e_hands_free_on_gpt_live_pauses_when_quiet_and_wakes_when_spoken_to() {
    require_test_audio();
    let _devices = AUDIO_DEVICES.lock().await;
    let app = live_app(
        "live_wake",
        serde_json::json!({ "handsFree": true, "liveIdleTimeoutS": 5 }),
    )
    .await;
    app.run(|client| async move {
        wait_for(&client, "#status", |status| status.starts_with("Listening")).await;
        let words = speech_like(1.0);
        let spoken = words.clone();
        tokio::task::spawn_blocking(move || PulseStream::speak_into_microphone(&spoken))
            .await
            .unwrap();
        wait_for(&client, "#transcript", |text| text.contains("played your")).await;
        // Five quiet seconds after the reply, the session pauses, and the status says how to
        // wake it.
        wait_for_text(&client, "#status", "Paused: say something to wake it.").await;
        support::screenshot(&client, "live_paused").await;
        let spoken = words.clone();
        tokio::task::spawn_blocking(move || PulseStream::speak_into_microphone(&spoken))
            .await
            .unwrap();
        wait_for(&client, "#status", |status| !status.starts_with("Paused")).await;
        wait_for(&client, "#transcript", |text| {
            text.matches("played your").count() == 2
        })
        .await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn e2e_a_dropped_gpt_live_call_comes_back_with_the_conversation_given_as_its_input() {
    require_test_audio();
    let _devices = AUDIO_DEVICES.lock().await;
    let dirs = support::AppDirs::fresh("live_redial");
    let provider = walkie_local::LocalProvider::start(walkie_local::ProviderConfig {
        trace_dir: Some(dirs.trace.clone()),
        ..walkie_local::ProviderConfig::default()
    })
    .await
    .expect("a local provider on loopback");
    std::fs::write(
        dirs.config.join("settings.json"),
        serde_json::json!({
            "provider": "custom",
            "customBaseUrl": provider.base_url(),
            "model": "gpt-live-1.1",
            "voice": "marin",
        })
        .to_string(),
    )
    .expect("writing the settings");
    // The provider wants the token it made: it is saved as the custom provider's key.
    let secrets = support::SecretService::start(&dirs);
    let app = WebviewApp::launch_with(
        "live_redial",
        support::Launch::in_dirs(&dirs, Some(&secrets)),
    )
    .await;
    let trace = dirs.trace.clone();
    let token = provider.token().to_owned();
    app.run(|client| async move {
        support::save_custom_key(&client, &token).await;
        wait_for(&client, "#status", |status| {
            status.starts_with("Ready (127.0.0.1)")
        })
        .await;
        support::spoken_exchange(&client, 1.2, 0).await;
        let calls_before = provider.calls_total();
        assert_eq!(provider.drop_calls().await, 1, "one call to drop");
        let deadline = tokio::time::Instant::now() + support::UI_TIMEOUT;
        while provider.calls_total() <= calls_before {
            assert!(
                tokio::time::Instant::now() < deadline,
                "Walkie never called again"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        wait_for(&client, "#status", |status| status.starts_with("Ready")).await;
        // The conversation goes on in the new session, under messages of its own.
        support::spoken_exchange(&client, 1.0, 1).await;
        assert_eq!(support::texts(&client, "user").await.len(), 2);
        provider.shutdown().await;
    })
    .await;
    // The new session was given the exchange so far when it was placed: the Live API's input.
    let calls = std::fs::read_to_string(trace.join("calls.jsonl")).expect("the call trace");
    let sessions: Vec<serde_json::Value> = calls
        .lines()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).expect("JSON"))
        .filter(|call| call["path"] == "/v1/live/sessions")
        .map(|call| call["live_session"]["session"].clone())
        .collect();
    // Placed at start (before the key was saved, refused), with the key, and after the drop.
    let (redialled, before) = sessions.split_last().expect("sessions were placed");
    assert!(
        before.iter().all(|session| session["input"].is_null()),
        "a conversation starts afresh: {before:?}"
    );
    let input = redialled["input"]
        .as_array()
        .expect("the redialled session's input");
    let said: Vec<(&str, &str)> = input
        .iter()
        .map(|item| {
            (
                item["role"].as_str().unwrap_or_default(),
                item["content"][0]["text"].as_str().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(said.len(), 2, "{said:?}");
    assert_eq!(said[0].0, "user");
    assert!(said[0].1.ends_with(" s of speech]"), "{said:?}");
    assert_eq!(said[1].0, "assistant");
    assert!(said[1].1.contains("played your"), "{said:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn e2e_a_tool_servers_tool_that_asks_first_shows_its_card_on_gpt_live_and_runs_once_allowed()
{
    require_test_audio();
    let _devices = AUDIO_DEVICES.lock().await;
    // The bench's scripted model delegates as the instructions say: a tool of the test server
    // that asks first.
    let command = format!("'{}'", support::mcp_test_server().display());
    let app = live_app(
        "live_tools",
        serde_json::json!({
            "instructions": r#"use test__echo with {"text": "hello"}"#,
            "toolServers": [{
                "name": "test",
                "command": command,
                "enabled": true,
                "permission": "ask",
                "tools": {}
            }]
        }),
    )
    .await;
    app.run(|client| async move {
        wait_for_text(&client, "#status", READY).await;
        say_with_the_key(&client, &speech_like(1.0)).await;
        let card = wait_for(&client, "#approvals", |text| text.contains("wants to use")).await;
        assert!(
            card.starts_with("The assistant wants to use echo, on test. Allow it?"),
            "{card}"
        );
        support::screenshot(&client, "live_tool_approval").await;
        support::click(&client, ".approval button.primary").await;
        wait_for(&client, "#transcript", |text| {
            text.contains(r#"The test__echo tool answered: "hello""#)
        })
        .await;
        wait_for(&client, "#approvals", str::is_empty).await;
        let user = rendered_text(
            &client,
            "#transcript article[data-role='user'] .message-text",
        )
        .await
        .expect("the user's turn is in the transcript");
        assert!(user.ends_with(" s of speech]"), "{user:?}");
        support::screenshot(&client, "live_tool_answered").await;
    })
    .await;
}
