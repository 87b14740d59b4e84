//! SLOW (a few seconds each, real time): the engine following device changes on the test
//! PulseAudio server, driven the way a desktop changes them — `pactl set-default-sink` /
//! `set-default-source`, a sink loaded again after it vanished, a sink suspended under a
//! playing stream. They run in every `cargo test`; the engine checks the device list once a
//! second (where the server tells of a change) and calls a stream dead after 400 ms without a
//! period, so each takes seconds.
//!
//! What must hold: a moved default is followed and reported ([`EngineEvent::DeviceChanged`]),
//! a chosen device that comes back is used again, a stalled stream is reopened, and in each
//! case the audio goes where it should afterwards.

mod common;

use std::sync::Mutex;
use std::sync::mpsc::Receiver;
use std::time::Duration;

use common::{
    PulseClient, SpareSink, from_bytes, pactl, pattern, require_test_server, wait_until, wakeups_of,
};
use walkie_audio::device::{DeviceDirection, list_devices};
use walkie_audio::engine::{Engine, EngineConfig, EngineEvent};
use walkie_session::turn::AudioCommand;
use walkie_session::{AudioChunk, PlaybackSink};

/// The server's devices and defaults are shared by every test of this file: one at a time.
static SERVER: Mutex<()> = Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    require_test_server();
    SERVER
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Puts scripts/pulse.sh's defaults back when dropped, even when a test fails: the other tests
/// rely on them.
struct DefaultsRestored;

impl Drop for DefaultsRestored {
    fn drop(&mut self) {
        let _ = std::process::Command::new("pactl")
            .args(["set-default-sink", "spk"])
            .status();
        let _ = std::process::Command::new("pactl")
            .args(["set-default-source", "mic.monitor"])
            .status();
    }
}

struct Running {
    engine: Engine,
    events: Receiver<EngineEvent>,
}

fn start(config: EngineConfig) -> Running {
    let (engine, events) =
        Engine::start(config, |_: &[u8], _| {}, || {}).expect("the engine starts");
    wait_until("the devices to open", Duration::from_secs(5), || {
        let stats = engine.stats();
        stats.output_rate_hz == 48_000 && stats.mic_open
    });
    Running { engine, events }
}

impl Running {
    /// Takes events until `stop` says so; returns them all.
    fn events_until(
        &self,
        what: &str,
        limit: Duration,
        stop: impl FnMut(&EngineEvent) -> bool,
    ) -> Vec<EngineEvent> {
        common::events_until(&self.events, what, limit, stop)
    }

    /// Waits for a `DeviceChanged` in each of `directions`; returns what each is using.
    fn changes(&self, directions: &[DeviceDirection]) -> Vec<(DeviceDirection, String)> {
        let mut changed: Vec<(DeviceDirection, String)> = Vec::new();
        self.events_until("the device changes", Duration::from_secs(10), |event| {
            if let EngineEvent::DeviceChanged { direction, using } = event {
                changed.push((*direction, using.clone()));
            }
            directions
                .iter()
                .all(|wanted| changed.iter().any(|(direction, _)| direction == wanted))
        });
        changed
    }

    /// Plays `reply` as one delta and waits until it has drained.
    fn play(&self, reply: &[i16]) {
        let mut player = self.engine.player();
        player.begin_item("item_reply");
        player.play(&AudioChunk::from_samples(reply.to_vec()));
        self.events_until("the reply to drain", Duration::from_secs(5), |event| {
            matches!(event, EngineEvent::PlaybackDrained)
        });
        std::thread::sleep(Duration::from_millis(300));
    }

    /// Sends a short press; returns how many frames it sent.
    fn press(&self) -> u64 {
        let before = self.engine.stats().frames_sent;
        self.engine
            .apply(AudioCommand::OpenCapture { pre_roll_ms: 0 });
        wait_until("the mic to send", Duration::from_secs(5), || {
            self.engine.stats().frames_sent >= before + 5
        });
        self.engine.apply(AudioCommand::CloseCapture);
        self.engine.stats().frames_sent - before
    }
}

fn id_of(direction: DeviceDirection, suffix: &str) -> String {
    list_devices(direction)
        .expect("the devices are listed")
        .into_iter()
        .find(|device| device.id.ends_with(suffix))
        .unwrap_or_else(|| panic!("a {direction} ending in {suffix} is listed"))
        .id
}

