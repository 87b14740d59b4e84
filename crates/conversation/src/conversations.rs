//! The conversations from launch to quit: the machine the driver holds for the app's life.
//!
//! Why a machine above [`Conversation`]: between conversations Walkie still decides things
//! the user sees — whether a first call refused for a passing reason is placed again and
//! when, how long a provider that asked to wait is left alone, where a message typed with no
//! call waits, which settings the next call is placed with, when new settings' call replaces
//! the one under way (make-before-break) and what the status line says meanwhile. Those
//! decisions lived in the shell's task, specified only by e2e tests; here they are taken in
//! virtual time like the rest. The machine owns the conversation under way and passes its
//! outputs on in their order ([`ConversationsOutput::Conversation`]), so the driver holds one
//! machine.
//!
//! The plan a call is placed with is the driver's type ([`CallPlan`]): the machine keeps it,
//! hands it back when a call is to be placed, and reads only its provider's name.

use std::collections::VecDeque;
use std::time::Duration;

use walkie_session::turn::UserMessage;

use crate::input::Input;
use crate::machine::Conversation;
use crate::output::Output;
use crate::redial::{DialFailure, FirstDial, Jitter, RedialPolicy};
use crate::status::StatusEvent;

/// The settings a call is placed with, as the machine sees them: opaque but for the
/// provider's name and the changes the user makes during a call that later calls keep too.
pub trait CallPlan: Clone {
    /// A setting changed from the window without a new call (the turn mode, how typed messages
    /// are answered, the prices and the budget, what only the next calls take).
    type Change: Clone;

    /// The provider as the status line names it; `None` when the settings name none that can
    /// be called (the failure to dial says why).
    fn provider_label(&self) -> Option<String>;

    /// Keeps `change` for the calls placed with this plan from now on, and says it as the
    /// conversation's input (for the conversation under way), if that takes it too.
    fn keep(&mut self, change: &Self::Change) -> Option<Input>;

    /// The plan's one-time notice about its settings was shown by a conversation.
    fn notice_shown(&mut self);
}

/// A call the machine asked the driver to place, so that its outcome finds its request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Placement(u64);

/// What the user asks of Walkie beyond the conversation's own inputs.
#[derive(Clone)]
pub enum Request<P: CallPlan, C> {
    /// Hang up if connected, then connect again (Connect, a start).
    Connect,
    /// End the call, and place none until the user asks (`walkie --hang-up`).
    HangUp,
    /// New settings that need another call.
    Apply(P),
    /// Hang up if connected, then go on with the saved conversation `C` in a new call.
    Continue(C),
    /// A setting changed without a new call: kept for the next calls, told to this one.
    Keep(P::Change),
    /// The app is closing.
    Quit,
}

/// One input of [`Conversations`], with the caller's monotonic time beside it.
pub enum ConversationsInput<P: CallPlan, C> {
    /// The user asks for something.
    Request(Request<P, C>),
    /// An input for the conversation: the user's press or message, the call's, the engine's
    /// or the saving's news, time passing. With no conversation under way, a press or a
    /// message is answered here, and `CancelRedial` stops a first call being placed again.
    Conversation(Input),
    /// The call [`ConversationsOutput::Place`] asked for answered (the driver holds it), or
    /// was not placed.
    Placed {
        placement: Placement,
        outcome: Result<(), DialFailure>,
    },
    /// The conversation [`ConversationsOutput::Begin`] asked for, begun on its call.
    Began(Box<Conversation>),
    /// The conversation could not begin on its call (the call is hung up): `reason` is a
    /// phrase ("the audio engine could not start: …").
    NotBegun {
        reason: String,
        details: Option<String>,
    },
    /// The conversation [`ConversationsOutput::Close`] asked to close is closed on disk and its
    /// call hung up.
    Closed,
}

