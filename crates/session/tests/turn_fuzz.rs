//! The decoder feeding the controller meets whatever arrives on the data channel: arbitrary text,
//! valid GA events cut short or with fields replaced, in any order, interleaved with key presses,
//! ticks, playback reports and channel changes. Nothing panics, everything sent is a GA client
//! event with an id no earlier event had (the harness checks the ids), no `session.update`
//! carries `model` (nor `voice` once assistant audio played), and the session stream stays whole
//! (every delta and end follows its start).

mod turn_support;

use std::collections::HashSet;

use proptest::prelude::*;
use walkie_openai::{AudioConfig, AudioOutput, SessionConfig, decode_client_event};
use walkie_session::DeviceDirection;
use walkie_session::turn::{PressMode, Transport, TurnConfig, TurnInput, TurnMode};
use walkie_session::{AudioChunk, SessionEvent};

use turn_support::*;

/// The valid lines, with the refusals naming the last commit and create the controller sent
/// (none before it sent one).
fn valid_lines(commit_id: Option<&str>, create_id: Option<&str>) -> Vec<String> {
    let mut lines: Vec<String> = PTT_TURN_GA
        .lines()
        .chain(OTHER_EVENTS_GA.lines())
        .filter(|l| !l.trim().is_empty())
        .map(str::to_owned)
        .collect();
    lines.extend([
        session_updated_with_transcription(),
        response_created("resp_R1"),
        response_created("resp_R2"),
        response_done("resp_R1", "cancelled"),
        response_done("resp_R2", "completed"),
        audio_part_added("resp_R1", "item_A1"),
        output_started("resp_R1"),
        output_stopped("resp_R1"),
        output_cleared("resp_R2"),
        assistant_says("resp_R2", "item_A2", "hi"),
        assistant_audio_b64("resp_R1", "item_A1", &[1, -1, 7]),
        committed("item_U1"),
        user_said("item_U1", "so"),
        user_transcript_completed("item_U2", "done"),
        user_transcription_failed("item_U1"),
        speech_started("item_U2", 10),
        speech_stopped("item_U2", 20),
        server_error("input_audio_buffer_commit_empty", "empty", commit_id),
        server_error(
            "conversation_already_has_active_response",
            "busy",
            create_id,
        ),
        server_error("mystery", "unexplained", None),
        function_call_added("resp_R1", "item_F1", "call_1", "get_current_local_time"),
        function_arguments_done(
            "resp_R1",
            "item_F1",
            "call_1",
            "get_current_local_time",
            "{}",
        ),
        function_arguments_done("resp_R2", "item_F2", "call_1", "nope", "{\"x\":"),
    ]);
    lines
}

fn json_value() -> impl Strategy<Value = serde_json::Value> {
    let leaf = prop_oneof![
        Just(serde_json::Value::Null),
        any::<bool>().prop_map(serde_json::Value::from),
        any::<i64>().prop_map(serde_json::Value::from),
        "[a-z_.0-9]{0,10}".prop_map(serde_json::Value::from),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(serde_json::Value::from),
            prop::collection::btree_map("[a-z_]{1,8}", inner, 0..4)
                .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
        ]
    })
}

