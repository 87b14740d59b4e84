//! A conversation outlives its call: a dropped call is dialled again after a short wait, the
//! new session is given the conversation so far, and the transcript goes on under ids of its
//! own. In virtual time.

mod support;
#[path = "../../session/tests/turn_support/mod.rs"]
mod turn_support;

use support::*;
use turn_support::{
    assistant_says, audio_part_added, committed, output_started, output_stopped, response_created,
    response_done, server_error, server_vad, session_updated_with_transcription,
    user_transcript_completed,
};
use walkie_conversation::{
    ConnectionState, DialFailure, EngineInput, Input, Output, Record, RedialPolicy, Retry,
    TransportInput,
};
use walkie_openai::{ClientEvent, ContentPart, Item, Role, SessionConfig};
use walkie_session::turn::{AudioCommand, LATE_AUDIO_GRACE_MS, TurnConfig, UserMessage};

use ConnectionState::*;

const DROPPED: &str = "the provider closed the call";

fn dropped() -> Input {
    Input::Transport(TransportInput::Closed(DROPPED.to_owned()))
}

/// A first exchange: "My cat is called Miso." answered "Miso is a lovely name.", finished.
fn after_one_exchange() -> Call {
    let mut call = Call::ready();
    call.utterance(1_000, 2_000);
    call.server(2_300, &committed("item_U1"));
    call.server(2_310, &response_created("resp_R1"));
    call.server(2_320, &audio_part_added("resp_R1", "item_A1"));
    call.server(2_330, &output_started("resp_R1"));
    call.server(
        2_340,
        &assistant_says("resp_R1", "item_A1", "Miso is a lovely name."),
    );
    call.server(2_400, &response_done("resp_R1", "completed"));
    call.server(2_500, &output_stopped("resp_R1"));
    call.server(
        2_600,
        &user_transcript_completed("item_U1", "My cat is called Miso."),
    );
    call
}

/// The messages restored by `conversation.item.create` among `outputs`: (role, part type, text).
fn restored(outputs: &[Output]) -> Vec<(Role, &'static str, String)> {
    outputs
        .iter()
        .filter_map(|output| match output {
            Output::Send(sent) => match sent.realtime()? {
                ClientEvent::ConversationItemCreate {
                    item: Item::Message { role, content, .. },
                    ..
                } => Some(match &content[..] {
                    [ContentPart::InputText { text }] => (*role, "input_text", text.clone()),
                    [ContentPart::OutputText { text }] => (*role, "output_text", text.clone()),
                    other => panic!("one text part per restored message: {other:?}"),
                }),
                _ => None,
            },
            _ => None,
        })
        .collect()
}

#[test]
fn a_dropped_call_is_dialled_again_within_the_first_backoff_and_says_which_attempt() {
    let mut call = after_one_exchange();
    let outputs = call.input(5_000, dropped());
    assert_eq!(
        last_status(&outputs),
        Some((
            Reconnecting,
            format!("Reconnecting… (attempt 1 of 6): {DROPPED}.")
        ))
    );
    let first_delay_ms = RedialPolicy::default().first_delay_ms;
    let at_ms = call
        .machine
        .next_deadline_ms()
        .expect("a redial is scheduled");
    assert!(
        (5_000 + first_delay_ms / 2..=5_000 + first_delay_ms).contains(&at_ms),
        "dials {} ms after the drop",
        at_ms - 5_000
    );
    assert!(call.tick(at_ms - 1).is_empty(), "not before its time");
    let outputs = redial(&mut call);
    assert_eq!(
        last_status(&outputs),
        Some((
            Ready,
            format!("Ready ({PROVIDER}): hold Space or the button to talk.")
        ))
    );
}

#[test]
fn the_next_session_is_given_the_conversation_so_far_after_its_session_update_and_before_any_turn()
{
    let mut call = after_one_exchange();
    call.input(5_000, dropped());
    let outputs = redial(&mut call);
    let types = sent_types(&outputs);
    assert_eq!(
        types,
        [
            "session.update",
            "conversation.item.create",
            "conversation.item.create"
        ]
    );
    assert_eq!(
        restored(&outputs),
        [
            (
                Role::User,
                "input_text",
                "My cat is called Miso.".to_owned()
            ),
            (
                Role::Assistant,
                "output_text",
                "Miso is a lovely name.".to_owned()
            ),
        ]
    );
}

#[test]
fn messages_after_a_redial_get_ids_of_their_own_in_the_same_thread() {
    let mut call = after_one_exchange();
    call.input(5_000, dropped());
    let outputs = redial(&mut call);
    assert!(
        transcript(&outputs).is_empty(),
        "restored messages are not shown again"
    );
    let mut outputs = call.utterance(10_000, 11_000);
    outputs.extend(call.server(11_300, &committed("item_U1")));
    outputs.extend(call.server(11_310, &response_created("resp_R1")));
    outputs.extend(call.server(11_320, &audio_part_added("resp_R1", "item_A1")));
    outputs.extend(call.server(11_330, &output_started("resp_R1")));
    outputs.extend(call.server(
        11_340,
        &assistant_says("resp_R1", "item_A1", "Hello again."),
    ));
    let events = transcript(&outputs);
    let started: Vec<&str> = events
        .iter()
        .filter(|event| event["type"] == "TEXT_MESSAGE_START")
        .map(|event| event["messageId"].as_str().expect("a message id"))
        .collect();
    assert_eq!(
        started,
        ["user-2", "assistant-2"],
        "the provider reuses item ids; Walkie does not"
    );
    assert!(
        events
            .iter()
            .filter(|event| event["type"] == "RUN_STARTED")
            .all(|event| event["threadId"] == "call_1"),
        "{events:?}"
    );
}

#[test]
fn a_reply_cut_by_the_drop_is_closed_and_marked_interrupted() {
    let mut call = Call::ready();
    call.utterance(1_000, 2_000);
    call.server(2_300, &committed("item_U1"));
    call.server(2_310, &response_created("resp_R1"));
    call.server(2_320, &audio_part_added("resp_R1", "item_A1"));
    call.server(2_330, &output_started("resp_R1"));
    call.server(2_340, &assistant_says("resp_R1", "item_A1", "Once upon"));
    let outputs = call.input(2_500, dropped());
    let names = names(&outputs);
    let end = names
        .iter()
        .position(|name| name == "transcript:TEXT_MESSAGE_END:assistant-1")
        .unwrap_or_else(|| panic!("the cut reply's message ends: {names:?}"));
    assert!(
        names[end..].contains(&"interrupted:assistant-1".to_owned()),
        "{names:?}"
    );
    let hang_up = names.iter().position(|name| name == "hang-up-call");
    assert!(hang_up > Some(end), "{names:?}");
}

