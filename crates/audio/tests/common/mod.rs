//! What the real-time tests share: the test PulseAudio server check, pacat/parec clients on
//! its null sinks, and signals.

#![allow(dead_code)]

use std::io::Read;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub fn require_test_server() {
    let server = std::env::var("PULSE_SERVER").unwrap_or_default();
    assert!(
        server.starts_with("unix:") && std::path::Path::new(&server[5..]).exists(),
        "these tests need the test PulseAudio server: run scripts/test.sh, or \
         `export PULSE_SERVER=$(scripts/pulse.sh start target/pulse)` first (PULSE_SERVER={server:?})"
    );
}

/// Never zero, so every sample that reaches a sink can be counted; not periodic within a
/// second, so a repeat or a reordering shows.
pub fn pattern(len: usize) -> Vec<i16> {
    (0..len)
        .map(|i| {
            let noise = ((i as u32).wrapping_mul(2_654_435_761) >> 18) as i16 & 0x1FFF;
            noise + 1
        })
        .collect()
}

/// A sine at `frequency_hz` and `amplitude` (of full scale), 48 kHz.
pub fn tone(frequency_hz: f32, amplitude: f32, len: usize) -> Vec<i16> {
    (0..len)
        .map(|i| {
            let phase = 2.0 * std::f32::consts::PI * frequency_hz * i as f32 / 48_000.0;
            (phase.sin() * amplitude * 32_767.0).round() as i16
        })
        .collect()
}

pub fn to_bytes(samples: &[i16]) -> Vec<u8> {
    samples.iter().flat_map(|s| s.to_le_bytes()).collect()
}

pub fn from_bytes(bytes: &[u8]) -> Vec<i16> {
    bytes
        .chunks_exact(2)
        .map(|b| i16::from_le_bytes([b[0], b[1]]))
        .collect()
}

// Each test binary uses some of these.
#[allow(unused_imports)]
pub use walkie_dsp::testkit::{rms_dbfs, tone_level_dbfs};

/// A pacat/parec process, ended when dropped. A reader thread drains parec's output as it
/// comes, so the pipe never fills and the server never drops what was recorded.
pub struct PulseClient(
    pub Child,
    Option<std::thread::JoinHandle<()>>,
    std::sync::Arc<std::sync::Mutex<Vec<u8>>>,
);

