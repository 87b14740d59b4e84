//! Push-to-talk, scripted in virtual time: each test plays a GA event sequence against the turn
//! controller and asserts exactly which client events were sent and which session events emitted.

mod turn_support;

use serde_json::{Value, json};
use walkie_openai::SessionConfig;
use walkie_session::turn::{
    AudioCommand, CURRENT_LOCAL_TIME_TOOL, ControllerOutput, DEFAULT_TAIL_MS, Diagnostic,
    LATE_AUDIO_GRACE_MS, PressMode, ReplyAudio, ReplyGate, SESSION_CONFIRM_GRACE_MS, ToolRegistry,
    Transport, TurnConfig, TurnController, TurnInput, TurnMode, UiHint,
};
use walkie_session::{SessionEvent, Speaker};

use turn_support::*;

#[test]
fn session_update_goes_out_when_the_channel_opens_and_the_key_waits_for_session_updated() {
    let mut talk = Conversation::with(TurnConfig::push_to_talk(SessionConfig::default()));

    talk.at(0).key_down();
    assert_eq!(talk.hints(), [UiHint::NotReady]);

    talk.controller.handle_input(TurnInput::ChannelOpened, 10);
    let sent = talk.sent();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0]["type"], "session.update");
    assert!(
        !talk.sent_id("session.update").is_empty(),
        "the update goes out under an id"
    );
    assert_eq!(sent[0]["session"]["type"], "realtime");
    assert_eq!(
        sent[0]["session"]["audio"]["input"]["turn_detection"],
        serde_json::Value::Null,
        "push-to-talk sends turn_detection: null, not an absent field"
    );
    assert!(
        sent[0]["session"]["audio"]["input"]
            .as_object()
            .is_some_and(|input| input.contains_key("turn_detection"))
    );
    assert_eq!(
        sent[0]["session"]["tools"][0]["name"],
        CURRENT_LOCAL_TIME_TOOL
    );

    talk.at(20).key_down().at(400).key_up().at(700).tick();
    assert_eq!(talk.hints(), [UiHint::NotReady]);
    assert_eq!(talk.sent(), Vec::<serde_json::Value>::new());
    assert_eq!(talk.audio(), []);

    talk.at(800).server(&session_updated_with_transcription());
    assert_eq!(talk.hints(), [UiHint::Ready]);
    assert!(talk.controller.is_ready());

    talk.at(900).key_down();
    assert!(
        talk.sent().is_empty(),
        "a fresh input buffer is not cleared"
    );
    assert_eq!(
        talk.audio(),
        [AudioCommand::OpenCapture { pre_roll_ms: 300 }]
    );
    assert_eq!(talk.events(), []);
}

#[test]
fn a_push_to_talk_turn_follows_the_reference_sequence() {
    let mut talk = Conversation::ready_for_push_to_talk();

    talk.at(1_000).key_down();
    assert!(
        talk.sent().is_empty(),
        "a fresh input buffer is not cleared"
    );
    assert_eq!(
        talk.audio(),
        [AudioCommand::OpenCapture { pre_roll_ms: 300 }]
    );
    assert_eq!(
        talk.events(),
        [],
        "a press counts only once it is 150 ms long"
    );

    talk.at(1_150).tick();
    assert_eq!(
        talk.stamped_events(),
        [
            (1_000, user_speech_starts(None)),
            (1_000, speech_starts(0, Speaker::User)),
        ],
        "the user's speech starts at key-down"
    );

    talk.at(2_000).key_up();
    assert_eq!(talk.events(), [user_speech_ends(None)]);
    assert_eq!(
        talk.sent(),
        nothing_sent(),
        "the tail keeps capturing before the commit"
    );
    assert_eq!(talk.audio(), []);
    assert_eq!(talk.controller.next_deadline_ms(), Some(2_200));

    talk.at(2_199).tick();
    assert_eq!(talk.sent(), nothing_sent());
    talk.at(2_200).tick();
    assert_eq!(talk.audio(), [AudioCommand::CloseCapture]);
    assert_eq!(talk.sent(), [commit(), create_response()]);

    talk.at(2_300).server_lines(PTT_TURN_GA);
    assert_eq!(
        talk.events(),
        [
            SessionEvent::OutputSpeechStart,
            speech_starts(1, Speaker::Assistant),
            transcript(1, Speaker::Assistant, "I'm", "I'm"),
            transcript(
                1,
                Speaker::Assistant,
                " doing well, thank you!",
                "I'm doing well, thank you!"
            ),
            // response.done came while the reply was audible: its part stays open for the
            // audio still to come, and the turn completes when the audio stops.
            transcript(0, Speaker::User, "How are you?", "How are you?"),
            speech_ends(0, Speaker::User, Some("How are you?"), None),
        ]
    );
    // The server stopped sending; the last packets may still be in the jitter buffer.
    talk.at(2_300 + LATE_AUDIO_GRACE_MS).tick();
    assert_eq!(
        talk.events(),
        [
            SessionEvent::OutputSpeechEnd,
            speech_ends(
                1,
                Speaker::Assistant,
                Some("I'm doing well, thank you!"),
                None
            ),
            SessionEvent::TurnComplete,
        ]
    );
    assert_eq!(
        talk.sent(),
        nothing_sent(),
        "the server's turn needs no further client events"
    );
    assert_eq!(talk.controller.stats().unknown_events, 0);
    assert_eq!(talk.controller.stats().refused_session_events, 0);
}

#[test]
fn the_users_transcript_arriving_after_response_done_lands_in_the_part_opened_at_their_speech_start()
 {
    let mut talk = Conversation::ready_for_push_to_talk();
    talk.utterance(1_000, 2_000);
    talk.sent();
    talk.events();

    talk.at(2_300)
        .server(&committed("item_U1"))
        .server(&response_created("resp_R1"))
        .server(&assistant_says("resp_R1", "item_A1", "Fine."))
        .server(&response_done("resp_R1", "completed"));
    assert_eq!(
        talk.events(),
        [
            speech_starts(1, Speaker::Assistant),
            transcript(1, Speaker::Assistant, "Fine.", "Fine."),
            speech_ends(1, Speaker::Assistant, Some("Fine."), None),
            SessionEvent::TurnComplete,
        ],
        "the user's part stays open across the reply"
    );

    talk.at(3_000)
        .server(&user_said("item_U1", "How "))
        .server(&user_said("item_U1", "are you"))
        .server(&user_transcript_completed("item_U1", "How are you?"));
    assert_eq!(
        talk.events(),
        [
            transcript(0, Speaker::User, "How ", "How "),
            transcript(0, Speaker::User, "are you", "How are you"),
            transcript(0, Speaker::User, "?", "How are you?"),
            speech_ends(0, Speaker::User, Some("How are you?"), None),
        ],
        "part 0, opened at key-down before the reply's part 1, receives the late transcript"
    );

    talk.at(3_100)
        .server(&user_transcript_completed("item_U1", "How are you?"));
    assert_eq!(
        talk.events(),
        [],
        "a duplicate final transcript opens no second part"
    );
}

#[test]
fn a_press_shorter_than_150_ms_is_ignored_with_a_visible_hint() {
    let mut talk = Conversation::ready_for_push_to_talk();

    talk.at(1_000)
        .key_down()
        .at(1_120)
        .key_up()
        .at(2_000)
        .tick();
    assert_eq!(
        talk.hints(),
        [UiHint::PressTooShort {
            held_ms: 120,
            min_press_ms: 150
        }]
    );
    assert!(talk.sent().is_empty(), "no commit, no response");
    assert_eq!(
        talk.audio(),
        [
            AudioCommand::OpenCapture { pre_roll_ms: 300 },
            AudioCommand::CloseCapture
        ]
    );
    assert_eq!(
        talk.events(),
        [],
        "no user message for a press that did not count"
    );

    talk.utterance(3_000, 3_500);
    assert_eq!(
        talk.sent(),
        [clear_input(), commit(), create_response()],
        "the next press clears what the short one sent, and works"
    );
}

