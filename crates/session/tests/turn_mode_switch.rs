//! Switching between push-to-talk and hands-free during a call, scripted in virtual time: the
//! session is updated, not replaced, so the conversation goes on; a turn under way ends in the
//! mode it began in.

mod turn_support;

use serde_json::{Value, json};
use walkie_openai::SessionConfig;
use walkie_session::turn::{AudioCommand, PressMode, TurnConfig, TurnInput, TurnMode};

use turn_support::*;

fn hands_free() -> TurnMode {
    TurnMode::HandsFree(server_vad(None))
}

fn push_to_talk() -> TurnMode {
    TurnMode::PushToTalk(PressMode::Hold)
}

/// The types of the events sent, in order.
fn types(sent: &[Value]) -> Vec<&str> {
    sent.iter()
        .map(|event| event["type"].as_str().expect("every event has a type"))
        .collect()
}

fn turn_detection(session_update: &Value) -> &Value {
    &session_update["session"]["audio"]["input"]["turn_detection"]
}

#[test]
fn switching_to_hands_free_between_turns_turns_server_vad_on_and_opens_the_mic() {
    let mut talk = Conversation::ready_for_push_to_talk();
    talk.utterance(1_000, 1_600).at(2_000).tick();
    talk.sent();
    talk.audio();

    talk.controller
        .handle_input(TurnInput::SetTurnMode(hands_free()), 3_000);
    let sent = talk.sent();
    assert_eq!(types(&sent), ["session.update"]);
    assert_eq!(turn_detection(&sent[0]), &json!({"type": "server_vad"}));
    assert_eq!(talk.audio(), [AudioCommand::OpenCapture { pre_roll_ms: 0 }]);
    assert_eq!(talk.controller.pending_turn_mode(), None);

    // The server's VAD now marks the user's turns, and the key no longer does.
    talk.at(4_000).server(&speech_started("item_U2", 3_900));
    assert!(
        talk.events().contains(&user_speech_starts(Some("item_U2"))),
        "the server's speech start is the user's"
    );
    talk.at(5_000).key_down();
    assert_eq!(talk.sent(), nothing_sent());
}

#[test]
fn switching_to_push_to_talk_between_turns_turns_server_vad_off_and_closes_the_mic() {
    let mut talk = Conversation::ready_hands_free(walkie_session::turn::Transport::WebRtc, true);

    talk.controller
        .handle_input(TurnInput::SetTurnMode(push_to_talk()), 1_000);
    let sent = talk.sent();
    assert_eq!(types(&sent), ["session.update"]);
    assert_eq!(turn_detection(&sent[0]), &Value::Null);
    assert_eq!(talk.audio(), [AudioCommand::CloseCapture]);

    // The key is the turn control now: clear, then commit and ask for a reply after the tail.
    talk.utterance(2_000, 2_600).at(2_800).tick();
    assert_eq!(
        types(&talk.sent()),
        [
            "input_audio_buffer.clear",
            "input_audio_buffer.commit",
            "response.create"
        ]
    );
}

#[test]
fn a_switch_asked_for_during_a_press_waits_until_the_utterance_is_committed() {
    let mut talk = Conversation::ready_for_push_to_talk();
    talk.at(1_000).key_down();
    talk.sent();
    talk.audio();

    talk.controller
        .handle_input(TurnInput::SetTurnMode(hands_free()), 1_200);
    assert_eq!(talk.sent(), nothing_sent(), "the press is not cut short");
    assert_eq!(talk.audio(), []);
    assert_eq!(talk.controller.pending_turn_mode(), Some(&hands_free()));

    // Released at 1.6 s; the 200 ms tail ends at 1.8 s with the commit, and then the switch.
    talk.at(1_600).key_up().at(1_800).tick();
    let sent = talk.sent();
    assert_eq!(
        types(&sent),
        [
            "input_audio_buffer.commit",
            "response.create",
            "session.update"
        ]
    );
    assert_eq!(turn_detection(&sent[2]), &json!({"type": "server_vad"}));
    assert_eq!(
        talk.audio(),
        [
            AudioCommand::CloseCapture,
            AudioCommand::OpenCapture { pre_roll_ms: 0 }
        ]
    );
    assert_eq!(talk.controller.pending_turn_mode(), None);
}

#[test]
fn a_switch_asked_for_while_the_server_hears_the_user_waits_for_the_servers_commit() {
    let mut talk = Conversation::ready_hands_free(walkie_session::turn::Transport::WebRtc, true);
    talk.at(1_000).server(&speech_started("item_U1", 900));

    talk.controller
        .handle_input(TurnInput::SetTurnMode(push_to_talk()), 1_500);
    assert_eq!(talk.sent(), nothing_sent(), "the utterance is not cut off");
    assert_eq!(talk.audio(), [], "the mic stays open for the rest of it");

    talk.at(2_000)
        .server(&speech_stopped("item_U1", 1_900))
        .server(&committed("item_U1"));
    let sent = talk.sent();
    assert_eq!(types(&sent), ["session.update"]);
    assert_eq!(turn_detection(&sent[0]), &Value::Null);
    assert_eq!(talk.audio(), [AudioCommand::CloseCapture]);
    // The utterance itself is the user's turn as before: its transcript still lands.
    talk.server(&user_transcript_completed("item_U1", "Hello."));
    assert!(
        talk.events().contains(&transcript(
            0,
            walkie_session::Speaker::User,
            "Hello.",
            "Hello."
        )),
        "the utterance heard before the switch is kept"
    );
}

#[test]
fn hold_and_toggle_differ_only_on_this_side_and_the_server_is_not_told() {
    let mut talk = Conversation::ready_for_push_to_talk();
    talk.controller.handle_input(
        TurnInput::SetTurnMode(TurnMode::PushToTalk(PressMode::Toggle)),
        500,
    );
    assert_eq!(talk.sent(), nothing_sent());
    assert_eq!(talk.audio(), []);

    // Toggle: the key-up does not end the utterance, the second press does.
    talk.at(1_000).key_down().at(1_100).key_up();
    assert_eq!(types(&talk.sent()), [] as [&str; 0], "nothing to clear yet");
    talk.at(1_600).key_down().at(1_800).tick();
    assert_eq!(
        types(&talk.sent()),
        ["input_audio_buffer.commit", "response.create"]
    );
}

#[test]
fn a_switch_while_disconnected_is_sent_with_the_next_connection() {
    let mut talk = Conversation::with(TurnConfig::push_to_talk(SessionConfig::default()));
    talk.controller
        .handle_input(TurnInput::SetTurnMode(hands_free()), 0);
    assert_eq!(talk.sent(), nothing_sent());
    assert_eq!(talk.audio(), [], "no mic before the session is confirmed");

    talk.controller.handle_input(TurnInput::ChannelOpened, 10);
    let sent = talk.sent();
    assert_eq!(types(&sent), ["session.update"]);
    assert_eq!(turn_detection(&sent[0]), &json!({"type": "server_vad"}));
    talk.at(50).server(&session_updated_with_transcription());
    assert_eq!(talk.audio(), [AudioCommand::OpenCapture { pre_roll_ms: 0 }]);
}
