//! Walkie from launch to quit in virtual time: the first call and its attempts, a provider's
//! wait, messages typed with no call, new settings during a call, hanging up, continuing a
//! saved conversation and quitting — what the user reads and which calls are placed.

mod support;
#[path = "../../session/tests/turn_support/mod.rs"]
mod turn_support;

use walkie_conversation::{
    CallPlan, ConnectionState, Conversations, ConversationsInput, ConversationsOutput, DialFailure,
    DialStage, Input, Output, Placement, RedialPolicy, Request, Retry, StatusAction, StatusEvent,
    TransportInput,
};
use walkie_session::turn::{PressMode, TurnMode, UserMessage};

use ConnectionState::*;

/// The settings of these tests: a provider's name (none: the settings cannot be dialled) and
/// the turn mode the user may switch.
#[derive(Debug, Clone, PartialEq)]
struct Plan {
    provider: Option<&'static str>,
    mode: TurnMode,
    notice: Option<&'static str>,
}

impl Plan {
    fn to(provider: &'static str) -> Self {
        Self {
            provider: Some(provider),
            mode: TurnMode::PushToTalk(PressMode::Hold),
            notice: None,
        }
    }
}

impl CallPlan for Plan {
    type Change = TurnMode;

    fn provider_label(&self) -> Option<String> {
        self.provider.map(str::to_owned)
    }

    fn keep(&mut self, mode: &TurnMode) -> Option<Input> {
        self.mode = mode.clone();
        Some(Input::SetTurnMode(mode.clone()))
    }

    fn notice_shown(&mut self) {
        self.notice = None;
    }
}

/// A saved conversation, by its name.
type Saved = &'static str;
type Out = ConversationsOutput<Plan, Saved>;

struct Walkie {
    machine: Conversations<Plan, Saved>,
}

impl Walkie {
    /// Walkie starts with `plan`; what it put out.
    fn launch(plan: Plan) -> (Self, Vec<Out>) {
        let mut walkie = Self {
            machine: Conversations::new(plan, RedialPolicy::default(), 7, 0),
        };
        let outputs = walkie.outputs();
        (walkie, outputs)
    }

    /// Launched, its first call answered and its conversation begun (no output read).
    fn talking(plan: Plan) -> Self {
        let (mut walkie, outputs) = Self::launch(plan);
        let placement = placement(&outputs);
        walkie.input(
            100,
            ConversationsInput::Placed {
                placement,
                outcome: Ok(()),
            },
        );
        walkie.input(150, began());
        walkie.input(
            160,
            ConversationsInput::Conversation(Input::Transport(TransportInput::Open)),
        );
        walkie.server(200, &turn_support::session_updated_with_transcription());
        walkie
    }

    fn input(&mut self, now_ms: u64, input: ConversationsInput<Plan, Saved>) -> Vec<Out> {
        self.machine.handle_input(input, now_ms);
        self.outputs()
    }

    fn request(&mut self, now_ms: u64, request: Request<Plan, Saved>) -> Vec<Out> {
        self.input(now_ms, ConversationsInput::Request(request))
    }

    fn conversation(&mut self, now_ms: u64, input: Input) -> Vec<Out> {
        self.input(now_ms, ConversationsInput::Conversation(input))
    }

    fn server(&mut self, now_ms: u64, text: &str) -> Vec<Out> {
        self.conversation(now_ms, Input::ServerText(text.to_owned()))
    }

    fn placed(
        &mut self,
        now_ms: u64,
        placement: Placement,
        outcome: Result<(), DialFailure>,
    ) -> Vec<Out> {
        self.input(now_ms, ConversationsInput::Placed { placement, outcome })
    }

    fn tick(&mut self, now_ms: u64) -> Vec<Out> {
        self.conversation(now_ms, Input::Tick)
    }

    fn outputs(&mut self) -> Vec<Out> {
        std::iter::from_fn(|| self.machine.poll_output()).collect()
    }
}

