//! The conversation driver: one task that connects the conversations machine
//! (`walkie_conversation::Conversations`, which owns the conversation under way) to the calls,
//! the audio engine, the store and the webview.
//!
//! Why so little here: every decision — when a call is placed and placed again, which settings
//! it is placed with, where a message typed with no call waits, when new settings' call
//! replaces the one under way, what the status line says — is the machine's, tested in
//! virtual time. This task reads the clock, feeds each input in the one order it arrives, and
//! carries each output to its edge: the calls being placed run beside the user's commands and
//! the call's news, and their outcomes come back as inputs. It holds handles only.

use std::future::Future;
use std::pin::Pin;

use tokio::sync::mpsc;
use walkie_conversation::{
    ConversationsInput, ConversationsOutput, DialFailure, Input, Placement, RedialPolicy, Request,
};
use walkie_rtc::Call;

pub use crate::dialler::Dialler;
use crate::edges::{Clock, Edges, Machine, jitter_seed};
pub use crate::edges::{Command, Ui};
use crate::history::Continuing;
use crate::plan::{Plan, PlanChange};
use crate::recording::Saving;

/// A call being placed; its outcome comes back to the machine.
type Placing = Pin<Box<dyn Future<Output = Result<Call, DialFailure>> + Send>>;

/// Runs Walkie's conversations until the command channel closes: the machine places the first
/// call at once, through `dialler` (the app's one, which Settings' tests place theirs through). Each conversation is saved through `saving` (after its data folder's
/// repair); when the channel closes, the call is hung up and its conversation closed on disk
/// before this returns.
pub async fn run(
    plan: Plan,
    ui: impl Ui,
    mut commands: mpsc::UnboundedReceiver<Command>,
    saving: Saving,
    dialler: Dialler,
) {
    let clock = Clock::start();
    let mut machine = Machine::new(plan, RedialPolicy::default(), jitter_seed(), clock.now_ms());
    let mut edges = Edges::new(ui, clock);
    // The first call or new settings' call being placed, and the call it answered with until
    // the machine begins a conversation on it.
    let mut placing: Option<(Placement, Placing)> = None;
    let mut placed: Option<(Placement, Call)> = None;
    // The call placed again for the conversation under way, with the plan it is placed with.
    let mut redialling: Option<(Box<Plan>, Placing)> = None;
    loop {
        while let Some(output) = machine.poll_output() {
            match output {
                ConversationsOutput::Status(status) => edges.ui.status(status),
                ConversationsOutput::Conversation(output) => edges.carry(output, &mut machine),
                ConversationsOutput::Place {
                    placement,
                    plan,
                    continuing,
                } => {
                    let placing_call = dialler.clone().place(plan, continuing);
                    placing = Some((placement, Box::pin(placing_call)));
                }
                ConversationsOutput::StopPlacing => placing = None,
                ConversationsOutput::HangUpPlaced(placement) => {
                    if let Some((_, call)) = placed.take_if(|(held, _)| *held == placement) {
                        tauri::async_runtime::spawn(async move { call.hangup().await });
                    }
                }
                ConversationsOutput::Begin {
                    placement,
                    plan,
                    continuing,
                } => {
                    let call = placed.take_if(|(held, _)| *held == placement);
                    let begun = match call {
                        Some((_, call)) => {
                            let (servers, problems) = dialler
                                .tool_servers
                                .lock()
                                .await
                                .for_list(&plan.tool_servers)
                                .await;
                            edges.tool_servers = servers;
                            edges.tool_server_problems = problems;
                            edges.begin(call, &plan, continuing, &mut machine).await
                        }
                        None => Err(ConversationsInput::NotBegun {
                            reason: "the call it was to begin on was lost".to_owned(),
                            details: None,
                        }),
                    };
                    match begun {
                        Ok(()) => edges.start_saving(&plan, &saving, &mut machine).await,
                        Err(not_begun) => machine.handle_input(not_begun, edges.clock.now_ms()),
                    }
                }
                ConversationsOutput::Redial { plan, history } => {
                    let redial = dialler.clone().redial(plan.clone(), history);
                    redialling = Some((Box::new(plan), Box::pin(redial)));
                }
                ConversationsOutput::Close => {
                    redialling = None;
                    edges.close().await;
                    machine.handle_input(ConversationsInput::Closed, edges.clock.now_ms());
                }
                ConversationsOutput::StopToolServers => {
                    dialler.tool_servers.lock().await.stop().await
                }
                ConversationsOutput::Quit => return,
            }
        }
        tokio::select! {
            inputs = edges.next_inputs(machine.next_deadline_ms()) => {
                for input in inputs {
                    machine.handle_input(ConversationsInput::Conversation(input), edges.clock.now_ms());
                }
            }
            (placement, outcome) = placing_done(&mut placing) => {
                placing = None;
                let outcome = outcome.map(|call| {
                    if let Some((_, unused)) = placed.replace((placement, call)) {
                        tauri::async_runtime::spawn(async move { unused.hangup().await });
                    }
                });
                let answered = ConversationsInput::Placed { placement, outcome };
                machine.handle_input(answered, edges.clock.now_ms());
            }
            (plan, outcome) = redial_done(&mut redialling) => {
                redialling = None;
                edges.dialled(outcome, &plan, &mut machine);
            }
            command = commands.recv() => {
                // What the audio engine reported before the command comes first (a press
                // during a reply truncates it at the progress last played).
                for input in edges.audio_inputs() {
                    machine.handle_input(ConversationsInput::Conversation(input), edges.clock.now_ms());
                }
                machine.handle_input(input_of(command), edges.clock.now_ms());
            }
        }
    }
}

