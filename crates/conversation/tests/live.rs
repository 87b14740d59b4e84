//! A GPT-Live call through the conversation machine, in virtual time: what the Live API has and
//! the Realtime API has not (mute and unmute, words with no boundaries, pauses, usage by the
//! second, delegations), and what it lacks (typed messages).

mod support;
#[path = "../../session/tests/turn_support/mod.rs"]
mod turn_support;

use serde_json::json;
use support::*;
use walkie_conversation::{
    ConnectionState, Input, MinutePrices, Output, Pricing, Rate, TransportInput,
};
use walkie_openai::SessionConfig;
use walkie_openai::TurnDetection;
use walkie_session::turn::{
    AudioCommand, LIVE_AUDIO_QUIET_MS, LIVE_QUIET_MS, ProviderFamily, TurnConfig, UserMessage,
};

fn live(config: TurnConfig) -> TurnConfig {
    TurnConfig {
        family: ProviderFamily::Live,
        ..config
    }
}

fn started() -> String {
    json!({"type": "session.started", "session": {"model": "gpt-live-1.1"}}).to_string()
}

/// Words the user said from `start_ms` of the session's timeline.
fn user_words(delta: &str, start_ms: i64) -> String {
    json!({"type": "session.input_transcript.delta", "delta": delta,
        "start_ms": start_ms, "end_ms": start_ms + 500})
    .to_string()
}

/// Words of the reply from `start_ms` of the session's timeline.
fn reply_words(delta: &str, start_ms: i64) -> String {
    json!({"type": "session.output_transcript.delta", "delta": delta,
        "start_ms": start_ms, "end_ms": start_ms + 500})
    .to_string()
}

fn usage(active_seconds: u64, paused_seconds: u64) -> String {
    json!({"type": "session.usage.updated", "usage": {
        "seconds": (active_seconds + paused_seconds) as f64,
        "active_seconds": active_seconds, "paused_seconds": paused_seconds}})
    .to_string()
}

/// A Live call set up: push-to-talk unless `config` says otherwise.
fn ready_live(config: TurnConfig) -> (Call, Vec<Output>) {
    let mut call = Call::placed_with(live(config));
    let mut outputs = call.input(0, Input::Transport(TransportInput::Open));
    outputs.extend(call.server(50, &started()));
    (call, outputs)
}

fn push_to_talk() -> TurnConfig {
    TurnConfig::push_to_talk(SessionConfig::default())
}

fn hands_free() -> TurnConfig {
    TurnConfig::hands_free(
        SessionConfig::default(),
        TurnDetection::ServerVad {
            threshold: None,
            prefix_padding_ms: None,
            silence_duration_ms: None,
            create_response: None,
            interrupt_response: None,
            idle_timeout_ms: None,
        },
    )
}

#[test]
fn push_to_talk_mutes_the_model_at_once_and_unmutes_it_only_while_the_key_is_held() {
    let (mut call, opened) = ready_live(push_to_talk());
    assert_eq!(sent_types(&opened), ["session.input_audio.mute"]);
    let down = call.press(1_000);
    assert_eq!(sent_types(&down), ["session.input_audio.unmute"]);
    assert_eq!(
        audio_commands(&down),
        [AudioCommand::OpenCapture { pre_roll_ms: 300 }]
    );
    assert!(
        call.release(2_000)
            .iter()
            .all(|o| !matches!(o, Output::Send(_)))
    );
    let tail = call.tick(2_000 + call.config.tail_ms);
    assert_eq!(sent_types(&tail), ["session.input_audio.mute"]);
    assert_eq!(audio_commands(&tail), [AudioCommand::CloseCapture]);
}