/// A conversation as the driver begins it on a call.
fn began() -> ConversationsInput<Plan, Saved> {
    ConversationsInput::Began(Box::new(support::Call::placed().machine))
}

fn server_error() -> DialFailure {
    DialFailure::refused(
        "127.0.0.1 had a server error (503): reconnect in a moment.",
        Retry::Later { after_ms: None },
    )
}

fn key_refused() -> DialFailure {
    DialFailure::refused(
        "The API key was refused: open Settings and check it.",
        Retry::Never,
    )
    .with_details("HTTP 401")
}

fn rate_limited(after_ms: u64) -> DialFailure {
    DialFailure::refused(
        "OpenAI is rate-limiting this key: wait a moment.",
        Retry::Later {
            after_ms: Some(after_ms),
        },
    )
}

/// The placement of the call `outputs` ask for (there must be exactly one).
fn placement(outputs: &[Out]) -> Placement {
    let placements: Vec<Placement> = placed_calls(outputs)
        .into_iter()
        .map(|(placement, _, _)| placement)
        .collect();
    assert_eq!(placements.len(), 1, "one call placed: {outputs:?}");
    placements[0]
}

/// The calls `outputs` ask to place: their placement, plan and saved conversation.
fn placed_calls(outputs: &[Out]) -> Vec<(Placement, Plan, Option<Saved>)> {
    outputs
        .iter()
        .filter_map(|output| match output {
            ConversationsOutput::Place {
                placement,
                plan,
                continuing,
            } => Some((*placement, plan.clone(), *continuing)),
            _ => None,
        })
        .collect()
}

/// Every status line among `outputs`, between conversations and in one.
fn statuses(outputs: &[Out]) -> Vec<StatusEvent> {
    outputs
        .iter()
        .filter_map(|output| match output {
            ConversationsOutput::Status(status)
            | ConversationsOutput::Conversation(Output::Status(status)) => Some(status.clone()),
            _ => None,
        })
        .collect()
}

fn last_status(outputs: &[Out]) -> StatusEvent {
    statuses(outputs)
        .pop()
        .unwrap_or_else(|| panic!("a status among {outputs:?}"))
}

/// The kinds of `outputs`, as words, the conversation's by their own kind.
fn kinds(outputs: &[Out]) -> Vec<String> {
    outputs
        .iter()
        .map(|output| match output {
            ConversationsOutput::Status(_) => "status".to_owned(),
            ConversationsOutput::Place { .. } => "place".to_owned(),
            ConversationsOutput::StopPlacing => "stop placing".to_owned(),
            ConversationsOutput::HangUpPlaced(_) => "hang up placed".to_owned(),
            ConversationsOutput::Begin { .. } => "begin".to_owned(),
            ConversationsOutput::Redial { .. } => "redial".to_owned(),
            ConversationsOutput::Close => "close".to_owned(),
            ConversationsOutput::StopToolServers => "stop tool servers".to_owned(),
            ConversationsOutput::Quit => "quit".to_owned(),
            ConversationsOutput::Conversation(output) => match output {
                Output::Status(_) => "conversation status".to_owned(),
                Output::Ended { .. } => "ended".to_owned(),
                Output::HangUpCall => "hang up call".to_owned(),
                Output::Send(sent) => format!("send {}", sent.event.event_type()),
                _ => "conversation".to_owned(),
            },
        })
        .collect()
}

/// The texts of the user messages the call was sent.
fn user_texts_sent(outputs: &[Out]) -> Vec<String> {
    outputs
        .iter()
        .filter_map(|output| match output {
            ConversationsOutput::Conversation(Output::Send(sent)) => {
                let json: serde_json::Value = serde_json::from_str(&sent.to_json()).ok()?;
                (json["type"] == "conversation.item.create" && json["item"]["role"] == "user")
                    .then(|| {
                        json["item"]["content"][0]["text"]
                            .as_str()
                            .map(str::to_owned)
                    })
                    .flatten()
            }
            _ => None,
        })
        .collect()
}

