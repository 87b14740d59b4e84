//! Desktop integration: a tray icon whose look follows the conversation, one Walkie per user
//! session, and the window's size and place remembered between runs.
//!
//! Why: Walkie is used while other windows have focus (the global shortcut), so the tray is
//! where the user sees at a glance whether the microphone is being sent or the assistant is
//! talking. A second launch (the menu entry clicked again) must bring the running window
//! forward, not open a second call on the same microphone.

use std::path::Path;
use std::sync::Mutex;

use tauri::image::Image;
use tauri::menu::{Menu, MenuItem};
use tauri::tray::{TrayIcon, TrayIconBuilder};
use tauri::{AppHandle, Manager};

use crate::status::ConnectionState;

/// What the tray icon shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TrayLook {
    /// Grey: not talking (connecting, ready, thinking, not connected).
    Idle,
    /// Red: the microphone is being sent.
    Listening,
    /// Teal: the assistant is audible.
    Speaking,
}

impl TrayLook {
    pub fn of(state: ConnectionState) -> Self {
        match state {
            ConnectionState::Listening => TrayLook::Listening,
            ConnectionState::Speaking => TrayLook::Speaking,
            ConnectionState::NotConnected
            | ConnectionState::Connecting
            | ConnectionState::Ready
            | ConnectionState::Thinking
            | ConnectionState::Reconnecting
            | ConnectionState::Error => TrayLook::Idle,
        }
    }

    fn png(self) -> &'static [u8] {
        match self {
            TrayLook::Idle => include_bytes!("../icons/tray/idle.png"),
            TrayLook::Listening => include_bytes!("../icons/tray/listening.png"),
            TrayLook::Speaking => include_bytes!("../icons/tray/speaking.png"),
        }
    }

    fn tooltip(self) -> &'static str {
        match self {
            TrayLook::Idle => "Walkie",
            TrayLook::Listening => "Walkie: listening",
            TrayLook::Speaking => "Walkie: speaking",
        }
    }
}

/// The tray icon and the look it shows now.
pub struct Tray {
    icon: TrayIcon,
    look: Mutex<TrayLook>,
}

impl Tray {
    /// Puts Walkie in the tray, with a menu to bring the window forward or quit.
    pub fn create(app: &AppHandle) -> tauri::Result<Tray> {
        let show = MenuItem::with_id(app, "show", "Show Walkie", true, None::<&str>)?;
        let quit = MenuItem::with_id(app, "quit", "Quit Walkie", true, None::<&str>)?;
        let menu = Menu::with_items(app, &[&show, &quit])?;
        let icon = TrayIconBuilder::with_id("walkie")
            .icon(Image::from_bytes(TrayLook::Idle.png())?)
            .tooltip(TrayLook::Idle.tooltip())
            .menu(&menu)
            .on_menu_event(|app, event| match event.id.as_ref() {
                "show" => show_main_window(app),
                // The same exit as closing the window: the conversation is closed first.
                "quit" => {
                    log::info!("Quit chosen in the tray menu");
                    app.exit(0);
                }
                _ => {}
            })
            .build(app)?;
        Ok(Tray {
            icon,
            look: Mutex::new(TrayLook::Idle),
        })
    }

    /// Shows the look of `state`, if it differs from what is shown.
    pub fn follow(&self, state: ConnectionState) {
        let look = TrayLook::of(state);
        let mut shown = self
            .look
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if *shown == look {
            return;
        }
        let image = Image::from_bytes(look.png())
            .expect("the tray icons are PNGs compiled into the binary");
        if let Err(error) = self.icon.set_icon(Some(image)) {
            log::warn!("the tray icon could not change: {error}");
            return;
        }
        let _ = self.icon.set_tooltip(Some(look.tooltip()));
        *shown = look;
    }
}

/// Whether a tray shows Walkie's icon in this session: a StatusNotifier host is registered on
/// the session bus. Stock GNOME has none (its AppIndicator extension adds one); the icon is
/// then created but seen nowhere, and a hidden window could not be brought back from it.
#[cfg(target_os = "linux")]
pub async fn tray_shows() -> bool {
    let asked = async {
        let connection = zbus::Connection::session().await?;
        let watcher = zbus::Proxy::new(
            &connection,
            "org.kde.StatusNotifierWatcher",
            "/StatusNotifierWatcher",
            "org.kde.StatusNotifierWatcher",
        )
        .await?;
        watcher
            .get_property::<bool>("IsStatusNotifierHostRegistered")
            .await
    };
    match tokio::time::timeout(std::time::Duration::from_secs(2), asked).await {
        Ok(Ok(registered)) => registered,
        Ok(Err(error)) => {
            log::debug!("no tray host answers on the session bus: {error}");
            false
        }
        Err(_) => {
            log::debug!("the session bus did not say within 2 s whether a tray host runs");
            false
        }
    }
}