fn nonzero(samples: &[i16]) -> Vec<i16> {
    samples.iter().copied().filter(|&s| s != 0).collect()
}

#[test]
fn slow_when_the_default_devices_move_the_engine_follows_and_says_so() {
    let _server = one_at_a_time();
    let _restore = DefaultsRestored;
    let spare = SpareSink::load_named("walkie_new_default");
    let spare_speaker = id_of(DeviceDirection::Output, &spare.name);
    let spare_mic = id_of(DeviceDirection::Input, &format!("{}.monitor", spare.name));
    let running = start(EngineConfig::default());
    let old_speaker = id_of(DeviceDirection::Output, "spk");

    let on_new = PulseClient::spawn("parec", &format!("{}.monitor", spare.name));
    let on_old = PulseClient::spawn("parec", "spk.monitor");
    pactl(&["set-default-sink", &spare.name]);
    pactl(&["set-default-source", &format!("{}.monitor", spare.name)]);
    let mut changed = running.changes(&[DeviceDirection::Input, DeviceDirection::Output]);
    changed.sort_by_key(|(direction, _)| *direction == DeviceDirection::Output);
    assert_eq!(
        changed,
        [
            (DeviceDirection::Input, spare_mic.clone()),
            (DeviceDirection::Output, spare_speaker.clone())
        ]
    );
    let reply = pattern(12_000);
    running.play(&reply);
    assert!(running.press() > 0, "the mic sends from the new default");
    assert_eq!(
        nonzero(&from_bytes(&on_new.end())),
        reply,
        "the reply plays on the new default speaker, whole and once"
    );
    assert!(
        nonzero(&from_bytes(&on_old.end())).is_empty(),
        "and nothing on the old one"
    );

    // The defaults move back: followed again.
    pactl(&["set-default-sink", "spk"]);
    pactl(&["set-default-source", "mic.monitor"]);
    let changed = running.changes(&[DeviceDirection::Input, DeviceDirection::Output]);
    assert!(
        changed.contains(&(DeviceDirection::Output, old_speaker)),
        "{changed:?}"
    );
    assert_eq!(running.engine.stats().output_rate_hz, 48_000);
}

#[test]
fn slow_while_no_device_comes_or_goes_the_device_list_is_not_read_and_a_new_one_is_still_heard_of()
{
    let _server = one_at_a_time();
    let _restore = DefaultsRestored;
    let running = start(EngineConfig::default());
    let reads = || running.engine.stats().device_list_reads;
    // Each direction reads the list once after its stream heard of the server's changes.
    wait_until(
        "the first reads of the device list",
        Duration::from_secs(5),
        || reads() >= 2,
    );

    // Three seconds without a device coming or going, counted by the workers' passes (ten a
    // second each at rest): read every second, the list would be read about six times more.
    let before = reads();
    let passes = || {
        let stats = running.engine.stats();
        stats.uplink_passes + stats.downlink_passes
    };
    let passes_before = passes();
    let workers = || wakeups_of("walkie-audio-up") + wakeups_of("walkie-audio-down");
    let wakeups_before = workers();
    let started = std::time::Instant::now();
    wait_until(
        "three seconds of the workers' passes",
        Duration::from_secs(10),
        || passes() >= passes_before + 60 && started.elapsed() >= Duration::from_secs(3),
    );
    let quiet_reads = reads() - before;
    let seconds = started.elapsed().as_secs_f64();
    eprintln!(
        "in {seconds:.1} s without device news the list was read {quiet_reads} times; the two \
         workers woke {:.0} times a second",
        (workers() - wakeups_before) as f64 / seconds
    );
    assert_eq!(
        quiet_reads, 0,
        "the device list was read with nothing changed"
    );

    // A sink (and its monitor, a source) comes: both directions read the list again, and a
    // default moved to it is followed.
    let spare = SpareSink::load_named("walkie_heard_of");
    wait_until(
        "the list read after the news",
        Duration::from_secs(5),
        || reads() >= before + 2,
    );
    pactl(&["set-default-sink", &spare.name]);
    let changed = running.changes(&[DeviceDirection::Output]);
    assert_eq!(
        changed,
        [(
            DeviceDirection::Output,
            id_of(DeviceDirection::Output, &spare.name)
        )]
    );
}

