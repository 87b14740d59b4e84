//! What a desktop session does to the app from the outside, where Xvfb has no one to do it:
//! a tray host that clicks the tray menu, and a window manager's close of the window.
//!
//! The tray host speaks the protocols a real one (a GNOME Shell extension, KDE Plasma) speaks
//! on the session bus: it answers as the `org.kde.StatusNotifierWatcher` the app's tray icon
//! (libayatana-appindicator) registers with, reads the icon's menu over `com.canonical.dbusmenu`,
//! and clicks an entry with that protocol's `Event`, which activates the app's own menu item.
//! Closing the window sends `WM_DELETE_WINDOW`, as a window manager does when the user clicks
//! the title bar's close button.

use std::collections::HashMap;
use std::process::Command;
use std::time::Duration;

use tokio::sync::mpsc;
use zbus::zvariant::{OwnedObjectPath, OwnedValue, Value};

/// One entry of a dbusmenu layout, `(ia{sv}av)`: its id, its properties and its children
/// (each in a variant).
type MenuEntry = (i32, HashMap<String, OwnedValue>, Vec<OwnedValue>);

/// A tray icon that registered: its bus name and object path.
#[derive(Clone, Debug)]
pub struct TrayItem {
    pub bus_name: String,
    pub path: String,
}

/// The `org.kde.StatusNotifierWatcher` of a tray host, on the test's private session bus.
struct Watcher {
    registered: mpsc::UnboundedSender<TrayItem>,
}

#[zbus::interface(name = "org.kde.StatusNotifierWatcher")]
impl Watcher {
    /// `service` is the icon's object path (libayatana-appindicator) or its bus name (KDE's
    /// own items, at `/StatusNotifierItem`).
    async fn register_status_notifier_item(
        &self,
        service: &str,
        #[zbus(header)] header: zbus::message::Header<'_>,
    ) {
        let sender = header
            .sender()
            .map(|sender| sender.to_string())
            .unwrap_or_default();
        let item = if service.starts_with('/') {
            TrayItem {
                bus_name: sender,
                path: service.to_owned(),
            }
        } else {
            TrayItem {
                bus_name: service.to_owned(),
                path: "/StatusNotifierItem".to_owned(),
            }
        };
        let _ = self.registered.send(item);
    }

    async fn register_status_notifier_host(&self, _service: &str) {}

    #[zbus(property)]
    async fn registered_status_notifier_items(&self) -> Vec<String> {
        Vec::new()
    }

    #[zbus(property)]
    async fn is_status_notifier_host_registered(&self) -> bool {
        true
    }

    #[zbus(property)]
    async fn protocol_version(&self) -> i32 {
        0
    }
}

/// A tray host on a session bus; start it before the app, so its icon registers here.
pub struct TrayHost {
    connection: zbus::Connection,
    registered: mpsc::UnboundedReceiver<TrayItem>,
}

impl TrayHost {
    pub async fn start(bus_address: &str) -> Self {
        let (sender, registered) = mpsc::unbounded_channel();
        let connection = zbus::connection::Builder::address(bus_address)
            .expect("the test bus address parses")
            .name("org.kde.StatusNotifierWatcher")
            .expect("a well-known name")
            .serve_at("/StatusNotifierWatcher", Watcher { registered: sender })
            .expect("serving the watcher")
            .build()
            .await
            .expect("the tray host connects to the test's session bus");
        Self {
            connection,
            registered,
        }
    }

    /// Waits for the app's tray icon to register.
    pub async fn wait_for_item(&mut self, within: Duration) -> TrayItem {
        tokio::time::timeout(within, self.registered.recv())
            .await
            .unwrap_or_else(|_| panic!("no tray icon registered within {within:?}"))
            .expect("the watcher lives as long as the host")
    }

    /// Clicks the entry of `item`'s menu whose label is `label`, as a tray host does when the
    /// user picks it.
    pub async fn click(&self, item: &TrayItem, label: &str) {
        let icon = zbus::Proxy::new(
            &self.connection,
            item.bus_name.clone(),
            item.path.clone(),
            "org.kde.StatusNotifierItem",
        )
        .await
        .expect("a proxy for the tray icon");
        let menu_path: OwnedObjectPath = icon
            .get_property("Menu")
            .await
            .expect("the tray icon has a menu");
        let menu = zbus::Proxy::new(
            &self.connection,
            item.bus_name.clone(),
            menu_path,
            "com.canonical.dbusmenu",
        )
        .await
        .expect("a proxy for the tray menu");
        let (_revision, layout): (u32, MenuEntry) = menu
            .call("GetLayout", &(0i32, -1i32, Vec::<String>::new()))
            .await
            .expect("the tray menu's layout");
        let mut labels = Vec::new();
        let mut found = None;
        for child in layout.2 {
            let (id, properties, _children) = menu_entry(child);
            let text = properties
                .get("label")
                .and_then(|value| String::try_from(value.try_clone().ok()?).ok())
                .unwrap_or_default();
            // GTK's mnemonic marks do not count.
            if text.replace('_', "") == label {
                found = Some(id);
            }
            labels.push(text);
        }
        let id = found.unwrap_or_else(|| panic!("no {label:?} in the tray menu: {labels:?}"));
        let () = menu
            .call("Event", &(id, "clicked", Value::from(0i32), 0u32))
            .await
            .expect("the tray menu takes the click");
    }
}

