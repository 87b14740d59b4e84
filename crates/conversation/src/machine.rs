//! The machine: the turn controller of the call under way, the one transcript bridge of the
//! conversation, and the policy around them — redialling a dropped call included.

use std::collections::VecDeque;

use walkie_session::transcript::{
    BridgeNote, MARK_CANCELLED, MARK_INTERRUPTED, MARK_LATENCY, TranscriptBridge,
};
use walkie_session::turn::{
    Aside, AsidePurpose, AudioCommand, ControllerOutput, Diagnostic, HistoryRestore, PressMode,
    ToolError, ToolRegistry, Transport, TurnConfig, TurnEngine, TurnInput, TurnMode, TurnState,
    UiHint, UserMessage, engine_for,
};
use walkie_session::{
    Delivery, DeviceDirection, EventIterator, FailureSource, Part, PartDelta, PartIndex,
    SessionEvent, Speaker,
};

use crate::health::HealthWatch;
use crate::input::{EngineInput, Input, TransportInput};
use crate::meters::Meters;
use crate::output::{LatencySplit, Output, Record, UnixMs};
use crate::outside_text::{MAX_OUTSIDE_TEXT_CHARS, outside_text};
use crate::redial::{DialFailure, Jitter, RedialPolicy, Retry};
use crate::restore::{RESTORE_BUDGET_CHARS, restore_items, restore_items_within};
use crate::spending::{Pricing, SessionSeconds, Spending, SpentBefore};
use crate::status::{ConnectionState, StatusAction, StatusEvent, sentence};
use crate::tools::{OutsideTool, Tools, Verdict};

/// How one call's conversation is set up.
#[derive(Debug, Clone)]
pub struct ConversationConfig {
    /// The turn controller's settings (mode, timings, the session to ask for).
    pub turn: TurnConfig,
    /// The provider's name as the status line says it.
    pub provider_label: String,
    /// The AG-UI thread id of the transcript (the first call's id).
    pub thread_id: String,
    /// How a dropped call is dialled again.
    pub redial: RedialPolicy,
    /// Seeds the jitter of redial waits (the machine reads no randomness of its own).
    pub jitter_seed: u64,
    /// The user may interrupt a reply by speaking once the engine's echo canceller is trusted
    /// ([`crate::EngineInput::EchoCanceller`]); otherwise the microphone stays muted while the
    /// assistant is audible (half duplex), whatever the canceller says.
    pub voice_barge_in: bool,
    /// The prices the conversation's responses are costed at, when the model's are known.
    pub pricing: Option<Pricing>,
    /// The prices its transcriptions of the user's speech are costed at, when known.
    pub transcription_pricing: Option<Pricing>,
    /// What the conversation may cost, in US dollars: at 80 % the user is told, and once it is
    /// spent the call ends after the reply under way. Needs `pricing`.
    pub budget_usd: Option<f64>,
    /// Tools served outside the app (MCP servers'), declared to every call's session, with
    /// what the user allows of each.
    pub outside_tools: Vec<OutsideTool>,
    /// How many rounds of calls of tools allowed always run one after another without the
    /// user ([`crate::AUTOMATIC_TOOL_ROUNDS`] by default).
    pub automatic_tool_rounds: u32,
    /// What the user should read once about their settings (a model moved off one that shuts
    /// down): shown as a notice with Open Settings while the conversation is idle.
    pub settings_notice: Option<String>,
    /// Once [`TITLE_AFTER_TURNS`] turns are complete, the model is asked beside the
    /// conversation for its title (when the provider can answer so, and the user did not
    /// choose the first words instead).
    pub ask_title: bool,
}

/// Turns completed before the model is asked for the conversation's title: enough said to
/// name it.
pub const TITLE_AFTER_TURNS: u32 = 3;
/// What the model is asked for a title.
pub const TITLE_INSTRUCTIONS: &str = "Give this conversation a title of at most six words, in \
    the language the user speaks. Answer with the title alone: no quotes, no full stop.";
/// The longest title the model may answer, in tokens.
pub const TITLE_MAX_OUTPUT_TOKENS: u32 = 24;
/// How many times a conversation's title is asked when no answer comes (the call dropped).
pub const MAX_TITLE_REQUESTS: u32 = 3;
/// The longest title kept, in characters (as History's rename).
pub const MAX_TITLE_CHARS: usize = 80;

/// Where asking for the conversation's title stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Titling {
    /// Not asked (the settings, the provider or the conversation say so), or asked and over.
    Never,
    /// Asked once this many turns are complete.
    AfterTurns(u32),
    /// Asked; the answer is awaited.
    Asked,
}

/// Where the conversation stands with its calls.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Phase {
    /// A call carries the conversation.
    InCall,
    /// The call dropped: attempt `attempt` dials at `at_ms`.
    Redialing {
        attempt: u32,
        at_ms: u64,
        reason: String,
    },
    /// Attempt `attempt` is being dialled ([`Output::Dial`] went out).
    Dialing { attempt: u32, reason: String },
    /// The call was ended at a quiet moment before the provider's session cap, and its
    /// successor is being dialled ([`Output::Dial`] went out).
    Renewing,
    /// The conversation is over.
    Ended,
}

/// A reply awaited this long with nothing audible yet is slow, and the status says so.
pub const SLOW_REPLY_MS: u64 = 3_000;

/// News that leaves the call going, with the words behind it and what the user can do.
#[derive(Debug, Clone)]
struct Notice {
    sentence: String,
    details: Option<String>,
    action: StatusAction,
}

/// One conversation (sans-IO), carried by one call after another. See the crate documentation.
#[derive(Debug)]
pub struct Conversation {
    /// The call under way's controller (after a drop, the dropped call's, until the next).
    controller: Box<dyn TurnEngine>,
    /// How many calls have carried the conversation: the current one's number, which names
    /// its session's cumulative usage reports.
    calls: u64,
    /// The provider paused inference (idle) and has not been woken since.
    paused: bool,
    /// The connection's health, judged from the driver's samples.
    health: HealthWatch,
    iterator: EventIterator,
    bridge: TranscriptBridge,
    /// The turn settings each new call starts from (the mode follows the user's switches).
    turn: TurnConfig,
    voice_barge_in: bool,
    tools: fn() -> ToolRegistry,
    /// The outside tools, and their calls waiting for the user.
    outside: Tools,
    /// The hint shown is the one saying a call waits for the user.
    asking: bool,
    provider_label: String,
    redial: RedialPolicy,
    jitter: Jitter,
    phase: Phase,
    /// The conversation so far goes to this call's session once its data channel opens.
    restore_on_open: bool,
    /// The call's connectivity is lost for now (it may come back by itself).
    link_down: bool,
    /// The session nears the provider's cap: the next quiet moment renews it.
    renew_due: bool,
    /// A push-to-talk press that came while the call was being replaced (renewed or
    /// redialled) and is still held: it starts once the next call is ready, so a key pressed
    /// during a renewal is not lost.
    carried_press: bool,
    /// Messages the user typed while no call was ready for them (being set up, or being
    /// replaced): they go out, in order, once one is.
    typed: VecDeque<UserMessage>,
    /// The user part of a press taken back, until its end reaches the transcript (and its
    /// message is marked as not sent).
    cancelled_part: Option<PartIndex>,
    /// Why the conversation is not being saved (and the error behind it), while it is not:
    /// the ready status says so.
    not_saving: Option<(String, Option<String>)>,
    /// The last hint, shown until something new happens.
    hint: Option<String>,
    /// What the user should know while the call goes on (a request the provider refused, a
    /// message Walkie could not read, new settings whose call failed): shown whenever the
    /// conversation is idle, until the user's next turn begins.
    notice: Option<Notice>,
    /// The warning told while a rate limit is nearly spent; told again once it has recovered.
    rate_limit_warning: Option<String>,
    /// Since when a reply has been awaited with nothing audible yet (the Thinking state), and
    /// whether that has lasted [`SLOW_REPLY_MS`] (then the status says the reply is slow).
    thinking_since_ms: Option<u64>,
    reply_slow: bool,
    /// When the user's last turn ended (the key came up, the provider heard them stop, a typed
    /// message went out), until the first sound of the reply to it was played.
    turn_ended_at_ms: Option<u64>,
    /// When that turn's commit went out (push-to-talk), for the latency's split.
    commit_sent_at_ms: Option<u64>,
    /// The status last put out, so only changes go out.
    shown: Option<StatusEvent>,
    /// What the level meters show, so only readings that move them go out.
    meters: Meters,
    /// Where the call's turn stands, as its controller last told.
    turn_state: TurnState,
    /// The assistant item the controller last named for the reply's audio.
    audio_item: Option<String>,
    /// The assistant item the audio being played belongs to.
    playing_item: Option<String>,
    /// What this call's engine was told of its echo canceller (`None`: nothing yet).
    echo_cancelling: Option<bool>,
    /// What every call of the conversation was billed so far.
    spending: Spending,
    budget_usd: Option<f64>,
    /// The user was told that 80 % of the budget is spent.
    budget_warned: bool,
    /// The budget is spent: no new turn starts, and the call ends at the next quiet moment.
    budget_spent: bool,
    /// Whether the conversation's title is still to be asked of the model.
    titling: Titling,
    /// How many times it was asked.
    titles_asked: u32,
    /// Why tool servers of the list could not be used, each naming its server.
    servers_missing: Vec<String>,
    /// Why servers are used without some of their tools, each naming its server.
    servers_cut: Vec<String>,
    /// The outside tools (their titles) left out, as all would not fit in a session.
    tools_left_out: Vec<String>,
    outputs: VecDeque<Output>,
}

