//! Every way out closes the conversation on disk: after a spoken turn with the local provider,
//! Walkie is ended by closing its window (a window manager's `WM_DELETE_WINDOW`), by its tray
//! menu's Quit (clicked over D-Bus, as a desktop's tray host does) and by a SIGTERM (logging
//! out, `kill`); each time the saved conversation's journal ends with its close record and the
//! transcripts and turn WAVs are there, with nothing left for a repair at the next start.
//!
//! Slow tests (X server, WebKitWebDriver, the test PulseAudio server); they run in CI.

mod support;

use std::path::Path;
use std::time::Duration;

use support::audio::{PulseStream, require_test_audio, speech_like};
use support::desktop::{TrayHost, close_window};
use support::{AppDirs, Launch, SecretService, WebviewApp, wait_for, wait_for_text};
use walkie_session::Speaker;
use walkie_store::files::{TRANSCRIPT_JSON_FILE, TRANSCRIPT_MD_FILE, WRITING_MARKER_FILE};
use walkie_store::journal::{JOURNAL_FILE, read_journal};
use walkie_store::{Store, turn_wav_file};

/// The virtual microphone and speaker are shared: one conversation test at a time.
static AUDIO_DEVICES: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

const READY: &str = "Ready (the local provider): hold Space or the button to talk.";

/// How long the app may take from being asked to end to being gone: the conversation's own
/// bound (2 s) plus the window and WebKit tearing down on a loaded machine.
const EXIT_TIMEOUT: Duration = Duration::from_secs(15);

/// One push-to-talk turn, answered: the key goes down, words go into the microphone, the key
/// comes up (the tail keeps capture open for their end), and the reply is spoken through.
async fn one_turn(client: &fantoccini::Client) {
    wait_for_text(client, "#status", READY).await;
    support::space(client, true).await;
    wait_for_text(client, "#status", "Listening… release to send.").await;
    tokio::task::spawn_blocking(|| PulseStream::speak_into_microphone(&speech_like(1.0)))
        .await
        .unwrap();
    support::space(client, false).await;
    wait_for(client, "#transcript", |text| text.contains("played your")).await;
    wait_for_text(client, "#status", READY).await;
}

/// The one saved conversation is closed: its journal ends with the close record, the store
/// lists it as closed, and its transcripts and turn WAVs are there.
fn assert_closed_on_disk(data_dir: &Path) {
    let store = Store::new(data_dir.join("conversations"));
    let listed = store.list().expect("the conversations folder can be read");
    assert_eq!(listed.len(), 1, "one conversation was saved: {listed:?}");
    let saved = &listed[0];
    let journal = read_journal(&saved.dir.join(JOURNAL_FILE)).expect("the journal is there");
    assert!(
        journal.closed_cleanly(),
        "the journal ends with {:?}, not with the close record",
        journal.records.last().map(|(_, record)| record)
    );
    assert!(!saved.open, "the store lists the conversation as open");
    assert!(
        !saved.dir.join(WRITING_MARKER_FILE).exists(),
        "the conversation is still marked as being written"
    );
    assert_eq!(saved.turn_count, 1);
    let transcript = std::fs::read_to_string(saved.dir.join(TRANSCRIPT_MD_FILE))
        .expect("transcript.md is there");
    assert!(transcript.contains("played your"), "{transcript}");
    let json = std::fs::read_to_string(saved.dir.join(TRANSCRIPT_JSON_FILE))
        .expect("transcript.json is there");
    serde_json::from_str::<serde_json::Value>(&json).expect("transcript.json is JSON");
    for speaker in [Speaker::User, Speaker::Assistant] {
        let wav = saved.dir.join(turn_wav_file(1, speaker));
        let samples = hound::WavReader::open(&wav)
            .unwrap_or_else(|error| panic!("{} does not open: {error}", wav.display()))
            .duration();
        assert!(samples > 0, "{} is empty", wav.display());
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn e2e_closing_the_window_closes_the_conversation_on_disk() {
    require_test_audio();
    let _devices = AUDIO_DEVICES.lock().await;
    let app = WebviewApp::launch("exit_window_close").await;
    let (display, pid) = (app.display().to_owned(), app.walkie_pid());
    let data_dir = app.data_dir().to_owned();
    app.run(|client| async move {
        one_turn(&client).await;
        close_window(&display, "Walkie");
        support::wait_until_exited(pid, EXIT_TIMEOUT).await;
        assert_closed_on_disk(&data_dir);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn e2e_the_tray_menus_quit_closes_the_conversation_on_disk() {
    require_test_audio();
    let _devices = AUDIO_DEVICES.lock().await;
    let name = "exit_tray_quit";
    let dirs = AppDirs::fresh(name);
    // The session bus the tray icon registers on, with a tray host on it before the app starts.
    let bus = SecretService::start(&dirs);
    let mut tray = TrayHost::start(bus.bus_address()).await;
    let app = WebviewApp::launch_with(name, Launch::in_dirs(&dirs, Some(&bus))).await;
    let pid = app.walkie_pid();
    app.run(|client| async move {
        let icon = tray.wait_for_item(support::UI_TIMEOUT).await;
        one_turn(&client).await;
        tray.click(&icon, "Quit Walkie").await;
        support::wait_until_exited(pid, EXIT_TIMEOUT).await;
        let log = std::fs::read_to_string(dirs.log.join("walkie.log")).unwrap_or_default();
        assert!(
            log.contains("Quit chosen in the tray menu"),
            "the exit did not come from the tray's Quit: {log}"
        );
        assert_closed_on_disk(&dirs.data);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn e2e_a_sigterm_closes_the_conversation_on_disk() {
    require_test_audio();
    let _devices = AUDIO_DEVICES.lock().await;
    let app = WebviewApp::launch("exit_sigterm").await;
    let pid = app.walkie_pid();
    let data_dir = app.data_dir().to_owned();
    app.run(|client| async move {
        one_turn(&client).await;
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid as i32),
            nix::sys::signal::Signal::SIGTERM,
        )
        .expect("signalling Walkie");
        support::wait_until_exited(pid, EXIT_TIMEOUT).await;
        assert_closed_on_disk(&data_dir);
    })
    .await;
}