/// The outcome of the placement under way (never, while there is none).
async fn placing_done(
    placing: &mut Option<(Placement, Placing)>,
) -> (Placement, Result<Call, DialFailure>) {
    match placing {
        Some((placement, call)) => (*placement, call.await),
        None => std::future::pending().await,
    }
}

/// The outcome of the redial under way (never, while there is none).
async fn redial_done(
    redialling: &mut Option<(Box<Plan>, Placing)>,
) -> (Box<Plan>, Result<Call, DialFailure>) {
    match redialling {
        Some((plan, call)) => {
            let outcome = call.await;
            (plan.clone(), outcome)
        }
        None => std::future::pending().await,
    }
}

/// A command of the webview as the machine's input.
fn input_of(command: Option<Command>) -> ConversationsInput<Plan, Box<Continuing>> {
    let Some(command) = command else {
        return ConversationsInput::Request(Request::Quit);
    };
    let conversation = ConversationsInput::Conversation;
    let request = ConversationsInput::Request;
    match command {
        Command::PushToTalk { pressed: true } => conversation(Input::Press),
        Command::PushToTalk { pressed: false } => conversation(Input::Release),
        Command::TogglePress => conversation(Input::TogglePress),
        Command::CancelPress => conversation(Input::CancelPress),
        Command::CancelRedial => conversation(Input::CancelRedial),
        Command::SendMessage(message) => conversation(Input::SendMessage(message)),
        Command::ToolDecision { call_id, allowed } => {
            conversation(Input::ToolDecision { call_id, allowed })
        }
        Command::HangUp => request(Request::HangUp),
        Command::Reconnect => request(Request::Connect),
        Command::Apply(plan) => request(Request::Apply(*plan)),
        Command::Continue(saved) => request(Request::Continue(saved)),
        Command::SetTurnMode(mode) => request(Request::Keep(PlanChange::TurnMode(mode))),
        Command::SetTypedRepliesInText(in_text) => {
            request(Request::Keep(PlanChange::TypedRepliesInText(in_text)))
        }
        Command::SetAutomaticToolRounds(rounds) => {
            request(Request::Keep(PlanChange::AutomaticToolRounds(rounds)))
        }
        Command::SetSessionLimit { session_limit_ms } => {
            request(Request::Keep(PlanChange::SessionLimit { session_limit_ms }))
        }
        Command::SetCosting {
            prices,
            minute_prices,
            budget_usd,
        } => request(Request::Keep(PlanChange::Costing {
            prices,
            minute_prices,
            budget_usd,
        })),
    }
}