impl Conversation {
    /// A conversation whose first call has been placed; `tools` makes each call's tools. Its
    /// first output says it has spent nothing yet (the view drops the last one's figure).
    pub fn new(config: ConversationConfig, tools: fn() -> ToolRegistry) -> Self {
        let (declared, left_out) =
            crate::tools::fitting(&config.turn, tools().definitions(), config.outside_tools);
        let outside = Tools::new(declared, config.automatic_tool_rounds);
        let (controller, iterator) = new_controller(config.turn.clone(), tools, &outside);
        let spending = Spending::new(config.pricing, config.transcription_pricing);
        let turn_state = TurnState::before_the_call(&config.turn.mode);
        let notice = config.settings_notice.map(|sentence| Notice {
            sentence,
            details: None,
            action: StatusAction::OpenSettings,
        });
        Self {
            controller,
            calls: 1,
            paused: false,
            health: HealthWatch::default(),
            iterator,
            bridge: TranscriptBridge::new(config.thread_id),
            turn: config.turn,
            voice_barge_in: config.voice_barge_in,
            tools,
            outside,
            asking: false,
            provider_label: config.provider_label,
            redial: config.redial,
            jitter: Jitter::new(config.jitter_seed),
            phase: Phase::InCall,
            restore_on_open: false,
            link_down: false,
            renew_due: false,
            carried_press: false,
            typed: VecDeque::new(),
            cancelled_part: None,
            not_saving: None,
            hint: None,
            notice,
            rate_limit_warning: None,
            thinking_since_ms: None,
            reply_slow: false,
            turn_ended_at_ms: None,
            commit_sent_at_ms: None,
            shown: None,
            meters: Meters::default(),
            turn_state,
            audio_item: None,
            playing_item: None,
            echo_cancelling: None,
            outputs: VecDeque::from([Output::Spending(Box::new(spending.clone()))]),
            spending,
            budget_usd: config.budget_usd,
            budget_warned: false,
            budget_spent: false,
            titling: if config.ask_title {
                Titling::AfterTurns(TITLE_AFTER_TURNS)
            } else {
                Titling::Never
            },
            titles_asked: 0,
            servers_missing: Vec::new(),
            servers_cut: Vec::new(),
            tools_left_out: left_out.into_iter().map(|tool| tool.title).collect(),
        }
        .showing_tool_problems()
    }

    /// Says which tools the conversation goes without, if any (see
    /// [`sentence::tools_unavailable`]).
    fn showing_tool_problems(mut self) -> Self {
        self.show_tool_problems();
        self
    }

    fn show_tool_problems(&mut self) {
        if let Some((sentence, details)) = sentence::tools_unavailable(
            &self.servers_missing,
            &self.servers_cut,
            &self.tools_left_out,
        ) {
            self.notice = Some(Notice {
                sentence,
                details: Some(details),
                action: StatusAction::OpenSettings,
            });
        }
    }

    /// A conversation that goes on with a saved one (Continue in the history): `earlier` is
    /// its messages (id, role, text) in order. The view is shown them at once (a
    /// MESSAGES_SNAPSHOT in a run of its own, saved too), the call's session is given them once
    /// its data channel opens, and new messages are numbered after them.
    pub fn continuing(
        config: ConversationConfig,
        tools: fn() -> ToolRegistry,
        earlier: impl IntoIterator<Item = impl Into<walkie_agui::EarlierMessage>>,
        now_ms: u64,
    ) -> Self {
        let thread_id = config.thread_id.clone();
        let mut conversation = Self::new(config, tools);
        conversation.bridge = TranscriptBridge::continuing(thread_id, earlier);
        conversation.restore_on_open = true;
        let mut restated = Vec::new();
        conversation
            .bridge
            .restate(UnixMs::of_clock(now_ms).get(), &mut restated);
        for event in &restated {
            conversation
                .outputs
                .push_back(Output::Transcript(event.clone()));
        }
        conversation
            .outputs
            .push_back(Output::Record(Record::Transcript {
                unix_ms: UnixMs::of_clock(now_ms),
                transcript: restated,
            }));
        conversation
    }

