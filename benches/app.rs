//! The app's own benchmarks, in the real window with real audio (the e2e harness):
//!
//! - launch → usable window: from asking WebKitWebDriver for a session (which starts Walkie)
//!   to the page saying its listeners are wired, and on to the status line saying Ready (the
//!   local provider connected over WebRTC);
//! - memory: proportional set size (PSS, so shared libraries count once) of Walkie and its
//!   WebKit processes together, idle and while a reply plays;
//! - turn latency: from the push-to-talk release to the reply's first sound at the virtual
//!   speaker, with the local provider (whose own answer time is well under a millisecond, so
//!   this is what the client adds, the 200 ms push-to-talk tail included);
//! - barge-in: from pressing the key during a reply to the speaker falling silent (the issue's
//!   bound is 100 ms);
//! - the floor under the memory figure: a bare WebKitGTK window (GTK and the same webview with
//!   its default settings, showing one line of text, nothing of Walkie's), measured the same way
//!   in the same run, so Walkie's figure is also given as a ratio to what any app on this
//!   webview pays.
//!
//! Run: `PULSE_SERVER=$(scripts/pulse.sh start target/pulse-bench) cargo bench --bench app`
//! (the figures go to docs/benchmarks.md). Not a timed test: nothing here fails on a figure.
//!
//! `cargo bench --bench app -- --peer BASE_URL TOKEN VOICE_WAV TURNS` is Walkie's side of the
//! peer benchmark (bench/peer/run.sh): Walkie is switched in Settings to the provider at
//! BASE_URL (its token as the key), the voice plays into the microphone for the whole run, and
//! TURNS push-to-talk turns of 1.5 s are made; it prints what bench/peer/report.mjs reads (the
//! run's start and end, which the report times from the provider's trace and one detector; the
//! CPU time of Walkie's processes over the turns, their PSS idle and while a reply plays, and as
//! floors the PSS of a bare WebKitGTK window and of Walkie's page in a Tauri window with nothing
//! of Walkie's behind it, examples/page_floor.rs, which run.sh builds).

#[path = "../tests/support/mod.rs"]
mod support;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::Client;
use support::audio::{PulseStream, RATE_HZ, TimedRecorder, require_test_audio, speech_like};
use support::{WebviewApp, wait_for};

const LAUNCHES: usize = 5;
const TURNS: usize = 5;

fn main() {
    if std::env::args().any(|arg| arg == BARE_WEBVIEW) {
        bare_webview();
        return;
    }
    require_test_audio();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let args: Vec<String> = std::env::args().collect();
    if let Some(at) = args.iter().position(|arg| arg == "--peer") {
        // Cargo adds `--bench` after the arguments it was given.
        let given: Vec<&String> = args[at + 1..]
            .iter()
            .filter(|arg| *arg != "--bench")
            .collect();
        let [base_url, token, voice, turns] = given[..] else {
            panic!("usage: --peer BASE_URL TOKEN VOICE_WAV TURNS");
        };
        let turns = turns.parse().expect("TURNS is a number");
        runtime.block_on(peer(base_url, token, voice, turns));
        return;
    }
    runtime.block_on(async {
        launches().await;
        let (floor_kib, _) = bare_webview_memory().await;
        turns_and_memory(floor_kib).await;
        barge_ins().await;
    });
}

async fn launches() {
    let mut to_page = Vec::new();
    let mut to_connected = Vec::new();
    for _ in 0..LAUNCHES {
        let app = WebviewApp::launch("bench_launch").await;
        let page = app.launch_to_ready;
        let started = Instant::now();
        let client = app.client.clone();
        wait_for(&client, "#status", |text| text.starts_with("Ready")).await;
        to_page.push(page);
        to_connected.push(page + started.elapsed());
        app.run(|_| async {}).await;
    }
    report("launch → usable window (page ready)", &to_page);
    report("launch → connected (status Ready)", &to_connected);
}

/// The argument that makes this binary the bare webview instead of the bench.
const BARE_WEBVIEW: &str = "--bare-webview";

