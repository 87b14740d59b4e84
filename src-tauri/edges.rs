//! The conversation driver's edges: the clock into `now_ms`, the call's, the audio engine's and
//! the saving's news into the machine's inputs, and the conversation's outputs to the call, the
//! engine, the store and the webview, carried without waiting, in the machine's order.
//! Beginning a conversation waits for its tool servers and its saving to start, and closing one
//! for the hang-up and the close on disk.

use std::sync::Arc;
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use tokio::sync::{Notify, mpsc};
use walkie_audio::engine::{Engine, EngineConfig, EngineError, EngineEvent, Player};
use walkie_conversation::{
    Conversation, Conversations, ConversationsInput, DeviceDirection, DialFailure, EngineInput,
    Input, LevelReading, Output, StatusEvent, TransportInput,
};
use walkie_rtc::{Call, CallEvent, EndReason};
use walkie_session::PlaybackSink;
use walkie_session::turn::{ToolRegistry, TurnMode, UserMessage, WallClock};

use crate::history::Continuing;
use crate::plan::Plan;
use crate::recording::{Recording, Saving, SavingNews};

/// Where the conversation's outputs for the webview go. The app's implementation emits Tauri
/// events.
pub trait Ui: Send + 'static {
    fn status(&mut self, status: StatusEvent);
    fn transcript(&mut self, event: &walkie_agui::Event);
    /// A level reading for the meters, sent only when it moves the meter a step (at most the
    /// engine's meter rate, ten a second by default, per direction).
    fn level(&mut self, direction: DeviceDirection, level: LevelReading);
    /// What the conversation has spent so far.
    fn spending(&mut self, spending: &walkie_conversation::Spending);
    /// How a reply's playback went (the log has it; the window does not show it).
    fn reply_playout(&mut self, playout: &walkie_conversation::ReplyPlayout);
    /// How the connection is doing now (sent when its level or its sentence changes).
    fn connection_health(&mut self, health: &walkie_conversation::ConnectionHealth);
    /// A call of a tool that asks first waits for the user's decision (a card to show).
    fn ask_approval(&mut self, approval: &walkie_conversation::ApprovalRequest);
    /// The card of this call is no longer needed.
    fn approval_closed(&mut self, call_id: &str);
}

/// The machine the driver holds: Walkie's conversations, placed with the app's plans and
/// continuing saved conversations.
pub type Machine = Conversations<Plan, Box<Continuing>>;

/// Where the conversations' inputs come from and their outputs go. Between calls there is no
/// call, no audio engine and no recording.
pub struct Edges<U> {
    pub clock: Clock,
    pub call: Option<Call>,
    pub audio: Option<Audio>,
    pub recording: Option<Recording>,
    pub ui: U,
    /// The MCP servers whose tools the conversation declares, if any.
    pub tool_servers: Option<Arc<walkie_mcp::Servers>>,
    /// Why servers of the list could not be used, or only in part (told to the conversation
    /// when it begins).
    pub tool_server_problems: Vec<walkie_conversation::ToolServerProblem>,
    /// The outcomes of tool calls run off this task, as the machine's inputs.
    tool_results: (mpsc::UnboundedSender<Input>, mpsc::UnboundedReceiver<Input>),
    /// When the connection's health is next read (during a call).
    health_due_ms: u64,
    /// The saved conversation the one just begun goes on with: its recording continues it.
    continuing_id: Option<String>,
}

/// How often the connection's health is read during a call.
const HEALTH_INTERVAL_MS: u64 = 1_000;

impl<U: Ui> Edges<U> {
    pub fn new(ui: U, clock: Clock) -> Self {
        Self {
            clock,
            call: None,
            audio: None,
            recording: None,
            ui,
            tool_servers: None,
            tool_server_problems: Vec::new(),
            tool_results: mpsc::unbounded_channel(),
            health_due_ms: 0,
            continuing_id: None,
        }
    }

    /// Feeds one input of the conversation under way, at the clock's time.
    fn feed(&self, machine: &mut Machine, input: Input) {
        machine.handle_input(ConversationsInput::Conversation(input), self.clock.now_ms());
    }

