//! Desktop integration in the real app: one Walkie per user session (a second launch hands over
//! to the first and exits, and `walkie --press` and the like act in the first), the window
//! opening at the size it was left (and never freezing while that size is saved), and the
//! global push-to-talk shortcut.
//!
//! Slow tests (X server, WebKitWebDriver, a private D-Bus session per test); they run in CI.

mod support;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use support::audio::{PulseStream, require_test_audio, speech_like};
use support::desktop::{TrayHost, close_window};
use support::portal::{Desktop, FakeDesktopPortal, PortalCall};
use support::{AppDirs, Launch, SecretService, WebviewApp, wait_for, wait_for_text};

const TEST: &str = "desktop_single_instance";

/// The virtual microphone is shared: one test of this file talks at a time.
static AUDIO_DEVICES: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Walkie launched again beside the running one, as a desktop's shortcut or a terminal would,
/// in the same session (display and bus) and folders.
struct SecondLaunch {
    display: String,
    bus_address: String,
    dirs: AppDirs,
}

impl SecondLaunch {
    /// Beside `app`, on `bus`, in `dirs`.
    fn beside(app: &WebviewApp, bus: &SecretService, dirs: &AppDirs) -> Self {
        Self {
            display: app.display().to_owned(),
            bus_address: bus.bus_address().to_owned(),
            dirs: dirs.clone(),
        }
    }