    /// Feeds one input at `now_ms` (Unix milliseconds that never go backwards). After the
    /// conversation ended, inputs are ignored; between calls, only what concerns the next call.
    pub fn handle_input(&mut self, input: Input, now_ms: u64) {
        let input = match input {
            Input::TogglePress if self.press_is_held() => Input::Release,
            Input::TogglePress => Input::Press,
            input => input,
        };
        match (&self.phase, input) {
            (Phase::Ended, _) => return,
            (_, Input::HangUp) => return self.hang_up(now_ms),
            (
                _,
                Input::SetCosting {
                    pricing,
                    transcription_pricing,
                    budget_usd,
                },
            ) => self.set_costing(pricing, transcription_pricing, budget_usd),
            (_, Input::SetTypedRepliesInText(in_text)) => {
                self.turn.typed_replies_in_text = in_text;
                if self.phase == Phase::InCall {
                    self.controller
                        .handle_input(TurnInput::TypedRepliesInText(in_text), now_ms);
                }
            }
            (_, Input::SetTurnMode(mode)) => {
                self.turn.mode = mode.clone();
                if self.phase == Phase::InCall {
                    self.controller
                        .handle_input(TurnInput::SetTurnMode(mode), now_ms);
                }
            }
            (_, Input::NotSaving { reason, details }) => {
                // News of its own: it replaces the hint.
                self.not_saving = Some((reason, details));
                self.hint = None;
            }
            (_, Input::SavingResumed { lost_audio_ms }) if self.not_saving.take().is_some() => {
                self.hint = Some(sentence::saving_resumed(lost_audio_ms));
            }
            (_, Input::NewCallDialling { provider_label }) => {
                self.hint = Some(sentence::new_call_dialling(
                    &provider_label,
                    &self.provider_label,
                ));
            }
            (
                _,
                Input::NewCallRefused {
                    provider_label,
                    sentence: why,
                    details,
                },
            ) => {
                self.hint = None;
                self.notice = Some(Notice {
                    sentence: sentence::new_call_refused(
                        &provider_label,
                        &self.provider_label,
                        &why,
                    ),
                    details,
                    action: StatusAction::OpenSettings,
                });
            }
            (_, Input::SetAutomaticToolRounds(rounds)) => self.outside.set_round_limit(rounds),
            (_, Input::ToolServerProblems(problems)) => {
                let said = |used: bool| {
                    problems
                        .iter()
                        .filter(|problem| problem.server_used == used)
                        .map(|problem| outside_text(&problem.said, MAX_OUTSIDE_TEXT_CHARS))
                        .collect()
                };
                (self.servers_missing, self.servers_cut) = (said(false), said(true));
                self.show_tool_problems();
            }
            (_, Input::SendMessage(message)) => {
                self.outside.user_acted();
                // Sent in order, once a call is ready for it (see `flush`).
                self.typed.push_back(message);
                if self.phase != Phase::InCall {
                    self.hint = Some(sentence::text_waits_for_the_call());
                }
            }
            (_, Input::WallClock(clock)) => self
                .controller
                .handle_input(TurnInput::WallClock(clock), now_ms),
            (_, Input::Engine(report)) => self.engine(report, now_ms),
            (Phase::InCall, Input::Health(sample)) => {
                if let Some(health) = self.health.sample(sample, now_ms) {
                    self.outputs.push_back(Output::ConnectionHealth(health));
                }
            }
            // Between calls there is no connection to judge.
            (_, Input::Health(_)) => {}
            // A press carried to the next call is taken back before it started.
            (_, Input::CancelPress) if self.carried_press => {
                self.carried_press = false;
                self.hint = Some(sentence::press_cancelled());
            }
            (Phase::InCall, input) => self.in_call(input, now_ms),
            (Phase::Redialing { at_ms, .. }, Input::Tick) if now_ms >= *at_ms => {
                let Phase::Redialing {
                    attempt, reason, ..
                } = std::mem::replace(&mut self.phase, Phase::Ended)
                else {
                    unreachable!("matched as redialing just above");
                };
                self.phase = Phase::Dialing { attempt, reason };
                self.dial();
            }
            (Phase::Dialing { .. } | Phase::Renewing, Input::Dialled) => self.next_call(),
            (Phase::Dialing { attempt, .. }, Input::DialFailed(failure)) => {
                let attempt = *attempt;
                self.dial_failed(attempt, failure, now_ms)
            }
            (Phase::Renewing, Input::DialFailed(failure)) => {
                self.phase = Phase::Dialing {
                    attempt: 0,
                    reason: "the session could not be renewed".to_owned(),
                };
                self.dial_failed(0, failure, now_ms)
            }
            (
                Phase::Redialing { .. } | Phase::Dialing { .. } | Phase::Renewing,
                Input::CancelRedial,
            ) => {
                return self.finish("reconnecting was cancelled".to_owned(), now_ms);
            }
            (Phase::Redialing { .. } | Phase::Dialing { .. } | Phase::Renewing, Input::Press) => {
                self.carry_key_down();
                // A renewal is over in a moment; a redial may not be, and says so.
                if self.phase != Phase::Renewing {
                    self.hint = Some(sentence::press_while_redialing());
                }
            }
            (Phase::Redialing { .. } | Phase::Dialing { .. } | Phase::Renewing, Input::Release) => {
                self.release_carried_press();
            }
            // The dropped call's last words, and inputs for a call there is not.
            _ => {}
        }
        self.flush(now_ms);
    }

    fn in_call(&mut self, input: Input, now_ms: u64) {
        let controller = &mut self.controller;
        match input {
            // A press carried over starts when the call is ready; a second press (toggle mode)
            // takes it back.
            Input::Press if self.carried_press => self.carry_key_down(),
            // The budget is spent: the reply under way plays out, and no turn starts.
            Input::Press if self.budget_spent => {
                if let Some(budget_usd) = self.budget_usd {
                    self.hint = Some(sentence::budget_spent_during_reply(budget_usd));
                }
            }
            Input::Press => {
                self.outside.user_acted();
                controller.handle_input(TurnInput::KeyDown, now_ms)
            }
            Input::Release if self.carried_press => self.release_carried_press(),
            Input::Release if self.budget_spent && !self.turn_state.capturing => {}
            Input::Release => {
                controller.handle_input(TurnInput::KeyUp, now_ms);
                self.turn_ended_at_ms = Some(now_ms);
                self.commit_sent_at_ms = None;
            }
            Input::CancelPress => controller.handle_input(TurnInput::CancelPress, now_ms),
            Input::ServerText(text) => controller.handle_input(TurnInput::ServerText(text), now_ms),
            Input::Transport(TransportInput::Open) => {
                // Each call starts its own engine: it is told afresh.
                self.echo_cancelling = None;
                controller.handle_input(TurnInput::ChannelOpened, now_ms);
                if std::mem::take(&mut self.restore_on_open)
                    && controller.profile().history == HistoryRestore::OverDataChannel
                {
                    let so_far: Vec<(walkie_agui::Role, String)> =
                        self.bridge.restorable().collect();
                    let so_far = so_far.iter().map(|(role, text)| (*role, text.as_str()));
                    controller.handle_input(
                        TurnInput::ConversationSoFar(restore_items(so_far, RESTORE_BUDGET_CHARS)),
                        now_ms,
                    );
                }
            }
            Input::Transport(TransportInput::Disconnected) => {
                // Shown until the conversation's own status changes, or the link is back.
                self.link_down = true;
                self.outputs
                    .push_back(Output::Status(StatusEvent::reconnecting()));
            }
            Input::Transport(TransportInput::Reconnected) => {
                self.link_down = false;
                self.shown = None;
            }
            Input::CancelRedial if self.link_down => {
                controller.handle_input(TurnInput::ChannelClosed, now_ms);
                self.drain(now_ms);
                self.finish("reconnecting was cancelled".to_owned(), now_ms);
            }
            Input::Transport(TransportInput::SendFailed(error)) => {
                self.lose_call(format!("could not send to the provider: {error}"), now_ms)
            }
            Input::Transport(TransportInput::Closed(reason)) => self.lose_call(reason, now_ms),
            Input::Tick => {
                for (call_id, denial) in self.outside.expire(now_ms) {
                    self.outputs.push_back(Output::ApprovalClosed {
                        call_id: call_id.clone(),
                    });
                    self.controller.handle_input(
                        TurnInput::ToolFinished {
                            call_id,
                            result: Err(denial),
                        },
                        now_ms,
                    );
                }
                self.show_waiting_approval();
                self.controller.handle_input(TurnInput::Tick, now_ms)
            }
            Input::ToolDecision { call_id, allowed } => {
                self.outside.user_acted();
                match self.outside.decide(&call_id, allowed) {
                    Some(Ok(request)) => self.outputs.push_back(Output::RunTool(request)),
                    Some(Err((call_id, denial))) => controller.handle_input(
                        TurnInput::ToolFinished {
                            call_id,
                            result: Err(denial),
                        },
                        now_ms,
                    ),
                    None => return,
                }
                self.outputs.push_back(Output::ApprovalClosed { call_id });
                self.show_waiting_approval();
            }
            Input::ToolFinished { call_id, result } => {
                self.outside.finished(&call_id);
                let result = result.map_err(|failure| {
                    let shown = outside_text(&failure, MAX_OUTSIDE_TEXT_CHARS);
                    self.hint = Some(sentence::tool_failed(&shown));
                    ToolError::Failed { message: failure }
                });
                self.controller
                    .handle_input(TurnInput::ToolFinished { call_id, result }, now_ms);
            }
            // Handled for every phase, or meaningless during a call.
            Input::Health(_)
            | Input::TogglePress
            | Input::HangUp
            | Input::SetTurnMode(_)
            | Input::SetTypedRepliesInText(_)
            | Input::SetCosting { .. }
            | Input::NotSaving { .. }
            | Input::SavingResumed { .. }
            | Input::NewCallDialling { .. }
            | Input::NewCallRefused { .. }
            | Input::ToolServerProblems(_)
            | Input::SetAutomaticToolRounds(_)
            | Input::SendMessage(_)
            | Input::WallClock(_)
            | Input::Engine(_)
            | Input::Dialled
            | Input::DialFailed(_)
            | Input::CancelRedial => {}
        }
    }