    /// Starts the audio engine on `call`, which carries the conversation from now on; the call
    /// is hung up when the engine cannot start.
    fn start_audio(&mut self, call: Call, plan: &Plan) -> Result<(), EngineError> {
        let audio = match Audio::start(plan.engine.clone(), &call) {
            Ok(audio) => audio,
            Err(reason) => {
                tauri::async_runtime::spawn(async move { call.hangup().await });
                return Err(reason);
            }
        };
        (self.call, self.audio) = (Some(call), Some(audio));
        Ok(())
    }

    /// The call carries the conversation from now on: the machine is told the time of day and
    /// that the data channel is open.
    fn call_started(&self, machine: &mut Machine) {
        self.feed(machine, Input::WallClock(self.clock.wall_clock()));
        self.feed(machine, Input::Transport(TransportInput::Open));
    }

    /// Begins a conversation on `call`: a new one, or the saved one `continuing` names going
    /// on (its messages shown and given to the session), handed to the machine once its audio
    /// runs. Why it could not begin is the machine's input.
    pub async fn begin(
        &mut self,
        call: Call,
        plan: &Plan,
        continuing: Option<Box<Continuing>>,
        machine: &mut Machine,
    ) -> Result<(), ConversationsInput<Plan, Box<Continuing>>> {
        // Records carry the time of day: the clock is set again for each conversation, so a
        // night the computer slept through does not shift them (the machine has no wait
        // pending while a conversation begins).
        self.clock = Clock::start();
        // A tool call of the last conversation that finishes late is not this one's.
        self.tool_results = mpsc::unbounded_channel();
        let now_ms = self.clock.now_ms();
        let jitter_seed = jitter_seed();
        let tools = ToolRegistry::with_builtins;
        let outside_tools = self
            .tool_servers
            .as_deref()
            .map(|servers| crate::tool_servers::outside_tools(servers, &plan.tool_servers))
            .unwrap_or_default();
        let (conversation, continuing_id) = match continuing {
            Some(saved) => {
                let mut config =
                    plan.conversation_config(saved.thread_id, jitter_seed, outside_tools);
                config.ask_title &= !saved.titled;
                let conversation = Conversation::continuing(config, tools, saved.earlier, now_ms)
                    .having_spent(saved.spent);
                (conversation, Some(saved.id))
            }
            None => {
                // A call answered without `Location` has no id: its transcript needs its own.
                let thread_id = call
                    .call_id()
                    .map_or_else(|| format!("call_{now_ms}"), str::to_owned);
                let config = plan.conversation_config(thread_id, jitter_seed, outside_tools);
                (Conversation::new(config, tools), None)
            }
        };
        if let Err(error) = self.start_audio(call, plan) {
            return Err(ConversationsInput::NotBegun {
                reason: no_audio(&error),
                details: Some(error.to_string()),
            });
        }
        self.continuing_id = continuing_id;
        machine.handle_input(
            ConversationsInput::Began(Box::new(conversation)),
            self.clock.now_ms(),
        );
        self.call_started(machine);
        if !self.tool_server_problems.is_empty() {
            let problems = Input::ToolServerProblems(self.tool_server_problems.clone());
            self.feed(machine, problems);
        }
        Ok(())
    }

    /// Starts saving the conversation just begun (after the data folder's repair): a new one,
    /// or the saved one it continues, as much of it as the user chose; when it cannot be saved,
    /// the machine is told why.
    pub async fn start_saving(&mut self, plan: &Plan, saving: &Saving, machine: &mut Machine) {
        let wall_clock = self.clock.wall_clock();
        let recording = match self.continuing_id.take() {
            Some(id) => saving.continue_saved(&plan.data_dir, &id, wall_clock).await,
            None => saving.start(&plan.data_dir, wall_clock).await,
        };
        match recording {
            Ok(Some(recording)) => self.recording = Some(recording),
            Ok(None) => log::info!("saving nothing of this conversation, as the user chose"),
            Err(error) => {
                log::warn!("not saving this conversation: {error}");
                let not_saving = Input::NotSaving {
                    reason: error.reason(),
                    details: Some(error.to_string()),
                };
                self.feed(machine, not_saving);
            }
        }
    }

    /// The outcome of the redial the machine asked for, as its inputs.
    pub fn dialled(
        &mut self,
        placed: Result<Call, DialFailure>,
        plan: &Plan,
        machine: &mut Machine,
    ) {
        let failure = match placed {
            Ok(call) => {
                self.feed(machine, Input::Dialled);
                match self.start_audio(call, plan) {
                    Ok(()) => return self.call_started(machine),
                    Err(error) => {
                        let failed = TransportInput::Closed(no_audio(&error));
                        return self.feed(machine, Input::Transport(failed));
                    }
                }
            }
            Err(failure) => failure,
        };
        log::warn!("redial failed: {}", failure.sentence);
        self.feed(machine, Input::DialFailed(failure));
    }

