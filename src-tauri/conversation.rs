//! The conversation driver: one task that connects the conversation machine
//! (walkie-conversation) to the call, the audio engine, the store and the webview.
//!
//! Why so little here: every decision — the status line and its hints, which item the played
//! audio belongs to, when a reply was cut, what the transcript says, when a dropped call is
//! dialled again — is the machine's, tested in virtual time. This task reads the clock, feeds
//! each input in the one order it arrives, and carries each output to its edge without waiting
//! on any: client events are queued on the call like audio, and a failure comes back as an
//! input. A dial the machine asks for runs while the user's commands still come in, and so do
//! a conversation's first call, each attempt to place it again and the waits between them (how
//! long, and whether at all, is `FirstDial`'s).
//! New settings that need another call are make-before-break: their call is placed while the
//! call under way goes on, which is hung up only once the new one answers; a new call that
//! fails leaves the conversation where it was, and the machine says why.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::time::Instant;
use walkie_conversation::{Conversation, Input, StatusEvent};
use walkie_rtc::Call;
use walkie_session::turn::ProviderFamily;

use crate::edges::{
    self, Edges, Ended, Next, Refusal, Waited, input_of, until_command, wait_for_the_user,
};
pub use crate::edges::{Command, Ui};
use crate::plan::Plan;
use crate::recording::Saving;

/// Runs conversations until the command channel closes: connect as the plan says, talk (in a
/// new conversation, or a saved one continued), and after a conversation ends wait for the
/// user to ask for the next. Each conversation is saved through `saving` (after its data
/// folder's repair); when the channel closes, the call is hung up and its conversation closed
/// on disk before this returns.
pub async fn run(
    mut plan: Plan,
    mut ui: impl Ui,
    mut commands: mpsc::UnboundedReceiver<Command>,
    saving: Saving,
) {
    // The local provider lives as long as the app: reconnecting reuses it.
    let mut local = None;
    // A provider that asked to wait (a 429's Retry-After) is not dialled again before then.
    let mut dial_not_before = None;
    // The saved conversation the next call goes on with (else it starts a new one).
    let mut continuing: Option<Box<crate::history::Continuing>> = None;
    // A first call refused for a reason that may pass is placed again, so far this many times.
    let mut first_dial = edges::first_dial();
    // A call new settings placed while the last conversation went on: the next one's.
    let mut placed = None;
    // Settings saved while a conversation went on: the next conversation's, whatever became
    // of their own call.
    let mut saved_plan = None;
    // Messages typed while there was no conversation: the next one sends them.
    let mut typed = Vec::new();
    // The MCP servers of the settings' list, kept while the list stays the same.
    let mut tool_servers = crate::tool_servers::ToolServers::default();
    // Why the last attempt of a first call was refused, while it is placed again: shown if
    // the user stops the calling again.
    let mut last_refusal: Option<Refusal> = None;
    'dial: loop {
        let ended = 'conversation: {
            if let Some(not_before) = dial_not_before.take()
                && let Some(ended) =
                    wait_to_dial(not_before, &mut ui, &mut commands, &mut plan, &mut typed).await
            {
                break 'conversation ended;
            }
            let call = match placed.take() {
                Some(call) => Ok(call),
                None => {
                    if let Ok(provider) = &plan.provider {
                        ui.status(first_dial.dialling(&provider.label()));
                    }
                    // The user's commands come in while the call is placed: Cancel, new
                    // settings or closing the window drop it, and a mode switch is kept.
                    let mut dialling = plan.clone();
                    if dialling.family() == ProviderFamily::Live {
                        // A Live session declares its tools when it is placed: the servers
                        // are asked for theirs first.
                        let (servers, _) = tool_servers.for_list(&plan.tool_servers).await;
                        dialling.live_outside_tools =
                            live_outside_tools(servers.as_deref(), &plan.tool_servers);
                    }
                    let history = match (&continuing, dialling.family()) {
                        (Some(saved), ProviderFamily::Live) => {
                            walkie_conversation::call_setup_history(saved.earlier.clone())
                        }
                        _ => Vec::new(),
                    };
                    let attempt = edges::connect(&dialling, &mut local, history);
                    match until_command(attempt, &mut commands, &mut plan, &mut typed).await {
                        Waited::Done(call) => call,
                        Waited::Cancelled => {
                            log::info!("the user stopped the call being placed");
                            dial_not_before = match last_refusal.take() {
                                Some(refusal) => refusal.give_up(&mut ui),
                                None => {
                                    ui.status(StatusEvent::not_connected("the call was cancelled"));
                                    None
                                }
                            };
                            break 'conversation Ended::Failed;
                        }
                        Waited::Ended(ended) => break 'conversation ended,
                    }
                }
            };
            match call {
                Ok(call) => {
                    let (servers, problems) = tool_servers.for_list(&plan.tool_servers).await;
                    let mut edges = Edges::new(&mut ui);
                    edges.tool_servers = servers;
                    edges.tool_server_problems = problems;
                    let begun = edges.begin(call, &plan, continuing.take(), &saving).await;
                    // Said once, by the first conversation that began.
                    plan.settings_notice = None;
                    match begun {
                        Some(machine) => {
                            let mut talk = Talk {
                                plan: &mut plan,
                                saved_plan: &mut saved_plan,
                                local: &mut local,
                                commands: &mut commands,
                                typed: &mut typed,
                            };
                            converse(machine, &mut talk, &mut edges).await
                        }
                        None => Ended::Failed,
                    }
                }
                Err(refusal) => match first_dial.refused(refusal.retry, &refusal.sentence) {
                    Some((wait_ms, status)) => {
                        log::warn!(
                            "no call, calling again in {wait_ms} ms: {}",
                            refusal.sentence
                        );
                        ui.status(status);
                        let wait = tokio::time::sleep(Duration::from_millis(wait_ms));
                        match until_command(wait, &mut commands, &mut plan, &mut typed).await {
                            Waited::Done(()) => {
                                last_refusal = Some(refusal);
                                continue 'dial;
                            }
                            Waited::Cancelled => {
                                dial_not_before = refusal.give_up(&mut ui);
                                Ended::Failed
                            }
                            Waited::Ended(ended) => ended,
                        }
                    }
                    None => {
                        dial_not_before = refusal.give_up(&mut ui);
                        Ended::Failed
                    }
                },
            }
        };
        last_refusal = None;
        first_dial = edges::first_dial();
        let ended = match ended {
            Ended::Failed => wait_for_the_user(&mut ui, &mut commands, &mut plan, &mut typed).await,
            Ended::HungUp => {
                log::info!("the user hung up");
                ui.status(StatusEvent::hung_up());
                wait_for_the_user(&mut ui, &mut commands, &mut plan, &mut typed).await
            }
            ended => ended,
        };
        if let Some(saved) = saved_plan.take() {
            plan = *saved;
            dial_not_before = None;
        }
        match ended {
            Ended::AppClosing => return,
            Ended::Reconnect | Ended::Failed | Ended::HungUp => {}
            Ended::Apply(new_plan) => {
                // New settings may name another provider: its wait does not apply.
                plan = *new_plan;
                dial_not_before = None;
            }
            Ended::Moved(new_plan, call) => {
                plan = *new_plan;
                dial_not_before = None;
                placed = Some(*call);
            }
            Ended::Continue(saved) => continuing = Some(saved),
        }
    }
}

