//! Walkie on a bad network, measured: the app's own conversation driver (no window) with the
//! real audio engine on the test PulseAudio server calls the real local provider through the
//! test bench's impaired network ([`walkie_local::netem::Relay`]), which loses, bursts,
//! delays, reorders or blacks out the call's packets both ways by a seeded schedule.
//!
//! Each scenario holds push-to-talk turns whose reply is the user's own steady tone played
//! back (the local provider echoes), so anything the listener would hear as a gap is the
//! network's doing: the virtual speaker is recorded and every 5 ms window quieter than
//! -50 dBFS inside a reply counts as a gap (bench/peer's detector). Beside the gaps: the share
//! of the reply the jitter buffer filled in, packets late and lost, the playout delay (first
//! packet to the device), whether the call rode the fault out or was dialled again, and, after
//! a blackout, the time from the network's return to Ready.
//!
//! Slow test: the test command runs each scenario with 2 replies and holds it to what must
//! never fail (every reply heard, no redial for loss, jitter or a 3 s blackout, Ready again
//! after a 20 s one); the bench runs more replies and prints the table of docs/benchmarks.md:
//! `WALKIE_NETEM_REPLIES=6 cargo test --test slow_impaired_network -- --nocapture`
//! (needs `export PULSE_SERVER=$(scripts/pulse.sh start target/pulse)`;
//! `WALKIE_NETEM_ONLY=jitter` runs only the scenarios whose name holds that text).

#[path = "support/audio.rs"]
mod audio;

use std::time::{Duration, Instant};

use tokio::sync::mpsc;
use walkie_app::conversation::{self, Command, Ui};
use walkie_app::history::CurrentConversation;
use walkie_app::plan::{Plan, Provider};
use walkie_app::recording::Saving;
use walkie_app::secrets::ApiKey;
use walkie_app::settings::{CallFormChoice, ProviderKind, Settings};
use walkie_conversation::{
    ConnectionHealth, ConnectionState, DeviceDirection, HealthLevel, LevelReading, ReplyPlayout,
    StatusEvent,
};
use walkie_local::netem::{Direction, Impairment, Relay};
use walkie_local::{LocalProvider, ProviderConfig};

const STEP_TIMEOUT: Duration = Duration::from_secs(45);
const SEED: u64 = 20_261_206;

#[derive(Debug)]
enum Shown {
    Status(StatusEvent),
    Health(ConnectionHealth),
    Playout(ReplyPlayout),
}

struct CollectingUi(mpsc::UnboundedSender<Shown>);

impl Ui for CollectingUi {
    fn status(&mut self, status: StatusEvent) {
        let _ = self.0.send(Shown::Status(status));
    }
    fn transcript(&mut self, _: &walkie_agui::Event) {}
    fn level(&mut self, _: DeviceDirection, _: LevelReading) {}
    fn spending(&mut self, _: &walkie_conversation::Spending) {}
    fn connection_health(&mut self, health: &ConnectionHealth) {
        let _ = self.0.send(Shown::Health(health.clone()));
    }
    fn reply_playout(&mut self, playout: &ReplyPlayout) {
        let _ = self.0.send(Shown::Playout(*playout));
    }
    fn ask_approval(&mut self, _: &walkie_conversation::ApprovalRequest) {}
    fn approval_closed(&mut self, _: &str) {}
}

/// What the driver showed, as it came.
struct Window {
    shown: mpsc::UnboundedReceiver<Shown>,
    playouts: Vec<ReplyPlayout>,
    worst_health: Option<HealthLevel>,
    reconnecting_seen: bool,
    step: String,
}

impl Window {
    async fn until_state(&mut self, state: ConnectionState) -> Instant {
        let deadline = tokio::time::Instant::now() + STEP_TIMEOUT;
        loop {
            let shown = tokio::time::timeout_at(deadline, self.shown.recv())
                .await
                .unwrap_or_else(|_| panic!("{}: no {state:?} within {STEP_TIMEOUT:?}", self.step))
                .expect("the driver runs");
            match shown {
                Shown::Playout(playout) => self.playouts.push(playout),
                Shown::Health(health) => {
                    self.worst_health = self.worst_health.max(Some(health.level));
                }
                Shown::Status(status) => {
                    self.reconnecting_seen |= status.state == ConnectionState::Reconnecting;
                    if status.state == state {
                        return Instant::now();
                    }
                }
            }
        }
    }

    fn drain(&mut self) {
        while let Ok(shown) = self.shown.try_recv() {
            match shown {
                Shown::Playout(playout) => self.playouts.push(playout),
                Shown::Health(health) => {
                    self.worst_health = self.worst_health.max(Some(health.level));
                }
                Shown::Status(status) => {
                    self.reconnecting_seen |= status.state == ConnectionState::Reconnecting
                }
            }
        }
    }
}