    /// The user leaves the conversation: the call winds down and the transcript closes.
    fn hang_up(&mut self, now_ms: u64) {
        if self.phase == Phase::InCall {
            self.controller
                .handle_input(TurnInput::ChannelClosed, now_ms);
            self.flush(now_ms);
        }
        // The flush may have ended the conversation already (a session failure), transcript
        // closed included.
        if self.phase != Phase::Ended {
            self.phase = Phase::Ended;
            self.close_transcript(now_ms);
        }
    }

    /// The call dropped under the conversation: it ends, and the first redial is scheduled.
    fn lose_call(&mut self, reason: String, now_ms: u64) {
        if self.end_call(now_ms) {
            self.schedule_redial(1, None, reason, now_ms);
        }
    }

    /// A quiet moment near the provider's session cap: the call ends and its successor is
    /// dialled at once, so the cap never cuts a turn.
    fn renew(&mut self, now_ms: u64) {
        self.renew_due = false;
        if self.end_call(now_ms) {
            self.phase = Phase::Renewing;
            self.dial();
        }
    }

    /// Asks for the next call, with the conversation so far when its family takes it then.
    fn dial(&mut self) {
        let history = if self.controller.profile().history == HistoryRestore::AtCallSetup {
            let so_far: Vec<(walkie_agui::Role, String)> = self.bridge.restorable().collect();
            restore_items_within(
                so_far.iter().map(|(role, text)| (*role, text.as_str())),
                RESTORE_BUDGET_CHARS,
                walkie_openai::live::MAX_INITIAL_MESSAGES,
            )
        } else {
            Vec::new()
        };
        self.outputs.push_back(Output::Dial { history });
    }

    /// Ends the call under way and keeps the conversation: the call's transcript closes (a
    /// reply it cut is marked), and the driver hangs it up. `false` when the conversation
    /// itself ended meanwhile (a failure the wind-down delivered).
    fn end_call(&mut self, now_ms: u64) -> bool {
        if self.phase != Phase::InCall {
            return false;
        }
        let cut_reply = self.bridge.reply_in_progress();
        // Failures the wind-down delivers belong to this call's end.
        self.phase = Phase::Renewing;
        self.controller
            .handle_input(TurnInput::ChannelClosed, now_ms);
        self.drain(now_ms);
        if self.phase == Phase::Ended {
            return false;
        }
        let mut transcript = Vec::new();
        if let Some(message_id) = cut_reply {
            // Marked after its END, inside its run, which the call's end finishes.
            self.bridge
                .close_open_messages(UnixMs::of_clock(now_ms).get(), &mut transcript);
            let fields = walkie_agui::JsonObject::new();
            self.bridge.mark(
                UnixMs::of_clock(now_ms).get(),
                &message_id,
                MARK_INTERRUPTED,
                &fields,
                &mut transcript,
            );
        }
        self.bridge
            .call_ended(UnixMs::of_clock(now_ms).get(), &mut transcript);
        self.outputs
            .extend(transcript.iter().cloned().map(Output::Transcript));
        self.outputs.push_back(Output::Record(Record::Transcript {
            unix_ms: UnixMs::of_clock(now_ms),
            transcript,
        }));
        self.playing_item = None;
        self.close_approvals();
        self.outputs.push_back(Output::HangUpCall);
        true
    }

    /// Attempt `attempt` will dial after its wait, or, past the bound, the user decides.
    fn schedule_redial(
        &mut self,
        attempt: u32,
        retry_after_ms: Option<u64>,
        reason: String,
        now_ms: u64,
    ) {
        if attempt > self.redial.max_attempts {
            let attempts = self.redial.max_attempts;
            return self.finish(sentence::redial_gave_up(&reason, attempts), now_ms);
        }
        let wait_ms = self
            .redial
            .delay_ms(attempt, self.jitter.next_unit(), retry_after_ms);
        self.phase = Phase::Redialing {
            attempt,
            at_ms: now_ms.saturating_add(wait_ms),
            reason,
        };
    }

    fn dial_failed(&mut self, attempt: u32, failure: DialFailure, now_ms: u64) {
        match failure.retry {
            Retry::Later { after_ms } => {
                let reason = match &self.phase {
                    Phase::Dialing { reason, .. } => reason.clone(),
                    _ => failure.sentence.clone(),
                };
                self.schedule_redial(attempt + 1, after_ms, reason, now_ms)
            }
            Retry::Never => {
                self.phase = Phase::Ended;
                self.close_transcript(now_ms);
                self.outputs
                    .push_back(Output::Status(failure.status(&self.provider_label)));
                self.outputs.push_back(Output::Ended {
                    reason: failure.sentence,
                });
            }
        }
    }

    /// A new call was placed: a fresh controller and session carry the conversation on, and
    /// the conversation so far goes to the provider once the data channel opens.
    fn next_call(&mut self) {
        let (controller, iterator) = new_controller(self.turn.clone(), self.tools, &self.outside);
        self.close_approvals();
        self.controller = controller;
        self.turn_state = TurnState::before_the_call(&self.turn.mode);
        self.audio_item = None;
        self.calls += 1;
        self.paused = false;
        self.health.call_began();
        self.iterator = iterator;
        self.phase = Phase::InCall;
        self.restore_on_open = true;
        self.link_down = false;
        self.renew_due = false;
        self.notice = None;
        self.shown = None;
    }

    /// Closes the cards of calls waiting for the user: their session ended.
    fn close_approvals(&mut self) {
        for call_id in self.outside.drop_waiting() {
            self.outputs.push_back(Output::ApprovalClosed { call_id });
        }
        self.show_waiting_approval();
    }

    /// While a call waits for the user, the hint says so (the card has the buttons); once
    /// none waits, that hint goes.
    fn show_waiting_approval(&mut self) {
        match self.outside.first_waiting() {
            Some(approval) => {
                self.hint = Some(sentence::tool_waits_for_you(&approval.title));
                self.asking = true;
            }
            None if std::mem::take(&mut self.asking) => self.hint = None,
            None => {}
        }
    }

    /// The next output, in causal order.
    pub fn poll_output(&mut self) -> Option<Output> {
        self.outputs.pop_front()
    }

    /// When to feed [`Input::Tick`] next.
    pub fn next_deadline_ms(&self) -> Option<u64> {
        match &self.phase {
            Phase::InCall => {
                let slow_at_ms = self
                    .thinking_since_ms
                    .filter(|_| !self.reply_slow)
                    .map(|since_ms| since_ms.saturating_add(SLOW_REPLY_MS));
                [
                    self.controller.next_deadline_ms(),
                    slow_at_ms,
                    self.outside.next_deadline_ms(),
                ]
                .into_iter()
                .flatten()
                .min()
            }
            Phase::Redialing { at_ms, .. } => Some(*at_ms),
            Phase::Dialing { .. } | Phase::Renewing | Phase::Ended => None,
        }
    }

