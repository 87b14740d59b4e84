//! Hands-free (server VAD), scripted in virtual time: the server's speech start while the
//! assistant is audible is a barge-in, told to the server the way the transport needs.

mod turn_support;

use serde_json::json;
use walkie_openai::SessionConfig;
use walkie_session::turn::{
    AudioCommand, Diagnostic, LATE_AUDIO_GRACE_MS, NEAR_SPEECH_HOLD_MS, Transport, TurnConfig,
    TurnInput, UiHint,
};
use walkie_session::{AudioChunk, PartDelta, PartDeltaEvent, PartIndex, SessionEvent, Speaker};

use turn_support::*;

/// The user spoke (item_U1), the server answered with resp_R1 (item_A1), which is audible now.
fn assistant_audible_over_webrtc(talk: &mut Conversation) {
    talk.at(1_000)
        .server(&speech_started("item_U1", 900))
        .at(2_000)
        .server(&speech_stopped("item_U1", 1_900))
        .server(&committed("item_U1"))
        .at(2_100)
        .server(&response_created("resp_R1"))
        .server(&audio_part_added("resp_R1", "item_A1"))
        .server(&output_started("resp_R1"))
        .server(&assistant_says("resp_R1", "item_A1", "Let me tell you"));
}

#[test]
fn hands_free_configures_server_vad_and_keeps_the_capture_open() {
    let mut talk = Conversation::with(TurnConfig::hands_free(
        SessionConfig::default(),
        server_vad(None),
    ));
    talk.controller.handle_input(TurnInput::ChannelOpened, 0);
    let sent = talk.sent();
    assert_eq!(
        sent[0]["session"]["audio"]["input"]["turn_detection"],
        json!({"type": "server_vad"})
    );

    talk.at(40).server(&session_updated_with_transcription());
    assert_eq!(talk.audio(), [AudioCommand::OpenCapture { pre_roll_ms: 0 }]);
    assert_eq!(talk.hints(), [UiHint::Ready]);

    talk.at(100).key_down();
    assert_eq!(
        talk.sent(),
        nothing_sent(),
        "the key is not a turn control in hands-free mode"
    );
    assert!(matches!(
        &talk.diagnostics()[..],
        [Diagnostic::Ignored { .. }]
    ));
}

#[test]
fn server_speech_start_and_stop_are_the_users_speech_start_and_end() {
    let mut talk = Conversation::ready_hands_free(Transport::WebRtc, true);
    talk.at(1_000)
        .server(&speech_started("item_U1", 900))
        .at(2_000)
        .server(&speech_stopped("item_U1", 1_900))
        .server(&committed("item_U1"))
        .server(&user_transcript_completed("item_U1", "Hello."));
    assert_eq!(
        talk.stamped_events(),
        [
            (1_000, user_speech_starts(Some("item_U1"))),
            (1_000, speech_starts(0, Speaker::User)),
            (2_000, user_speech_ends(Some("item_U1"))),
            (2_000, transcript(0, Speaker::User, "Hello.", "Hello.")),
            (2_000, speech_ends(0, Speaker::User, Some("Hello."), None)),
        ]
    );
    assert_eq!(
        talk.sent(),
        nothing_sent(),
        "the server commits and answers by itself"
    );
}

#[test]
fn a_server_speech_start_while_the_assistant_is_audible_barges_in_over_webrtc() {
    let mut talk = Conversation::ready_hands_free(Transport::WebRtc, true);
    assistant_audible_over_webrtc(&mut talk);
    talk.controller.handle_input(
        TurnInput::PlaybackProgress {
            item_id: "item_A1".into(),
            played_ms: 1_200,
        },
        talk.now_ms,
    );
    talk.events();
    talk.audio();

    talk.at(3_300).server(&speech_started("item_U2", 3_250));
    assert_eq!(talk.audio(), [AudioCommand::FlushPlayback]);
    assert_eq!(
        talk.sent(),
        nothing_sent(),
        "with interrupt_response the server cancels and clears by itself, and WebRTC needs no truncate"
    );
    assert_eq!(
        talk.events(),
        [
            SessionEvent::OutputSpeechEnd,
            user_speech_starts(Some("item_U2")),
            speech_starts(2, Speaker::User),
        ]
    );

    talk.at(3_320)
        .server(&output_cleared("resp_R1"))
        .server(&response_done("resp_R1", "cancelled"));
    assert_eq!(
        talk.events(),
        [
            SessionEvent::ResponseInterrupted,
            speech_ends(1, Speaker::Assistant, Some("Let me tell you"), Some(1_200)),
            SessionEvent::TurnComplete,
        ],
        "the interrupted part records the 1200 ms that were played"
    );
}

