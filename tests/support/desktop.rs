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