/// A steady voiced tone (220 Hz and two harmonics, about -20 dBFS): no syllable dips, so a
/// quiet window in its echo is the network's.
fn tone(seconds: f64) -> Vec<i16> {
    let count = (audio::RATE_HZ as f64 * seconds) as usize;
    (0..count)
        .map(|i| {
            let t = i as f64 / audio::RATE_HZ as f64;
            let phase = 2.0 * std::f64::consts::PI * 220.0 * t;
            (3_000.0 * (phase.sin() + 0.5 * (2.0 * phase).sin() + 0.25 * (3.0 * phase).sin()))
                as i16
        })
        .collect()
}

/// The gaps a listener hears: inside each reply (sound separated from the next by at least
/// 400 ms of quiet), the runs of 5 ms windows under -50 dBFS, as (ms into the reply, length
/// in ms).
fn gaps_ms(samples: &[i16]) -> Vec<(u32, u32)> {
    let window = audio::RATE_HZ / 200;
    let floor = 32_768.0 * 10f64.powf(-50.0 / 20.0);
    let loud: Vec<bool> = samples
        .chunks_exact(window)
        .map(|frame| (audio::energy(frame) / frame.len() as f64).sqrt() >= floor)
        .collect();
    let mut gaps = Vec::new();
    let mut quiet_run = 0u32;
    let mut in_reply = false;
    let mut reply_start = 0u32;
    for (window, is_loud) in loud.into_iter().enumerate() {
        let window = window as u32;
        if is_loud {
            if in_reply && quiet_run > 0 && quiet_run < 80 {
                gaps.push(((window - quiet_run - reply_start) * 5, quiet_run * 5));
            }
            if !in_reply {
                reply_start = window;
            }
            in_reply = true;
            quiet_run = 0;
        } else {
            quiet_run += 1;
            if quiet_run >= 80 {
                in_reply = false;
            }
        }
    }
    gaps
}

struct Scenario {
    name: &'static str,
    impairment: Impairment,
    /// A blackout after the first reply, this long.
    blackout: Option<Duration>,
    /// In-band FEC in what Walkie sends (and the local provider echoes back).
    fec: bool,
    /// The jitter buffer's most depth, when not the default.
    max_jitter_target_ms: Option<u32>,
    /// Only the packets toward Walkie are impaired (the local provider echoes the user's
    /// packets in the order they came, so a reordered uplink is heard in its reply).
    toward_walkie_only: bool,
    /// How long each turn speaks (and so each reply lasts).
    speak_s: f64,
}

impl Scenario {
    fn new(name: &'static str, impairment: Impairment) -> Self {
        Self {
            name,
            impairment,
            blackout: None,
            fec: true,
            max_jitter_target_ms: None,
            toward_walkie_only: false,
            speak_s: 1.0,
        }
    }
}

/// What one scenario measured.
#[derive(Debug)]
struct Measured {
    replies: usize,
    longest_gap_ms: u32,
    gaps_over_60_ms: usize,
    /// Gaps more than a second into a reply (what a jitter buffer still learning may leave).
    gaps_after_first_second: usize,
    filled_percent: f64,
    late_packets: u64,
    /// Those after the first reply (which learns the network's delays as it plays).
    late_after_first_reply: u64,
    /// The reply audio's packets lost, and those the relay dropped toward Walkie (any kind).
    lost_packets: u64,
    network_lost: u64,
    recovered_frames: u64,
    /// Silence the device played inside the replies because Walkie's ring ran dry, and the
    /// silence of the sound server's own gaps (its thread late: the machine, not the network).
    ring_dry_ms: f64,
    server_gap_ms: f64,
    mean_playout_ms: f64,
    redialled: bool,
    back_to_ready_ms: Option<u128>,
    worst_health: Option<HealthLevel>,
}

/// The replies saved in the scenario's one conversation, each with its words: a reply split
/// in two (one part with no words) does not count.
fn replies_saved(data_dir: &std::path::Path) -> usize {
    let store = walkie_store::Store::new(walkie_store::conversations_dir(data_dir));
    let saved = store.list().expect("the saved conversations");
    assert_eq!(saved.len(), 1, "one conversation per scenario: {saved:?}");
    let conversation = store.open_strict(&saved[0].id).expect("it reads back");
    let assistant: Vec<&str> = conversation
        .messages()
        .iter()
        .filter(|message| message.role_name() == "assistant")
        .map(|message| message.content().unwrap_or_default())
        .collect();
    if assistant.iter().any(|text| text.is_empty()) {
        return 0;
    }
    assistant.len()
}

