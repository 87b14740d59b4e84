//! Calls dropped at random points come back with their conversation, nothing lost or doubled.
//!
//! The app's own conversation driver (no window: the statuses and transcript events it would
//! send the webview are collected here) talks to the real local provider over WebRTC on
//! loopback, with the real audio engine on the test PulseAudio server. After one exchange the
//! provider drops the call again and again — while idle, while the key is held, while a reply
//! plays, and while a new call is still being set up — and the driver must each time come back
//! to Ready. At the end the transcript the webview got and the one saved on disk hold the same
//! messages, each once, and every new session was given the first exchange.
//!
//! Slow test (it runs in CI with 8 drops). The bench runs 100:
//! `WALKIE_SOAK_DROPS=100 cargo test --release --test slow_redial_soak -- --nocapture`
//! (needs `export PULSE_SERVER=$(scripts/pulse.sh start target/pulse)`); it prints the time
//! from each drop to Ready, p50 and p95.

#[path = "support/audio.rs"]
mod audio;

use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::sync::mpsc;
use walkie_agui::{Consumer, Mode};
use walkie_app::conversation::{self, Command, Ui};
use walkie_app::history::CurrentConversation;
use walkie_app::plan::{Plan, Provider};
use walkie_app::recording::Saving;
use walkie_app::secrets::ApiKey;
use walkie_app::settings::{CallFormChoice, ProviderKind, Settings};
use walkie_conversation::{ConnectionState, DeviceDirection, LevelReading, StatusEvent};
use walkie_local::{LocalProvider, ProviderConfig};
use walkie_store::{Store, conversations_dir};

/// How long the driver may take to be ready again after a drop before the test gives up.
const READY_TIMEOUT: Duration = Duration::from_secs(20);

/// What the driver would show in the window.
#[derive(Debug)]
enum Shown {
    Status(StatusEvent),
    Transcript(walkie_agui::Event),
}

struct CollectingUi(mpsc::UnboundedSender<Shown>);

impl Ui for CollectingUi {
    fn status(&mut self, status: StatusEvent) {
        let _ = self.0.send(Shown::Status(status));
    }
    fn transcript(&mut self, event: &walkie_agui::Event) {
        let _ = self.0.send(Shown::Transcript(event.clone()));
    }
    fn level(&mut self, _: DeviceDirection, _: LevelReading) {}
    fn spending(&mut self, _: &walkie_conversation::Spending) {}
    fn connection_health(&mut self, _: &walkie_conversation::ConnectionHealth) {}
    fn reply_playout(&mut self, _: &walkie_conversation::ReplyPlayout) {}
    // The soak declares no tool server, so no call asks first.
    fn ask_approval(&mut self, _: &walkie_conversation::ApprovalRequest) {}
    fn approval_closed(&mut self, _: &str) {}
}

/// The window's side of the test: statuses as they come, transcript events kept.
struct Window {
    shown: mpsc::UnboundedReceiver<Shown>,
    transcript: Vec<walkie_agui::Event>,
    statuses: Vec<StatusEvent>,
    /// Where the test is, for a failure's message.
    step: String,
    /// How long a wait for a status may take before the test gives up.
    wait: Duration,
}

impl Window {
    /// Waits for a status that is `wanted`, returns when it came.
    async fn until(&mut self, wanted: impl Fn(&StatusEvent) -> bool, what: &str) -> Instant {
        let wait = self.wait;
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            let shown = tokio::time::timeout_at(deadline, self.shown.recv())
                .await
                .unwrap_or_else(|_| {
                    let last: Vec<_> = self.statuses.iter().rev().take(6).collect();
                    panic!(
                        "{}: no {what} within {wait:?}; the last statuses: {last:?}",
                        self.step
                    )
                })
                .expect("the driver runs");
            match shown {
                Shown::Transcript(event) => self.transcript.push(event),
                Shown::Status(status) => {
                    let matched = wanted(&status);
                    self.statuses.push(status);
                    if matched {
                        return Instant::now();
                    }
                }
            }
        }
    }

    async fn until_state(&mut self, state: ConnectionState) -> Instant {
        self.until(|status| status.state == state, &format!("{state:?}"))
            .await
    }
}

