//! The conversation machine in virtual time: what the user reads, what the speaker plays, what
//! the transcript and the store get, and in which order.

mod support;
#[path = "../../session/tests/turn_support/mod.rs"]
mod turn_support;

use support::*;
use turn_support::{
    assistant_says, audio_part_added, committed, output_started, output_stopped, response_created,
    response_done, server_error, server_vad,
};
use walkie_conversation::{
    ConnectionState, DeviceDirection, EngineInput, Input, LevelReading, METER_FLOOR_DBFS,
    METER_STEP_DB, Output, Record, StatusAction, StatusEvent, TransportInput, UnixMs, sentence,
};
use walkie_openai::SessionConfig;
use walkie_session::AudioChunk;
use walkie_session::turn::{
    AudioCommand, LATE_AUDIO_GRACE_MS, PressMode, RESPONSE_DONE_WATCHDOG_MS, TurnConfig, TurnMode,
    UserMessage,
};

use ConnectionState::*;

fn status(state: ConnectionState, detail: &str) -> Option<(ConnectionState, String)> {
    Some((state, detail.to_owned()))
}

/// Asserts that `outputs` open the microphone and say that hands-free listens.
fn listens_hands_free(outputs: &[Output]) {
    assert_eq!(
        audio_commands(outputs),
        [AudioCommand::OpenCapture { pre_roll_ms: 0 }]
    );
    assert_eq!(
        last_status(outputs),
        status(
            Listening,
            "Listening (Test provider): just talk; Walkie answers when you pause."
        )
    );
}

/// A push-to-talk turn whose reply (resp_R1, item_A1) is audible, outputs read.
fn reply_audible() -> Call {
    let mut call = Call::ready();
    call.utterance(1_000, 2_000);
    call.server(2_300, &committed("item_U1"));
    call.server(2_310, &response_created("resp_R1"));
    call.server(2_320, &audio_part_added("resp_R1", "item_A1"));
    call.server(2_330, &output_started("resp_R1"));
    call.server(
        2_340,
        &assistant_says("resp_R1", "item_A1", "Once upon a time"),
    );
    call
}

#[test]
fn the_status_line_follows_a_push_to_talk_turn_from_setting_up_to_speaking_and_back() {
    let mut call = Call::placed();
    assert_eq!(
        last_status(&call.input(0, Input::Transport(TransportInput::Open))),
        status(Connecting, "Setting up the session with Test provider…")
    );
    assert_eq!(
        last_status(&call.server(50, &turn_support::session_updated_with_transcription())),
        status(
            Ready,
            "Ready (Test provider): hold Space or the button to talk."
        )
    );
    assert_eq!(
        last_status(&call.press(1_000)),
        status(Listening, "Listening… release to send.")
    );
    assert_eq!(
        last_status(&call.release(2_000)),
        None,
        "the tail still listens"
    );
    assert_eq!(
        last_status(&call.tick(2_000 + call.config.tail_ms)),
        status(
            Ready,
            "Ready (Test provider): hold Space or the button to talk."
        )
    );
    call.server(2_300, &committed("item_U1"));
    assert_eq!(
        last_status(&call.server(2_310, &response_created("resp_R1"))),
        status(Thinking, "Thinking…")
    );
    call.server(2_320, &audio_part_added("resp_R1", "item_A1"));
    assert_eq!(
        last_status(&call.server(2_330, &output_started("resp_R1"))),
        status(Speaking, "Speaking… press to interrupt.")
    );
    assert_eq!(
        last_status(&call.server(2_340, &assistant_says("resp_R1", "item_A1", "Hi."))),
        None,
        "only changes are put out"
    );
    call.server(3_000, &response_done("resp_R1", "completed"));
    call.server(3_100, &output_stopped("resp_R1"));
    assert_eq!(
        last_status(&call.tick(3_100 + LATE_AUDIO_GRACE_MS)),
        status(
            Ready,
            "Ready (Test provider): hold Space or the button to talk."
        )
    );
}

#[test]
fn hands_free_listens_all_the_time_and_says_so() {
    let mut config = TurnConfig::hands_free(SessionConfig::default(), server_vad(None));
    config.echo_canceller = true;
    let mut call = Call::placed_with(config);
    let outputs = call.input(0, Input::Transport(TransportInput::Open));
    assert_eq!(
        audio_commands(&outputs),
        [AudioCommand::CancelEcho { on: true }],
        "the call's engine runs its echo canceller from the start"
    );
    let outputs = call.server(50, &turn_support::session_updated_with_transcription());
    listens_hands_free(&outputs);
    assert_eq!(
        sentence::default(Ready, PROVIDER, None),
        "Ready (Test provider): just talk."
    );
}