#[test]
fn a_provider_asking_to_wait_is_waited_out_before_the_next_attempt() {
    let mut call = after_one_exchange();
    call.input(5_000, dropped());
    let at_ms = call.machine.next_deadline_ms().expect("scheduled");
    call.tick(at_ms);
    let outputs = call.input(
        at_ms + 50,
        Input::DialFailed(DialFailure::refused(
            "The provider is busy.",
            Retry::Later {
                after_ms: Some(7_000),
            },
        )),
    );
    assert_eq!(
        last_status(&outputs),
        Some((
            Reconnecting,
            format!("Reconnecting… (attempt 2 of 6): {DROPPED}.")
        ))
    );
    assert!(call.machine.next_deadline_ms() >= Some(at_ms + 50 + 7_000));
}

#[test]
fn after_the_last_attempt_fails_the_window_asks_for_connect() {
    let mut call = after_one_exchange();
    call.input(5_000, dropped());
    let transient = || {
        Input::DialFailed(DialFailure::refused(
            "The provider is not reachable.",
            Retry::Later { after_ms: None },
        ))
    };
    let mut outputs = Vec::new();
    for _ in 0..RedialPolicy::default().max_attempts {
        let at_ms = call.machine.next_deadline_ms().expect("scheduled");
        call.tick(at_ms);
        outputs = call.input(at_ms + 10, transient());
    }
    assert_eq!(
        last_status(&outputs),
        Some((
            Error,
            format!(
                "Not connected: {DROPPED}, and 6 attempts to call again failed. Press Connect to try again."
            )
        ))
    );
    assert_eq!(names(&outputs).last().map(String::as_str), Some("ended"));
    assert_eq!(call.machine.next_deadline_ms(), None);
}

#[test]
fn a_redial_refused_for_the_key_ends_the_conversation_with_the_providers_words() {
    let mut call = after_one_exchange();
    call.input(5_000, dropped());
    let at_ms = call.machine.next_deadline_ms().expect("scheduled");
    call.tick(at_ms);
    let outputs = call.input(
        at_ms + 10,
        Input::DialFailed(DialFailure::refused(
            "The API key was refused: open Settings and check it.",
            Retry::Never,
        )),
    );
    assert_eq!(
        last_status(&outputs),
        Some((
            Error,
            format!(
                "Not connected: could not connect to {PROVIDER}. The API key was refused: open Settings and check it."
            )
        ))
    );
    assert_eq!(call.machine.next_deadline_ms(), None);
}

#[test]
fn cancelling_the_redial_ends_the_conversation_and_says_so() {
    let mut call = after_one_exchange();
    call.input(5_000, dropped());
    let outputs = call.input(5_050, Input::CancelRedial);
    assert_eq!(
        last_status(&outputs),
        Some((
            Error,
            "Not connected: reconnecting was cancelled. Press Connect to try again.".to_owned()
        ))
    );
    assert_eq!(call.machine.next_deadline_ms(), None);
}

#[test]
fn a_press_while_redialing_is_not_sent_and_says_why() {
    let mut call = after_one_exchange();
    call.input(5_000, dropped());
    let outputs = call.press(5_010);
    assert!(sent_types(&outputs).is_empty());
    assert!(audio_commands(&outputs).is_empty());
    let (state, detail) = last_status(&outputs).expect("the status answers the press");
    assert_eq!(state, Reconnecting);
    assert!(
        detail.ends_with("Not heard yet: Walkie listens once the call is back, or press Cancel.")
    );
}

#[test]
fn an_expired_session_is_carried_on_by_a_new_call_but_a_refused_key_is_not() {
    let mut call = after_one_exchange();
    let outputs = call.server(
        3_000,
        &server_error(
            "session_expired",
            "Your session hit the maximum duration of 60 minutes.",
            None,
        ),
    );
    assert_eq!(
        last_status(&outputs).map(|(state, _)| state),
        Some(Reconnecting)
    );

    let mut call = after_one_exchange();
    let outputs = call.server(
        3_000,
        &server_error("invalid_api_key", "Incorrect API key provided.", None),
    );
    assert_eq!(last_status(&outputs).map(|(state, _)| state), Some(Error));
    assert_eq!(names(&outputs).last().map(String::as_str), Some("ended"));
}

#[test]
fn the_turn_mode_switched_between_calls_is_the_next_calls() {
    let mut call = after_one_exchange();
    call.input(5_000, dropped());
    call.set_mode(
        5_010,
        walkie_session::turn::TurnMode::HandsFree(turn_support::server_vad(None)),
    );
    let outputs = redial(&mut call);
    assert!(
        audio_commands(&outputs)
            .contains(&walkie_session::turn::AudioCommand::OpenCapture { pre_roll_ms: 0 }),
        "the new call listens hands-free: {:?}",
        names(&outputs)
    );
}

#[test]
fn cancelling_while_the_link_is_down_ends_the_conversation_but_not_while_it_is_up() {
    let mut call = after_one_exchange();
    let outputs = call.input(3_000, Input::CancelRedial);
    assert!(
        statuses(&outputs).is_empty(),
        "a call that works is not cancelled"
    );
    call.input(3_100, Input::Transport(TransportInput::Disconnected));
    let outputs = call.input(3_200, Input::CancelRedial);
    assert_eq!(last_status(&outputs).map(|(state, _)| state), Some(Error));
    assert_eq!(names(&outputs).last().map(String::as_str), Some("ended"));
}

/// The call's age at which the session is renewed when quiet: the controller's warning time.
fn renewal_age_ms(call: &Call) -> u64 {
    call.config.session_limit_ms - call.config.session_limit_warning_ms
}

/// Runs the machine's timers that fall before `until_ms`, then ticks at `until_ms`; all
/// outputs.
fn run_timers_until(call: &mut Call, until_ms: u64) -> Vec<Output> {
    let mut outputs = Vec::new();
    while let Some(at_ms) = call.machine.next_deadline_ms().filter(|at| *at < until_ms) {
        outputs.extend(call.tick(at_ms));
    }
    outputs.extend(call.tick(until_ms));
    outputs
}