#[test]
fn a_hands_free_barge_in_over_websocket_truncates_the_reply_to_what_was_played() {
    let mut talk = Conversation::ready_hands_free(Transport::WebSocket, true);
    talk.at(2_100)
        .server(&response_created("resp_R1"))
        .server(&assistant_audio_b64("resp_R1", "item_A1", &[1, 2, 3, 4]));
    assert_eq!(
        talk.events(),
        [
            SessionEvent::OutputSpeechStart,
            speech_starts(0, Speaker::Assistant),
            SessionEvent::PartDelta(PartDeltaEvent {
                index: PartIndex(0),
                delta: PartDelta::assistant_audio(AudioChunk::from_samples(vec![1, 2, 3, 4])),
            }),
        ],
        "over WebSocket the client owns playback: the first audio makes the assistant audible"
    );
    talk.controller.handle_input(
        TurnInput::PlaybackProgress {
            item_id: "item_A1".into(),
            played_ms: 640,
        },
        talk.now_ms,
    );

    talk.at(2_900).server(&speech_started("item_U2", 2_850));
    assert_eq!(talk.audio(), [AudioCommand::FlushPlayback]);
    assert_eq!(
        talk.sent(),
        [
            json!({"type": "conversation.item.truncate", "item_id": "item_A1",
                "content_index": 0, "audio_end_ms": 640})
        ]
    );
    assert_eq!(
        talk.events(),
        [
            SessionEvent::OutputSpeechEnd,
            user_speech_starts(Some("item_U2")),
            speech_starts(1, Speaker::User),
        ]
    );

    talk.at(2_910)
        .server(&assistant_audio_b64("resp_R1", "item_A1", &[5, 6]))
        .server(&response_done("resp_R1", "cancelled"));
    assert_eq!(
        talk.events(),
        [
            SessionEvent::ResponseInterrupted,
            speech_ends(0, Speaker::Assistant, None, Some(640)),
            SessionEvent::TurnComplete,
        ],
        "audio still in flight from the cut reply is not played"
    );
    assert_eq!(talk.controller.stats().dropped_audio_chunks, 1);
}

#[test]
fn without_server_interruption_the_client_cancels_and_clears_itself() {
    let mut config = TurnConfig::hands_free(SessionConfig::default(), server_vad(Some(false)));
    config.echo_canceller = true;
    let mut talk = Conversation::ready(config);
    assistant_audible_over_webrtc(&mut talk);
    talk.sent();

    talk.at(3_300).server(&speech_started("item_U2", 3_250));
    assert_eq!(talk.sent(), [cancel_response("resp_R1"), clear_output()]);
}

#[test]
fn in_hands_free_mode_the_key_stops_an_audible_reply_and_the_client_cancels_it() {
    let mut talk = Conversation::ready_hands_free(Transport::WebRtc, true);
    assistant_audible_over_webrtc(&mut talk);
    talk.sent();
    talk.audio();

    talk.at(3_000).key_down();
    assert_eq!(talk.audio(), [AudioCommand::FlushPlayback]);
    assert_eq!(
        talk.sent(),
        [cancel_response("resp_R1"), clear_output()],
        "the server cancels only for speech it hears: a key press is the client's to tell"
    );
    assert!(!talk.controller.is_assistant_audible());

    // Nothing audible: the key does nothing in hands-free mode.
    talk.at(3_500).key_down();
    assert_eq!(talk.sent(), nothing_sent());
    assert_eq!(talk.audio(), []);
}