#[test]
fn in_toggle_mode_the_status_says_press_never_hold_or_release() {
    let toggle = Some(PressMode::Toggle);
    assert_eq!(
        sentence::default(Ready, PROVIDER, toggle),
        "Ready (Test provider): press Space or tap the button to talk."
    );
    assert_eq!(
        sentence::default(Listening, PROVIDER, toggle),
        "Listening… press again to send."
    );
    let hold = Some(PressMode::Hold);
    assert_eq!(
        sentence::default(Listening, PROVIDER, hold),
        "Listening… release to send."
    );
}

#[test]
fn a_toggle_from_outside_presses_the_key_when_it_is_up_and_releases_it_when_it_is_down() {
    let mut call = Call::ready();
    assert_eq!(
        last_status(&call.input(1_000, Input::TogglePress)),
        status(Listening, "Listening… release to send.")
    );
    let mut outputs = call.input(2_000, Input::TogglePress);
    outputs.extend(call.tick(2_000 + call.config.tail_ms));
    assert!(
        sent_types(&outputs).contains(&"input_audio_buffer.commit"),
        "the second toggle sent the turn: {:?}",
        sent_types(&outputs)
    );

    // In toggle mode a press does both already: the toggle is a press.
    let mut config = TurnConfig::push_to_talk(SessionConfig::default());
    config.mode = TurnMode::PushToTalk(PressMode::Toggle);
    let mut call = Call::ready_with(config);
    assert_eq!(
        last_status(&call.input(1_000, Input::TogglePress)),
        status(Listening, "Listening… press again to send.")
    );
    let mut outputs = call.input(2_000, Input::TogglePress);
    outputs.extend(call.tick(2_000 + call.config.tail_ms));
    assert!(sent_types(&outputs).contains(&"input_audio_buffer.commit"));
}

#[test]
fn the_statuses_around_a_call_name_the_provider_and_the_reason() {
    assert_eq!(
        StatusEvent::connecting(PROVIDER),
        StatusEvent::new(Connecting, "Connecting to Test provider…").cancellable(),
        "Cancel stops the call being placed"
    );
    assert_eq!(
        StatusEvent::press_while_not_connected(),
        StatusEvent::new(NotConnected, "Not connected: press Connect before talking.")
    );
    assert_eq!(
        StatusEvent::stopped(),
        StatusEvent::new(
            Error,
            "Not connected: the conversation stopped unexpectedly. Press Connect to try again."
        )
        .with_action(StatusAction::TryAgain)
    );
    assert_eq!(
        StatusEvent::needs_settings("no API key for OpenAI: add one in Settings"),
        StatusEvent::new(
            Error,
            "Not connected: no API key for OpenAI: add one in Settings."
        )
        .with_action(StatusAction::OpenSettings),
        "calling again would fail the same way: no \"Press Connect\""
    );
}

#[test]
fn a_dropped_link_says_reconnecting_until_it_is_back() {
    let mut call = Call::ready();
    assert_eq!(
        last_status(&call.input(100, Input::Transport(TransportInput::Disconnected))),
        status(
            Reconnecting,
            "The connection dropped; trying to get it back…"
        )
    );
    assert_eq!(
        last_status(&call.input(200, Input::Transport(TransportInput::Reconnected))),
        status(
            Ready,
            "Ready (Test provider): hold Space or the button to talk."
        )
    );
}

#[test]
fn a_closed_call_stops_capture_says_why_and_is_hung_up_to_be_dialled_again() {
    let mut call = Call::ready();
    call.press(1_000);
    let outputs = call.input(
        1_100,
        Input::Transport(TransportInput::Closed(
            "the provider closed the call".to_owned(),
        )),
    );
    assert_eq!(
        audio_commands(&outputs),
        [AudioCommand::CloseCapture],
        "capture stops with the call"
    );
    assert_eq!(
        last_status(&outputs),
        status(
            Reconnecting,
            "Reconnecting… (attempt 1 of 6): the provider closed the call."
        )
    );
    assert!(names(&outputs).contains(&"hang-up-call".to_owned()));
    assert!(!names(&outputs).contains(&"ended".to_owned()));
    assert!(
        sent_types(&call.press(1_150)).is_empty(),
        "no call to send to"
    );
}

#[test]
fn a_failed_send_drops_the_call_with_the_transports_words() {
    let mut call = Call::ready();
    let outputs = call.input(
        100,
        Input::Transport(TransportInput::SendFailed(
            "the data channel is closed".to_owned(),
        )),
    );
    assert_eq!(
        last_status(&outputs),
        status(
            Reconnecting,
            "Reconnecting… (attempt 1 of 6): could not send to the provider: the data channel is closed."
        )
    );
}

#[test]
fn a_press_before_the_session_is_set_up_keeps_saying_it_is_being_set_up() {
    let mut call = Call::placed();
    call.input(0, Input::Transport(TransportInput::Open));
    let outputs = call.press(10);
    assert_eq!(sent_types(&outputs), Vec::<&str>::new());
    assert_eq!(last_status(&outputs), None, "still setting up");
    assert_eq!(
        sentence::hint(&walkie_session::turn::UiHint::NotReady).as_deref(),
        Some("Still setting up: try again in a moment.")
    );
}

