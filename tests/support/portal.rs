//! Real portal, fake desktop: the real xdg-desktop-portal frontend (Debian's
//! `/usr/libexec/xdg-desktop-portal`) on the test's private session bus, in front of a desktop
//! backend written for the tests. The app talks to the frontend exactly as it would in a
//! KDE or GNOME session; the backend is where a desktop would show its shortcut dialog and
//! see the keys, so the test stands in for the user there: it presses and releases the bound
//! shortcut (`Activated` / `Deactivated`) and records what the frontend passed on.
//!
//! The frontend picks a backend by a `.portal` file in `XDG_DESKTOP_PORTAL_DIR` whose `UseIn`
//! matches `XDG_CURRENT_DESKTOP`; this one implements GlobalShortcuts, Screenshot (whose user
//! "chooses" a picture the test drew) and Access (the frontend offers Screenshot only beside
//! it).

use std::collections::HashMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::StreamExt;
use tokio::sync::mpsc;
use zbus::object_server::SignalEmitter;
use zbus::zvariant::{ObjectPath, OwnedObjectPath, OwnedValue, Value};

use super::ProcessGroup;

const BACKEND_NAME: &str = "org.freedesktop.impl.portal.desktop.walkietest";
const DESKTOP_PATH: &str = "/org/freedesktop/portal/desktop";
const DESKTOP_NAME: &str = "walkie-test";

/// A shortcut as the portal passes it: its id and properties.
type WireShortcut = (String, HashMap<String, OwnedValue>);

/// How the fake desktop binds shortcuts, after the two ways real ones do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Desktop {
    /// KDE Plasma 5.27: registers the shortcuts `CreateSession` carries; its `BindShortcuts`
    /// would open System Settings (recorded, so a test can say it never happened).
    Plasma,
    /// GNOME 48 (and Hyprland): `CreateSession` binds nothing; `BindShortcuts` asks the user,
    /// who here accepts the preferred keys.
    AsksOnBind,
}

/// What the frontend passed on to the desktop, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PortalCall {
    CreateSession {
        session: String,
        /// `(id, preferred_trigger)` of each shortcut in its options.
        shortcuts: Vec<(String, Option<String>)>,
    },
    ListShortcuts {
        session: String,
    },
    BindShortcuts {
        session: String,
        shortcuts: Vec<(String, Option<String>)>,
    },
    CloseSession {
        session: String,
    },
    /// A screenshot was asked for; `interactive`: the user chooses what to take.
    Screenshot {
        interactive: bool,
    },
}

/// The keys the fake desktop bound, by session: `(id, trigger)`.
type Bound = Arc<Mutex<HashMap<String, Vec<(String, String)>>>>;

struct FakeShortcuts {
    desktop: Desktop,
    calls: mpsc::UnboundedSender<PortalCall>,
    bound: Bound,
}

/// Each shortcut's id and preferred trigger.
fn described(shortcuts: &[WireShortcut]) -> Vec<(String, Option<String>)> {
    shortcuts
        .iter()
        .map(|(id, properties)| {
            let trigger = properties
                .get("preferred_trigger")
                .and_then(|value| String::try_from(value.try_clone().ok()?).ok());
            (id.clone(), trigger)
        })
        .collect()
}

/// The desktop's words for a trigger in the XDG notation: "CTRL+ALT+k" → "Ctrl+Alt+K".
fn trigger_description(trigger: &str) -> String {
    trigger
        .split('+')
        .map(|part| {
            let mut letters = part.chars();
            match letters.next() {
                Some(first) => first
                    .to_uppercase()
                    .chain(letters.flat_map(char::to_lowercase))
                    .collect(),
                None => String::new(),
            }
        })
        .collect::<Vec<String>>()
        .join("+")
}

impl FakeShortcuts {
    /// Binds `shortcuts` in `session` with their preferred keys; returns them as the portal
    /// answers (`shortcuts` of `a(sa{sv})`, with each trigger's description).
    fn bind(&self, session: &str, shortcuts: &[WireShortcut]) -> HashMap<String, OwnedValue> {
        let keys: Vec<(String, String)> = described(shortcuts)
            .into_iter()
            .map(|(id, trigger)| {
                (
                    id,
                    trigger.map(|t| trigger_description(&t)).unwrap_or_default(),
                )
            })
            .collect();
        self.bound.lock().unwrap().insert(session.to_owned(), keys);
        self.listed(session)
    }

    fn listed(&self, session: &str) -> HashMap<String, OwnedValue> {
        let keys = self
            .bound
            .lock()
            .unwrap()
            .get(session)
            .cloned()
            .unwrap_or_default();
        let shortcuts: Vec<WireShortcut> = keys
            .into_iter()
            .map(|(id, trigger)| {
                let mut properties = HashMap::new();
                properties.insert("description".to_owned(), owned(Value::from("")));
                properties.insert(
                    "trigger_description".to_owned(),
                    owned(Value::from(trigger)),
                );
                (id, properties)
            })
            .collect();
        HashMap::from([("shortcuts".to_owned(), owned(Value::from(shortcuts)))])
    }
}

