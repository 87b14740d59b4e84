//! The history panel in the real window: conversations saved in the data folder (written here
//! with walkie-store's recorder, exactly as the app saves them) are listed newest first, one
//! opens to its transcript with a working `<audio>` per saved turn WAV, read through the asset
//! protocol from the conversations folder and from nowhere else, and a deletion removes it from
//! the list and from disk. The one being recorded cannot be deleted; a retention of a week
//! deletes the older ones at once.

mod support;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use fantoccini::key::Key;
use fantoccini::{Client, Locator};
use serde_json::Value;
use support::{UI_TIMEOUT, WebviewApp, click, rendered_text, wait_for, wait_for_text};
use walkie_session::{
    AudioChunk, Part, PartDelta, PartDeltaEvent, PartEndEvent, PartIndex, PartStartEvent,
    SessionEvent, Speaker, SpeechPart, StampedEvent,
};
use walkie_store::{RecorderConfig, Store, conversations_dir};

const READY: &str = "Ready (the local provider): hold Space or the button to talk.";
const SAMPLE_RATE_HZ: u32 = 48_000;
const DAY_MS: i64 = 86_400_000;
/// 2024-03-10 09:00 UTC: seeded conversations are days before the app's own.
const FIRST_START_UNIX_MS: i64 = 1_710_061_200_000;

/// One seeded conversation: what was said and how long each side's WAV lasts.
struct Seed {
    started_unix_ms: i64,
    question: &'static str,
    answer: &'static str,
    user_ms: u64,
    assistant_ms: u64,
}

const SEEDS: [Seed; 3] = [
    Seed {
        started_unix_ms: FIRST_START_UNIX_MS,
        question: "What is the capital of Portugal?",
        answer: "Lisbon, on the Tagus.",
        user_ms: 1_200,
        assistant_ms: 2_400,
    },
    Seed {
        started_unix_ms: FIRST_START_UNIX_MS + DAY_MS,
        question: "Remind me to water the tomatoes.",
        answer: "I cannot set reminders yet.",
        user_ms: 1_800,
        assistant_ms: 3_000,
    },
    Seed {
        started_unix_ms: FIRST_START_UNIX_MS + 2 * DAY_MS,
        question: "How far away is the Moon?",
        answer: "About 384 thousand kilometres.",
        user_ms: 1_500,
        assistant_ms: 2_000,
    },
];

/// A 440 Hz tone (not silence: a player that decodes it has real samples to play).
fn tone(duration_ms: u64) -> Vec<i16> {
    let count = duration_ms * u64::from(SAMPLE_RATE_HZ) / 1000;
    (0..count)
        .map(|n| {
            let phase = n as f64 * 440.0 * std::f64::consts::TAU / f64::from(SAMPLE_RATE_HZ);
            (phase.sin() * 8_000.0) as i16
        })
        .collect()
}

/// Records one closed conversation the way the app does, and returns its id.
fn seed(data_dir: &Path, seed: &Seed) -> String {
    let store = Store::new(conversations_dir(data_dir));
    let config = RecorderConfig {
        user_sample_rate_hz: SAMPLE_RATE_HZ,
        assistant_sample_rate_hz: SAMPLE_RATE_HZ,
        ..RecorderConfig::default()
    };
    let start = seed.started_unix_ms;
    let mut recorder = store.start(config, start).expect("starting a conversation");
    // The app's conversation machine notes each event with the one transcript bridge.
    let mut bridge = walkie_session::transcript::TranscriptBridge::new(recorder.id());
    let mut seq = 0;
    let mut record = |recorder: &mut walkie_store::Recorder, event: SessionEvent, at: i64| {
        seq += 1;
        let stamped = StampedEvent {
            seq,
            at_ms: (at - start) as u64,
            event,
        };
        let mut transcript = Vec::new();
        let note = bridge.on_event_noted(at, &stamped.event, &mut transcript);
        recorder.record(&stamped, note, &transcript, at);
    };
    let user = PartIndex(0);
    record(
        &mut recorder,
        SessionEvent::PartStart(PartStartEvent {
            index: user,
            part: Part::speech(Speaker::User),
        }),
        start + 100,
    );
    recorder.user_audio(&tone(seed.user_ms), start + 100 + seed.user_ms as i64);
    record(
        &mut recorder,
        SessionEvent::PartEnd(PartEndEvent {
            index: user,
            part: Part::Speech(SpeechPart {
                speaker: Speaker::User,
                transcript: Some(Arc::from(seed.question)),
                audio: None,
                interrupted_at_ms: None,
            }),
        }),
        start + 200 + seed.user_ms as i64,
    );
    let reply = PartIndex(1);
    let reply_at = start + 500 + seed.user_ms as i64;
    record(
        &mut recorder,
        SessionEvent::PartStart(PartStartEvent {
            index: reply,
            part: Part::speech(Speaker::Assistant),
        }),
        reply_at,
    );
    // The reply as played: 20 ms deltas.
    let samples = tone(seed.assistant_ms);
    for (index, chunk) in samples.chunks(SAMPLE_RATE_HZ as usize / 50).enumerate() {
        record(
            &mut recorder,
            SessionEvent::PartDelta(PartDeltaEvent {
                index: reply,
                delta: PartDelta::assistant_audio(AudioChunk::from_samples(chunk.to_vec())),
            }),
            reply_at + 20 * index as i64,
        );
    }
    let end = reply_at + seed.assistant_ms as i64;
    record(
        &mut recorder,
        SessionEvent::PartEnd(PartEndEvent {
            index: reply,
            part: Part::Speech(SpeechPart {
                speaker: Speaker::Assistant,
                transcript: Some(Arc::from(seed.answer)),
                audio: None,
                interrupted_at_ms: None,
            }),
        }),
        end,
    );
    record(&mut recorder, SessionEvent::TurnComplete, end + 10);
    let mut closing = Vec::new();
    bridge.finish(end + 20, &mut closing);
    recorder.transcript(&closing, end + 20);
    recorder.close(end + 20).expect("closing the conversation");
    recorder.id().to_owned()
}

