//! Drives the real Walkie window over WebDriver, the way a user would meet it.
//!
//! Each test gets its own X server (Xvfb, on a display number it picks itself) and its own
//! WebKitWebDriver, which launches the app binary that cargo just built. WebKitWebDriver is
//! started directly rather than through tauri-driver, whose proxy hop drops requests; the
//! app only accepts automation when `TAURI_WEBVIEW_AUTOMATION=true` is in its environment.
//!
//! Every process starts in a process group of its own and the whole group is ended when the
//! test ends, pass or fail, so no window or WebKit child outlives its test. When the test body
//! panics, a screenshot of the window is saved under `target/tmp/screenshots/` first.

// Each test binary uses a part of the harness.
#![allow(dead_code)]

pub mod audio;
pub mod desktop;
pub mod portal;

use std::fs::File;
use std::future::Future;
use std::io::{BufRead, BufReader};
use std::net::{TcpListener, TcpStream};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder, Locator};
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

/// How long a whole app start (X server, driver, window, first page) may take on a loaded
/// 2-core CI machine before the harness gives up with a message.
const START_TIMEOUT: Duration = Duration::from_secs(60);

/// How long one test's body may run in all; far above the longest test's own waits.
const BODY_TIMEOUT: Duration = Duration::from_secs(180);

/// How long a test waits for something to show up in the page.
pub const UI_TIMEOUT: Duration = Duration::from_secs(15);

tokio::task_local! {
    /// What the running test body last began (a key, a click, a wait, a screenshot): named
    /// when the body never finishes, since a WebDriver call that never answers leaves no other
    /// trace.
    static LAST_STEP: Arc<Mutex<String>>;
}

/// Notes that the test body begins `what` (outside [`App::run`], nothing is noted).
pub fn step(what: impl FnOnce() -> String) {
    let _ = LAST_STEP.try_with(|last| {
        *last.lock().unwrap_or_else(|poisoned| poisoned.into_inner()) = what();
    });
}

/// A child process that is the leader of its own process group. Dropping it ends the group:
/// SIGTERM first, so the driver can close the app, then SIGKILL for anything left.
pub struct ProcessGroup {
    child: Child,
}

impl ProcessGroup {
    pub fn spawn(name: &'static str, command: &mut Command) -> Self {
        let child = command.process_group(0).spawn().unwrap_or_else(|error| {
            panic!("could not start {name}: {error} (is it installed? run scripts/deps.sh test)")
        });
        Self { child }
    }

    /// The group's number (the leader's pid).
    pub fn id(&self) -> u32 {
        self.child.id()
    }

    /// The leader's standard output, once, when it was spawned with `Stdio::piped()`.
    pub fn take_stdout(&mut self) -> Option<std::process::ChildStdout> {
        self.child.stdout.take()
    }

    fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.child.try_wait().ok().flatten()
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        let group = Pid::from_raw(self.child.id() as i32);
        let _ = killpg(group, Signal::SIGTERM);
        let deadline = Instant::now() + Duration::from_secs(3);
        while Instant::now() < deadline {
            if self.exited().is_some() {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        // Children of the leader (the app, WebKit's helpers) may outlive it: end them too.
        let _ = killpg(group, Signal::SIGKILL);
        if self.exited().is_none() {
            let _ = self.child.wait();
        }
    }
}

/// A private X server for one test.
pub struct VirtualDisplay {
    pub display: String,
    _server: ProcessGroup,
}

impl VirtualDisplay {
    pub fn start() -> Self {
        // Xvfb writes the display number it chose to the descriptor named by -displayfd, so
        // parallel tests never race for a number. The pipe is created without CLOEXEC so the
        // child inherits its write end.
        let (read_end, write_end): (OwnedFd, OwnedFd) =
            nix::unistd::pipe().expect("a pipe for Xvfb's -displayfd");
        let server = ProcessGroup::spawn(
            "Xvfb",
            Command::new("Xvfb")
                .args(["-displayfd", &write_end.as_raw_fd().to_string()])
                .args([
                    "-screen",
                    "0",
                    "1280x800x24",
                    "-nolisten",
                    "tcp",
                    "-noreset",
                ])
                .stdout(Stdio::null())
                .stderr(Stdio::null()),
        );
        drop(write_end);
        let mut line = String::new();
        BufReader::new(File::from(read_end))
            .read_line(&mut line)
            .expect("reading the display number from Xvfb");
        let number: u32 = line
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("Xvfb did not report a display number (got {line:?})"));
        Self {
            display: format!(":{number}"),
            _server: server,
        }
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("an ephemeral port on loopback")
        .port()
}

pub fn screenshot_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("screenshots")
}

/// `target/oracle-trace/`: the cargo target dir is the parent of `CARGO_TARGET_TMPDIR`.
fn oracle_trace_root() -> PathBuf {
    let tmp = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    tmp.parent()
        .expect("CARGO_TARGET_TMPDIR is <target dir>/tmp")
        .join("oracle-trace")
}

/// The folders one test's app may write to, all under `target/tmp/e2e-data/<test>/`: the
/// user's data, config and log folders are never touched by a test.
#[derive(Clone, Debug)]
pub struct AppDirs {
    /// Everything of the test's (the secret service's home is here too).
    pub root: PathBuf,
    /// `WALKIE_DATA_DIR`: conversations are saved under `conversations/`.
    pub data: PathBuf,
    /// `WALKIE_CONFIG_DIR`: `settings.json`.
    pub config: PathBuf,
    /// `WALKIE_LOG_DIR`: the rotating log file.
    pub log: PathBuf,
    /// `WALKIE_LOCAL_TRACE`: what the app's local provider received (client events, call
    /// setups), under `target/oracle-trace/<test>/`, for the oracle (scripts/oracle/) to check.
    pub trace: PathBuf,
}