#[test]
fn a_press_too_short_says_so_until_the_next_press() {
    let mut call = Call::ready();
    call.press(1_000);
    let outputs = call.release(1_050);
    assert_eq!(
        last_status(&outputs),
        status(
            Ready,
            "Too short to send: hold the key while you speak (at least 150 ms)."
        )
    );
    assert_eq!(last_status(&call.tick(5_000)), None, "the hint stays");
    assert_eq!(
        last_status(&call.press(6_000)),
        status(Listening, "Listening… release to send."),
        "news of its own replaces it"
    );
}

#[test]
fn a_key_held_too_long_is_released_and_says_so_once_its_tail_is_sent() {
    let mut call = Call::ready();
    call.press(1_000);
    let released_at_ms = 1_000 + call.config.max_press_ms;
    let outputs = call.tick(released_at_ms + call.config.tail_ms);
    assert_eq!(
        sent_types(&outputs),
        ["input_audio_buffer.commit", "response.create"]
    );
    assert_eq!(
        last_status(&outputs),
        status(
            Ready,
            "The key was held too long, so Walkie sent what it had."
        )
    );
}

#[test]
fn an_empty_commit_says_nothing_was_heard() {
    let mut call = Call::ready();
    let outputs = call.utterance(1_000, 2_000);
    let commit_id = sent_id(&outputs, "input_audio_buffer.commit");
    let outputs = call.server(
        2_300,
        &server_error(
            "input_audio_buffer_commit_empty",
            "buffer too small",
            Some(&commit_id),
        ),
    );
    assert_eq!(
        last_status(&outputs),
        status(Ready, "Nothing was heard: no audio reached the provider.")
    );
}

#[test]
fn device_changes_and_an_unsaved_conversation_are_told_in_the_status_line() {
    let mut call = Call::ready();
    let cases = [
        (
            Input::Engine(EngineInput::DeviceFellBack {
                direction: DeviceDirection::Output,
                using: "Built-in Audio".to_owned(),
                reason: "it was unplugged".to_owned(),
            }),
            "The chosen speaker is not available (it was unplugged); using Built-in Audio.",
        ),
        (
            Input::Engine(EngineInput::DeviceChanged {
                direction: DeviceDirection::Input,
                using: "USB Mic".to_owned(),
            }),
            "Now using USB Mic as the microphone.",
        ),
        (
            Input::Engine(EngineInput::DeviceUnavailable {
                direction: DeviceDirection::Output,
                reason: "the sound server is gone".to_owned(),
            }),
            "No speaker can be opened: the sound server is gone.",
        ),
        (
            Input::NotSaving {
                reason: "the folder is read-only".to_owned(),
                details: None,
            },
            "Not saving: the folder is read-only.",
        ),
    ];
    for (at_ms, (input, sentence)) in (100..).step_by(100).zip(cases) {
        assert_eq!(
            last_status(&call.input(at_ms, input)),
            status(Ready, sentence)
        );
    }
}

#[test]
fn not_saving_stays_in_the_ready_status_with_settings_as_its_action_until_saving_resumes() {
    let mut call = Call::ready();
    let reason = "the disk is full. Free some space, or choose another data folder in Settings";
    let details = "could not write /data/journal.jsonl: No space left on device (os error 28)";
    let outputs = call.input(
        100,
        Input::NotSaving {
            reason: reason.to_owned(),
            details: Some(details.to_owned()),
        },
    );
    let shown = statuses(&outputs);
    let last = shown.last().expect("a status");
    assert_eq!(
        (
            last.state,
            last.detail.as_str(),
            last.action,
            last.details.as_deref()
        ),
        (
            Ready,
            format!("Not saving: {reason}.").as_str(),
            Some(StatusAction::OpenSettings),
            Some(details)
        )
    );
    // A turn shows its own statuses; back to Ready, the problem is said again.
    let outputs = call.utterance(1_000, 1_500);
    assert_eq!(last_status(&outputs).map(|(state, _)| state), Some(Ready));
    let back = statuses(&outputs);
    assert!(
        back.last()
            .is_some_and(|status| status.action == Some(StatusAction::OpenSettings)),
        "{back:?}"
    );
    let outputs = call.input(3_000, Input::SavingResumed { lost_audio_ms: 0 });
    assert_eq!(
        last_status(&outputs),
        status(Ready, "Saving again: the conversation so far is on disk.")
    );
    assert_eq!(
        statuses(&outputs).last().and_then(|status| status.action),
        None
    );
}

#[test]
fn saving_that_resumes_after_audio_was_dropped_says_how_much_audio_is_missing() {
    let mut call = Call::ready();
    call.input(
        100,
        Input::NotSaving {
            reason: "the disk is full. Free some space".to_owned(),
            details: None,
        },
    );
    let outputs = call.input(
        3_000,
        Input::SavingResumed {
            lost_audio_ms: 42_100,
        },
    );
    assert_eq!(
        last_status(&outputs),
        status(
            Ready,
            "Saving again: the conversation so far is on disk, but for 43 s of audio Walkie \
             could not hold while the disk was full."
        )
    );
}