/// One output of [`Conversations`], polled in causal order.
#[derive(Debug)]
pub enum ConversationsOutput<P, C> {
    /// The status line while no conversation is under way (a conversation's own come inside
    /// [`ConversationsOutput::Conversation`]).
    Status(StatusEvent),
    /// Place a call with `plan`, for a new conversation or to replace the call under way;
    /// `continuing` is the saved conversation it goes on with (a family that takes the
    /// conversation so far at call setup needs it). A placement under way is dropped.
    Place {
        placement: Placement,
        plan: P,
        continuing: Option<C>,
    },
    /// Drop the placement under way.
    StopPlacing,
    /// Hang up the call `placement` answered with: nothing goes on it.
    HangUpPlaced(Placement),
    /// Begin a conversation on the call `placement` answered with, set up from `plan` (going
    /// on with `continuing`); answer [`ConversationsInput::Began`] or `NotBegun`.
    Begin {
        placement: Placement,
        plan: P,
        continuing: Option<C>,
    },
    /// Place a call for the conversation under way, whose call dropped: the answer is its
    /// [`Input::Dialled`] or [`Input::DialFailed`].
    Redial {
        plan: P,
        history: Vec<walkie_openai::Item>,
    },
    /// An output of the conversation under way.
    Conversation(Output),
    /// Close the conversation on disk and hang up its call; answer
    /// [`ConversationsInput::Closed`].
    Close,
    /// Stop the tool servers (their processes end): no conversation is under way or on its
    /// way, as after the user hung up, and before Walkie quits. The next call starts them.
    StopToolServers,
    /// Nothing is left to do: the app may quit.
    Quit,
}

/// What the machine is doing between conversations, or that one is under way.
enum Phase<C> {
    /// Nothing: the user asks for the next call.
    Idle,
    /// The provider asked to be left alone until `until_ms` (a 429's `Retry-After`).
    WaitingToDial { until_ms: u64 },
    /// A first call is being placed.
    Placing { placement: Placement },
    /// A first call was refused for a reason that may pass: placed again at `until_ms`.
    BackingOff { until_ms: u64, failure: DialFailure },
    /// The call answered; the driver begins the conversation on it.
    Beginning,
    /// A conversation is under way, and maybe the call new settings asked for is being
    /// placed beside it.
    Talking {
        conversation: Box<Conversation>,
        new_call: Option<Placement>,
    },
    /// The conversation is being closed; then the machine does `then`.
    Closing { then: AfterClose<C> },
    /// The app quits.
    Gone,
}

/// What follows a conversation's close.
enum AfterClose<C> {
    /// The status says why it ended; the user asks for the next call.
    Idle,
    /// The user hung up.
    HungUp,
    /// Connect again (with the saved conversation `C` when there is one).
    Call(Option<C>),
    /// Begin the next conversation on the call new settings placed.
    Begin(Placement),
    Quit,
}

/// The conversations from launch to quit, in str0m's shape: [`Conversations::handle_input`]
/// with the caller's monotonic time, [`Conversations::poll_output`] in causal order, and
/// [`Conversations::next_deadline_ms`].
pub struct Conversations<P: CallPlan, C> {
    /// The settings the next call is placed with.
    plan: P,
    /// Settings saved during a conversation: the next conversation's, whatever became of their
    /// own call.
    next_plan: Option<P>,
    /// The saved conversation the next call goes on with (else it starts a new one).
    continuing: Option<C>,
    /// Messages typed while there was no conversation: the next one sends them.
    typed: Vec<UserMessage>,
    phase: Phase<C>,
    /// How a first call refused for a passing reason is placed again (afresh for each).
    policy: RedialPolicy,
    first_dial: FirstDial,
    /// Why the last attempt of a first call was refused, while it is placed again: shown if the
    /// user stops the calling again.
    last_failure: Option<DialFailure>,
    /// A provider that asked to wait is not called before then (monotonic ms).
    dial_not_before_ms: Option<u64>,
    jitter: Jitter,
    placements: u64,
    outputs: VecDeque<ConversationsOutput<P, C>>,
}