impl AppDirs {
    /// The test's folders, emptied.
    pub fn fresh(test_name: &str) -> Self {
        let root = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
            .join("e2e-data")
            .join(test_name);
        let _ = std::fs::remove_dir_all(&root);
        let trace = oracle_trace_root().join(test_name);
        let _ = std::fs::remove_dir_all(&trace);
        let dirs = Self {
            data: root.join("data"),
            config: root.join("config"),
            log: root.join("log"),
            trace,
            root,
        };
        for dir in [&dirs.data, &dirs.config, &dirs.log, &dirs.trace] {
            std::fs::create_dir_all(dir).expect("creating the test's folders");
        }
        dirs
    }
}

/// A private secret store for one test: its own D-Bus session bus with GNOME Keyring answering
/// as the Secret Service, its keyring files in the test's folder and unlocked with a test
/// password. The app finds it through `DBUS_SESSION_BUS_ADDRESS`, so a test never reads or
/// writes the keyring of the person running the tests.
pub struct SecretService {
    bus_address: String,
    // Field order is drop order: the keyring daemon before its bus.
    _keyring: ProcessGroup,
    _bus: ProcessGroup,
}

impl SecretService {
    /// The private session bus's address (`DBUS_SESSION_BUS_ADDRESS`).
    pub fn bus_address(&self) -> &str {
        &self.bus_address
    }