/// A child of a dbusmenu layout, out of its variant.
fn menu_entry(value: OwnedValue) -> MenuEntry {
    let mut value = Value::from(value);
    while let Value::Value(inner) = value {
        value = *inner;
    }
    MenuEntry::try_from(value).expect("a dbusmenu entry is (ia{sv}av)")
}

/// Closes the window titled exactly `title` on `display` the way a window manager does when
/// the user clicks its close button: a `WM_DELETE_WINDOW` message to the window.
pub fn close_window(display: &str, title: &str) {
    use x11rb::protocol::xproto::{ClientMessageEvent, ConnectionExt, EventMask};

    let found = Command::new("xdotool")
        // Only the mapped window: GTK's hidden group leader has the same name.
        .args(["search", "--onlyvisible", "--name", &format!("^{title}$")])
        .env("DISPLAY", display)
        .output()
        .expect("xdotool (scripts/deps.sh test installs it)");
    let ids = String::from_utf8_lossy(&found.stdout);
    let window: u32 = ids
        .lines()
        .next()
        .and_then(|id| id.trim().parse().ok())
        .unwrap_or_else(|| panic!("no window titled {title:?} on {display}"));
    let (connection, _screen) = x11rb::connect(Some(display)).expect("connecting to the X server");
    let atom = |name: &[u8]| {
        connection
            .intern_atom(false, name)
            .expect("asking for an atom")
            .reply()
            .expect("the X server names the atom")
            .atom
    };
    let (protocols, delete) = (atom(b"WM_PROTOCOLS"), atom(b"WM_DELETE_WINDOW"));
    let message = ClientMessageEvent::new(
        32,
        window,
        protocols,
        [delete, x11rb::CURRENT_TIME, 0, 0, 0],
    );
    connection
        .send_event(false, window, EventMask::NO_EVENT, message)
        .expect("sending WM_DELETE_WINDOW");
    // A round trip: the server has handled the message before this connection closes.
    connection
        .get_input_focus()
        .expect("asking the X server")
        .reply()
        .expect("the X server answers");
}

/// A Wayland compositor with no screen: Debian's sway 1.7 on its headless backend, drawing with
/// the pixman renderer (no GPU). Its socket is [`Self::socket`]; `grim` takes what it shows.
///
/// sway refuses to run as root (it could not drop the privileges it would keep), so under root
/// it runs as `nobody`, in a runtime folder of that user's under the system's temporary folder
/// (a folder under the test's data could be out of that user's reach).
pub struct HeadlessSway {
    runtime: std::path::PathBuf,
    socket: std::path::PathBuf,
    _compositor: super::ProcessGroup,
}

impl HeadlessSway {
    pub fn start(test_name: &str) -> Self {
        let runtime =
            std::env::temp_dir().join(format!("walkie-sway-{}-{test_name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&runtime);
        std::fs::create_dir_all(&runtime).expect("creating sway's runtime folder");
        std::fs::write(
            runtime.join("config"),
            "output HEADLESS-1 resolution 1280x800\n",
        )
        .expect("writing sway's config");
        std::fs::set_permissions(
            &runtime,
            std::os::unix::fs::PermissionsExt::from_mode(0o700),
        )
        .expect("making sway's runtime folder private");
        let root = nix::unistd::geteuid().is_root();
        let mut command = if root {
            let owned = Command::new("chown")
                .args(["-R", "nobody"])
                .arg(&runtime)
                .status()
                .expect("chown");
            assert!(owned.success(), "giving sway's folder to nobody");
            let mut command = Command::new("setpriv");
            command.args([
                "--reuid=nobody",
                "--regid=nogroup",
                "--clear-groups",
                "sway",
            ]);
            command
        } else {
            Command::new("sway")
        };
        let compositor = super::ProcessGroup::spawn(
            "sway (scripts/deps.sh test installs it)",
            command
                .arg("-c")
                .arg(runtime.join("config"))
                .env_clear()
                .env("PATH", std::env::var_os("PATH").unwrap_or_default())
                .env("HOME", &runtime)
                .env("XDG_RUNTIME_DIR", &runtime)
                .env("WLR_BACKENDS", "headless")
                .env("WLR_RENDERER", "pixman")
                .env("WLR_LIBINPUT_NO_DEVICES", "1")
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null()),
        );
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        let socket = loop {
            let found = std::fs::read_dir(&runtime)
                .expect("reading sway's runtime folder")
                .filter_map(Result::ok)
                .map(|entry| entry.path())
                .find(|path| {
                    path.file_name()
                        .and_then(|name| name.to_str())
                        .is_some_and(|name| {
                            name.starts_with("wayland-") && !name.ends_with(".lock")
                        })
                });
            if let Some(socket) = found {
                break socket;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "sway made no Wayland socket within 20 s"
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        Self {
            runtime,
            socket,
            _compositor: compositor,
        }
    }

    /// The compositor's socket, for `WAYLAND_DISPLAY` (an absolute path works there).
    pub fn socket(&self) -> &std::path::Path {
        &self.socket
    }

    /// What the compositor shows now, as a PNG at `path`, taken by grim.
    pub fn screenshot(&self, path: &std::path::Path) {
        let taken = Command::new("grim")
            .arg(path)
            .env("WAYLAND_DISPLAY", &self.socket)
            .output()
            .expect("grim (scripts/deps.sh test installs it)");
        assert!(
            taken.status.success(),
            "grim failed: {}",
            String::from_utf8_lossy(&taken.stderr)
        );
    }
}

impl Drop for HeadlessSway {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.runtime);
    }
}