/// Windows' and macOS's trays are always there.
#[cfg(not(target_os = "linux"))]
pub async fn tray_shows() -> bool {
    true
}

/// Hides the window where a tray shows Walkie's icon (created, and a host shows it); returns
/// whether it did.
async fn hide_in_the_tray(app: &AppHandle) -> bool {
    if app.try_state::<Tray>().is_none() || !tray_shows().await {
        return false;
    }
    if let Some(window) = app.get_webview_window("main") {
        let _ = window.hide();
    }
    true
}

/// The window's close, with "Closing the window keeps Walkie in the tray" on: the window hides
/// and the call goes on where a tray shows Walkie (its Show, or `walkie --show`, brings it
/// back); where none does, Walkie quits as it would without the setting, so it never runs on
/// with nothing on screen to bring it back.
pub fn close_to_tray(app: &AppHandle) {
    let app = app.clone();
    tauri::async_runtime::spawn(async move {
        if hide_in_the_tray(&app).await {
            log::info!("the window went to the tray; the call goes on");
        } else {
            log::warn!("no tray shows Walkie in this session: closing the window quits it");
            app.exit(0);
        }
    });
}

/// A start with `--hidden` (the login's): the window goes to the tray, where one shows Walkie;
/// where none does, it stays on screen.
pub fn start_hidden(app: &AppHandle) {
    let app = app.clone();
    tauri::async_runtime::spawn(async move {
        if hide_in_the_tray(&app).await {
            log::info!("started hidden in the tray");
        } else {
            log::warn!("asked to start hidden, but no tray shows Walkie: the window stays shown");
        }
    });
}

/// Where the global shortcut is heard, for Settings to say.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub enum ShortcutReach {
    /// In every app: X11's key grab sees the key wherever the focus is.
    EveryApp,
    /// In every app: the desktop holds the key for Walkie through its GlobalShortcuts portal
    /// ([`crate::shortcut`]), and its own keyboard settings may change it.
    Portal,
    /// Only while Walkie's window has the focus: a Wayland session gives no app the keys of
    /// another (the grab works inside XWayland alone); `walkie --toggle` bound in the
    /// desktop's settings reaches it instead ([`crate::remote`]).
    ThisWindow,
}

/// Whether this is a Wayland session, by its `WAYLAND_DISPLAY` and `XDG_SESSION_TYPE` (an
/// X11 window of it, under XWayland, is in one too).
pub fn wayland_session(wayland_display: Option<&str>, session_type: Option<&str>) -> bool {
    cfg!(target_os = "linux")
        && (wayland_display.is_some_and(|display| !display.is_empty())
            || session_type == Some("wayland"))
}

/// The reach of the global shortcut in a session with these `WAYLAND_DISPLAY` and
/// `XDG_SESSION_TYPE`, where the desktop's portal stands as `portal_key` (when it was asked),
/// and the keys the desktop says it bound.
pub fn shortcut_reach(
    wayland_display: Option<&str>,
    session_type: Option<&str>,
    portal_key: Option<crate::shortcut::PortalKeyState>,
) -> (ShortcutReach, Option<String>) {
    use crate::shortcut::PortalKeyState;
    if !wayland_session(wayland_display, session_type) {
        return (ShortcutReach::EveryApp, None);
    }
    match portal_key {
        Some(PortalKeyState::Bound { trigger }) => (ShortcutReach::Portal, trigger),
        Some(PortalKeyState::Offered) => (ShortcutReach::Portal, None),
        _ => (ShortcutReach::ThisWindow, None),
    }
}

/// Whether WebKitGTK's DMA-BUF renderer can show the page: it shares each frame with the window
/// through a GPU buffer, and on a Wayland display with no GPU render node (`/dev/dri/renderD*`:
/// a virtual machine, a headless compositor) the window stays blank (tests/e2e_wayland.rs).
/// X11 windows are shown another way.
pub fn dmabuf_renderer_shows_the_page(
    gdk_backend: Option<&str>,
    wayland_display: Option<&str>,
    render_node: bool,
) -> bool {
    let on_wayland = match gdk_backend {
        Some(backends) => backends.split(',').next().map(str::trim) == Some("wayland"),
        // GTK tries Wayland first where a compositor is named.
        None => wayland_display.is_some_and(|display| !display.is_empty()),
    };
    render_node || !on_wayland
}