#[test]
fn a_repeated_key_down_is_ignored_and_a_lost_key_up_cannot_wedge_the_controller() {
    let mut talk = Conversation::ready_for_push_to_talk();

    talk.at(1_000)
        .key_down()
        .at(1_030)
        .key_down()
        .at(1_060)
        .key_down();
    assert!(talk.sent().is_empty(), "key repeat sends nothing");
    assert_eq!(
        talk.diagnostics(),
        [Diagnostic::RepeatedKeyDown, Diagnostic::RepeatedKeyDown]
    );

    // The key-up is lost: nothing arrives until the maximum press.
    let max_press_ms = talk.controller.config().max_press_ms;
    talk.at(1_000 + max_press_ms).tick();
    assert_eq!(
        talk.hints(),
        [UiHint::ReleasedAutomatically {
            held_ms: max_press_ms
        }]
    );
    talk.at(1_000 + max_press_ms + 200).tick();
    assert_eq!(talk.sent(), [commit(), create_response()]);

    talk.at(1_000 + max_press_ms + 300).key_up();
    assert_eq!(
        talk.sent(),
        nothing_sent(),
        "a stray key-up afterwards does nothing"
    );
    assert!(!talk.controller.is_capturing());
}

#[test]
fn pressing_again_within_the_tail_continues_the_same_utterance() {
    let mut talk = Conversation::ready_for_push_to_talk();
    talk.at(1_000)
        .key_down()
        .at(2_000)
        .key_up()
        .at(2_100)
        .key_down();
    talk.at(2_500).tick();
    assert!(
        talk.sent().is_empty(),
        "no commit while the key is down again"
    );
    talk.at(3_000).key_up().at(3_200).tick();
    assert_eq!(talk.sent(), [commit(), create_response()]);
    assert_eq!(
        talk.events(),
        [
            user_speech_starts(None),
            speech_starts(0, Speaker::User),
            user_speech_ends(None),
            user_speech_ends(None),
        ]
    );
}

#[test]
fn in_toggle_mode_one_press_starts_talking_and_the_next_ends_it() {
    let mut config = TurnConfig::push_to_talk(SessionConfig::default());
    config.mode = TurnMode::PushToTalk(PressMode::Toggle);
    let mut talk = Conversation::ready(config);

    talk.at(1_000)
        .key_down()
        .at(1_100)
        .key_up()
        .at(3_000)
        .tick();
    assert!(talk.sent().is_empty(), "key-ups are ignored when toggling");
    assert!(talk.controller.is_capturing());

    talk.at(4_000).key_down().at(4_200).tick();
    assert_eq!(talk.sent(), [commit(), create_response()]);
    assert!(!talk.controller.is_capturing());
}

#[test]
fn key_down_while_the_assistant_is_audible_barges_in() {
    let mut talk = Conversation::ready_for_push_to_talk();
    talk.utterance(1_000, 2_000);
    talk.at(2_300)
        .server(&committed("item_U1"))
        .server(&response_created("resp_R1"))
        .server(&audio_part_added("resp_R1", "item_A1"))
        .server(&output_started("resp_R1"))
        .server(&assistant_says("resp_R1", "item_A1", "Once upon a time"));
    talk.controller.handle_input(
        TurnInput::PlaybackProgress {
            item_id: "item_A1".into(),
            played_ms: 800,
        },
        talk.now_ms,
    );
    talk.sent();
    assert_eq!(
        talk.audio(),
        [
            AudioCommand::OpenCapture { pre_roll_ms: 300 },
            AudioCommand::CloseCapture,
            AudioCommand::GateMic { gated: true }
        ],
        "no echo canceller: the mic is gated while the assistant is audible"
    );
    talk.events();

    talk.at(3_100).key_down();
    assert_eq!(
        talk.audio(),
        [
            AudioCommand::FlushPlayback,
            AudioCommand::GateMic { gated: false },
            AudioCommand::OpenCapture { pre_roll_ms: 300 }
        ],
        "local playback is flushed before anything else, then the gate opens for the press"
    );
    assert_eq!(
        talk.sent(),
        [cancel_response("resp_R1"), clear_output()],
        "the turn before was committed: nothing to clear"
    );
    assert_eq!(talk.events(), [SessionEvent::OutputSpeechEnd]);
    assert!(!talk.controller.is_assistant_audible());

    talk.at(3_150)
        .server(&assistant_says("resp_R1", "item_A1", " there"))
        .server(&output_cleared("resp_R1"))
        .server(&output_started("resp_R1"))
        .server(&response_done("resp_R1", "cancelled"));
    assert_eq!(
        talk.events(),
        [
            transcript(1, Speaker::Assistant, " there", "Once upon a time there"),
            SessionEvent::ResponseInterrupted,
            speech_ends(
                1,
                Speaker::Assistant,
                Some("Once upon a time there"),
                Some(800)
            ),
            SessionEvent::TurnComplete,
        ],
        "the cut reply records the 800 ms that were heard; its late output start is suppressed"
    );
    assert_eq!(talk.sent(), nothing_sent());

    talk.at(3_600).key_up().at(3_800).tick();
    assert_eq!(
        talk.stamped_events(),
        [
            (3_100, user_speech_starts(None)),
            (3_100, speech_starts(2, Speaker::User)),
            (3_600, user_speech_ends(None)),
        ],
        "the barging press counted once it was 400 ms long, and is stamped at key-down"
    );
    assert_eq!(
        talk.sent(),
        [commit(), create_response()],
        "the cancelled response is done, so the new one is asked for at once"
    );
}

#[test]
fn a_tap_while_the_assistant_is_audible_only_stops_the_reply_and_sends_no_turn() {
    let mut talk = Conversation::ready_for_push_to_talk();
    talk.utterance(1_000, 2_000);
    talk.at(2_300)
        .server(&committed("item_U1"))
        .server(&response_created("resp_R1"))
        .server(&audio_part_added("resp_R1", "item_A1"))
        .server(&output_started("resp_R1"))
        .server(&assistant_says("resp_R1", "item_A1", "Once upon a time"));
    talk.sent();
    talk.audio();
    talk.events();
    talk.hints();

    talk.at(3_100)
        .key_down()
        .at(3_350)
        .key_up()
        .at(3_800)
        .tick();
    assert_eq!(
        talk.sent(),
        [cancel_response("resp_R1"), clear_output(), clear_input()],
        "the reply is cancelled; what the tap captured is cleared, not committed or answered"
    );
    assert_eq!(
        talk.audio(),
        [
            AudioCommand::FlushPlayback,
            AudioCommand::GateMic { gated: false },
            AudioCommand::OpenCapture { pre_roll_ms: 300 },
            AudioCommand::CloseCapture,
        ]
    );
    assert_eq!(
        talk.events(),
        [SessionEvent::OutputSpeechEnd],
        "no user speech part: the tap said nothing"
    );
    assert_eq!(
        talk.hints(),
        [],
        "a tap that stopped a reply is not 'too short'"
    );

    // The next press, with nothing playing, is an ordinary turn.
    talk.at(4_000)
        .server(&response_done("resp_R1", "cancelled"));
    talk.events();
    talk.at(5_000)
        .key_down()
        .at(5_200)
        .key_up()
        .at(5_600)
        .tick();
    let sent = talk.sent();
    assert_eq!(
        sent.last(),
        Some(&create_response()),
        "the next press is answered: {sent:?}"
    );
}

#[test]
fn in_toggle_mode_a_tap_while_the_assistant_is_audible_only_stops_the_reply() {
    let mut talk = Conversation::ready(TurnConfig {
        mode: TurnMode::PushToTalk(PressMode::Toggle),
        ..TurnConfig::push_to_talk(SessionConfig::default())
    });
    talk.at(1_000)
        .key_down()
        .key_up()
        .at(2_000)
        .key_down()
        .key_up();
    talk.at(2_600)
        .server(&committed("item_U1"))
        .server(&response_created("resp_R1"))
        .server(&audio_part_added("resp_R1", "item_A1"))
        .server(&output_started("resp_R1"));
    talk.sent();
    talk.audio();
    talk.events();

    talk.at(3_100)
        .key_down()
        .at(3_250)
        .key_up()
        .at(4_000)
        .tick();
    assert!(
        !talk.controller.is_capturing(),
        "the microphone is not left open"
    );
    assert!(
        !talk.sent().contains(&create_response()),
        "nothing is answered"
    );
    assert_eq!(talk.events(), [SessionEvent::OutputSpeechEnd]);

    // Held past the threshold, the press that stops a reply is a turn, toggled off as usual.
    talk.at(4_100)
        .server(&response_done("resp_R1", "cancelled"))
        .server(&response_created("resp_R2"))
        .server(&audio_part_added("resp_R2", "item_A2"))
        .server(&output_started("resp_R2"));
    talk.events();
    talk.at(5_000)
        .key_down()
        .at(5_600)
        .key_up()
        .at(5_700)
        .tick();
    assert!(
        talk.controller.is_capturing(),
        "still listening after the key came up"
    );
    talk.at(6_500).key_down().key_up().at(7_000).tick();
    assert!(!talk.controller.is_capturing());
}

