//! The conversation driver: one task that owns the turn controller and connects it to the
//! call, the audio engine and the webview.
//!
//! Why one task: the controller is a sans-IO state machine, so every input — a server event,
//! a key press, a timer — must reach it in one order, and its outputs must leave in that order.
//! The task is that order. It reads the clock (the controller never does) and translates each
//! edge: call events in, client events out; received RTP into the audio engine, decoded audio
//! back into the controller, and the session's speech deltas — only they — out to the player
//! (DESIGN.md rule 2); the controller's audio commands to the engine; key presses in; session
//! events out to the transcript bridge and on to the webview as AG-UI events; controller state
//! out as the status line.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use tokio::sync::mpsc;
use walkie_audio::device::Direction;
use walkie_audio::engine::{Engine, EngineEvent, Player};
use walkie_audio::meter::Level;
use walkie_rtc::{Call, CallConfig, CallEvent, EndReason, Endpoint};
use walkie_session::turn::{
    DeviceKind, ToolRegistry, TurnConfig, TurnController, TurnMode, UiHint, WallClock,
};
use walkie_session::{
    Delivery, EventIterator, Part, PartDelta, PlaybackSink, SessionEvent, Speaker,
    transcript::{BridgeNote, TranscriptBridge},
};

use crate::history::CurrentConversation;
use crate::plan::{Plan, Provider};
use crate::recording::Recording;
use crate::status::{ConnectionState, StatusEvent};

/// What the webview asks of the conversation.
#[derive(Debug, Clone)]
pub enum Command {
    /// The push-to-talk control went down (`true`) or up.
    PushToTalk { pressed: bool },
    /// Hang up if connected, then connect again.
    Reconnect,
    /// Hang up if connected, then connect as the new plan says (the settings changed).
    Apply(Box<Plan>),
    /// Push-to-talk (hold or toggle) or hands-free from now on, in the same call: the
    /// conversation so far stays with the provider.
    SetTurnMode(TurnMode),
}

/// Where the conversation's outputs go. The app's implementation emits Tauri events.
pub trait Ui: Send + 'static {
    fn status(&mut self, status: StatusEvent);
    fn transcript(&mut self, event: &walkie_agui::Event);
    /// A level reading (about 30 a second per direction) for the meters.
    fn level(&mut self, direction: Direction, level: Level);
    /// The transcript message `message_id` is a reply the user cut off (after its END).
    fn interrupted(&mut self, message_id: &str);
}

/// The conversation's clock: Unix milliseconds that never go backwards.
#[derive(Clone, Copy)]
struct Clock {
    started: Instant,
    started_unix_ms: u64,
}

impl Clock {
    fn start() -> Self {
        let started_unix_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|since| since.as_millis() as u64)
            .unwrap_or_default();
        Self {
            started: Instant::now(),
            started_unix_ms,
        }
    }

    fn now_ms(&self) -> u64 {
        self.started_unix_ms + self.started.elapsed().as_millis() as u64
    }

    fn wall_clock(&self) -> WallClock {
        WallClock {
            unix_ms: self.now_ms() as i64,
            utc_offset_minutes: chrono::Local::now().offset().local_minus_utc() / 60,
        }
    }
}