impl PulseClient {
    /// The stream buffers 200 ms: on a loaded 2-core machine a 10 ms buffer under- or overruns
    /// when the client is not scheduled in time, which would insert or drop samples.
    pub fn spawn(program: &str, device: &str) -> Self {
        let mut child = Command::new(program)
            .args([
                "--device",
                device,
                "--format=s16le",
                "--rate=48000",
                "--channels=1",
                "--raw",
                "--latency-msec=200",
            ])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|error| panic!("could not start {program}: {error}"));
        let mut stdout = child.stdout.take().expect("the client's stdout is piped");
        let recorded = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let reader = std::thread::spawn({
            let recorded = recorded.clone();
            move || {
                let mut chunk = [0u8; 4_096];
                while let Ok(read @ 1..) = stdout.read(&mut chunk) {
                    recorded
                        .lock()
                        .expect("no reader of the recording panics")
                        .extend_from_slice(&chunk[..read]);
                }
            }
        });
        Self(child, Some(reader), recorded)
    }

    /// The samples a recorder has written so far.
    fn recorded_so_far(&self) -> Vec<i16> {
        from_bytes(&self.2.lock().expect("no reader of the recording panics"))
    }

    /// Waits until the recorder writes: its stream is connected and the server sends it
    /// periods (a running null sink's monitor sends silence).
    pub fn wait_until_recording(&self) {
        wait_until("the recorder to write", Duration::from_secs(5), || {
            !self.recorded_so_far().is_empty()
        });
    }

    /// Waits until the recording holds at least `samples` non-zero samples, or `limit` passes
    /// (the caller's assertion then says what is missing): what a sink played reaches its
    /// monitor's recorder a server buffer later, which a loaded machine stretches.
    pub fn wait_for_nonzero(&self, samples: usize, limit: Duration) {
        let started = Instant::now();
        while self.recorded_so_far().iter().filter(|&&s| s != 0).count() < samples
            && started.elapsed() < limit
        {
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Plays `samples` into a sink (pacat), in the background: pacat reads its input as it
    /// plays, so the feeding happens on a thread of its own.
    pub fn play(device: &str, samples: &[i16]) -> Self {
        use std::io::Write;
        let mut player = Self::spawn("pacat", device);
        let mut stdin = player.0.stdin.take().expect("pacat's stdin is piped");
        let bytes = to_bytes(samples);
        std::thread::spawn(move || {
            let _ = stdin.write_all(&bytes);
        });
        player
    }

    /// Ends the client and returns everything it wrote.
    pub fn end(mut self) -> Vec<u8> {
        let _ = Command::new("kill").arg(self.0.id().to_string()).status();
        let _ = self.0.wait();
        self.1
            .take()
            .expect("the reader runs until the client ends")
            .join()
            .expect("the reader thread only reads");
        std::mem::take(&mut *self.2.lock().expect("no reader of the recording panics"))
    }
}

impl Drop for PulseClient {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Takes the engine's events until `stop` says so; returns them all. Fails, naming `what` and
/// listing what came instead, if `limit` passes first.
pub fn events_until(
    events: &std::sync::mpsc::Receiver<walkie_audio::engine::EngineEvent>,
    what: &str,
    limit: Duration,
    mut stop: impl FnMut(&walkie_audio::engine::EngineEvent) -> bool,
) -> Vec<walkie_audio::engine::EngineEvent> {
    let deadline = Instant::now() + limit;
    let mut seen = Vec::new();
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let event = events
            .recv_timeout(left)
            .unwrap_or_else(|_| panic!("timed out waiting for {what}; saw {seen:?}"));
        let done = stop(&event);
        seen.push(event);
        if done {
            return seen;
        }
    }
}

pub fn wait_until(what: &str, limit: Duration, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// An extra null sink on the test server (its monitor is an extra source), removed when
/// dropped.
pub struct SpareSink {
    pub name: String,
    module: Option<String>,
    _keep_alive: PulseClient,
}

impl SpareSink {
    pub const NAME: &str = "walkie_spare";

    pub fn load() -> Self {
        Self::load_named(Self::NAME)
    }

    pub fn load_named(name: &str) -> Self {
        let output = Command::new("pactl")
            .args([
                "load-module",
                "module-null-sink",
                &format!("sink_name={name}"),
                "rate=48000",
                "channels=1",
                "format=s16le",
                "norewinds=1",
            ])
            .output()
            .expect("pactl runs");
        assert!(output.status.success(), "the spare sink loads: {output:?}");
        let module = String::from_utf8_lossy(&output.stdout).trim().to_owned();
        // Like scripts/pulse.sh: a reader keeps the idle sink rendering in small blocks.
        let keep_alive = PulseClient::spawn("parec", &format!("{name}.monitor"));
        Self {
            name: name.to_owned(),
            module: Some(module),
            _keep_alive: keep_alive,
        }
    }

    pub fn unload(&mut self) {
        if let Some(module) = self.module.take() {
            let status = Command::new("pactl")
                .args(["unload-module", &module])
                .status()
                .expect("pactl runs");
            assert!(status.success(), "the spare sink unloads");
        }
    }
}

impl Drop for SpareSink {
    fn drop(&mut self) {
        if let Some(module) = self.module.take() {
            let _ = Command::new("pactl")
                .args(["unload-module", &module])
                .status();
        }
    }
}

/// Runs `pactl` with `args` and checks that it succeeded.
pub fn pactl(args: &[&str]) {
    let status = Command::new("pactl")
        .args(args)
        .status()
        .expect("pactl runs");
    assert!(status.success(), "pactl {args:?} succeeds");
}

/// Whether the sound server keeps every sample a stream writes, as PulseAudio does; PipeWire
/// may drop or zero-fill a whole quantum without telling the stream (docs/benchmarks.md,
/// "PipeWire"), so a test that counts every sample heard allows for that there.
pub fn server_keeps_every_sample() -> bool {
    let info = Command::new("pactl")
        .arg("info")
        .output()
        .expect("pactl runs");
    assert!(info.status.success(), "pactl info succeeds");
    !String::from_utf8_lossy(&info.stdout).contains("PipeWire")
}

/// How many times the thread named `name` has gone to sleep and been woken so far.
pub fn wakeups_of(name: &str) -> u64 {
    std::fs::read_dir("/proc/self/task")
        .expect("/proc is mounted")
        .filter_map(|task| {
            let path = task.ok()?.path();
            let comm = std::fs::read_to_string(path.join("comm")).ok()?;
            (comm.trim() == name).then_some(())?;
            let status = std::fs::read_to_string(path.join("status")).ok()?;
            status
                .lines()
                .find_map(|line| line.strip_prefix("voluntary_ctxt_switches:"))?
                .trim()
                .parse::<u64>()
                .ok()
        })
        .sum()
}

/// The test sound server stopped (SIGSTOP) as a starved machine stops it, until dropped: while
/// it is stopped nobody is asked for audio, and once it runs again a null sink renders the time
/// it missed at once, as a late device does. scripts/pulse.sh and scripts/pipewire.sh name the
/// server's processes (PulseAudio; PipeWire and pipewire-pulse) in `sound-server.pids`, in a
/// folder above the socket.
pub struct StalledServer(Vec<String>);

impl StalledServer {
    pub fn stop() -> Self {
        let server = std::env::var("PULSE_SERVER").expect("the test server is named");
        let socket = std::path::Path::new(server.trim_start_matches("unix:"));
        let pid_file = socket
            .ancestors()
            .map(|folder| folder.join("sound-server.pids"))
            .find(|file| file.exists())
            .unwrap_or_else(|| panic!("no sound-server.pids above {}", socket.display()));
        let pids: Vec<String> = std::fs::read_to_string(&pid_file)
            .unwrap_or_else(|error| panic!("the server's pids in {}: {error}", pid_file.display()))
            .split_whitespace()
            .map(str::to_owned)
            .collect();
        assert!(!pids.is_empty(), "{} names no process", pid_file.display());
        let status = Command::new("kill")
            .arg("-STOP")
            .args(&pids)
            .status()
            .expect("kill runs");
        assert!(status.success(), "the sound server {pids:?} stops");
        Self(pids)
    }
}

impl Drop for StalledServer {
    fn drop(&mut self) {
        let _ = Command::new("kill").arg("-CONT").args(&self.0).status();
    }
}

/// Asserts that the sink heard `said` (its non-zero samples) whole and in order; or, where the
/// sound server ran dry while it played (`server_underflows` times), in order with at most
/// 50 ms missing for each time: what the speaker stream wrote before it could tell the server
/// had played past it, which the server drops (docs/benchmarks.md, "Echo cancellation").
pub fn assert_heard_in_order(heard: &[i16], said: &[i16], server_underflows: u64, what: &str) {
    if server_underflows == 0 {
        assert!(
            heard == said,
            "{what}: every sample once, in order, and nothing else"
        );
        return;
    }
    let mut said_left = said.iter();
    let in_order = heard
        .iter()
        .all(|sample| said_left.any(|candidate| candidate == sample));
    let missing = said.len().saturating_sub(heard.len());
    assert!(
        in_order && missing as u64 <= 48 * 50 * server_underflows,
        "{what}: the sound server ran dry {server_underflows} times, and what was heard must be \
         what was said, in order, with at most 50 ms missing for each ({missing} samples \
         missing; in order: {in_order})"
    );
}