#[test]
fn walkie_places_its_first_call_at_launch_and_begins_a_conversation_on_it() {
    let (mut walkie, outputs) = Walkie::launch(Plan::to("OpenAI"));
    assert_eq!(last_status(&outputs).detail, "Connecting to OpenAI…");
    let calls = placed_calls(&outputs);
    assert_eq!(calls.len(), 1);
    let (placement, plan, continuing) = calls[0].clone();
    assert_eq!((plan, continuing), (Plan::to("OpenAI"), None));

    let outputs = walkie.placed(100, placement, Ok(()));
    assert!(
        matches!(&outputs[..], [ConversationsOutput::Begin { placement: begun, plan, continuing: None }]
            if *begun == placement && *plan == Plan::to("OpenAI")),
        "{outputs:?}"
    );
    let outputs = walkie.input(150, began());
    assert!(
        outputs
            .iter()
            .all(|output| matches!(output, ConversationsOutput::Conversation(_))),
        "the conversation speaks from now on: {outputs:?}"
    );
}

#[test]
fn settings_that_cannot_be_dialled_say_what_to_change_and_place_no_second_call() {
    let (mut walkie, outputs) = Walkie::launch(Plan {
        provider: None,
        ..Plan::to("OpenAI")
    });
    assert!(statuses(&outputs).is_empty(), "no provider to name");
    let outputs = walkie.placed(
        5,
        placement(&outputs),
        Err(DialFailure::settings(
            "no API key for OpenAI: add one in Settings",
        )),
    );
    let status = last_status(&outputs);
    assert_eq!(
        status.detail,
        "Not connected: no API key for OpenAI: add one in Settings."
    );
    assert_eq!(status.action, Some(StatusAction::OpenSettings));
    assert!(placed_calls(&outputs).is_empty());
    assert_eq!(walkie.machine.next_deadline_ms(), None);
}

#[test]
fn a_first_call_refused_for_a_passing_reason_is_placed_again_after_a_growing_wait_up_to_the_bound()
{
    let policy = RedialPolicy::default();
    let (mut walkie, outputs) = Walkie::launch(Plan::to("OpenAI"));
    let mut placement = placement(&outputs);
    let mut now_ms = 0;
    for attempt in 1..=policy.max_attempts {
        let outputs = walkie.placed(now_ms + 10, placement, Err(server_error()));
        let status = last_status(&outputs);
        assert_eq!(status.state, Reconnecting);
        assert!(
            status
                .detail
                .starts_with(&format!("Calling again (attempt {attempt} of 6)…")),
            "{}",
            status.detail
        );
        assert!(placed_calls(&outputs).is_empty(), "not at once");
        let due_ms = walkie.machine.next_deadline_ms().expect("a wait");
        let wait_ms = due_ms - (now_ms + 10);
        assert!(
            (policy.delay_ms(attempt, 0.0, None)..=policy.delay_ms(attempt, 1.0, None))
                .contains(&wait_ms),
            "attempt {attempt} waited {wait_ms} ms"
        );
        assert!(
            walkie.tick(due_ms - 1).is_empty(),
            "nothing before the wait is over"
        );
        let outputs = walkie.tick(due_ms);
        placement = self::placement(&outputs);
        assert_eq!(
            last_status(&outputs),
            status,
            "the attempt keeps the wait's words"
        );
        now_ms = due_ms;
    }
    let outputs = walkie.placed(now_ms + 10, placement, Err(server_error()));
    let status = last_status(&outputs);
    assert_eq!(status.state, Error);
    assert_eq!(status.action, Some(StatusAction::TryAgain));
    assert!(placed_calls(&outputs).is_empty());
    assert_eq!(
        walkie.machine.next_deadline_ms(),
        None,
        "the user decides now"
    );
}