#[test]
fn a_barge_in_flushes_playback_before_any_data_channel_text_leaves() {
    let mut talk = Conversation::ready_for_push_to_talk();
    reply_audible(&mut talk);
    talk.outputs();

    talk.at(3_100).key_down();
    let kinds: Vec<String> = talk
        .outputs()
        .into_iter()
        .filter(|output| !matches!(output, ControllerOutput::TurnState(_)))
        .map(|output| match output {
            ControllerOutput::Send(sent) => sent.event.event_type().to_owned(),
            ControllerOutput::Audio(command) => format!("{command:?}"),
            other => format!("{other:?}"),
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "FlushPlayback",
            "GateMic { gated: false }",
            "response.cancel",
            "output_audio_buffer.clear",
            "OpenCapture { pre_roll_ms: 300 }",
        ],
        "the speaker falls silent first; the server hears of it after"
    );
}

/// The reply of the first utterance (resp_R1, item_A1) is named at 2 300 ms, not yet audible.
fn reply_named(talk: &mut Conversation) {
    talk.utterance(1_000, 2_000);
    talk.at(2_300)
        .server(&committed("item_U1"))
        .server(&response_created("resp_R1"))
        .server(&audio_part_added("resp_R1", "item_A1"));
}

/// The reply of the first utterance is audible from 2 300 ms over WebRTC.
fn reply_audible(talk: &mut Conversation) {
    reply_named(talk);
    talk.server(&output_started("resp_R1"));
}

#[test]
fn where_the_turn_stands_is_told_as_it_changes_so_nobody_asks_the_controller() {
    let mut talk = Conversation::with(TurnConfig::push_to_talk(SessionConfig::default()));
    let before = talk.turn_states();
    assert_eq!(before.len(), 1, "told once at the first look: {before:?}");
    assert!(!before[0].ready && before[0].press == Some(PressMode::Hold));
    talk.controller.handle_input(TurnInput::ChannelOpened, 0);
    talk.at(50).server(&session_updated_with_transcription());
    assert!(talk.turn_states().last().is_some_and(|state| state.ready));
    assert_eq!(talk.turn_states(), [], "nothing changed, nothing told");

    talk.at(1_000).key_down().at(1_200).tick();
    assert!(
        talk.turn_states()
            .last()
            .is_some_and(|state| state.capturing)
    );
    talk.at(2_000).key_up().at(2_000 + DEFAULT_TAIL_MS).tick();
    let after_release = talk.turn_states();
    let last = after_release
        .last()
        .expect("the release changed where it stands");
    assert!(!last.capturing && last.awaits_reply, "{after_release:?}");
    talk.at(2_300)
        .server(&committed("item_U1"))
        .server(&response_created("resp_R1"))
        .server(&audio_part_added("resp_R1", "item_A1"))
        .server(&output_started("resp_R1"));
    let speaking = talk.turn_states();
    assert!(
        speaking
            .last()
            .is_some_and(|state| state.assistant_audible && state.replying),
        "{speaking:?}"
    );
    assert_eq!(
        speaking.last().copied(),
        Some(talk.controller.turn_state()),
        "what was told is where it stands"
    );
}

fn told(gate: ReplyGate, item_id: Option<&str>) -> ReplyAudio {
    ReplyAudio {
        gate,
        item_id: item_id.map(str::to_owned),
    }
}

#[test]
fn the_engine_is_told_to_play_each_reply_under_its_item_and_nothing_of_a_cut_one() {
    let mut talk = Conversation::ready_for_push_to_talk();
    assert_eq!(
        talk.reply_audio(),
        [],
        "between replies, the first sound plays: as it starts"
    );
    reply_named(&mut talk);
    assert_eq!(
        talk.reply_audio(),
        [told(ReplyGate::FromSound, Some("item_A1"))],
        "named before it is heard: its first frames count against it"
    );
    talk.server(&output_started("resp_R1"));
    assert_eq!(
        talk.reply_audio(),
        [told(ReplyGate::Play, Some("item_A1"))],
        "audible: its pauses play too"
    );
    talk.audio();
    talk.at(2_600).key_down();
    assert_eq!(talk.audio().first(), Some(&AudioCommand::FlushPlayback));
    assert_eq!(
        talk.reply_audio(),
        [],
        "the flush itself drops the cut reply's audio; nothing more to say"
    );
    talk.at(2_700).key_up().at(2_700 + DEFAULT_TAIL_MS).tick();
    talk.at(3_000)
        .server(&committed("item_U2"))
        .server(&response_created("resp_R2"));
    assert_eq!(
        talk.reply_audio(),
        [],
        "the cut reply's stragglers stay dropped"
    );
    talk.server(&audio_part_added("resp_R2", "item_A2"));
    assert_eq!(
        talk.reply_audio(),
        [told(ReplyGate::FromSound, Some("item_A2"))]
    );
}

#[test]
fn a_reply_that_would_start_under_the_held_key_is_not_played_at_all() {
    let mut talk = Conversation::ready_for_push_to_talk();
    reply_named(&mut talk);
    talk.reply_audio();
    talk.at(2_500).key_down();
    talk.audio();
    assert_eq!(
        talk.reply_audio(),
        [told(ReplyGate::Drop, None)],
        "its first packets may come before its start, which cuts it"
    );
    talk.at(2_800).server(&output_started("resp_R1"));
    assert_eq!(talk.audio(), [AudioCommand::FlushPlayback]);
    assert_eq!(talk.reply_audio(), []);
}

#[test]
fn without_an_echo_canceller_the_mic_is_gated_between_presses_while_the_assistant_is_audible() {
    let mut talk = Conversation::ready_for_push_to_talk();
    talk.utterance(1_000, 2_000);
    talk.audio();
    talk.at(2_300)
        .server(&committed("item_U1"))
        .server(&response_created("resp_R1"))
        .server(&audio_part_added("resp_R1", "item_A1"));
    assert_eq!(talk.audio(), [], "not audible yet: nothing to gate");
    talk.server(&output_started("resp_R1"));
    assert_eq!(
        talk.audio(),
        [AudioCommand::GateMic { gated: true }],
        "the warm mic keeps silence, so a later press cannot send the assistant as pre-roll"
    );
    talk.at(4_000)
        .server(&response_done("resp_R1", "completed"))
        .server(&output_stopped("resp_R1"));
    assert_eq!(talk.audio(), [], "its last packets may still be playing");
    talk.at(4_000 + LATE_AUDIO_GRACE_MS).tick();
    assert_eq!(talk.audio(), [AudioCommand::GateMic { gated: false }]);

    talk.at(5_000).key_down();
    assert_eq!(
        talk.audio(),
        [AudioCommand::OpenCapture { pre_roll_ms: 300 }],
        "a press while the assistant is silent changes no gate"
    );
}