/// Runs conversations until the command channel closes: connect as the plan says, talk, and on
/// a dropped call say so and wait for the user to ask for a new one. New settings arrive as a
/// new plan and replace the call. The conversation being recorded is marked in `current`, so
/// the history never deletes it.
pub async fn run(
    plan: Plan,
    mut ui: impl Ui,
    mut commands: mpsc::UnboundedReceiver<Command>,
    current: CurrentConversation,
) {
    let mut plan = plan;
    // The local provider lives as long as the app: reconnecting reuses it.
    let mut local = None;
    loop {
        let outcome = match &plan.provider {
            Ok(provider) => {
                ui.status(StatusEvent::new(
                    ConnectionState::Connecting,
                    format!("Connecting to {}…", provider.label()),
                ));
                match endpoint(provider, &mut local).await {
                    Ok(endpoint) => match Call::connect(CallConfig::new(endpoint)).await {
                        Ok(call) => talk(call, &mut plan, &mut ui, &mut commands, &current).await,
                        Err(error) => Ended::Failed(format!(
                            "could not connect to {}: {error}",
                            provider.label()
                        )),
                    },
                    Err(reason) => Ended::Failed(reason),
                }
            }
            Err(reason) => Ended::Failed(reason.clone()),
        };
        match outcome {
            Ended::AppClosing => return,
            Ended::Reconnect => continue,
            Ended::Apply(new_plan) => {
                plan = *new_plan;
                continue;
            }
            Ended::Failed(reason) => {
                log::warn!("conversation ended: {reason}");
                ui.status(StatusEvent::new(
                    ConnectionState::Error,
                    format!("Not connected: {reason}. Press Connect to try again."),
                ));
            }
        }
        // Wait for the user to ask again; key presses while disconnected do nothing.
        loop {
            match commands.recv().await {
                None => return,
                Some(Command::Reconnect) => break,
                Some(Command::Apply(new_plan)) => {
                    plan = *new_plan;
                    break;
                }
                Some(Command::PushToTalk { pressed: true }) => ui.status(StatusEvent::new(
                    ConnectionState::NotConnected,
                    "Not connected: press Connect before talking.",
                )),
                Some(Command::PushToTalk { pressed: false }) => {}
                Some(Command::SetTurnMode(mode)) => plan.mode = mode,
            }
        }
    }
}

async fn endpoint(
    provider: &Provider,
    local: &mut Option<walkie_local::LocalProvider>,
) -> Result<Endpoint, String> {
    if *provider == Provider::Local && local.is_none() {
        let started = walkie_local::LocalProvider::start(walkie_local::ProviderConfig::default())
            .await
            .map_err(|error| format!("the local provider could not start: {error}"))?;
        *local = Some(started);
    }
    let local_base_url = local.as_ref().map(|local| local.base_url());
    provider.endpoint(local_base_url.as_deref())
}

enum Ended {
    AppClosing,
    Reconnect,
    Apply(Box<Plan>),
    Failed(String),
}