impl<P: CallPlan, C: Clone> Conversations<P, C> {
    /// Walkie starts: its first call is placed with `plan` at once. `jitter_seed` seeds the
    /// waits between attempts (the machine reads no randomness of its own).
    pub fn new(plan: P, policy: RedialPolicy, jitter_seed: u64, now_ms: u64) -> Self {
        let mut jitter = Jitter::new(jitter_seed);
        let first_dial = FirstDial::new(policy, jitter.next_u64());
        let mut machine = Self {
            plan,
            next_plan: None,
            continuing: None,
            typed: Vec::new(),
            phase: Phase::Idle,
            policy,
            first_dial,
            last_failure: None,
            dial_not_before_ms: None,
            jitter,
            placements: 0,
            outputs: VecDeque::new(),
        };
        machine.call(now_ms);
        machine
    }

    /// The next output, in causal order.
    pub fn poll_output(&mut self) -> Option<ConversationsOutput<P, C>> {
        self.outputs.pop_front()
    }

    /// When to feed `Conversation(Input::Tick)` next.
    pub fn next_deadline_ms(&self) -> Option<u64> {
        match &self.phase {
            Phase::WaitingToDial { until_ms } | Phase::BackingOff { until_ms, .. } => {
                Some(*until_ms)
            }
            Phase::Talking { conversation, .. } => conversation.next_deadline_ms(),
            _ => None,
        }
    }

    pub fn handle_input(&mut self, input: ConversationsInput<P, C>, now_ms: u64) {
        match input {
            ConversationsInput::Request(request) => self.request(request, now_ms),
            ConversationsInput::Conversation(input) => self.conversation_input(input, now_ms),
            ConversationsInput::Placed { placement, outcome } => {
                self.placed(placement, outcome, now_ms)
            }
            ConversationsInput::Began(conversation) => self.began(conversation, now_ms),
            ConversationsInput::NotBegun { reason, details } => {
                self.plan.notice_shown();
                let status = StatusEvent::not_connected(&reason);
                self.say(match details {
                    Some(details) => status.with_details(details),
                    None => status,
                });
                self.phase = Phase::Idle;
            }
            ConversationsInput::Closed => self.closed(now_ms),
        }
    }

    fn request(&mut self, request: Request<P, C>, now_ms: u64) {
        match request {
            Request::Connect => match &self.phase {
                Phase::Talking { .. } => self.close(AfterClose::Call(None), now_ms),
                // Connect does not cut the provider's wait short: it would refuse the call.
                Phase::WaitingToDial { until_ms } => self.say_waiting(*until_ms, now_ms),
                Phase::Closing { then } if !matches!(then, AfterClose::Quit) => {
                    self.phase = Phase::Closing {
                        then: AfterClose::Call(None),
                    }
                }
                Phase::Closing { .. } | Phase::Gone | Phase::Beginning => {}
                Phase::Idle | Phase::Placing { .. } | Phase::BackingOff { .. } => self.call(now_ms),
            },
            Request::HangUp => match &self.phase {
                Phase::Talking { .. } => self.close(AfterClose::HungUp, now_ms),
                Phase::Placing { .. } | Phase::BackingOff { .. } | Phase::WaitingToDial { .. } => {
                    self.stop_placing();
                    self.say(StatusEvent::hung_up());
                    self.outputs.push_back(ConversationsOutput::StopToolServers);
                    self.phase = Phase::Idle;
                }
                _ => {}
            },
            Request::Apply(plan) => self.apply(plan, now_ms),
            Request::Continue(saved) => match &self.phase {
                Phase::Talking { .. } => self.close(AfterClose::Call(Some(saved)), now_ms),
                Phase::Closing { then } if !matches!(then, AfterClose::Quit) => {
                    self.phase = Phase::Closing {
                        then: AfterClose::Call(Some(saved)),
                    }
                }
                Phase::Closing { .. } | Phase::Gone | Phase::Beginning => {}
                Phase::Idle
                | Phase::Placing { .. }
                | Phase::BackingOff { .. }
                | Phase::WaitingToDial { .. } => {
                    self.continuing = Some(saved);
                    self.call(now_ms);
                }
            },
            Request::Keep(change) => {
                let input = self.plan.keep(&change);
                if let Some(next_plan) = self.next_plan.as_mut() {
                    next_plan.keep(&change);
                }
                if let (Phase::Talking { conversation, .. }, Some(input)) = (&mut self.phase, input)
                {
                    conversation.handle_input(input, now_ms);
                    self.drain();
                }
            }
            Request::Quit => match &self.phase {
                Phase::Talking { .. } => self.close(AfterClose::Quit, now_ms),
                Phase::Closing { .. } => {
                    self.phase = Phase::Closing {
                        then: AfterClose::Quit,
                    }
                }
                Phase::Gone => {}
                _ => {
                    self.stop_placing();
                    self.phase = Phase::Gone;
                    self.outputs.push_back(ConversationsOutput::StopToolServers);
                    self.outputs.push_back(ConversationsOutput::Quit);
                }
            },
        }
    }