/// Waits until `not_before`, as the provider asked, saying so; `None` once the wait is over,
/// else how the user ended it. Connect during the wait does not cut it short: the provider
/// would refuse the call.
async fn wait_to_dial(
    not_before: Instant,
    ui: &mut impl Ui,
    commands: &mut mpsc::UnboundedReceiver<Command>,
    plan: &mut Plan,
    typed: &mut Vec<walkie_session::turn::UserMessage>,
) -> Option<Ended> {
    loop {
        ui.status(StatusEvent::waiting_to_dial(not_before - Instant::now()));
        let wait = tokio::time::sleep_until(not_before);
        match until_command(wait, commands, plan, typed).await {
            Waited::Done(()) => return None,
            Waited::Cancelled | Waited::Ended(Ended::Reconnect) => {}
            Waited::Ended(ended) => return Some(ended),
        }
    }
}

/// What a conversation works with besides its edges: the plan its calls are placed with, the
/// app's local provider and the user's commands.
struct Talk<'a> {
    plan: &'a mut Plan,
    /// The settings saved during the conversation, for the next one.
    saved_plan: &'a mut Option<Box<Plan>>,
    local: &'a mut Option<walkie_local::LocalProvider>,
    commands: &'a mut mpsc::UnboundedReceiver<Command>,
    /// Messages typed before this conversation began, for its first call.
    typed: &'a mut Vec<walkie_session::turn::UserMessage>,
}

/// The call new settings asked for, being placed while the conversation goes on.
type NewCall = Pin<Box<dyn Future<Output = (Box<Plan>, Result<Call, Refusal>)> + Send>>;