    /// Runs `walkie args`; returns how it exited and what it wrote to stderr. It must exit
    /// within 30 s (having handed over, or refused its arguments).
    async fn run(&self, args: &[&str]) -> (std::process::ExitStatus, String) {
        let second = tokio::process::Command::new(env!("CARGO_BIN_EXE_walkie"))
            .args(args)
            .env("DISPLAY", &self.display)
            .env("DBUS_SESSION_BUS_ADDRESS", &self.bus_address)
            .env("WALKIE_DATA_DIR", &self.dirs.data)
            .env("WALKIE_CONFIG_DIR", &self.dirs.config)
            .env("WALKIE_LOG_DIR", &self.dirs.log)
            .env_remove("OPENAI_API_KEY")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("launching Walkie a second time");
        let output = tokio::time::timeout(Duration::from_secs(30), second.wait_with_output())
            .await
            .unwrap_or_else(|_| {
                panic!("walkie {args:?} is still running after 30 s: it did not hand over")
            })
            .expect("waiting for the second Walkie");
        (
            output.status,
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    }

    /// Runs `walkie args`, which must hand over and exit successfully.
    async fn hand_over(&self, args: &[&str]) {
        let (status, stderr) = self.run(args).await;
        assert!(
            status.success(),
            "walkie {args:?} exited with {status}: {stderr}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn e2e_a_second_launch_hands_over_to_the_running_walkie_and_exits() {
    let dirs = AppDirs::fresh(TEST);
    // The session bus is how the second launch finds the first.
    let bus = SecretService::start(&dirs);
    let app = WebviewApp::launch_with(TEST, Launch::in_dirs(&dirs, Some(&bus))).await;
    let second = SecondLaunch::beside(&app, &bus, &dirs);
    let log = dirs.log.clone();
    app.run(|client| async move {
        wait_for(&client, "#status", |text| text.starts_with("Ready")).await;
        second.hand_over(&[]).await;
        // The first one heard about it and is still answering.
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let text = std::fs::read_to_string(log.join("walkie.log")).unwrap_or_default();
            if text.contains("Walkie was launched again: showing this window") {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "the running Walkie was not told: {text}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        wait_for(&client, "#status", |text| text.starts_with("Ready")).await;
        // Only one conversation was started: the second launch never connected.
        let conversations = std::fs::read_dir(dirs.data.join("conversations"))
            .unwrap()
            .count();
        assert_eq!(conversations, 1);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn e2e_the_window_comes_back_at_the_size_it_was_left() {
    let name = "desktop_window_state";
    let dirs = AppDirs::fresh(name);
    // What an earlier run left next to the settings (the plugin's format), at a size that is
    // not the default 480×720.
    std::fs::write(
        dirs.config.join("window-state.json"),
        r#"{"main":{"width":620,"height":700,"x":0,"y":0,"prev_x":0,"prev_y":0,
            "maximized":false,"visible":true,"decorated":true,"fullscreen":false}}"#,
    )
    .unwrap();
    let app = WebviewApp::launch_with(name, Launch::in_dirs(&dirs, None)).await;
    app.run(|client| async move {
        // Read from the page, not through WebDriver's window commands.
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let size = client
                .execute("return [window.innerWidth, window.innerHeight];", vec![])
                .await
                .unwrap();
            if size == serde_json::json!([620, 700]) {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "the window opened at {size}, not at the saved 620×700"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn e2e_a_resized_window_is_remembered_even_on_the_first_run() {
    let name = "desktop_window_state_first_run";
    let dirs = AppDirs::fresh(name);
    // A first run: nothing has made the settings folder yet.
    std::fs::remove_dir_all(&dirs.config).unwrap();
    let state_file = dirs.config.join("window-state.json");
    let app = WebviewApp::launch_with(name, Launch::in_dirs(&dirs, None)).await;
    let display = app.display().to_owned();
    app.run(|client| async move {
        wait_for(&client, "#status", |text| text.starts_with("Ready")).await;
        // The user drags the window to 640×690 (an X request, as a window manager makes).
        support::resize_window(&client, &display, 640, 690).await;
        // Saved a moment after the change, while Walkie runs: a crash now would not lose it.
        wait_until_saved(&state_file, 640, 690).await;
    })
    .await;
}

/// Waits until the window-state file `state_file` holds `width` × `height` for the main
/// window (Walkie saves it a moment after the window stops changing).
async fn wait_until_saved(state_file: &std::path::Path, width: u32, height: u32) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let saved = std::fs::read_to_string(state_file)
            .ok()
            .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).ok());
        let size = saved.as_ref().map(|state| {
            (
                state["main"]["width"].clone(),
                state["main"]["height"].clone(),
            )
        });
        if size == Some((width.into(), height.into())) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{width}×{height} was not saved in {}: {saved:?}",
            state_file.display()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// How long after the window's last move or resize Walkie saves its size and place
/// (`desktop::save_window_state_soon`).
const WINDOW_SAVE_DELAY_MS: u64 = 400;
/// Resizes in [`e2e_resizing_again_just_as_the_last_size_is_saved_never_freezes_the_window`]:
/// four sweeps of the pauses (without the main-thread save, 4 of 5 runs froze within two).
const RESIZES: usize = 96;

#[tokio::test(flavor = "multi_thread")]
async fn e2e_resizing_again_just_as_the_last_size_is_saved_never_freezes_the_window() {
    let name = "desktop_resize_during_save";
    let dirs = AppDirs::fresh(name);
    let state_file = dirs.config.join("window-state.json");
    let app = WebviewApp::launch_with(name, Launch::in_dirs(&dirs, None)).await;
    let display = app.display().to_owned();
    app.run(|client| async move {
        wait_for(&client, "#status", |text| text.starts_with("Ready")).await;
        // The user resizes the window, stops, and resizes it again just as Walkie saves the
        // last size: the pauses sweep the save's delay (less the time a resize takes to reach
        // the page) a few milliseconds apart, so that some resize meets a save under way.
        let pauses_ms = (WINDOW_SAVE_DELAY_MS - 60..WINDOW_SAVE_DELAY_MS + 10).step_by(3);
        let mut width = 0;
        for (resize, pause_ms) in pauses_ms.cycle().take(RESIZES).enumerate() {
            tokio::time::sleep(Duration::from_millis(pause_ms)).await;
            width = if resize % 2 == 0 { 360 } else { 1280 };
            let answered = tokio::time::timeout(
                support::UI_TIMEOUT + Duration::from_secs(5),
                support::resize_window(&client, &display, width, 720),
            )
            .await;
            assert!(
                answered.is_ok(),
                "the window stopped answering at resize {resize}, {pause_ms} ms after the \
                 one before"
            );
        }
        // And the last size is the one saved.
        wait_until_saved(&state_file, width, 720).await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn e2e_the_global_shortcut_talks_while_held_even_from_another_window() {
    let _devices = AUDIO_DEVICES.lock().await;
    let app = WebviewApp::launch("desktop_global_shortcut").await;
    let display = app.display().to_owned();
    app.run(|client| async move {
        wait_for(&client, "#status", |text| text.starts_with("Ready")).await;
        // Choose the shortcut in the settings, as a user would.
        support::click(&client, "#open-settings").await;
        wait_for(&client, "#settings [data-role=config-file]", |text| {
            !text.is_empty()
        })
        .await;
        client
            .execute(
                r#"const field = document.querySelector('#settings [name=globalShortcut]');
                   field.value = 'Ctrl+Alt+K';
                   document.querySelector('#settings button[value=save]').click();"#,
                vec![],
            )
            .await
            .unwrap();
        wait_for(&client, "#settings [data-role=message]", |text| {
            text == "Saved."
        })
        .await;
        client
            .execute("document.querySelector('#settings').close();", vec![])
            .await
            .unwrap();
        // The key goes to the X server, not to the page: only a global grab can see it.
        let xdotool = |action: &str| {
            let status = Command::new("xdotool")
                .args([action, "ctrl+alt+k"])
                .env("DISPLAY", &display)
                .status()
                .expect("xdotool (scripts/deps.sh test installs it)");
            assert!(status.success(), "xdotool {action} failed");
        };
        xdotool("keydown");
        wait_for(&client, "#status", |text| {
            text == "Listening… release to send."
        })
        .await;
        tokio::time::sleep(Duration::from_millis(400)).await;
        xdotool("keyup");
        // Released: the turn is sent and answered.
        wait_for(&client, "#transcript", |text| {
            text.contains("s of silence]")
        })
        .await;
    })
    .await;
}

/// The replies shown in the transcript.
async fn replies_shown(client: &fantoccini::Client) -> usize {
    client
        .execute(
            "return document.querySelectorAll('#transcript article[data-role=assistant]').length;",
            vec![],
        )
        .await
        .unwrap()
        .as_u64()
        .unwrap_or(0) as usize
}

/// Speaks a second of speech into the microphone, and waits 300 ms more (inside the key's
/// tail, so its end is sent).
async fn speak() {
    tokio::task::spawn_blocking(|| PulseStream::speak_into_microphone(&speech_like(1.0)))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn e2e_walkie_press_and_release_from_another_process_hold_a_turn_and_hang_up_ends_the_call() {
    require_test_audio();
    let _devices = AUDIO_DEVICES.lock().await;
    const REMOTE: &str = "desktop_remote_control";
    let dirs = AppDirs::fresh(REMOTE);
    let bus = SecretService::start(&dirs);
    // A Wayland desktop whose portal has no global shortcuts (sway's, GNOME's before 48).
    let app = WebviewApp::launch_with(REMOTE, in_a_wayland_session(&dirs, &bus)).await;
    let walkie = SecondLaunch::beside(&app, &bus, &dirs);
    app.run(|client| async move {
        wait_for(&client, "#status", |text| text.starts_with("Ready")).await;
        // Settings offers the fallback: the desktop's own shortcut running `walkie --toggle`.
        let help = until_shortcut_help(&client, |help| !help.is_empty()).await;
        assert!(
            help.contains("bind walkie --toggle in your desktop's keyboard shortcuts"),
            "{help}"
        );
        // Nor does that portal take screenshots: Screenshot… says what to do instead.
        support::click(&client, "[data-action=screenshot]").await;
        wait_for_text(
            &client,
            "#compose-note",
            "This Wayland desktop's portal takes no screenshots: attach a saved screenshot with \
             Picture… instead.",
        )
        .await;

        // Held from outside: --press, speech, --release.
        walkie.hand_over(&["--press"]).await;
        wait_for_text(&client, "#status", "Listening… release to send.").await;
        speak().await;
        walkie.hand_over(&["--release"]).await;
        wait_for(&client, "#transcript", |text| text.contains("played your")).await;
        wait_for(&client, "#status", |text| text.starts_with("Ready")).await;
        assert_eq!(replies_shown(&client).await, 1);

        // Toggled from outside (a desktop whose shortcuts fire on press alone).
        walkie.hand_over(&["--toggle"]).await;
        wait_for_text(&client, "#status", "Listening… release to send.").await;
        speak().await;
        walkie.hand_over(&["--toggle"]).await;
        wait_for(&client, "#status", |text| text.starts_with("Speaking")).await;
        wait_for(&client, "#status", |text| text.starts_with("Ready")).await;
        assert_eq!(replies_shown(&client).await, 2);

        // A typo is refused by the launch itself, which says what was wrong.
        let (status, stderr) = walkie.run(&["--pres"]).await;
        assert_eq!(status.code(), Some(2), "{stderr}");
        assert!(stderr.contains("unknown option \"--pres\""), "{stderr}");

        // Hung up from outside: the call ends, and no other is placed.
        walkie.hand_over(&["--hang-up"]).await;
        wait_for_text(&client, "#status", "Hung up. Press Connect to call again.").await;
        let conversations = walkie_store::conversations_dir(&dirs.data);
        let store = walkie_store::Store::new(conversations);
        let saved = store.list().expect("the saved conversations");
        assert_eq!(saved.len(), 1, "one conversation: {saved:?}");
        let conversation = store.open_strict(&saved[0].id).expect("it reads back");
        let roles: Vec<&str> = conversation
            .messages()
            .iter()
            .map(|message| message.role_name())
            .collect();
        assert_eq!(roles, ["user", "assistant", "user", "assistant"]);
        walkie.hand_over(&["--press"]).await;
        wait_for_text(
            &client,
            "#status",
            "Not connected: press Connect before talking.",
        )
        .await;
    })
    .await;
}

/// Whether Walkie's window is shown (mapped) on `display`.
fn window_shown(display: &str) -> bool {
    let found = Command::new("xdotool")
        .args(["search", "--onlyvisible", "--name", "^Walkie$"])
        .env("DISPLAY", display)
        .output()
        .expect("xdotool (scripts/deps.sh test installs it)");
    !String::from_utf8_lossy(&found.stdout).trim().is_empty()
}

/// Waits until the window is shown (`true`) or hidden.
async fn until_window_shown(display: &str, shown: bool) {
    let deadline = Instant::now() + support::UI_TIMEOUT;
    while window_shown(display) != shown {
        assert!(
            Instant::now() < deadline,
            "the window is still {}",
            if shown { "hidden" } else { "shown" }
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Sets the Settings field `name` to `value` and saves, as a user would; returns what the
/// field's help said.
async fn save_setting(client: &fantoccini::Client, name: &str, value: serde_json::Value) -> String {
    support::open_settings(client).await;
    client
        .execute(
            "document.querySelector('#settings [data-role=advanced]').open = true;",
            vec![],
        )
        .await
        .unwrap();
    support::set_field(client, name, value).await;
    let help = wait_for(client, &format!("#settings-{name}-help"), |text| {
        !text.is_empty()
    })
    .await;
    client
        .execute(
            "document.querySelector('#settings button[value=save]').click();",
            vec![],
        )
        .await
        .unwrap();
    wait_for(client, "#settings [data-role=message]", |text| {
        text == "Saved."
    })
    .await;
    client
        .execute("document.querySelector('#settings').close();", vec![])
        .await
        .unwrap();
    help
}

#[tokio::test(flavor = "multi_thread")]
async fn e2e_closing_to_the_tray_hides_the_window_the_call_goes_on_and_walkie_show_brings_it_back()
{
    const NAME: &str = "desktop_close_to_tray";
    let dirs = AppDirs::fresh(NAME);
    let bus = SecretService::start(&dirs);
    let mut tray = TrayHost::start(bus.bus_address()).await;
    let app = WebviewApp::launch_with(NAME, Launch::in_dirs(&dirs, Some(&bus))).await;
    let pid = app.walkie_pid();
    let walkie = SecondLaunch::beside(&app, &bus, &dirs);
    app.run(|client| async move {
        tray.wait_for_item(support::UI_TIMEOUT).await;
        wait_for(&client, "#status", |text| text.starts_with("Ready")).await;
        let help = save_setting(&client, "closeToTray", true.into()).await;
        assert!(
            help.starts_with("The window hides and the call goes on"),
            "{help}"
        );

        close_window(&walkie.display, "Walkie");
        until_window_shown(&walkie.display, false).await;
        assert!(
            std::path::Path::new(&format!("/proc/{pid}")).exists(),
            "Walkie runs on in the tray"
        );
        // The call goes on behind the hidden window.
        wait_for(&client, "#status", |text| text.starts_with("Ready")).await;

        walkie.hand_over(&["--show"]).await;
        until_window_shown(&walkie.display, true).await;
        let conversations = std::fs::read_dir(dirs.data.join("conversations"))
            .unwrap()
            .count();
        assert_eq!(conversations, 1, "the same conversation, never hung up");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn e2e_where_no_tray_shows_closing_the_window_quits_even_when_set_to_keep_walkie_in_the_tray()
{
    const NAME: &str = "desktop_close_without_a_tray";
    let dirs = AppDirs::fresh(NAME);
    // A session bus with no tray host on it (stock GNOME).
    let bus = SecretService::start(&dirs);
    let app = WebviewApp::launch_with(NAME, Launch::in_dirs(&dirs, Some(&bus))).await;
    let pid = app.walkie_pid();
    let display = app.display().to_owned();
    let log = dirs.log.clone();
    app.run(|client| async move {
        wait_for(&client, "#status", |text| text.starts_with("Ready")).await;
        let help = save_setting(&client, "closeToTray", true.into()).await;
        assert!(
            help.starts_with("No tray shows Walkie in this session"),
            "Settings says it before the window is closed: {help}"
        );
        close_window(&display, "Walkie");
        support::wait_until_exited(pid, Duration::from_secs(10)).await;
        let log = std::fs::read_to_string(log.join("walkie.log")).unwrap_or_default();
        assert!(
            log.contains("no tray shows Walkie in this session: closing the window quits it"),
            "{log}"
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn e2e_start_on_login_writes_an_autostart_entry_that_starts_walkie_hidden_and_off_removes_it()
{
    const NAME: &str = "desktop_start_on_login";
    let dirs = AppDirs::fresh(NAME);
    let xdg_config = dirs.root.join("xdg-config");
    let entry = xdg_config
        .join("autostart")
        .join("app.walkie.desktop.desktop");
    let app = WebviewApp::launch_with(
        NAME,
        Launch {
            dirs: Some(dirs.clone()),
            env: vec![("XDG_CONFIG_HOME", xdg_config.display().to_string())],
            ..Launch::default()
        },
    )
    .await;
    app.run(|client| async move {
        wait_for(&client, "#status", |text| text.starts_with("Ready")).await;
        assert!(!entry.exists());
        save_setting(&client, "startOnLogin", true.into()).await;
        let written = std::fs::read_to_string(&entry).expect("the autostart entry");
        let exec = format!("\nExec=\"{}\" --hidden\n", env!("CARGO_BIN_EXE_walkie"));
        assert!(written.contains(&exec), "{written}");
        save_setting(&client, "startOnLogin", false.into()).await;
        assert!(!entry.exists(), "turned off, the entry is gone");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn e2e_started_hidden_walkie_waits_in_the_tray_and_walkie_show_brings_its_window() {
    const NAME: &str = "desktop_start_hidden";
    let dirs = AppDirs::fresh(NAME);
    let bus = SecretService::start(&dirs);
    let mut tray = TrayHost::start(bus.bus_address()).await;
    let app = WebviewApp::launch_with(
        NAME,
        Launch {
            args: vec!["--hidden"],
            ..Launch::in_dirs(&dirs, Some(&bus))
        },
    )
    .await;
    let walkie = SecondLaunch::beside(&app, &bus, &dirs);
    app.run(|client| async move {
        tray.wait_for_item(support::UI_TIMEOUT).await;
        // The call is placed all the same: the window is only out of sight.
        wait_for(&client, "#status", |text| text.starts_with("Ready")).await;
        until_window_shown(&walkie.display, false).await;
        walkie.hand_over(&["--show"]).await;
        until_window_shown(&walkie.display, true).await;
    })
    .await;
}

/// Opens Settings until the shortcut's help satisfies `done` (the dialog reads where the key is
/// heard as it opens; the portal binds in the background), as a user would look again.
async fn until_shortcut_help(client: &fantoccini::Client, done: impl Fn(&str) -> bool) -> String {
    let deadline = Instant::now() + support::UI_TIMEOUT;
    loop {
        support::open_settings(client).await;
        support::open_advanced(client).await;
        let help = wait_for(client, "#settings-globalShortcut-help", |text| {
            !text.is_empty()
        })
        .await;
        client
            .execute("document.querySelector('#settings').close();", vec![])
            .await
            .unwrap();
        if done(&help) {
            return help;
        }
        assert!(
            Instant::now() < deadline,
            "the shortcut's help still says {help:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Walkie in a Wayland session (`XDG_SESSION_TYPE`; its window stays on the test's X server,
/// as under XWayland) on `bus`, in `dirs`.
fn in_a_wayland_session<'a>(dirs: &AppDirs, bus: &'a SecretService) -> Launch<'a> {
    let mut launch = Launch::in_dirs(dirs, Some(bus));
    launch.env.push(("XDG_SESSION_TYPE", "wayland".to_owned()));
    launch
}

const PUSH_TO_TALK: &str = "push-to-talk";

/// Waits for Walkie to open a session with a desktop that asks on bind: created, listed (the
/// key is not there yet), then bound with `preferred_trigger` (GNOME shows its dialog here).
/// Returns the session.
async fn bound_in_a_new_session(portal: &mut FakeDesktopPortal, preferred_trigger: &str) -> String {
    let PortalCall::CreateSession { session, .. } = portal.next_call(support::UI_TIMEOUT).await
    else {
        panic!("the next call is not CreateSession");
    };
    assert_eq!(
        portal.next_call(support::UI_TIMEOUT).await,
        PortalCall::ListShortcuts {
            session: session.clone()
        }
    );
    assert_eq!(
        portal.next_call(support::UI_TIMEOUT).await,
        PortalCall::BindShortcuts {
            session: session.clone(),
            shortcuts: vec![(PUSH_TO_TALK.to_owned(), Some(preferred_trigger.to_owned()))],
        }
    );
    session
}

#[tokio::test(flavor = "multi_thread")]
async fn e2e_real_portal_fake_plasma_takes_the_key_from_create_session_and_its_press_and_release_hold_a_turn()
 {
    require_test_audio();
    let _devices = AUDIO_DEVICES.lock().await;
    const NAME: &str = "desktop_portal_plasma";
    let dirs = AppDirs::fresh(NAME);
    let bus = SecretService::start(&dirs);
    let mut portal = FakeDesktopPortal::start(
        bus.bus_address(),
        &dirs.root.join("portal"),
        Desktop::Plasma,
    )
    .await;
    let app = WebviewApp::launch_with(NAME, in_a_wayland_session(&dirs, &bus)).await;
    app.run(|client| async move {
        wait_for(&client, "#status", |text| text.starts_with("Ready")).await;
        let help =
            until_shortcut_help(&client, |help| help.starts_with("Your desktop can hold")).await;
        assert!(help.contains("in every app"), "{help}");

        save_setting(&client, "globalShortcut", "Ctrl+Alt+K".into()).await;
        // The shortcut rides in CreateSession, the only place Plasma 5.27 reads it from.
        let PortalCall::CreateSession { session, shortcuts } =
            portal.next_call(support::UI_TIMEOUT).await
        else {
            panic!("the first call is not CreateSession");
        };
        assert_eq!(
            shortcuts,
            [(PUSH_TO_TALK.to_owned(), Some("CTRL+ALT+k".to_owned()))]
        );
        assert_eq!(
            portal.next_call(support::UI_TIMEOUT).await,
            PortalCall::ListShortcuts {
                session: session.clone()
            }
        );
        let help =
            until_shortcut_help(&client, |help| help.starts_with("Your desktop holds")).await;
        assert!(
            help.starts_with("Your desktop holds Ctrl+Alt+K for Walkie in every app"),
            "{help}"
        );

        // The user holds the keys in another app: the desktop says so through the portal.
        portal.key(&session, PUSH_TO_TALK, true).await;
        wait_for_text(&client, "#status", "Listening… release to send.").await;
        speak().await;
        portal.key(&session, PUSH_TO_TALK, false).await;
        wait_for(&client, "#transcript", |text| text.contains("played your")).await;
        wait_for(&client, "#status", |text| text.starts_with("Ready")).await;
        assert_eq!(replies_shown(&client).await, 1);
        let store = walkie_store::Store::new(walkie_store::conversations_dir(&dirs.data));
        let saved = store.list().expect("the saved conversations");
        let conversation = store.open_strict(&saved[0].id).expect("it reads back");
        let roles: Vec<&str> = conversation
            .messages()
            .iter()
            .map(|message| message.role_name())
            .collect();
        assert_eq!(roles, ["user", "assistant"]);
        // Plasma listed the key: BindShortcuts (which would open System Settings) never came.
        assert!(
            portal.calls_so_far().is_empty(),
            "{:?}",
            portal.calls_so_far()
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn e2e_real_portal_fake_desktop_that_asks_on_bind_binds_the_chosen_keys_and_binds_again_when_they_change()
 {
    require_test_audio();
    let _devices = AUDIO_DEVICES.lock().await;
    const NAME: &str = "desktop_portal_bind";
    let dirs = AppDirs::fresh(NAME);
    let bus = SecretService::start(&dirs);
    let mut portal = FakeDesktopPortal::start(
        bus.bus_address(),
        &dirs.root.join("portal"),
        Desktop::AsksOnBind,
    )
    .await;
    let app = WebviewApp::launch_with(NAME, in_a_wayland_session(&dirs, &bus)).await;
    app.run(|client| async move {
        wait_for(&client, "#status", |text| text.starts_with("Ready")).await;
        save_setting(&client, "globalShortcut", "Ctrl+Alt+K".into()).await;
        let first = bound_in_a_new_session(&mut portal, "CTRL+ALT+k").await;
        until_shortcut_help(&client, |help| {
            help.starts_with("Your desktop holds Ctrl+Alt+K")
        })
        .await;

        // Other keys chosen: the old session closes and the new keys are bound in a new one.
        save_setting(&client, "globalShortcut", "Ctrl+Alt+J".into()).await;
        assert_eq!(
            portal.next_call(support::UI_TIMEOUT).await,
            PortalCall::CloseSession {
                session: first.clone()
            }
        );
        let second = bound_in_a_new_session(&mut portal, "CTRL+ALT+j").await;
        assert_ne!(second, first);
        until_shortcut_help(&client, |help| {
            help.starts_with("Your desktop holds Ctrl+Alt+J")
        })
        .await;

        // The keys of the new session hold a turn.
        portal.key(&second, PUSH_TO_TALK, true).await;
        wait_for_text(&client, "#status", "Listening… release to send.").await;
        speak().await;
        portal.key(&second, PUSH_TO_TALK, false).await;
        wait_for(&client, "#transcript", |text| text.contains("played your")).await;
        wait_for(&client, "#status", |text| text.starts_with("Ready")).await;
        assert_eq!(replies_shown(&client).await, 1);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn e2e_real_portal_fake_desktop_in_a_wayland_session_screenshot_asks_the_desktops_dialog_and_attaches_its_file()
 {
    require_test_audio();
    let _devices = AUDIO_DEVICES.lock().await;
    const NAME: &str = "desktop_portal_screenshot";
    let dirs = AppDirs::fresh(NAME);
    let bus = SecretService::start(&dirs);
    let portal_dir = dirs.root.join("portal");
    let mut portal =
        FakeDesktopPortal::start(bus.bus_address(), &portal_dir, Desktop::Plasma).await;
    // What the user will choose in the desktop's dialog, saved where the desktop saves it.
    image::RgbImage::from_fn(320, 240, |x, _| image::Rgb([(x % 256) as u8, 90, 160]))
        .save(FakeDesktopPortal::screenshot_file(&portal_dir))
        .expect("drawing the desktop's screenshot");
    let app = WebviewApp::launch_with(NAME, in_a_wayland_session(&dirs, &bus)).await;
    app.run(|client| async move {
        wait_for(&client, "#status", |text| text.starts_with("Ready")).await;
        support::click(&client, "[data-action=screenshot]").await;
        let menu = wait_for(&client, "#screenshot-menu", |text| !text.is_empty()).await;
        assert_eq!(menu, "Choose in the desktop's screenshot dialog…");
        support::press(&client, fantoccini::key::Key::Enter).await;
        assert_eq!(
            portal.next_call(support::UI_TIMEOUT).await,
            PortalCall::Screenshot { interactive: true }
        );
        let attached = wait_for(&client, "#compose-note", |text| {
            text.contains("is attached")
        })
        .await;
        assert!(attached.starts_with("Screenshot is attached"), "{attached}");
        client
            .find(fantoccini::Locator::Css("#compose-text"))
            .await
            .expect("the field to type in")
            .send_keys("What is on my screen?")
            .await
            .expect("typing");
        support::press(&client, fantoccini::key::Key::Enter).await;
        wait_for(&client, "#transcript", |text| {
            text.contains("you showed me a picture: 320 by 240 pixels.")
        })
        .await;
    })
    .await;
    assert!(
        FakeDesktopPortal::screenshot_file(&portal_dir).exists(),
        "the desktop's file is the user's: Walkie leaves it where it is"
    );
}