#[test]
fn a_quiet_session_near_the_providers_cap_is_renewed_at_once_with_the_conversation() {
    let mut call = after_one_exchange();
    let renew_at_ms = renewal_age_ms(&call);
    let outputs = run_timers_until(&mut call, renew_at_ms - 1);
    assert!(
        !names(&outputs).contains(&"dial".to_owned()),
        "not before its time"
    );
    assert_eq!(call.machine.next_deadline_ms(), Some(renew_at_ms));
    let outputs = call.tick(renew_at_ms);
    assert_eq!(
        names(&outputs)
            .iter()
            .filter(|name| ["hang-up-call", "dial"].contains(&name.as_str()))
            .collect::<Vec<_>>(),
        ["hang-up-call", "dial"],
        "the old call goes, the new one is dialled without a wait"
    );
    assert_eq!(
        last_status(&outputs),
        Some((
            Connecting,
            format!("Renewing the session with {PROVIDER} (a session lasts at most 60 minutes)…")
        ))
    );
    let mut outputs = call.input(renew_at_ms + 300, Input::Dialled);
    outputs.extend(call.input(renew_at_ms + 350, Input::Transport(TransportInput::Open)));
    assert_eq!(restored(&outputs).len(), 2, "{:?}", names(&outputs));
}

/// Renews at the renewal time with the key pressed `press_at` ms into it, and released
/// `release_at` ms in (if at all); then the new call is placed, opens and is confirmed. All
/// outputs from the renewal on.
fn renew_with_a_press(call: &mut Call, press_at: u64, release_at: Option<u64>) -> Vec<Output> {
    let renew_at_ms = renewal_age_ms(call);
    run_timers_until(call, renew_at_ms - 1);
    let mut outputs = call.tick(renew_at_ms);
    assert!(names(&outputs).contains(&"dial".to_owned()), "renewing");
    let mut inputs = vec![
        (renew_at_ms + press_at, Input::Press),
        (renew_at_ms + 300, Input::Dialled),
        (renew_at_ms + 350, Input::Transport(TransportInput::Open)),
    ];
    if let Some(release_at) = release_at {
        inputs.push((renew_at_ms + release_at, Input::Release));
    }
    inputs.sort_by_key(|(at, _)| *at);
    for (at, input) in inputs {
        outputs.extend(call.input(at, input));
    }
    outputs.extend(call.server(renew_at_ms + 400, &session_updated_with_transcription()));
    outputs
}

#[test]
fn a_press_held_through_a_renewal_starts_listening_once_the_new_call_is_ready() {
    let mut call = after_one_exchange();
    // Pressed 20 ms into the renewal, still held when the new session is confirmed.
    let outputs = renew_with_a_press(&mut call, 20, None);
    assert!(
        audio_commands(&outputs)
            .contains(&walkie_session::turn::AudioCommand::OpenCapture { pre_roll_ms: 300 }),
        "the microphone opens for the press: {:?}",
        names(&outputs)
    );
    assert_eq!(
        last_status(&outputs).map(|(state, _)| state),
        Some(Listening)
    );
    let renew_at_ms = renewal_age_ms(&call);
    let mut outputs = call.release(renew_at_ms + 1_400);
    outputs.extend(call.tick(renew_at_ms + 2_000));
    let sent = sent_types(&outputs);
    assert!(
        sent.contains(&"input_audio_buffer.commit"),
        "the release sends the turn: {sent:?}"
    );
}

#[test]
fn a_press_released_during_a_renewal_is_over_and_nothing_is_sent() {
    let mut call = after_one_exchange();
    let outputs = renew_with_a_press(&mut call, 20, Some(120));
    assert!(
        !audio_commands(&outputs).iter().any(|command| matches!(
            command,
            walkie_session::turn::AudioCommand::OpenCapture { .. }
        )),
        "no microphone for a press already over: {:?}",
        names(&outputs)
    );
    assert_eq!(last_status(&outputs).map(|(state, _)| state), Some(Ready));
}

#[test]
fn a_reply_under_way_at_the_renewal_time_is_finished_first() {
    let mut call = after_one_exchange();
    let renew_at_ms = renewal_age_ms(&call);
    call.utterance(renew_at_ms - 2_000, renew_at_ms - 1_000);
    call.server(renew_at_ms - 700, &committed("item_U2"));
    call.server(renew_at_ms - 690, &response_created("resp_R2"));
    call.server(renew_at_ms - 680, &audio_part_added("resp_R2", "item_A2"));
    call.server(renew_at_ms - 670, &output_started("resp_R2"));
    let outputs = call.tick(renew_at_ms);
    assert!(
        !names(&outputs).contains(&"dial".to_owned()),
        "not while speaking"
    );
    call.server(
        renew_at_ms + 500,
        &assistant_says("resp_R2", "item_A2", "Still talking."),
    );
    call.server(renew_at_ms + 900, &response_done("resp_R2", "completed"));
    let outputs = [
        call.server(renew_at_ms + 1_500, &output_stopped("resp_R2")),
        call.server(
            renew_at_ms + 1_600,
            &user_transcript_completed("item_U2", "Tell me more."),
        ),
        run_timers_until(&mut call, renew_at_ms + 5_000),
    ]
    .concat();
    assert!(
        names(&outputs).contains(&"dial".to_owned()),
        "renewed once the exchange is over: {:?}",
        names(&outputs)
    );
}