/// One connected call, until it ends.
async fn talk(
    mut call: Call,
    plan: &mut Plan,
    ui: &mut impl Ui,
    commands: &mut mpsc::UnboundedReceiver<Command>,
    current: &CurrentConversation,
) -> Ended {
    let clock = Clock::start();
    let mut controller = TurnController::new(
        TurnConfig {
            mode: plan.mode.clone(),
            tail_ms: plan.tail_ms,
            pre_roll_ms: plan.pre_roll_ms,
            ..TurnConfig::push_to_talk(plan.session.clone())
        },
        ToolRegistry::with_builtins(),
    );
    let provider = plan
        .provider
        .as_ref()
        .expect("a call is placed only with a usable provider");
    let iterator = controller
        .session_mut()
        .iterate()
        .expect("a new session has no iterator yet");
    let shown = Shown::new(TranscriptBridge::new(call.call_id().to_owned()), provider);
    // The microphone's Opus frames go straight onto the call's audio track.
    let sender = call.sender();
    let sink = move |opus: &[u8], samples: u32| {
        if let Err(error) = sender.send_audio(Bytes::copy_from_slice(opus), samples) {
            log::debug!("a microphone frame was not sent: {error}");
        }
    };
    // The engine's workers queue their reports and wake this task once per pass (20 ms).
    let engine_woken = Arc::new(tokio::sync::Notify::new());
    let waker = {
        let engine_woken = engine_woken.clone();
        move || engine_woken.notify_one()
    };
    let (engine, engine_events) = match Engine::start(plan.engine.clone(), sink, waker) {
        Ok((engine, events)) => (ClosedElsewhere(Some(engine)), events),
        Err(error) => return Ended::Failed(format!("the audio engine could not start: {error}")),
    };
    let playback = Playback {
        player: engine.player(),
        item: None,
    };
    let wall_clock = clock.wall_clock();
    let mut hint = None;
    let recording = match plan.data_dir.clone().and_then(|data_dir| {
        Recording::start(
            current,
            &data_dir,
            wall_clock.utc_offset_minutes,
            wall_clock.unix_ms,
        )
    }) {
        Ok(recording) => Some(recording),
        Err(reason) => {
            log::warn!("{reason}");
            hint = Some(format!("Conversations are not being saved: {reason}."));
            None
        }
    };
    let mut outputs = Outputs {
        playback,
        recording,
        shown,
    };
    outputs.shown.hint = hint;
    controller.wall_clock(clock.now_ms(), wall_clock);
    controller.data_channel_open(clock.now_ms());

    loop {
        if let Err(reason) = flush(
            &mut controller,
            &iterator,
            &mut call,
            &engine,
            &mut outputs,
            ui,
        )
        .await
        {
            return Ended::Failed(reason);
        }
        let deadline = controller.next_deadline_ms().map(|deadline_ms| {
            let wait_ms = deadline_ms.saturating_sub(clock.now_ms());
            tokio::time::Instant::now() + Duration::from_millis(wait_ms)
        });
        tokio::select! {
            event = call.next_event() => {
                let now_ms = clock.now_ms();
                match event {
                    Some(CallEvent::Server(event)) => controller.server_event(event, now_ms),
                    Some(CallEvent::Undecodable { text, .. }) => controller.server_text(&text, now_ms),
                    Some(CallEvent::Audio(audio)) => {
                        engine.receive_rtp(
                            audio.sequence_number,
                            audio.timestamp,
                            &audio.payload,
                            audio.received_at,
                        );
                    }
                    Some(CallEvent::Binary(_)) => {}
                    Some(CallEvent::Disconnected) => ui.status(StatusEvent::new(
                        ConnectionState::Reconnecting,
                        "The connection dropped; trying to get it back…",
                    )),
                    Some(CallEvent::Reconnected) => outputs.shown.invalidate(),
                    Some(CallEvent::Ended(reason)) => {
                        controller.data_channel_closed(now_ms);
                        return Ended::Failed(describe(&reason));
                    }
                    None => return Ended::Failed("the call ended".to_owned()),
                }
            }
            command = commands.recv() => {
                let now_ms = clock.now_ms();
                match command {
                    Some(Command::PushToTalk { pressed: true }) => controller.push_to_talk_down(now_ms),
                    Some(Command::PushToTalk { pressed: false }) => controller.push_to_talk_up(now_ms),
                    Some(Command::Reconnect) => {
                        let _ = call.hangup().await;
                        return Ended::Reconnect;
                    }
                    Some(Command::Apply(plan)) => {
                        let _ = call.hangup().await;
                        return Ended::Apply(plan);
                    }
                    Some(Command::SetTurnMode(mode)) => {
                        // Kept for a reconnect of this plan; the call itself switches now.
                        plan.mode = mode.clone();
                        controller.set_turn_mode(mode, now_ms);
                    }
                    None => {
                        let _ = call.hangup().await;
                        return Ended::AppClosing;
                    }
                }
            }
            _ = engine_woken.notified() => {
                let now_ms = clock.now_ms();
                for event in engine_events.try_iter() {
                    take_engine_event(event, now_ms, &mut controller, &mut outputs, ui);
                }
            }
            _ = sleep_until(deadline) => controller.tick(clock.now_ms()),
        }
    }
}

/// One report of the audio engine: audio to the controller and the recording, device changes
/// to the controller and the status hint, levels to the meters.
fn take_engine_event(
    event: EngineEvent,
    now_ms: u64,
    controller: &mut TurnController,
    outputs: &mut Outputs,
    ui: &mut impl Ui,
) {
    match event {
        EngineEvent::AssistantAudio(chunk) => controller.assistant_audio(chunk, now_ms),
        EngineEvent::SentAudio(chunk) => {
            if let Some(recording) = outputs.recording.as_mut() {
                recording.user_audio(chunk, now_ms as i64);
            }
        }
        EngineEvent::PlaybackProgress { item_id, played_ms } => {
            controller.playback_progress(&item_id, played_ms)
        }
        EngineEvent::PlaybackDrained => controller.playback_drained(now_ms),
        EngineEvent::DeviceFellBack {
            direction,
            using,
            reason,
            ..
        } => {
            if direction == Direction::Input {
                controller.device_changed(DeviceKind::Input, now_ms);
            }
            outputs.shown.hint = Some(format!(
                "The chosen {direction} is not available ({reason}); using {using}."
            ));
        }
        EngineEvent::DeviceChanged { direction, using } => {
            if direction == Direction::Input {
                controller.device_changed(DeviceKind::Input, now_ms);
            }
            outputs.shown.hint = Some(format!("Now using {using} as the {direction}."));
        }
        EngineEvent::DeviceUnavailable { direction, reason } => {
            outputs.shown.hint = Some(format!("No {direction} can be opened: {reason}."));
        }
        EngineEvent::Level { direction, level } => ui.level(direction, level),
    }
}