#[test]
fn a_first_call_refused_for_the_key_is_not_placed_again_and_the_status_sends_the_user_to_settings()
{
    let (mut walkie, outputs) = Walkie::launch(Plan::to("OpenAI"));
    let outputs = walkie.placed(10, placement(&outputs), Err(key_refused()));
    let status = last_status(&outputs);
    assert_eq!(
        status.detail,
        "Not connected: could not connect to OpenAI. The API key was refused: open Settings and check it."
    );
    assert_eq!(status.action, Some(StatusAction::OpenSettings));
    assert_eq!(status.details.as_deref(), Some("HTTP 401"));
    assert_eq!(walkie.machine.next_deadline_ms(), None);
    assert!(placed_calls(&outputs).is_empty());
}

#[test]
fn stopping_the_calling_again_during_a_wait_or_an_attempt_says_why_the_last_attempt_failed() {
    let (mut walkie, outputs) = Walkie::launch(Plan::to("OpenAI"));
    let outputs = walkie.placed(10, placement(&outputs), Err(server_error()));
    let due_ms = walkie.machine.next_deadline_ms().expect("a wait");
    assert!(last_status(&outputs).cancellable);
    let attempt = walkie.tick(due_ms);

    let outputs = walkie.conversation(due_ms + 5, Input::CancelRedial);
    assert_eq!(kinds(&outputs), ["stop placing", "status"]);
    let status = last_status(&outputs);
    assert_eq!(
        status.detail,
        "Not connected: 127.0.0.1 had a server error (503): reconnect in a moment.".replace(
            "Not connected: ",
            "Not connected: could not connect to OpenAI. "
        )
    );
    assert_eq!(status.action, Some(StatusAction::TryAgain));
    // The attempt that was under way answers late: nothing goes on its call.
    let late = walkie.placed(due_ms + 50, placement(&attempt), Ok(()));
    assert!(
        matches!(&late[..], [ConversationsOutput::HangUpPlaced(_)]),
        "{late:?}"
    );

    let (mut walkie, outputs) = Walkie::launch(Plan::to("OpenAI"));
    walkie.placed(10, placement(&outputs), Err(server_error()));
    let outputs = walkie.conversation(20, Input::CancelRedial);
    assert_eq!(kinds(&outputs), ["status"], "no attempt was under way");
    assert_eq!(last_status(&outputs).state, Error);
    assert_eq!(walkie.machine.next_deadline_ms(), None);
}

#[test]
fn stopping_the_first_attempt_says_the_call_was_cancelled() {
    let (mut walkie, _) = Walkie::launch(Plan::to("OpenAI"));
    let outputs = walkie.conversation(20, Input::CancelRedial);
    assert_eq!(kinds(&outputs), ["stop placing", "status"]);
    assert_eq!(
        last_status(&outputs).detail,
        "Not connected: the call was cancelled. Press Connect to try again."
    );
}

#[test]
fn a_provider_that_asked_to_wait_is_not_called_before_then_even_when_the_user_presses_connect() {
    let (mut walkie, outputs) = Walkie::launch(Plan::to("OpenAI"));
    walkie.placed(10, placement(&outputs), Err(rate_limited(30_000)));
    assert_eq!(
        walkie.machine.next_deadline_ms(),
        Some(30_010),
        "the wait, not the backoff"
    );
    // The user stops waiting: the provider's wait still stands for the next call.
    walkie.conversation(1_000, Input::CancelRedial);

    let outputs = walkie.request(2_000, Request::Connect);
    assert!(placed_calls(&outputs).is_empty());
    assert_eq!(
        last_status(&outputs).detail,
        "The provider asked Walkie to wait: calling again in 29 s…"
    );
    let outputs = walkie.request(12_000, Request::Connect);
    assert!(
        placed_calls(&outputs).is_empty(),
        "Connect does not cut the wait short"
    );
    assert_eq!(
        last_status(&outputs).detail,
        "The provider asked Walkie to wait: calling again in 19 s…"
    );
    assert_eq!(walkie.machine.next_deadline_ms(), Some(31_000));
    assert!(walkie.tick(30_999).is_empty());
    let outputs = walkie.tick(31_000);
    assert_eq!(
        placed_calls(&outputs).len(),
        1,
        "placed once the wait is over"
    );
}