/// A GTK window holding a WebKitGTK webview (painting without GL, as Walkie's) with one line
/// of text: what any app on this webview pays before doing anything.
fn bare_webview() {
    use gtk::prelude::*;
    use webkit2gtk::{HardwareAccelerationPolicy, SettingsExt, WebViewExt};
    gtk::init().expect("GTK starts on the bench's display");
    let window = gtk::Window::new(gtk::WindowType::Toplevel);
    window.set_default_size(480, 720);
    let webview = webkit2gtk::WebView::new();
    if let Some(settings) = WebViewExt::settings(&webview) {
        settings.set_hardware_acceleration_policy(HardwareAccelerationPolicy::Never);
    }
    webview.load_html("<!doctype html><p>A bare webview.</p>", None);
    window.add(&webview);
    window.show_all();
    gtk::main();
}

/// The bare webview's PSS (it and its WebKit processes), once it has settled, in KiB, and by
/// mapping.
async fn bare_webview_memory() -> (u64, std::collections::BTreeMap<String, u64>) {
    let mut bare = Command::new(std::env::current_exe().expect("the bench's own path"));
    bare.arg(BARE_WEBVIEW);
    window_memory("a bare WebKitGTK window", bare).await
}

/// Walkie's page in a Tauri window with nothing of Walkie's behind it (examples/page_floor.rs,
/// which bench/peer/run.sh builds beside this bench): its PSS once settled, in KiB, and by
/// mapping.
async fn page_floor_memory() -> (u64, std::collections::BTreeMap<String, u64>) {
    let home = std::env::temp_dir().join(format!("walkie-page-floor-{}", std::process::id()));
    let window = page_floor_command(&home);
    let memory = window_memory("Walkie's page in a Tauri window, no app behind it", window).await;
    let _ = std::fs::remove_dir_all(&home);
    memory
}

/// examples/page_floor.rs, with its own `home`: the page's storage and WebKit's caches stay out
/// of the user's.
fn page_floor_command(home: &std::path::Path) -> Command {
    let bench = std::env::current_exe().expect("the bench's own path");
    // The bench runs from target/<profile>/deps; the example is built to target/<profile>/examples.
    let floor = bench
        .parent()
        .and_then(|deps| deps.parent())
        .map(|profile| profile.join("examples").join("page_floor"))
        .filter(|floor| floor.exists())
        .expect("examples/page_floor is built: cargo build --release --example page_floor");
    let mut window = Command::new(floor);
    window
        .env("HOME", home)
        .env("XDG_DATA_HOME", home.join("data"))
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("XDG_CACHE_HOME", home.join("cache"));
    window
}