#[test]
fn slow_a_chosen_device_that_comes_back_is_used_again() {
    let _server = one_at_a_time();
    let _restore = DefaultsRestored;
    let name = "walkie_comes_back";
    let mut spare = SpareSink::load_named(name);
    let chosen_speaker = id_of(DeviceDirection::Output, name);
    let chosen_mic = id_of(DeviceDirection::Input, &format!("{name}.monitor"));
    let running = start(EngineConfig {
        input_device: Some(chosen_mic.clone()),
        output_device: Some(chosen_speaker.clone()),
        ..EngineConfig::default()
    });

    spare.unload();
    let mut fell_back = 0;
    running.events_until("both fallbacks", Duration::from_secs(10), |event| {
        if matches!(event, EngineEvent::DeviceFellBack { .. }) {
            fell_back += 1;
        }
        fell_back == 2
    });

    let spare = SpareSink::load_named(name);
    let recorder = PulseClient::spawn("parec", &format!("{}.monitor", spare.name));
    let on_default = PulseClient::spawn("parec", "spk.monitor");
    let mut changed = running.changes(&[DeviceDirection::Input, DeviceDirection::Output]);
    changed.sort_by_key(|(direction, _)| *direction == DeviceDirection::Output);
    assert_eq!(
        changed,
        [
            (DeviceDirection::Input, chosen_mic),
            (DeviceDirection::Output, chosen_speaker)
        ],
        "back on the chosen devices"
    );
    let reply = pattern(12_000);
    running.play(&reply);
    assert!(running.press() > 0, "the mic sends from the chosen device");
    assert_eq!(nonzero(&from_bytes(&recorder.end())), reply);
    assert!(
        nonzero(&from_bytes(&on_default.end())).is_empty(),
        "nothing goes to the default any more"
    );
}

#[test]
fn slow_a_stalled_speaker_is_reopened_and_plays_again() {
    let _server = one_at_a_time();
    let name = "walkie_stalls";
    let spare = SpareSink::load_named(name);
    let speaker = id_of(DeviceDirection::Output, name);
    let running = start(EngineConfig {
        output_device: Some(speaker.clone()),
        ..EngineConfig::default()
    });
    let reopens_before = running.engine.stats().stream_reopens;

    // A suspended sink takes no more audio: the stream's periods stop.
    pactl(&["suspend-sink", &spare.name, "1"]);
    wait_until(
        "the stalled stream to be reopened",
        Duration::from_secs(5),
        || running.engine.stats().stream_reopens > reopens_before,
    );
    pactl(&["suspend-sink", &spare.name, "0"]);

    let recorder = PulseClient::spawn("parec", &format!("{}.monitor", spare.name));
    recorder.wait_until_recording();
    // The stream plays again: ten periods taken by one stream, with no reopen between.
    let stats = running.engine.stats();
    let mut since = (stats.stream_reopens, stats.output_callbacks);
    wait_until("the resumed stream to play", Duration::from_secs(5), || {
        let stats = running.engine.stats();
        if stats.stream_reopens != since.0 {
            since = (stats.stream_reopens, stats.output_callbacks);
        }
        stats.output_callbacks >= since.1 + 10
    });
    let reopens_after_resume = running.engine.stats().stream_reopens;
    let reply = pattern(12_000);
    running.play(&reply);
    recorder.wait_for_nonzero(reply.len(), Duration::from_secs(5));
    assert_eq!(
        running.engine.stats().stream_reopens,
        reopens_after_resume,
        "a stream that plays is left alone"
    );
    let heard = nonzero(&from_bytes(&recorder.end()));
    let first_wrong = heard.iter().zip(&reply).position(|(h, r)| h != r);
    assert!(
        heard.len() == reply.len() && first_wrong.is_none(),
        "after the reopen the reply plays whole, once, on the same device: heard {} of {} \
         samples, the first wrong at {first_wrong:?}",
        heard.len(),
        reply.len()
    );
    let moved: Vec<EngineEvent> = running
        .events
        .try_iter()
        .filter(|event| {
            matches!(
                event,
                EngineEvent::DeviceChanged { .. } | EngineEvent::DeviceFellBack { .. }
            )
        })
        .collect();
    assert!(
        moved.is_empty(),
        "a reopen is not a device change: {moved:?}"
    );
}