fn owned(value: Value<'_>) -> OwnedValue {
    value.try_into_owned().expect("no file descriptors here")
}

#[zbus::interface(name = "org.freedesktop.impl.portal.GlobalShortcuts")]
impl FakeShortcuts {
    async fn create_session(
        &self,
        _handle: OwnedObjectPath,
        session_handle: OwnedObjectPath,
        _app_id: String,
        options: HashMap<String, OwnedValue>,
        #[zbus(object_server)] server: &zbus::ObjectServer,
    ) -> (u32, HashMap<String, OwnedValue>) {
        let shortcuts: Vec<WireShortcut> = options
            .get("shortcuts")
            .and_then(|value| value.try_clone().ok())
            .and_then(|value| Vec::<WireShortcut>::try_from(value).ok())
            .unwrap_or_default();
        let session = session_handle.to_string();
        let _ = self.calls.send(PortalCall::CreateSession {
            session: session.clone(),
            shortcuts: described(&shortcuts),
        });
        let _ = server
            .at(
                session_handle.clone(),
                FakeSession {
                    session: session.clone(),
                    calls: self.calls.clone(),
                },
            )
            .await;
        // Both desktops answer with the session's shortcuts (the frontend 1.16 reads them).
        let results = match self.desktop {
            Desktop::Plasma => self.bind(&session, &shortcuts),
            Desktop::AsksOnBind => self.listed(&session),
        };
        (0, results)
    }

    async fn bind_shortcuts(
        &self,
        _handle: OwnedObjectPath,
        session_handle: OwnedObjectPath,
        shortcuts: Vec<WireShortcut>,
        _parent_window: String,
        _options: HashMap<String, OwnedValue>,
    ) -> (u32, HashMap<String, OwnedValue>) {
        let session = session_handle.to_string();
        let _ = self.calls.send(PortalCall::BindShortcuts {
            session: session.clone(),
            shortcuts: described(&shortcuts),
        });
        match self.desktop {
            // Plasma 5.27 opens System Settings and binds nothing new.
            Desktop::Plasma => (0, self.listed(&session)),
            Desktop::AsksOnBind => (0, self.bind(&session, &shortcuts)),
        }
    }

    async fn list_shortcuts(
        &self,
        _handle: OwnedObjectPath,
        session_handle: OwnedObjectPath,
    ) -> (u32, HashMap<String, OwnedValue>) {
        let session = session_handle.to_string();
        let _ = self.calls.send(PortalCall::ListShortcuts {
            session: session.clone(),
        });
        (0, self.listed(&session))
    }

    #[zbus(property)]
    async fn version(&self) -> u32 {
        1
    }

    #[zbus(signal)]
    async fn activated(
        emitter: &SignalEmitter<'_>,
        session_handle: ObjectPath<'_>,
        shortcut_id: &str,
        timestamp: u64,
        options: HashMap<&str, Value<'_>>,
    ) -> zbus::Result<()>;

    #[zbus(signal)]
    async fn deactivated(
        emitter: &SignalEmitter<'_>,
        session_handle: ObjectPath<'_>,
        shortcut_id: &str,
        timestamp: u64,
        options: HashMap<&str, Value<'_>>,
    ) -> zbus::Result<()>;
}

/// The desktop's screenshot dialog, where the user "chooses" `picture`: the frontend is handed
/// its file's URI, as a desktop hands the file it saved.
struct FakeScreenshot {
    picture: std::path::PathBuf,
    calls: mpsc::UnboundedSender<PortalCall>,
}

#[zbus::interface(name = "org.freedesktop.impl.portal.Screenshot")]
impl FakeScreenshot {
    async fn screenshot(
        &self,
        _handle: OwnedObjectPath,
        _app_id: String,
        _parent_window: String,
        options: HashMap<String, OwnedValue>,
    ) -> (u32, HashMap<String, OwnedValue>) {
        let interactive = options
            .get("interactive")
            .and_then(|value| bool::try_from(value).ok())
            .unwrap_or(false);
        let _ = self.calls.send(PortalCall::Screenshot { interactive });
        let uri = format!(
            "file://{}",
            self.picture.display().to_string().replace(' ', "%20")
        );
        (
            0,
            HashMap::from([("uri".to_owned(), owned(Value::from(uri)))]),
        )
    }

    #[zbus(property)]
    async fn version(&self) -> u32 {
        2
    }
}

/// The desktop's "Allow?" dialog, which the frontend needs beside Screenshot; here the user
/// allows.
struct FakeAccess;

#[zbus::interface(name = "org.freedesktop.impl.portal.Access")]
impl FakeAccess {
    #[allow(clippy::too_many_arguments)]
    async fn access_dialog(
        &self,
        _handle: OwnedObjectPath,
        _app_id: String,
        _parent_window: String,
        _title: String,
        _subtitle: String,
        _body: String,
        _options: HashMap<String, OwnedValue>,
    ) -> (u32, HashMap<String, OwnedValue>) {
        (0, HashMap::new())
    }
}

/// A session's own object: the frontend closes it here when the app closes its session.
struct FakeSession {
    session: String,
    calls: mpsc::UnboundedSender<PortalCall>,
}