    /// New settings that need another call. During a conversation their call is placed while
    /// the one under way goes on (make-before-break), and they are the next conversation's
    /// whatever becomes of it; with none under way they are simply the next call's.
    fn apply(&mut self, plan: P, now_ms: u64) {
        match &mut self.phase {
            Phase::Talking {
                conversation,
                new_call,
            } => {
                self.placements += 1;
                let placement = Placement(self.placements);
                *new_call = Some(placement);
                self.next_plan = Some(plan.clone());
                let label = plan.provider_label();
                self.outputs.push_back(ConversationsOutput::Place {
                    placement,
                    plan,
                    continuing: None,
                });
                if let Some(provider_label) = label {
                    conversation.handle_input(Input::NewCallDialling { provider_label }, now_ms);
                    self.drain();
                }
            }
            Phase::Closing { .. } | Phase::Beginning => self.next_plan = Some(plan),
            Phase::Gone => {}
            Phase::Idle
            | Phase::Placing { .. }
            | Phase::BackingOff { .. }
            | Phase::WaitingToDial { .. } => {
                // Another provider's wait does not apply to it.
                self.plan = plan;
                self.dial_not_before_ms = None;
                self.call(now_ms);
            }
        }
    }

    fn conversation_input(&mut self, input: Input, now_ms: u64) {
        if let Phase::Talking { conversation, .. } = &mut self.phase {
            conversation.handle_input(input, now_ms);
            return self.drain();
        }
        match input {
            Input::Tick => self.tick(now_ms),
            Input::Press | Input::TogglePress => {
                if matches!(self.phase, Phase::Idle) {
                    self.say(StatusEvent::press_while_not_connected());
                }
            }
            Input::SendMessage(message) => {
                self.typed.push(message);
                if matches!(self.phase, Phase::Idle) {
                    self.say(StatusEvent::text_while_not_connected());
                }
            }
            Input::CancelRedial => match std::mem::replace(&mut self.phase, Phase::Idle) {
                Phase::Placing { .. } => {
                    self.outputs.push_back(ConversationsOutput::StopPlacing);
                    match self.last_failure.take() {
                        Some(failure) => self.give_up(failure, now_ms),
                        None => self.say(StatusEvent::not_connected("the call was cancelled")),
                    }
                }
                Phase::BackingOff { failure, .. } => self.give_up(failure, now_ms),
                Phase::WaitingToDial { until_ms } => {
                    self.phase = Phase::WaitingToDial { until_ms };
                    self.say_waiting(until_ms, now_ms);
                }
                phase => self.phase = phase,
            },
            // The call's, the engine's and the saving's news have no conversation to go to.
            _ => {}
        }
    }

