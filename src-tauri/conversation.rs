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

use tokio::sync::mpsc;
use tokio::time::Instant;
use walkie_conversation::{Conversation, FirstDial, Input, RedialPolicy, StatusEvent};
use walkie_session::turn::TurnMode;

pub use crate::edges::Ui;
use crate::edges::{self, Edges, Next};
use crate::history::Continuing;
use crate::plan::Plan;
use crate::recording::Saving;

/// What the webview asks of the conversation.
#[derive(Debug, Clone)]
pub enum Command {
    /// The push-to-talk control went down (`true`) or up.
    PushToTalk { pressed: bool },
    /// Take the recording under way back (Escape): nothing of it is sent.
    CancelPress,
    /// Hang up if connected, then connect again.
    Reconnect,
    /// Stop trying to get a dropped call back.
    CancelRedial,
    /// Hang up if connected, then connect as the new plan says (the settings changed).
    Apply(Box<Plan>),
    /// Push-to-talk (hold or toggle) or hands-free from now on, in the same call.
    SetTurnMode(TurnMode),
    /// Hang up if connected, then go on with a saved conversation in a new call.
    Continue(Box<Continuing>),
}

/// How a conversation ended.
enum Ended {
    AppClosing,
    Reconnect,
    Apply(Box<Plan>),
    Continue(Box<Continuing>),
    /// The status says why; the user asks for the next call.
    Failed,
}

/// Runs conversations until the command channel closes: connect as the plan says, talk (in a
/// new conversation, or a saved one continued), and after a conversation ends wait for the
/// user to ask for the next. Each conversation is saved
/// through `saving` (after its data folder's repair); when the channel closes, the call is hung
/// up and its conversation closed on disk before this returns.
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
    let mut first_dial = new_first_dial();
    loop {
        if let Some(not_before) = dial_not_before.take() {
            ui.status(StatusEvent::waiting_to_dial(not_before - Instant::now()));
            tokio::time::sleep_until(not_before).await;
        }
        let continued = continuing.take();
        let ended = match edges::connect(&plan, &mut local, &mut ui).await {
            Ok(call) => {
                let mut edges = Edges::new(&mut ui);
                match edges.begin(call, &plan, continued, &saving).await {
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
                    let wait = tokio::time::sleep(std::time::Duration::from_millis(wait_ms));
                    match until_command(wait, &mut commands, &mut plan).await {
                        Waited::Elapsed => {
                            continuing = continued;
                            continue;
                        }
                        Waited::Cancelled => {
                            ui.status(refusal.status);
                            dial_not_before = refusal.retry_after.map(|wait| Instant::now() + wait);
                            Ended::Failed
                        }
                        Waited::Ended(ended) => ended,
                    }
                }
                None => {
                    log::warn!("no call: {}", refusal.status.detail);
                    ui.status(refusal.status);
                    dial_not_before = refusal.retry_after.map(|wait| Instant::now() + wait);
                    Ended::Failed
                }
            },
        };
        first_dial = new_first_dial();
        match ended {
            Ended::AppClosing => return,
            Ended::Reconnect => continue,
            Ended::Apply(new_plan) => {
                plan = *new_plan;
                continue;
            }
            Ended::Continue(saved) => {
                continuing = Some(saved);
                continue;
            }
            Ended::Failed => {}
        }
        // Wait for the user to ask again; key presses while disconnected do nothing.
        loop {
            match commands.recv().await {
                None => return,
                Some(Command::Reconnect) => break,
                Some(Command::Continue(saved)) => {
                    continuing = Some(saved);
                    break;
                }
                Some(Command::Apply(new_plan)) => {
                    // New settings may name another provider: its wait does not apply.
                    plan = *new_plan;
                    dial_not_before = None;
                    break;
                }
                Some(Command::PushToTalk { pressed: true }) => {
                    ui.status(StatusEvent::press_while_not_connected())
                }
                Some(
                    Command::PushToTalk { pressed: false }
                    | Command::CancelRedial
                    | Command::CancelPress,
                ) => {}
                Some(Command::SetTurnMode(mode)) => plan.mode = mode,
            }
        }
    }
}

fn new_first_dial() -> FirstDial {
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| since.as_nanos() as u64);
    FirstDial::new(
        RedialPolicy::default(),
        seed ^ u64::from(std::process::id()),
    )
}

/// How a wait before calling again ended.
enum Waited {
    /// The wait is over: call again.
    Elapsed,
    /// The user stopped the calling again.
    Cancelled,
    /// The user asked for something else.
    Ended(Ended),
}

/// Waits out `wait` unless the user asks for something that ends it first (a key press has
/// no call to go to; a mode switch is kept for the call).
async fn until_command(
    wait: tokio::time::Sleep,
    commands: &mut mpsc::UnboundedReceiver<Command>,
    plan: &mut Plan,
) -> Waited {
    tokio::pin!(wait);
    loop {
        let command = tokio::select! {
            () = &mut wait => return Waited::Elapsed,
            command = commands.recv() => command,
        };
        match input_of(command, plan) {
            Ok(Input::CancelRedial) => return Waited::Cancelled,
            Ok(_) => {}
            Err(ended) => return Waited::Ended(ended),
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
        let input = tokio::select! {
            event = edges::next_call_event(&mut edges.call) => match edges.call_input(event) {
                Some(input) => input,
                None => continue,
            },
            command = commands.recv() => match input_of(command, plan) {
                Ok(input) => input,
                Err(ended) => return edges.hang_up(&mut machine, ended).await,
            },
            _ = edges::audio_woken(edges.audio.as_ref().map(|audio| &*audio.woken)) => {
                for input in edges.audio_inputs() {
                    machine.handle_input(input, clock.now_ms());
                }
                continue;
            }
            news = edges::saving_news(edges.recording.as_mut()) => news,
            _ = clock.sleep_until(machine.next_deadline_ms()) => Input::Tick,
        };
        machine.handle_input(input, clock.now_ms());
    }
}

/// A command as the machine's input, or how the conversation ends because of it.
fn input_of(command: Option<Command>, plan: &mut Plan) -> Result<Input, Ended> {
    match command {
        Some(Command::PushToTalk { pressed: true }) => Ok(Input::Press),
        Some(Command::PushToTalk { pressed: false }) => Ok(Input::Release),
        Some(Command::CancelRedial) => Ok(Input::CancelRedial),
        Some(Command::CancelPress) => Ok(Input::CancelPress),
        Some(Command::SetTurnMode(mode)) => {
            // Kept for the next conversation of this plan; the machine switches now.
            plan.mode = mode.clone();
            Ok(Input::SetTurnMode(mode))
        }
        Some(Command::Apply(plan)) => Err(Ended::Apply(plan)),
        Some(Command::Continue(saved)) => Err(Ended::Continue(saved)),
        Some(Command::Reconnect) => Err(Ended::Reconnect),
        None => Err(Ended::AppClosing),
    }
}