#[test]
fn a_new_microphone_while_capturing_reopens_capture() {
    let mut call = Call::ready();
    call.press(1_000);
    let outputs = call.input(
        1_100,
        Input::Engine(EngineInput::DeviceChanged {
            direction: DeviceDirection::Input,
            using: "USB Mic".to_owned(),
        }),
    );
    assert_eq!(
        audio_commands(&outputs),
        [
            AudioCommand::CloseCapture,
            AudioCommand::OpenCapture { pre_roll_ms: 0 }
        ]
    );
}

#[test]
fn a_barge_in_flushes_the_speaker_before_any_data_channel_text_leaves() {
    let mut call = reply_audible();
    let outputs = call.press(3_000);
    let names = names(&outputs);
    let flush = names
        .iter()
        .position(|name| name == "audio:FlushPlayback")
        .expect("the press flushes playback");
    let first_send = names
        .iter()
        .position(|name| name.starts_with("send:"))
        .expect("the press tells the server");
    assert!(flush < first_send, "{names:?}");
    assert_eq!(
        sent_types(&outputs),
        ["response.cancel", "output_audio_buffer.clear"],
        "the turn before was committed: its input buffer holds nothing to clear"
    );
}

#[test]
fn a_cut_reply_is_marked_interrupted_right_after_its_transcript_ends() {
    let mut call = reply_audible();
    call.input(
        2_400,
        Input::Engine(EngineInput::PlayedProgress {
            item_id: "item_A1".to_owned(),
            played_ms: 600,
        }),
    );
    let outputs = call.press(3_000);
    assert!(
        !names(&outputs)
            .iter()
            .any(|name| name.starts_with("interrupted")),
        "the reply's part is still open"
    );
    let outputs = call.server(3_100, &response_done("resp_R1", "cancelled"));
    let names = names(&outputs);
    let end = names
        .iter()
        .position(|name| name == "transcript:TEXT_MESSAGE_END:assistant-1")
        .unwrap_or_else(|| panic!("the reply's message ends: {names:?}"));
    assert_eq!(
        names.get(end + 1).map(String::as_str),
        Some("interrupted:assistant-1")
    );
    assert_eq!(
        names
            .iter()
            .filter(|name| name.starts_with("interrupted"))
            .count(),
        1
    );
}

#[test]
fn escape_while_listening_takes_the_recording_back_and_marks_its_message_not_sent() {
    let mut call = Call::ready();
    call.press(1_000);
    call.tick(1_200);
    let outputs = call.input(1_500, Input::CancelPress);
    let shown = names(&outputs);
    let end = shown
        .iter()
        .position(|name| name == "transcript:TEXT_MESSAGE_END:user-1")
        .unwrap_or_else(|| panic!("the user's message ends: {shown:?}"));
    let cancelled = shown.iter().position(|name| name == "cancelled:user-1");
    assert!(
        cancelled.is_some_and(|cancelled| cancelled > end),
        "marked not sent after its END: {shown:?}"
    );
    assert_eq!(sent_types(&outputs), ["input_audio_buffer.clear"]);
    assert_eq!(
        last_status(&outputs),
        status(
            ConnectionState::Ready,
            "Not sent: the recording was cancelled."
        )
    );
    // The key-up and the time a tail takes send nothing more.
    let mut later = call.release(1_600);
    later.extend(call.tick(2_500));
    assert_eq!(sent_types(&later), Vec::<&str>::new());
    // Escape with nothing recorded changes nothing.
    assert!(
        names(&call.input(3_000, Input::CancelPress)).is_empty(),
        "nothing under way"
    );
}

#[test]
fn played_audio_is_counted_against_the_item_of_each_reply() {
    let mut call = reply_audible();
    call.speaker.played();
    call.assistant_audio(2_400);
    call.assistant_audio(2_420);
    assert_eq!(call.speaker.played(), ["item_A1", "item_A1"]);
    call.server(3_000, &response_done("resp_R1", "completed"));
    call.server(3_100, &output_stopped("resp_R1"));
    call.tick(3_100 + LATE_AUDIO_GRACE_MS);

    call.utterance(5_000, 6_000);
    call.server(6_300, &committed("item_U2"));
    call.server(6_310, &response_created("resp_R2"));
    call.server(6_320, &audio_part_added("resp_R2", "item_A2"));
    call.server(6_330, &output_started("resp_R2"));
    call.assistant_audio(6_400);
    call.assistant_audio(6_420);
    assert_eq!(call.speaker.played(), ["item_A2", "item_A2"]);
}

