//! Floors under Walkie's cost: Walkie's page in a Tauri 2 window with nothing of Walkie's behind
//! it (no audio, no call, no plugins), painting without GL as Walkie does. Its one command,
//! `status`, answers that nothing has happened, so the page wires all its listeners; every other
//! call fails, and the page shows what it shows without answers.
//!
//! Why: the peer benchmark (bench/peer/run.sh) measures what Walkie costs over a bare WebKitGTK
//! window and over moving the audio alone. This window is the part of that cost the product
//! card's stack (Tauri, WebKitGTK) and Walkie's page bring before any of Walkie's own code runs:
//! at rest (memory), and with `--replay EVENTS.json` showing the events Walkie's window was sent
//! during the benchmark's turns, at the times they came (CPU). benches/app.rs measures both in
//! the same run as Walkie.
//!
//! Run: `cargo run --release --example page_floor [-- --replay EVENTS.json] [--size 480x720]
//!
//! [--ui DIR]` (a display is needed; `--size` sets the window's inner size in logical pixels;
//! `--ui` serves the page from DIR as it is on disk rather than the `ui/` built in, so two
//! versions of the page can be measured in one run without a build between them:
//! bench/peer/page_cost.mjs does both). The replay file is `{"durationMs": N, "events": [[atMs, name, payload], …]}`; the
//! window prints `replaying` when it starts and `replayed` once `durationMs` has passed.

use std::io::Write;
use std::sync::mpsc::{Receiver, SyncSender};
use std::time::{Duration, Instant};

use tauri::Emitter;

fn main() {
    let replay = replay_from_args();
    let size = size_from_args();
    let (page_wired, wired) = std::sync::mpsc::sync_channel::<()>(1);
    let mut context = tauri::generate_context!();
    if let Some(ui) = option_from_args("--ui") {
        context.set_assets(Box::new(PageOnDisk(ui.into())));
    }
    tauri::Builder::default()
        .manage(page_wired)
        .invoke_handler(tauri::generate_handler![status])
        .setup(move |app| {
            paint_without_gl(app.handle());
            if let Some((width, height)) = size {
                use tauri::Manager;
                if let Some(window) = app.get_webview_window("main") {
                    window.set_size(tauri::LogicalSize::new(width, height))?;
                }
            }
            if let Some(replay) = replay {
                let app = app.handle().clone();
                std::thread::spawn(move || play(&app, &replay, &wired));
            }
            Ok(())
        })
        .run(context)
        .expect("the page's window opens on this display");
}

/// The page asks for the latest status once, after its first listener and before the rest:
/// nothing has happened here.
#[tauri::command]
fn status(page_wired: tauri::State<'_, SyncSender<()>>) -> Option<()> {
    let _ = page_wired.try_send(());
    None
}

/// What `--replay` plays: when each event was sent, its name and payload, and how long the
/// whole lasted (the turns end after the last event).
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct Replay {
    duration_ms: f64,
    events: Vec<(f64, String, serde_json::Value)>,
}

/// The value after `flag` on the command line, if the flag is there.
fn option_from_args(flag: &str) -> Option<String> {
    let args: Vec<String> = std::env::args().collect();
    let at = args.iter().position(|arg| arg == flag)?;
    let value = args.get(at + 1).cloned();
    Some(value.unwrap_or_else(|| panic!("usage: page_floor [{flag} VALUE]")))
}

/// The page's files as they are in a folder now (`--ui`).
struct PageOnDisk(std::path::PathBuf);

impl<R: tauri::Runtime> tauri::Assets<R> for PageOnDisk {
    fn get(&self, key: &tauri::utils::assets::AssetKey) -> Option<std::borrow::Cow<'_, [u8]>> {
        let relative = key.as_ref().trim_start_matches('/');
        std::fs::read(self.0.join(relative)).ok().map(Into::into)
    }

    fn iter(&self) -> Box<tauri::utils::assets::AssetsIter<'_>> {
        Box::new(std::iter::empty())
    }

    fn csp_hashes(
        &self,
        _html_path: &tauri::utils::assets::AssetKey,
    ) -> Box<dyn Iterator<Item = tauri::utils::assets::CspHash<'_>> + '_> {
        Box::new(std::iter::empty())
    }
}

fn replay_from_args() -> Option<Replay> {
    let path = option_from_args("--replay")?;
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|error| panic!("the replay file {path} could not be read: {error}"));
    Some(
        serde_json::from_str(&text)
            .unwrap_or_else(|error| panic!("the replay file {path} is not a replay: {error}")),
    )
}

/// `--size WIDTHxHEIGHT`, in logical pixels.
fn size_from_args() -> Option<(f64, f64)> {
    let size = option_from_args("--size")?;
    let parsed = size
        .split_once('x')
        .and_then(|(width, height)| Some((width.parse().ok()?, height.parse().ok()?)));
    Some(parsed.unwrap_or_else(|| panic!("--size is WIDTHxHEIGHT, e.g. 480x720, not {size}")))
}

/// Sends the replay's events to the page at their times, once the page has wired its listeners.
fn play(app: &tauri::AppHandle, replay: &Replay, page_wired: &Receiver<()>) {
    if page_wired.recv().is_err() {
        return;
    }
    // The page's remaining listeners are a few round trips behind its call.
    std::thread::sleep(Duration::from_secs(1));
    say("replaying");
    let started = Instant::now();
    for (at_ms, name, payload) in &replay.events {
        sleep_until(started + Duration::from_secs_f64(at_ms.max(0.0) / 1e3));
        if let Err(error) = app.emit(name, payload) {
            eprintln!("the page could not be sent {name}: {error}");
        }
    }
    sleep_until(started + Duration::from_secs_f64(replay.duration_ms.max(0.0) / 1e3));
    say("replayed");
}

fn sleep_until(deadline: Instant) {
    std::thread::sleep(deadline.saturating_duration_since(Instant::now()));
}

/// One line on stdout, at once (the bench waits for it).
fn say(line: &str) {
    let mut stdout = std::io::stdout().lock();
    let _ = writeln!(stdout, "{line}");
    let _ = stdout.flush();
}

#[cfg(target_os = "linux")]
fn paint_without_gl(app: &tauri::AppHandle) {
    use tauri::Manager;
    use webkit2gtk::{HardwareAccelerationPolicy, SettingsExt, WebViewExt};
    let Some(window) = app.get_webview_window("main") else {
        return;
    };
    let _ = window.with_webview(|webview| {
        if let Some(settings) = WebViewExt::settings(&webview.inner()) {
            settings.set_hardware_acceleration_policy(HardwareAccelerationPolicy::Never);
        }
    });
}

#[cfg(not(target_os = "linux"))]
fn paint_without_gl(_app: &tauri::AppHandle) {}