#[test]
fn new_settings_name_another_provider_whose_call_needs_no_wait() {
    let (mut walkie, outputs) = Walkie::launch(Plan::to("OpenAI"));
    walkie.placed(10, placement(&outputs), Err(rate_limited(30_000)));
    walkie.conversation(20, Input::CancelRedial);
    let outputs = walkie.request(30, Request::Apply(Plan::to("Azure")));
    let calls = placed_calls(&outputs);
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].1, Plan::to("Azure"));
    assert_eq!(last_status(&outputs).detail, "Connecting to Azure…");
}

#[test]
fn a_press_with_no_call_says_to_connect_first_and_a_typed_message_waits_for_the_next_call() {
    let (mut walkie, outputs) = Walkie::launch(Plan::to("OpenAI"));
    walkie.placed(10, placement(&outputs), Err(key_refused()));

    let outputs = walkie.conversation(20, Input::Press);
    assert_eq!(
        last_status(&outputs),
        StatusEvent::press_while_not_connected()
    );
    let outputs = walkie.conversation(30, Input::SendMessage(UserMessage::text("hello there")));
    assert_eq!(
        last_status(&outputs),
        StatusEvent::text_while_not_connected()
    );

    let outputs = walkie.request(40, Request::Connect);
    let outputs = walkie.placed(50, placement(&outputs), Ok(()));
    assert_eq!(kinds(&outputs), ["begin"]);
    let mut outputs = walkie.input(60, began());
    outputs.extend(walkie.conversation(70, Input::Transport(TransportInput::Open)));
    outputs.extend(walkie.server(80, &turn_support::session_updated_with_transcription()));
    assert_eq!(
        user_texts_sent(&outputs),
        ["hello there"],
        "sent once, once ready"
    );
    // The next conversation does not send it again.
    walkie.request(90, Request::Connect);
    let outputs = walkie.input(100, ConversationsInput::Closed);
    let outputs = walkie.placed(110, placement(&outputs), Ok(()));
    assert_eq!(kinds(&outputs), ["begin"]);
    let mut outputs = walkie.input(120, began());
    outputs.extend(walkie.conversation(130, Input::Transport(TransportInput::Open)));
    outputs.extend(walkie.server(140, &turn_support::session_updated_with_transcription()));
    assert!(user_texts_sent(&outputs).is_empty(), "{outputs:?}");
}

#[test]
fn a_message_typed_while_the_first_call_is_placed_is_sent_on_it_without_a_warning() {
    let (mut walkie, outputs) = Walkie::launch(Plan::to("OpenAI"));
    let placement = placement(&outputs);
    let outputs = walkie.conversation(5, Input::SendMessage(UserMessage::text("quick question")));
    assert!(outputs.is_empty(), "the call is on its way: {outputs:?}");
    walkie.placed(10, placement, Ok(()));
    let mut outputs = walkie.input(20, began());
    outputs.extend(walkie.conversation(30, Input::Transport(TransportInput::Open)));
    outputs.extend(walkie.server(40, &turn_support::session_updated_with_transcription()));
    assert_eq!(user_texts_sent(&outputs), ["quick question"]);
}

#[test]
fn new_settings_during_a_conversation_place_their_call_beside_it_and_move_once_it_answers() {
    let mut walkie = Walkie::talking(Plan::to("OpenAI"));
    let outputs = walkie.request(1_000, Request::Apply(Plan::to("Azure")));
    let calls = placed_calls(&outputs);
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].1, Plan::to("Azure"));
    assert!(
        !kinds(&outputs).contains(&"close".to_owned()),
        "the call under way goes on: {outputs:?}"
    );
    let status = last_status(&outputs);
    assert!(status.detail.contains("Azure"), "{}", status.detail);

    // The user still talks on the old call meanwhile.
    let outputs = walkie.conversation(1_100, Input::Press);
    assert_eq!(last_status(&outputs).state, Listening, "{outputs:?}");
    walkie.conversation(1_200, Input::Release);

    let outputs = walkie.placed(2_000, calls[0].0, Ok(()));
    assert_eq!(kinds(&outputs).last().map(String::as_str), Some("close"));
    assert!(
        !kinds(&outputs).contains(&"begin".to_owned()),
        "closed first"
    );
    let outputs = walkie.input(2_100, ConversationsInput::Closed);
    assert!(
        matches!(&outputs[..], [ConversationsOutput::Begin { placement, plan, continuing: None }]
            if *placement == calls[0].0 && *plan == Plan::to("Azure")),
        "{outputs:?}"
    );
}

