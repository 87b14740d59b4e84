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

pub mod audio;

use std::fs::File;
use std::future::Future;
use std::io::{BufRead, BufReader};
use std::net::{TcpListener, TcpStream};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder, Locator};
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

/// How long a whole app start (X server, driver, window, first page) may take on a loaded
/// 2-core CI machine before the harness gives up with a message.
const START_TIMEOUT: Duration = Duration::from_secs(60);

/// How long a test waits for something to show up in the page.
pub const UI_TIMEOUT: Duration = Duration::from_secs(15);

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

fn screenshot_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("screenshots")
}

/// The Walkie app in a real window, under WebDriver control.
pub struct WebviewApp {
    pub client: Client,
    test_name: &'static str,
    /// The app's data folder (`WALKIE_DATA_DIR`): empty at launch, this test's alone.
    data_dir: PathBuf,
    // Field order is drop order: the driver (and the app, its child) go before the display.
    _driver: ProcessGroup,
    display: VirtualDisplay,
}

impl WebviewApp {
    /// Starts the app binary built for this test run in a fresh window.
    pub async fn launch(test_name: &'static str) -> Self {
        let display = VirtualDisplay::start();
        let port = free_port();
        let log_path = screenshot_dir().join(format!("{test_name}.driver.log"));
        std::fs::create_dir_all(screenshot_dir()).expect("creating target/tmp/screenshots");
        let log = File::create(&log_path).expect("creating the WebDriver log file");
        // Conversations go to a folder of the test's own, never the user's data directory.
        let data_dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
            .join("e2e-data")
            .join(test_name);
        let _ = std::fs::remove_dir_all(&data_dir);
        std::fs::create_dir_all(&data_dir).expect("creating the test's data folder");
        let driver = ProcessGroup::spawn(
            "WebKitWebDriver",
            Command::new("WebKitWebDriver")
                .arg(format!("--port={port}"))
                .env("DISPLAY", &display.display)
                .env("TAURI_WEBVIEW_AUTOMATION", "true")
                .env("WALKIE_DATA_DIR", &data_dir)
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
            serde_json::json!({ "binary": env!("CARGO_BIN_EXE_walkie"), "args": [] }),
        );
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

        Self {
            client,
            test_name,
            data_dir,
            _driver: driver,
            display,
        }
    }

    /// The X display the window is on (`:N`), for tools that drive native dialogs (xdotool).
    #[allow(dead_code)] // each test binary uses a part of the support module
    pub fn display(&self) -> &str {
        &self.display.display
    }

    /// The app's data folder (conversations are saved under `conversations/`).
    pub fn data_dir(&self) -> &std::path::Path {
        &self.data_dir
    }

    /// Runs the test body against the window. If the body panics, a screenshot is saved and
    /// the panic goes on; either way the session and every process are ended.
    pub async fn run<F, Fut>(self, body: F)
    where
        F: FnOnce(Client) -> Fut,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let outcome = tokio::spawn(body(self.client.clone())).await;
        if let Err(failure) = outcome {
            let path = self.save_screenshot("failure").await;
            eprintln!("screenshot of the failed test: {}", path.display());
            self.client.clone().close().await.ok();
            if failure.is_panic() {
                std::panic::resume_unwind(failure.into_panic());
            }
            panic!("the test body was cancelled: {failure}");
        }
        self.client.clone().close().await.ok();
    }

    /// Saves what the window shows now as `target/tmp/screenshots/<test>-<label>.png`.
    /// Falls back to grabbing the whole X screen when WebDriver cannot answer.
    pub async fn save_screenshot(&self, label: &str) -> PathBuf {
        let path = screenshot_dir().join(format!("{}-{label}.png", self.test_name));
        match self.client.screenshot().await {
            Ok(png) => std::fs::write(&path, png).expect("writing the screenshot"),
            Err(_) => {
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

/// Waits until the element's rendered text equals `expected`, and says what it showed if not.
pub async fn wait_for_text(client: &Client, css: &str, expected: &str) {
    let shown = wait_for(client, css, |text| text == expected).await;
    debug_assert_eq!(shown, expected);
}

/// Waits until the element's rendered text satisfies `wanted`; returns that text. Polls every
/// 10 ms, so short-lived states are seen too.
pub async fn wait_for(client: &Client, css: &str, wanted: impl Fn(&str) -> bool) -> String {
    let deadline = Instant::now() + UI_TIMEOUT;
    let mut last = None;
    while Instant::now() < deadline {
        last = rendered_text(client, css).await;
        if let Some(text) = &last
            && wanted(text)
        {
            return text.clone();
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("{css} still shows {last:?} after {UI_TIMEOUT:?}");
}