#[test]
fn without_an_echo_canceller_the_mic_is_gated_while_the_assistant_is_audible() {
    let mut talk = Conversation::ready_hands_free(Transport::WebRtc, false);
    assistant_audible_over_webrtc(&mut talk);
    assert_eq!(talk.audio(), [AudioCommand::GateMic { gated: true }]);

    talk.at(4_000)
        .server(&response_done("resp_R1", "completed"))
        .server(&output_stopped("resp_R1"));
    assert_eq!(
        talk.audio(),
        [],
        "the reply's last packets may still be playing: the mic stays gated"
    );
    talk.controller
        .handle_input(TurnInput::Tick, 4_000 + LATE_AUDIO_GRACE_MS);
    assert_eq!(talk.audio(), [AudioCommand::GateMic { gated: false }]);
    let events = talk.events();
    assert!(
        events.contains(&SessionEvent::OutputSpeechEnd),
        "{events:?}"
    );
    assert_eq!(events.last(), Some(&SessionEvent::TurnComplete));
}

#[test]
fn vad_events_in_push_to_talk_mode_are_ignored() {
    let mut talk = Conversation::ready_for_push_to_talk();
    talk.at(1_000)
        .server(&speech_started("item_U1", 900))
        .server(&speech_stopped("item_U1", 1_900));
    assert_eq!(talk.events(), []);
    assert_eq!(talk.diagnostics().len(), 2);
}

#[test]
fn once_the_echo_canceller_converges_the_gate_opens_and_the_user_can_talk_over_the_reply() {
    let mut talk = Conversation::ready_hands_free(Transport::WebRtc, false);
    assistant_audible_over_webrtc(&mut talk);
    assert_eq!(talk.audio(), [AudioCommand::GateMic { gated: true }]);

    talk.controller
        .handle_input(TurnInput::EchoCancelled { converged: true }, 3_000);
    assert_eq!(
        talk.audio(),
        [AudioCommand::GateMic { gated: false }],
        "the canceller removes the reply: the mic carries the user over it"
    );
    talk.at(3_300).server(&speech_started("item_U2", 3_250));
    assert_eq!(
        talk.audio(),
        [AudioCommand::FlushPlayback],
        "the server heard the user over the reply: a barge-in"
    );
}

#[test]
fn when_the_echo_canceller_must_learn_a_new_path_the_mic_is_gated_again_during_a_reply() {
    let mut talk = Conversation::ready_hands_free(Transport::WebRtc, false);
    talk.controller
        .handle_input(TurnInput::EchoCancelled { converged: true }, 500);
    assistant_audible_over_webrtc(&mut talk);
    assert_eq!(talk.audio(), [], "a converged canceller needs no gate");

    // Another speaker or microphone: a new echo path, half duplex until it is learnt.
    talk.controller
        .handle_input(TurnInput::EchoCancelled { converged: false }, 3_000);
    assert_eq!(talk.audio(), [AudioCommand::GateMic { gated: true }]);
    talk.controller
        .handle_input(TurnInput::EchoCancelled { converged: false }, 3_100);
    assert_eq!(talk.audio(), [], "told twice, gated once");
}