#[test]
fn new_settings_whose_call_fails_leave_the_call_under_way_and_are_the_next_conversations() {
    let mut walkie = Walkie::talking(Plan::to("OpenAI"));
    let outputs = walkie.request(1_000, Request::Apply(Plan::to("Azure")));
    let new_call = placement(&outputs);
    let outputs = walkie.placed(1_500, new_call, Err(key_refused()));
    assert!(
        !kinds(&outputs).contains(&"close".to_owned()),
        "{outputs:?}"
    );
    let status = last_status(&outputs);
    assert!(
        status.detail.starts_with("Call goes on"),
        "{}",
        status.detail
    );
    assert!(status.detail.contains("Azure"), "{}", status.detail);
    assert_eq!(status.details.as_deref(), Some("HTTP 401"));

    let outputs = walkie.request(2_000, Request::HangUp);
    assert_eq!(kinds(&outputs).last().map(String::as_str), Some("close"));
    let outputs = walkie.input(2_100, ConversationsInput::Closed);
    assert_eq!(last_status(&outputs), StatusEvent::hung_up());
    assert!(
        placed_calls(&outputs).is_empty(),
        "no call until the user asks"
    );
    let outputs = walkie.request(3_000, Request::Connect);
    assert_eq!(placed_calls(&outputs)[0].1, Plan::to("Azure"));
}

#[test]
fn a_newer_save_replaces_the_call_still_being_placed_for_an_older_one() {
    let mut walkie = Walkie::talking(Plan::to("OpenAI"));
    let first = placement(&walkie.request(1_000, Request::Apply(Plan::to("Azure"))));
    let second = placement(&walkie.request(1_100, Request::Apply(Plan::to("Local"))));
    assert_ne!(first, second);
    let late = walkie.placed(1_200, first, Ok(()));
    assert!(
        matches!(&late[..], [ConversationsOutput::HangUpPlaced(p)] if *p == first),
        "{late:?}"
    );
    walkie.placed(1_300, second, Ok(()));
    let outputs = walkie.input(1_400, ConversationsInput::Closed);
    assert!(
        matches!(&outputs[..], [ConversationsOutput::Begin { plan, .. }] if *plan == Plan::to("Local")),
        "{outputs:?}"
    );
}

#[test]
fn hanging_up_closes_the_conversation_and_a_new_settings_call_under_way_is_dropped() {
    let mut walkie = Walkie::talking(Plan::to("OpenAI"));
    walkie.request(1_000, Request::Apply(Plan::to("Azure")));
    let outputs = walkie.request(1_100, Request::HangUp);
    let kinds = kinds(&outputs);
    let stop = kinds.iter().position(|kind| kind == "stop placing");
    let close = kinds.iter().position(|kind| kind == "close");
    assert!(
        stop.is_some() && close.is_some() && stop < close,
        "{kinds:?}"
    );
    assert!(
        kinds.contains(&"hang up call".to_owned()) || kinds.contains(&"conversation".to_owned())
    );
    let outputs = walkie.input(1_200, ConversationsInput::Closed);
    assert_eq!(last_status(&outputs), StatusEvent::hung_up());
    assert!(
        self::kinds(&outputs).contains(&"stop tool servers".to_owned()),
        "with no conversation, no tool server runs: {outputs:?}"
    );
    // A press now has no call to go to.
    let outputs = walkie.conversation(1_300, Input::Press);
    assert_eq!(
        last_status(&outputs),
        StatusEvent::press_while_not_connected()
    );
}