    fn engine(&mut self, report: EngineInput, now_ms: u64) {
        let controller = &mut self.controller;
        match report {
            EngineInput::AssistantAudio(chunk) => {
                controller.handle_input(TurnInput::AssistantAudio(chunk), now_ms)
            }
            EngineInput::SentAudio(chunk) => {
                self.outputs.push_back(Output::Record(Record::UserAudio {
                    unix_ms: UnixMs::of_clock(now_ms),
                    chunk,
                }))
            }
            EngineInput::PlayedProgress { item_id, played_ms } => {
                if played_ms > 0
                    && let Some(ended_at_ms) = self.turn_ended_at_ms
                    && let Some(message_id) = self.bridge.reply_in_progress()
                {
                    self.turn_ended_at_ms = None;
                    self.commit_sent_at_ms = None;
                    self.reply_latency(
                        message_id,
                        now_ms.saturating_sub(ended_at_ms),
                        None,
                        now_ms,
                    );
                }
                self.controller
                    .handle_input(TurnInput::PlaybackProgress { item_id, played_ms }, now_ms)
            }
            EngineInput::ReplyHeard {
                first_packet_ms,
                heard_ms,
            } => {
                // The device's own time of the first sound, and where the wait went; the
                // progress report that follows finds the latency told.
                if let Some(ended_at_ms) = self.turn_ended_at_ms
                    && let Some(message_id) = self.bridge.reply_in_progress()
                {
                    self.turn_ended_at_ms = None;
                    let sent_at_ms = self.commit_sent_at_ms.take().unwrap_or(ended_at_ms);
                    let split = first_packet_ms.map(|first_packet_ms| {
                        LatencySplit::of(
                            ended_at_ms,
                            sent_at_ms,
                            first_packet_ms,
                            heard_ms,
                            self.health.round_trip_ms(),
                        )
                    });
                    self.reply_latency(
                        message_id,
                        heard_ms.saturating_sub(ended_at_ms),
                        split,
                        now_ms,
                    );
                }
            }
            EngineInput::ReplyPlayed(playout) => {
                self.outputs.push_back(Output::ReplyPlayout(playout))
            }
            EngineInput::Drained => {
                controller.handle_input(TurnInput::PlaybackDrained, now_ms);
                self.rest_meter(DeviceDirection::Output);
            }
            EngineInput::DeviceFellBack {
                direction,
                using,
                reason,
            } => {
                if direction == DeviceDirection::Input {
                    controller
                        .handle_input(TurnInput::DeviceChanged(DeviceDirection::Input), now_ms);
                }
                self.hint = Some(sentence::device_fell_back(direction, &using, &reason));
            }
            EngineInput::DeviceChanged { direction, using } => {
                if direction == DeviceDirection::Input {
                    controller
                        .handle_input(TurnInput::DeviceChanged(DeviceDirection::Input), now_ms);
                }
                self.hint = Some(sentence::device_changed(direction, &using));
            }
            EngineInput::DeviceUnavailable { direction, reason } => {
                self.hint = Some(sentence::device_unavailable(direction, &reason));
            }
            EngineInput::EchoCanceller { converged } => {
                if self.voice_barge_in {
                    // The canceller lives in the engine, across calls: the next call starts so.
                    self.turn.echo_canceller = converged;
                    controller.handle_input(TurnInput::EchoCancelled { converged }, now_ms);
                }
            }
            EngineInput::NearSpeech => {
                if self.voice_barge_in {
                    controller.handle_input(TurnInput::NearSpeech, now_ms);
                }
            }
            EngineInput::Level { direction, level } => {
                if self.meters.moves(direction, level) {
                    self.outputs.push_back(Output::Level { direction, level });
                }
            }
        }
    }

    /// The echo canceller runs while the call's turns are hands-free, where the microphone is
    /// sent while a reply plays; with push-to-talk a press flushes the reply first, so it is
    /// paused (it costs more than the rest of the audio path together). The mode the
    /// controller applies counts, not the one asked for: a switch waits for the turn under way.
    fn tell_echo_canceller(&mut self) {
        let on = self.turn_state.hands_free();
        if self.echo_cancelling != Some(on) {
            self.echo_cancelling = Some(on);
            self.outputs
                .push_back(Output::Audio(AudioCommand::CancelEcho { on }));
        }
    }

    /// Rests the `direction` meter at its floor once its sound has stopped.
    fn rest_meter(&mut self, direction: DeviceDirection) {
        if let Some(level) = self.meters.rest(direction) {
            self.outputs.push_back(Output::Level { direction, level });
        }
    }

    /// The conversation is over: the transcript closes, and the status says why.
    fn finish(&mut self, reason: String, now_ms: u64) {
        self.end(StatusEvent::not_connected(&reason), reason, now_ms);
    }

    /// The conversation is over (for `reason`, a phrase): the transcript closes, and `status`
    /// says why.
    fn end(&mut self, status: StatusEvent, reason: String, now_ms: u64) {
        if self.phase == Phase::Ended {
            return;
        }
        self.phase = Phase::Ended;
        self.close_approvals();
        self.close_transcript(now_ms);
        self.outputs.push_back(Output::Status(status));
        self.outputs.push_back(Output::Ended { reason });
    }

    /// The conversation had spent this much before this part of it (a saved one continued).
    /// The figure shown and the budget count it.
    pub fn having_spent(mut self, before: SpentBefore) -> Self {
        self.spending.tokens = before.tokens;
        self.spending.responses = before.responses;
        self.spending.transcribed_seconds = before.transcribed_seconds;
        self.spending.transcriptions = before.transcriptions;
        if before.cost_usd.is_some() {
            self.spending.cost_usd = before.cost_usd;
        }
        for output in &mut self.outputs {
            if let Output::Spending(shown) = output {
                **shown = self.spending.clone();
            }
        }
        self.check_budget();
        self
    }

    /// Moves what the controller and its session produced to the outputs, in their order, then
    /// the status if it changed.
    fn flush(&mut self, now_ms: u64) {
        self.drain(now_ms);
        if self.carried_press && self.phase == Phase::InCall && self.turn_state.ready {
            self.carried_press = false;
            self.hint = None;
            self.controller.handle_input(TurnInput::KeyDown, now_ms);
            self.drain(now_ms);
        }
        // Once the budget is spent, what is typed waits, to be handed back when the call ends.
        if self.phase == Phase::InCall
            && self.turn_state.ready
            && !self.typed.is_empty()
            && !self.budget_spent
        {
            while let Some(message) = self.typed.pop_front() {
                self.controller
                    .handle_input(TurnInput::UserMessage(message), now_ms);
            }
            self.drain(now_ms);
        }
        if self.budget_spent && self.phase == Phase::InCall && self.is_quiet() {
            return self.spend_out(now_ms);
        }
        if self.renew_due && self.phase == Phase::InCall && self.is_quiet() {
            self.renew(now_ms);
        }
        self.ask_title_when_due(now_ms);
        if self.phase == Phase::InCall {
            self.tell_echo_canceller();
        }
        if self.phase == Phase::InCall && self.state() == ConnectionState::Thinking {
            let since_ms = *self.thinking_since_ms.get_or_insert(now_ms);
            // Once past, the deadline is spent, whatever the status shows meanwhile.
            self.reply_slow |= now_ms >= since_ms.saturating_add(SLOW_REPLY_MS);
        } else {
            self.thinking_since_ms = None;
            self.reply_slow = false;
        }
        self.show_status();
    }