#[test]
fn when_the_mic_hears_the_user_over_a_reply_it_is_held_at_once_and_the_providers_speech_start_cuts_it()
 {
    let mut talk = Conversation::ready_hands_free(Transport::WebRtc, false);
    talk.controller
        .handle_input(TurnInput::EchoCancelled { converged: true }, 500);
    assistant_audible_over_webrtc(&mut talk);
    assert_eq!(talk.audio(), []);

    talk.controller.handle_input(TurnInput::NearSpeech, 3_000);
    assert_eq!(
        talk.audio(),
        [AudioCommand::HoldPlayback { held: true }],
        "the reply is held the moment the user is heard"
    );
    talk.controller.handle_input(TurnInput::NearSpeech, 3_100);
    assert_eq!(talk.audio(), [], "held once");
    assert_eq!(
        talk.sent(),
        nothing_sent(),
        "the provider decides the barge-in"
    );

    talk.at(3_250).server(&speech_started("item_U2", 3_000));
    assert_eq!(
        talk.audio(),
        [AudioCommand::FlushPlayback],
        "the provider heard the user: the held reply is dropped (the flush ends the hold)"
    );
    talk.controller
        .handle_input(TurnInput::Tick, 3_000 + NEAR_SPEECH_HOLD_MS);
    assert_eq!(talk.audio(), [], "nothing is left to release");
}

#[test]
fn a_hold_the_provider_does_not_confirm_lets_the_reply_go_on_where_it_stopped() {
    let mut talk = Conversation::ready_hands_free(Transport::WebRtc, false);
    talk.controller
        .handle_input(TurnInput::EchoCancelled { converged: true }, 500);
    assistant_audible_over_webrtc(&mut talk);
    talk.controller.handle_input(TurnInput::NearSpeech, 3_000);
    assert_eq!(talk.audio(), [AudioCommand::HoldPlayback { held: true }]);
    assert_eq!(
        talk.controller.next_deadline_ms(),
        Some(3_000 + NEAR_SPEECH_HOLD_MS)
    );

    talk.controller
        .handle_input(TurnInput::Tick, 3_000 + NEAR_SPEECH_HOLD_MS - 1);
    assert_eq!(talk.audio(), []);
    talk.controller
        .handle_input(TurnInput::Tick, 3_000 + NEAR_SPEECH_HOLD_MS);
    assert_eq!(talk.audio(), [AudioCommand::HoldPlayback { held: false }]);
    assert!(
        talk.diagnostics()
            .contains(&Diagnostic::NearSpeechUnconfirmed {
                held_ms: NEAR_SPEECH_HOLD_MS
            }),
        "the unconfirmed hold is diagnosed"
    );
    assert!(talk.controller.is_assistant_audible(), "the reply goes on");
}

#[test]
fn near_speech_holds_nothing_without_a_trusted_canceller_or_an_audible_reply() {
    let mut talk = Conversation::ready_hands_free(Transport::WebRtc, false);
    talk.controller.handle_input(TurnInput::NearSpeech, 600);
    assert_eq!(talk.audio(), [], "nothing audible");

    assistant_audible_over_webrtc(&mut talk);
    assert_eq!(talk.audio(), [AudioCommand::GateMic { gated: true }]);
    talk.controller.handle_input(TurnInput::NearSpeech, 3_000);
    assert_eq!(
        talk.audio(),
        [],
        "an untrusted canceller: what the mic hears may be the reply itself"
    );
}

#[test]
fn a_call_that_closes_while_a_reply_is_held_lets_the_speaker_go() {
    let mut talk = Conversation::ready_hands_free(Transport::WebRtc, false);
    talk.controller
        .handle_input(TurnInput::EchoCancelled { converged: true }, 500);
    assistant_audible_over_webrtc(&mut talk);
    talk.controller.handle_input(TurnInput::NearSpeech, 3_000);
    assert_eq!(talk.audio(), [AudioCommand::HoldPlayback { held: true }]);

    talk.controller
        .handle_input(TurnInput::ChannelClosed, 3_100);
    assert!(
        talk.audio()
            .contains(&AudioCommand::HoldPlayback { held: false }),
        "the engine outlives the call: the next one must not start held"
    );
    talk.controller
        .handle_input(TurnInput::Tick, 3_000 + NEAR_SPEECH_HOLD_MS);
    assert_eq!(talk.audio(), [], "no hold left to time out");
    assert!(
        !talk
            .diagnostics()
            .iter()
            .any(|diagnostic| matches!(diagnostic, Diagnostic::NearSpeechUnconfirmed { .. })),
        "the hold ended with the call, not unconfirmed"
    );
}