/// The outcome of the new settings' call, once there is one (never, while there is none).
async fn new_call_placed(new_call: &mut Option<NewCall>) -> (Box<Plan>, Result<Call, Refusal>) {
    match new_call {
        Some(placing) => placing.await,
        None => std::future::pending().await,
    }
}

/// New settings need another call: it is placed while this conversation goes on (the machine
/// is told), or, when the settings alone show it cannot be, the machine is told why. A newer
/// Save replaces a call still being placed for an older one.
async fn place_new_call(
    new_plan: Box<Plan>,
    talk: &mut Talk<'_>,
    new_call: &mut Option<NewCall>,
) -> Input {
    *new_call = None;
    *talk.saved_plan = Some(new_plan.clone());
    match edges::prepare(&new_plan, talk.local).await {
        Ok(placing) => {
            let provider_label = placing.provider_label();
            *new_call = Some(Box::pin(
                async move { (new_plan, edges::place(placing).await) },
            ));
            Input::NewCallDialling { provider_label }
        }
        Err(refusal) => new_call_refused(&new_plan, refusal),
    }
}

/// The machine's news that the new settings' call failed (the call under way goes on).
fn new_call_refused(new_plan: &Plan, refusal: Refusal) -> Input {
    let provider_label = match new_plan.provider_label() {
        label if label.is_empty() => "the new provider".to_owned(),
        label => label,
    };
    log::warn!(
        "the new settings' call to {provider_label} failed: {}",
        refusal.sentence
    );
    Input::NewCallRefused {
        provider_label,
        sentence: refusal.sentence,
        details: refusal.status.details,
    }
}

/// One conversation, carried by the call `edges` began it with and the calls that replace it
/// when it drops, until it ends.
async fn converse(
    mut machine: Conversation,
    talk: &mut Talk<'_>,
    edges: &mut Edges<'_, impl Ui>,
) -> Ended {
    let clock = edges.clock;
    let mut new_call: Option<NewCall> = None;
    for message in talk.typed.drain(..) {
        machine.handle_input(Input::SendMessage(message), clock.now_ms());
    }
    loop {
        match edges.carry(&mut machine) {
            Next::Over => return edges.hang_up_call(Ended::Failed).await,
            Next::Dial { history } => {
                let mut dialling = talk.plan.clone();
                dialling.live_outside_tools =
                    live_outside_tools(edges.tool_servers.as_deref(), &dialling.tool_servers);
                let placing = edges::redial(&dialling, talk.local, history);
                tokio::pin!(placing);
                let placed = loop {
                    tokio::select! {
                        placed = &mut placing => break placed,
                        command = talk.commands.recv() => match input_of(command, talk.plan) {
                            Ok(input) => machine.handle_input(input, clock.now_ms()),
                            Err(ended) => return edges.hang_up(&mut machine, ended).await,
                        },
                    }
                    if edges.carry(&mut machine) == Next::Over {
                        return Ended::Failed;
                    }
                };
                edges.dialled(placed, talk.plan, &mut machine);
                continue;
            }
            Next::Talk => {}
        }
        let inputs = tokio::select! {
            inputs = edges.next_inputs(machine.next_deadline_ms()) => inputs,
            (new_plan, placed) = new_call_placed(&mut new_call) => {
                new_call = None;
                match placed {
                    Ok(call) => {
                        let ended = Ended::Moved(new_plan, Box::new(call));
                        return edges.hang_up(&mut machine, ended).await;
                    }
                    Err(refusal) => vec![new_call_refused(&new_plan, refusal)],
                }
            }
            command = talk.commands.recv() => match command {
                Some(Command::Apply(new_plan)) => {
                    vec![place_new_call(new_plan, talk, &mut new_call).await]
                }
                command => match input_of(command, talk.plan) {
                    Ok(input) => vec![input],
                    Err(ended) => return edges.hang_up(&mut machine, ended).await,
                },
            },
        };
        for input in inputs {
            machine.handle_input(input, clock.now_ms());
        }
    }
}

/// The tool servers' tools, as a Live session declares them when it is placed.
fn live_outside_tools(
    servers: Option<&walkie_mcp::Servers>,
    listed: &[walkie_settings::tool_servers::ToolServer],
) -> Vec<walkie_openai::Tool> {
    servers
        .map(|servers| crate::tool_servers::outside_tools(servers, listed))
        .unwrap_or_default()
        .into_iter()
        .map(|tool| tool.definition)
        .collect()
}