#[test]
fn continuing_a_saved_conversation_hangs_up_the_one_under_way_and_its_call_goes_on_with_it() {
    let mut walkie = Walkie::talking(Plan::to("OpenAI"));
    let outputs = walkie.request(1_000, Request::Continue("tuesday"));
    assert_eq!(kinds(&outputs).last().map(String::as_str), Some("close"));
    let outputs = walkie.input(1_100, ConversationsInput::Closed);
    let calls = placed_calls(&outputs);
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].2, Some("tuesday"), "the call is placed for it");
    let outputs = walkie.placed(1_200, calls[0].0, Ok(()));
    assert!(
        matches!(
            &outputs[..],
            [ConversationsOutput::Begin {
                continuing: Some("tuesday"),
                ..
            }]
        ),
        "{outputs:?}"
    );
    walkie.input(1_300, began());
    walkie.request(2_000, Request::Connect);
    let outputs = walkie.input(2_100, ConversationsInput::Closed);
    assert_eq!(placed_calls(&outputs)[0].2, None, "continued once");
}

#[test]
fn a_conversation_that_ends_is_closed_and_the_user_asks_for_the_next_call() {
    let mut walkie = Walkie::talking(Plan::to("OpenAI"));
    let outputs = walkie.conversation(
        1_000,
        Input::Transport(TransportInput::Closed(
            "the provider closed the call".to_owned(),
        )),
    );
    assert!(kinds(&outputs).contains(&"hang up call".to_owned()));
    let due_ms = walkie.machine.next_deadline_ms().expect("a redial is due");
    let outputs = walkie.tick(due_ms);
    let redials: Vec<&Plan> = outputs
        .iter()
        .filter_map(|output| match output {
            ConversationsOutput::Redial { plan, .. } => Some(plan),
            _ => None,
        })
        .collect();
    assert_eq!(
        redials,
        [&Plan::to("OpenAI")],
        "placed with the plan under way"
    );
    let outputs = walkie.conversation(due_ms + 10, Input::DialFailed(key_refused()));
    let kinds = kinds(&outputs);
    assert_eq!(kinds[kinds.len() - 2..], ["ended", "close"], "{kinds:?}");
    assert_eq!(
        last_status(&outputs).action,
        Some(StatusAction::OpenSettings)
    );
    let outputs = walkie.input(due_ms + 20, ConversationsInput::Closed);
    assert_eq!(
        self::kinds(&outputs),
        ["stop tool servers"],
        "nothing more: the user decides"
    );
    assert_eq!(walkie.machine.next_deadline_ms(), None);
    let outputs = walkie.request(due_ms + 30, Request::Connect);
    assert_eq!(placed_calls(&outputs).len(), 1);
}

#[test]
fn a_mode_switched_with_no_call_is_kept_for_the_next_call_and_told_to_a_conversation_under_way() {
    let (mut walkie, outputs) = Walkie::launch(Plan::to("OpenAI"));
    walkie.placed(10, placement(&outputs), Err(key_refused()));
    let hands_free = TurnMode::HandsFree(turn_support::server_vad(None));
    assert!(
        walkie
            .request(20, Request::Keep(hands_free.clone()))
            .is_empty()
    );
    let outputs = walkie.request(30, Request::Connect);
    assert_eq!(placed_calls(&outputs)[0].1.mode, hands_free);

    let mut walkie = Walkie::talking(Plan::to("OpenAI"));
    let outputs = walkie.request(1_000, Request::Keep(hands_free.clone()));
    assert!(
        kinds(&outputs)
            .iter()
            .any(|kind| kind == "send session.update"),
        "the call switches now: {outputs:?}"
    );
}