    /// Carries one output of the conversation under way to its edge; what fails on the way
    /// comes back as the machine's input.
    pub fn carry(&mut self, output: Output, machine: &mut Machine) {
        let audio = self.audio.as_mut();
        match output {
            Output::Send(sent) => {
                let queued = match &self.call {
                    Some(call) => call.queue(sent.to_json()),
                    None => return,
                };
                if let Err(error) = queued {
                    let failed = TransportInput::SendFailed(error.to_string());
                    self.feed(machine, Input::Transport(failed));
                }
            }
            Output::Audio(command) => audio.iter().for_each(|audio| audio.engine.apply(command)),
            Output::ReplyAudio(reply_audio) => audio
                .iter()
                .for_each(|audio| audio.engine.reply_audio(&reply_audio)),
            Output::BeginItem(item_id) => audio
                .iter()
                .for_each(|audio| audio.player.begin_item(&item_id)),
            Output::Play(chunk) => audio
                .into_iter()
                .for_each(|audio| audio.player.play(&chunk)),
            Output::Transcript(event) => self.ui.transcript(&event),
            // The window has it as a mark in the transcript.
            Output::ReplyLatency {
                latency_ms, split, ..
            } => {
                if let Some(split) = split {
                    log::info!(
                        "a reply was heard {latency_ms} ms after the turn ended: {} ms here, \
                         {} ms at the provider, {} ms on the network, {} ms from its first \
                         packet to the speaker",
                        split.local_ms,
                        split.provider_ms,
                        split.network_ms,
                        split.playout_ms
                    );
                }
            }
            Output::ReplyPlayout(playout) => self.ui.reply_playout(&playout),
            Output::ConnectionHealth(health) => {
                log::info!(
                    "connection {:?}: {} (loss {:?} %, filled in {:?} %, jitter {:.0} ms, round trip {:?} ms)",
                    health.level,
                    health.sentence,
                    health.loss_percent.map(|loss| loss.round()),
                    health.filled_percent.map(|filled| filled.round()),
                    health.jitter_ms,
                    health.round_trip_ms.map(|ms| ms.round())
                );
                self.ui.connection_health(&health);
            }
            Output::Spending(spending) => self.ui.spending(&spending),
            Output::Record(record) => {
                if let Some(recording) = self.recording.as_mut() {
                    recording.save(record);
                }
            }
            Output::Status(status) => self.ui.status(status),
            Output::Level { direction, level } => self.ui.level(direction, level),
            Output::Diagnostic(diagnostic) => log::info!("session diagnostic: {diagnostic:?}"),
            Output::HangUpCall => {
                log::warn!("the call dropped; the conversation goes on in the next");
                self.audio = None;
                if let Some(call) = self.call.take() {
                    tauri::async_runtime::spawn(async move { call.hangup().await });
                }
            }
            // The machine asks for a redial with its plan ([`ConversationsOutput::Redial`]).
            Output::Dial { .. } => {}
            Output::Ended { reason } => log::warn!("conversation ended: {reason}"),
            Output::RunTool(request) => match &self.tool_servers {
                Some(servers) => {
                    crate::tool_servers::run(servers.clone(), request, self.tool_results.0.clone())
                }
                // Only declared tools are called, and they come from the servers.
                None => {
                    let finished = Input::ToolFinished {
                        call_id: request.call_id,
                        result: Err(format!("no server runs the tool {}", request.name)),
                    };
                    self.feed(machine, finished);
                }
            },
            Output::AskApproval(approval) => self.ui.ask_approval(&approval),
            Output::ApprovalClosed { call_id } => self.ui.approval_closed(&call_id),
        }
    }

    /// Closes the conversation that ended: it is closed on disk while its call is hung up, so
    /// a provider slow to answer the hang-up never holds the close record back.
    pub async fn close(&mut self) {
        let recording = self.recording.take();
        let closed = async {
            if let Some(recording) = recording {
                recording.close().await;
            }
        };
        self.audio = None;
        let call = self.call.take();
        let hung_up = async {
            if let Some(call) = call {
                let _ = call.hangup().await;
            }
        };
        tokio::join!(hung_up, closed);
    }