#[test]
fn a_reply_that_starts_while_the_key_is_held_is_cut_at_once_and_the_user_stays_heard() {
    let mut talk = Conversation::ready_for_push_to_talk();
    reply_named(&mut talk);
    talk.sent();
    talk.audio();
    talk.events();

    // The user talks again before the reply is audible; then it starts under the held key.
    talk.at(2_500).key_down();
    assert!(talk.sent().is_empty(), "nothing to cut yet");
    assert_eq!(
        talk.audio(),
        [AudioCommand::OpenCapture { pre_roll_ms: 300 }]
    );
    talk.at(2_800).server(&output_started("resp_R1"));
    assert_eq!(
        talk.audio(),
        [AudioCommand::FlushPlayback],
        "flushed at once, and never gated: the user holding the key is still sent"
    );
    assert_eq!(talk.sent(), [cancel_response("resp_R1"), clear_output()]);
    assert!(!talk.controller.is_assistant_audible());
    assert!(talk.controller.is_capturing());
    let events = talk.events();
    assert!(
        events.ends_with(&[
            SessionEvent::OutputSpeechStart,
            SessionEvent::OutputSpeechEnd
        ]),
        "{events:?}"
    );

    talk.at(2_850)
        .server(&output_started("resp_R1"))
        .server(&response_done("resp_R1", "cancelled"));
    assert_eq!(talk.audio(), [], "the cut reply's late start gates nothing");
    talk.at(3_500).key_up().at(3_700).tick();
    assert_eq!(talk.audio(), [AudioCommand::CloseCapture]);
    assert_eq!(talk.sent(), [commit(), create_response()]);
}

#[test]
fn a_reply_that_starts_during_the_tail_gates_the_rest_of_it() {
    let mut talk = Conversation::ready_for_push_to_talk();
    reply_named(&mut talk);
    talk.at(2_500).key_down().at(3_000).key_up();
    talk.sent();
    talk.audio();

    talk.at(3_100).server(&output_started("resp_R1"));
    assert_eq!(
        talk.audio(),
        [AudioCommand::GateMic { gated: true }],
        "the key is up: the reply plays and the tail sends silence"
    );
    assert!(talk.controller.is_assistant_audible());
    assert!(talk.sent().is_empty(), "nothing is cancelled");
    talk.at(3_200).tick();
    assert_eq!(talk.audio(), [AudioCommand::CloseCapture]);
    talk.at(4_000)
        .server(&response_done("resp_R1", "completed"))
        .server(&output_stopped("resp_R1"));
    assert_eq!(talk.audio(), [], "its last packets may still be playing");
    talk.at(4_000 + LATE_AUDIO_GRACE_MS).tick();
    assert_eq!(talk.audio(), [AudioCommand::GateMic { gated: false }]);
}

#[test]
fn with_an_echo_canceller_push_to_talk_never_gates_and_a_reply_under_the_key_plays() {
    let mut config = TurnConfig::push_to_talk(SessionConfig::default());
    config.echo_canceller = true;
    let mut talk = Conversation::ready(config);
    reply_audible(&mut talk);
    talk.sent();
    assert_eq!(
        talk.audio(),
        [
            AudioCommand::OpenCapture { pre_roll_ms: 300 },
            AudioCommand::CloseCapture
        ],
        "no gate when the reply becomes audible"
    );

    talk.at(3_100).key_down();
    assert_eq!(
        talk.audio(),
        [
            AudioCommand::FlushPlayback,
            AudioCommand::OpenCapture { pre_roll_ms: 300 }
        ],
        "a key-down while audible is still a barge-in"
    );
    talk.at(3_150)
        .server(&response_done("resp_R1", "cancelled"))
        .server(&response_created("resp_R2"))
        .server(&audio_part_added("resp_R2", "item_A2"))
        .server(&output_started("resp_R2"));
    assert_eq!(talk.audio(), [], "with echo cancelling, both may talk");
    assert!(talk.controller.is_assistant_audible());
}

#[test]
fn over_websocket_a_reply_whose_audio_arrives_under_the_held_key_is_dropped() {
    let mut config = TurnConfig::push_to_talk(SessionConfig::default());
    config.transport = Transport::WebSocket;
    let mut talk = Conversation::ready(config);
    reply_named(&mut talk);
    talk.at(2_500).key_down();
    talk.sent();
    talk.audio();
    talk.events();

    talk.at(2_600)
        .server(&assistant_audio_b64("resp_R1", "item_A1", &[1_000; 480]))
        .server(&assistant_audio_b64("resp_R1", "item_A1", &[1_000; 480]));
    assert_eq!(talk.audio(), [AudioCommand::FlushPlayback]);
    assert_eq!(
        talk.sent(),
        [
            cancel_response("resp_R1"),
            json!({"type": "conversation.item.truncate", "item_id": "item_A1",
                "content_index": 0, "audio_end_ms": 0}),
        ],
        "nothing of it was played"
    );
    assert_eq!(talk.controller.stats().dropped_audio_chunks, 2);
    assert!(
        !talk
            .events()
            .iter()
            .any(|event| matches!(event, SessionEvent::PartDelta(_))),
        "no assistant audio reaches the speaker"
    );
    assert!(talk.controller.is_capturing());
}

#[test]
fn key_down_while_the_assistant_is_silent_sends_no_cancel() {
    let mut talk = Conversation::ready_for_push_to_talk();
    talk.utterance(1_000, 2_000);
    talk.at(2_300)
        .server(&response_created("resp_R1"))
        .server(&output_started("resp_R1"))
        .server(&response_done("resp_R1", "completed"))
        .server(&output_stopped("resp_R1"));
    // The reply's last packets have played out.
    talk.at(2_300 + LATE_AUDIO_GRACE_MS).tick();
    talk.sent();
    talk.audio();

    talk.at(5_000).key_down();
    assert!(
        talk.sent().is_empty(),
        "a fresh input buffer is not cleared"
    );
    assert_eq!(
        talk.audio(),
        [AudioCommand::OpenCapture { pre_roll_ms: 300 }]
    );
}

#[test]
fn a_response_create_waits_for_the_active_response_to_be_done() {
    let mut talk = Conversation::ready_for_push_to_talk();
    talk.utterance(1_000, 2_000);
    talk.at(2_300).server(&response_created("resp_R1"));
    talk.sent();
    talk.events();

    // The reply is still being generated (not audible yet) when the user talks again.
    talk.utterance(2_500, 3_000);
    assert_eq!(
        talk.sent(),
        [commit()],
        "no response.create while resp_R1 is active"
    );

    talk.at(3_400)
        .server(&response_done("resp_R1", "completed"));
    assert_eq!(talk.sent(), [create_response()]);
    assert_eq!(
        talk.events(),
        [
            user_speech_starts(None),
            speech_starts(1, Speaker::User),
            user_speech_ends(None),
            SessionEvent::TurnComplete,
        ]
    );
}

#[test]
fn a_create_that_races_an_unseen_active_response_is_asked_again_after_it() {
    let mut talk = Conversation::ready_for_push_to_talk();
    talk.utterance(1_000, 2_000);
    assert_eq!(talk.sent(), [commit(), create_response()]);
    talk.events();
    let create_id = talk.sent_id("response.create");

    let message = "Conversation already has an active response in progress: resp_X.";
    talk.at(2_250)
        .server(&server_error(
            "conversation_already_has_active_response",
            message,
            Some(&create_id),
        ))
        .server(&response_created("resp_X"));
    assert_eq!(
        talk.events(),
        [recoverable_error(
            &format!("{message} (answering response.create {create_id})"),
            "invalid_request_error",
            "conversation_already_has_active_response"
        )]
    );
    assert_eq!(talk.sent(), nothing_sent());

    talk.at(2_600).server(&response_done("resp_X", "completed"));
    assert_eq!(talk.sent(), [create_response()]);
    assert_ne!(
        talk.sent_id("response.create"),
        create_id,
        "asked again as a new event, not the refused one resent"
    );
}

#[test]
fn an_empty_commit_ends_the_utterance_untranscribed_and_withdraws_its_response() {
    let mut talk = Conversation::ready_for_push_to_talk();
    talk.utterance(1_000, 1_400);
    assert_eq!(talk.sent(), [commit(), create_response()]);
    talk.events();
    let commit_id = talk.sent_id("input_audio_buffer.commit");

    let message = "Error committing input audio buffer: buffer too small. Expected at least 100ms of audio, but buffer only has 0.00ms of audio.";
    talk.at(1_700).server(&server_error(
        "input_audio_buffer_commit_empty",
        message,
        Some(&commit_id),
    ));
    assert_eq!(
        talk.events(),
        [
            speech_ends(0, Speaker::User, None, None),
            recoverable_error(
                &format!("{message} (answering input_audio_buffer.commit {commit_id})"),
                "invalid_request_error",
                "input_audio_buffer_commit_empty"
            ),
        ]
    );
    assert_eq!(talk.hints(), [UiHint::NothingHeard]);

    // The create already went out: its response is cancelled and never shown.
    talk.at(1_750).server(&response_created("resp_R1"));
    assert_eq!(talk.sent(), [cancel_response("resp_R1")]);
    talk.at(1_760)
        .server(&audio_part_added("resp_R1", "item_A1"))
        .server(&output_started("resp_R1"))
        .server(&assistant_says("resp_R1", "item_A1", "As I said"))
        .server(&response_done("resp_R1", "cancelled"));
    assert_eq!(
        talk.events(),
        [SessionEvent::TurnComplete],
        "the empty exchange is closed, and nothing of the withdrawn reply shows"
    );
    assert_eq!(talk.sent(), nothing_sent());
}