    fn tick(&mut self, now_ms: u64) {
        match &self.phase {
            Phase::WaitingToDial { until_ms } if now_ms >= *until_ms => {
                self.dial_not_before_ms = None;
                self.place();
            }
            Phase::BackingOff { until_ms, .. } if now_ms >= *until_ms => {
                if let Phase::BackingOff { failure, .. } =
                    std::mem::replace(&mut self.phase, Phase::Idle)
                {
                    self.last_failure = Some(failure);
                }
                self.place();
            }
            _ => {}
        }
    }

    fn placed(&mut self, placement: Placement, outcome: Result<(), DialFailure>, now_ms: u64) {
        match (&mut self.phase, outcome) {
            (Phase::Placing { placement: placing }, Ok(())) if *placing == placement => {
                self.last_failure = None;
                self.begin(placement);
            }
            (Phase::Placing { placement: placing }, Err(failure)) if *placing == placement => {
                match self.first_dial.refused(failure.retry, &failure.sentence) {
                    Some((wait_ms, status)) => {
                        self.say(status);
                        self.phase = Phase::BackingOff {
                            until_ms: now_ms.saturating_add(wait_ms),
                            failure,
                        };
                    }
                    None => {
                        self.phase = Phase::Idle;
                        self.last_failure = None;
                        self.give_up(failure, now_ms);
                    }
                }
            }
            (
                Phase::Talking {
                    new_call: Some(placing),
                    ..
                },
                Ok(()),
            ) if *placing == placement => {
                self.close(AfterClose::Begin(placement), now_ms);
            }
            (
                Phase::Talking {
                    conversation,
                    new_call: new_call @ Some(_),
                },
                Err(failure),
            ) if *new_call == Some(placement) => {
                *new_call = None;
                let provider_label = self
                    .next_plan
                    .as_ref()
                    .and_then(CallPlan::provider_label)
                    .filter(|label| !label.is_empty())
                    .unwrap_or_else(|| "the new provider".to_owned());
                let refused = Input::NewCallRefused {
                    provider_label,
                    sentence: failure.sentence,
                    details: failure.details,
                };
                conversation.handle_input(refused, now_ms);
                self.drain();
            }
            // A placement the machine no longer waits for: nothing goes on its call.
            (_, Ok(())) => self
                .outputs
                .push_back(ConversationsOutput::HangUpPlaced(placement)),
            (_, Err(_)) => {}
        }
    }

    fn began(&mut self, conversation: Box<Conversation>, now_ms: u64) {
        self.plan.notice_shown();
        self.phase = Phase::Talking {
            conversation,
            new_call: None,
        };
        let typed = std::mem::take(&mut self.typed);
        if let Phase::Talking { conversation, .. } = &mut self.phase {
            for message in typed {
                conversation.handle_input(Input::SendMessage(message), now_ms);
            }
        }
        self.drain();
    }

    fn closed(&mut self, now_ms: u64) {
        let Phase::Closing { .. } = self.phase else {
            return;
        };
        let Phase::Closing { then } = std::mem::replace(&mut self.phase, Phase::Idle) else {
            unreachable!("matched above");
        };
        if let Some(next_plan) = self.next_plan.take() {
            self.plan = next_plan;
            self.dial_not_before_ms = None;
        }
        match then {
            AfterClose::Idle => self.outputs.push_back(ConversationsOutput::StopToolServers),
            AfterClose::HungUp => {
                self.say(StatusEvent::hung_up());
                self.outputs.push_back(ConversationsOutput::StopToolServers);
            }
            AfterClose::Call(continuing) => {
                if continuing.is_some() {
                    self.continuing = continuing;
                }
                self.call(now_ms);
            }
            AfterClose::Begin(placement) => self.begin(placement),
            AfterClose::Quit => {
                self.phase = Phase::Gone;
                self.outputs.push_back(ConversationsOutput::StopToolServers);
                self.outputs.push_back(ConversationsOutput::Quit);
            }
        }
    }