#[test]
fn a_three_hour_conversation_renews_three_times_and_loses_no_turn() {
    let mut call = Call::ready();
    let minute_ms = 60_000;
    let mut renewals = 0;
    let mut shown = Vec::new();
    let mut now_ms = 0;
    for turn in 1..=18u64 {
        // A turn every ten minutes; the machine's timers run in between.
        let turn_at_ms = turn * 10 * minute_ms;
        while let Some(at_ms) = call
            .machine
            .next_deadline_ms()
            .filter(|at| *at < turn_at_ms)
        {
            now_ms = at_ms.max(now_ms);
            let outputs = call.tick(now_ms);
            if names(&outputs).contains(&"dial".to_owned()) {
                renewals += 1;
                call.input(now_ms + 300, Input::Dialled);
                call.input(now_ms + 350, Input::Transport(TransportInput::Open));
                call.server(now_ms + 400, &session_updated_with_transcription());
                now_ms += 400;
            }
            shown.extend(transcript(&outputs));
        }
        let (user, reply) = (format!("item_U{turn}"), format!("item_A{turn}"));
        let response = format!("resp_R{turn}");
        let t = turn_at_ms;
        let mut outputs = call.utterance(t, t + 1_000);
        outputs.extend(call.server(t + 1_300, &committed(&user)));
        outputs.extend(call.server(t + 1_310, &response_created(&response)));
        outputs.extend(call.server(t + 1_320, &audio_part_added(&response, &reply)));
        outputs.extend(call.server(t + 1_330, &output_started(&response)));
        outputs.extend(call.server(t + 1_340, &assistant_says(&response, &reply, "Noted.")));
        outputs.extend(call.server(t + 1_400, &response_done(&response, "completed")));
        outputs.extend(call.server(t + 1_500, &output_stopped(&response)));
        outputs.extend(call.server(
            t + 1_600,
            &user_transcript_completed(&user, &format!("Fact number {turn}.")),
        ));
        now_ms = t + 1_600;
        shown.extend(transcript(&outputs));
    }
    assert_eq!(renewals, 3, "renewed before each hour's cap");
    let replies = shown
        .iter()
        .filter(|event| event["type"] == "TEXT_MESSAGE_START" && event["role"] == "assistant")
        .count();
    assert_eq!(replies, 18, "every turn was answered");
    let user_texts: Vec<String> = shown
        .iter()
        .filter(|event| event["type"] == "TEXT_MESSAGE_CONTENT")
        .filter(|event| {
            event["messageId"]
                .as_str()
                .is_some_and(|id| id.starts_with("user-"))
        })
        .map(|event| event["delta"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(
        user_texts,
        (1..=18)
            .map(|turn| format!("Fact number {turn}."))
            .collect::<Vec<_>>()
    );
}

#[test]
fn a_saved_conversation_continued_is_shown_given_to_the_new_session_and_numbered_on() {
    use walkie_conversation::{Conversation, ConversationConfig};
    let config = walkie_session::turn::TurnConfig::push_to_talk(Default::default());
    let machine = Conversation::continuing(
        ConversationConfig {
            turn: config.clone(),
            provider_label: PROVIDER.to_owned(),
            thread_id: "call_earlier".to_owned(),
            redial: RedialPolicy::default(),
            jitter_seed: 3,
            voice_barge_in: false,
            pricing: None,
            transcription_pricing: None,
            budget_usd: None,
            outside_tools: Vec::new(),
            automatic_tool_rounds: walkie_conversation::AUTOMATIC_TOOL_ROUNDS,
            settings_notice: None,
            ask_title: false,
        },
        walkie_session::turn::ToolRegistry::with_builtins,
        vec![
            (
                "user-1".to_owned(),
                walkie_agui::Role::User,
                "My cat is called Miso.".to_owned(),
            ),
            (
                "assistant-1".to_owned(),
                walkie_agui::Role::Assistant,
                "A lovely name.".to_owned(),
            ),
        ],
        1_000,
    );
    let mut call = Call::of(machine, config);
    let shown = transcript(&std::iter::from_fn(|| call.machine.poll_output()).collect::<Vec<_>>());
    let types: Vec<&str> = shown
        .iter()
        .map(|event| event["type"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(
        types,
        ["RUN_STARTED", "MESSAGES_SNAPSHOT", "RUN_FINISHED"],
        "the earlier messages, restated in a run of their own"
    );
    assert_eq!(shown[0]["threadId"], "call_earlier");
    assert_eq!(shown[1]["messages"][1]["content"], "A lovely name.");

    let mut outputs = call.input(1_100, Input::Transport(TransportInput::Open));
    outputs.extend(call.server(1_150, &session_updated_with_transcription()));
    assert_eq!(
        restored(&outputs),
        [
            (
                Role::User,
                "input_text",
                "My cat is called Miso.".to_owned()
            ),
            (Role::Assistant, "output_text", "A lovely name.".to_owned()),
        ]
    );
    let mut outputs = call.utterance(2_000, 3_000);
    outputs.extend(call.server(3_300, &committed("item_U9")));
    let started: Vec<String> = transcript(&outputs)
        .iter()
        .filter(|event| event["type"] == "TEXT_MESSAGE_START")
        .map(|event| event["messageId"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(started, ["user-2"]);
}

/// A hands-free call whose echo canceller converged (or not), dropped and dialled again; then
/// a reply starts: the audio commands of that reply.
fn reply_on_the_next_call(converged: bool) -> Vec<AudioCommand> {
    let config = TurnConfig::hands_free(SessionConfig::default(), server_vad(None));
    let mut call = Call::ready_with(config);
    if converged {
        call.input(
            500,
            Input::Engine(EngineInput::EchoCanceller { converged: true }),
        );
    }
    call.input(1_000, dropped());
    let dial_at_ms = call
        .machine
        .next_deadline_ms()
        .expect("a redial is scheduled");
    redial(&mut call);
    let at_ms = dial_at_ms + 1_000;
    let mut outputs = call.server(at_ms, &response_created("resp_R9"));
    outputs.extend(call.server(at_ms + 10, &audio_part_added("resp_R9", "item_A9")));
    outputs.extend(call.server(at_ms + 20, &output_started("resp_R9")));
    audio_commands(&outputs)
}

#[test]
fn a_converged_echo_canceller_carries_over_to_the_next_call_and_nothing_is_gated() {
    assert!(
        reply_on_the_next_call(false).contains(&AudioCommand::GateMic { gated: true }),
        "without a converged canceller a reply gates the mic"
    );
    assert!(
        !reply_on_the_next_call(true).contains(&AudioCommand::GateMic { gated: true }),
        "the engine's canceller still holds on the next call: the user can talk over the reply"
    );
}

#[test]
fn without_voice_barge_in_a_trusted_canceller_leaves_the_mic_muted_during_replies() {
    use walkie_conversation::{Conversation, ConversationConfig};
    let config = TurnConfig::hands_free(SessionConfig::default(), server_vad(None));
    let mut machine = Conversation::new(
        ConversationConfig {
            turn: config,
            provider_label: PROVIDER.to_owned(),
            thread_id: "call_1".to_owned(),
            redial: RedialPolicy::default(),
            jitter_seed: 1,
            voice_barge_in: false,
            pricing: None,
            transcription_pricing: None,
            budget_usd: None,
            outside_tools: Vec::new(),
            automatic_tool_rounds: walkie_conversation::AUTOMATIC_TOOL_ROUNDS,
            settings_notice: None,
            ask_title: false,
        },
        walkie_session::turn::ToolRegistry::with_builtins,
    );
    let mut outputs = Vec::new();
    let mut input = |at_ms: u64, input: Input| {
        machine.handle_input(input, at_ms);
        outputs.extend(std::iter::from_fn(|| machine.poll_output()));
    };
    input(0, Input::Transport(TransportInput::Open));
    input(50, Input::ServerText(session_updated_with_transcription()));
    input(
        500,
        Input::Engine(EngineInput::EchoCanceller { converged: true }),
    );
    for (at_ms, text) in [
        (1_000, response_created("resp_R1")),
        (1_010, audio_part_added("resp_R1", "item_A1")),
        (1_020, output_started("resp_R1")),
    ] {
        input(at_ms, Input::ServerText(text));
    }
    assert!(
        audio_commands(&outputs).contains(&AudioCommand::GateMic { gated: true }),
        "the user did not ask to talk over replies: the mic is muted while one plays"
    );
}

/// A picture as the app attaches one (a small PNG, prepared).
fn a_picture() -> walkie_session::Picture {
    let mut png = Vec::new();
    image::DynamicImage::new_rgb8(64, 48)
        .write_to(&mut std::io::Cursor::new(&mut png), image::ImageFormat::Png)
        .unwrap();
    walkie_picture::prepare(&png, &walkie_picture::PictureLimits::default())
        .unwrap()
        .picture
}

#[test]
fn a_picture_shown_before_a_drop_is_named_to_the_next_session_not_sent_again() {
    let mut call = after_one_exchange();
    let shown = call.input(
        3_000,
        Input::SendMessage(UserMessage {
            text: "What is this?".to_owned(),
            pictures: vec![a_picture()],
        }),
    );
    assert!(
        shown.iter().any(|output| matches!(output, Output::Send(sent)
            if matches!(sent.realtime(), Some(ClientEvent::ConversationItemCreate {
                item: Item::Message { content, .. }, ..
            }) if matches!(content[..], [ContentPart::InputImage { .. }, ContentPart::InputText { .. }])))),
        "the picture went out with its question"
    );
    call.input(5_000, dropped());

    let sent = restored(&redial(&mut call));

    assert_eq!(
        sent.get(2),
        Some(&(
            Role::User,
            "input_text",
            "[The user showed a picture here; it is not part of this copy of the conversation.]\n\
             What is this?"
                .to_owned()
        )),
        "{sent:?}"
    );
}

#[test]
fn a_message_typed_while_the_call_is_being_dialled_again_goes_out_once_it_is_back() {
    let mut call = after_one_exchange();
    call.input(5_000, dropped());
    let outputs = call.input(
        5_010,
        Input::SendMessage(UserMessage::text("Are you there?")),
    );
    assert!(
        restored(&outputs).is_empty(),
        "nothing goes to a dropped call"
    );
    let shown = last_status(&outputs).expect("a status").1;
    assert!(
        shown.ends_with("Your message goes out once the call is back."),
        "{shown}"
    );
    let outputs = redial(&mut call);
    let sent = restored(&outputs);
    assert_eq!(
        sent.last(),
        Some(&(Role::User, "input_text", "Are you there?".to_owned())),
        "after the conversation so far: {sent:?}"
    );
    assert_eq!(
        sent_types(&outputs).last(),
        Some(&"response.create"),
        "and it is answered"
    );
    let shown: Vec<(String, String)> = transcript(&outputs)
        .iter()
        .filter(|event| event["type"] == "TEXT_MESSAGE_CONTENT")
        .map(|event| {
            (
                event["messageId"].as_str().unwrap_or_default().to_owned(),
                event["delta"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        shown,
        [("user-2".to_owned(), "Are you there?".to_owned())],
        "the window shows it as the user's next message"
    );
}

/// A `response.done` of `response_id` billed `usage`.
fn done_billed(response_id: &str, usage: serde_json::Value) -> String {
    let mut done: serde_json::Value =
        serde_json::from_str(&response_done(response_id, "completed")).expect("JSON");
    done["response"]["usage"] = usage;
    done.to_string()
}

#[test]
fn what_the_conversation_spent_sums_every_response_of_every_call_at_its_models_prices() {
    let mut call = Call::ready();
    call.utterance(1_000, 2_000);
    call.server(2_300, &committed("item_U1"));
    call.server(2_310, &response_created("resp_R1"));
    let outputs = call.server(
        2_400,
        &done_billed(
            "resp_R1",
            serde_json::json!({"total_tokens": 170, "input_tokens": 120, "output_tokens": 50,
                "input_token_details": {"text_tokens": 100, "audio_tokens": 20, "cached_tokens": 0},
                "output_token_details": {"text_tokens": 10, "audio_tokens": 40}}),
        ),
    );
    let first = spending(&outputs).expect("the first response's bill is reported");
    assert_eq!((first.tokens.total(), first.responses), (170, 1));
    let first_cost = (100.0 * 2.0 + 20.0 * 40.0 + 10.0 * 8.0 + 40.0 * 80.0) / 1e6;
    assert!((first.cost_usd.expect("priced") - first_cost).abs() < 1e-12);

    call.input(5_000, dropped());
    redial(&mut call);
    call.utterance(9_000, 10_000);
    call.server(10_300, &committed("item_U2"));
    call.server(10_310, &response_created("resp_R2"));
    let outputs = call.server(
        10_400,
        &done_billed(
            "resp_R2",
            serde_json::json!({"total_tokens": 205, "input_tokens": 180, "output_tokens": 25,
                "input_token_details": {"text_tokens": 110, "audio_tokens": 70, "cached_tokens": 120,
                    "cached_tokens_details": {"text_tokens": 100, "audio_tokens": 20}},
                "output_token_details": {"text_tokens": 5, "audio_tokens": 20}}),
        ),
    );
    let saved: Vec<(u64, Option<f64>, Option<String>)> = outputs
        .iter()
        .filter_map(|output| match output {
            Output::Record(Record::Billed {
                tokens,
                cost_usd,
                model,
                ..
            }) => Some((tokens.text_in, *cost_usd, model.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(saved.len(), 1, "each response is saved as billed once");
    assert_eq!(
        saved[0].0, 110,
        "what this response was billed, not the sum"
    );
    assert_eq!(saved[0].2.as_deref(), Some("gpt-realtime"));
    let both = spending(&outputs).expect("the second call's response adds to the first");
    assert_eq!(both.responses, 2);
    assert_eq!(
        (both.tokens.text_in, both.tokens.cached_text_in),
        (210, 100)
    );
    assert_eq!(
        (both.tokens.audio_in, both.tokens.cached_audio_in),
        (90, 20)
    );
    let second_cost =
        (10.0 * 2.0 + 100.0 * 0.5 + 50.0 * 40.0 + 20.0 * 1.0 + 5.0 * 8.0 + 20.0 * 80.0) / 1e6;
    assert!((saved[0].1.expect("priced") - second_cost).abs() < 1e-12);
    assert!(
        (both.cost_usd.expect("priced") - (first_cost + second_cost)).abs() < 1e-12,
        "cached input at the cached price: {:?}",
        both.cost_usd
    );
}

#[test]
fn a_new_conversation_first_says_it_spent_nothing_and_a_response_done_without_usage_adds_nothing() {
    let mut placed = Call::placed();
    let first = placed.input(0, Input::Transport(TransportInput::Open));
    let nothing = spending(&first).expect("a new conversation reports its spending at once");
    assert_eq!(
        (nothing.responses, nothing.tokens.total(), nothing.cost_usd),
        (0, 0, Some(0.0))
    );

    let mut call = Call::ready();
    call.utterance(1_000, 2_000);
    call.server(2_300, &committed("item_U1"));
    call.server(2_310, &response_created("resp_R1"));
    let outputs = call.server(2_400, &response_done("resp_R1", "completed"));
    assert_eq!(spending(&outputs), None);
}

/// A `response.done` of `response_id` billed `audio_out` tokens of audio out and nothing else:
/// at these tests' prices, $80 a million.
fn done_billed_audio(response_id: &str, audio_out: u64) -> String {
    done_billed(
        response_id,
        serde_json::json!({"output_tokens": audio_out,
            "output_token_details": {"text_tokens": 0, "audio_tokens": audio_out}}),
    )
}

#[test]
fn at_80_percent_of_its_budget_the_conversation_says_so_and_goes_on() {
    let mut call = Call::ready_on_a_budget(1.0);
    call.utterance(1_000, 2_000);
    call.server(2_300, &committed("item_U1"));
    call.server(2_310, &response_created("resp_R1"));
    // 10,000 tokens at $80 a million: $0.80.
    let outputs = call.server(2_400, &done_billed_audio("resp_R1", 10_000));
    let (state, detail) = last_status(&outputs).expect("the status says so");
    assert_eq!(state, ConnectionState::Ready);
    assert_eq!(
        detail,
        "Budget 80 % spent: this conversation has cost $0.800 of its $1.00 budget; the call ends \
         after the reply that spends the rest."
    );
    assert!(!names(&outputs).contains(&"ended".to_owned()));
    let next_turn = call.press(3_000);
    assert!(
        audio_commands(&next_turn)
            .iter()
            .any(|command| matches!(command, AudioCommand::OpenCapture { .. })),
        "a turn still starts: {:?}",
        names(&next_turn)
    );
}

#[test]
fn a_spent_budget_lets_the_reply_under_way_play_out_starts_no_turn_then_ends_the_conversation() {
    let mut call = Call::ready_on_a_budget(0.5);
    call.utterance(1_000, 2_000);
    call.server(2_300, &committed("item_U1"));
    call.server(
        2_305,
        &user_transcript_completed("item_U1", "Tell me a story."),
    );
    call.server(2_310, &response_created("resp_R1"));
    call.server(2_320, &audio_part_added("resp_R1", "item_A1"));
    call.server(2_330, &output_started("resp_R1"));
    call.server(
        2_340,
        &assistant_says("resp_R1", "item_A1", "Once upon a time"),
    );
    // $0.80 of a $0.50 budget, while the reply is still heard.
    let outputs = call.server(2_400, &done_billed_audio("resp_R1", 10_000));
    assert!(
        !names(&outputs).contains(&"ended".to_owned()),
        "the reply plays out"
    );
    assert!(
        !audio_commands(&outputs).contains(&AudioCommand::FlushPlayback),
        "nothing is cut"
    );

    let press = call.press(2_500);
    assert!(
        !audio_commands(&press).iter().any(|command| matches!(
            command,
            AudioCommand::OpenCapture { .. } | AudioCommand::FlushPlayback
        )),
        "no turn starts and the reply is not cut: {:?}",
        names(&press)
    );
    call.release(2_900);
    call.input(2_950, Input::SendMessage(UserMessage::text("And then?")));

    call.server(3_100, &output_stopped("resp_R1"));
    let outputs = call.tick(3_100 + LATE_AUDIO_GRACE_MS);
    assert!(
        names(&outputs).contains(&"ended".to_owned()),
        "{:?}",
        names(&outputs)
    );
    let ended = statuses(&outputs).pop().expect("the status says why");
    assert_eq!(ended.state, ConnectionState::Error);
    assert_eq!(
        ended.action,
        Some(walkie_conversation::StatusAction::OpenSettings)
    );
    assert!(
        ended.detail.starts_with(
            "Budget spent: this conversation cost $0.800 of its $0.50 budget, so its call ended."
        ),
        "{}",
        ended.detail
    );
    assert!(ended.detail.contains("A message you typed was not sent"));
    assert_eq!(
        ended.details.as_deref(),
        Some("And then?"),
        "kept to be copied"
    );
    assert!(
        sent_types(&outputs).is_empty(),
        "nothing more goes to the provider: {:?}",
        sent_types(&outputs)
    );
}

/// The `response.create` among `outputs`, as sent.
fn response_create(outputs: &[Output]) -> Option<String> {
    outputs.iter().find_map(|output| match output {
        Output::Send(sent) if sent.event.event_type() == "response.create" => Some(sent.to_json()),
        _ => None,
    })
}

#[test]
fn answering_typed_messages_in_text_switches_within_the_call_and_holds_for_the_next_one() {
    let mut call = Call::ready();
    let before = call.input(900, Input::SendMessage(UserMessage::text("Hi.")));
    let create = response_create(&before).expect("a reply is asked for");
    assert!(!create.contains("output_modalities"), "{create}");
    call.server(950, &response_created("resp_R1"));
    call.server(1_000, &response_done("resp_R1", "completed"));

    call.input(1_100, Input::SetTypedRepliesInText(true));
    let switched = call.input(1_200, Input::SendMessage(UserMessage::text("And now?")));
    let create = response_create(&switched).expect("a reply is asked for");
    assert!(
        create.contains(r#""output_modalities":["text"]"#),
        "{create}"
    );
    call.server(1_250, &response_created("resp_R2"));
    call.server(1_300, &response_done("resp_R2", "completed"));

    call.input(5_000, dropped());
    redial(&mut call);
    let next_call = call.input(
        9_000,
        Input::SendMessage(UserMessage::text("Still in text?")),
    );
    let create = response_create(&next_call).expect("a reply is asked for");
    assert!(
        create.contains(r#""output_modalities":["text"]"#),
        "{create}"
    );
}

#[test]
fn a_budget_raised_while_the_last_reply_plays_lets_the_call_go_on_and_new_prices_cost_what_follows()
{
    let mut call = Call::ready_on_a_budget(0.5);
    call.utterance(1_000, 2_000);
    call.server(2_300, &committed("item_U1"));
    call.server(
        2_305,
        &user_transcript_completed("item_U1", "Tell me a story."),
    );
    call.server(2_310, &response_created("resp_R1"));
    call.server(2_320, &audio_part_added("resp_R1", "item_A1"));
    call.server(2_330, &output_started("resp_R1"));
    call.server(2_400, &done_billed_audio("resp_R1", 10_000));
    // $0.80 of $0.50: spent. The user raises the budget and halves audio out before the end.
    let cheaper = walkie_conversation::Prices {
        audio_out: 40.0,
        ..PRICES
    };
    call.input(
        2_500,
        Input::SetCosting {
            pricing: Some(walkie_conversation::Pricing {
                model: "gpt-realtime".to_owned(),
                rate: walkie_conversation::Rate::PerMillionTokens(cheaper),
                taken_on: String::new(),
                free: false,
            }),
            transcription_pricing: None,
            budget_usd: Some(5.0),
        },
    );
    call.server(3_100, &output_stopped("resp_R1"));
    let outputs = call.tick(3_100 + LATE_AUDIO_GRACE_MS);
    assert!(
        !names(&outputs).contains(&"ended".to_owned()),
        "{:?}",
        names(&outputs)
    );
    let next_turn = call.press(4_000);
    assert!(
        audio_commands(&next_turn)
            .iter()
            .any(|command| matches!(command, AudioCommand::OpenCapture { .. })),
        "a turn starts again: {:?}",
        names(&next_turn)
    );
    call.release(5_000);
    call.server(5_300, &committed("item_U2"));
    call.server(5_310, &response_created("resp_R2"));
    let outputs = call.server(5_400, &done_billed_audio("resp_R2", 10_000));
    let spent = spending(&outputs).expect("reported");
    assert!(
        (spent.cost_usd.expect("priced") - (0.8 + 0.4)).abs() < 1e-9,
        "the first at the old price, the second at the new: {:?}",
        spent.cost_usd
    );
}

#[test]
fn a_saved_conversation_continued_shows_what_it_spent_before_and_its_budget_counts_it() {
    use walkie_conversation::{Conversation, ConversationConfig, TokenTotals};
    let config = walkie_session::turn::TurnConfig::push_to_talk(Default::default());
    let earlier_tokens = TokenTotals {
        audio_out: 10_000,
        ..TokenTotals::default()
    };
    let machine = Conversation::continuing(
        ConversationConfig {
            turn: config.clone(),
            provider_label: PROVIDER.to_owned(),
            thread_id: "call_earlier".to_owned(),
            redial: RedialPolicy::default(),
            jitter_seed: 3,
            voice_barge_in: false,
            pricing: Some(walkie_conversation::Pricing {
                model: "gpt-realtime".to_owned(),
                rate: walkie_conversation::Rate::PerMillionTokens(PRICES),
                taken_on: String::new(),
                free: false,
            }),
            transcription_pricing: None,
            budget_usd: Some(1.0),
            outside_tools: Vec::new(),
            automatic_tool_rounds: walkie_conversation::AUTOMATIC_TOOL_ROUNDS,
            settings_notice: None,
            ask_title: false,
        },
        walkie_session::turn::ToolRegistry::with_builtins,
        vec![(
            "user-1".to_owned(),
            walkie_agui::Role::User,
            "Tell me a story.".to_owned(),
        )],
        1_000,
    )
    .having_spent(walkie_conversation::SpentBefore {
        tokens: earlier_tokens,
        responses: 3,
        transcribed_seconds: 42.0,
        transcriptions: 3,
        cost_usd: Some(0.85),
    });
    let mut call = Call::of(machine, config);
    let first: Vec<Output> = std::iter::from_fn(|| call.machine.poll_output()).collect();
    let shown = spending(&first).expect("what it spent is shown at once");
    assert_eq!((shown.responses, shown.tokens.total()), (3, 10_000));
    assert_eq!((shown.transcriptions, shown.transcribed_seconds), (3, 42.0));
    assert_eq!(shown.cost_usd, Some(0.85));

    call.input(1_100, Input::Transport(TransportInput::Open));
    let outputs = call.server(1_150, &session_updated_with_transcription());
    let (_, detail) = last_status(&outputs).expect("a status");
    assert!(
        detail.starts_with("Budget 80 % spent: this conversation has cost $0.850 of its $1.00"),
        "{detail}"
    );
    // The next response adds to it: $0.80 more spends the budget.
    call.utterance(2_000, 3_000);
    call.server(3_300, &committed("item_U2"));
    call.server(3_305, &user_transcript_completed("item_U2", "Go on."));
    call.server(3_310, &response_created("resp_R2"));
    let outputs = call.server(3_400, &done_billed_audio("resp_R2", 10_000));
    let total = spending(&outputs).expect("reported");
    assert_eq!(total.responses, 4);
    assert!(
        names(&outputs).contains(&"ended".to_owned()),
        "{:?}",
        names(&outputs)
    );
}

/// Transcriptions costed by the minute at $0.60 (each price its own, so a wrong one shows).
fn whisper_at_60_cents_a_minute() -> Option<walkie_conversation::Pricing> {
    Some(walkie_conversation::Pricing {
        model: "gpt-realtime-whisper".to_owned(),
        rate: walkie_conversation::Rate::PerMinute(walkie_conversation::MinutePrices {
            per_minute: 0.6,
            per_paused_minute: 0.0,
        }),
        taken_on: "2026-12-04".to_owned(),
        free: false,
    })
}

/// The user's turn `item_id` transcribed, billed `seconds` of speech.
fn transcribed_for(item_id: &str, seconds: f64) -> String {
    serde_json::json!({"type": "conversation.item.input_audio_transcription.completed",
        "event_id": format!("event_T_{item_id}"), "item_id": item_id, "content_index": 0,
        "transcript": "Tell me a story.", "usage": {"type": "duration", "seconds": seconds}})
    .to_string()
}

/// A push-to-talk call, ready, its speech transcribed at $0.60 a minute.
fn ready_transcribed_by_the_minute(budget_usd: Option<f64>) -> Call {
    let mut call = Call::placed_costed(
        TurnConfig::push_to_talk(SessionConfig::default()),
        budget_usd,
        whisper_at_60_cents_a_minute(),
        Vec::new(),
    );
    call.input(0, Input::Transport(TransportInput::Open));
    call.server(50, &session_updated_with_transcription());
    call
}

#[test]
fn speech_billed_by_the_minute_sums_with_the_replies_tokens_into_one_cost() {
    let mut call = ready_transcribed_by_the_minute(None);
    call.utterance(1_000, 2_000);
    call.server(2_300, &committed("item_U1"));
    // 30 s at $0.60 a minute: $0.30.
    let outputs = call.server(2_305, &transcribed_for("item_U1", 30.0));
    let shown = spending(&outputs).expect("the spending is shown at once");
    assert_eq!(shown.transcriptions, 1);
    assert_eq!(shown.transcribed_seconds, 30.0);
    assert!((shown.transcription_cost_usd.unwrap() - 0.30).abs() < 1e-9);
    let billed = outputs
        .iter()
        .find_map(|output| match output {
            Output::Record(Record::Billed {
                transcribed_seconds,
                cost_usd,
                model,
                ..
            }) => Some((*transcribed_seconds, *cost_usd, model.clone())),
            _ => None,
        })
        .expect("the transcription is recorded as billed");
    assert_eq!(billed.0, Some(30.0));
    assert!((billed.1.unwrap() - 0.30).abs() < 1e-9);
    assert_eq!(billed.2.as_deref(), Some("gpt-realtime-whisper"));

    call.server(2_310, &response_created("resp_R1"));
    // 1,000 tokens of audio out at $80 a million: $0.08.
    call.server(2_400, &done_billed_audio("resp_R1", 1_000));
    call.utterance(3_000, 4_000);
    call.server(4_300, &committed("item_U2"));
    // 90 s more: $0.90.
    let outputs = call.server(4_305, &transcribed_for("item_U2", 90.0));
    let shown = spending(&outputs).expect("the spending is shown");
    assert_eq!(shown.transcriptions, 2);
    assert_eq!(shown.transcribed_seconds, 120.0);
    assert!((shown.transcription_cost_usd.unwrap() - 1.20).abs() < 1e-9);
    assert!(
        (shown.cost_usd.unwrap() - 1.28).abs() < 1e-9,
        "$1.20 of speech and $0.08 of reply: {:?}",
        shown.cost_usd
    );
}

#[test]
fn speech_billed_by_the_minute_spends_the_budget_and_the_call_ends_after_the_reply() {
    let mut call = ready_transcribed_by_the_minute(Some(0.5));
    call.utterance(1_000, 2_000);
    call.server(2_300, &committed("item_U1"));
    // A minute of speech at $0.60: more than the $0.50 budget, before any reply was billed.
    let outputs = call.server(2_305, &transcribed_for("item_U1", 60.0));
    assert!(
        !names(&outputs).contains(&"ended".to_owned()),
        "the reply asked for comes first: {:?}",
        names(&outputs)
    );
    call.server(2_310, &response_created("resp_R1"));
    call.server(2_320, &audio_part_added("resp_R1", "item_A1"));
    call.server(2_330, &output_started("resp_R1"));
    let outputs = call.server(2_400, &response_done("resp_R1", "completed"));
    assert!(
        !names(&outputs).contains(&"ended".to_owned()),
        "the reply plays out"
    );
    call.server(3_100, &output_stopped("resp_R1"));
    let outputs = call.tick(3_100 + LATE_AUDIO_GRACE_MS);
    assert!(
        names(&outputs).contains(&"ended".to_owned()),
        "{:?}",
        names(&outputs)
    );
    let ended = statuses(&outputs).pop().expect("the status says why");
    assert!(
        ended.detail.starts_with(
            "Budget spent: this conversation cost $0.600 of its $0.50 budget, so its call ended."
        ),
        "{}",
        ended.detail
    );
}

#[test]
fn a_transcription_model_without_a_price_is_counted_in_seconds_but_costs_nothing_unknown() {
    let mut call = Call::ready_on_a_budget(0.5);
    call.utterance(1_000, 2_000);
    call.server(2_300, &committed("item_U1"));
    let outputs = call.server(2_305, &transcribed_for("item_U1", 600.0));
    let shown = spending(&outputs).expect("the spending is shown");
    assert_eq!(shown.transcribed_seconds, 600.0);
    assert_eq!(shown.transcription_cost_usd, None, "not a guess");
    assert_eq!(
        shown.cost_usd,
        Some(0.0),
        "the replies' prices are known; none billed yet"
    );
    assert!(!names(&outputs).contains(&"ended".to_owned()));
}

/// `rate_limits.updated` with `remaining` of 100 requests left, resetting in 12 s.
fn requests_left(remaining: u64) -> String {
    serde_json::json!({"type": "rate_limits.updated", "event_id": "event_L",
        "rate_limits": [
            {"name": "requests", "limit": 100, "remaining": remaining, "reset_seconds": 11.2},
            {"name": "tokens", "limit": 40000, "remaining": 39000, "reset_seconds": 1.0}]})
    .to_string()
}

const NEARLY_SPENT: &str =
    "Test provider's rate limit for requests is nearly spent: it resets in 12 s.";

fn says_nearly_spent(outputs: &[Output]) -> bool {
    statuses(outputs)
        .iter()
        .any(|status| status.detail.contains(NEARLY_SPENT))
}

#[test]
fn a_rate_limit_under_a_tenth_is_told_once_and_again_only_after_it_recovered() {
    let mut call = Call::ready();
    let plenty = call.server(1_000, &requests_left(50));
    assert!(!says_nearly_spent(&plenty), "{:?}", statuses(&plenty));
    let low = call.server(2_000, &requests_left(9));
    assert!(says_nearly_spent(&low), "{:?}", statuses(&low));
    let lower = call.server(3_000, &requests_left(4));
    assert!(!says_nearly_spent(&lower), "once: {:?}", statuses(&lower));
    call.server(4_000, &requests_left(80));
    let low_again = call.server(5_000, &requests_left(2));
    assert!(says_nearly_spent(&low_again), "{:?}", statuses(&low_again));
    // Nothing else changes: a turn still starts.
    let press = call.press(6_000);
    assert!(
        audio_commands(&press)
            .iter()
            .any(|command| matches!(command, AudioCommand::OpenCapture { .. })),
        "{:?}",
        names(&press)
    );
}

#[test]
fn a_sentence_about_the_settings_shows_while_idle_with_open_settings_until_the_user_talks() {
    const MOVED: &str = "New model: Walkie now talks to gpt-realtime-2.1, as OpenAI shuts \
                         gpt-realtime down on 2027-01-20. Open Settings to choose another.";
    let mut call = Call::placed_telling_about_settings(MOVED);
    let mut outputs = call.input(0, Input::Transport(TransportInput::Open));
    outputs.extend(call.server(50, &session_updated_with_transcription()));
    let shown = statuses(&outputs)
        .pop()
        .expect("a status once the session is ready");
    assert_eq!(shown.detail, MOVED, "{:?}", statuses(&outputs));
    assert_eq!(shown.state, Ready);
    assert_eq!(
        shown.action,
        Some(walkie_conversation::StatusAction::OpenSettings)
    );
    call.utterance(1_000, 2_000);
    call.server(2_300, &committed("item_U1"));
    call.server(2_310, &response_created("resp_R1"));
    let outputs = call.server(2_400, &response_done("resp_R1", "completed"));
    let (state, detail) = last_status(&outputs).expect("ready again");
    assert_eq!(state, Ready);
    assert_ne!(detail, MOVED, "told once, it is gone after the first turn");
}