/// The PSS of a window `command` opens (it and its WebKit processes) in KiB, and by mapping,
/// measured as the bare webview's always was: once its three processes are up, after three
/// seconds to settle (Walkie's idle figure is taken two seconds after it says Ready, which
/// comes a second or so after its window).
async fn window_memory(
    what: &'static str,
    mut command: Command,
) -> (u64, std::collections::BTreeMap<String, u64>) {
    let display = support::VirtualDisplay::start();
    let window = support::ProcessGroup::spawn(
        what,
        command
            .env("DISPLAY", &display.display)
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    while support::group_pids(window.id()).len() < 3 {
        assert!(
            Instant::now() < deadline,
            "{what} did not start its WebKit processes"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tokio::time::sleep(Duration::from_secs(3)).await;
    let pids = support::group_pids(window.id());
    let kib = pss_kib(&pids);
    println!(
        "memory of {what} (PSS, {} processes): {:.1} MiB",
        pids.len(),
        kib as f64 / 1024.0
    );
    (kib, pss_kib_by_mapping(&pids))
}

async fn turns_and_memory(floor_kib: u64) {
    let app = WebviewApp::launch("bench_turns").await;
    let client = app.client.clone();
    wait_for(&client, "#status", |text| text.starts_with("Ready")).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let idle_kib = pss_kib(&app.app_pids());

    let mut latencies = Vec::new();
    let mut busy_kib = 0;
    for _ in 0..TURNS {
        let (latency, pss) = one_turn(&client, &app).await;
        latencies.push(latency);
        busy_kib = busy_kib.max(pss);
        wait_for(&client, "#status", |text| text.starts_with("Ready")).await;
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let processes = app.app_pids().len();
    app.run(|_| async {}).await;

    println!(
        "memory (PSS of Walkie + WebKit, {processes} processes): idle {:.1} MiB ({:.2}× the \
         bare webview), in conversation (peak of {TURNS} turns) {:.1} MiB ({:.2}×)",
        idle_kib as f64 / 1024.0,
        idle_kib as f64 / floor_kib as f64,
        busy_kib as f64 / 1024.0,
        busy_kib as f64 / floor_kib as f64
    );
    report(
        "push-to-talk release → first reply sound at the speaker",
        &latencies,
    );
}

/// Presses during a reply and times how long the speaker keeps sounding.
async fn barge_ins() {
    let app = WebviewApp::launch("bench_barge_in").await;
    let client = app.client.clone();
    wait_for(&client, "#status", |text| text.starts_with("Ready")).await;
    let mut cut_after = Vec::new();
    for _ in 0..TURNS {
        let speaker = TimedRecorder::start();
        let words = speech_like(3.0);
        let talking = std::thread::spawn(move || PulseStream::speak_into_microphone(&words));
        tokio::time::sleep(Duration::from_millis(200)).await;
        support::space(&client, true).await;
        tokio::time::sleep(Duration::from_millis(2_600)).await;
        let released = Instant::now();
        support::space(&client, false).await;
        talking.join().expect("the microphone feed");
        let heard = speaker
            .first_sound_after(released, Duration::from_secs(10))
            .await;
        tokio::time::sleep_until((heard + Duration::from_millis(800)).into()).await;
        let pressed = Instant::now();
        support::space(&client, true).await;
        tokio::time::sleep(Duration::from_millis(700)).await;
        support::space(&client, false).await;
        cut_after.push(speaker.silent_from(pressed).duration_since(pressed));
        wait_for(&client, "#status", |text| text.starts_with("Ready")).await;
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    app.run(|_| async {}).await;
    report(
        "barge-in: key down during a reply → the speaker silent",
        &cut_after,
    );
}

/// The wall clock in Unix milliseconds (the provider's trace is in them).
fn unix_ms_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |since| since.as_secs_f64() * 1e3)
}

/// Walkie's side of bench/peer: see the module docs.
async fn peer(base_url: &str, token: &str, voice_wav: &str, turns: usize) {
    const HELD: Duration = Duration::from_millis(1_500);
    // At most the tail, the echoed reply (as long as the turn) and a margin: the microphone's
    // feed lasts this long a turn, and a turn at least HELD + REPLY from its press (drive.mjs's
    // --slot-ms default gives Chromium's the same).
    const REPLY: Duration = Duration::from_millis(3_000);
    let voice: Vec<i16> = hound::WavReader::open(voice_wav)
        .expect("the voice WAV")
        .into_samples::<i16>()
        .collect::<Result<_, _>>()
        .expect("16-bit samples");
    let sample = walkie_audio::engine::PlayoutReport {
        played_ms: 1520.0,
        arrival_to_device_ms: Some(41.0),
        silence_inside_ms: 2.5,
        server_underflows: 1,
        server_gap_ms: 12.5,
        concealed_frames: 3,
        late_packets: 0,
        recovered_frames: 2,
        lost_packets: 4,
        flushed: false,
        cushion_ms: 20,
    };
    assert_eq!(
        reply_reports(&sample.to_string()),
        vec![
            serde_json::json!({"playedMs": 1520.0, "arrivalToDeviceMs": 41.0,
            "silenceInsideMs": 2.5, "serverUnderflows": 1.0, "serverGapMs": 12.5,
            "concealedFrames": 3.0,
            "flushed": false, "cushionMs": 20.0})
        ],
        "the bench reads the engine's reports as the engine words them"
    );
    // The floor under Walkie's memory, in the same run.
    let (bare_webview_kib, bare_webview_kib_by_mapping) = bare_webview_memory().await;
    let (page_floor_kib, page_floor_kib_by_mapping) = page_floor_memory().await;
    let dirs = support::AppDirs::fresh("bench_peer");
    let secrets = support::SecretService::start(&dirs);
    let app = WebviewApp::launch_with(
        "bench_peer",
        support::Launch::in_dirs(&dirs, Some(&secrets)),
    )
    .await;
    let client = app.client.clone();
    wait_for(&client, "#status", |text| text.starts_with("Ready")).await;
    // As a user would: the provider, its address and its key in Settings, then Save.
    support::open_settings(&client).await;
    client
        .execute(
            r##"const form = document.querySelector("#settings form");
               form.elements.provider.value = "custom";
               form.elements.provider.dispatchEvent(new Event("change"));
               form.elements.customBaseUrl.value = arguments[0];
               form.elements.apiKey.value = arguments[1];"##,
            vec![base_url.into(), token.into()],
        )
        .await
        .expect("the provider typed in");
    support::click(&client, "#settings button[value=save]").await;
    wait_for(&client, "#settings [data-role=message]", |text| {
        text.starts_with("Saved")
    })
    .await;
    support::press(&client, fantoccini::key::Key::Escape).await;
    wait_for(&client, "#status", |text| {
        text.starts_with("Ready") && !text.contains("local provider")
    })
    .await;
    // The voice, for as long as the turns take.
    let run = (HELD + REPLY) * u32::try_from(turns).expect("a few turns") + Duration::from_secs(2);
    let repeats = (run.as_secs_f64() * RATE_HZ as f64 / voice.len() as f64).ceil() as usize;
    let words: Vec<i16> = voice
        .iter()
        .copied()
        .cycle()
        .take(voice.len() * repeats)
        .collect();
    let talking = std::thread::spawn(move || PulseStream::speak_into_microphone(&words));
    // As drive.mjs measures Chromium: idle 3 s after connecting (the microphone live), CPU
    // over the turns, PSS 1 s into the middle turn's reply.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let mut pss_idle_kib_by_process = std::collections::BTreeMap::<String, u64>::new();
    for pid in app.app_pids() {
        *pss_idle_kib_by_process
            .entry(process_name(pid))
            .or_default() += pss_kib(&[pid]);
    }
    let pss_idle_kib: u64 = pss_idle_kib_by_process.values().sum();
    let pss_idle_kib_by_mapping = pss_kib_by_mapping(&app.app_pids());
    record_window_events(&client).await;
    let cpu_before = cpu_ms_by_pid(&app.app_pids());
    let mut pss_talking_kib = 0;
    let started_unix_ms = unix_ms_now();
    // Paced as drive.mjs paces Chromium: a turn takes at least HELD + REPLY from its press,
    // and longer only if its reply has not played by then (the status back to Ready); each
    // wait is one script in the page, as drive.mjs waits (polling through WebDriver would be
    // counted as Walkie's CPU).
    for turn in 0..turns {
        let turn_started = tokio::time::Instant::now();
        support::space(&client, true).await;
        tokio::time::sleep(HELD).await;
        support::space(&client, false).await;
        status_reaches(&client, "Speaking").await;
        if turn == turns / 2 {
            tokio::time::sleep(Duration::from_secs(1)).await;
            pss_talking_kib = pss_kib(&app.app_pids());
        }
        status_reaches(&client, "Ready").await;
        tokio::time::sleep_until(turn_started + HELD + REPLY).await;
    }
    let ended_unix_ms = unix_ms_now();
    // Summed by process name, so the report can say which part of the tree used it.
    let mut cpu_ms_by_process = std::collections::BTreeMap::<String, f64>::new();
    for (pid, ms) in cpu_ms_by_pid(&app.app_pids()) {
        *cpu_ms_by_process.entry(process_name(pid)).or_default() +=
            ms - cpu_before.get(&pid).copied().unwrap_or(0.0);
    }
    let cpu_used_ms: f64 = cpu_ms_by_process.values().sum();
    let window_events = recorded_window_events(&client, ended_unix_ms - started_unix_ms).await;
    app.run(|_| async {}).await;
    talking.join().expect("the microphone feed");
    // The floor under the window's part, once Walkie has closed: its page, alone, shown the
    // same events at the same times. The events stay beside the voice, to replay by hand
    // (`page_floor --replay window-events.json`).
    let replay_file = std::path::Path::new(voice_wav).with_file_name("window-events.json");
    std::fs::write(&replay_file, window_events.to_string()).expect("the replay written");
    let (window_replay_cpu_ms, window_replay_cpu_ms_by_process) =
        tokio::task::block_in_place(|| page_floor_replay_cpu(&replay_file));
    let replies =
        reply_reports(&std::fs::read_to_string(dirs.log.join("walkie.log")).unwrap_or_default());
    println!(
        "{}",
        serde_json::json!({
            "client": "Walkie",
            "version": env!("CARGO_PKG_VERSION"),
            "turns": turns,
            "heldMs": HELD.as_millis(),
            "startedUnixMs": started_unix_ms,
            "endedUnixMs": ended_unix_ms,
            "cpuMs": cpu_used_ms,
            "cpuMsByProcess": cpu_ms_by_process,
            "pssIdleKib": pss_idle_kib,
            "pssIdleKibByProcess": pss_idle_kib_by_process,
            "pssTalkingKib": pss_talking_kib,
            "bareWebviewPssKib": bare_webview_kib,
            "pssIdleKibByMapping": pss_idle_kib_by_mapping,
            "bareWebviewPssKibByMapping": bare_webview_kib_by_mapping,
            "pageFloorPssKib": page_floor_kib,
            "pageFloorPssKibByMapping": page_floor_kib_by_mapping,
            "windowEvents": window_events["events"].as_array().map_or(0, Vec::len),
            "windowReplayCpuMs": window_replay_cpu_ms,
            "windowReplayCpuMsByProcess": window_replay_cpu_ms_by_process,
            "replies": replies,
        })
    );
}

/// What the app sends Walkie's page while a conversation goes on: its status, transcript, meter
/// readings and spending, in batches (src-tauri/window_updates.rs).
const WINDOW_EVENTS: [&str; 1] = ["walkie://updates"];

/// Has the page keep every event the app sends it from now on, with its time, for the replay
/// floor ([`page_floor_replay_cpu`]); resolves once the page listens.
async fn record_window_events(client: &Client) {
    client
        .execute_async(
            r##"const [names, done] = arguments;
               window.__benchWindowEvents = [];
               const keep = (name) => (event) =>
                 window.__benchWindowEvents.push([performance.now() - window.__benchWindowT0, name, event.payload]);
               Promise.all(names.map((name) => window.__TAURI__.event.listen(name, keep(name)))).then(() => {
                 window.__benchWindowT0 = performance.now();
                 done(true);
               });"##,
            vec![serde_json::json!(WINDOW_EVENTS)],
        )
        .await
        .expect("the page records the app's events");
}

/// The events [`record_window_events`] kept, as a replay of `duration_ms`
/// (examples/page_floor.rs reads it).
async fn recorded_window_events(client: &Client, duration_ms: f64) -> serde_json::Value {
    let events = client
        .execute("return window.__benchWindowEvents;", vec![])
        .await
        .expect("the page's recorded events");
    assert!(
        events.as_array().is_some_and(|events| !events.is_empty()),
        "the page recorded no event over the turns: {events}"
    );
    serde_json::json!({ "durationMs": duration_ms, "events": events })
}

/// The CPU Walkie's page alone (examples/page_floor.rs) takes to show the events in `replay_file`
/// at their times, its whole tree over the replay's duration, in ms, and by process name.
fn page_floor_replay_cpu(
    replay_file: &std::path::Path,
) -> (f64, std::collections::BTreeMap<String, f64>) {
    use std::io::BufRead;
    let home = std::env::temp_dir().join(format!("walkie-page-replay-{}", std::process::id()));
    let display = support::VirtualDisplay::start();
    let mut command = page_floor_command(&home);
    let mut window = support::ProcessGroup::spawn(
        "Walkie's page replaying Walkie's events",
        command
            .arg("--replay")
            .arg(replay_file)
            .env("DISPLAY", &display.display)
            .stdout(Stdio::piped())
            .stderr(Stdio::null()),
    );
    // It says when it starts and ends, a line each; the bench reads them as they come.
    let mut said = std::io::BufReader::new(window.take_stdout().expect("the replay's output"))
        .lines()
        .map_while(Result::ok);
    let mut says = |line: &str| {
        assert!(
            said.any(|said| said == line),
            "the page's replay ended without saying {line}"
        );
    };
    says("replaying");
    let pids = support::group_pids(window.id());
    let before = cpu_ms_by_pid(&pids);
    says("replayed");
    let mut by_process = std::collections::BTreeMap::<String, f64>::new();
    for (pid, ms) in cpu_ms_by_pid(&pids) {
        *by_process.entry(process_name(pid)).or_default() +=
            ms - before.get(&pid).copied().unwrap_or(0.0);
    }
    drop(window);
    let _ = std::fs::remove_dir_all(&home);
    (by_process.values().sum(), by_process)
}

/// Waits, in one script in the page, until the status line starts with `prefix` (at once if it
/// does already): the page is not asked again and again.
async fn status_reaches(client: &Client, prefix: &str) {
    client
        .execute_async(
            r##"const [prefix, done] = arguments;
               const status = document.querySelector("#status");
               if (status.textContent.startsWith(prefix)) return done(true);
               const watch = new MutationObserver(() => {
                 if (!status.textContent.startsWith(prefix)) return;
                 watch.disconnect();
                 done(true);
               });
               watch.observe(status, { childList: true, subtree: true, characterData: true });"##,
            vec![prefix.into()],
        )
        .await
        .unwrap_or_else(|error| panic!("the status never started with {prefix:?}: {error}"));
}

/// How each reply played on Walkie's speaker, from its audio engine's reports in the app's log
/// (`walkie_audio::engine::PlayoutReport`'s words: "a reply played 1520 ms; its first sample
/// reached the device 41.0 ms after its first packet arrived; 0.0 ms of silence inside it; the
/// sound server ran dry 0 times (0.0 ms); 0 frames concealed, 0 packets late; a 10 ms cushion
/// ahead of it").
fn reply_reports(log: &str) -> Vec<serde_json::Value> {
    fn number_before(line: &str, marker: &str) -> Option<f64> {
        let end = line.find(marker)?;
        line[..end].rsplit([' ', '(']).next()?.parse().ok()
    }
    // A log line starts with its date, target and level in brackets.
    log.lines()
        .filter_map(|line| {
            let at = line
                .find("a reply played ")
                .or_else(|| line.find("a reply was cut "))?;
            Some(&line[at..])
        })
        .map(|line| {
            serde_json::json!({
                "playedMs": number_before(line, " ms;"),
                "arrivalToDeviceMs": number_before(line, " ms after its first packet arrived"),
                "silenceInsideMs": number_before(line, " ms of silence inside"),
                "serverUnderflows": number_before(line, " times ("),
                "serverGapMs": number_before(line, " ms);"),
                "concealedFrames": number_before(line, " frames concealed"),
                "flushed": line.starts_with("a reply was cut "),
                "cushionMs": number_before(line, " ms cushion"),
            })
        })
        .collect()
}

/// One turn: the user is already talking when the key goes down (so the pre-roll and the
/// echo start with sound), releases after 1.5 s, and the reply's first sound is timed.
async fn one_turn(client: &Client, app: &WebviewApp) -> (Duration, u64) {
    let speaker = TimedRecorder::start();
    let words = speech_like(3.0);
    let talking = std::thread::spawn(move || PulseStream::speak_into_microphone(&words));
    tokio::time::sleep(Duration::from_millis(500)).await;
    support::space(client, true).await;
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    let released = Instant::now();
    support::space(client, false).await;
    let heard = speaker
        .first_sound_after(released, Duration::from_secs(10))
        .await;
    // While the reply plays.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let pss = pss_kib(&app.app_pids());
    talking.join().expect("the microphone feed");
    (heard.duration_since(released), pss)
}

/// What `/proc/PID/comm` calls a process (its name, cut to 15 bytes).
fn process_name(pid: u32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .map_or_else(|_| format!("pid {pid}"), |name| name.trim().to_owned())
}

/// The summed proportional set size of `pids`, in KiB.
fn pss_kib(pids: &[u32]) -> u64 {
    pids.iter()
        .filter_map(|pid| std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup")).ok())
        .flat_map(|rollup| {
            rollup
                .lines()
                .filter_map(|line| line.strip_prefix("Pss:"))
                .filter_map(|value| {
                    value
                        .trim()
                        .trim_end_matches("kB")
                        .trim()
                        .parse::<u64>()
                        .ok()
                })
                .collect::<Vec<_>>()
        })
        .sum()
}

/// The PSS of `pids` by what is mapped (`/proc/PID/smaps`): a file by its name (a library,
/// the executable), anonymous memory as `[anon]`, and the kernel's own names (`[heap]`,
/// `[stack]`); the peer report sets Walkie's against the bare window's, so the difference
/// between the two trees is told by part.
fn pss_kib_by_mapping(pids: &[u32]) -> std::collections::BTreeMap<String, u64> {
    let mut by_mapping = std::collections::BTreeMap::new();
    for pid in pids {
        let Ok(smaps) = std::fs::read_to_string(format!("/proc/{pid}/smaps")) else {
            continue;
        };
        let mut mapping = String::new();
        for line in smaps.lines() {
            let mut fields = line.split_whitespace();
            let Some(first) = fields.next() else {
                continue;
            };
            if first.contains('-') && !first.ends_with(':') {
                // "start-end perms offset dev inode [pathname]"
                let path = fields.nth(4).unwrap_or("[anon]");
                mapping = path.rsplit('/').next().unwrap_or(path).to_owned();
            } else if first == "Pss:"
                && let Some(kib) = fields.next().and_then(|value| value.parse::<u64>().ok())
            {
                *by_mapping.entry(mapping.clone()).or_default() += kib;
            }
        }
    }
    by_mapping
}

/// CPU time used so far by each of `pids` that still runs, in milliseconds (utime + stime, as
/// bench/peer/proc.mjs reads Chromium's).
fn cpu_ms_by_pid(pids: &[u32]) -> std::collections::HashMap<u32, f64> {
    let ticks_per_second: f64 = String::from_utf8(
        Command::new("getconf")
            .arg("CLK_TCK")
            .output()
            .expect("getconf (libc-bin)")
            .stdout,
    )
    .ok()
    .and_then(|text| text.trim().parse().ok())
    .expect("getconf CLK_TCK prints a number");
    pids.iter()
        .filter_map(|&pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            // The fields after the command name; utime and stime are the 12th and 13th of them.
            let after_name = &stat[stat.rfind(')')? + 2..];
            let mut fields = after_name.split(' ').skip(11);
            let utime: f64 = fields.next()?.parse().ok()?;
            let stime: f64 = fields.next()?.parse().ok()?;
            Some((pid, (utime + stime) * 1000.0 / ticks_per_second))
        })
        .collect()
}

fn report(what: &str, samples: &[Duration]) {
    let mut ms: Vec<f64> = samples.iter().map(|d| d.as_secs_f64() * 1e3).collect();
    ms.sort_by(f64::total_cmp);
    println!(
        "{what}: median {:.0} ms, min {:.0} ms, max {:.0} ms ({} runs)",
        ms[ms.len() / 2],
        ms[0],
        ms[ms.len() - 1],
        ms.len()
    );
}