#[test]
fn hands_free_stays_unmuted_and_the_users_words_open_their_message_and_cut_a_reply() {
    let (mut call, opened) = ready_live(hands_free());
    assert!(
        sent_types(&opened).is_empty(),
        "the model hears the mic from the start"
    );
    assert!(audio_commands(&opened).contains(&AudioCommand::OpenCapture { pre_roll_ms: 0 }));
    let mut outputs = call.server(1_000, &user_words("Tell me a story.", 0));
    outputs.extend(call.server(1_500, &reply_words("Once upon a time", 1_200)));
    // What the user said before the reply, transcribed late, is not said over it.
    outputs.extend(call.server(1_540, &user_words(" Please.", 500)));
    assert!(!audio_commands(&outputs).contains(&AudioCommand::FlushPlayback));
    for chunk in 0..5 {
        outputs.extend(call.assistant_audio(1_520 + chunk * 20));
    }
    outputs.extend(call.input(
        1_600,
        Input::Engine(walkie_conversation::EngineInput::PlayedProgress {
            item_id: "live_reply_1".to_owned(),
            played_ms: 60,
        }),
    ));
    assert!(
        !names(&outputs)
            .iter()
            .any(|name| name.starts_with("latency:")),
        "no end of the user's speech to count a reply's latency from"
    );
    let over_the_reply = call.server(1_700, &user_words("Stop.", 1_600));
    assert_eq!(
        audio_commands(&over_the_reply).first(),
        Some(&AudioCommand::FlushPlayback),
        "words heard over the reply stop it at once"
    );
    outputs.extend(over_the_reply);
    outputs.extend(call.tick(1_700 + LIVE_QUIET_MS));
    let kinds: Vec<String> = names(&outputs)
        .into_iter()
        .filter(|name| {
            name.starts_with("transcript:TEXT_MESSAGE_START") || name.starts_with("interrupted")
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "transcript:TEXT_MESSAGE_START:user-1",
            "transcript:TEXT_MESSAGE_START:assistant-1",
            // The late words reopen the user's message, as a late transcript does on the
            // Realtime API.
            "transcript:TEXT_MESSAGE_START:user-1",
            "interrupted:assistant-1",
            "transcript:TEXT_MESSAGE_START:user-2",
        ]
    );
    let starts = kinds.iter().filter(|k| k.contains("START")).count();
    let ends = names(&outputs)
        .iter()
        .filter(|name| name.starts_with("transcript:TEXT_MESSAGE_END"))
        .count();
    assert_eq!(
        starts,
        ends,
        "every message was closed: {:?}",
        names(&outputs)
    );
}

#[test]
fn a_paused_session_says_how_to_wake_it_and_stops_saying_so_once_woken() {
    let (mut call, _) = ready_live(hands_free());
    let paused = call.server(5_000, &json!({"type": "session.paused"}).to_string());
    assert_eq!(
        last_status(&paused).map(|(_, detail)| detail),
        Some("Paused: say something to wake it.".to_owned())
    );
    let resumed = call.server(9_000, &json!({"type": "session.resumed"}).to_string());
    let (state, detail) = last_status(&resumed).expect("the status changes once woken");
    assert_eq!(state, ConnectionState::Listening);
    assert!(!detail.contains("Paused"), "{detail}");
}

#[test]
fn usage_by_the_second_is_costed_by_its_growth_at_the_price_per_active_and_paused_minute() {
    let pricing = Pricing {
        model: "gpt-live-1.1".to_owned(),
        rate: Rate::PerMinute(MinutePrices {
            per_minute: 0.05,
            per_paused_minute: 0.02,
        }),
        taken_on: "2026-12-06".to_owned(),
        free: false,
    };
    let mut call = Call::placed_priced(live(push_to_talk()), pricing, None, None, Vec::new(), None);
    call.input(0, Input::Transport(TransportInput::Open));
    call.server(50, &started());
    let first = call.server(60_000, &usage(60, 0));
    let after_a_minute = spending(&first).expect("the spending is shown");
    assert!(
        (after_a_minute.cost_usd.unwrap() - 0.05).abs() < 1e-9,
        "{after_a_minute:?}"
    );
    // Cumulative: the second report adds only what grew (30 s active, 60 s paused).
    let second = call.server(150_000, &usage(90, 60));
    let later = spending(&second).expect("the spending is shown");
    assert!(
        (later.cost_usd.unwrap() - (0.05 + 0.025 + 0.02)).abs() < 1e-9,
        "{later:?}"
    );
    let same = call.server(151_000, &usage(90, 60));
    assert!(
        spending(&same).is_none(),
        "a report that adds nothing is not shown again"
    );
}

#[test]
fn a_delegation_to_the_client_is_declined_at_once_so_the_model_does_not_wait() {
    let (mut call, _) = ready_live(push_to_talk());
    let outputs = call.server(
        3_000,
        &json!({"type": "session.delegation.created", "offset_ms": 2_900,
            "delegation": {"id": "del_1", "target": "client"}})
        .to_string(),
    );
    let answer = outputs
        .iter()
        .find_map(|output| match output {
            Output::Send(sent) => sent.live().cloned(),
            _ => None,
        })
        .expect("an answer to the delegation");
    let json: serde_json::Value = serde_json::from_str(&answer.to_json(None)).unwrap();
    assert_eq!(json["type"], "session.commentary.append");
    assert_eq!(json["delegation_id"], "del_1");
}

#[test]
fn a_typed_message_is_kept_out_of_a_live_call_with_a_line_that_says_to_speak_it() {
    let (mut call, _) = ready_live(push_to_talk());
    let outputs = call.input(1_000, Input::SendMessage(UserMessage::text("hello")));
    assert!(sent_types(&outputs).is_empty(), "{:?}", names(&outputs));
    assert_eq!(
        last_status(&outputs).map(|(_, detail)| detail),
        Some("Not sent: this provider takes speech only; say it instead.".to_owned())
    );
}