#[test]
fn a_failed_transcription_ends_the_users_part_then_reports_it() {
    let mut talk = Conversation::ready_for_push_to_talk();
    talk.utterance(1_000, 2_000);
    talk.events();

    talk.at(2_300)
        .server(&committed("item_U1"))
        .server(&user_transcription_failed("item_U1"));
    assert_eq!(
        talk.events(),
        [
            speech_ends(0, Speaker::User, None, None),
            SessionEvent::InputTranscriptionError(Box::new(
                walkie_session::RealtimeInputTranscriptionErrorEvent {
                    message: "Audio could not be transcribed".to_owned(),
                    error_type: Some("transcription_error".to_owned()),
                    code: Some("audio_unintelligible".to_owned()),
                    item_id: Some("item_U1".to_owned()),
                    content_index: Some(0),
                }
            )),
        ]
    );
    assert_eq!(talk.sent(), [commit(), create_response()]);
}

#[test]
fn a_tool_call_is_run_locally_its_result_sent_and_the_turn_completes_only_after_the_continued_reply()
 {
    let mut talk = Conversation::ready_for_push_to_talk();
    // 2026-05-12T08:42:07Z, in UTC+2.
    talk.at(0).set_wall_clock(walkie_session::turn::WallClock {
        unix_ms: 1_778_575_327_000,
        utc_offset_minutes: 120,
    });
    talk.utterance(1_000, 2_000);
    talk.sent();
    talk.events();

    talk.at(2_300)
        .server(&committed("item_U1"))
        .server(&response_created("resp_R1"))
        .server(&function_call_added(
            "resp_R1",
            "item_F1",
            "call_T1",
            CURRENT_LOCAL_TIME_TOOL,
        ))
        .server(&function_arguments_delta(
            "resp_R1", "item_F1", "call_T1", "{}",
        ))
        .server(&function_arguments_done(
            "resp_R1",
            "item_F1",
            "call_T1",
            CURRENT_LOCAL_TIME_TOOL,
            "{}",
        ));
    let call = walkie_session::ToolCallPart {
        tool_name: CURRENT_LOCAL_TIME_TOOL.to_owned(),
        args: "{}".to_owned(),
        tool_call_id: "call_T1".to_owned(),
    };
    let result = json!({
        "local_time": "2026-05-12T10:42:09+02:00",
        "weekday": "Tuesday",
        "utc_offset_minutes": 120
    });
    assert_eq!(
        talk.events(),
        [
            part_starts(1, walkie_session::Part::tool_call(call.clone())),
            SessionEvent::PartEnd(walkie_session::PartEndEvent {
                index: walkie_session::PartIndex(1),
                part: walkie_session::Part::tool_call(call.clone()),
            }),
            SessionEvent::FunctionToolCall(Box::new(walkie_session::FunctionToolCallEvent {
                part: call,
                args_valid: Some(true),
            })),
            SessionEvent::FunctionToolResult(Box::new(walkie_session::FunctionToolResultEvent {
                result: walkie_session::ToolResult::ToolReturn(walkie_session::ToolReturnPart {
                    tool_name: CURRENT_LOCAL_TIME_TOOL.to_owned(),
                    tool_call_id: "call_T1".to_owned(),
                    content: result.clone(),
                    outcome: walkie_session::ToolOutcome::Success,
                }),
            })),
        ],
        "the time comes from the wall-clock input advanced by session time, not from a clock read"
    );
    assert_eq!(
        talk.sent(),
        [json!({"type": "conversation.item.create", "item": {
            "type": "function_call_output", "call_id": "call_T1", "output": result.to_string()}})],
        "the output goes at once; the response.create waits for resp_R1 to be done"
    );

    talk.at(2_400)
        .server(&response_done("resp_R1", "completed"));
    assert_eq!(talk.events(), [], "no TurnComplete: the tool round goes on");
    assert_eq!(talk.sent(), [create_response()]);

    talk.at(2_500)
        .server(&response_created("resp_R2"))
        .server(&assistant_says("resp_R2", "item_A2", "It is 10:42."))
        .server(&response_done("resp_R2", "completed"));
    assert_eq!(
        talk.events(),
        [
            speech_starts(2, Speaker::Assistant),
            transcript(2, Speaker::Assistant, "It is 10:42.", "It is 10:42."),
            speech_ends(2, Speaker::Assistant, Some("It is 10:42."), None),
            SessionEvent::TurnComplete,
        ]
    );
}

#[test]
fn a_call_of_an_unknown_tool_is_answered_with_an_error_and_the_reply_continues() {
    let mut talk = Conversation::ready_for_push_to_talk();
    talk.utterance(1_000, 2_000);
    talk.sent();
    talk.events();
    talk.at(2_300)
        .server(&response_created("resp_R1"))
        .server(&function_arguments_done(
            "resp_R1",
            "item_F1",
            "call_T9",
            "open_pod_bay_doors",
            "{",
        ));
    let events = talk.events();
    assert!(matches!(
        &events[2],
        SessionEvent::FunctionToolCall(call) if call.args_valid == Some(false)
    ));
    assert!(matches!(
        &events[3],
        SessionEvent::FunctionToolResult(result) if matches!(&result.result,
            walkie_session::ToolResult::ToolReturn(r) if r.outcome == walkie_session::ToolOutcome::Failed
                && r.content == json!({"error": "there is no local tool named \"open_pod_bay_doors\""}))
    ));
    assert_eq!(talk.sent()[0]["item"]["type"], "function_call_output");
}