#[test]
fn over_webrtc_the_machine_never_plays_audio_itself_the_engine_is_told_what_to_play() {
    let mut call = reply_audible();
    let outputs = [call.assistant_audio(2_400), call.assistant_audio(2_420)].concat();
    assert!(
        !outputs
            .iter()
            .any(|output| matches!(output, Output::Play(_) | Output::BeginItem(_))),
        "decoded audio is played by the engine, not sent back to it: {:?}",
        names(&outputs)
    );
    assert_eq!(call.speaker.played().len(), 2, "and it is heard");
}

#[test]
fn switching_to_hands_free_keeps_the_call_opens_the_microphone_and_runs_the_echo_canceller() {
    let mut call = Call::ready();
    let outputs = call.set_mode(1_000, TurnMode::HandsFree(server_vad(None)));
    assert_eq!(sent_types(&outputs), ["session.update"]);
    assert_eq!(
        audio_commands(&outputs),
        [
            AudioCommand::OpenCapture { pre_roll_ms: 0 },
            AudioCommand::CancelEcho { on: true }
        ],
        "the microphone opens, and the echo canceller runs while a reply may be talked over"
    );
    assert_eq!(
        last_status(&outputs),
        status(
            Listening,
            "Listening (Test provider): just talk; Walkie answers when you pause."
        )
    );
    let outputs = call.set_mode(2_000, TurnMode::PushToTalk(PressMode::Hold));
    assert_eq!(sent_types(&outputs), ["session.update"]);
    assert_eq!(
        audio_commands(&outputs),
        [
            AudioCommand::CloseCapture,
            AudioCommand::CancelEcho { on: false }
        ],
        "push-to-talk pauses the echo canceller"
    );
    assert_eq!(
        last_status(&outputs),
        status(
            Ready,
            "Ready (Test provider): hold Space or the button to talk."
        )
    );
}

#[test]
fn the_store_gets_each_session_event_with_the_transcript_events_the_webview_got() {
    let mut call = reply_audible();
    call.press(3_000);
    call.server(3_100, &response_done("resp_R1", "cancelled"));
    let mut outputs = call.release(3_500);
    outputs.extend(call.tick(3_500 + call.config.tail_ms));
    let shown = transcript(&outputs);
    let recorded: Vec<serde_json::Value> = outputs
        .iter()
        .filter_map(|output| match output {
            Output::Record(Record::Event { transcript, .. }) => Some(transcript.clone()),
            _ => None,
        })
        .flatten()
        .map(|event| serde_json::to_value(event).expect("AG-UI events serialise"))
        .collect();
    assert!(!shown.is_empty());
    assert_eq!(recorded, shown);
}

#[test]
fn sent_audio_goes_to_the_store_and_levels_to_the_meters() {
    let mut call = Call::ready();
    let outputs = call.input(
        100,
        Input::Engine(EngineInput::SentAudio(AudioChunk::from_samples(vec![
            1;
            960
        ]))),
    );
    assert!(matches!(
        outputs.as_slice(),
        [Output::Record(Record::UserAudio { unix_ms, .. })] if *unix_ms == UnixMs::of_clock(100)
    ));
    let level = LevelReading {
        rms_dbfs: -20.0,
        peak_dbfs: -6.0,
    };
    let outputs = call.input(
        120,
        Input::Engine(EngineInput::Level {
            direction: DeviceDirection::Input,
            level,
        }),
    );
    assert!(matches!(
        outputs.as_slice(),
        [Output::Level {
            direction: DeviceDirection::Input,
            ..
        }]
    ));
}

#[test]
fn a_meter_is_told_only_the_readings_that_move_it_by_a_step() {
    let mut call = Call::ready();
    let told = |call: &mut Call, now_ms: u64, direction: DeviceDirection, rms_dbfs: f32| {
        let outputs = call.input(
            now_ms,
            Input::Engine(EngineInput::Level {
                direction,
                level: LevelReading {
                    rms_dbfs,
                    peak_dbfs: rms_dbfs + 6.0,
                },
            }),
        );
        outputs
            .iter()
            .any(|output| matches!(output, Output::Level { direction: shown, .. } if *shown == direction))
    };
    use DeviceDirection::{Input as Mic, Output as Speaker};
    assert!(
        told(&mut call, 100, Mic, -30.0),
        "the first reading is shown"
    );
    assert!(
        !told(&mut call, 133, Mic, -30.4),
        "less than a step moves nothing"
    );
    assert!(
        told(&mut call, 166, Mic, -30.0 - METER_STEP_DB),
        "a step moves the meter"
    );
    assert!(
        told(&mut call, 200, Speaker, -30.0),
        "each meter keeps its own step"
    );
    assert!(told(&mut call, 233, Mic, -90.0), "silence is shown");
    assert!(
        !told(&mut call, 266, Mic, METER_FLOOR_DBFS - 20.0),
        "below the meter's floor looks the same as the floor"
    );
    assert!(
        !told(&mut call, 300, Mic, f32::NAN),
        "a reading without a level reads as silence"
    );
}