#[test]
fn the_reply_is_audible_from_its_first_sound_not_from_the_silence_before_it() {
    let (mut call, _) = ready_live(push_to_talk());
    call.utterance(1_000, 2_000);
    call.speaker.played();
    call.input(
        2_300,
        Input::Engine(walkie_conversation::EngineInput::AssistantAudio(
            walkie_session::AudioChunk::from_samples(vec![3; 960]),
        )),
    );
    assert!(
        call.speaker.played().is_empty(),
        "silence between replies is not a reply"
    );
    let sound = call.assistant_audio(2_400);
    assert_eq!(call.speaker.played().len(), 1, "the first sound is heard");
    assert_eq!(
        last_status(&sound).map(|(state, _)| state),
        Some(ConnectionState::Speaking)
    );
    let quiet = call.tick(2_400 + LIVE_AUDIO_QUIET_MS);
    assert_ne!(
        last_status(&quiet).map(|(state, _)| state),
        Some(ConnectionState::Speaking),
        "no longer audible once its audio stopped"
    );
}

#[test]
fn a_dropped_live_call_is_dialled_again_with_the_conversation_so_far_and_nothing_on_the_channel() {
    let (mut call, _) = ready_live(push_to_talk());
    call.utterance(1_000, 2_000);
    call.server(2_300, &user_words("What is my cat called?", 1_000));
    call.server(2_400, &reply_words("Miso.", 2_400));
    call.assistant_audio(2_420);
    call.tick(2_420 + LIVE_QUIET_MS);
    call.input(
        5_000,
        Input::Transport(TransportInput::Closed("the provider hung up".to_owned())),
    );
    // The redial waits out its backoff; the dial it asks for carries the history.
    let dial = (5_001..20_000)
        .step_by(50)
        .find_map(|now_ms| {
            call.tick(now_ms)
                .into_iter()
                .find_map(|output| match output {
                    Output::Dial { history } => Some(history),
                    _ => None,
                })
        })
        .expect("the call is dialled again");
    let texts: Vec<String> = dial
        .iter()
        .map(|item| match item {
            walkie_openai::Item::Message { content, .. } => format!("{content:?}"),
            other => panic!("a message: {other:?}"),
        })
        .collect();
    assert_eq!(texts.len(), 2, "{texts:?}");
    assert!(texts[0].contains("What is my cat called?"), "{texts:?}");
    assert!(texts[1].contains("Miso."), "{texts:?}");
    call.input(20_000, Input::Dialled);
    let opened = call.input(20_010, Input::Transport(TransportInput::Open));
    assert!(
        !sent_types(&opened).contains(&"conversation.item.create"),
        "a Live session has its history already"
    );
}

#[test]
fn the_rest_of_a_reply_cut_by_the_key_is_never_played_and_the_next_reply_is() {
    let (mut call, _) = ready_live(push_to_talk());
    call.utterance(1_000, 2_000);
    call.server(2_400, &reply_words("Once upon a time", 2_400));
    for chunk in 0..5 {
        call.assistant_audio(2_420 + chunk * 20);
    }
    // The key cuts the reply; the model goes on talking a little before it yields.
    call.press(2_600);
    call.speaker.played();
    let mut after_the_cut = Vec::new();
    for chunk in 0..10 {
        after_the_cut.extend(call.assistant_audio(2_620 + chunk * 20));
    }
    after_the_cut.extend(call.release(3_000));
    after_the_cut.extend(call.tick(3_000 + call.config.tail_ms));
    for chunk in 0..10 {
        after_the_cut.extend(call.assistant_audio(3_220 + chunk * 20));
    }
    after_the_cut.extend(call.server(3_300, &reply_words(" there was", 2_700)));
    assert_eq!(
        call.speaker.played().len(),
        0,
        "{:?}",
        names(&after_the_cut)
    );
    // Quiet (the driver wakes at the machine's deadline: the cut reply's last sound was at
    // 3,400), then the answer to the new turn plays from its first frame.
    assert_eq!(
        call.machine.next_deadline_ms(),
        Some(3_400 + LIVE_AUDIO_QUIET_MS)
    );
    call.tick(3_400 + LIVE_AUDIO_QUIET_MS);
    let next = call.assistant_audio(3_420 + LIVE_AUDIO_QUIET_MS);
    assert_eq!(call.speaker.played().len(), 1, "{:?}", names(&next));
}

/// The delegated Responses backend calls `name` with `arguments` (`response.event`).
fn backend_calls(call_id: &str, name: &str, arguments: &str) -> String {
    json!({"type": "response.event", "delegation_id": "del_1", "event": {
        "type": "response.output_item.done", "output_index": 0, "sequence_number": 3,
        "item": {"type": "function_call", "id": "fc_1", "call_id": call_id, "name": name,
            "arguments": arguments, "status": "completed"}}})
    .to_string()
}