    /// A call event as the machine's input; received audio goes to the engine instead.
    pub fn call_input(&self, event: Option<CallEvent>) -> Option<Input> {
        Some(match event? {
            CallEvent::Text(text) => Input::ServerText(text),
            CallEvent::Audio(audio) => {
                let (sequence, timestamp) = (audio.sequence_number, audio.timestamp);
                let (payload, at) = (&audio.payload, audio.received_at);
                if let Some(engine) = self.audio.as_ref().map(|audio| &audio.engine) {
                    engine.receive_rtp(sequence, timestamp, payload, at);
                }
                return None;
            }
            CallEvent::Binary(_) => return None,
            CallEvent::Disconnected => Input::Transport(TransportInput::Disconnected),
            CallEvent::Reconnected => Input::Transport(TransportInput::Reconnected),
            CallEvent::SendFailed(error) => Input::Transport(TransportInput::SendFailed(error)),
            CallEvent::Ended(reason) => Input::Transport(TransportInput::Closed(describe(&reason))),
        })
    }

    /// The call's receive side and transport as they are now: the jitter buffer's counts and
    /// the interarrival jitter, and the last consent check's round trip.
    fn health_sample(&mut self) -> Option<Input> {
        self.health_due_ms = self.clock.now_ms() + HEALTH_INTERVAL_MS;
        let (call, audio) = (self.call.as_ref()?, self.audio.as_ref()?);
        let engine = audio.engine.stats();
        let jitter = engine.jitter;
        Some(Input::Health(walkie_conversation::HealthSample {
            expected_packets: jitter.expected,
            received_packets: jitter.queued + jitter.late,
            played_frames: jitter.played,
            filled_frames: jitter.concealed + jitter.recovered,
            jitter_ms: engine.interarrival_jitter_ms,
            round_trip_ms: call.peer().stats().round_trip_ms(),
        }))
    }

    /// The audio engine's reports queued since the last call, as the machine's inputs.
    pub fn audio_inputs(&self) -> Vec<Input> {
        let clock = self.clock;
        self.audio
            .iter()
            .flat_map(|audio| audio.inputs(clock))
            .collect()
    }

    /// The next inputs, from whichever edge has news first: the call, the audio engine, the
    /// saving, or the clock at the machine's deadline. The audio engine's reports queued so far
    /// come first whatever woke the task: they happened before it (the engine holds its bulk
    /// reports up to 100 ms, and a barge-in must truncate at the progress last played).
    pub async fn next_inputs(&mut self, deadline_ms: Option<u64>) -> Vec<Input> {
        let clock = self.clock;
        let health_due_ms =
            (self.call.is_some() && self.audio.is_some()).then_some(self.health_due_ms);
        let news: Vec<Input> = tokio::select! {
            _ = clock.sleep_until(health_due_ms) => self.health_sample().into_iter().collect(),
            event = next_call_event(&mut self.call) => self.call_input(event).into_iter().collect(),
            _ = audio_woken(self.audio.as_ref().map(|audio| &*audio.woken)) => Vec::new(),
            news = saving_news(self.recording.as_mut()) => vec![news],
            Some(finished) = self.tool_results.1.recv() => vec![finished],
            _ = clock.sleep_until(deadline_ms) => vec![Input::Tick],
        };
        let mut inputs = self.audio_inputs();
        inputs.extend(news);
        inputs
    }
}

/// A seed for jitter that differs between runs and processes.
pub(crate) fn jitter_seed() -> u64 {
    let now_ns = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_nanos() as u64);
    now_ns ^ u64::from(std::process::id()).rotate_left(32)
}

/// The next news of the saving, as the machine's input (pending without a recording).
pub async fn saving_news(recording: Option<&mut Recording>) -> Input {
    let Some(recording) = recording else {
        return std::future::pending().await;
    };
    match recording.next_news().await {
        SavingNews::Stopped { reason, details } => Input::NotSaving {
            reason,
            details: Some(details),
        },
        SavingNews::Resumed { lost_audio_ms } => Input::SavingResumed { lost_audio_ms },
    }
}