#[zbus::interface(name = "org.freedesktop.impl.portal.Session")]
impl FakeSession {
    async fn close(&self) {
        let _ = self.calls.send(PortalCall::CloseSession {
            session: self.session.clone(),
        });
    }
}

/// The frontend and the fake desktop behind it, on a test's session bus.
pub struct FakeDesktopPortal {
    connection: zbus::Connection,
    calls: mpsc::UnboundedReceiver<PortalCall>,
    // Dropped last: the frontend leaves when its bus does anyway.
    _frontend: ProcessGroup,
}

impl FakeDesktopPortal {
    /// Serves the fake desktop on the bus at `bus_address`, then starts the real frontend
    /// (with its files in `dir`) and waits until it has taken its name. Its screenshot dialog
    /// hands back [`Self::screenshot_file`] of `dir`.
    pub async fn start(bus_address: &str, dir: &Path, desktop: Desktop) -> Self {
        let (sent, calls) = mpsc::unbounded_channel();
        std::fs::create_dir_all(dir).expect("creating the portal folder");
        let connection = zbus::connection::Builder::address(bus_address)
            .expect("the test bus address parses")
            .name(BACKEND_NAME)
            .expect("a well-known name")
            .serve_at(
                DESKTOP_PATH,
                FakeShortcuts {
                    desktop,
                    calls: sent.clone(),
                    bound: Bound::default(),
                },
            )
            .expect("serving the fake desktop")
            .serve_at(
                DESKTOP_PATH,
                FakeScreenshot {
                    picture: Self::screenshot_file(dir),
                    calls: sent.clone(),
                },
            )
            .expect("serving its screenshot dialog")
            .serve_at(DESKTOP_PATH, FakeAccess)
            .expect("serving its access dialog")
            .build()
            .await
            .expect("the fake desktop connects to the test's session bus");
        let portals = dir.join("portals");
        std::fs::create_dir_all(&portals).expect("creating the portal folder");
        std::fs::write(
            portals.join("walkietest.portal"),
            format!(
                "[portal]\nDBusName={BACKEND_NAME}\n\
                 Interfaces=org.freedesktop.impl.portal.GlobalShortcuts;\
                 org.freedesktop.impl.portal.Screenshot;org.freedesktop.impl.portal.Access;\n\
                 UseIn={DESKTOP_NAME}\n"
            ),
        )
        .expect("writing the fake desktop's .portal file");

        let bus = zbus::fdo::DBusProxy::new(&connection)
            .await
            .expect("the bus's own interface");
        let mut owners = bus
            .receive_name_owner_changed_with_args(&[(0, "org.freedesktop.portal.Desktop")])
            .await
            .expect("watching the portal's name");
        let frontend = ProcessGroup::spawn(
            "xdg-desktop-portal",
            Command::new("/usr/libexec/xdg-desktop-portal")
                .arg("--replace")
                .env("DBUS_SESSION_BUS_ADDRESS", bus_address)
                .env("XDG_DESKTOP_PORTAL_DIR", &portals)
                .env("XDG_CURRENT_DESKTOP", DESKTOP_NAME)
                .env("XDG_RUNTIME_DIR", dir)
                .stdout(Stdio::null())
                .stderr(Stdio::null()),
        );
        let owned_name = async {
            while let Some(changed) = owners.next().await {
                if changed.args().is_ok_and(|args| !args.new_owner().is_none()) {
                    return;
                }
            }
        };
        tokio::time::timeout(Duration::from_secs(20), owned_name)
            .await
            .expect("the portal frontend takes its name on the bus within 20 s");
        Self {
            connection,
            calls,
            _frontend: frontend,
        }
    }

    /// The next call the frontend passed on to the desktop.
    pub async fn next_call(&mut self, within: Duration) -> PortalCall {
        tokio::time::timeout(within, self.calls.recv())
            .await
            .unwrap_or_else(|_| panic!("the portal passed nothing on within {within:?}"))
            .expect("the fake desktop lives as long as the test")
    }

    /// The file the desktop's screenshot dialog hands back (the test draws it there first).
    pub fn screenshot_file(dir: &Path) -> std::path::PathBuf {
        dir.join("Screenshot from the test.png")
    }

    /// The calls passed on since the last one read, without waiting.
    pub fn calls_so_far(&mut self) -> Vec<PortalCall> {
        std::iter::from_fn(|| self.calls.try_recv().ok()).collect()
    }

    /// The user presses (`down`) or releases the keys bound to `shortcut` in `session`.
    pub async fn key(&self, session: &str, shortcut: &str, down: bool) {
        let emitter = SignalEmitter::new(&self.connection, DESKTOP_PATH)
            .expect("the desktop's path is valid");
        let session = ObjectPath::try_from(session).expect("a session handle is a path");
        let timestamp = 0u64;
        let sent = if down {
            FakeShortcuts::activated(&emitter, session, shortcut, timestamp, HashMap::new()).await
        } else {
            FakeShortcuts::deactivated(&emitter, session, shortcut, timestamp, HashMap::new()).await
        };
        sent.expect("the fake desktop emits the key's signal");
    }
}