async fn speak(seconds: f64) {
    tokio::task::spawn_blocking(move || audio::PulseStream::speak_into_microphone(&tone(seconds)))
        .await
        .expect("the virtual microphone is fed");
}

async fn turn(window: &mut Window, commands: &mpsc::UnboundedSender<Command>, speak_s: f64) {
    commands
        .send(Command::PushToTalk { pressed: true })
        .expect("the driver runs");
    window.until_state(ConnectionState::Listening).await;
    speak(speak_s).await;
    commands
        .send(Command::PushToTalk { pressed: false })
        .expect("the driver runs");
    window.until_state(ConnectionState::Speaking).await;
    window.until_state(ConnectionState::Ready).await;
}

async fn run(scenario: &Scenario, replies: usize) -> Measured {
    let provider = LocalProvider::start(ProviderConfig::default())
        .await
        .expect("a local provider on loopback");
    let relay = Relay::start(&provider.base_url(), Impairment::CLEAN, SEED)
        .await
        .expect("the impaired network on loopback");
    let data_dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("impaired-network")
        .join(scenario.name);
    let _ = std::fs::remove_dir_all(&data_dir);
    let settings = Settings {
        provider: ProviderKind::Local,
        ..Settings::default()
    };
    let mut plan = Plan::resolve(&settings, Ok(data_dir.clone()));
    plan.engine.opus_inband_fec = scenario.fec;
    if let Some(max_target_ms) = scenario.max_jitter_target_ms {
        plan.engine.jitter.max_target_ms = max_target_ms;
    }
    plan.provider = Ok(Provider::Custom {
        base_url: relay.base_url(),
        api_key: Some(ApiKey::given(provider.token())),
        call_form: CallFormChoice::Automatic,
    });
    let (ui, shown) = mpsc::unbounded_channel();
    let (commands, received) = mpsc::unbounded_channel();
    let driver = tokio::spawn(conversation::run(
        plan,
        CollectingUi(ui),
        received,
        Saving::new(
            CurrentConversation::default(),
            walkie_store::Saved::Everything,
        ),
        conversation::Dialler::default(),
    ));
    let mut window = Window {
        shown,
        playouts: Vec::new(),
        worst_health: None,
        reconnecting_seen: false,
        step: format!("{}: the call", scenario.name),
    };
    window.until_state(ConnectionState::Ready).await;
    let speaker = audio::PulseStream::record_speaker();
    if scenario.toward_walkie_only {
        relay.set_impairment_toward(Direction::Down, scenario.impairment);
    } else {
        relay.set_impairment(scenario.impairment);
    }
    let mut back_to_ready_ms = None;
    for reply in 0..replies {
        window.step = format!("{}: reply {}", scenario.name, reply + 1);
        turn(&mut window, &commands, scenario.speak_s).await;
        if reply == 0
            && let Some(blackout) = scenario.blackout
        {
            relay.black_out(blackout);
            let network_back = Instant::now() + blackout;
            tokio::time::sleep_until(network_back.into()).await;
            window.drain();
            if window.reconnecting_seen {
                window.step = format!("{}: back after the blackout", scenario.name);
                let ready = window.until_state(ConnectionState::Ready).await;
                back_to_ready_ms = Some(ready.saturating_duration_since(network_back).as_millis());
            } else {
                back_to_ready_ms = Some(0);
            }
        }
    }
    let played = speaker.end();
    drop(commands);
    driver.await.expect("the driver ends without a panic");
    window.drain();
    let gaps = gaps_ms(&played);
    let filled_frames: u64 = window
        .playouts
        .iter()
        .map(|p| p.concealed_frames + p.recovered_frames)
        .sum();
    let recovered_frames: u64 = window.playouts.iter().map(|p| p.recovered_frames).sum();
    let played_ms: f64 = window.playouts.iter().map(|p| p.played_ms).sum();
    let playout_delays: Vec<f64> = window
        .playouts
        .iter()
        .filter_map(|p| p.arrival_to_device_ms)
        .collect();
    let network_lost = relay.counts(Direction::Down).lost;
    Measured {
        replies: replies_saved(&data_dir),
        longest_gap_ms: gaps.iter().map(|(_, gap)| *gap).max().unwrap_or(0),
        gaps_over_60_ms: gaps.iter().filter(|(_, gap)| *gap > 60).count(),
        gaps_after_first_second: gaps.iter().filter(|(at, _)| *at >= 1_000).count(),
        filled_percent: if played_ms > 0.0 {
            filled_frames as f64 * 20.0 * 100.0 / played_ms
        } else {
            0.0
        },
        late_packets: window.playouts.iter().map(|p| p.late_packets).sum(),
        late_after_first_reply: window.playouts.iter().skip(1).map(|p| p.late_packets).sum(),
        lost_packets: window.playouts.iter().map(|p| p.lost_packets).sum(),
        recovered_frames,
        ring_dry_ms: window.playouts.iter().map(|p| p.silence_inside_ms).sum(),
        server_gap_ms: window.playouts.iter().map(|p| p.server_gap_ms).sum(),
        network_lost,
        mean_playout_ms: playout_delays.iter().sum::<f64>() / playout_delays.len().max(1) as f64,
        redialled: provider.calls_total() > 1,
        back_to_ready_ms,
        worst_health: window.worst_health,
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn slow_calls_ride_out_loss_jitter_and_blackouts_and_say_how_it_sounded() {
    audio::require_test_audio();
    let replies: usize = std::env::var("WALKIE_NETEM_REPLIES")
        .ok()
        .and_then(|replies| replies.parse().ok())
        .unwrap_or(2);
    let loss = |percent| Impairment::random_loss(percent);
    let jitter = Impairment {
        delay_ms: 40,
        jitter_ms: 30,
        ..Impairment::CLEAN
    };
    let bursts = Impairment {
        loss_percent: 5.0,
        burst_packets: 5,
        ..Impairment::CLEAN
    };
    let scenarios = [
        Scenario::new("clean", Impairment::CLEAN),
        Scenario::new("1 % loss", loss(1.0)),
        Scenario::new("3 % loss", loss(3.0)),
        Scenario {
            fec: false,
            ..Scenario::new("3 % loss, no FEC", loss(3.0))
        },
        Scenario::new("10 % loss", loss(10.0)),
        Scenario {
            fec: false,
            ..Scenario::new("10 % loss, no FEC", loss(10.0))
        },
        Scenario::new("bursts of 5 (5 % lost)", bursts),
        Scenario {
            speak_s: 3.0,
            ..Scenario::new("40 ± 30 ms jitter, 3 s replies", jitter)
        },
        Scenario {
            speak_s: 3.0,
            toward_walkie_only: true,
            ..Scenario::new("40 ± 30 ms jitter toward Walkie only, 3 s replies", jitter)
        },
        Scenario {
            speak_s: 3.0,
            max_jitter_target_ms: Some(40),
            ..Scenario::new(
                "40 ± 30 ms jitter, 3 s replies, buffer capped at 40 ms",
                jitter,
            )
        },
        Scenario {
            blackout: Some(Duration::from_secs(3)),
            ..Scenario::new("3 s blackout", Impairment::CLEAN)
        },
        Scenario {
            blackout: Some(Duration::from_secs(20)),
            ..Scenario::new("20 s blackout", Impairment::CLEAN)
        },
    ];
    println!(
        "| scenario ({replies} replies) | heard | longest gap | gaps > 60 ms | gaps after 1 s | speaker ran dry (ring / server) | filled in (by FEC) | audio packets lost / late (after the first reply) | all packets lost toward Walkie | playout delay | redialled | back to Ready | badge |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    let only = std::env::var("WALKIE_NETEM_ONLY").unwrap_or_default();
    for scenario in scenarios
        .iter()
        .filter(|scenario| scenario.name.contains(&only))
    {
        let measured = run(scenario, replies).await;
        println!(
            "| {} | {}/{replies} | {} ms | {} | {} | {:.0} / {:.0} ms | {:.1} % ({} frames) | {} / {} ({}) | {} | {:.0} ms | {} | {} | {} |",
            scenario.name,
            measured.replies,
            measured.longest_gap_ms,
            measured.gaps_over_60_ms,
            measured.gaps_after_first_second,
            measured.ring_dry_ms,
            measured.server_gap_ms,
            measured.filled_percent,
            measured.recovered_frames,
            measured.lost_packets,
            measured.late_packets,
            measured.late_after_first_reply,
            measured.network_lost,
            measured.mean_playout_ms,
            if measured.redialled { "yes" } else { "no" },
            measured
                .back_to_ready_ms
                .map_or("—".to_owned(), |ms| format!("{ms} ms")),
            measured
                .worst_health
                .map_or("—".to_owned(), |level| format!("{level:?}")
                    .to_lowercase()),
        );
        // What must never fail, whatever the machine's load: every reply heard, and a call that
        // rides out what a call can ride out.
        assert_eq!(
            measured.replies, replies,
            "{}: every reply was heard: {measured:?}",
            scenario.name
        );
        if scenario.name != "20 s blackout" {
            assert!(
                !measured.redialled,
                "{}: the call rode it out: {measured:?}",
                scenario.name
            );
        }
    }
}