    /// New prices for the responses to come (what was spent stays as costed) and a new budget,
    /// judged at once: a budget raised above what was spent lets the call go on.
    fn set_costing(
        &mut self,
        pricing: Option<Pricing>,
        transcription_pricing: Option<Pricing>,
        budget_usd: Option<f64>,
    ) {
        self.spending.set_pricing(pricing, transcription_pricing);
        self.budget_usd = budget_usd;
        let spent_usd = self.spending.cost_usd.unwrap_or(0.0);
        let budget_usd = budget_usd.unwrap_or(f64::INFINITY);
        if self.budget_spent && spent_usd < budget_usd {
            // The notice is the one saying the call ends after this reply.
            self.budget_spent = false;
            self.notice = None;
        }
        if spent_usd < 0.8 * budget_usd {
            self.budget_warned = false;
        }
        self.outputs
            .push_back(Output::Spending(Box::new(self.spending.clone())));
        self.check_budget();
    }

    /// Says once when a rate limit is nearly spent (under a tenth of it left), and again only
    /// after it has recovered: the next replies may be refused or slow until it resets.
    fn rate_limits(&mut self, limits: &[walkie_openai::RateLimit]) {
        let nearly_spent = limits
            .iter()
            .find(|limit| match (limit.limit, limit.remaining) {
                (Some(limit), Some(remaining)) => limit > 0 && remaining.saturating_mul(10) < limit,
                _ => false,
            });
        match nearly_spent {
            Some(limit) if self.rate_limit_warning.is_none() => {
                let warning = sentence::rate_limit_nearly_spent(
                    &self.provider_label,
                    limit.name.as_deref(),
                    limit.reset_seconds,
                );
                self.hint = Some(warning.clone());
                self.rate_limit_warning = Some(warning);
            }
            Some(_) => {}
            // Recovered: a warning still shown is no longer true.
            None => {
                if let Some(warning) = self.rate_limit_warning.take()
                    && self.hint.as_ref() == Some(&warning)
                {
                    self.hint = None;
                }
            }
        }
    }

    /// Something was billed (`billed`, added to the spending already): it is saved, what the
    /// conversation has spent is shown, and the budget is judged.
    fn billed(&mut self, billed: Record) {
        self.outputs.push_back(Output::Record(billed));
        self.outputs
            .push_back(Output::Spending(Box::new(self.spending.clone())));
        self.check_budget();
    }

    /// Tells the user when 80 % of the budget is spent, and marks it spent at 100 %.
    fn check_budget(&mut self) {
        let (Some(budget_usd), Some(spent_usd)) = (self.budget_usd, self.spending.cost_usd) else {
            return;
        };
        if spent_usd >= budget_usd {
            if !self.budget_spent {
                self.budget_spent = true;
                self.notice = Some(Notice {
                    sentence: sentence::budget_spent_during_reply(budget_usd),
                    details: None,
                    action: StatusAction::Dismiss,
                });
            }
        } else if spent_usd >= 0.8 * budget_usd && !self.budget_warned {
            self.budget_warned = true;
            self.notice = Some(Notice {
                sentence: sentence::budget_nearly_spent(spent_usd, budget_usd),
                details: None,
                action: StatusAction::Dismiss,
            });
        }
    }

    /// The budget is spent and the call is quiet: the conversation ends here.
    fn spend_out(&mut self, now_ms: u64) {
        self.controller
            .handle_input(TurnInput::ChannelClosed, now_ms);
        self.drain(now_ms);
        if self.phase == Phase::Ended {
            return;
        }
        let unsent: Vec<String> = self.typed.drain(..).map(unsent_words).collect();
        let status = StatusEvent::budget_spent(
            self.spending.cost_usd.unwrap_or_default(),
            self.budget_usd.unwrap_or_default(),
            &unsent,
        );
        self.end(status, "its budget is spent".to_owned(), now_ms);
    }

    /// Asks the model for the conversation's title once enough turns are complete, at a quiet
    /// moment of a call that is ready, with budget left.
    fn ask_title_when_due(&mut self, now_ms: u64) {
        if self.titling != Titling::AfterTurns(0)
            || self.phase != Phase::InCall
            || !self.turn_state.ready
            || self.budget_spent
            || !self.is_quiet()
        {
            return;
        }
        self.titling = Titling::Asked;
        self.titles_asked += 1;
        self.controller.handle_input(
            TurnInput::Aside(Aside {
                purpose: AsidePurpose::Title,
                instructions: TITLE_INSTRUCTIONS.to_owned(),
                max_output_tokens: TITLE_MAX_OUTPUT_TOKENS,
            }),
            now_ms,
        );
        self.drain(now_ms);
    }

    /// The model's title: one line of at most [`MAX_TITLE_CHARS`], without the quotes and
    /// full stop it was asked not to give, saved with the conversation.
    fn titled(&mut self, answer: &str, now_ms: u64) {
        self.titling = Titling::Never;
        let line = crate::outside_text(answer, MAX_TITLE_CHARS);
        let title = line
            .trim_matches(|c: char| matches!(c, '"' | '\'' | '“' | '”' | '«' | '»' | '*' | '#'))
            .trim_end_matches('.')
            .trim();
        let title = title.strip_prefix("Title:").map_or(title, str::trim);
        if title.is_empty() {
            self.outputs
                .push_back(Output::Diagnostic(Diagnostic::AsideUnanswered {
                    purpose: AsidePurpose::Title,
                    reason: "the model's title was empty".to_owned(),
                }));
            return;
        }
        self.outputs.push_back(Output::Record(Record::Titled {
            unix_ms: UnixMs::of_clock(now_ms),
            title: title.to_owned(),
        }));
    }

    /// Nobody is talking and nothing is on its way: no reply pending or audible, no part of
    /// either side open, no press (in push-to-talk), no tool call unanswered.
    fn is_quiet(&self) -> bool {
        let turn = &self.turn_state;
        !turn.awaits_reply
            && !turn.assistant_audible
            && (turn.hands_free() || !turn.capturing)
            && !self.bridge.has_open_parts()
            // A tool call running or waiting for the user is answered in this session.
            && !turn.waiting_tool_calls
    }