/// The next event of the call, if there is a call (else never).
pub async fn next_call_event(call: &mut Option<Call>) -> Option<CallEvent> {
    match call {
        Some(call) => call.next_event().await,
        None => std::future::pending().await,
    }
}

/// Resolves once the audio engine's workers queued reports (never without an engine).
pub async fn audio_woken(woken: Option<&Notify>) {
    match woken {
        Some(woken) => woken.notified().await,
        None => std::future::pending().await,
    }
}

/// One call's audio engine, with what its workers' reports come through.
pub struct Audio {
    pub engine: ClosedElsewhere,
    pub player: Player,
    pub events: Receiver<EngineEvent>,
    /// Notified at the end of a workers' pass that queued a report the app acts on, and every
    /// 100 ms while the audio and the playback's progress queue.
    pub woken: Arc<Notify>,
}

impl Audio {
    /// Starts the engine; the microphone's Opus frames go straight onto the call's audio track.
    pub fn start(config: EngineConfig, call: &Call) -> Result<Audio, EngineError> {
        let sender = call.sender();
        let sink = move |opus: &[u8], samples: u32| {
            if let Err(error) = sender.send_audio(Bytes::copy_from_slice(opus), samples) {
                log::debug!("a microphone frame was not sent: {error}");
            }
        };
        let woken = Arc::new(Notify::new());
        let waker = {
            let woken = woken.clone();
            move || woken.notify_one()
        };
        let (engine, events) = Engine::start(config, sink, waker)?;
        Ok(Audio {
            player: engine.player(),
            engine: ClosedElsewhere(Some(engine)),
            events,
            woken,
        })
    }

    /// The reports queued since the last call, as the machine's inputs.
    pub fn inputs(&self, clock: Clock) -> impl Iterator<Item = Input> + '_ {
        self.events
            .try_iter()
            .filter_map(move |event| engine_input(event, clock).map(Input::Engine))
    }
}

/// The conversation's clock: Unix milliseconds that never go backwards.
#[derive(Clone, Copy)]
pub struct Clock {
    started: Instant,
    started_unix_ms: u64,
}

impl Clock {
    pub fn start() -> Self {
        let started_unix_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|since| since.as_millis() as u64)
            .unwrap_or_default();
        Self {
            started: Instant::now(),
            started_unix_ms,
        }
    }

    pub fn now_ms(&self) -> u64 {
        self.started_unix_ms + self.started.elapsed().as_millis() as u64
    }

    /// The clock's time at `instant` (the clock's start for an instant before it).
    pub fn ms_at(&self, instant: Instant) -> u64 {
        self.started_unix_ms + instant.saturating_duration_since(self.started).as_millis() as u64
    }

    /// Waits until the machine's next deadline (forever when it has none).
    pub async fn sleep_until(&self, deadline_ms: Option<u64>) {
        match deadline_ms {
            Some(deadline_ms) => {
                let wait_ms = deadline_ms.saturating_sub(self.now_ms());
                tokio::time::sleep(Duration::from_millis(wait_ms)).await
            }
            None => std::future::pending().await,
        }
    }

    pub fn wall_clock(&self) -> WallClock {
        WallClock {
            unix_ms: self.now_ms() as i64,
            utc_offset_minutes: chrono::Local::now().offset().local_minus_utc() / 60,
        }
    }
}