#[test]
fn the_speaker_meter_falls_to_its_floor_when_a_barge_in_flushes_the_reply_and_when_it_drains() {
    let speaker_readings = |outputs: &[Output]| -> Vec<f32> {
        outputs
            .iter()
            .filter_map(|output| match output {
                Output::Level {
                    direction: DeviceDirection::Output,
                    level,
                } => Some(level.rms_dbfs),
                _ => None,
            })
            .collect()
    };
    let reply_loud = |call: &mut Call, now_ms: u64| {
        let outputs = call.input(
            now_ms,
            Input::Engine(EngineInput::Level {
                direction: DeviceDirection::Output,
                level: LevelReading {
                    rms_dbfs: -12.0,
                    peak_dbfs: -3.0,
                },
            }),
        );
        assert_eq!(speaker_readings(&outputs), [-12.0]);
    };

    let mut call = reply_audible();
    reply_loud(&mut call, 2_400);
    let outputs = call.press(3_000);
    assert_eq!(
        speaker_readings(&outputs),
        [METER_FLOOR_DBFS],
        "the flush silences the speaker at once, so its meter falls with it"
    );

    let mut call = reply_audible();
    reply_loud(&mut call, 2_400);
    let outputs = call.input(3_000, Input::Engine(EngineInput::Drained));
    assert_eq!(speaker_readings(&outputs), [METER_FLOOR_DBFS]);
    let outputs = call.input(3_100, Input::Engine(EngineInput::Drained));
    assert_eq!(
        speaker_readings(&outputs),
        [] as [f32; 0],
        "a meter already at rest is not told again"
    );
}

#[test]
fn hanging_up_closes_the_open_messages_on_the_screen_and_on_disk_alike() {
    let mut call = reply_audible();
    let outputs = call.input(3_000, Input::HangUp);
    let names = names(&outputs);
    assert!(
        names.contains(&"transcript:TEXT_MESSAGE_END:assistant-1".to_owned()),
        "the open reply's message ends: {names:?}"
    );
    let closing: Vec<serde_json::Value> = outputs
        .iter()
        .filter_map(|output| match output {
            Output::Record(Record::Transcript { transcript, .. }) => Some(transcript.clone()),
            _ => None,
        })
        .flatten()
        .map(|event| serde_json::to_value(event).expect("AG-UI events serialise"))
        .collect();
    let shown_at_close: Vec<serde_json::Value> = transcript(&outputs)
        .into_iter()
        .skip_while(|event| event["type"] != "TEXT_MESSAGE_END")
        .collect();
    assert!(!closing.is_empty());
    assert_eq!(
        closing.last().map(|event| event["type"].clone()),
        Some(serde_json::json!("RUN_FINISHED"))
    );
    assert!(
        shown_at_close.ends_with(&closing),
        "the store gets the closing events the webview got"
    );
    assert!(call.press(4_000).is_empty(), "nothing after the hang-up");
}

#[test]
fn a_request_the_provider_refuses_is_told_in_the_ready_status_and_the_call_goes_on() {
    let mut call = Call::ready();
    let outputs = call.utterance(1_000, 2_000);
    let create_id = sent_id(&outputs, "response.create");
    let outputs = call.server(
        2_300,
        &server_error(
            "invalid_value",
            "Invalid value: 'sage2'. Supported values are: 'alloy', 'ash'.",
            Some(&create_id),
        ),
    );
    let shown = statuses(&outputs).pop().expect("a status");
    assert_eq!(
        (shown.state, shown.detail.as_str()),
        (
            Ready,
            "Call goes on: the provider refused a request (invalid_value)."
        )
    );
    assert_eq!(
        shown.action,
        Some(StatusAction::Dismiss),
        "nothing to do but read it"
    );
    let words = shown
        .details
        .expect("the provider's words behind the notice");
    assert!(words.starts_with("Invalid value: 'sage2'."), "{words}");
    assert!(
        words.contains(&format!("answering response.create {create_id}")),
        "tied to the request it answers: {words}"
    );
    assert!(
        !outputs
            .iter()
            .any(|output| matches!(output, Output::Ended { .. } | Output::HangUpCall)),
        "the call goes on"
    );
    assert_eq!(last_status(&call.tick(9_000)), None, "the notice stays");
    assert_eq!(
        last_status(&call.utterance(10_000, 11_000))
            .map(|(state, _)| state)
            .expect("a status"),
        Ready,
    );
    let outputs = call.press(12_000);
    assert_eq!(
        last_status(&outputs),
        status(Listening, "Listening… release to send."),
        "the next turn puts the notice away"
    );
}

/// The reply of [`reply_audible`] completes and stops playing: the status after it.
fn status_once_the_reply_ends(call: &mut Call) -> StatusEvent {
    call.server(2_360, &response_done("resp_R1", "completed"));
    call.server(2_370, &output_stopped("resp_R1"));
    let outputs = call.tick(2_370 + LATE_AUDIO_GRACE_MS);
    statuses(&outputs).pop().expect("a status")
}