/// Holds the key for `held_ms`, releases it, and waits for the reply to play and end.
async fn exchange(window: &mut Window, commands: &mpsc::UnboundedSender<Command>, held_ms: u64) {
    commands
        .send(Command::PushToTalk { pressed: true })
        .expect("the driver runs");
    window.until_state(ConnectionState::Listening).await;
    tokio::time::sleep(Duration::from_millis(held_ms)).await;
    commands
        .send(Command::PushToTalk { pressed: false })
        .expect("the driver runs");
    window.until_state(ConnectionState::Speaking).await;
    window.until_state(ConnectionState::Ready).await;
}

/// The client events the provider received, per call, in order of the calls.
fn client_events_per_call(trace: &std::path::Path) -> Vec<Vec<Value>> {
    let text = std::fs::read_to_string(trace.join("client-events.jsonl")).unwrap_or_default();
    let mut calls: Vec<(String, Vec<Value>)> = Vec::new();
    for line in text.lines() {
        let line: Value = serde_json::from_str(line).expect("a trace line is JSON");
        let call = line["call_id"].as_str().expect("a call id").to_owned();
        let event = serde_json::from_str(line["text"].as_str().expect("a text")).expect("JSON");
        match calls.iter_mut().find(|(id, _)| *id == call) {
            Some((_, events)) => events.push(event),
            None => calls.push((call, vec![event])),
        }
    }
    calls.into_iter().map(|(_, events)| events).collect()
}