/// One engine report, as the conversation machine's input; how a reply played and how the
/// clocks stand are only logged.
fn engine_input(event: EngineEvent, clock: Clock) -> Option<EngineInput> {
    let input = match event {
        EngineEvent::AssistantAudio(chunk) => EngineInput::AssistantAudio(chunk),
        EngineEvent::SentAudio(chunk) => EngineInput::SentAudio(chunk),
        EngineEvent::PlaybackProgress { item_id, played_ms } => EngineInput::PlayedProgress {
            item_id: item_id.to_string(),
            played_ms,
        },
        EngineEvent::PlaybackDrained => EngineInput::Drained,
        EngineEvent::ReplyHeard {
            first_packet_at,
            at_device,
        } => EngineInput::ReplyHeard {
            first_packet_ms: first_packet_at.map(|at| clock.ms_at(at)),
            heard_ms: clock.ms_at(at_device),
        },
        EngineEvent::DeviceFellBack {
            direction,
            using,
            reason,
            ..
        } => EngineInput::DeviceFellBack {
            direction,
            using,
            reason,
        },
        EngineEvent::DeviceChanged { direction, using } => {
            EngineInput::DeviceChanged { direction, using }
        }
        EngineEvent::DeviceUnavailable { direction, reason } => {
            EngineInput::DeviceUnavailable { direction, reason }
        }
        EngineEvent::EchoCanceller { converged } => EngineInput::EchoCanceller { converged },
        EngineEvent::NearSpeech => EngineInput::NearSpeech,
        EngineEvent::Level { direction, level } => EngineInput::Level {
            direction,
            level: LevelReading {
                rms_dbfs: level.rms_dbfs,
                peak_dbfs: level.peak_dbfs,
            },
        },
        EngineEvent::ReplyPlayed(report) => {
            log::info!("{report}");
            EngineInput::ReplyPlayed(walkie_conversation::ReplyPlayout {
                played_ms: report.played_ms,
                arrival_to_device_ms: report.arrival_to_device_ms,
                silence_inside_ms: report.silence_inside_ms,
                server_gap_ms: report.server_gap_ms,
                concealed_frames: report.concealed_frames,
                late_packets: report.late_packets,
                recovered_frames: report.recovered_frames,
                lost_packets: report.lost_packets,
                flushed: report.flushed,
            })
        }
        EngineEvent::ClockDrift {
            drift_ppm,
            following,
        } => {
            log::info!(
                "the speaker's and the microphone's clocks run {drift_ppm} ppm apart{}",
                if following {
                    ": the echo canceller's reference follows the microphone's"
                } else {
                    ""
                }
            );
            return None;
        }
    };
    Some(input)
}

/// Why a call has no sound, as a phrase for the status line.
fn no_audio(error: &EngineError) -> String {
    format!("the audio engine could not start: {error}")
}

/// Why the call ended, as a phrase for the status line.
/// Why a call ended, as a phrase ("the provider closed the call").
pub(crate) fn describe(reason: &EndReason) -> String {
    match reason {
        EndReason::DataChannelClosed => "the provider closed the call".to_owned(),
        EndReason::ConnectionFailed(why) => format!("the connection failed ({why})"),
        EndReason::Closed => "the call was closed".to_owned(),
    }
}

/// The audio engine, stopped on a thread of its own when the call ends: closing a device
/// stream can take a second (PulseAudio drains it), and the task must be free for the next
/// call at once.
pub struct ClosedElsewhere(pub Option<Engine>);

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

// ---------------------------------------------------------------------------------------------
// The user's edge: the webview's commands (`conversation::input_of` makes each the machine's
// input).

/// What the webview asks of the conversation.
#[derive(Debug, Clone)]
pub enum Command {
    /// The push-to-talk control went down (`true`) or up.
    PushToTalk { pressed: bool },
    /// The push-to-talk control from outside (`walkie --toggle`): down if up, up if down.
    TogglePress,
    /// End the call, and place none until the user asks (`walkie --hang-up`).
    HangUp,
    /// Take the recording under way back (Escape): nothing of it is sent.
    CancelPress,
    /// A message the user wrote (text, pictures or both), for the call.
    SendMessage(UserMessage),
    /// The user allowed (or denied) a tool call that asked first.
    ToolDecision { call_id: String, allowed: bool },
    /// Hang up if connected, then connect again.
    Reconnect,
    /// Stop trying to get a dropped call back.
    CancelRedial,
    /// The settings changed so that another call is needed: the next calls are placed with
    /// this plan (during a call, its own call is placed first: make-before-break).
    Apply(Box<Plan>),
    /// Push-to-talk (hold or toggle) or hands-free from now on, in the same call.
    SetTurnMode(TurnMode),
    /// Typed messages are answered in text alone (or as the session says) from now on.
    SetTypedRepliesInText(bool),
    /// This many rounds of always-allowed tool calls run without asking, from now on.
    SetAutomaticToolRounds(u32),
    /// The next calls renew their session before this limit (the call under way keeps its own).
    SetSessionLimit { session_limit_ms: u64 },
    /// New prices or a new budget, from now on (in the call under way too).
    SetCosting {
        prices: Vec<walkie_settings::prices::PriceRow>,
        minute_prices: Vec<walkie_settings::prices::MinutePriceRow>,
        budget_usd: Option<f64>,
    },
    /// Hang up if connected, then go on with a saved conversation in a new call.
    Continue(Box<Continuing>),
}