    /// Moves what the controller and its session produced to the outputs, in their order.
    fn drain(&mut self, now_ms: u64) {
        while let Some(output) = self.controller.poll_output() {
            match output {
                ControllerOutput::Send(event) => {
                    // The user's turn goes out: where the wait for the reply starts.
                    if self.turn_ended_at_ms.is_some()
                        && event.event.event_type() == "input_audio_buffer.commit"
                    {
                        self.commit_sent_at_ms = Some(now_ms);
                    }
                    self.outputs.push_back(Output::Send(event))
                }
                ControllerOutput::TurnState(state) => self.turn_state = state,
                ControllerOutput::ReplyAudio(reply_audio) => {
                    self.audio_item.clone_from(&reply_audio.item_id);
                    if self.turn.transport == Transport::WebRtc {
                        self.outputs.push_back(Output::ReplyAudio(reply_audio))
                    }
                }
                ControllerOutput::Audio(command) => {
                    self.outputs.push_back(Output::Audio(command));
                    if command == AudioCommand::FlushPlayback {
                        self.rest_meter(DeviceDirection::Output);
                    }
                }
                // Near the cap the session is renewed, not announced.
                ControllerOutput::Hint(
                    UiHint::SessionEndingSoon { .. } | UiHint::SessionLimitReached,
                ) => self.renew_due = true,
                ControllerOutput::Hint(UiHint::Paused) => self.paused = true,
                ControllerOutput::Hint(UiHint::Resumed) => self.paused = false,
                ControllerOutput::Hint(hint) => {
                    if let Some(sentence) = sentence::hint(&hint) {
                        self.hint = Some(sentence);
                    }
                }
                ControllerOutput::Diagnostic(diagnostic) => {
                    self.outputs.push_back(Output::Diagnostic(diagnostic))
                }
                ControllerOutput::ToolCall(request) => match self.outside.judge(request, now_ms) {
                    Verdict::Run(request) => self.outputs.push_back(Output::RunTool(request)),
                    Verdict::Ask(approval) => {
                        self.outputs.push_back(Output::AskApproval(approval));
                        self.show_waiting_approval();
                    }
                    // Answered at once; what that sends follows in this same loop.
                    Verdict::Refuse(call_id, error) => self.controller.handle_input(
                        TurnInput::ToolFinished {
                            call_id,
                            result: Err(error),
                        },
                        now_ms,
                    ),
                },
                ControllerOutput::Billed(usage) => {
                    let (tokens, cost_usd) = self.spending.add(&usage);
                    let model = model_of(self.spending.pricing.as_ref());
                    self.billed(Record::Billed {
                        unix_ms: UnixMs::of_clock(now_ms),
                        tokens,
                        cost_usd,
                        model,
                        transcribed_seconds: None,
                    });
                }
                ControllerOutput::Transcribed(usage) => {
                    let bill = self.spending.add_transcription(&usage);
                    let model = model_of(self.spending.transcription_pricing.as_ref());
                    self.billed(Record::Billed {
                        unix_ms: UnixMs::of_clock(now_ms),
                        tokens: bill.tokens,
                        cost_usd: bill.cost_usd,
                        model,
                        // A transcription billed by tokens is still a transcription.
                        transcribed_seconds: Some(bill.seconds.unwrap_or(0.0)),
                    });
                }
                ControllerOutput::SessionTime {
                    active_seconds,
                    paused_seconds,
                } => {
                    let reported = SessionSeconds {
                        active: active_seconds,
                        paused: paused_seconds,
                    };
                    let bill = self
                        .spending
                        .add_session_usage(&format!("call-{}", self.calls), reported);
                    if bill.added.active > 0.0 || bill.added.paused > 0.0 {
                        self.billed(Record::Billed {
                            unix_ms: UnixMs::of_clock(now_ms),
                            tokens: Default::default(),
                            cost_usd: bill.cost_usd,
                            model: model_of(self.spending.pricing.as_ref()),
                            transcribed_seconds: None,
                        });
                    }
                }
                ControllerOutput::RateLimits(limits) => self.rate_limits(&limits),
                ControllerOutput::PressCancelled(part) => {
                    self.cancelled_part = Some(part);
                    self.hint = Some(sentence::press_cancelled());
                }
                ControllerOutput::MessageSent => {
                    self.turn_ended_at_ms = Some(now_ms);
                    self.commit_sent_at_ms = None;
                }
                ControllerOutput::AsideAnswered {
                    purpose: AsidePurpose::Title,
                    text,
                } => self.titled(&text, now_ms),
                ControllerOutput::AsideFailed {
                    purpose: AsidePurpose::Title,
                    reason,
                    unanswered,
                } => {
                    // Asked again on the next call when nothing refused it, a few times.
                    self.titling = if unanswered && self.titles_asked < MAX_TITLE_REQUESTS {
                        Titling::AfterTurns(0)
                    } else {
                        Titling::Never
                    };
                    self.outputs
                        .push_back(Output::Diagnostic(Diagnostic::AsideUnanswered {
                            purpose: AsidePurpose::Title,
                            reason: crate::outside_text(&reason, crate::MAX_OUTSIDE_TEXT_CHARS),
                        }));
                }
            }
        }
        loop {
            match self.controller.session_mut().poll_event(&self.iterator) {
                Ok(Some(Delivery::Event(stamped))) => {
                    self.note(&stamped.event);
                    if matches!(stamped.event, SessionEvent::TurnComplete)
                        && let Titling::AfterTurns(turns) = &mut self.titling
                    {
                        *turns = turns.saturating_sub(1);
                    }
                    // Hands-free, the user's turn ends when the provider hears them stop. A
                    // family that does not say so gives no time to count the reply from.
                    if matches!(stamped.event, SessionEvent::InputSpeechEnd(_))
                        && self.hands_free()
                        && self.controller.profile().emits_input_speech_events
                    {
                        self.outside.user_acted();
                        self.turn_ended_at_ms = Some(stamped.at_ms);
                        self.commit_sent_at_ms = None;
                    }
                    self.route(&stamped.event);
                    let mut transcript = Vec::new();
                    let unix_ms = UnixMs::of_clock(stamped.at_ms);
                    let note =
                        self.bridge
                            .on_event_noted(unix_ms.get(), &stamped.event, &mut transcript);
                    let interrupted = interrupted_reply(&stamped.event, &note);
                    let cancelled = self.cancelled_message(&stamped.event, &note);
                    let marks = [
                        (interrupted.as_deref(), MARK_INTERRUPTED),
                        (cancelled.as_deref(), MARK_CANCELLED),
                    ];
                    for (message_id, name) in marks {
                        if let Some(message_id) = message_id {
                            let fields = walkie_agui::JsonObject::new();
                            self.bridge.mark(
                                unix_ms.get(),
                                message_id,
                                name,
                                &fields,
                                &mut transcript,
                            );
                        }
                    }
                    self.outputs
                        .extend(transcript.iter().cloned().map(Output::Transcript));
                    self.outputs.push_back(Output::Record(Record::Event {
                        unix_ms,
                        event: Box::new(stamped),
                        note,
                        transcript,
                    }));
                    if let Some(message_id) = cancelled {
                        self.outputs.push_back(Output::Record(Record::Cancelled {
                            unix_ms,
                            message_id,
                        }));
                    }
                }
                Ok(Some(Delivery::Failure(stamped))) => {
                    let failure = stamped.failure;
                    let reason = format!("the session failed: {}", failure.message);
                    if redial_helps(&failure.source) {
                        self.lose_call(reason, now_ms);
                    } else {
                        self.controller
                            .handle_input(TurnInput::ChannelClosed, now_ms);
                        return self.finish(reason, now_ms);
                    }
                }
                Ok(None) => break,
                Err(error) => {
                    let reason = format!("the session's events can no longer be read: {error}");
                    return self.finish(reason, now_ms);
                }
            }
        }
    }

    /// Keeps what the provider reported without ending the call, for the status line; the
    /// user's next turn puts it away.
    fn note(&mut self, event: &SessionEvent) {
        match event {
            SessionEvent::SessionError(error) if error.recoverable => {
                if let Some(notice) = sentence::provider_notice(error) {
                    self.notice = Some(Notice {
                        sentence: notice,
                        details: Some(error.message.clone()),
                        action: StatusAction::Dismiss,
                    });
                }
            }
            SessionEvent::InputSpeechStart(_) | SessionEvent::EnqueuedMessages(_) => {
                self.notice = None
            }
            _ => {}
        }
    }

    /// The transcript message of the press taken back, if `event` ends its user part.
    fn cancelled_message(&mut self, event: &SessionEvent, note: &BridgeNote) -> Option<String> {
        let SessionEvent::PartEnd(end) = event else {
            return None;
        };
        if self.cancelled_part != Some(end.index) {
            return None;
        }
        self.cancelled_part = None;
        let BridgeNote::PartInTurn { turn, .. } = note else {
            return None;
        };
        Some(walkie_agui::TranscriptWriter::message_id(
            *turn,
            walkie_agui::Speaker::User,
        ))
    }

    /// The reply `message_id` was first heard `latency_ms` after the user's turn ended: a mark in
    /// the transcript (on the screen and on disk alike), and a line in the log.
    fn reply_latency(
        &mut self,
        message_id: String,
        latency_ms: u64,
        split: Option<LatencySplit>,
        now_ms: u64,
    ) {
        let unix_ms = UnixMs::of_clock(now_ms);
        let mut fields = walkie_agui::JsonObject::new();
        fields.insert("latencyMs".into(), latency_ms.into());
        if let Some(split) = split
            && let Ok(split) = serde_json::to_value(split)
        {
            fields.insert("split".into(), split);
        }
        let mut transcript = Vec::new();
        self.bridge.mark(
            unix_ms.get(),
            &message_id,
            MARK_LATENCY,
            &fields,
            &mut transcript,
        );
        self.outputs
            .extend(transcript.iter().cloned().map(Output::Transcript));
        self.outputs.push_back(Output::Record(Record::Transcript {
            unix_ms,
            transcript,
        }));
        self.outputs.push_back(Output::ReplyLatency {
            message_id,
            latency_ms,
            split,
        });
    }