#[test]
fn a_message_the_provider_sends_that_cannot_be_read_mid_reply_is_told_once_the_reply_ends() {
    let mut call = reply_audible();
    let outputs = call.server(
        2_350,
        r#"{"type":"vendor.big","event_id":"event_h1","n":1e999}"#,
    );
    assert_eq!(
        statuses(&outputs),
        [],
        "while the reply is heard the status stays Speaking"
    );
    let shown = status_once_the_reply_ends(&mut call);
    assert_eq!(
        (shown.state, shown.detail.as_str()),
        (
            Ready,
            "Call goes on: the provider sent a message Walkie could not read."
        )
    );
    assert!(
        shown
            .details
            .as_deref()
            .is_some_and(|words| words.contains("vendor.big")),
        "{shown:?}"
    );
}

#[test]
fn a_reply_whose_text_runs_past_the_cap_is_told_as_cut_once_it_ends_and_the_call_goes_on() {
    let mut call = reply_audible();
    let chunk = "a".repeat(64 * 1024);
    let mut outputs = Vec::new();
    for n in 0..8 {
        outputs.extend(call.server(2_350 + n, &assistant_says("resp_R1", "item_A1", &chunk)));
    }
    assert_eq!(
        statuses(&outputs),
        [],
        "while the reply is heard it says Speaking"
    );
    let shown = status_once_the_reply_ends(&mut call);
    assert_eq!(
        (shown.state, shown.detail.as_str()),
        (
            Ready,
            "Call goes on: the provider sent more text for one message than Walkie keeps \
             (256 KiB), so the rest was left out."
        )
    );
    assert!(
        !outputs
            .iter()
            .any(|output| matches!(output, Output::Ended { .. } | Output::HangUpCall)),
        "the call goes on"
    );
}

#[test]
fn a_reply_the_provider_goes_silent_on_is_ended_and_told_not_as_a_refusal() {
    let mut call = Call::ready();
    call.utterance(1_000, 2_000);
    call.server(2_300, &committed("item_U1"));
    call.server(2_310, &response_created("resp_R1"));
    let outputs = call.tick(2_310 + RESPONSE_DONE_WATCHDOG_MS);
    assert_eq!(
        last_status(&outputs),
        status(
            Ready,
            "Call goes on: the provider went silent on a reply, so Walkie ended it."
        )
    );
}

#[test]
fn new_settings_whose_call_fails_leave_the_call_going_and_offer_settings() {
    let mut call = Call::ready();
    let outputs = call.input(
        1_000,
        Input::NewCallDialling {
            provider_label: "127.0.0.1".to_owned(),
        },
    );
    assert_eq!(
        last_status(&outputs),
        status(
            Ready,
            "Connecting to 127.0.0.1 with the new settings; Test provider answers until then."
        )
    );
    let outputs = call.input(
        1_500,
        Input::NewCallRefused {
            provider_label: "127.0.0.1".to_owned(),
            sentence: "no API key for a compatible server: add one in Settings".to_owned(),
            details: None,
        },
    );
    let shown = statuses(&outputs).pop().expect("a status");
    assert_eq!(
        (shown.state, shown.detail.as_str()),
        (
            Ready,
            "Call goes on: the new settings' call to 127.0.0.1 failed, so Test provider still \
             answers. No API key for a compatible server: add one in Settings."
        )
    );
    assert_eq!(shown.action, Some(StatusAction::OpenSettings));
    assert_eq!(shown.details, None);
    assert!(
        !outputs
            .iter()
            .any(|output| matches!(output, Output::Ended { .. } | Output::HangUpCall)),
        "the call goes on"
    );
    let outputs = call.utterance(3_000, 4_000);
    assert!(
        sent_types(&outputs).contains(&"response.create"),
        "a turn still goes to the call under way: {:?}",
        sent_types(&outputs)
    );
}

#[test]
fn a_refused_new_call_with_the_error_behind_it_keeps_the_words_for_details() {
    let mut call = Call::ready();
    let outputs = call.input(
        1_000,
        Input::NewCallRefused {
            provider_label: "Azure OpenAI".to_owned(),
            sentence: "Azure OpenAI refused the API key: add a valid key in Settings.".to_owned(),
            details: Some("HTTP 401 from https://example.openai.azure.com".to_owned()),
        },
    );
    let shown = statuses(&outputs).pop().expect("a status");
    assert_eq!(
        shown.detail,
        "Call goes on: the new settings' call to Azure OpenAI failed, so Test provider still \
         answers. Azure OpenAI refused the API key: add a valid key in Settings."
    );
    assert_eq!(
        shown.details.as_deref(),
        Some("HTTP 401 from https://example.openai.azure.com")
    );
}