/// The environment WebKitGTK needs to show the page here, to be set before GTK starts (by
/// `main`, before any other thread): where the DMA-BUF renderer cannot show it
/// ([`dmabuf_renderer_shows_the_page`]), frames go through shared memory instead
/// (`WEBKIT_DISABLE_DMABUF_RENDERER`). The user's own setting of it wins.
#[cfg(target_os = "linux")]
pub fn webview_renderer_environment() -> Option<(&'static str, &'static str)> {
    const DISABLE: &str = "WEBKIT_DISABLE_DMABUF_RENDERER";
    if std::env::var_os(DISABLE).is_some() {
        return None;
    }
    let render_node = std::fs::read_dir("/dev/dri").is_ok_and(|nodes| {
        nodes
            .filter_map(Result::ok)
            .any(|node| node.file_name().to_string_lossy().starts_with("renderD"))
    });
    let shows = dmabuf_renderer_shows_the_page(
        std::env::var("GDK_BACKEND").ok().as_deref(),
        std::env::var("WAYLAND_DISPLAY").ok().as_deref(),
        render_node,
    );
    (!shows).then_some((DISABLE, "1"))
}

#[cfg(not(target_os = "linux"))]
pub fn webview_renderer_environment() -> Option<(&'static str, &'static str)> {
    None
}

/// Brings the main window forward (from the tray, or when Walkie is launched again).
pub fn show_main_window(app: &AppHandle) {
    if let Some(window) = app.get_webview_window("main") {
        let _ = window.unminimize();
        let _ = window.show();
        let _ = window.set_focus();
    }
}

/// The main window paints its page on the CPU, not through GL.
///
/// Why: without a GPU driver, WebKitGTK composites through Mesa's software rasteriser, far
/// costlier than painting this page directly. The page is text, a meter and a button;
/// painting it directly is cheap with or without a GPU.
#[cfg(target_os = "linux")]
pub fn paint_without_gl(app: &AppHandle) {
    let Some(window) = app.get_webview_window("main") else {
        return;
    };
    let painted = window.with_webview(|webview| {
        use webkit2gtk::{HardwareAccelerationPolicy, SettingsExt, WebViewExt};
        if let Some(settings) = WebViewExt::settings(&webview.inner()) {
            settings.set_hardware_acceleration_policy(HardwareAccelerationPolicy::Never);
        }
    });
    if let Err(error) = painted {
        log::warn!("the window keeps painting through GL: {error}");
    }
}

#[cfg(not(target_os = "linux"))]
pub fn paint_without_gl(_app: &AppHandle) {}

/// One Walkie per user session: a second launch hands its arguments to the first one and
/// exits; with none, the first one's window comes forward, else it does what they ask
/// ([`crate::remote`]). It goes through the D-Bus session bus; without one, each launch runs
/// on its own.
pub fn single_instance() -> tauri::plugin::TauriPlugin<tauri::Wry> {
    tauri_plugin_single_instance::init(|app, argv, _cwd| {
        use crate::remote::{Launch, parse};
        match parse(argv.iter().skip(1)) {
            // Started hidden by the login while it runs already: it stays as it is.
            Ok(Launch::Run {
                action: None,
                hidden: true,
            }) => {}
            Ok(Launch::Run { action: None, .. }) => {
                log::info!("Walkie was launched again: showing this window");
                show_main_window(app);
            }
            Ok(Launch::Run {
                action: Some(action),
                ..
            }) => {
                log::info!("walkie {} from another process", action.flag());
                crate::act_remotely(app, action);
            }
            // The launch checks its arguments before it hands them over: these came from
            // another build of Walkie.
            Ok(Launch::Help) => {}
            Err(error) => log::warn!("a second launch's arguments were refused: {error}"),
        }
    })
}