/// Waits until the provider's newest call has received the conversation so far.
async fn provider_holds_the_conversation(trace: &std::path::Path, step: &str) {
    let deadline = Instant::now() + READY_TIMEOUT;
    loop {
        let calls = client_events_per_call(trace);
        if calls.last().is_some_and(|events| {
            events
                .iter()
                .any(|event| event["type"] == "conversation.item.create")
        }) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{step}: the newest call was not given the conversation within {READY_TIMEOUT:?}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn percentile_ms(sorted: &[Duration], fraction: f64) -> u128 {
    let index = ((sorted.len() as f64 * fraction).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[index].as_millis()
}

/// The driver on a fresh data folder, talking to a local provider whose sessions last
/// `session_limit_ms` (the plan says the same), with the provider's trace kept.
struct Bench {
    provider: LocalProvider,
    window: Window,
    commands: mpsc::UnboundedSender<Command>,
    driver: tokio::task::JoinHandle<()>,
    data_dir: std::path::PathBuf,
    trace: std::path::PathBuf,
}

/// One bench at a time: the memory figure is this process's resident size, which another
/// bench's calls would swell, and two benches' calls on two cores starve each other's.
static ONE_BENCH: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

async fn start(name: &str, session_limit_ms: Option<u64>) -> Bench {
    let root = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&root);
    let (data_dir, trace) = (root.join("data"), root.join("trace"));
    let provider = LocalProvider::start(ProviderConfig {
        trace_dir: Some(trace.clone()),
        session_limit_ms,
        ..ProviderConfig::default()
    })
    .await
    .expect("a local provider on loopback");
    let settings = Settings {
        provider: ProviderKind::Local,
        ..Settings::default()
    };
    let mut plan = Plan::resolve(&settings, Ok(data_dir.clone()));
    plan.provider = Ok(Provider::Custom {
        base_url: provider.base_url(),
        api_key: Some(ApiKey::given(provider.token())),
        call_form: CallFormChoice::Automatic,
    });
    if let Some(limit_ms) = session_limit_ms {
        plan.session_limit_ms = limit_ms;
    }
    let (ui, shown) = mpsc::unbounded_channel();
    let (commands, received) = mpsc::unbounded_channel();
    let saving = Saving::new(
        CurrentConversation::default(),
        walkie_store::Saved::Everything,
    );
    let driver = tokio::spawn(conversation::run(
        plan,
        CollectingUi(ui),
        received,
        saving,
        conversation::Dialler::default(),
    ));
    let window = Window {
        shown,
        transcript: Vec::new(),
        statuses: Vec::new(),
        step: "the first exchange".to_owned(),
        wait: READY_TIMEOUT,
    };
    Bench {
        provider,
        window,
        commands,
        driver,
        data_dir,
        trace,
    }
}

impl Bench {
    /// The user leaves: the driver ends and closes the transcript; what it showed is collected.
    async fn finish(mut self) -> (Window, std::path::PathBuf, std::path::PathBuf) {
        drop(self.commands);
        self.driver.await.expect("the driver ends without a panic");
        while let Ok(shown) = self.window.shown.try_recv() {
            if let Shown::Transcript(event) = shown {
                self.window.transcript.push(event);
            }
        }
        (self.window, self.data_dir, self.trace)
    }
}

/// Each message's id and text.
fn ids_and_texts(messages: &[walkie_agui::Message]) -> Vec<(String, String)> {
    messages
        .iter()
        .map(|message| {
            (
                message.id().to_owned(),
                message.content().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

/// The messages the webview was shown (valid AG-UI, each once), checked to be the ones saved
/// on disk in the one conversation.
fn shown_and_saved(window: &Window, data_dir: &std::path::Path) -> Vec<(String, String)> {
    let mut webview = Consumer::new(Mode::Strict);
    for event in &window.transcript {
        webview
            .push(event)
            .expect("the webview's stream is valid AG-UI");
    }
    let shown = ids_and_texts(webview.messages());
    let mut ids: Vec<&str> = shown.iter().map(|(id, _)| id.as_str()).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), shown.len(), "no message twice: {shown:?}");
    let store = Store::new(conversations_dir(data_dir));
    let saved = store.list().expect("the saved conversations");
    assert_eq!(saved.len(), 1, "the calls went on in one conversation");
    let conversation = store.open_strict(&saved[0].id).expect("it reads back");
    let on_disk = ids_and_texts(conversation.messages());
    if let Some(first) =
        (0..on_disk.len().max(shown.len())).find(|&index| on_disk.get(index) != shown.get(index))
    {
        panic!(
            "the saved transcript is not the one shown: message {first} of {} saved, {} shown; \
             saved {:?}, shown {:?}; the shown messages around it: {:?}",
            on_disk.len(),
            shown.len(),
            on_disk.get(first),
            shown.get(first),
            &shown[first.saturating_sub(3)..(first + 3).min(shown.len())]
        );
    }
    shown
}

#[tokio::test(flavor = "multi_thread")]
async fn slow_calls_dropped_at_any_point_come_back_ready_with_nothing_lost_or_doubled() {
    let _one_bench = ONE_BENCH.lock().await;
    audio::require_test_audio();
    let drops: usize = std::env::var("WALKIE_SOAK_DROPS")
        .ok()
        .and_then(|drops| drops.parse().ok())
        .unwrap_or(8);
    let mut bench = start("redial-soak", None).await;
    let bench_trace = bench.trace.clone();
    let (provider, commands, window) = (&bench.provider, bench.commands.clone(), &mut bench.window);
    window.until_state(ConnectionState::Ready).await;
    exchange(window, &commands, 800).await;

    let mut drop_to_ready = Vec::new();
    for drop in 0..drops {
        let point = ["idle", "mid-press", "mid-reply", "during set-up"][drop % 4];
        window.step = format!("drop {drop} ({point})");
        if drop > 0 {
            // Ready comes with `session.updated`; the restored items were sent right after the
            // `session.update` it answers, but a drop at once can end the call before the
            // provider has read them. The drops are meant for calls that hold the conversation.
            provider_holds_the_conversation(&bench_trace, &window.step).await;
        }
        match point {
            "mid-press" => {
                commands
                    .send(Command::PushToTalk { pressed: true })
                    .expect("the driver runs");
                window.until_state(ConnectionState::Listening).await;
            }
            "mid-reply" => {
                commands
                    .send(Command::PushToTalk { pressed: true })
                    .expect("the driver runs");
                window.until_state(ConnectionState::Listening).await;
                tokio::time::sleep(Duration::from_millis(600)).await;
                commands
                    .send(Command::PushToTalk { pressed: false })
                    .expect("the driver runs");
                window.until_state(ConnectionState::Speaking).await;
            }
            "during set-up" => {
                let calls = provider.calls_total();
                provider.drop_calls().await;
                while provider.calls_total() == calls {
                    window.until(|_| true, "a status while redialling").await;
                }
            }
            _ => {}
        }
        let dropped_at = Instant::now();
        provider.drop_calls().await;
        if point == "mid-press" {
            commands
                .send(Command::PushToTalk { pressed: false })
                .expect("the driver runs");
        }
        window
            .until(
                |status| status.state == ConnectionState::Reconnecting,
                "Reconnecting",
            )
            .await;
        let ready_at = window.until_state(ConnectionState::Ready).await;
        drop_to_ready.push(ready_at - dropped_at);
    }
    // One more exchange on the last call, then the user leaves: the transcript closes.
    exchange(window, &commands, 500).await;
    drop(commands);
    let (window, data_dir, trace) = bench.finish().await;

    let mut sorted = drop_to_ready.clone();
    sorted.sort();
    eprintln!(
        "redial soak: {drops} drops, {}/{drops} ready again; drop to ready p50 {} ms, p95 {} ms, max {} ms",
        drop_to_ready.len(),
        percentile_ms(&sorted, 0.5),
        percentile_ms(&sorted, 0.95),
        sorted.last().map_or(0, Duration::as_millis),
    );
    assert_eq!(drop_to_ready.len(), drops, "every drop came back to Ready");

    // The webview's transcript is valid AG-UI, its messages each once, and the same on disk.
    let shown = shown_and_saved(&window, &data_dir);
    let (first_said, first_reply) = (&shown[0].1, &shown[1].1);
    assert!(
        first_said.ends_with(" s of speech]") || first_said.ends_with(" s of silence]"),
        "{first_said}"
    );
    assert!(first_reply.contains("played your"), "{first_reply}");
    // Replies the drops cut keep what was said of them; the first and the last were whole.
    let replies: Vec<&str> = shown
        .iter()
        .filter(|(id, _)| id.starts_with("assistant-"))
        .map(|(_, text)| text.as_str())
        .collect();
    let mid_reply_drops = (drops + 1) / 4;
    assert_eq!(replies.len(), 2 + mid_reply_drops, "{shown:?}");
    assert!(
        replies
            .last()
            .is_some_and(|reply| reply.contains("played your")),
        "{shown:?}"
    );

    // Every session that was given the conversation got the first exchange first.
    let calls = client_events_per_call(&trace);
    let restored_calls: Vec<&Vec<Value>> = calls[1..]
        .iter()
        .filter(|events| {
            events
                .iter()
                .any(|event| event["type"] == "conversation.item.create")
        })
        .collect();
    assert!(
        restored_calls.len() >= drops - drops.div_ceil(4),
        "{} of {} later calls were given the conversation",
        restored_calls.len(),
        calls.len() - 1
    );
    for events in restored_calls {
        let first_item = events
            .iter()
            .find(|event| event["type"] == "conversation.item.create")
            .expect("an item");
        assert_eq!(
            first_item["item"]["content"][0]["text"],
            first_said.as_str()
        );
    }
}

/// The renewal the provider's limit asks for, on a real call: at a pause before the limit the
/// old call is hung up and the next one is given the conversation; the user cannot talk from
/// "Renewing…" to Ready, the silence a renewal adds.
///
/// Slow test (a 20 s session in the test command). The bench gives OpenAI-like minutes:
/// `WALKIE_RENEWAL_LIMIT_MS=120000 cargo test --test slow_redial_soak renewed -- --nocapture`.
#[tokio::test(flavor = "multi_thread")]
async fn slow_a_session_near_the_providers_limit_is_renewed_at_a_pause_and_keeps_the_conversation()
{
    let _one_bench = ONE_BENCH.lock().await;
    audio::require_test_audio();
    let limit_ms: u64 = std::env::var("WALKIE_RENEWAL_LIMIT_MS")
        .ok()
        .and_then(|ms| ms.parse().ok())
        .unwrap_or(20_000);
    let mut bench = start("renewal", Some(limit_ms)).await;
    let (commands, window) = (bench.commands.clone(), &mut bench.window);
    let connected_at = window.until_state(ConnectionState::Ready).await;
    exchange(window, &commands, 800).await;

    window.step = "waiting for the renewal".to_owned();
    window.wait = Duration::from_millis(limit_ms) + READY_TIMEOUT;
    let renewing_at = window
        .until(
            |status| status.detail.starts_with("Renewing the session"),
            "Renewing",
        )
        .await;
    window.wait = READY_TIMEOUT;
    let ready_at = window.until_state(ConnectionState::Ready).await;
    let added_silence = ready_at - renewing_at;
    let renewed_after = renewing_at - connected_at;
    assert!(
        renewed_after < Duration::from_millis(limit_ms),
        "renewed {renewed_after:?} after connecting, past the {limit_ms} ms limit"
    );
    window.step = "the exchange after the renewal".to_owned();
    exchange(window, &commands, 500).await;
    drop(commands);
    let (window, data_dir, trace) = bench.finish().await;
    eprintln!(
        "renewal: a {limit_ms} ms session renewed {} ms after it began; added silence (Renewing to Ready) {} ms",
        renewed_after.as_millis(),
        added_silence.as_millis()
    );

    assert!(
        !window
            .statuses
            .iter()
            .any(|status| status.state == ConnectionState::Reconnecting),
        "a renewal, not a drop: {:?}",
        window.statuses
    );
    let shown = shown_and_saved(&window, &data_dir);
    let roles: Vec<&str> = shown
        .iter()
        .map(|(id, _)| id.split('-').next().unwrap_or_default())
        .collect();
    assert_eq!(
        roles,
        ["user", "assistant", "user", "assistant"],
        "{shown:?}"
    );
    assert!(
        shown[3].1.contains("played your"),
        "the second reply is whole: {shown:?}"
    );
    let calls = client_events_per_call(&trace);
    assert_eq!(
        calls.len(),
        2,
        "one renewal, before the provider ended anything"
    );
    let given: Vec<&Value> = calls[1]
        .iter()
        .filter(|event| event["type"] == "conversation.item.create")
        .map(|event| &event["item"]["content"][0]["text"])
        .collect();
    assert_eq!(
        given,
        [shown[0].1.as_str(), shown[1].1.as_str()],
        "the new session was given the first exchange"
    );
}

/// The process's resident memory (this test's: the driver, its audio engine and the local
/// provider), from `/proc/self/status`.
fn resident_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("Linux's /proc");
    let kib: u64 = status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS in kB");
    kib * 1024
}

/// The least-squares slope of `samples` (x, y), in y per x.
fn slope(samples: &[(f64, f64)]) -> f64 {
    let n = samples.len() as f64;
    let mean_x = samples.iter().map(|(x, _)| x).sum::<f64>() / n;
    let mean_y = samples.iter().map(|(_, y)| y).sum::<f64>() / n;
    let covariance: f64 = samples
        .iter()
        .map(|(x, y)| (x - mean_x) * (y - mean_y))
        .sum();
    let variance: f64 = samples.iter().map(|(x, _)| (x - mean_x).powi(2)).sum();
    covariance / variance
}

/// A long call, a turn every 10 s, its session renewed once on the way (the provider's
/// session lasts two thirds of the soak, and the renewal falls due as a turn begins): every
/// turn is answered, the transcript saved is the one shown, the memory stays flat, and the
/// journal grows in step with the transcript.
///
/// Slow test (one minute in the test command). The bench runs an hour:
/// `WALKIE_SOAK_MINUTES=60 cargo test --release --test slow_redial_soak long_call -- --nocapture`.
#[tokio::test(flavor = "multi_thread")]
async fn slow_a_long_call_keeps_its_memory_flat_and_its_journal_in_step_with_the_transcript() {
    let _one_bench = ONE_BENCH.lock().await;
    audio::require_test_audio();
    let minutes: u64 = std::env::var("WALKIE_SOAK_MINUTES")
        .ok()
        .and_then(|minutes| minutes.parse().ok())
        .unwrap_or(1);
    let turn_seconds: u64 = std::env::var("WALKIE_SOAK_TURN_SECONDS")
        .ok()
        .and_then(|seconds| seconds.parse().ok())
        .unwrap_or(10);
    let turns = minutes * 60 / turn_seconds;
    let session_limit_ms = std::env::var("WALKIE_SOAK_SESSION_LIMIT_MS")
        .ok()
        .and_then(|ms| ms.parse().ok())
        .unwrap_or(minutes * 40_000);
    let mut bench = start("long-call", Some(session_limit_ms)).await;
    let (commands, window) = (bench.commands.clone(), &mut bench.window);
    window.until_state(ConnectionState::Ready).await;
    let began = tokio::time::Instant::now();
    let store = Store::new(conversations_dir(&bench.data_dir));
    let journal_bytes = || {
        let saved = store.list().expect("the saved conversations");
        let dir = store.dir_of(&saved[0].id).expect("its folder");
        std::fs::metadata(dir.join(walkie_store::JOURNAL_FILE))
            .expect("its journal")
            .len()
    };
    // (seconds since the first turn, resident MiB) and the journal's size after each turn.
    let mut resident = Vec::new();
    let mut journal = Vec::new();
    for turn in 0..turns {
        window.step = format!("turn {turn} of {turns}");
        tokio::time::sleep_until(began + Duration::from_secs(turn_seconds * turn)).await;
        exchange(window, &commands, 1_500).await;
        resident.push((
            began.elapsed().as_secs_f64(),
            resident_bytes() as f64 / (1024.0 * 1024.0),
        ));
        journal.push(journal_bytes());
    }
    drop(commands);
    let (window, data_dir, trace) = bench.finish().await;

    let renewals = window
        .statuses
        .iter()
        .filter(|status| status.detail.starts_with("Renewing the session"))
        .count();
    assert_eq!(renewals, 1, "one renewal: {:?}", window.statuses);
    assert_eq!(
        client_events_per_call(&trace).len(),
        2,
        "two calls, one renewal"
    );
    assert!(
        !window
            .statuses
            .iter()
            .any(|status| status.state == ConnectionState::Reconnecting),
        "a renewal, not a drop: {:?}",
        window.statuses
    );
    let shown = shown_and_saved(&window, &data_dir);
    assert_eq!(
        shown.len() as u64,
        2 * turns,
        "every turn and its reply: {shown:?}"
    );
    let whole_replies = shown
        .iter()
        .filter(|(id, text)| id.starts_with("assistant-") && text.contains("played your"))
        .count() as u64;
    assert_eq!(whole_replies, turns, "every reply whole: {shown:?}");

    let journal_bytes = journal_bytes();
    let transcript_bytes: usize = shown.iter().map(|(_, text)| text.len()).sum();
    let journal_per_transcript_byte = journal_bytes as f64 / transcript_bytes as f64;
    // The first turn sets up the engine and the call; the slope is taken after it.
    let after_first = &resident[1..];
    let mib_per_hour = slope(after_first) * 3600.0;
    let (first_mib, last_mib) = (after_first[0].1, after_first[after_first.len() - 1].1);
    eprintln!(
        "long call: {turns} turns in {minutes} min; resident {first_mib:.1} MiB after the second turn, \
         {last_mib:.1} MiB after the last, slope {mib_per_hour:.1} MiB/hour; journal {journal_bytes} \
         bytes for {transcript_bytes} bytes of transcript ({journal_per_transcript_byte:.1} per byte, \
         {} per turn)",
        journal_bytes / turns
    );
    assert!(
        last_mib - first_mib < 8.0 * minutes as f64,
        "the memory grew by {:.1} MiB over {minutes} min: {resident:?}",
        last_mib - first_mib
    );
    // Each turn adds about the same to the journal: the second half of the turns added no
    // more than the first half (plus a turn's worth, for the halves' uneven split).
    let half = journal.len() / 2;
    let first_half_bytes = journal[half - 1];
    let second_half_bytes = journal[journal.len() - 1] - journal[half - 1];
    assert!(
        second_half_bytes <= first_half_bytes + first_half_bytes / half as u64,
        "the journal grows faster as the call goes on: {journal:?}"
    );
}
