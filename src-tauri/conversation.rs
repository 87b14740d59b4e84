//! The conversation driver: one task that connects the conversation machine
//! (walkie-conversation) to the call, the audio engine, the store and the webview.
//!
//! Why so little here: every decision — the status line and its hints, which item the played
//! audio belongs to, when a reply was cut, what the transcript says, when a dropped call is
//! dialled again — is the machine's, tested in virtual time. This task reads the clock, feeds
//! each input in the one order it arrives, and carries each output to its edge without waiting
//! on any: client events are queued on the call like audio, and a failure comes back as an
//! input. A dial the machine asks for runs while the user's commands still come in, and so does
//! the wait before a first call is placed again (how long, and whether at all, is `FirstDial`'s).

use std::time::Duration;

use tokio::sync::mpsc;
use tokio::time::Instant;
use walkie_conversation::{Conversation, StatusEvent};

use crate::edges::{self, Edges, Ended, Next, Waited, input_of, until_command, wait_for_the_user};
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
    let mut continuing = None;
    // A first call refused for a reason that may pass is placed again, so far this many times.
    let mut first_dial = edges::first_dial();
    loop {
        if let Some(not_before) = dial_not_before.take() {
            ui.status(StatusEvent::waiting_to_dial(not_before - Instant::now()));
            tokio::time::sleep_until(not_before).await;
        }
        let ended = match edges::connect(&plan, &mut local, &mut ui).await {
            Ok(call) => {
                let mut edges = Edges::new(&mut ui);
                match edges.begin(call, &plan, continuing.take(), &saving).await {
                    Some(machine) => {
                        converse(machine, &mut plan, &mut local, &mut edges, &mut commands).await
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
                    match until_command(wait, &mut commands, &mut plan).await {
                        Waited::Elapsed => continue,
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
        };
        first_dial = edges::first_dial();
        let ended = match ended {
            Ended::Failed => wait_for_the_user(&mut ui, &mut commands, &mut plan).await,
            ended => ended,
        };
        match ended {
            Ended::AppClosing => return,
            Ended::Reconnect | Ended::Failed => {}
            Ended::Apply(new_plan) => {
                // New settings may name another provider: its wait does not apply.
                plan = *new_plan;
                dial_not_before = None;
            }
            Ended::Continue(saved) => continuing = Some(saved),
        }
    }
}

/// One conversation, carried by the call `edges` began it with and the calls that replace it
/// when it drops, until it ends.
async fn converse(
    mut machine: Conversation,
    plan: &mut Plan,
    local: &mut Option<walkie_local::LocalProvider>,
    edges: &mut Edges<'_, impl Ui>,
    commands: &mut mpsc::UnboundedReceiver<Command>,
) -> Ended {
    let clock = edges.clock;
    loop {
        match edges.carry(&mut machine) {
            Next::Over => return edges.hang_up_call(Ended::Failed).await,
            Next::Dial => {
                let dialling = plan.clone();
                let placing = edges::redial(&dialling, local);
                tokio::pin!(placing);
                let placed = loop {
                    tokio::select! {
                        placed = &mut placing => break placed,
                        command = commands.recv() => match input_of(command, plan) {
                            Ok(input) => machine.handle_input(input, clock.now_ms()),
                            Err(ended) => return edges.hang_up(&mut machine, ended).await,
                        },
                    }
                    if edges.carry(&mut machine) == Next::Over {
                        return Ended::Failed;
                    }
                };
                edges.dialled(placed, plan, &mut machine);
                continue;
            }
            Next::Talk => {}
        }
        let inputs = tokio::select! {
            inputs = edges.next_inputs(machine.next_deadline_ms()) => inputs,
            command = commands.recv() => match input_of(command, plan) {
                Ok(input) => vec![input],
                Err(ended) => return edges.hang_up(&mut machine, ended).await,
            },
        };
        for input in inputs {
            machine.handle_input(input, clock.now_ms());
        }
    }
}