/// The Live client events among `outputs`, as their JSON.
fn live_sent(outputs: &[Output]) -> Vec<serde_json::Value> {
    outputs
        .iter()
        .filter_map(|output| match output {
            Output::Send(sent) => sent
                .live()
                .map(|event| serde_json::from_str(&event.to_json(None)).expect("JSON")),
            _ => None,
        })
        .collect()
}

#[test]
fn a_built_in_tool_the_backend_calls_is_run_and_answered_then_the_backend_goes_on() {
    let (mut call, _) = ready_live(push_to_talk());
    call.input(
        500,
        Input::WallClock(walkie_session::turn::WallClock {
            unix_ms: 1_765_000_000_000,
            utc_offset_minutes: 60,
        }),
    );
    call.utterance(1_000, 2_000);
    let outputs = call.server(
        2_500,
        &backend_calls("call_7", "get_current_local_time", "{}"),
    );
    let sent = live_sent(&outputs);
    assert_eq!(sent.len(), 2, "{sent:?}");
    assert_eq!(sent[0]["type"], "response.item.create");
    assert_eq!(sent[0]["item"]["type"], "function_call_output");
    assert_eq!(sent[0]["item"]["call_id"], "call_7");
    let output: serde_json::Value =
        serde_json::from_str(sent[0]["item"]["output"].as_str().expect("a JSON string"))
            .expect("the tool's JSON");
    assert!(output.get("error").is_none(), "{output}");
    assert_eq!(sent[1]["type"], "response.create");
}

#[test]
fn an_outside_tool_the_backend_calls_asks_the_user_first_and_its_answer_lets_the_backend_go_on() {
    let tool = walkie_conversation::OutsideTool {
        definition: walkie_openai::Tool::Function {
            name: "echo".to_owned(),
            description: Some("The test server's echo".to_owned()),
            parameters: json!({"type": "object", "properties": {}}),
        },
        title: "echo, on test-server".to_owned(),
        policy: walkie_conversation::ToolPolicy::Ask,
    };
    let pricing = Pricing {
        model: "gpt-live-1.1".to_owned(),
        rate: Rate::PerMinute(MinutePrices {
            per_minute: 0.05,
            per_paused_minute: 0.02,
        }),
        taken_on: "2026-12-06".to_owned(),
        free: false,
    };
    let mut call = Call::placed_priced(live(push_to_talk()), pricing, None, None, vec![tool], None);
    call.input(0, Input::Transport(TransportInput::Open));
    call.server(50, &started());
    call.utterance(1_000, 2_000);
    let asked = call.server(2_500, &backend_calls("call_9", "echo", r#"{"text": "hi"}"#));
    assert!(
        asked.iter().any(
            |output| matches!(output, Output::AskApproval(approval) if approval.call_id == "call_9")
        ),
        "{:?}",
        names(&asked)
    );
    assert!(
        live_sent(&asked).is_empty(),
        "nothing goes back before the user decides"
    );
    let allowed = call.input(
        4_000,
        Input::ToolDecision {
            call_id: "call_9".to_owned(),
            allowed: true,
        },
    );
    assert!(
        names(&allowed).contains(&"run-tool:call_9".to_owned()),
        "{:?}",
        names(&allowed)
    );
    let answered = call.input(
        4_300,
        Input::ToolFinished {
            call_id: "call_9".to_owned(),
            result: Ok(json!({"text": "hi"})),
        },
    );
    let sent = live_sent(&answered);
    assert_eq!(
        sent.iter()
            .map(|event| event["type"].clone())
            .collect::<Vec<_>>(),
        [json!("response.item.create"), json!("response.create")]
    );
    assert_eq!(sent[0]["item"]["output"], r#"{"text":"hi"}"#);
}

#[test]
fn every_frame_of_a_live_reply_is_counted_against_its_item_the_first_too() {
    let (mut call, _) = ready_live(hands_free());
    call.server(1_000, &user_words("Tell me a story.", 0));
    call.speaker.played();
    for chunk in 0..3 {
        call.assistant_audio(1_520 + chunk * 20);
    }
    assert_eq!(
        call.speaker.played(),
        ["live_reply_1", "live_reply_1", "live_reply_1"],
        "its first frame opens the reply, and is counted against it as it plays"
    );
    call.tick(1_560 + LIVE_QUIET_MS);
    call.speaker.played();
    call.assistant_audio(5_000);
    assert_eq!(
        call.speaker.played(),
        ["live_reply_2"],
        "the next reply is its own item"
    );
}