#[derive(Debug, Clone)]
enum Step {
    KeyDown,
    KeyUp,
    Cancel,
    Wait(u64),
    Valid(usize),
    Cut(usize, f64),
    Mutated(usize, String, serde_json::Value),
    Text(String),
    Audio(Vec<i16>),
    Progress(u64),
    Drained,
    Device(bool),
    ChannelOpen,
    ChannelClosed,
    SwitchMode(u8),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        3 => Just(Step::KeyDown),
        3 => Just(Step::KeyUp),
        1 => Just(Step::Cancel),
        3 => (0u64..400).prop_map(Step::Wait),
        8 => any::<prop::sample::Index>().prop_map(|i| Step::Valid(i.index(1 << 16))),
        2 => (any::<prop::sample::Index>(), 0.0f64..1.0).prop_map(|(i, c)| Step::Cut(i.index(1 << 16), c)),
        3 => (
            any::<prop::sample::Index>(),
            prop_oneof![
                Just("response_id".to_owned()),
                Just("item_id".to_owned()),
                Just("response".to_owned()),
                Just("delta".to_owned()),
                Just("error".to_owned()),
                "[a-z_]{1,8}"
            ],
            json_value()
        )
            .prop_map(|(i, k, v)| Step::Mutated(i.index(1 << 16), k, v)),
        1 => ".{0,40}".prop_map(Step::Text),
        1 => prop::collection::vec(any::<i16>(), 0..8).prop_map(Step::Audio),
        1 => (0u64..5_000).prop_map(Step::Progress),
        1 => Just(Step::Drained),
        1 => any::<bool>().prop_map(Step::Device),
        1 => Just(Step::ChannelOpen),
        1 => Just(Step::ChannelClosed),
        1 => (0u8..3).prop_map(Step::SwitchMode),
    ]
}

/// The session the app asks for: a model and a voice, which updates must not carry (the
/// model never, the voice not after the assistant's audio).
fn session() -> SessionConfig {
    SessionConfig {
        model: Some("gpt-realtime".to_owned()),
        audio: Some(AudioConfig {
            output: Some(AudioOutput {
                voice: Some("marin".to_owned()),
                ..AudioOutput::default()
            }),
            ..AudioConfig::default()
        }),
        ..SessionConfig::default()
    }
}

fn config(mode: u8) -> TurnConfig {
    let mut config = match mode % 4 {
        0 => TurnConfig::push_to_talk(session()),
        1 => {
            let mut c = TurnConfig::push_to_talk(session());
            c.mode = TurnMode::PushToTalk(PressMode::Toggle);
            c
        }
        _ => TurnConfig::hands_free(session(), server_vad(None)),
    };
    if mode % 4 == 3 {
        config.transport = Transport::WebSocket;
    }
    config
}