    /// The call is over: the transcript's open messages and run close, on the screen and on
    /// disk alike.
    fn close_transcript(&mut self, now_ms: u64) {
        let unix_ms = UnixMs::of_clock(now_ms);
        let mut transcript = Vec::new();
        self.bridge.finish(unix_ms.get(), &mut transcript);
        self.outputs
            .extend(transcript.iter().cloned().map(Output::Transcript));
        self.outputs.push_back(Output::Record(Record::Transcript {
            unix_ms,
            transcript,
        }));
    }

    /// Assistant speech deltas — only they — go to the speaker, each counted against the item
    /// the controller says the reply's audio carries (DESIGN rule 2). Over WebRTC the engine
    /// plays the deltas it decodes itself, as the controller's [`Output::ReplyAudio`] says.
    fn route(&mut self, event: &SessionEvent) {
        if self.turn.transport == Transport::WebRtc {
            return;
        }
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
        if let Some(item) = &self.audio_item
            && self.playing_item != self.audio_item
        {
            self.playing_item = Some(item.clone());
            self.outputs.push_back(Output::BeginItem(item.clone()));
        }
        self.outputs.push_back(Output::Play(chunk.clone()));
    }

    fn show_status(&mut self) {
        let (attempt, reason) = match &self.phase {
            Phase::Redialing {
                attempt, reason, ..
            }
            | Phase::Dialing { attempt, reason } => (*attempt, reason.clone()),
            Phase::Renewing => {
                return self.show(StatusEvent::renewing(
                    &self.provider_label,
                    self.turn.session_limit_ms,
                ));
            }
            Phase::Ended => return,
            Phase::InCall => return self.show_call_status(),
        };
        let status = StatusEvent::redialing(attempt, self.redial.max_attempts, &reason);
        if let Some(hint) = self.hint.take() {
            let status = StatusEvent::new(status.state, format!("{} {hint}", status.detail));
            self.show(status);
        } else {
            self.show(status);
        }
    }

    fn show(&mut self, status: StatusEvent) {
        if self.shown.as_ref() != Some(&status) {
            self.shown = Some(status.clone());
            self.outputs.push_back(Output::Status(status));
        }
    }

    fn show_call_status(&mut self) {
        let state = self.state();
        // A hint answers the last press, so it stays while nothing new happens (the session
        // may still be winding that press down) and gives way as soon as there is news of its
        // own.
        let detail = match (&self.hint, state) {
            (Some(sentence), ConnectionState::Ready | ConnectionState::Thinking) => {
                sentence.clone()
            }
            _ => {
                self.hint = None;
                // A notice shows whenever the conversation is idle (hands-free listens all
                // the time: that is its idle state), until the next turn puts it away.
                let idle = matches!(state, ConnectionState::Ready | ConnectionState::Thinking)
                    || (state == ConnectionState::Listening && self.hands_free());
                if idle && let Some(notice) = &self.notice {
                    let mut status =
                        StatusEvent::new(state, notice.sentence.clone()).with_action(notice.action);
                    status.details = notice.details.clone();
                    return self.show(status);
                }
                // Not saving is a problem with an action (another data folder), until it ends.
                if let (Some((reason, details)), ConnectionState::Ready) = (&self.not_saving, state)
                {
                    let mut status = StatusEvent::new(state, sentence::not_saving(reason))
                        .with_action(StatusAction::OpenSettings);
                    status.details = details.clone();
                    return self.show(status);
                }
                if state == ConnectionState::Thinking && self.reply_slow {
                    sentence::thinking_slowly()
                } else if idle && self.paused {
                    sentence::paused().to_owned()
                } else {
                    sentence::default(state, &self.provider_label, self.turn_state.press)
                }
            }
        };
        self.show(StatusEvent::new(state, detail));
    }

    /// Whether the talk key is down in hold mode (a press carried over to the next call, or
    /// capture open in this one): what a toggle from outside takes back up.
    fn press_is_held(&self) -> bool {
        self.turn.mode == TurnMode::PushToTalk(PressMode::Hold)
            && match self.phase {
                Phase::InCall => self.turn_state.capturing,
                _ => self.carried_press,
            }
    }

    /// A key-down before the next call is ready: carried to it, as the press mode's one rule
    /// says ([`PressMode::held_after_key_down`]: a second press in toggle mode takes the first
    /// back). Hands-free, the key starts no turn.
    fn carry_key_down(&mut self) {
        self.carried_press = self
            .turn
            .mode
            .press_mode()
            .is_some_and(|mode| mode.held_after_key_down(self.carried_press));
    }

    /// The key came up before the next call was ready: in hold mode the press is over (nothing
    /// was heard); in toggle mode a key-up changes nothing.
    fn release_carried_press(&mut self) {
        self.carried_press = self
            .turn
            .mode
            .press_mode()
            .is_some_and(|mode| mode.held_after_key_up(self.carried_press));
    }

    fn hands_free(&self) -> bool {
        self.turn_state.hands_free()
    }

    fn state(&self) -> ConnectionState {
        let turn = &self.turn_state;
        // Hands-free captures all the time: listening is what it does when nothing else happens.
        if !turn.ready {
            ConnectionState::Connecting
        } else if turn.capturing && !turn.hands_free() {
            ConnectionState::Listening
        } else if turn.assistant_audible {
            ConnectionState::Speaking
        } else if turn.replying {
            ConnectionState::Thinking
        } else if turn.capturing {
            ConnectionState::Listening
        } else {
            ConnectionState::Ready
        }
    }
}

/// The model whose prices a bill was costed at, for its record.
fn model_of(pricing: Option<&Pricing>) -> Option<String> {
    pricing.map(|pricing| pricing.model.clone())
}

fn new_controller(
    turn: TurnConfig,
    tools: fn() -> ToolRegistry,
    outside: &Tools,
) -> (Box<dyn TurnEngine>, EventIterator) {
    let mut registry = tools();
    for tool in outside.declared() {
        // A name taken already (by a built-in tool, or twice) keeps its first owner; the
        // driver names tools so this does not happen.
        let _ = registry.register_outside(tool.definition.clone());
    }
    let mut controller = engine_for(turn, registry);
    let iterator = controller
        .session_mut()
        .iterate()
        .expect("a new session has no iterator yet");
    (controller, iterator)
}

/// Whether a new call may carry the conversation on after this failure: yes after a lost
/// connection or an expired session; no when the key, the account or the session's shape is
/// at fault (the next call fails the same way), or a tool failed.
fn redial_helps(source: &FailureSource) -> bool {
    match source {
        FailureSource::Upstream => true,
        FailureSource::FatalProviderError { code, .. } => !matches!(
            code.as_deref(),
            Some("invalid_api_key" | "insufficient_quota" | "beta_api_shape_disabled")
        ),
        FailureSource::Tool { .. } => false,
    }
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

/// A message that was not sent, as the user can copy it back: its text, and how many pictures
/// it showed (they are to be attached again).
fn unsent_words(message: UserMessage) -> String {
    let text = message.text.trim();
    match (message.pictures.len(), text.is_empty()) {
        (0, _) => text.to_owned(),
        (1, true) => "(a picture)".to_owned(),
        (count, true) => format!("({count} pictures)"),
        (1, false) => format!("{text}\n(with a picture)"),
        (count, false) => format!("{text}\n(with {count} pictures)"),
    }
}
