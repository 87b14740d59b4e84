//! Walkie's client against a peer it did not write: a Realtime-shaped server on aiortc
//! (tests/peers/aiortc_peer.py: aioice, its own DTLS, SCTP and SRTP, PyAV's Opus), whose server
//! events are built from the official openai-python SDK's models. The local provider shares
//! Walkie's WebRTC stack (webrtc-rs), so a fault on both ends of it would cancel out there;
//! here every packet crosses two independent implementations.
//!
//! The app's own conversation driver (no window: what it would show is collected) calls the
//! peer with the real audio engine on the test PulseAudio server, once in each call form: the
//! documented multipart form, and the raw offer after the peer refuses multipart with 415 (as
//! huggingface's speech-to-speech does). In each: a push-to-talk turn, a reply cut off by a
//! press, a hands-free turn the peer's own voice detection ends, and a tool call asked for in
//! a typed message; audio energy is measured at both ends (the peer decodes what the
//! microphone sent, the test records the virtual speaker), the conversation is saved, and the
//! hang-up reaches the peer. The peer writes the local provider's trace format under
//! `target/oracle-trace/`, so the oracle checks these client events against the SDK too.
//!
//! Needs the tests' Python environment (`scripts/python-env.sh`, which scripts/test.sh runs and
//! names in `WALKIE_PYTHON`) and the test PulseAudio server.

#[path = "support/audio.rs"]
mod audio;

use std::path::{Path, PathBuf};
use std::process::{Child, Command as Process, Stdio};
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::sync::mpsc;
use walkie_app::conversation::{self, Command, Ui};
use walkie_app::history::CurrentConversation;
use walkie_app::plan::{self, Plan, Provider};
use walkie_app::recording::Saving;
use walkie_app::secrets::ApiKey;
use walkie_app::settings::{CallFormChoice, ProviderKind, Settings};
use walkie_conversation::{ConnectionState, DeviceDirection, LevelReading, StatusEvent};
use walkie_session::turn::UserMessage;

/// How long any one step may take before the test gives up (a loaded 2-core machine).
const STEP_TIMEOUT: Duration = Duration::from_secs(30);
const TOKEN: &str = "independent-peer-token";

/// The peer's audio and ours share the test PulseAudio server's two devices: one call at a time.
static ONE_CALL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn target_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("CARGO_TARGET_TMPDIR is <target dir>/tmp")
        .to_owned()
}