fn run(mode: u8, steps: Vec<Step>) -> Result<(), TestCaseError> {
    let mut talk = Conversation::with(config(mode));
    talk.controller.handle_input(TurnInput::ChannelOpened, 0);
    talk.at(1).server(&session_updated_with_transcription());
    // The update on open, before any audio: no model, the voice.
    let opened = talk.sent();
    prop_assert!(opened[0]["session"].get("model").is_none());
    prop_assert_eq!(&opened[0]["session"]["audio"]["output"]["voice"], "marin");
    let mut started = HashSet::new();
    let mut now_ms = 1u64;
    // RTP audio with sound in it counts as the assistant's audio (silence between replies is
    // nobody's); a closed channel ends the session.
    let mut voice_fixed = false;
    for step in steps {
        let lines = valid_lines(
            talk.last_sent_id("input_audio_buffer.commit").as_deref(),
            talk.last_sent_id("response.create").as_deref(),
        );
        match &step {
            Step::Audio(samples) if samples.iter().any(|sample| sample.unsigned_abs() > 64) => {
                voice_fixed = true
            }
            Step::ChannelClosed => voice_fixed = false,
            _ => {}
        }
        match step {
            Step::KeyDown => {
                talk.at(now_ms).key_down();
            }
            Step::KeyUp => {
                talk.at(now_ms).key_up();
            }
            Step::Cancel => {
                talk.cancel_press_at(now_ms);
            }
            Step::Wait(ms) => {
                now_ms += ms;
                talk.at(now_ms).tick();
            }
            Step::Valid(i) => {
                talk.at(now_ms).server(&lines[i % lines.len()]);
            }
            Step::Cut(i, cut) => {
                let line = &lines[i % lines.len()];
                let mut end = (line.len() as f64 * cut) as usize;
                while !line.is_char_boundary(end) {
                    end -= 1;
                }
                talk.at(now_ms).server(&line[..end]);
            }
            Step::Mutated(i, key, value) => {
                let mut event: serde_json::Value = serde_json::from_str(&lines[i % lines.len()])
                    .expect("the valid lines are JSON");
                event[key] = value;
                talk.at(now_ms).server(&event.to_string());
            }
            Step::Text(text) => {
                talk.at(now_ms).server(&text);
            }
            Step::Audio(samples) => talk.controller.handle_input(
                TurnInput::AssistantAudio(AudioChunk::from_samples(samples)),
                now_ms,
            ),
            Step::Progress(played_ms) => talk.controller.handle_input(
                TurnInput::PlaybackProgress {
                    item_id: "item_A1".into(),
                    played_ms,
                },
                talk.now_ms,
            ),
            Step::Drained => talk
                .controller
                .handle_input(TurnInput::PlaybackDrained, now_ms),
            Step::Device(input) => talk.controller.handle_input(
                TurnInput::DeviceChanged(if input {
                    DeviceDirection::Input
                } else {
                    DeviceDirection::Output
                }),
                now_ms,
            ),
            Step::ChannelOpen => talk
                .controller
                .handle_input(TurnInput::ChannelOpened, now_ms),
            Step::ChannelClosed => talk
                .controller
                .handle_input(TurnInput::ChannelClosed, now_ms),
            Step::SwitchMode(mode) => talk
                .controller
                .handle_input(TurnInput::SetTurnMode(config(mode).mode), now_ms),
        }
        for sent in talk.sent() {
            let text = sent.to_string();
            let decoded = decode_client_event(&text);
            prop_assert!(
                decoded.is_ok(),
                "sent a non-GA client event: {text}: {decoded:?}"
            );
            if sent["type"] == "session.update" {
                prop_assert!(
                    sent["session"].get("model").is_none(),
                    "model in a session.update: {text}"
                );
                prop_assert!(
                    !voice_fixed || sent["session"]["audio"]["output"].get("voice").is_none(),
                    "voice in a session.update after assistant audio: {text}"
                );
            }
        }
        for event in talk.events() {
            match &event {
                SessionEvent::PartStart(start) => {
                    started.insert(start.index);
                }
                SessionEvent::PartDelta(delta) => {
                    prop_assert!(
                        started.contains(&delta.index),
                        "delta before start: {event:?}"
                    );
                }
                SessionEvent::PartEnd(end) => {
                    prop_assert!(started.contains(&end.index), "end before start: {event:?}");
                }
                _ => {}
            }
        }
        talk.audio();
        talk.hints();
        talk.diagnostics();
    }
    // Whatever happened, a reconnected key still makes a whole utterance. The drop ends any
    // press, so a mode switch still waiting for it takes effect first.
    talk.controller
        .handle_input(TurnInput::ChannelClosed, now_ms + 1);
    if matches!(talk.controller.config().mode, TurnMode::PushToTalk(_)) {
        let toggle = talk.controller.config().mode == TurnMode::PushToTalk(PressMode::Toggle);
        talk.controller
            .handle_input(TurnInput::ChannelOpened, now_ms + 1);
        talk.at(now_ms + 2)
            .server(&session_updated_with_transcription());
        talk.sent();
        talk.at(now_ms + 10).key_down();
        if toggle && !talk.controller.is_capturing() {
            talk.at(now_ms + 11).key_down();
        }
        talk.at(now_ms + 600);
        if toggle {
            talk.key_down();
        } else {
            talk.key_up();
        }
        talk.at(now_ms + 2_000).tick();
        let sent: Vec<String> = talk.sent().iter().map(|e| e["type"].to_string()).collect();
        prop_assert!(
            sent.iter().any(|t| t == "\"input_audio_buffer.commit\""),
            "the key is wedged: {sent:?}"
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn arbitrary_text_never_panics_the_controller(texts in prop::collection::vec(".{0,120}", 1..20)) {
        run(0, texts.into_iter().map(Step::Text).collect())?;
    }

    #[test]
    fn any_mix_of_inputs_and_mangled_events_never_panics_and_keeps_the_stream_whole(
        mode in any::<u8>(),
        steps in prop::collection::vec(step(), 1..80),
    ) {
        run(mode, steps)?;
    }
}