    pub fn start(dirs: &AppDirs) -> Self {
        let home = dirs.root.join("secret-service");
        let runtime = home.join("run");
        std::fs::create_dir_all(&runtime).expect("creating the secret service's folder");
        std::fs::set_permissions(
            &runtime,
            std::os::unix::fs::PermissionsExt::from_mode(0o700),
        )
        .expect("making its runtime folder private");
        let socket = home.join("bus");
        let bus_address = format!("unix:path={}", socket.display());
        let bus = ProcessGroup::spawn(
            "dbus-daemon",
            Command::new("dbus-daemon")
                .args(["--session", "--nofork"])
                .args(["--nopidfile", "--syslog-only"])
                .arg(format!("--address={bus_address}"))
                .stdout(Stdio::null())
                .stderr(Stdio::null()),
        );
        let deadline = Instant::now() + START_TIMEOUT;
        while !socket.exists() {
            assert!(
                Instant::now() < deadline,
                "dbus-daemon did not open {socket:?}"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        let mut keyring_command = Command::new("gnome-keyring-daemon");
        keyring_command
            .args(["--foreground", "--unlock", "--components=secrets"])
            .env("DBUS_SESSION_BUS_ADDRESS", &bus_address)
            .env("HOME", &home)
            .env("XDG_DATA_HOME", &home)
            .env("XDG_RUNTIME_DIR", &runtime)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let mut keyring = ProcessGroup::spawn("gnome-keyring-daemon", &mut keyring_command);
        {
            use std::io::Write;
            let mut stdin = keyring
                .child
                .stdin
                .take()
                .expect("the keyring's stdin is piped");
            stdin
                .write_all(b"walkie-test-keyring")
                .expect("unlocking the test keyring");
        }
        // Ready when the Secret Service name is owned on the bus.
        loop {
            if name_has_owner(&bus_address, "org.freedesktop.secrets") {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "GNOME Keyring did not take the Secret Service name (is gnome-keyring installed?)"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Self {
            bus_address,
            _keyring: keyring,
            _bus: bus,
        }
    }
}

/// Whether `name` is owned on the bus at `bus_address`.
fn name_has_owner(bus_address: &str, name: &str) -> bool {
    let owned = Command::new("dbus-send")
        .args(["--session", "--print-reply", "--dest=org.freedesktop.DBus"])
        .args(["/org/freedesktop/DBus", "org.freedesktop.DBus.NameHasOwner"])
        .arg(format!("string:{name}"))
        .env("DBUS_SESSION_BUS_ADDRESS", bus_address)
        .output()
        .expect("dbus-send (package dbus) is installed");
    String::from_utf8_lossy(&owned.stdout).contains("boolean true")
}

/// The bus name by which a running Walkie keeps a second launch from opening a window of its
/// own (the single-instance plugin's: the app's identifier and `.SingleInstance`).
const SINGLE_INSTANCE_NAME: &str = "app.walkie.desktop.SingleInstance";

/// How to start the app for a test.
#[derive(Default)]
pub struct Launch<'a> {
    /// Reuse these folders as they are (a restart); `None`: fresh ones for the test.
    pub dirs: Option<AppDirs>,
    /// The secret store the app sees; `None`: there is none (a bus address nobody listens on).
    pub secrets: Option<&'a SecretService>,
    /// Extra environment for the app (e.g. `OPENAI_API_KEY`).
    pub env: Vec<(&'static str, String)>,
    /// The app's command-line arguments (e.g. `--hidden`).
    pub args: Vec<&'static str>,
}

impl<'a> Launch<'a> {
    /// A start in folders the test prepared (or a restart in the same ones), seeing
    /// `secrets` as its secret store when there is one.
    pub fn in_dirs(dirs: &AppDirs, secrets: Option<&'a SecretService>) -> Self {
        Self {
            dirs: Some(dirs.clone()),
            secrets,
            ..Self::default()
        }
    }
}

/// The Walkie app in a real window, under WebDriver control.
pub struct WebviewApp {
    pub client: Client,
    test_name: &'static str,
    dirs: AppDirs,
    /// From asking WebKitWebDriver for a session (it starts the app) to the page being ready.
    pub launch_to_ready: Duration,
    // Field order is drop order: the driver (and the app, its child) go before the display.
    _driver: ProcessGroup,
    display: VirtualDisplay,
}

impl WebviewApp {
    /// Starts the app binary built for this test run in a fresh window, with empty folders and
    /// no secret store.
    pub async fn launch(test_name: &'static str) -> Self {
        Self::launch_with(test_name, Launch::default()).await
    }

    /// Starts the app as `launch` says.
    pub async fn launch_with(test_name: &'static str, launch: Launch<'_>) -> Self {
        let display = VirtualDisplay::start();
        let port = free_port();
        let log_path = screenshot_dir().join(format!("{test_name}.driver.log"));
        std::fs::create_dir_all(screenshot_dir()).expect("creating target/tmp/screenshots");
        let log = File::create(&log_path).expect("creating the WebDriver log file");
        // Data, settings and logs go to folders of the test's own; keys to its own keyring.
        let dirs = launch.dirs.unwrap_or_else(|| AppDirs::fresh(test_name));
        let bus_address = match launch.secrets {
            Some(secrets) => {
                // A restart on the same bus: the app before it may still hold the
                // single-instance name for a moment after it was killed, and a launch that
                // finds it taken hands over to that app and exits without a window.
                let deadline = Instant::now() + START_TIMEOUT;
                while name_has_owner(&secrets.bus_address, SINGLE_INSTANCE_NAME) {
                    assert!(
                        Instant::now() < deadline,
                        "the app before this launch still holds {SINGLE_INSTANCE_NAME}"
                    );
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                secrets.bus_address.clone()
            }
            None => format!("unix:path={}", dirs.root.join("no-bus").display()),
        };
        let driver = ProcessGroup::spawn(
            "WebKitWebDriver",
            Command::new("WebKitWebDriver")
                .arg(format!("--port={port}"))
                .env("DISPLAY", &display.display)
                .env("TAURI_WEBVIEW_AUTOMATION", "true")
                .env("WALKIE_DATA_DIR", &dirs.data)
                .env("WALKIE_CONFIG_DIR", &dirs.config)
                .env("WALKIE_LOG_DIR", &dirs.log)
                .env("WALKIE_LOCAL_TRACE", &dirs.trace)
                // The webview's own storage (localStorage: the first-run card's dismissal) is
                // the test's too, not shared with every other test's window.
                .env("XDG_DATA_HOME", dirs.root.join("xdg-data"))
                .env("DBUS_SESSION_BUS_ADDRESS", bus_address)
                // A key in the tester's environment must not make the app call OpenAI.
                .env_remove("OPENAI_API_KEY")
                .env_remove("AZURE_OPENAI_API_KEY")
                .envs(launch.env.iter().map(|(name, value)| (name, value)))
                .stdout(log.try_clone().expect("cloning the log handle"))
                .stderr(log),
        );
        let deadline = Instant::now() + START_TIMEOUT;
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "WebKitWebDriver did not listen on port {port} (log: {})",
                log_path.display()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }

        let mut capabilities = serde_json::Map::new();
        capabilities.insert(
            "webkitgtk:browserOptions".into(),
            serde_json::json!({ "binary": env!("CARGO_BIN_EXE_walkie"), "args": launch.args }),
        );
        let session_requested = Instant::now();
        let client = tokio::time::timeout(
            START_TIMEOUT,
            ClientBuilder::native()
                .capabilities(capabilities)
                .connect(&format!("http://127.0.0.1:{port}")),
        )
        .await
        .unwrap_or_else(|_| panic!("the app window did not open within {START_TIMEOUT:?}"))
        .expect("a WebDriver session with the app");
        wait_until_ready(&client, &log_path).await;
        let launch_to_ready = session_requested.elapsed();

        Self {
            client,
            test_name,
            dirs,
            launch_to_ready,
            _driver: driver,
            display,
        }
    }

    /// The X display the window is on (`:N`), for tools that drive native dialogs (xdotool).
    pub fn display(&self) -> &str {
        &self.display.display
    }

    /// The app's data folder (conversations are saved under `conversations/`).
    pub fn data_dir(&self) -> &std::path::Path {
        &self.dirs.data
    }

    /// The app's processes (Walkie and its WebKit helpers): every process in the driver's group
    /// but the driver itself.
    pub fn app_pids(&self) -> Vec<u32> {
        let driver = self._driver.id();
        group_pids(driver)
            .into_iter()
            .filter(|&pid| pid != driver)
            .collect()
    }

    /// The Walkie process itself (not its WebKit helpers), once the window is up.
    pub fn walkie_pid(&self) -> u32 {
        let binary = std::fs::canonicalize(env!("CARGO_BIN_EXE_walkie"))
            .expect("the app binary cargo built");
        self.app_pids()
            .into_iter()
            .find(|pid| {
                std::fs::read_link(format!("/proc/{pid}/exe")).is_ok_and(|exe| exe == binary)
            })
            .expect("Walkie runs in the driver's process group")
    }

    /// All the folders the app was given.
    pub fn dirs(&self) -> &AppDirs {
        &self.dirs
    }

    /// Runs the test body against the window. If the body panics, a screenshot is saved and
    /// the panic goes on; either way the session and every process are ended. A body that
    /// outlives [`BODY_TIMEOUT`] is stopped, and the failure names the last step it began.
    pub async fn run<F, Fut>(self, body: F)
    where
        F: FnOnce(Client) -> Fut,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let last_step = Arc::new(Mutex::new(String::from("(none yet)")));
        let mut body = tokio::spawn(LAST_STEP.scope(last_step.clone(), body(self.client.clone())));
        let outcome = match tokio::time::timeout(BODY_TIMEOUT, &mut body).await {
            Ok(outcome) => outcome,
            Err(_) => {
                // WebDriver calls have no deadline of their own: one that never answers (a
                // web process gone) would hold the whole run.
                body.abort();
                let path = self.save_screenshot("failure").await;
                eprintln!("screenshot of the failed test: {}", path.display());
                self.print_log_tail();
                let last_step = last_step
                    .lock()
                    .unwrap_or_else(|poisoned| poisoned.into_inner())
                    .clone();
                panic!(
                    "the test did not finish within {BODY_TIMEOUT:?}: a WebDriver call or a \
                     wait never returned; the last step begun: {last_step}"
                );
            }
        };
        if let Err(failure) = outcome {
            let path = self.save_screenshot("failure").await;
            eprintln!("screenshot of the failed test: {}", path.display());
            self.print_log_tail();
            let _ =
                tokio::time::timeout(Duration::from_secs(10), self.client.clone().close()).await;
            if failure.is_panic() {
                std::panic::resume_unwind(failure.into_panic());
            }
            panic!("the test body was cancelled: {failure}");
        }
        // Bounded: after a test that made the app exit, the driver has no browser to end.
        let _ = tokio::time::timeout(Duration::from_secs(10), self.client.clone().close()).await;
    }

    /// Prints the end of the app's log, so that a failure seen only in CI's output says what
    /// the app was doing (the folders are emptied by the next run of the test).
    fn print_log_tail(&self) {
        const LINES: usize = 40;
        let newest = std::fs::read_dir(&self.dirs.log)
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|entry| Some((entry.metadata().ok()?.modified().ok()?, entry.path())))
            .max();
        let Some((_, path)) = newest else {
            eprintln!("the app wrote no log under {}", self.dirs.log.display());
            return;
        };
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        eprintln!(
            "the app's log, {} (its last {LINES} lines):",
            path.display()
        );
        for line in &lines[lines.len().saturating_sub(LINES)..] {
            eprintln!("  {line}");
        }
    }

    /// Saves what the window shows now as `target/tmp/screenshots/<test>-<label>.png`.
    /// Falls back to grabbing the whole X screen when WebDriver cannot answer.
    pub async fn save_screenshot(&self, label: &str) -> PathBuf {
        let path = screenshot_dir().join(format!("{}-{label}.png", self.test_name));
        // Bounded: a webview in trouble can leave WebDriver's screenshot unanswered, and a
        // failing test must fail, not hang the run.
        match tokio::time::timeout(Duration::from_secs(10), self.client.screenshot()).await {
            Ok(Ok(png)) => std::fs::write(&path, png).expect("writing the screenshot"),
            _ => {
                let _ = Command::new("import")
                    .args(["-window", "root"])
                    .arg(&path)
                    .env("DISPLAY", &self.display.display)
                    .status();
            }
        }
        path
    }
}

/// Waits for the page to say its listeners are wired (`<html data-ready="true">`, set last by
/// ui/main.js), so a test never acts before the page can hear it.
async fn wait_until_ready(client: &Client, log_path: &std::path::Path) {
    let deadline = Instant::now() + START_TIMEOUT;
    loop {
        let ready = client
            .execute(
                "return document.documentElement.dataset.ready === 'true';",
                vec![],
            )
            .await;
        if matches!(ready, Ok(serde_json::Value::Bool(true))) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the page never became ready (last answer {ready:?}; driver log: {})",
            log_path.display()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Saves what the window shows as `target/tmp/screenshots/<name>.png` (the README's pictures in
/// docs/screenshots/ are copies of these).
pub async fn screenshot(client: &Client, name: &str) {
    step(|| format!("the screenshot {name}.png"));
    // WebKitWebDriver captures the last frame painted, which can be older than the page: wait
    // for two frames (or half a second, if none comes) first.
    //
    // Painted without GL (as the app does), WebKitWebDriver's screenshot waits for a paint
    // after it was asked, and a page where nothing changes never paints again: so the harness
    // repaints one pixel in the corner (two transparent colours: nothing shows) every 20 ms
    // for the next two seconds, while the screenshot is taken.
    client
        .execute_async(
            "const done = arguments[arguments.length - 1];
             let pixel = document.getElementById('walkie-harness-repaint');
             if (!pixel) {
               pixel = document.createElement('div');
               pixel.id = 'walkie-harness-repaint';
               pixel.setAttribute('aria-hidden', 'true');
               pixel.style.cssText = 'position:fixed;left:0;top:0;width:1px;height:1px;pointer-events:none;background-color:rgba(0,0,0,0)';
               document.documentElement.appendChild(pixel);
             }
             clearInterval(pixel.repainting);
             const until = Date.now() + 2000;
             pixel.repainting = setInterval(() => {
               pixel.style.backgroundColor =
                 pixel.style.backgroundColor === 'rgba(0, 0, 0, 0)' ? 'rgba(255, 255, 255, 0)' : 'rgba(0, 0, 0, 0)';
               if (Date.now() > until) clearInterval(pixel.repainting);
             }, 20);
             const timer = setTimeout(done, 500);
             requestAnimationFrame(() => requestAnimationFrame(() => { clearTimeout(timer); done(); }));",
            vec![],
        )
        .await
        .expect("waiting for a frame");
    step(|| format!("the screenshot {name}.png, taken after the frame"));
    let png = client
        .screenshot()
        .await
        .expect("a screenshot of the window");
    std::fs::create_dir_all(screenshot_dir()).expect("creating target/tmp/screenshots");
    std::fs::write(screenshot_dir().join(format!("{name}.png")), png).expect("writing it");
}

/// What the element renders as text (`innerText`), with runs of whitespace folded to one space.
///
/// WebKitWebDriver's own "element text" answers "" for some visible elements (a flex item with
/// `overflow: hidden` and a `::before` dot, for one), so the harness reads `innerText`.
pub async fn rendered_text(client: &Client, css: &str) -> Option<String> {
    let element = client.find(Locator::Css(css)).await.ok()?;
    let text = element.prop("innerText").await.ok()??;
    Some(text.split_whitespace().collect::<Vec<_>>().join(" "))
}

/// Clicks the element `css` selects, as a user would, and says which one when it cannot.
///
/// WebKitWebDriver scrolls the element into view and presses at its centre, but under load
/// the press now and then lands elsewhere: a dialog's Save pressed, the click delivered to
/// the number field typed in last, although `elementFromPoint` at that centre answered Save
/// just before (why is not known). Pressing a button takes the focus from a text field
/// anyway, so the harness takes it first, which made misses rarer, waits for the page to lay
/// out, and then clicks; it watches for the element's own `click` event. When none came it
/// says where the lost one went and presses again — a button, link or summary from the
/// keyboard (focused, then Enter: it fires the same `click`, and no point on the screen can
/// be wrong), anything else with the mouse — so a click the page did get is never repeated.
/// A click WebDriver itself refuses on a button is pressed from the keyboard the same way.
pub async fn click(client: &Client, css: &str) {
    const ATTEMPTS: usize = 3;
    step(|| format!("a click on {css}"));
    let mut by_keyboard = false;
    for attempt in 1..=ATTEMPTS {
        let element = client
            .find(Locator::Css(css))
            .await
            .unwrap_or_else(|error| panic!("no {css}: {error}"));
        let reference = serde_json::to_value(&element).expect("an element reference is JSON");
        let watched = client
            .execute_async(
                r#"const [element, done] = arguments;
                   window.__walkieClick = { seen: false, went: "nowhere" };
                   window.addEventListener("click", (event) => {
                     const target = event.target;
                     window.__walkieClick.went =
                       `${target.tagName.toLowerCase()}#${target.id} at ${event.clientX},${event.clientY}`;
                   }, { once: true, capture: true });
                   element.addEventListener("click", () => { window.__walkieClick.seen = true; },
                     { once: true, capture: true });
                   const active = document.activeElement;
                   if (element.matches("button, [role=button]") && active !== element
                       && active?.matches("input, textarea, [contenteditable]")) {
                     active.blur();
                   }
                   requestAnimationFrame(() => requestAnimationFrame(() =>
                     done({ disabled: element.disabled === true,
                            keyboard: element.matches("button, summary, a[href], [role=button]") })));"#,
                vec![reference],
            )
            .await
            .unwrap_or_else(|error| panic!("could not watch {css} for a click: {error}"));
        let takes_keys = watched.get("keyboard") == Some(&serde_json::Value::Bool(true));
        let disabled = watched.get("disabled") == Some(&serde_json::Value::Bool(true));
        if by_keyboard {
            let enter: char = fantoccini::key::Key::Enter.into();
            element
                .send_keys(&enter.to_string())
                .await
                .unwrap_or_else(|error| panic!("could not press Enter on {css}: {error}"));
        } else if let Err(error) = element.click().await {
            // WebKitWebDriver now and then refuses the click itself, with an empty error, on a
            // button that is plainly there: a button takes it from the keyboard instead.
            if takes_keys && attempt < ATTEMPTS {
                eprintln!(
                    "the click on {css} was refused ({error}); pressing it from the keyboard"
                );
                by_keyboard = true;
                continue;
            }
            panic!("could not click {css}: {error}");
        }
        if disabled {
            // A disabled control takes no click; the test asserts what that leaves.
            return;
        }
        let deadline = Instant::now() + Duration::from_secs(3);
        let went = loop {
            match client
                .execute("return window.__walkieClick ?? null;", vec![])
                .await
            {
                Ok(serde_json::Value::Object(click)) => {
                    if click.get("seen") == Some(&serde_json::Value::Bool(true)) {
                        return;
                    }
                    if Instant::now() >= deadline {
                        break click.get("went").cloned();
                    }
                }
                // The click closed the window or replaced the page: it arrived.
                Ok(_) | Err(_) => return,
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        };
        by_keyboard = takes_keys;
        eprintln!(
            "click {attempt} of {ATTEMPTS} on {css} never reached it (it went to {went:?}); \
             pressing again{}",
            if by_keyboard {
                ", from the keyboard"
            } else {
                ""
            }
        );
    }
    panic!("{css} never received a click in {ATTEMPTS} attempts");
}

/// Waits until the element's rendered text equals `expected`, and says what it showed if not.
pub async fn wait_for_text(client: &Client, css: &str, expected: &str) {
    let shown = wait_for(client, css, |text| text == expected).await;
    debug_assert_eq!(shown, expected);
}

/// Waits until the element's rendered text satisfies `wanted`; returns that text. Polls every
/// 10 ms, so short-lived states are seen too.
pub async fn wait_for(client: &Client, css: &str, wanted: impl Fn(&str) -> bool) -> String {
    wait_for_within(client, css, UI_TIMEOUT, wanted).await
}

/// [`wait_for`] with a deadline of its own, for what the app itself takes long to show (a
/// request timing out).
pub async fn wait_for_within(
    client: &Client,
    css: &str,
    within: Duration,
    wanted: impl Fn(&str) -> bool,
) -> String {
    match try_wait_for_within(client, css, within, wanted).await {
        Ok(text) => text,
        Err(last) => panic!("{css} still shows {last:?} after {within:?}"),
    }
}

/// [`wait_for_within`] for a caller that says more when the wait runs out: the text last
/// shown is the error.
pub async fn try_wait_for_within(
    client: &Client,
    css: &str,
    within: Duration,
    wanted: impl Fn(&str) -> bool,
) -> Result<String, Option<String>> {
    step(|| format!("waiting for {css}"));
    let deadline = Instant::now() + within;
    let mut last = None;
    while Instant::now() < deadline {
        last = rendered_text(client, css).await;
        if let Some(text) = &last
            && wanted(text)
        {
            return Ok(text.clone());
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    Err(last)
}

/// The client events the app's local provider received, as JSON, in order (its trace file,
/// `client-events.jsonl` under [`AppDirs::trace`]).
pub fn client_events(trace_file: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(trace_file)
        .expect("the provider's trace")
        .lines()
        .filter_map(|line| {
            let record: serde_json::Value = serde_json::from_str(line).ok()?;
            serde_json::from_str(record["text"].as_str()?).ok()
        })
        .collect()
}

/// Resizes the window on `display` to `width` × `height`, as a window manager does (an X
/// request, by xdotool), and waits until the page has that size.
pub async fn resize_window(client: &Client, display: &str, width: u32, height: u32) {
    step(|| format!("resizing the window to {width}×{height}"));
    let found = Command::new("xdotool")
        // Only the mapped window: GTK's hidden group leader has the same name.
        .args(["search", "--onlyvisible", "--name", "^Walkie$"])
        .env("DISPLAY", display)
        .output()
        .expect("xdotool (scripts/deps.sh test installs it)");
    let ids = String::from_utf8_lossy(&found.stdout);
    let window = ids
        .lines()
        .next()
        .unwrap_or_else(|| panic!("Walkie's window is not on {display}"));
    let status = Command::new("xdotool")
        .args([
            "windowsize",
            window.trim(),
            &width.to_string(),
            &height.to_string(),
        ])
        .env("DISPLAY", display)
        .status()
        .expect("xdotool");
    assert!(status.success(), "xdotool could not resize the window");
    wait_for_script(
        client,
        "return [window.outerWidth, window.outerHeight];",
        serde_json::json!([width, height]),
    )
    .await;
}

/// Waits until `script` (a function body that returns JSON) returns `expected`, as
/// [`wait_for`] waits on text: for what the page shows but does not say (a picture loaded).
pub async fn wait_for_script(client: &Client, script: &str, expected: serde_json::Value) {
    step(|| format!("waiting for {script} to be {expected}"));
    let deadline = Instant::now() + UI_TIMEOUT;
    let mut last = serde_json::Value::Null;
    while Instant::now() < deadline {
        last = client
            .execute(script, vec![])
            .await
            .expect("WebDriver runs the script");
        if last == expected {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("{script} still returns {last} after {UI_TIMEOUT:?}, not {expected}");
}

/// Waits until process `pid` has ended (gone, or a zombie its parent has not reaped yet);
/// panics after `within`.
pub async fn wait_until_exited(pid: u32, within: Duration) {
    let deadline = Instant::now() + within;
    loop {
        let state = std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|stat| {
                let (_, after_comm) = stat.rsplit_once(')')?;
                after_comm.split_whitespace().next().map(str::to_owned)
            });
        if state
            .as_deref()
            .is_none_or(|state| state == "Z" || state == "X")
        {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "process {pid} is still running (state {state:?}) after {within:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Every file under `dir` (recursively) whose bytes contain `needle`.
pub fn files_containing(dir: &Path, needle: &str) -> (Vec<String>, usize) {
    let mut found = Vec::new();
    let mut files = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if let Ok(bytes) = std::fs::read(&path) {
                files += 1;
                if !needle.is_empty()
                    && bytes
                        .windows(needle.len())
                        .any(|window| window == needle.as_bytes())
                {
                    found.push(path.display().to_string());
                }
            }
        }
    }
    (found, files)
}

/// The processes one of whose arguments is `arg` (a zombie has none: it is gone but for its
/// reaping).
pub fn processes_with_arg(arg: &str) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
            let cmdline = std::fs::read(entry.path().join("cmdline")).ok()?;
            cmdline
                .split(|byte| *byte == 0)
                .any(|word| word == arg.as_bytes())
                .then_some(pid)
        })
        .collect()
}

/// Kills the processes [`processes_with_arg`] finds when dropped: what a failed test leaves
/// would hold its output open, and the run would wait on it.
pub struct KillTagged(pub String);

impl Drop for KillTagged {
    fn drop(&mut self) {
        for pid in processes_with_arg(&self.0) {
            let _ = nix::sys::signal::kill(Pid::from_raw(pid as i32), Signal::SIGKILL);
        }
    }
}

/// Every process in process group `group`, its leader included.
pub fn group_pids(group: u32) -> Vec<u32> {
    let mut pids = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        // /proc/<pid>/stat: "pid (comm) state ppid pgrp ..."; comm may hold spaces.
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        let Some(after_comm) = stat.rsplit_once(')').map(|(_, rest)| rest) else {
            continue;
        };
        if after_comm.split_whitespace().nth(2) == Some(group.to_string().as_str()) {
            pids.push(pid);
        }
    }
    pids
}

/// Holds Space down (`true`) or lets it go, as a keyboard does: the page's push-to-talk key.
pub async fn space(client: &Client, down: bool) {
    use fantoccini::actions::{InputSource, KeyAction, KeyActions};
    let space: char = fantoccini::key::Key::Space.into();
    step(|| format!("the space key {}", if down { "down" } else { "up" }));
    let action = if down {
        KeyAction::Down { value: space }
    } else {
        KeyAction::Up { value: space }
    };
    client
        .perform_actions(KeyActions::new("keyboard".into()).then(action))
        .await
        .expect("WebDriver sends the key");
}

/// Presses `key` (down and up) on the focused element.
pub async fn press(client: &Client, key: fantoccini::key::Key) {
    use fantoccini::actions::{InputSource, KeyAction, KeyActions};
    step(|| format!("the key {key:?}"));
    let key: char = key.into();
    client
        .perform_actions(
            KeyActions::new("keyboard".into())
                .then(KeyAction::Down { value: key })
                .then(KeyAction::Up { value: key }),
        )
        .await
        .expect("WebDriver sends the key");
}

/// Saves `token` as the custom provider's key from Settings (the key field, then "Save key")
/// and closes the dialog. A local provider started by a test wants the token it made for its
/// run, as any server with keys would.
pub async fn save_custom_key(client: &Client, token: &str) {
    open_settings(client).await;
    type_api_key(client, token).await;
    click(client, "#settings [data-action=save-key]").await;
    wait_for(client, "#settings [data-role=key-state]", |text| {
        text.starts_with("A key is saved")
    })
    .await;
    click(client, "#settings button[value=close]").await;
}

/// Types `key` into the settings dialog's key field, as a person would (saving nothing).
pub async fn type_api_key(client: &Client, key: &str) {
    client
        .find(Locator::Css("#settings [name=apiKey]"))
        .await
        .expect("the key field")
        .send_keys(key)
        .await
        .expect("typing the key");
}

/// Points the custom provider at `base_url` in Settings and saves: the app calls it at once
/// (while a call is under way, that call goes on until the new one answers).
pub async fn choose_custom_server(client: &Client, base_url: &str) {
    open_settings(client).await;
    set_field(client, "provider", "custom".into()).await;
    set_field(client, "customBaseUrl", base_url.into()).await;
    click(client, "#settings button[value=save]").await;
    wait_for(client, "#settings [data-role=message]", |text| {
        text == "Saved."
    })
    .await;
    click(client, "#settings button[value=close]").await;
}

/// Ends the call under way the way a user would with settings whose call fails: points the
/// custom provider at an address where nothing listens (the call under way goes on, and the
/// window says the new settings' call failed), then starts a new conversation with them,
/// which is refused. Afterwards there is no call, and saved settings are dialled at once.
/// Returns the status line then.
pub async fn end_the_call_on_a_dead_address(client: &Client) -> String {
    choose_custom_server(client, "http://127.0.0.1:9").await;
    wait_for(client, "#status", |status| {
        status.starts_with("Call goes on: the new settings' call to 127.0.0.1 failed")
    })
    .await;
    click(client, "#connect").await;
    wait_for(client, "#status", |status| {
        status.starts_with("Not connected")
    })
    .await
}

/// Chooses the server at `base_url` in Settings, with `token` as its key, saves, and waits
/// for the call to it to be ready.
pub async fn talk_to_custom_server(client: &Client, base_url: &str, token: &str) {
    choose_custom_server(client, base_url).await;
    save_custom_key(client, token).await;
    wait_for(client, "#status", |status| {
        status.starts_with("Ready (127.0.0.1)")
    })
    .await;
}

/// Opens the settings dialog and waits until it is open.
pub async fn open_settings(client: &Client) {
    click(client, "#open-settings").await;
    // The dialog keeps its content when closed: wait for it to be open, not for its text.
    let deadline = Instant::now() + UI_TIMEOUT;
    while client
        .execute("return document.getElementById('settings').open;", vec![])
        .await
        .expect("reading the dialog")
        != serde_json::Value::Bool(true)
    {
        assert!(
            Instant::now() < deadline,
            "the settings dialog did not open"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    wait_for(client, "#settings [data-role=config-file]", |text| {
        text.ends_with("settings.json")
    })
    .await;
}

/// Opens the dialog's Advanced part, as the user would, unless it is open.
pub async fn open_advanced(client: &Client) {
    let open = client
        .execute(
            "return document.querySelector('#settings [data-role=advanced]').open;",
            vec![],
        )
        .await
        .unwrap();
    if open != serde_json::Value::Bool(true) {
        click(client, "#settings [data-role=advanced] summary").await;
    }
}

/// Sets a field the way the user's input would: value (or checkbox state), then the events.
pub async fn set_field(client: &Client, name: &str, value: serde_json::Value) {
    let found = client
        .execute(
            r#"const [name, value] = arguments;
               const field = document.querySelector(`#settings [name="${name}"]`);
               if (!field) return false;
               if (field.type === "checkbox") field.checked = value; else field.value = value;
               field.dispatchEvent(new Event("input", { bubbles: true }));
               field.dispatchEvent(new Event("change", { bubbles: true }));
               return true;"#,
            vec![name.into(), value],
        )
        .await
        .unwrap();
    assert_eq!(
        found,
        serde_json::Value::Bool(true),
        "no field named {name}"
    );
}

/// Types `path` into the native (GTK) file dialog titled `title` and confirms it, the way a
/// user would: the dialog is a window of its own, out of WebDriver's reach. `reach_field` is
/// the key that puts the focus in the dialog's path field (`ctrl+a` selects a save dialog's
/// name; `ctrl+l` opens a folder picker's location).
pub async fn type_into_native_dialog(
    display: &str,
    title: &str,
    reach_field: &str,
    path: &std::path::Path,
) {
    let deadline = Instant::now() + UI_TIMEOUT;
    let window = loop {
        let found = Command::new("xdotool")
            .args(["search", "--name", title])
            .env("DISPLAY", display)
            .output()
            .expect("xdotool (scripts/deps.sh test installs it)");
        let ids = String::from_utf8_lossy(&found.stdout);
        if let Some(id) = ids.lines().next() {
            break id.trim().to_owned();
        }
        assert!(
            Instant::now() < deadline,
            "no window titled {title:?} opened"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    // Let GTK map the dialog and focus its field before typing.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let status = Command::new("xdotool")
        .args(["windowfocus", "--sync", &window])
        .args(["key", "--clearmodifiers", reach_field])
        .args(["type", "--delay", "5", &path.to_string_lossy()])
        .env("DISPLAY", display)
        .status()
        .expect("xdotool");
    assert!(status.success(), "xdotool could not type into the dialog");
    tokio::time::sleep(Duration::from_millis(200)).await;
    let status = Command::new("xdotool")
        .args(["key", "--window", &window, "Return"])
        .env("DISPLAY", display)
        .status()
        .expect("xdotool");
    assert!(status.success(), "xdotool could not confirm the dialog");
}

/// Runs axe-core (the WCAG 2 A and AA rules) on what the window shows now and returns each
/// violation as "rule: what it asks (how many elements; the first one)". axe-core comes from
/// npm (`package.json`; scripts/test.sh runs `npm ci` first).
pub async fn accessibility_violations(client: &Client) -> Vec<String> {
    let axe_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("node_modules/axe-core/axe.min.js");
    let axe = std::fs::read_to_string(&axe_path)
        .unwrap_or_else(|error| panic!("{}: {error} (run `npm ci`)", axe_path.display()));
    client
        .execute(&format!("{axe}\nreturn typeof axe;"), vec![])
        .await
        .expect("injecting axe-core");
    let violations = client
        .execute_async(
            r#"const done = arguments[arguments.length - 1];
               axe.run(document, { runOnly: { type: "tag", values: ["wcag2a", "wcag2aa"] } })
                 .then((result) => done(result.violations.map((violation) =>
                   `${violation.id}: ${violation.help} (${violation.nodes.length}; ${violation.nodes[0]?.target?.join(" ")})`)))
                 .catch((error) => done([`axe-core failed: ${error}`]));"#,
            vec![],
        )
        .await
        .expect("running axe-core");
    serde_json::from_value(violations).expect("a list of violations")
}

/// Holds the key, says `seconds` of speech-like sound, releases, and waits for the reply to
/// be in the transcript and the app ready again.
pub async fn spoken_exchange(client: &Client, seconds: f64, replies_before: usize) {
    spoken_turn(client, seconds, replies_before).await;
    wait_for_state(client, "ready").await;
}

/// Holds the key, says `seconds` of speech-like sound, releases, and waits for the reply to
/// be in the transcript (what the app does next is the caller's to wait for: a spent budget
/// ends the call there).
pub async fn spoken_turn(client: &Client, seconds: f64, replies_before: usize) {
    space(client, true).await;
    wait_for(client, "#status", |status| status.starts_with("Listening")).await;
    let words = audio::speech_like(seconds);
    tokio::task::spawn_blocking(move || audio::PulseStream::speak_into_microphone(&words))
        .await
        .expect("the microphone stream");
    space(client, false).await;
    let deadline = tokio::time::Instant::now() + UI_TIMEOUT;
    loop {
        let replies = texts(client, "assistant").await;
        if replies.len() > replies_before
            && replies
                .last()
                .is_some_and(|reply| reply.contains("played your"))
        {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no reply after {replies_before}: {replies:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The status line's state (its `data-state`).
pub async fn status_state(client: &Client) -> Option<String> {
    client
        .find(Locator::Css("#status"))
        .await
        .expect("the status line")
        .attr("data-state")
        .await
        .expect("its state")
}

/// From now on, every status the line shows is kept, however briefly ([`statuses_seen`]):
/// a state that lasts less than one of the harness's round trips is still seen.
pub async fn watch_statuses(client: &Client) {
    client
        .execute(
            "window.statusesSeen = [];
             const status = document.getElementById('status');
             new MutationObserver(() => window.statusesSeen.push(status.innerText))
               .observe(status, {childList: true, subtree: true, characterData: true});
             return true;",
            vec![],
        )
        .await
        .unwrap();
}

/// The statuses shown since [`watch_statuses`], in order.
pub async fn statuses_seen(client: &Client) -> Vec<String> {
    let seen = client
        .execute("return window.statusesSeen ?? [];", vec![])
        .await
        .unwrap();
    serde_json::from_value(seen).unwrap()
}

/// Waits until a status since [`watch_statuses`] satisfies `wanted`; returns it.
pub async fn wait_until_shown(client: &Client, wanted: impl Fn(&str) -> bool) -> String {
    wait_until_shown_within(client, UI_TIMEOUT, wanted).await
}

/// [`wait_until_shown`], for a status the app shows only after `within` of its own.
pub async fn wait_until_shown_within(
    client: &Client,
    within: Duration,
    wanted: impl Fn(&str) -> bool,
) -> String {
    let deadline = Instant::now() + within;
    loop {
        let seen = statuses_seen(client).await;
        if let Some(shown) = seen.iter().find(|status| wanted(status)) {
            return shown.clone();
        }
        assert!(
            Instant::now() < deadline,
            "no status like that after {within:?}; seen: {seen:?}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Waits until the status line is in `state` (its `data-state`: "ready", "error"…), whatever
/// its sentence.
pub async fn wait_for_state(client: &Client, state: &str) {
    let deadline = Instant::now() + UI_TIMEOUT;
    loop {
        let shown = status_state(client).await;
        if shown.as_deref() == Some(state) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the status is still {shown:?}, not {state:?}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// The texts of the transcript's messages of `role`, in order.
pub async fn texts(client: &Client, role: &str) -> Vec<String> {
    let css = format!("#transcript article[data-role='{role}'] .message-text");
    let mut texts = Vec::new();
    for element in client.find_all(Locator::Css(&css)).await.expect("a query") {
        texts.push(element.text().await.unwrap_or_default());
    }
    texts
}

/// The messages' texts of the one conversation with turns saved under `data_dir`, in order.
/// Asserts there is exactly one (a call to the built-in provider before the settings changed
/// may have saved an empty one beside it).
pub fn texts_of_the_saved_conversation(data_dir: &Path, why_one: &str) -> Vec<String> {
    let store = walkie_store::Store::new(walkie_store::conversations_dir(data_dir));
    let saved: Vec<_> = store
        .list()
        .expect("the conversations")
        .into_iter()
        .filter(|saved| saved.turn_count > 0)
        .collect();
    assert_eq!(saved.len(), 1, "{why_one}: {saved:?}");
    let conversation = store.open(&saved[0].id).expect("the conversation");
    conversation
        .messages()
        .iter()
        .map(|message| message.content().unwrap_or_default().to_owned())
        .collect()
}

/// The MCP test server beside the test binaries (`cargo test --workspace` builds it with
/// walkie-mcp's test-server feature).
pub fn mcp_test_server() -> PathBuf {
    let debug = std::env::current_exe()
        .expect("the test's path")
        .parent()
        .and_then(std::path::Path::parent)
        .expect("target/debug")
        .to_owned();
    let server = debug.join("walkie-mcp-test-server");
    assert!(
        server.is_file(),
        "{} is missing: build it with `cargo build -p walkie-mcp --features test-server`",
        server.display()
    );
    server
}