/// The WAV's length by its header, in ms.
fn wav_duration_ms(path: &Path) -> f64 {
    let reader = hound::WavReader::open(path).expect("a readable WAV");
    f64::from(reader.duration()) * 1000.0 / f64::from(reader.spec().sample_rate)
}

/// Opens conversation `id` from the history list and waits for its title.
async fn open_saved(client: &Client, id: &str, title: &str) {
    click(
        client,
        &format!("#history-list .history-item[data-id='{id}']"),
    )
    .await;
    wait_for_text(client, "#history-detail-title", title).await;
}

/// The ids the history list shows, top to bottom.
async fn listed_ids(client: &Client) -> Vec<String> {
    let ids = client
        .execute(
            "return [...document.querySelectorAll('#history-list .history-item')]
                .map((item) => item.dataset.id);",
            vec![],
        )
        .await
        .expect("reading the list");
    serde_json::from_value(ids).expect("a list of ids")
}

/// Waits until the list shows exactly `wanted`, top to bottom.
async fn wait_for_list(client: &Client, wanted: &[String]) {
    let deadline = Instant::now() + UI_TIMEOUT;
    let mut shown = Vec::new();
    while Instant::now() < deadline {
        shown = listed_ids(client).await;
        if shown == wanted {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("the history list shows {shown:?}, not {wanted:?}");
}

/// Waits for an `<audio>` element to load its metadata or fail; returns its duration in ms, or
/// the media error code.
async fn audio_outcome(client: &Client, css: &str) -> Result<f64, Value> {
    let script = "const audio = document.querySelector(arguments[0]);
        if (!audio) return { missing: true };
        if (audio.error) return { error: audio.error.code, message: audio.error.message };
        if (audio.readyState >= 1) return { durationS: audio.duration };
        return null;";
    let deadline = Instant::now() + UI_TIMEOUT;
    loop {
        let answer = client
            .execute(script, vec![Value::from(css)])
            .await
            .expect("reading the audio element");
        if let Some(seconds) = answer.get("durationS").and_then(Value::as_f64) {
            return Ok(seconds * 1000.0);
        }
        if !answer.is_null() {
            return Err(answer);
        }
        assert!(
            Instant::now() < deadline,
            "{css} neither loaded nor failed within {UI_TIMEOUT:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn assert_close_ms(shown_ms: f64, expected_ms: f64, what: &str) {
    let tolerance_ms = expected_ms * 0.05;
    assert!(
        (shown_ms - expected_ms).abs() <= tolerance_ms,
        "{what}: the player says {shown_ms:.0} ms, the WAV holds {expected_ms:.0} ms"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn e2e_history_lists_opens_plays_and_deletes_saved_conversations() {
    let app = WebviewApp::launch("history").await;
    let data_dir = app.data_dir().to_path_buf();
    let conversations: PathBuf = conversations_dir(&data_dir);
    let seeded: Vec<String> = SEEDS.iter().map(|s| seed(&data_dir, s)).collect();
    // A WAV outside the conversations folder: the asset protocol must not serve it.
    let outside = data_dir.join("outside.wav");
    std::fs::copy(
        conversations.join(&seeded[0]).join("turns/0001-user.wav"),
        &outside,
    )
    .expect("copying a WAV outside the conversations folder");

    let display = app.display().to_owned();
    let export_to = data_dir.join("exported.md");
    app.run(move |client| async move {
        // Connected: the app's own conversation is being recorded, the newest of all.
        wait_for_text(&client, "#status", READY).await;
        let history_button = client.find(Locator::Id("open-history")).await.unwrap();
        assert_eq!(
            history_button.attr("aria-label").await.unwrap().as_deref(),
            Some("History")
        );
        history_button.click().await.unwrap();
        wait_for(&client, "#history-list", |text| {
            text.contains(SEEDS[0].question)
        })
        .await;

        // Newest first: the app's current conversation, then the seeds from the last back.
        let shown = listed_ids(&client).await;
        assert_eq!(shown.len(), 4, "{shown:?}");
        let current = shown[0].clone();
        assert!(!seeded.contains(&current), "{shown:?}");
        let expected: Vec<String> = [current.clone()]
            .into_iter()
            .chain(seeded.iter().rev().cloned())
            .collect();
        assert_eq!(shown, expected);
        let titles = client
            .execute(
                "return [...document.querySelectorAll('#history-list .history-item-title')]
                    .map((title) => title.innerText);",
                vec![],
            )
            .await
            .unwrap();
        assert_eq!(
            titles,
            serde_json::json!([
                "Nothing said Now",
                SEEDS[2].question,
                SEEDS[1].question,
                SEEDS[0].question
            ])
        );
        support::screenshot(&client, "history").await;
        let meta = rendered_text(
            &client,
            &format!("#history-list .history-item[data-id='{}'] .history-item-meta", seeded[1]),
        )
        .await
        .unwrap();
        assert!(meta.ends_with(" · 1 turn"), "{meta:?}");

        // Open the middle one: its transcript, rendered by the AG-UI renderer.
        open_saved(&client, &seeded[1], SEEDS[1].question).await;
        wait_for_text(
            &client,
            "#history-transcript article[data-message-id='user-1'] .message-text",
            SEEDS[1].question,
        )
        .await;
        assert_eq!(
            rendered_text(
                &client,
                "#history-transcript article[data-message-id='assistant-1'] .message-text"
            )
            .await
            .as_deref(),
            Some(SEEDS[1].answer)
        );
        assert_eq!(
            rendered_text(
                &client,
                "#history-transcript article[data-message-id='assistant-1'] .message-speaker"
            )
            .await
            .as_deref(),
            Some("Walkie")
        );

        // Each side's WAV loads in its <audio> element, over the asset protocol, and the
        // player's length is the file's.
        let turns = conversations.join(&seeded[1]).join("turns");
        for (side, file) in [("user", "0001-user.wav"), ("assistant", "0001-assistant.wav")] {
            let css = format!("#history-transcript article[data-message-id='{side}-1'] audio");
            let player = client.find(Locator::Css(&css)).await.unwrap();
            let button = client
                .find(Locator::Css(&format!(
                    "#history-transcript article[data-message-id='{side}-1'] .turn-audio-play"
                )))
                .await
                .unwrap();
            assert!(
                button.attr("aria-label").await.unwrap().unwrap_or_default().starts_with("Play "),
                "{side}: the control says what it plays"
            );
            let shown_ms = audio_outcome(&client, &css)
                .await
                .unwrap_or_else(|error| panic!("{side} WAV did not load: {error}"));
            assert!(
                player.attr("src").await.unwrap().unwrap_or_default().starts_with("blob:"),
                "{side}: the bytes the asset protocol served, as a blob"
            );
            assert_close_ms(shown_ms, wav_duration_ms(&turns.join(file)), side);
        }
        let expected_user_ms = SEEDS[1].user_ms as f64;
        assert_close_ms(wav_duration_ms(&turns.join("0001-user.wav")), expected_user_ms, "saved");

        // The asset protocol serves the conversations folder and nothing outside it.
        let fetch_status = "const done = arguments[arguments.length - 1];
            fetch(window.__TAURI__.core.convertFileSrc(arguments[0]))
              .then((response) => done(response.status), (error) => done(String(error)));";
        let inside = client
            .execute_async(
                fetch_status,
                vec![Value::from(
                    turns.join("0001-user.wav").to_string_lossy().into_owned(),
                )],
            )
            .await
            .unwrap();
        assert_eq!(inside, Value::from(200), "a WAV in the conversations folder");
        let refused = client
            .execute_async(
                fetch_status,
                vec![Value::from(outside.to_string_lossy().into_owned())],
            )
            .await
            .unwrap();
        assert_eq!(refused, Value::from(403), "a WAV outside the conversations folder");
        // And the webview may call no command but the app's own.
        let denied = client
            .execute_async(
                "const done = arguments[arguments.length - 1];
                 window.__TAURI__.core
                   .invoke('plugin:opener|open_path', { path: '/' })
                   .then(() => done('allowed'), (error) => done(String(error)));",
                vec![],
            )
            .await
            .unwrap();
        let denied = denied.as_str().unwrap_or_default().to_owned();
        assert!(denied.contains("not allowed"), "{denied:?}");
        // Nor emit an event the app's own parts would take for Rust's (a forged status).
        let forged = client
            .execute_async(
                "const done = arguments[arguments.length - 1];
                 window.__TAURI__.event
                   .emit('walkie://updates', [{ kind: 'status', payload: { state: 'ready', detail: 'forged' } }])
                   .then(() => done('emitted'), (error) => done(String(error)));",
                vec![],
            )
            .await
            .unwrap();
        let forged = forged.as_str().unwrap_or_default().to_owned();
        assert!(forged.contains("not allowed"), "{forged:?}");

        // Pressing play plays the turn in the window, in real time, to the end of the WAV.
        let user_player = "#history-transcript article[data-message-id='user-1']";
        let play = client
            .find(Locator::Css(&format!("{user_player} .turn-audio-play")))
            .await
            .unwrap();
        assert_eq!(
            play.attr("aria-label").await.unwrap().as_deref(),
            Some("Play what you said in turn 1")
        );
        let pressed = Instant::now();
        play.click().await.unwrap();
        // While it plays, the same button pauses.
        while play.attr("aria-label").await.unwrap().as_deref()
            != Some("Pause what you said in turn 1")
        {
            assert!(pressed.elapsed() < UI_TIMEOUT, "the button never offered to pause");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let ended_at_s = loop {
            let state = client
                .execute(
                    "const audio = document.querySelector(arguments[0]);
                     return { ended: audio.ended, at: audio.currentTime, error: audio.error?.code };",
                    vec![Value::from(format!("{user_player} audio"))],
                )
                .await
                .unwrap();
            assert!(state["error"].is_null(), "playback failed: {state}");
            if state["ended"] == Value::Bool(true) {
                break state["at"].as_f64().unwrap();
            }
            assert!(pressed.elapsed() < UI_TIMEOUT, "playback never ended: {state}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        let played_ms = pressed.elapsed().as_secs_f64() * 1000.0;
        assert_close_ms(ended_at_s * 1000.0, expected_user_ms, "played to the end");
        assert!(
            played_ms >= expected_user_ms * 0.9,
            "a {expected_user_ms} ms turn played in {played_ms:.0} ms: not in real time"
        );
        wait_for_text(&client, &format!("{user_player} .turn-audio-time"), "0:01 / 0:01").await;
        assert_eq!(
            play.attr("aria-label").await.unwrap().as_deref(),
            Some("Play what you said in turn 1")
        );
        support::screenshot(&client, "history-conversation").await;

        // "Play from here" plays what was said, then the reply after it, by itself.
        let reply_player = "#history-transcript article[data-message-id='assistant-1']";
        click(&client, &format!("{user_player} .turn-audio-onward")).await;
        let onward_pressed = Instant::now();
        loop {
            let state = client
                .execute(
                    "const user = document.querySelector(arguments[0]);
                     const reply = document.querySelector(arguments[1]);
                     return { userEnded: user.ended, userAt: user.currentTime,
                              reply: reply.closest('.turn-audio').dataset.state ?? null };",
                    vec![
                        Value::from(format!("{user_player} audio")),
                        Value::from(format!("{reply_player} audio")),
                    ],
                )
                .await
                .unwrap();
            if state["reply"] == "playing" {
                assert_eq!(state["userEnded"], Value::Bool(true), "after what was said: {state}");
                break;
            }
            assert!(
                onward_pressed.elapsed() < UI_TIMEOUT,
                "the reply never followed: {state}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(
            onward_pressed.elapsed().as_secs_f64() * 1000.0 >= expected_user_ms * 0.9,
            "what was said played again, from its start, before the reply"
        );
        support::screenshot(&client, "history-play-from-here").await;
        click(&client, &format!("{reply_player} .turn-audio-play")).await;

        // Export it as Markdown (what Export… offers first): the native save dialog asks
        // where, and the file is written.
        click(&client, "#history-export").await;
        click(&client, "#export-choose").await;
        support::type_into_native_dialog(
            &display,
            "Export the conversation as Markdown",
            "ctrl+a",
            &export_to,
        )
        .await;
        wait_for_text(
            &client,
            "#history-notice",
            &format!("Exported to {}", export_to.display()),
        )
        .await;
        let markdown = std::fs::read_to_string(&export_to).expect("the exported Markdown");
        assert!(markdown.starts_with("# Conversation of 2024-03-11"), "{markdown}");
        assert!(markdown.contains(SEEDS[1].question), "{markdown}");
        assert!(markdown.contains(SEEDS[1].answer), "{markdown}");

        // Delete it, through the confirmation.
        click(&client, "#history-delete").await;
        wait_for(&client, "#history-confirm-text", |text| {
            text.contains(SEEDS[1].question)
        })
        .await;
        click(&client, "#history-confirm-delete").await;
        let remaining = vec![current.clone(), seeded[2].clone(), seeded[0].clone()];
        wait_for_list(&client, &remaining).await;
        wait_for_text(&client, "#history-notice", "Conversation deleted.").await;
        assert!(
            !conversations.join(&seeded[1]).exists(),
            "the deleted conversation's folder is gone from disk"
        );
        assert!(conversations.join(&seeded[0]).exists());
        assert!(conversations.join(&seeded[2]).exists());

        // The conversation being recorded opens but cannot be deleted.
        open_saved(&client, &current, "Nothing said").await;
        let delete = client.find(Locator::Id("history-delete")).await.unwrap();
        assert_eq!(
            delete.attr("disabled").await.unwrap().as_deref(),
            Some("true"),
            "the current conversation's Delete is disabled"
        );
        assert!(conversations.join(&current).exists());

        // Keeping a week would delete the seeded conversations (from 2024), never the current
        // one: how many is said first, and kept from, nothing goes.
        click(&client, "#history-back").await;
        wait_for_list(&client, &remaining).await;
        let retention = client.find(Locator::Id("history-retention")).await.unwrap();
        assert_eq!(retention.prop("value").await.unwrap().as_deref(), Some("forever"));
        retention.select_by_value("7").await.unwrap();
        wait_for(&client, "#retention-confirm-text", |text| {
            text.starts_with("2 conversations are older than 7 days")
        })
        .await;
        support::screenshot(&client, "history-retention-confirm").await;
        let keep = client
            .find(Locator::Css("#retention-confirm button[value=cancel]"))
            .await
            .unwrap();
        keep.click().await.unwrap();
        wait_for_text(&client, "#history-notice", "Nothing was deleted.").await;
        let retention = client.find(Locator::Id("history-retention")).await.unwrap();
        assert_eq!(retention.prop("value").await.unwrap().as_deref(), Some("forever"));
        assert!(conversations.join(&seeded[0]).exists());
        // Chosen again and confirmed, they go at once.
        retention.select_by_value("7").await.unwrap();
        wait_for(&client, "#retention-confirm-text", |text| {
            text.starts_with("2 conversations are older than 7 days")
        })
        .await;
        click(&client, "#retention-confirm-delete").await;
        wait_for_text(&client, "#history-notice", "2 older conversations deleted.").await;
        wait_for_list(&client, std::slice::from_ref(&current)).await;
        assert!(!conversations.join(&seeded[0]).exists());
        assert!(!conversations.join(&seeded[2]).exists());
        assert!(conversations.join(&current).exists());
        // The setting holds while the app runs: the panel shows it when it opens again.
        click(&client, "#history-close").await;
        click(&client, "#open-history").await;
        wait_for_list(&client, std::slice::from_ref(&current)).await;
        let retention = client.find(Locator::Id("history-retention")).await.unwrap();
        assert_eq!(retention.prop("value").await.unwrap().as_deref(), Some("7"));
    })
    .await;
}

/// Whether the focused element is the saved message `message_id` of the open conversation.
async fn focused_message(client: &Client) -> Option<String> {
    let focused = client
        .execute(
            "const element = document.activeElement;
             return element?.matches('#history-transcript article.message.found')
                 ? element.dataset.messageId : null;",
            vec![],
        )
        .await
        .expect("reading the focus");
    focused.as_str().map(str::to_owned)
}

#[tokio::test(flavor = "multi_thread")]
async fn e2e_a_word_said_in_an_old_conversation_is_found_opened_at_its_message_and_playable() {
    let app = WebviewApp::launch("history_search").await;
    let data_dir = app.data_dir().to_path_buf();
    let seeded: Vec<String> = SEEDS.iter().map(|s| seed(&data_dir, s)).collect();
    app.run(move |client| async move {
        wait_for_text(&client, "#status", READY).await;
        click(&client, "#open-history").await;
        wait_for(&client, "#history-list", |text| {
            text.contains(SEEDS[0].question)
        })
        .await;

        // Typed as a user types it: the first letters of a word already find it.
        let field = client.find(Locator::Id("history-search")).await.unwrap();
        field.click().await.unwrap();
        field.send_keys("tomat").await.unwrap();
        wait_for_text(&client, "#history-search-status", "1 message found.").await;
        assert_eq!(
            rendered_text(&client, "#history-hits .history-hit-text")
                .await
                .as_deref(),
            Some(SEEDS[1].question)
        );
        assert_eq!(
            rendered_text(&client, "#history-hits mark")
                .await
                .as_deref(),
            Some("tomatoes"),
            "the matched word is marked"
        );
        assert!(
            rendered_text(&client, "#history-hits .history-item-meta")
                .await
                .is_some_and(|meta| meta.ends_with(" · You")),
            "who said it"
        );
        let listing_hidden = client
            .execute(
                "return document.getElementById('history-list').hidden;",
                vec![],
            )
            .await
            .expect("reading the listing");
        assert_eq!(
            listing_hidden,
            Value::Bool(true),
            "the hits stand in for the listing"
        );
        support::screenshot(&client, "history-search").await;

        // The keyboard alone: Tab to the hit, Enter opens its conversation at that message.
        support::press(&client, fantoccini::key::Key::Tab).await;
        support::press(&client, fantoccini::key::Key::Enter).await;
        wait_for_text(&client, "#history-detail-title", SEEDS[1].question).await;
        let deadline = Instant::now() + UI_TIMEOUT;
        while focused_message(&client).await.as_deref() != Some("user-1") {
            assert!(
                Instant::now() < deadline,
                "the message found is not focused"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        // Its turn's audio is one click away.
        let played = audio_outcome(
            &client,
            "#history-transcript article[data-message-id='user-1'] audio",
        )
        .await
        .expect("the WAV of the message found loads");
        assert_close_ms(played, SEEDS[1].user_ms as f64, "the turn found");

        // Back: the hits are still there; a phrase finds the assistant's words.
        click(&client, "#history-back").await;
        let field = client.find(Locator::Id("history-search")).await.unwrap();
        field.clear().await.unwrap();
        field.send_keys("\"384 thousand\"").await.unwrap();
        wait_for_text(&client, "#history-search-status", "1 message found.").await;
        assert!(
            rendered_text(&client, "#history-hits .history-item-meta")
                .await
                .is_some_and(|meta| meta.ends_with(" · Assistant"))
        );
        click(&client, "#history-hits .history-hit").await;
        wait_for_text(&client, "#history-detail-title", SEEDS[2].question).await;
        click(&client, "#history-back").await;

        // Nothing said matches: said, and clearing the field shows the listing again.
        let field = client.find(Locator::Id("history-search")).await.unwrap();
        field.clear().await.unwrap();
        field.send_keys("walrus").await.unwrap();
        wait_for_text(
            &client,
            "#history-search-status",
            "Nothing said matches “walrus”.",
        )
        .await;
        field.clear().await.unwrap();
        field.send_keys(" ").await.unwrap();
        wait_for(&client, "#history-list", |text| {
            text.contains(SEEDS[2].question)
        })
        .await;
        assert_eq!(
            support::accessibility_violations(&client).await,
            Vec::<String>::new(),
            "the history panel with its search"
        );
    })
    .await;
    drop(seeded);
}

#[tokio::test(flavor = "multi_thread")]
async fn e2e_a_conversation_renamed_keeps_its_name_after_a_restart_and_a_deleted_index() {
    let name = "history_rename";
    let dirs = support::AppDirs::fresh(name);
    let seeded: Vec<String> = SEEDS.iter().map(|s| seed(&dirs.data, s)).collect();
    let first = seeded[0].clone();
    let app = WebviewApp::launch_with(name, support::Launch::in_dirs(&dirs, None)).await;
    app.run(move |client| async move {
        wait_for_text(&client, "#status", READY).await;
        click(&client, "#open-history").await;
        wait_for(&client, "#history-list", |text| {
            text.contains(SEEDS[0].question)
        })
        .await;
        // A search builds the index, which is thrown away below.
        let search = client.find(Locator::Id("history-search")).await.unwrap();
        search.click().await.unwrap();
        search.send_keys("lisbon").await.unwrap();
        wait_for_text(&client, "#history-search-status", "1 message found.").await;
        search.clear().await.unwrap();
        search.send_keys(" ").await.unwrap();
        wait_for(&client, "#history-list", |text| {
            text.contains(SEEDS[0].question)
        })
        .await;

        open_saved(&client, &first, SEEDS[0].question).await;
        click(&client, "#history-rename-open").await;
        let field = client
            .active_element()
            .await
            .expect("the name field has the focus");
        assert_eq!(
            field.attr("id").await.unwrap().as_deref(),
            Some("history-rename-title")
        );
        // A blank name is refused, saying what to do; the field keeps what was typed.
        field.clear().await.unwrap();
        field.send_keys("   ").await.unwrap();
        support::press(&client, fantoccini::key::Key::Enter).await;
        let error = wait_for(&client, "#history-error", |text| !text.is_empty()).await;
        assert!(error.contains("type a name"), "{error}");
        field.send_keys("Portugal trip").await.unwrap();
        support::press(&client, fantoccini::key::Key::Enter).await;
        wait_for_text(&client, "#history-detail-title", "Portugal trip").await;
        wait_for_text(&client, "#history-notice", "Renamed “Portugal trip”.").await;
        support::screenshot(&client, "history-renamed").await;
        click(&client, "#history-back").await;
        wait_for(&client, "#history-list", |text| {
            text.contains("Portugal trip")
        })
        .await;
    })
    .await;

    // The index is a cache: gone, nothing of the name is lost, and the next search builds it.
    let index = conversations_dir(&dirs.data).join(walkie_store::search::INDEX_FILE);
    std::fs::remove_file(&index).expect("the index was made by the search");
    let app = WebviewApp::launch_with(name, support::Launch::in_dirs(&dirs, None)).await;
    app.run(move |client| async move {
        wait_for_text(&client, "#status", READY).await;
        click(&client, "#open-history").await;
        wait_for(&client, "#history-list", |text| {
            text.contains("Portugal trip")
        })
        .await;
        let search = client.find(Locator::Id("history-search")).await.unwrap();
        search.click().await.unwrap();
        search.send_keys("lisbon").await.unwrap();
        wait_for_text(&client, "#history-search-status", "1 message found.").await;
        // Its name is found too, in the index built anew.
        search.clear().await.unwrap();
        search.send_keys("trip").await.unwrap();
        wait_for_text(&client, "#history-search-status", "1 message found.").await;
        wait_for(&client, "#history-hits", |text| text.contains("Its name")).await;
    })
    .await;
}

/// The id of the element with the keyboard focus.
async fn focused_id(client: &Client) -> Option<String> {
    let focused = client.active_element().await.ok()?;
    focused.attr("id").await.ok().flatten()
}

/// Presses Tab until element `id` has the focus (at most 40 times).
async fn tab_to(client: &Client, id: &str) {
    for _ in 0..40 {
        if focused_id(client).await.as_deref() == Some(id) {
            return;
        }
        support::press(client, Key::Tab).await;
    }
    panic!("Tab never reached #{id}");
}

/// What `scripts/oracle/export_oracle.py` read of an exported file, with FFmpeg or webvtt-py.
fn oracle(args: &[&str]) -> Value {
    let python = std::env::var_os("WALKIE_PYTHON").expect(
        "WALKIE_PYTHON names the tests' Python: `export WALKIE_PYTHON=$(scripts/python-env.sh)` first",
    );
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/oracle/export_oracle.py");
    let output = std::process::Command::new(python)
        .arg(script)
        .args(args)
        .output()
        .expect("the oracle runs");
    assert!(
        output.status.success(),
        "the oracle could not read {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("the oracle prints JSON")
}

/// Chooses Export…'s options by clicks, then the file in the native dialog, and waits for the
/// notice naming `destination`.
async fn export_through_the_dialog(
    client: &Client,
    display: &str,
    choice: &str,
    audio: Option<(&str, &str)>,
    dialog_title: &str,
    destination: &Path,
) {
    click(client, "#history-export").await;
    click(client, &format!("#export-dialog input[value='{choice}']")).await;
    if let Some((channels, format)) = audio {
        for (select, value) in [("export-channels", channels), ("export-format", format)] {
            client
                .execute(
                    "const select = document.getElementById(arguments[0]);
                     select.value = arguments[1];
                     select.dispatchEvent(new Event('change'));",
                    vec![Value::from(select), Value::from(value)],
                )
                .await
                .unwrap();
        }
        support::screenshot(client, "history-export-dialog").await;
    }
    click(client, "#export-choose").await;
    support::type_into_native_dialog(display, dialog_title, "ctrl+a", destination).await;
    wait_for_text(
        client,
        "#history-notice",
        &format!("Exported to {}", destination.display()),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn e2e_a_conversation_exported_whole_has_each_side_on_its_channel_at_the_journals_times_and_captions_that_parse()
 {
    let name = "history_export_whole";
    let dirs = support::AppDirs::fresh(name);
    let id = seed(&dirs.data, &SEEDS[0]);
    // The journal's word on when each side sounded, read from its lines.
    let journal = std::fs::read_to_string(
        conversations_dir(&dirs.data)
            .join(&id)
            .join(walkie_store::JOURNAL_FILE),
    )
    .unwrap();
    let mut spans = std::collections::HashMap::new();
    let mut started_unix_ms = 0;
    for line in journal.lines() {
        let record: Value = serde_json::from_str(line).unwrap();
        match record["record"].as_str() {
            Some("started") => started_unix_ms = record["unix_ms"].as_i64().unwrap(),
            Some("wav_closed") => {
                let start = record["audio_start_unix_ms"]
                    .as_i64()
                    .expect("a start time")
                    - started_unix_ms;
                let length = record["sample_count"].as_i64().unwrap() * 1000
                    / record["sample_rate_hz"].as_i64().unwrap();
                spans.insert(
                    record["speaker"].as_str().unwrap().to_owned(),
                    (start, start + length),
                );
            }
            _ => {}
        }
    }
    let (user, assistant) = (spans["user"], spans["assistant"]);
    let silence = (user.1 + 40, assistant.0 - 40);
    let windows = serde_json::json!([
        [user.0 + 40, user.1 - 40],
        [assistant.0 + 40, assistant.1 - 40],
        [silence.0, silence.1],
    ])
    .to_string();
    let wav_to = dirs.data.join("whole.wav");
    let opus_to = dirs.data.join("whole.opus");
    let vtt_to = dirs.data.join("whole.vtt");

    let app = WebviewApp::launch_with(name, support::Launch::in_dirs(&dirs, None)).await;
    let display = app.display().to_owned();
    let (wav, opus, vtt) = (wav_to.clone(), opus_to.clone(), vtt_to.clone());
    app.run(move |client| async move {
        wait_for_text(&client, "#status", READY).await;
        click(&client, "#open-history").await;
        open_saved(&client, &id, SEEDS[0].question).await;
        // The stereo WAV from the keyboard alone: Tab to Export…, Enter; the arrow key picks
        // the audio; Tab past its channels (you left, the assistant right) and format (WAV),
        // both as they open, to Choose where…, Enter.
        tab_to(&client, "history-export").await;
        support::press(&client, Key::Enter).await;
        wait_for(&client, "#export-dialog", |_| true).await;
        assert_eq!(
            focused_id(&client).await.as_deref(),
            Some("export-kind-markdown")
        );
        support::press(&client, Key::Down).await;
        for expected in ["export-channels", "export-format"] {
            support::press(&client, Key::Tab).await;
            assert_eq!(
                focused_id(&client).await.as_deref(),
                Some(expected),
                "the audio's options are reached once the audio is chosen"
            );
        }
        tab_to(&client, "export-choose").await;
        support::press(&client, Key::Enter).await;
        support::type_into_native_dialog(
            &display,
            "Export the conversation's audio as WAV",
            "ctrl+a",
            &wav,
        )
        .await;
        wait_for_text(
            &client,
            "#history-notice",
            &format!("Exported to {}", wav.display()),
        )
        .await;
        support::screenshot(&client, "history-exported").await;
        export_through_the_dialog(
            &client,
            &display,
            "audio",
            Some(("stereo", "oggOpus")),
            "Export the conversation's audio as Opus",
            &opus,
        )
        .await;
        export_through_the_dialog(
            &client,
            &display,
            "captions",
            None,
            "Export the captions as WebVTT",
            &vtt,
        )
        .await;
    })
    .await;

    // Each side on its own channel where the journal says it sounded, silence between, in the
    // WAV and in the Opus file, as FFmpeg decodes them.
    for (file, format, codec) in [(&wav_to, "wav", "pcm_s16le"), (&opus_to, "ogg", "opus")] {
        let read = oracle(&["audio", &file.to_string_lossy(), &windows]);
        assert_eq!(read["format"], format, "{read}");
        assert_eq!(read["codec"], codec, "{read}");
        assert_eq!(read["channels"], 2, "{read}");
        let duration_ms = read["duration_ms"].as_i64().unwrap();
        assert!(
            (duration_ms - assistant.1).abs() <= 20,
            "ends with the reply: {read}"
        );
        let rms = |window: usize, channel: usize| read["rms"][window][channel].as_f64().unwrap();
        let (left, right) = (0, 1);
        assert!(
            rms(0, left) > 0.1 && rms(0, right) < 0.01,
            "the user's words on the left: {read}"
        );
        assert!(
            rms(1, right) > 0.1 && rms(1, left) < 0.01,
            "the reply on the right: {read}"
        );
        assert!(
            rms(2, left) < 0.01 && rms(2, right) < 0.01,
            "silence between: {read}"
        );
    }
    // The captions parse strictly as WebVTT, each message while its side sounds.
    let read = oracle(&["captions", &vtt_to.to_string_lossy()]);
    let cues = read["cues"].as_array().unwrap();
    assert_eq!(cues.len(), 2, "{read}");
    // (voice, text, its span) of each cue.
    let cue = |at: usize| {
        let cue = &cues[at];
        let ms = |key: &str| cue[key].as_i64().expect("a time in ms");
        (
            cue["voice"].as_str().unwrap_or_default().to_owned(),
            cue["text"].as_str().unwrap_or_default().to_owned(),
            (ms("start_ms"), ms("end_ms")),
        )
    };
    assert_eq!(
        cue(0),
        ("You".to_owned(), SEEDS[0].question.to_owned(), user)
    );
    assert_eq!(
        cue(1),
        (
            "Assistant".to_owned(),
            SEEDS[0].answer.to_owned(),
            assistant
        )
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn e2e_a_damaged_conversation_is_listed_marked_and_found_as_far_as_it_reads() {
    let name = "history_damaged";
    let dirs = support::AppDirs::fresh(name);
    let damaged = seed(&dirs.data, &SEEDS[0]);
    seed(&dirs.data, &SEEDS[1]);
    let conversations = conversations_dir(&dirs.data);
    // A line in the middle of its journal is garbage.
    let journal = conversations
        .join(&damaged)
        .join(walkie_store::JOURNAL_FILE);
    let text = std::fs::read_to_string(&journal).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    lines.insert(2, "{\"record\": \"agui\", \"event\": ");
    std::fs::write(&journal, lines.join("\n") + "\n").unwrap();
    // Another folder's journal lost its start.
    let headless = conversations.join("2023-01-01_00-00-00");
    std::fs::create_dir(&headless).unwrap();
    std::fs::write(
        headless.join(walkie_store::JOURNAL_FILE),
        "{\"record\":\"closed\",\"unix_ms\":1}\n",
    )
    .unwrap();
    let app = WebviewApp::launch_with(name, support::Launch::in_dirs(&dirs, None)).await;
    app.run(move |client| async move {
        wait_for_text(&client, "#status", READY).await;
        click(&client, "#open-history").await;
        wait_for(&client, "#history-list", |text| {
            text.contains(SEEDS[1].question) && text.contains("2023-01-01_00-00-00")
        })
        .await;
        let marked = client
            .execute(
                "return [...document.querySelectorAll('#history-list .history-item')]
                   .filter((item) => 'damaged' in item.dataset).map((item) => item.dataset.id);",
                vec![],
            )
            .await
            .unwrap();
        assert_eq!(
            marked,
            serde_json::json!([damaged, "2023-01-01_00-00-00"]),
            "the damaged one and the unreadable one, last"
        );
        support::screenshot(&client, "history-damaged").await;
        // What it holds past the bad line is found.
        let search = client.find(Locator::Id("history-search")).await.unwrap();
        search.click().await.unwrap();
        search.send_keys("lisbon").await.unwrap();
        wait_for_text(&client, "#history-search-status", "1 message found.").await;
        search.clear().await.unwrap();
        search.send_keys(" ").await.unwrap();
        // The unreadable one opens to one line saying why.
        click(
            &client,
            "#history-list .history-item[data-id='2023-01-01_00-00-00']",
        )
        .await;
        let error = wait_for(&client, "#history-error", |text| !text.is_empty()).await;
        assert!(error.contains("not a conversation folder"), "{error}");
    })
    .await;
}