#[test]
fn unknown_events_are_ignored_and_counted_and_the_turn_goes_on() {
    let mut talk = Conversation::ready_for_push_to_talk();
    talk.utterance(1_000, 2_000);
    talk.sent();
    talk.events();

    talk.at(2_100)
        .server(
            r#"{"type":"response.mcp_call.in_progress","event_id":"event_M1","item_id":"item_X"}"#,
        )
        .server(r#"{"type":"transcription_session.updated","event_id":"event_M2","session":{}}"#);
    assert_eq!(talk.events(), []);
    assert_eq!(talk.sent(), nothing_sent());
    assert_eq!(talk.controller.stats().unknown_events, 2);
    assert_eq!(
        talk.diagnostics(),
        [
            Diagnostic::UnknownServerEvent {
                event_type: "response.mcp_call.in_progress".to_owned()
            },
            Diagnostic::UnknownServerEvent {
                event_type: "transcription_session.updated".to_owned()
            },
        ]
    );

    talk.at(2_300)
        .server(&response_created("resp_R1"))
        .server(&assistant_says("resp_R1", "item_A1", "Still here."))
        .server(&response_done("resp_R1", "completed"));
    assert_eq!(talk.events().last(), Some(&SessionEvent::TurnComplete));
}

#[test]
fn malformed_json_is_a_recoverable_session_error_and_the_turn_goes_on() {
    let mut talk = Conversation::ready_for_push_to_talk();
    talk.utterance(1_000, 2_000);
    talk.sent();
    talk.events();

    talk.at(2_100)
        .server(r#"{"type":"response.created","response":{"id":"resp_R1","#);
    let events = talk.events();
    assert_eq!(events.len(), 1);
    let SessionEvent::SessionError(error) = &events[0] else {
        panic!("expected a session error, got {events:?}");
    };
    assert!(error.recoverable);
    assert_eq!(error.code.as_deref(), Some("malformed_json"));
    assert_eq!(
        error.error_type.as_deref(),
        Some("undecodable_server_event")
    );
    assert!(
        error
            .message
            .starts_with("malformed JSON at line 1, column"),
        "{}",
        error.message
    );
    assert_eq!(talk.sent(), nothing_sent());
    assert_eq!(talk.controller.stats().undecodable_events, 1);

    talk.at(2_200)
        .server(r#"{"type":"response.done","event_id":"e","response":"resp_R1"}"#);
    let events = talk.events();
    assert!(
        matches!(&events[..], [SessionEvent::SessionError(e)] if e.code.as_deref() == Some("schema_mismatch"))
    );

    talk.at(2_300)
        .server(&response_created("resp_R1"))
        .server(&response_done("resp_R1", "completed"));
    assert_eq!(talk.events(), [SessionEvent::TurnComplete]);
    assert!(talk.failures().is_empty(), "nothing malformed is fatal");
}

#[test]
fn harmless_and_unknown_errors_are_recoverable_and_an_expired_session_is_a_fatal_failure() {
    let mut talk = Conversation::ready_for_push_to_talk();
    talk.at(100).server(&server_error(
        "response_cancel_not_active",
        "Cancellation failed: no active response found",
        None,
    ));
    assert_eq!(
        talk.events(),
        [recoverable_error(
            "Cancellation failed: no active response found",
            "invalid_request_error",
            "response_cancel_not_active"
        )]
    );

    talk.at(150).server(&server_error(
        "a_code_from_next_year",
        "Something new went wrong",
        None,
    ));
    assert_eq!(
        talk.events(),
        [recoverable_error(
            "Something new went wrong",
            "invalid_request_error",
            "a_code_from_next_year"
        )]
    );
    assert!(talk.failures().is_empty(), "an unknown error is a notice");

    talk.at(200).server(&server_error(
        "session_expired",
        "Your session hit the maximum duration of 60 minutes.",
        None,
    ));
    assert_eq!(talk.events(), []);
    let failures = talk.failures();
    assert_eq!(failures.len(), 1);
    assert_eq!(
        failures[0].message,
        "Your session hit the maximum duration of 60 minutes."
    );
}

#[test]
fn the_sixty_minute_session_limit_is_announced_five_minutes_before_it_hits() {
    let mut talk = Conversation::ready_for_push_to_talk();
    assert_eq!(talk.controller.next_deadline_ms(), Some(55 * 60_000));

    talk.at(55 * 60_000 - 1).tick();
    assert_eq!(talk.hints(), []);
    talk.at(55 * 60_000 + 10).tick();
    assert_eq!(
        talk.hints(),
        [UiHint::SessionEndingSoon {
            remaining_ms: 5 * 60_000 - 10
        }]
    );
    assert_eq!(talk.controller.next_deadline_ms(), Some(60 * 60_000));
    talk.at(60 * 60_000).tick();
    assert_eq!(talk.hints(), [UiHint::SessionLimitReached]);
    assert_eq!(talk.controller.next_deadline_ms(), None);
}

#[test]
fn a_new_microphone_while_capturing_reopens_the_capture() {
    let mut talk = Conversation::ready_for_push_to_talk();
    talk.at(1_000).key_down();
    talk.audio();
    talk.controller.handle_input(
        TurnInput::DeviceChanged(walkie_session::DeviceDirection::Input),
        1_200,
    );
    assert_eq!(
        talk.audio(),
        [
            AudioCommand::CloseCapture,
            AudioCommand::OpenCapture { pre_roll_ms: 0 }
        ]
    );
    talk.controller.handle_input(
        TurnInput::DeviceChanged(walkie_session::DeviceDirection::Output),
        1_300,
    );
    assert_eq!(talk.audio(), []);
}

/// The controller's next output that is a decision, not a report of where the turn stands
/// (those are told as they change, and tested on their own).
fn next_decision(controller: &mut TurnController) -> Option<ControllerOutput> {
    std::iter::from_fn(|| controller.poll_output()).find(|output| {
        !matches!(
            output,
            ControllerOutput::TurnState(_) | ControllerOutput::ReplyAudio(_)
        )
    })
}

#[test]
fn nothing_is_sent_before_the_data_channel_opens_or_after_it_closes() {
    let mut controller = TurnController::new(
        TurnConfig::push_to_talk(SessionConfig::default()),
        ToolRegistry::empty(),
    );
    controller.handle_input(TurnInput::KeyDown, 0);
    assert_eq!(
        next_decision(&mut controller),
        Some(ControllerOutput::Hint(UiHint::NotReady))
    );
    assert_eq!(
        next_decision(&mut controller),
        None,
        "nothing sent before open"
    );
    controller.handle_input(TurnInput::ChannelOpened, 0);
    let Some(ControllerOutput::Send(update)) = next_decision(&mut controller) else {
        panic!("session.update on open");
    };
    assert_eq!(update.event.event_type(), "session.update");
    assert!(
        !update.to_json().contains("tools"),
        "no registry tools, no tools field"
    );
    controller.handle_input(TurnInput::KeyDown, 5);
    controller.handle_input(TurnInput::ChannelClosed, 10);
    controller.handle_input(TurnInput::KeyDown, 20);
    assert_eq!(
        std::iter::from_fn(|| next_decision(&mut controller)).collect::<Vec<_>>(),
        [
            ControllerOutput::Hint(UiHint::NotReady),
            ControllerOutput::Hint(UiHint::NotReady)
        ],
        "nothing is sent after the channel closed"
    );
}

#[test]
fn reply_audio_arriving_after_response_done_stays_in_the_replys_speech_part() {
    let mut talk = Conversation::ready_for_push_to_talk();
    talk.utterance(1_000, 2_000);
    talk.at(2_300)
        .server(&committed("item_U1"))
        .server(&response_created("resp_1"))
        .server(&audio_part_added("resp_1", "item_A1"))
        .server(&output_started("resp_1"))
        .server(&assistant_says("resp_1", "item_A1", "Hello."))
        .server(&response_done("resp_1", "completed"));
    talk.events();
    // Generation ran ahead of playback: more of the reply's audio comes after response.done.
    talk.at(2_400);
    talk.controller.handle_input(
        TurnInput::AssistantAudio(walkie_session::AudioChunk::from_samples(vec![100; 960])),
        2_400,
    );
    let late = talk.events();
    assert!(
        late.iter()
            .all(|event| !matches!(event, SessionEvent::PartStart(_))),
        "no new part for the reply's own audio: {late:?}"
    );
    talk.at(2_600).server(&output_stopped("resp_1"));
    assert_eq!(
        talk.events(),
        vec![],
        "the server stopped sending, but its last packets may still be on their way"
    );
    // The last packets come out of the jitter buffer after the server's stop.
    talk.controller.handle_input(
        TurnInput::AssistantAudio(walkie_session::AudioChunk::from_samples(vec![100; 960])),
        2_700,
    );
    let late = talk.events();
    assert!(
        late.iter()
            .all(|event| !matches!(event, SessionEvent::PartStart(_))),
        "audio after the stop is still the reply's, in its own part: {late:?}"
    );
    talk.controller
        .handle_input(TurnInput::Tick, 2_700 + LATE_AUDIO_GRACE_MS - 1);
    assert_eq!(
        talk.events(),
        vec![],
        "still within the grace after the last chunk"
    );
    assert_eq!(
        talk.controller.next_deadline_ms(),
        Some(2_700 + LATE_AUDIO_GRACE_MS)
    );
    talk.controller
        .handle_input(TurnInput::Tick, 2_700 + LATE_AUDIO_GRACE_MS);
    let end = talk.events();
    assert_eq!(end.first(), Some(&SessionEvent::OutputSpeechEnd));
    assert!(
        matches!(end.get(1), Some(SessionEvent::PartEnd(_))),
        "{end:?}"
    );
    assert_eq!(end.last(), Some(&SessionEvent::TurnComplete));
}

#[test]
fn a_server_that_never_confirms_the_session_does_not_leave_the_key_dead() {
    let mut controller = TurnController::new(
        TurnConfig::push_to_talk(SessionConfig::default()),
        ToolRegistry::empty(),
    );
    controller.handle_input(TurnInput::ChannelOpened, 1_000);
    assert!(
        matches!(
            next_decision(&mut controller),
            Some(ControllerOutput::Send(_))
        ),
        "session.update is sent"
    );
    assert_eq!(
        controller.next_deadline_ms(),
        Some(1_000 + SESSION_CONFIRM_GRACE_MS)
    );
    controller.handle_input(TurnInput::Tick, 1_000 + SESSION_CONFIRM_GRACE_MS - 1);
    assert!(!controller.is_ready(), "still waiting for session.updated");

    controller.handle_input(TurnInput::Tick, 1_000 + SESSION_CONFIRM_GRACE_MS);
    assert!(controller.is_ready(), "gone ahead without the confirmation");
    assert_eq!(
        next_decision(&mut controller),
        Some(ControllerOutput::Diagnostic(
            Diagnostic::SessionNotConfirmed {
                waited_ms: SESSION_CONFIRM_GRACE_MS
            }
        ))
    );
    assert_eq!(
        next_decision(&mut controller),
        Some(ControllerOutput::Hint(UiHint::Ready))
    );
    controller.handle_input(TurnInput::KeyDown, 7_000);
    assert!(
        std::iter::from_fn(|| next_decision(&mut controller)).any(|output| output
            == ControllerOutput::Audio(AudioCommand::OpenCapture { pre_roll_ms: 300 })),
        "the key works"
    );
}

#[test]
fn a_confirmation_in_time_leaves_no_timer_behind() {
    let mut talk = Conversation::ready_for_push_to_talk();
    assert_eq!(
        talk.controller.next_deadline_ms().filter(|at| *at < 60_000),
        None
    );
    talk.controller.handle_input(TurnInput::Tick, 1_000_000);
    assert_eq!(talk.diagnostics(), []);
}

#[test]
fn an_unknown_error_answering_a_create_is_a_notice_naming_it_and_the_next_turn_is_answered() {
    let mut talk = Conversation::ready_for_push_to_talk();
    talk.utterance(1_000, 1_400);
    assert_eq!(talk.sent(), [commit(), create_response()]);
    talk.at(1_450).server(&committed("item_U1"));
    talk.events();
    let create_id = talk.sent_id("response.create");

    talk.at(1_500).server(&server_error(
        "invalid_value",
        "Invalid value: 'x'.",
        Some(&create_id),
    ));
    assert_eq!(
        talk.events(),
        [recoverable_error(
            &format!("Invalid value: 'x'. (answering response.create {create_id})"),
            "invalid_request_error",
            "invalid_value"
        )]
    );
    assert!(talk.failures().is_empty(), "the call goes on");
    assert!(
        talk.diagnostics()
            .iter()
            .any(|diagnostic| matches!(diagnostic,
        Diagnostic::ClientEventFailed { event_id, event_type: Some("response.create"), .. }
            if *event_id == create_id))
    );

    // The refused create holds nothing back: the next turn's create goes out at once.
    talk.utterance(3_000, 3_400);
    assert_eq!(talk.sent(), [commit(), create_response()]);
}

#[test]
fn escape_while_the_key_is_held_takes_the_press_back_and_nothing_is_committed_or_answered() {
    let mut talk = Conversation::ready_for_push_to_talk();
    talk.at(1_000).key_down().at(1_400).tick();
    talk.sent();
    talk.audio();
    talk.events();

    let cancelled = talk.cancel_press_at(1_600);
    assert!(cancelled.is_some(), "the user part the press opened");
    assert_eq!(
        talk.sent(),
        [clear_input()],
        "what the provider buffered is cleared"
    );
    assert_eq!(talk.audio(), [AudioCommand::CloseCapture]);
    assert_eq!(
        talk.events(),
        [
            user_speech_ends(None),
            speech_ends(0, Speaker::User, None, None),
        ],
        "the user's message ends with no words"
    );
    assert!(!talk.controller.is_capturing());

    // The key-up after Escape, and the time a tail would have taken: nothing more.
    talk.at(1_700).key_up().at(2_500).tick();
    assert_eq!(talk.sent(), nothing_sent(), "no commit, no response.create");
    assert_eq!(talk.events(), []);

    // The next press is an ordinary turn.
    talk.utterance(3_000, 3_500);
    let sent = talk.sent();
    assert_eq!(sent.last(), Some(&create_response()), "{sent:?}");
}

#[test]
fn escape_in_the_tail_after_the_key_up_still_takes_the_press_back() {
    let mut talk = Conversation::ready_for_push_to_talk();
    talk.at(1_000).key_down().at(1_500).key_up();
    talk.sent();
    talk.audio();
    talk.events();

    assert!(talk.cancel_press_at(1_600).is_some());
    assert_eq!(talk.sent(), [clear_input()]);
    assert_eq!(talk.audio(), [AudioCommand::CloseCapture]);
    assert_eq!(talk.events(), [speech_ends(0, Speaker::User, None, None)]);
    talk.at(2_000).tick();
    assert_eq!(talk.sent(), nothing_sent(), "the tail commits nothing");
}

#[test]
fn escape_with_no_press_under_way_does_nothing() {
    let mut talk = Conversation::ready_for_push_to_talk();
    talk.utterance(1_000, 1_500);
    talk.sent();
    talk.audio();
    talk.events();
    assert_eq!(talk.cancel_press_at(2_000), None);
    assert_eq!(talk.sent(), nothing_sent());
    assert_eq!(talk.audio(), []);
    assert_eq!(talk.events(), []);
}

#[test]
fn every_response_done_passes_on_what_it_was_billed_a_cancelled_one_too_and_one_without_usage_nothing()
 {
    let mut talk = Conversation::ready_for_push_to_talk();
    talk.utterance(1_000, 2_000);
    let billed = |response_id: &str, status: &str, output_tokens: u64| {
        let mut done: Value = serde_json::from_str(&response_done(response_id, status)).unwrap();
        done["response"]["usage"] = json!({"total_tokens": 30 + output_tokens,
            "input_tokens": 30, "output_tokens": output_tokens,
            "output_token_details": {"text_tokens": 2, "audio_tokens": output_tokens - 2}});
        done.to_string()
    };
    talk.at(2_300)
        .server(&committed("item_U1"))
        .server(&response_created("resp_R1"))
        .server(&billed("resp_R1", "completed", 42));
    talk.at(3_000)
        .server(&response_created("resp_R2"))
        .server(&billed("resp_R2", "cancelled", 7))
        .server(&response_created("resp_R3"))
        .server(&response_done("resp_R3", "completed"));
    let billed = talk.billed();
    let output_tokens: Vec<Option<u64>> = billed.iter().map(|usage| usage.output_tokens).collect();
    assert_eq!(output_tokens, [Some(42), Some(7)]);
    assert_eq!(
        billed[0]
            .output_token_details
            .as_ref()
            .and_then(|details| details.audio_tokens),
        Some(40)
    );
}

#[test]
fn a_transcription_passes_on_what_it_was_billed_by_duration_or_tokens_and_a_malformed_usage_nothing()
 {
    let mut talk = Conversation::ready_for_push_to_talk();
    talk.utterance(1_000, 2_000);
    let completed = |item_id: &str, usage: Value| {
        json!({"type": "conversation.item.input_audio_transcription.completed",
            "event_id": "event_T", "item_id": item_id, "content_index": 0,
            "transcript": "hello", "usage": usage})
        .to_string()
    };
    talk.at(2_300)
        .server(&committed("item_U1"))
        .server(&completed(
            "item_U1",
            json!({"type": "duration", "seconds": 1.25}),
        ))
        .server(&completed(
            "item_U1",
            json!({"type": "tokens", "input_tokens": 12,
            "output_tokens": 3, "total_tokens": 15,
            "input_token_details": {"audio_tokens": 12}}),
        ))
        .server(&completed(
            "item_U1",
            json!({"type": "duration", "seconds": -4}),
        ))
        .server(&completed(
            "item_U1",
            json!({"type": "minutes", "minutes": 2}),
        ));
    assert_eq!(
        talk.transcribed(),
        [
            walkie_openai::TranscriptionUsage::Duration { seconds: 1.25 },
            walkie_openai::TranscriptionUsage::Tokens {
                input_tokens: 12,
                output_tokens: 3,
                total_tokens: 15,
                input_token_details: Some(walkie_openai::TranscriptionTokenDetails {
                    audio_tokens: Some(12),
                    text_tokens: None,
                }),
            },
        ]
    );
}

#[test]
fn the_providers_rate_limits_are_passed_on_as_they_come() {
    let mut talk = Conversation::ready_for_push_to_talk();
    talk.at(1_000).server(
        &json!({"type": "rate_limits.updated", "event_id": "event_L", "rate_limits": [
            {"name": "requests", "limit": 100, "remaining": 4, "reset_seconds": 12.0},
            {"name": "tokens"}]})
        .to_string(),
    );
    let limits = talk.rate_limits();
    assert_eq!(limits.len(), 1);
    assert_eq!(limits[0][0].remaining, Some(4));
    assert_eq!(limits[0][1].limit, None, "absent stays absent");
}

/// The speech parts among `events`: (started, ended).
fn speech_parts(events: &[SessionEvent]) -> (usize, usize) {
    let started = events
        .iter()
        .filter(|event| matches!(event, SessionEvent::PartStart(_)))
        .count();
    let ended = events
        .iter()
        .filter(|event| matches!(event, SessionEvent::PartEnd(_)))
        .count();
    (started, ended)
}

#[test]
fn reply_audio_that_outruns_its_start_event_is_held_then_played_whole_in_the_replys_one_part() {
    let mut talk = Conversation::ready_for_push_to_talk();
    talk.utterance(1_000, 2_000);
    talk.at(2_300)
        .server(&committed("item_U1"))
        .server(&response_created("resp_1"));
    talk.events();
    // A lost SCTP packet holds back content_part.added and output_audio_buffer.started while
    // the reply's RTP flows on.
    for at_ms in [2_320, 2_340, 2_360] {
        talk.controller.handle_input(
            TurnInput::AssistantAudio(walkie_session::AudioChunk::from_samples(vec![1_000; 960])),
            at_ms,
        );
    }
    let early = talk.events();
    assert_eq!(
        speech_parts(&early),
        (0, 0),
        "no message for audio nobody placed yet: {early:?}"
    );
    assert_eq!(talk.controller.stats().early_audio_chunks, 3);
    talk.at(2_400)
        .server(&audio_part_added("resp_1", "item_A1"))
        .server(&output_started("resp_1"));
    let started = talk.stamped_events();
    let speech_start = started
        .iter()
        .position(|(_, event)| *event == SessionEvent::OutputSpeechStart)
        .expect("the reply starts");
    let deltas: Vec<_> = started
        .iter()
        .filter(|(_, event)| matches!(event, SessionEvent::PartDelta(_)))
        .collect();
    assert_eq!(
        deltas.len(),
        3,
        "the held audio, in order, once: {started:?}"
    );
    assert!(
        started
            .iter()
            .position(|(_, event)| matches!(event, SessionEvent::PartStart(_)))
            .is_some_and(|part| part > speech_start),
        "its part opens after the reply's start: {started:?}"
    );
    talk.controller.handle_input(
        TurnInput::AssistantAudio(walkie_session::AudioChunk::from_samples(vec![1_000; 960])),
        2_420,
    );
    talk.at(2_500)
        .server(&assistant_says("resp_1", "item_A1", "Hello."))
        .server(&response_done("resp_1", "completed"))
        .server(&output_stopped("resp_1"));
    talk.controller
        .handle_input(TurnInput::Tick, 2_500 + LATE_AUDIO_GRACE_MS);
    let rest = talk.events();
    assert_eq!(
        speech_parts(&rest),
        (0, 1),
        "the rest of the reply stays in its one part: {rest:?}"
    );
}

#[test]
fn silence_between_replies_opens_no_message_and_does_not_keep_a_stopped_reply_going() {
    let mut talk = Conversation::ready_for_push_to_talk();
    // A server without DTX sends silence all the time.
    let silence = || walkie_session::AudioChunk::from_samples(vec![3; 960]);
    talk.controller
        .handle_input(TurnInput::AssistantAudio(silence()), 500);
    assert_eq!(speech_parts(&talk.events()), (0, 0), "nobody spoke");
    talk.utterance(1_000, 2_000);
    talk.at(2_300)
        .server(&committed("item_U1"))
        .server(&response_created("resp_1"))
        .server(&audio_part_added("resp_1", "item_A1"))
        .server(&output_started("resp_1"))
        .server(&assistant_says("resp_1", "item_A1", "Hello."))
        .server(&response_done("resp_1", "completed"))
        .server(&output_stopped("resp_1"));
    talk.events();
    // Silence keeps coming after the reply's stop: the reply ends after the grace all the same.
    for at_ms in (2_320..2_300 + LATE_AUDIO_GRACE_MS + 200).step_by(20) {
        talk.controller
            .handle_input(TurnInput::AssistantAudio(silence()), at_ms);
        talk.controller.handle_input(TurnInput::Tick, at_ms);
    }
    let end = talk.events();
    assert!(
        end.contains(&SessionEvent::TurnComplete),
        "the reply ended though silence went on: {end:?}"
    );
    talk.controller
        .handle_input(TurnInput::AssistantAudio(silence()), 3_000);
    assert_eq!(
        speech_parts(&talk.events()),
        (0, 0),
        "silence after it opens no message"
    );
    assert!(talk.controller.stats().silent_audio_chunks >= 2);
}

#[test]
fn held_audio_whose_start_never_comes_plays_as_the_active_responses_after_half_a_second() {
    let mut talk = Conversation::ready_for_push_to_talk();
    talk.utterance(1_000, 2_000);
    talk.at(2_300)
        .server(&committed("item_U1"))
        .server(&response_created("resp_1"));
    talk.events();
    talk.controller.handle_input(
        TurnInput::AssistantAudio(walkie_session::AudioChunk::from_samples(vec![1_000; 960])),
        2_320,
    );
    assert_eq!(talk.controller.next_deadline_ms(), Some(2_820));
    talk.controller.handle_input(TurnInput::Tick, 2_820);
    let events = talk.events();
    assert!(
        events.contains(&SessionEvent::OutputSpeechStart),
        "the reply is taken to have started: {events:?}"
    );
    assert_eq!(
        speech_parts(&events).0,
        1,
        "and its audio is heard: {events:?}"
    );
}

#[test]
fn a_reply_whose_start_comes_after_the_hold_keeps_its_audio_and_words_in_one_message() {
    let mut talk = Conversation::ready_for_push_to_talk();
    talk.utterance(1_000, 2_000);
    talk.at(2_300)
        .server(&committed("item_U1"))
        .server(&response_created("resp_1"))
        .server(&audio_part_added("resp_1", "item_A1"))
        .server(&output_started("resp_1"))
        .server(&assistant_says("resp_1", "item_A1", "One."))
        .server(&response_done("resp_1", "completed"))
        .server(&output_stopped("resp_1"));
    talk.controller
        .handle_input(TurnInput::Tick, 2_300 + LATE_AUDIO_GRACE_MS);
    talk.utterance(4_000, 5_000);
    talk.at(5_300)
        .server(&committed("item_U2"))
        .server(&response_created("resp_2"));
    talk.events();
    // The second reply's audio outruns its events by more than the hold: it is played as the
    // active response's before anything names its item.
    talk.controller.handle_input(
        TurnInput::AssistantAudio(walkie_session::AudioChunk::from_samples(vec![1_000; 960])),
        5_320,
    );
    talk.controller.handle_input(
        TurnInput::Tick,
        5_320 + walkie_session::turn::EARLY_AUDIO_MAX_MS,
    );
    talk.at(6_000)
        .server(&audio_part_added("resp_2", "item_A2"))
        .server(&output_started("resp_2"))
        .server(&assistant_says("resp_2", "item_A2", "Two."));
    talk.controller.handle_input(
        TurnInput::AssistantAudio(walkie_session::AudioChunk::from_samples(vec![1_000; 960])),
        6_020,
    );
    let events = talk.events();
    assert_eq!(
        speech_parts(&events),
        (1, 0),
        "one message for the second reply, its early audio, its words and the rest: {events:?}"
    );
}