/// The audio engine, stopped on a thread of its own when the call ends: closing a device
/// stream can take a second (PulseAudio drains it), and the task must be free for the next
/// call at once.
struct ClosedElsewhere(Option<Engine>);

impl std::ops::Deref for ClosedElsewhere {
    type Target = Engine;

    fn deref(&self) -> &Engine {
        self.0
            .as_ref()
            .expect("the engine is taken only when the call ends")
    }
}

impl Drop for ClosedElsewhere {
    fn drop(&mut self) {
        if let Some(engine) = self.0.take() {
            let closing = std::thread::Builder::new()
                .name("walkie-engine-closing".to_owned())
                .spawn(move || drop(engine));
            if let Err(error) = closing {
                log::warn!("closing the audio engine on this task: {error}");
            }
        }
    }
}

/// The playback side of the session: speech deltas to the player, each counted against the
/// assistant item it belongs to.
struct Playback {
    player: Player,
    item: Option<String>,
}

impl Playback {
    fn play(&mut self, controller: &TurnController, event: &SessionEvent) {
        let SessionEvent::PartDelta(delta) = event else {
            return;
        };
        let PartDelta::Speech(speech) = &delta.delta else {
            return;
        };
        let Some(chunk) = &speech.audio_chunk else {
            return;
        };
        if speech.speaker != Speaker::Assistant {
            return;
        }
        let item = controller.current_audio_item();
        if item.is_some() && item != self.item.as_deref() {
            self.item = item.map(str::to_owned);
            self.player.begin_item(item.unwrap_or_default());
        }
        self.player.play(chunk);
    }
}

async fn sleep_until(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}

fn describe(reason: &EndReason) -> String {
    match reason {
        EndReason::DataChannelClosed => "the provider closed the call".to_owned(),
        EndReason::ConnectionFailed(why) => format!("the connection failed ({why})"),
        EndReason::Closed => "the call was closed".to_owned(),
    }
}

/// Where the conversation's results go besides the call: the speaker, the disk, the screen.
struct Outputs {
    playback: Playback,
    recording: Option<Recording>,
    shown: Shown,
}

/// What the webview was last shown, so only changes are sent.
struct Shown {
    bridge: TranscriptBridge,
    status: Option<StatusEvent>,
    /// The last hint, shown until something new happens.
    hint: Option<String>,
    provider_label: String,
}

impl Shown {
    fn new(bridge: TranscriptBridge, provider: &Provider) -> Self {
        Self {
            bridge,
            status: None,
            hint: None,
            provider_label: provider.label(),
        }
    }

    fn invalidate(&mut self) {
        self.status = None;
    }
}

/// Sends what the controller has for the call, the devices, the webview and the log, in its
/// order.
async fn flush(
    controller: &mut TurnController,
    iterator: &EventIterator,
    call: &mut Call,
    engine: &Engine,
    outputs: &mut Outputs,
    ui: &mut impl Ui,
) -> Result<(), String> {
    let Outputs {
        playback,
        recording,
        shown,
    } = outputs;
    while let Some(outgoing) = controller.poll_outgoing() {
        call.send(&outgoing.event, Some(&outgoing.event_id))
            .await
            .map_err(|error| format!("could not send to the provider: {error}"))?;
    }
    while let Some(command) = controller.poll_audio_command() {
        engine.apply(command);
    }
    while let Some(diagnostic) = controller.poll_diagnostic() {
        log::info!("session diagnostic: {diagnostic:?}");
    }
    let mut transcript = Vec::new();
    let mut interrupted = Vec::new();
    while let Ok(Some(delivery)) = controller.session_mut().poll_event(iterator) {
        match delivery {
            Delivery::Event(stamped) => {
                playback.play(controller, &stamped.event);
                if let Some(recording) = recording.as_mut() {
                    recording.event(&stamped, stamped.at_ms as i64);
                }
                let note = shown.bridge.on_event_noted(
                    stamped.at_ms as i64,
                    &stamped.event,
                    &mut transcript,
                );
                if let Some(message_id) = interrupted_reply(&stamped.event, &note) {
                    interrupted.push(message_id);
                }
            }
            Delivery::Failure(stamped) => {
                return Err(format!("the session failed: {:?}", stamped.failure));
            }
        }
    }
    for event in &transcript {
        ui.transcript(event);
    }
    for message_id in &interrupted {
        ui.interrupted(message_id);
    }
    let state = state_of(controller);
    while let Some(hint) = controller.poll_hint() {
        if let Some(sentence) = hint_sentence(&hint) {
            shown.hint = Some(sentence);
        }
    }
    // A hint answers the last press, so it stays while nothing new happens (the session may
    // still be winding that press down) and gives way as soon as there is news of its own.
    let detail = match (&shown.hint, state) {
        (Some(sentence), ConnectionState::Ready | ConnectionState::Thinking) => sentence.clone(),
        _ => {
            shown.hint = None;
            let hands_free = matches!(controller.config().mode, TurnMode::HandsFree(_));
            default_sentence(state, &shown.provider_label, hands_free)
        }
    };
    let status = StatusEvent::new(state, detail);
    if shown.status.as_ref() != Some(&status) {
        ui.status(status.clone());
        shown.status = Some(status);
    }
    Ok(())
}