    /// The conversation's outputs, passed on in their order; a redial is placed with the
    /// plan, and a conversation that ended is closed.
    fn drain(&mut self) {
        let Phase::Talking { conversation, .. } = &mut self.phase else {
            return;
        };
        let mut ended = false;
        while let Some(output) = conversation.poll_output() {
            match output {
                Output::Dial { history } => self.outputs.push_back(ConversationsOutput::Redial {
                    plan: self.plan.clone(),
                    history,
                }),
                output => {
                    ended |= matches!(output, Output::Ended { .. });
                    self.outputs
                        .push_back(ConversationsOutput::Conversation(output));
                }
            }
        }
        if ended {
            // The conversation said why it ended; nothing more is fed to it.
            self.wind_up(AfterClose::Idle);
        }
    }

    /// The user leaves the conversation under way: it winds down (its last outputs passed on)
    /// and is closed, then the machine does `then`.
    fn close(&mut self, then: AfterClose<C>, now_ms: u64) {
        if let Phase::Talking { conversation, .. } = &mut self.phase {
            conversation.handle_input(Input::HangUp, now_ms);
            self.drain();
        }
        match &mut self.phase {
            // Already closing (the wind-down ended it): the user's wish decides what follows.
            Phase::Closing { then: after } => *after = then,
            _ => self.wind_up(then),
        }
    }

    fn wind_up(&mut self, then: AfterClose<C>) {
        if let Phase::Talking {
            new_call: Some(_), ..
        } = &self.phase
        {
            self.outputs.push_back(ConversationsOutput::StopPlacing);
        }
        self.phase = Phase::Closing { then };
        self.outputs.push_back(ConversationsOutput::Close);
    }

    /// A fresh first call: after the provider's wait if it asked for one.
    fn call(&mut self, now_ms: u64) {
        self.first_dial = FirstDial::new(self.policy, self.jitter.next_u64());
        self.last_failure = None;
        match self.dial_not_before_ms {
            Some(until_ms) if until_ms > now_ms => {
                self.stop_placing();
                self.phase = Phase::WaitingToDial { until_ms };
                self.say_waiting(until_ms, now_ms);
            }
            _ => {
                self.dial_not_before_ms = None;
                self.place();
            }
        }
    }

    /// Asks for the next attempt of a first call.
    fn place(&mut self) {
        self.placements += 1;
        let placement = Placement(self.placements);
        if let Some(label) = self.plan.provider_label() {
            self.say(self.first_dial.dialling(&label));
        }
        self.outputs.push_back(ConversationsOutput::Place {
            placement,
            plan: self.plan.clone(),
            continuing: self.continuing.clone(),
        });
        self.phase = Phase::Placing { placement };
    }

    fn begin(&mut self, placement: Placement) {
        self.phase = Phase::Beginning;
        self.outputs.push_back(ConversationsOutput::Begin {
            placement,
            plan: self.plan.clone(),
            continuing: self.continuing.take(),
        });
    }

    /// Nobody calls again: the user reads why, and a provider that asked to wait is left alone
    /// until then.
    fn give_up(&mut self, failure: DialFailure, now_ms: u64) {
        let label = self.plan.provider_label().unwrap_or_default();
        self.say(failure.status(&label));
        self.dial_not_before_ms = failure
            .retry_after_ms()
            .map(|wait_ms| now_ms.saturating_add(wait_ms));
    }

    fn stop_placing(&mut self) {
        if matches!(self.phase, Phase::Placing { .. }) {
            self.outputs.push_back(ConversationsOutput::StopPlacing);
        }
    }

    fn say_waiting(&mut self, until_ms: u64, now_ms: u64) {
        let wait = Duration::from_millis(until_ms.saturating_sub(now_ms));
        self.say(StatusEvent::waiting_to_dial(wait));
    }

    fn say(&mut self, status: StatusEvent) {
        self.outputs.push_back(ConversationsOutput::Status(status));
    }
}