/// The tests' Python: `WALKIE_PYTHON`, else the venv scripts/python-env.sh makes.
fn python() -> PathBuf {
    let python = std::env::var_os("WALKIE_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| target_dir().join("python-venv/bin/python"));
    assert!(
        python.exists(),
        "this test needs the tests' Python environment with aiortc: run scripts/test.sh, or \
         `export WALKIE_PYTHON=$(scripts/python-env.sh)` first (looked for {})",
        python.display()
    );
    python
}

/// The aiortc peer, ended when dropped.
struct Peer {
    child: Child,
    base_url: String,
}

impl Peer {
    async fn start(name: &str, refuse_multipart: bool) -> Self {
        let trace = target_dir().join("oracle-trace").join(name);
        let _ = std::fs::remove_dir_all(&trace);
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers/aiortc_peer.py");
        let mut command = Process::new(python());
        command
            .arg(&script)
            .args(["--token", TOKEN, "--trace"])
            .arg(&trace)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        if refuse_multipart {
            command.arg("--refuse-multipart");
        }
        let mut child = command.spawn().expect("the aiortc peer starts");
        let stdout = tokio::process::ChildStdout::from_std(
            child.stdout.take().expect("the peer's stdout is piped"),
        )
        .expect("a pipe tokio can read");
        let mut lines = BufReader::new(stdout).lines();
        let listening = tokio::time::timeout(STEP_TIMEOUT, lines.next_line())
            .await
            .expect("the peer says where it listens within the step timeout")
            .expect("the peer's stdout reads")
            .expect("the peer prints a line before it exits");
        let base_url = listening
            .strip_prefix("listening ")
            .unwrap_or_else(|| panic!("the peer's first line names its address: {listening:?}"))
            .to_owned();
        Self { child, base_url }
    }

    /// What the peer measured and received, per call.
    async fn calls(&self) -> Vec<Value> {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let stats: Value = reqwest::Client::new()
            .get(format!("{}/stats", self.base_url))
            .send()
            .await
            .expect("the peer answers /stats")
            .json()
            .await
            .expect("/stats is JSON");
        stats["calls"].as_array().expect("a list of calls").clone()
    }

    /// Waits until the peer's only call satisfies `wanted`, and returns it.
    async fn until_call(&self, what: &str, wanted: impl Fn(&Value) -> bool) -> Value {
        let deadline = tokio::time::Instant::now() + STEP_TIMEOUT;
        loop {
            let calls = self.calls().await;
            if let Some(call) = calls.last()
                && wanted(call)
            {
                return call.clone();
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "the peer never saw {what}; its calls: {calls:#?}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What the driver would show in the window.
#[derive(Debug)]
enum Shown {
    Status(StatusEvent),
    Transcript(walkie_agui::Event),
}

struct CollectingUi(mpsc::UnboundedSender<Shown>);

impl Ui for CollectingUi {
    fn status(&mut self, status: StatusEvent) {
        let _ = self.0.send(Shown::Status(status));
    }
    fn transcript(&mut self, event: &walkie_agui::Event) {
        let _ = self.0.send(Shown::Transcript(event.clone()));
    }
    fn level(&mut self, _: DeviceDirection, _: LevelReading) {}
    fn spending(&mut self, _: &walkie_conversation::Spending) {}
    fn connection_health(&mut self, _: &walkie_conversation::ConnectionHealth) {}
    fn reply_playout(&mut self, _: &walkie_conversation::ReplyPlayout) {}
    // The built-in tool runs without asking.
    fn ask_approval(&mut self, _: &walkie_conversation::ApprovalRequest) {}
    fn approval_closed(&mut self, _: &str) {}
}

/// The window's side: statuses as they come, transcript events kept.
struct Window {
    shown: mpsc::UnboundedReceiver<Shown>,
    transcript: Vec<walkie_agui::Event>,
    statuses: Vec<StatusEvent>,
    step: &'static str,
}

impl Window {
    async fn until(&mut self, wanted: impl Fn(&StatusEvent) -> bool, what: &str) {
        let deadline = tokio::time::Instant::now() + STEP_TIMEOUT;
        loop {
            let shown = tokio::time::timeout_at(deadline, self.shown.recv())
                .await
                .unwrap_or_else(|_| {
                    let last: Vec<_> = self.statuses.iter().rev().take(6).collect();
                    panic!(
                        "{}: no {what} within {STEP_TIMEOUT:?}; the last statuses: {last:?}",
                        self.step
                    )
                })
                .expect("the driver runs");
            match shown {
                Shown::Transcript(event) => self.transcript.push(event),
                Shown::Status(status) => {
                    let matched = wanted(&status);
                    self.statuses.push(status);
                    if matched {
                        return;
                    }
                }
            }
        }
    }

    async fn until_state(&mut self, state: ConnectionState) {
        self.until(|status| status.state == state, &format!("{state:?}"))
            .await;
    }

    /// The texts of the messages shown so far whose role is `role`.
    fn texts(&self, role: &str) -> Vec<String> {
        let mut consumer = walkie_agui::Consumer::new(walkie_agui::Mode::Strict);
        for event in &self.transcript {
            consumer
                .push(event)
                .expect("what the window is shown is valid AG-UI");
        }
        consumer
            .messages()
            .iter()
            .filter(|message| message.role_name() == role)
            .map(|message| message.content().unwrap_or_default().to_owned())
            .collect()
    }
}

fn send(commands: &mpsc::UnboundedSender<Command>, command: Command) {
    commands.send(command).expect("the driver runs");
}

/// Plays `seconds` of speech into the virtual microphone and waits until it has been played.
async fn speak(seconds: f64) {
    tokio::task::spawn_blocking(move || {
        audio::PulseStream::speak_into_microphone(&audio::speech_like(seconds))
    })
    .await
    .expect("the virtual microphone is fed");
}

/// Frames of 20 ms louder than -40 dBFS in `samples`.
fn loud_frames(samples: &[i16]) -> usize {
    samples
        .chunks_exact(audio::RATE_HZ / 50)
        .filter(|frame| {
            let rms = (audio::energy(frame) / frame.len() as f64).sqrt();
            rms > 32_768.0 * 10f64.powf(-40.0 / 20.0)
        })
        .count()
}

fn replies(call: &Value) -> Vec<Value> {
    call["replies"].as_array().cloned().unwrap_or_default()
}

fn turns(call: &Value) -> Vec<Value> {
    call["turns"].as_array().cloned().unwrap_or_default()
}

/// A conversation with the peer, under way: the driver, what it shows, the speaker recorded.
struct Talk {
    window: Window,
    commands: mpsc::UnboundedSender<Command>,
    driver: tokio::task::JoinHandle<()>,
    speaker: audio::PulseStream,
    data_dir: PathBuf,
}

/// The app's driver on a fresh data folder, calling `peer` with `settings` (its server and
/// key set here); waits until the call is ready.
async fn talk_to(peer: &Peer, name: &str, settings: Settings) -> Talk {
    let data_dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("e2e-data")
        .join(name);
    let _ = std::fs::remove_dir_all(&data_dir);
    let mut plan = Plan::resolve(&settings, Ok(data_dir.clone()));
    plan.provider = Ok(Provider::Custom {
        base_url: peer.base_url.clone(),
        api_key: Some(ApiKey::given(TOKEN)),
        call_form: CallFormChoice::Automatic,
    });
    let (ui, shown) = mpsc::unbounded_channel();
    let (commands, received) = mpsc::unbounded_channel();
    let saving = Saving::new(
        CurrentConversation::default(),
        walkie_store::Saved::Everything,
    );
    let driver = tokio::spawn(conversation::run(
        plan,
        CollectingUi(ui),
        received,
        saving,
        conversation::Dialler::default(),
    ));
    let mut window = Window {
        shown,
        transcript: Vec::new(),
        statuses: Vec::new(),
        step: "the call",
    };
    let speaker = audio::PulseStream::record_speaker();
    window.until_state(ConnectionState::Ready).await;
    Talk {
        window,
        commands,
        driver,
        speaker,
        data_dir,
    }
}

impl Talk {
    /// The key goes down and `seconds` of speech go into the microphone.
    async fn press_and_speak(&mut self, seconds: f64) {
        send(&self.commands, Command::PushToTalk { pressed: true });
        self.window.until_state(ConnectionState::Listening).await;
        speak(seconds).await;
    }

    /// The key comes up; the reply is heard and the call is ready again.
    async fn release_until_answered(&mut self) {
        send(&self.commands, Command::PushToTalk { pressed: false });
        self.window.until_state(ConnectionState::Speaking).await;
        self.window.until_state(ConnectionState::Ready).await;
    }

    /// The user leaves: the driver hangs up and closes the conversation; what the speaker
    /// played, and the window with everything it was shown.
    async fn leave(self) -> (Vec<i16>, Window, PathBuf) {
        let Talk {
            mut window,
            commands,
            driver,
            speaker,
            data_dir,
        } = self;
        window.step = "the hang-up";
        drop(commands);
        driver.await.expect("the driver ends without a panic");
        while let Ok(shown) = window.shown.try_recv() {
            if let Shown::Transcript(event) = shown {
                window.transcript.push(event);
            }
        }
        (speaker.end(), window, data_dir)
    }
}

/// Every one of `texts` is in the one conversation saved in `data_dir`.
fn all_saved(data_dir: &Path, texts: &[String]) {
    let store = walkie_store::Store::new(walkie_store::conversations_dir(data_dir));
    let saved = store.list().expect("the saved conversations");
    assert_eq!(saved.len(), 1, "one conversation saved: {saved:?}");
    let conversation = store.open_strict(&saved[0].id).expect("it reads back");
    let saved_texts: Vec<String> = conversation
        .messages()
        .iter()
        .map(|message| message.content().unwrap_or_default().to_owned())
        .collect();
    for text in texts {
        assert!(
            saved_texts.contains(text),
            "{text:?} was saved: {saved_texts:?}"
        );
    }
}

/// One conversation with the peer in one call form; returns the form the peer saw.
async fn converse_with_the_peer(name: &'static str, refuse_multipart: bool) -> String {
    let _one_call = ONE_CALL.lock().await;
    audio::require_test_audio();
    let peer = Peer::start(name, refuse_multipart).await;
    let settings = Settings {
        provider: ProviderKind::Custom,
        custom_base_url: peer.base_url.clone(),
        ..Settings::default()
    };
    let hands_free = plan::turn_mode(&Settings {
        hands_free: true,
        ..settings.clone()
    });
    let push_to_talk = plan::turn_mode(&settings);
    let mut talk = talk_to(&peer, name, settings).await;

    talk.window.step = "a push-to-talk turn";
    talk.press_and_speak(1.2).await;
    talk.release_until_answered().await;
    let call = peer
        .until_call("the first reply done", |call| {
            replies(call)
                .first()
                .is_some_and(|reply| reply["status"] == "completed")
        })
        .await;
    let heard = &turns(&call)[0];
    assert!(
        heard["voiced_ms"].as_f64().unwrap_or_default() >= 800.0,
        "the peer decoded most of the 1.2 s spoken: {heard}"
    );
    assert!(
        heard["rms_dbfs"].as_f64().unwrap_or(f64::NEG_INFINITY) > -40.0,
        "the peer decoded speech, not silence: {heard}"
    );

    talk.window.step = "a reply cut off by a press";
    talk.press_and_speak(0.8).await;
    send(&talk.commands, Command::PushToTalk { pressed: false });
    talk.window.until_state(ConnectionState::Speaking).await;
    send(&talk.commands, Command::PushToTalk { pressed: true });
    talk.window.until_state(ConnectionState::Listening).await;
    send(&talk.commands, Command::PushToTalk { pressed: false });
    talk.window.until_state(ConnectionState::Ready).await;
    peer.until_call("the second reply cancelled", |call| {
        replies(call)
            .get(1)
            .is_some_and(|reply| reply["status"] == "cancelled")
    })
    .await;

    talk.window.step = "a hands-free turn";
    send(&talk.commands, Command::SetTurnMode(hands_free));
    // The peer must have the new turn detection before the speech starts.
    peer.until_call("the hands-free session.update", |call| {
        call["client_event_types"]
            .as_array()
            .is_some_and(|types| types.iter().filter(|t| *t == "session.update").count() >= 2)
    })
    .await;
    let replies_before = replies(&peer.calls().await[0]).len();
    speak(1.2).await;
    talk.window.until_state(ConnectionState::Speaking).await;
    // Hands-free, the idle call listens.
    talk.window.until_state(ConnectionState::Listening).await;
    peer.until_call("a hands-free reply", |call| {
        replies(call)
            .get(replies_before)
            .is_some_and(|reply| reply["status"] == "completed")
    })
    .await;
    send(&talk.commands, Command::SetTurnMode(push_to_talk));
    talk.window.until_state(ConnectionState::Ready).await;

    talk.window.step = "a tool call";
    send(
        &talk.commands,
        Command::SendMessage(UserMessage::text("use get_current_local_time with {}")),
    );
    talk.window
        .until(
            |status| status.state == ConnectionState::Ready,
            "Ready after the tool's reply",
        )
        .await;
    let call = peer
        .until_call("the tool's answer spoken", |call| {
            call["client_event_types"]
                .as_array()
                .is_some_and(|types| types.iter().filter(|t| *t == "response.create").count() >= 4)
                && replies(call)
                    .last()
                    .is_some_and(|reply| reply["status"] == "completed")
        })
        .await;
    let types: Vec<&str> = call["client_event_types"]
        .as_array()
        .expect("the types received")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        types.contains(&"conversation.item.create"),
        "the tool's output went back: {types:?}"
    );

    let (played, window, data_dir) = talk.leave().await;
    let call = peer
        .until_call("the hang-up", |call| call["hung_up"] == true)
        .await;

    // Audio both ways: the peer decoded speech in every turn, and its replies were heard.
    for turn in turns(&call) {
        assert!(
            turn["rms_dbfs"].as_f64().unwrap_or(f64::NEG_INFINITY) > -40.0,
            "every turn the peer heard was speech: {turn}"
        );
    }
    // The tool call's response has no audio; every spoken reply was speech.
    let spoken: Vec<Value> = replies(&call)
        .into_iter()
        .filter(|reply| reply["sent_audio_ms"].as_f64().unwrap_or_default() > 0.0)
        .collect();
    assert!(spoken.len() >= 4, "four replies were spoken: {spoken:?}");
    for reply in &spoken {
        assert!(
            reply["sent_rms_dbfs"].as_f64().unwrap_or(f64::NEG_INFINITY) > -40.0,
            "the peer sent speech: {reply}"
        );
    }
    let loud_ms = loud_frames(&played) * 20;
    assert!(
        loud_ms >= 2_000,
        "the speaker played the peer's replies (at least 2 s of sound above -40 dBFS), heard {loud_ms} ms"
    );

    // The transcripts: shown and saved alike.
    // The tool call's own message carries the call, not words.
    let assistant: Vec<String> = window
        .texts("assistant")
        .into_iter()
        .filter(|text| !text.is_empty())
        .collect();
    assert_eq!(
        assistant.len(),
        4,
        "each spoken reply's words were shown, the cut one as far as it went: {assistant:?}"
    );
    assert!(
        assistant
            .last()
            .is_some_and(|text| text.contains("local_time")),
        "the last reply says what the tool answered: {assistant:?}"
    );
    let user = window.texts("user");
    assert!(
        user.iter().filter(|text| text.contains("I heard")).count() >= 3,
        "the peer's transcriptions of the three spoken turns were shown: {user:?}"
    );
    all_saved(&data_dir, &[assistant.clone(), user.clone()].concat());
    call["form"].as_str().unwrap_or_default().to_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_conversation_with_an_aiortc_peer_in_the_multipart_form_carries_audio_both_ways_and_is_saved()
 {
    let form = converse_with_the_peer("independent-peer-multipart", false).await;
    assert_eq!(form, "multipart");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_aiortc_peer_that_refuses_the_multipart_form_is_called_with_the_raw_offer_and_configured_on_the_channel()
 {
    let form = converse_with_the_peer("independent-peer-raw", true).await;
    assert_eq!(form, "sdp");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_gpt_live_call_to_the_aiortc_peer_is_unmuted_by_the_key_answered_heard_and_saved() {
    const NAME: &str = "independent-peer-live";
    let _one_call = ONE_CALL.lock().await;
    audio::require_test_audio();
    let peer = Peer::start(NAME, false).await;
    let settings = Settings {
        provider: ProviderKind::Custom,
        custom_base_url: peer.base_url.clone(),
        model: "gpt-live-1.1".to_owned(),
        voice: "marin".to_owned(),
        ..Settings::default()
    };
    let mut talk = talk_to(&peer, NAME, settings).await;

    talk.window.step = "a turn with the key held";
    talk.press_and_speak(1.2).await;
    // The model ends the turn when it hears the user stop; the key comes up a moment later.
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    talk.release_until_answered().await;
    let call = peer
        .until_call("the Live reply sent", |call| {
            replies(call)
                .first()
                .is_some_and(|reply| reply["status"] == "completed")
        })
        .await;
    assert_eq!(call["form"], "live", "placed at /v1/live/sessions: {call}");
    let types: Vec<&str> = call["client_event_types"]
        .as_array()
        .expect("the types received")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let unmuted = types
        .iter()
        .position(|t| *t == "session.input_audio.unmute")
        .expect("the key unmuted the microphone");
    assert!(
        types[unmuted..].contains(&"session.input_audio.mute"),
        "and its release muted it again: {types:?}"
    );

    let (played, window, data_dir) = talk.leave().await;
    let call = peer
        .until_call("the Live hang-up", |call| call["hung_up"] == true)
        .await;
    let heard = &turns(&call)[0];
    assert!(
        heard["voiced_ms"].as_f64().unwrap_or_default() >= 800.0
            && heard["rms_dbfs"].as_f64().unwrap_or(f64::NEG_INFINITY) > -40.0,
        "the peer decoded the 1.2 s spoken: {heard}"
    );
    assert!(
        replies(&call)[0]["sent_rms_dbfs"]
            .as_f64()
            .unwrap_or(f64::NEG_INFINITY)
            > -40.0,
        "the peer sent speech: {call}"
    );
    let loud_ms = loud_frames(&played) * 20;
    assert!(
        loud_ms >= 1_000,
        "the speaker played the reply (at least 1 s above -40 dBFS), heard {loud_ms} ms"
    );
    let user = window.texts("user");
    let assistant = window.texts("assistant");
    assert!(
        user.iter().any(|text| text.contains("I heard")),
        "the model's transcript of the user was shown: {user:?}"
    );
    assert!(
        assistant
            .iter()
            .any(|text| text.contains("You said something")),
        "the reply's words were shown: {assistant:?}"
    );
    all_saved(&data_dir, &[user, assistant].concat());
}
