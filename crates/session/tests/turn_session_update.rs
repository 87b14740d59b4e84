//! What a `session.update` may carry (reference §1.3, §2): never `model` (it belongs to call
//! creation) and `voice` only before the assistant's first audio — in the update sent on open
//! and in every mid-call mode switch.

mod turn_support;

use serde_json::Value;
use walkie_openai::{AudioConfig, AudioOutput, SessionConfig};
use walkie_session::AudioChunk;
use walkie_session::turn::{PressMode, ToolRegistry, TurnConfig, TurnInput, TurnMode};

use turn_support::*;

fn session_with(model: &str, voice: &str, instructions: &str) -> SessionConfig {
    SessionConfig {
        model: Some(model.to_owned()),
        instructions: Some(instructions.to_owned()),
        audio: Some(AudioConfig {
            output: Some(AudioOutput {
                voice: Some(voice.to_owned()),
                ..AudioOutput::default()
            }),
            ..AudioConfig::default()
        }),
        ..SessionConfig::default()
    }
}

fn configured() -> TurnConfig {
    TurnConfig::push_to_talk(session_with("gpt-realtime", "cedar", "Be brief."))
}

/// The `session.update` events among `sent`.
fn updates(sent: &[Value]) -> Vec<&Value> {
    sent.iter()
        .filter(|event| event["type"] == "session.update")
        .collect()
}

fn hands_free() -> TurnMode {
    TurnMode::HandsFree(server_vad(None))
}

/// Opens the channel and returns the `session.update` sent on open.
fn opened(talk: &mut Conversation) -> Value {
    talk.controller.handle_input(TurnInput::ChannelOpened, 0);
    let sent = talk.sent();
    let updates = updates(&sent);
    assert_eq!(updates.len(), 1, "one update on open: {sent:?}");
    let update = updates[0].clone();
    talk.at(50).server(&session_updated_with_transcription());
    talk.sent();
    update
}

/// A push-to-talk turn whose reply the assistant speaks (`output_audio_buffer.started`) and
/// finishes, so that the next mode switch applies at once.
fn spoken_turn(talk: &mut Conversation) {
    talk.utterance(1_000, 1_600).at(1_800).tick();
    talk.at(1_900).server(&response_created("resp_1"));
    talk.at(2_000).server(&output_started("resp_1"));
    talk.at(2_500).server(&output_stopped("resp_1"));
    talk.at(2_600).server(&response_done("resp_1", "completed"));
    talk.at(3_500).tick();
    talk.sent();
}

#[test]
fn the_update_on_open_carries_the_voice_and_instructions_but_never_the_model() {
    let mut talk = Conversation::with(configured());
    let update = opened(&mut talk);
    let session = &update["session"];
    assert_eq!(session.get("model"), None, "{session}");
    assert_eq!(session["audio"]["output"]["voice"], "cedar");
    assert_eq!(session["instructions"], "Be brief.");
    assert_eq!(session["type"], "realtime");
}

#[test]
fn a_mode_switch_before_any_audio_may_still_set_the_voice_and_never_the_model() {
    let mut talk = Conversation::with(configured());
    opened(&mut talk);
    talk.controller
        .handle_input(TurnInput::SetTurnMode(hands_free()), 500);
    let sent = talk.sent();
    let updates = updates(&sent);
    assert_eq!(updates.len(), 1);
    assert_eq!(updates[0]["session"].get("model"), None);
    assert_eq!(updates[0]["session"]["audio"]["output"]["voice"], "cedar");
    assert_eq!(
        updates[0]["session"]["audio"]["input"]["turn_detection"]["type"],
        "server_vad"
    );
}

#[test]
fn after_the_first_assistant_audio_a_mode_switch_carries_neither_voice_nor_model() {
    let mut talk = Conversation::with(configured());
    opened(&mut talk);
    spoken_turn(&mut talk);

    talk.controller
        .handle_input(TurnInput::SetTurnMode(hands_free()), 4_000);
    let sent = talk.sent();
    let to_hands_free = updates(&sent);
    assert_eq!(to_hands_free.len(), 1, "{sent:?}");
    let session = &to_hands_free[0]["session"];
    assert_eq!(session.get("model"), None, "{session}");
    assert_eq!(
        session["audio"].get("output").and_then(|o| o.get("voice")),
        None,
        "{session}"
    );
    // The rest of the session is restated.
    assert_eq!(session["instructions"], "Be brief.");

    talk.controller.handle_input(
        TurnInput::SetTurnMode(TurnMode::PushToTalk(PressMode::Hold)),
        5_000,
    );
    let sent = talk.sent();
    let back = updates(&sent);
    assert_eq!(back.len(), 1);
    assert_eq!(back[0]["session"].get("model"), None);
    assert_eq!(
        back[0]["session"]["audio"]
            .get("output")
            .and_then(|o| o.get("voice")),
        None
    );
    assert_eq!(
        back[0]["session"]["audio"]["input"]["turn_detection"],
        Value::Null
    );
}

#[test]
fn assistant_audio_by_rtp_alone_also_fixes_the_voice() {
    let mut talk = Conversation::with(configured());
    opened(&mut talk);
    talk.controller.handle_input(
        TurnInput::AssistantAudio(AudioChunk::from_samples(vec![1_000i16; 480])),
        600,
    );
    talk.controller
        .handle_input(TurnInput::SetTurnMode(hands_free()), 700);
    let sent = talk.sent();
    let updates = updates(&sent);
    assert_eq!(updates.len(), 1);
    assert_eq!(
        updates[0]["session"]["audio"]
            .get("output")
            .and_then(|o| o.get("voice")),
        None
    );
}

#[test]
fn a_new_data_channel_is_a_new_session_whose_voice_is_set_again() {
    let mut talk = Conversation::with(configured());
    opened(&mut talk);
    spoken_turn(&mut talk);
    talk.controller
        .handle_input(TurnInput::ChannelClosed, 4_000);
    talk.controller
        .handle_input(TurnInput::ChannelOpened, 5_000);
    let sent = talk.sent();
    let updates = updates(&sent);
    assert_eq!(updates.len(), 1);
    assert_eq!(updates[0]["session"]["audio"]["output"]["voice"], "cedar");
    assert_eq!(updates[0]["session"].get("model"), None);
}

#[test]
fn the_call_session_carries_the_model_turn_detection_and_tools() {
    let config = TurnConfig::hands_free(
        session_with("gpt-realtime-mini", "marin", "Be brief."),
        server_vad(Some(true)),
    );
    let tools = ToolRegistry::with_builtins().definitions();
    assert!(!tools.is_empty(), "the built-in tools exist");
    let session = config.call_session(tools.clone());
    assert_eq!(session.model.as_deref(), Some("gpt-realtime-mini"));
    assert_eq!(session.tools, Some(tools));
    let json = serde_json::to_value(&session).expect("a session serialises");
    assert_eq!(json["type"], "realtime");
    assert_eq!(
        json["audio"]["input"]["turn_detection"]["type"],
        "server_vad"
    );
    assert_eq!(json["audio"]["output"]["voice"], "marin");

    // Push-to-talk starts the call with turn detection off, not on the server's default VAD.
    let ptt = configured().call_session(Vec::new());
    let json = serde_json::to_value(&ptt).expect("a session serialises");
    assert_eq!(json["audio"]["input"]["turn_detection"], Value::Null);
    assert!(
        json["audio"]["input"]
            .as_object()
            .is_some_and(|input| input.contains_key("turn_detection")),
        "turn_detection is sent as an explicit null"
    );
}