/// Saves the window's size and place a moment after it stops changing, so they survive even
/// an exit that never reaches the plugin's own save (a crash, a SIGKILL).
///
/// The save runs on the main thread. The plugin holds its cache's lock while it asks the window
/// for its size, and a window is asked on the main thread; from any other thread, a move or a
/// resize arriving during the save blocks the main thread on that lock while the save waits
/// for the main thread, and the window freezes for good (tauri-apps/plugins-workspace#3594,
/// open in plugin 2.5.0).
pub fn save_window_state_soon(app: &AppHandle) {
    use std::sync::atomic::{AtomicU64, Ordering};
    use tauri_plugin_window_state::{AppHandleExt, StateFlags};
    static LATEST_CHANGE: AtomicU64 = AtomicU64::new(0);
    let change = LATEST_CHANGE.fetch_add(1, Ordering::Relaxed) + 1;
    let app = app.clone();
    tauri::async_runtime::spawn(async move {
        tokio::time::sleep(std::time::Duration::from_millis(400)).await;
        if LATEST_CHANGE.load(Ordering::Relaxed) != change {
            return;
        }
        let on_main = app.clone();
        let scheduled = app.run_on_main_thread(move || {
            if let Err(error) = on_main.save_window_state(StateFlags::all()) {
                log::warn!("the window's size and place could not be saved: {error}");
            }
        });
        if let Err(error) = scheduled {
            log::warn!("the window's size and place could not be saved: {error}");
        }
    });
}

/// The window's size and place, kept next to the settings (`window-state.json`).
pub fn window_state(config_dir: &Path) -> tauri::plugin::TauriPlugin<tauri::Wry> {
    // The plugin creates only its own folder before writing. On a first run the settings
    // folder does not exist until settings are saved, and every save of the window would
    // fail; a failure here shows up as the save's own warning. Created private (0700 on
    // Unix), as the settings save creates it.
    let _ = walkie_store::files::create_private_dir_all(config_dir);
    // The plugin writes its file with the default permissions when it creates it, and keeps
    // those of a file that exists: an empty private one (0600 on Unix) is created first, which
    // the plugin reads as no saved state.
    let path = config_dir.join("window-state.json");
    let _ = walkie_store::files::private_file_options()
        .create(true)
        .append(true)
        .open(&path);
    tauri_plugin_window_state::Builder::new()
        // An absolute path: the plugin joins it to its own folder, which then does not count.
        .with_filename(path.to_string_lossy())
        .build()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shortcut::PortalKeyState;

    #[test]
    fn in_a_wayland_session_the_shortcut_reaches_this_window_only_until_the_portal_holds_it() {
        let reach = |display, session, portal| shortcut_reach(display, session, portal).0;
        assert_eq!(reach(None, Some("x11"), None), ShortcutReach::EveryApp);
        assert_eq!(reach(Some(""), None, None), ShortcutReach::EveryApp);
        assert_eq!(
            reach(Some("wayland-0"), Some("wayland"), None),
            ShortcutReach::ThisWindow
        );
        assert_eq!(
            reach(None, Some("wayland"), None),
            ShortcutReach::ThisWindow,
            "under XWayland (GDK_BACKEND=x11) too"
        );
        assert_eq!(
            reach(
                None,
                Some("wayland"),
                Some(PortalKeyState::Unavailable("no portal".into()))
            ),
            ShortcutReach::ThisWindow
        );
        assert_eq!(
            shortcut_reach(
                Some("wayland-0"),
                None,
                Some(PortalKeyState::Bound {
                    trigger: Some("Ctrl+Alt+K".into())
                })
            ),
            (ShortcutReach::Portal, Some("Ctrl+Alt+K".to_owned()))
        );
    }

    #[test]
    fn the_dmabuf_renderer_is_kept_off_a_wayland_display_without_a_gpu_render_node() {
        let wayland = Some("wayland-0");
        assert!(!dmabuf_renderer_shows_the_page(None, wayland, false));
        assert!(!dmabuf_renderer_shows_the_page(
            Some("wayland"),
            None,
            false
        ));
        assert!(dmabuf_renderer_shows_the_page(None, wayland, true), "a GPU");
        assert!(
            dmabuf_renderer_shows_the_page(Some("x11"), wayland, false),
            "XWayland"
        );
        assert!(
            dmabuf_renderer_shows_the_page(None, None, false),
            "an X11 session"
        );
    }

    #[test]
    fn the_tray_is_red_while_listening_and_teal_while_speaking() {
        assert_eq!(
            TrayLook::of(ConnectionState::Listening),
            TrayLook::Listening
        );
        assert_eq!(TrayLook::of(ConnectionState::Speaking), TrayLook::Speaking);
        for quiet in [
            ConnectionState::Ready,
            ConnectionState::Thinking,
            ConnectionState::Connecting,
            ConnectionState::Error,
        ] {
            assert_eq!(TrayLook::of(quiet), TrayLook::Idle);
        }
    }

    #[test]
    fn every_tray_look_has_a_decodable_icon() {
        for look in [TrayLook::Idle, TrayLook::Listening, TrayLook::Speaking] {
            let image = Image::from_bytes(look.png()).unwrap();
            assert_eq!((image.width(), image.height()), (64, 64));
        }
    }
}