/// The transcript message of an assistant reply whose audio ended cut off (a barge-in), if
/// `event` ends one.
fn interrupted_reply(event: &SessionEvent, note: &BridgeNote) -> Option<String> {
    let SessionEvent::PartEnd(end) = event else {
        return None;
    };
    let Part::Speech(speech) = &end.part else {
        return None;
    };
    let BridgeNote::PartInTurn { turn, .. } = note else {
        return None;
    };
    (speech.speaker == Speaker::Assistant && speech.interrupted_at_ms.is_some())
        .then(|| walkie_agui::TranscriptWriter::message_id(*turn, walkie_agui::Speaker::Assistant))
}

fn state_of(controller: &TurnController) -> ConnectionState {
    // Hands-free captures all the time: listening is what it does when nothing else happens.
    let hands_free = matches!(controller.config().mode, TurnMode::HandsFree(_));
    if !controller.is_ready() {
        ConnectionState::Connecting
    } else if controller.is_capturing() && !hands_free {
        ConnectionState::Listening
    } else if controller.is_assistant_audible() {
        ConnectionState::Speaking
    } else if controller.active_response_id().is_some() {
        ConnectionState::Thinking
    } else if controller.is_capturing() {
        ConnectionState::Listening
    } else {
        ConnectionState::Ready
    }
}

fn default_sentence(state: ConnectionState, provider_label: &str, hands_free: bool) -> String {
    match state {
        ConnectionState::Connecting => format!("Setting up the session with {provider_label}…"),
        ConnectionState::Ready if hands_free => format!("Ready ({provider_label}): just talk."),
        ConnectionState::Ready => {
            format!("Ready ({provider_label}): hold Space or the button to talk.")
        }
        // Hands-free listens all the time: the provider answers when the user pauses.
        ConnectionState::Listening if hands_free => {
            format!("Listening ({provider_label}): just talk; Walkie answers when you pause.")
        }
        ConnectionState::Listening => "Listening… release to send.".to_owned(),
        ConnectionState::Thinking => "Thinking…".to_owned(),
        ConnectionState::Speaking => "Speaking… press to interrupt.".to_owned(),
        ConnectionState::NotConnected => "Not connected.".to_owned(),
        ConnectionState::Reconnecting => "Reconnecting…".to_owned(),
        ConnectionState::Error => "Something went wrong.".to_owned(),
    }
}

fn hint_sentence(hint: &UiHint) -> Option<String> {
    Some(match hint {
        UiHint::Ready => return None,
        UiHint::NotReady => "Still setting up: try again in a moment.".to_owned(),
        UiHint::PressTooShort { min_press_ms, .. } => {
            format!("Too short to send: hold the key while you speak (at least {min_press_ms} ms).")
        }
        UiHint::ReleasedAutomatically { .. } => {
            "The key was held too long, so Walkie sent what it had.".to_owned()
        }
        UiHint::NothingHeard => "Nothing was heard: no audio reached the provider.".to_owned(),
        UiHint::SessionEndingSoon { remaining_ms } => format!(
            "The session ends in {} minutes (providers allow 60).",
            remaining_ms.div_ceil(60_000)
        ),
        UiHint::SessionLimitReached => {
            "The session reached its 60-minute limit: press Connect for a new one.".to_owned()
        }
    })
}