#[test]
fn the_settings_notice_is_shown_by_the_first_conversation_only() {
    let plan = Plan {
        notice: Some("moved to gpt-realtime-2.1"),
        ..Plan::to("OpenAI")
    };
    let mut walkie = Walkie::talking(plan);
    walkie.request(1_000, Request::Connect);
    let outputs = walkie.input(1_100, ConversationsInput::Closed);
    assert_eq!(placed_calls(&outputs)[0].1.notice, None);
}

#[test]
fn a_conversation_that_cannot_begin_says_why_and_keeps_what_the_user_typed() {
    let (mut walkie, outputs) = Walkie::launch(Plan::to("OpenAI"));
    walkie.conversation(5, Input::SendMessage(UserMessage::text("are you there")));
    walkie.placed(10, placement(&outputs), Ok(()));
    let outputs = walkie.input(
        20,
        ConversationsInput::NotBegun {
            reason: "the audio engine could not start: no device".to_owned(),
            details: None,
        },
    );
    assert_eq!(
        last_status(&outputs).detail,
        "Not connected: the audio engine could not start: no device. Press Connect to try again."
    );
    let outputs = walkie.request(30, Request::Connect);
    walkie.placed(40, placement(&outputs), Ok(()));
    let mut outputs = walkie.input(50, began());
    outputs.extend(walkie.conversation(60, Input::Transport(TransportInput::Open)));
    outputs.extend(walkie.server(70, &turn_support::session_updated_with_transcription()));
    assert_eq!(user_texts_sent(&outputs), ["are you there"]);
}

#[test]
fn quitting_closes_the_conversation_before_walkie_quits() {
    let mut walkie = Walkie::talking(Plan::to("OpenAI"));
    let outputs = walkie.request(1_000, Request::Quit);
    assert_eq!(kinds(&outputs).last().map(String::as_str), Some("close"));
    assert!(!kinds(&outputs).contains(&"quit".to_owned()));
    let outputs = walkie.input(1_100, ConversationsInput::Closed);
    assert_eq!(kinds(&outputs), ["stop tool servers", "quit"]);

    let (mut walkie, _) = Walkie::launch(Plan::to("OpenAI"));
    let outputs = walkie.request(10, Request::Quit);
    assert_eq!(
        kinds(&outputs),
        ["stop placing", "stop tool servers", "quit"]
    );
}

#[test]
fn hanging_up_while_the_first_call_is_placed_stops_the_tool_servers_too() {
    let (mut walkie, _) = Walkie::launch(Plan::to("OpenAI"));
    let outputs = walkie.request(10, Request::HangUp);
    assert_eq!(
        kinds(&outputs),
        ["stop placing", "status", "stop tool servers"]
    );
}

#[test]
fn new_settings_keep_the_tool_servers_running_into_the_next_conversation() {
    let mut walkie = Walkie::talking(Plan::to("OpenAI"));
    let outputs = walkie.request(1_000, Request::Apply(Plan::to("Azure")));
    let placement = placement(&outputs);
    let mut outputs = walkie.placed(1_100, placement, Ok(()));
    outputs.extend(walkie.input(1_200, ConversationsInput::Closed));
    assert!(
        kinds(&outputs).contains(&"begin".to_owned()),
        "the new settings' conversation begins: {outputs:?}"
    );
    assert!(
        !kinds(&outputs).contains(&"stop tool servers".to_owned()),
        "the next conversation uses them at once: {outputs:?}"
    );
}

#[test]
fn a_failure_of_the_local_provider_says_so_and_offers_connect() {
    let (mut walkie, outputs) = Walkie::launch(Plan::to("Local provider"));
    let failure = DialFailure {
        stage: DialStage::LocalProvider,
        ..DialFailure::settings("the local provider could not start: address in use")
    };
    let outputs = walkie.placed(10, placement(&outputs), Err(failure));
    let status = last_status(&outputs);
    assert_eq!(status.action, Some(StatusAction::TryAgain));
    assert!(
        status.detail.contains("address in use"),
        "{}",
        status.detail
    );
}