#[test]
fn a_reply_slow_to_be_heard_says_so_once_and_speaking_puts_it_away() {
    let mut call = Call::ready();
    call.utterance(1_000, 2_000);
    call.server(2_300, &committed("item_U1"));
    call.server(2_310, &response_created("resp_R1"));
    assert_eq!(
        call.machine.next_deadline_ms(),
        Some(2_310 + walkie_conversation::SLOW_REPLY_MS),
        "woken when the reply becomes slow"
    );
    assert_eq!(last_status(&call.tick(2_310 + 2_999)), None, "not yet");
    assert_eq!(
        last_status(&call.tick(2_310 + 3_000)),
        status(
            Thinking,
            "Thinking… the provider is taking longer than usual (the network or the provider is \
             slow)."
        )
    );
    assert_ne!(
        call.machine.next_deadline_ms(),
        Some(2_310 + walkie_conversation::SLOW_REPLY_MS),
        "told once: that deadline is spent"
    );
    call.server(5_400, &audio_part_added("resp_R1", "item_A1"));
    assert_eq!(
        last_status(&call.server(5_410, &output_started("resp_R1"))),
        status(Speaking, "Speaking… press to interrupt.")
    );
}

/// The `latency:<message>:<ms>` outputs among `outputs`.
fn latencies(outputs: &[Output]) -> Vec<String> {
    names(outputs)
        .into_iter()
        .filter(|name| name.starts_with("latency:"))
        .collect()
}

#[test]
fn a_reply_is_timed_from_the_key_coming_up_to_its_first_sound_at_the_device_once() {
    let mut call = reply_audible();
    let outputs = call.input(
        2_500,
        Input::Engine(EngineInput::PlayedProgress {
            item_id: "item_A1".to_owned(),
            played_ms: 20,
        }),
    );
    assert_eq!(
        latencies(&outputs),
        ["latency:assistant-1:500"],
        "released at 2 000, first heard at 2 500"
    );
    let outputs = call.input(
        2_600,
        Input::Engine(EngineInput::PlayedProgress {
            item_id: "item_A1".to_owned(),
            played_ms: 120,
        }),
    );
    assert!(latencies(&outputs).is_empty(), "told once per reply");
}

#[test]
fn the_wait_for_a_reply_splits_into_the_keys_tail_the_provider_the_network_and_playout() {
    let mut call = Call::ready();
    call.input(
        500,
        Input::Health(walkie_conversation::HealthSample {
            round_trip_ms: Some(30.0),
            ..Default::default()
        }),
    );
    let tail_ms = call.config.tail_ms;
    call.utterance(1_000, 2_000);
    call.server(2_300, &committed("item_U1"));
    call.server(2_310, &response_created("resp_R1"));
    call.server(2_320, &audio_part_added("resp_R1", "item_A1"));
    call.server(2_330, &output_started("resp_R1"));
    call.server(2_340, &assistant_says("resp_R1", "item_A1", "Hi."));
    // The first packet arrived at 2 400; its first sample reached the device at 2 450.
    let outputs = call.input(
        2_460,
        Input::Engine(EngineInput::ReplyHeard {
            first_packet_ms: Some(2_400),
            heard_ms: 2_450,
        }),
    );
    let split = outputs
        .iter()
        .find_map(|output| match output {
            Output::ReplyLatency {
                latency_ms, split, ..
            } => Some((*latency_ms, *split)),
            _ => None,
        })
        .expect("the reply's latency is told");
    assert_eq!(
        split.0, 450,
        "released at 2 000, heard at 2 450 by the device's clock"
    );
    let split = split.1.expect("with its split");
    assert_eq!(split.local_ms, tail_ms, "the key's tail, before the commit");
    assert_eq!(split.network_ms, 30, "the round trip ICE measured");
    assert_eq!(split.provider_ms, 400 - tail_ms - 30);
    assert_eq!(split.playout_ms, 50);
    assert_eq!(split.total_ms(), 450, "the parts add up to the whole");
    let outputs = call.input(
        2_470,
        Input::Engine(EngineInput::PlayedProgress {
            item_id: "item_A1".to_owned(),
            played_ms: 20,
        }),
    );
    assert!(latencies(&outputs).is_empty(), "told once per reply");
}

#[test]
fn a_typed_question_is_timed_from_when_it_went_out() {
    let mut call = Call::ready();
    call.input(1_000, Input::SendMessage(UserMessage::text("Hello?")));
    call.server(1_300, &response_created("resp_R1"));
    call.server(1_310, &audio_part_added("resp_R1", "item_A1"));
    call.server(1_320, &output_started("resp_R1"));
    call.server(1_330, &assistant_says("resp_R1", "item_A1", "Hi."));
    let outputs = call.input(
        1_420,
        Input::Engine(EngineInput::PlayedProgress {
            item_id: "item_A1".to_owned(),
            played_ms: 20,
        }),
    );
    assert_eq!(latencies(&outputs), ["latency:assistant-1:420"]);
}
