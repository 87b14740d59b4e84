//! The same conversations on both provider families, in virtual time: a Realtime API script and
//! a Live API script drive the one conversation machine, and what the user hears, reads and
//! keeps must not depend on which protocol carried it.
//!
//! Each test is written once, against [`Family`]: what the provider sends for "the session is
//! set up", "the user said this", "the reply begins", "the reply is over", and what a press
//! sends. The Realtime script is the provider's boundaries (commit, response, output buffer);
//! the Live script has none, so the machine must derive them (see the Live engine's
//! documentation) and close every message on its own.

mod support;
#[path = "../../session/tests/turn_support/mod.rs"]
mod turn_support;

use serde_json::json;
use support::*;
use walkie_agui::{Consumer, Mode, Role};
use walkie_conversation::{ConnectionState, Input, Output, TransportInput};
use walkie_openai::SessionConfig;
use walkie_session::turn::{
    AudioCommand, LATE_AUDIO_GRACE_MS, LIVE_QUIET_MS, ProviderFamily, TurnConfig,
};

/// One provider family's side of a conversation.
trait Family {
    fn name(&self) -> &'static str;
    fn config(&self) -> TurnConfig;
    /// What the provider sends once the data channel is open and the session is set up.
    fn session_set_up(&self) -> Vec<String>;
    /// What the provider sends of the user's words after a press.
    fn user_said(&self, text: &str) -> Vec<String>;
    /// What the provider sends as its reply begins, with the reply's words.
    fn reply_begins(&self, text: &str) -> Vec<String>;
    /// What the provider sends when the reply's audio is over.
    fn reply_over(&self) -> Vec<String>;
    /// What the provider sends after a barge-in cut the reply.
    fn reply_cut(&self) -> Vec<String>;
    /// How long after the reply's last audio every message of the turn is closed.
    fn settles_after_ms(&self) -> u64;
    /// The client events a counted press sends, from key-down to the end of its tail.
    fn press_sends(&self) -> Vec<&'static str>;
}

struct Realtime;

impl Family for Realtime {
    fn name(&self) -> &'static str {
        "Realtime"
    }
    fn config(&self) -> TurnConfig {
        TurnConfig::push_to_talk(SessionConfig::default())
    }
    fn session_set_up(&self) -> Vec<String> {
        vec![turn_support::session_updated_with_transcription()]
    }
    fn user_said(&self, text: &str) -> Vec<String> {
        vec![
            turn_support::committed("item_U1"),
            turn_support::user_transcript_completed("item_U1", text),
        ]
    }
    fn reply_begins(&self, text: &str) -> Vec<String> {
        vec![
            turn_support::response_created("resp_R1"),
            turn_support::audio_part_added("resp_R1", "item_A1"),
            turn_support::output_started("resp_R1"),
            turn_support::assistant_says("resp_R1", "item_A1", text),
        ]
    }
    fn reply_over(&self) -> Vec<String> {
        vec![
            turn_support::response_done("resp_R1", "completed"),
            turn_support::output_stopped("resp_R1"),
        ]
    }
    fn reply_cut(&self) -> Vec<String> {
        vec![turn_support::response_done("resp_R1", "cancelled")]
    }
    fn settles_after_ms(&self) -> u64 {
        LATE_AUDIO_GRACE_MS
    }
    fn press_sends(&self) -> Vec<&'static str> {
        // A fresh session's input buffer holds nothing: the press clears nothing.
        vec!["input_audio_buffer.commit", "response.create"]
    }
}

struct Live;

impl Family for Live {
    fn name(&self) -> &'static str {
        "Live"
    }
    fn config(&self) -> TurnConfig {
        TurnConfig {
            family: ProviderFamily::Live,
            ..TurnConfig::push_to_talk(SessionConfig::default())
        }
    }
    fn session_set_up(&self) -> Vec<String> {
        vec![
            json!({"type": "session.started", "event_id": "event_L1",
                "session": {"model": "gpt-live-1.1", "audio": {"output": {"voice": "marin"}}}})
            .to_string(),
        ]
    }
    fn user_said(&self, text: &str) -> Vec<String> {
        // The words come in pieces, with no event saying they are all.
        let (first, rest) = text.split_at(text.len() / 2);
        [first, rest]
            .into_iter()
            .map(|delta| {
                json!({"type": "session.input_transcript.delta", "event_id": "event_L2",
                    "delta": delta, "start_ms": 1_000, "end_ms": 2_000})
                .to_string()
            })
            .collect()
    }
    fn reply_begins(&self, text: &str) -> Vec<String> {
        vec![
            json!({"type": "session.output_transcript.delta", "event_id": "event_L3",
                "delta": text, "start_ms": 2_400, "end_ms": 3_000})
            .to_string(),
        ]
    }
    fn reply_over(&self) -> Vec<String> {
        Vec::new()
    }
    fn reply_cut(&self) -> Vec<String> {
        Vec::new()
    }
    fn settles_after_ms(&self) -> u64 {
        LIVE_QUIET_MS
    }
    fn press_sends(&self) -> Vec<&'static str> {
        vec!["session.input_audio.unmute", "session.input_audio.mute"]
    }
}

const FAMILIES: [&dyn Family; 2] = [&Realtime, &Live];

/// A call of `family` whose session is set up, and everything it put out so far.
fn ready(family: &dyn Family) -> (Call, Vec<Output>) {
    let mut call = Call::placed_with(family.config());
    let mut outputs = call.input(0, Input::Transport(TransportInput::Open));
    for text in family.session_set_up() {
        outputs.extend(call.server(50, &text));
    }
    (call, outputs)
}

/// Feeds each text at `now_ms`; all outputs.
fn server_all(call: &mut Call, now_ms: u64, texts: Vec<String>) -> Vec<Output> {
    texts
        .iter()
        .flat_map(|text| call.server(now_ms, text))
        .collect()
}

/// A pressed turn ("What time is it?") and its audible reply ("It is noon.", ten 20 ms chunks
/// from 2,420 ms); returns the outputs up to the reply's last chunk.
fn turn_with_an_audible_reply(family: &dyn Family, call: &mut Call) -> Vec<Output> {
    let mut outputs = call.utterance(1_000, 2_000);
    outputs.extend(server_all(
        call,
        2_300,
        family.user_said("What time is it?"),
    ));
    outputs.extend(server_all(call, 2_400, family.reply_begins("It is noon.")));
    for chunk in 0..10 {
        outputs.extend(call.assistant_audio(2_420 + chunk * 20));
    }
    outputs
}

/// The AG-UI transcript among `outputs`, checked as a strict consumer reads it: its messages.
fn read_transcript(family: &dyn Family, outputs: &[Output]) -> Vec<(Option<Role>, String)> {
    let mut consumer = Consumer::new(Mode::Strict);
    for event in transcript(outputs) {
        consumer
            .push_value(&event)
            .unwrap_or_else(|violation| panic!("{}: {violation:?}", family.name()));
    }
    consumer
        .messages()
        .iter()
        .map(|message| {
            (
                message.role(),
                message.content().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

/// How many messages were started and never ended among `outputs`.
fn messages_left_open(outputs: &[Output]) -> usize {
    let kinds: Vec<String> = transcript(outputs)
        .iter()
        .map(|event| event["type"].as_str().unwrap_or_default().to_owned())
        .collect();
    let started = kinds
        .iter()
        .filter(|kind| *kind == "TEXT_MESSAGE_START")
        .count();
    let ended = kinds
        .iter()
        .filter(|kind| *kind == "TEXT_MESSAGE_END")
        .count();
    started.saturating_sub(ended)
}

#[test]
fn a_pressed_turn_is_heard_once_shown_as_two_closed_messages_and_ends_ready_on_both_families() {
    for family in FAMILIES {
        let (mut call, mut outputs) = ready(family);
        call.speaker.played();
        let turn = turn_with_an_audible_reply(family, &mut call);
        assert_eq!(
            sent_types(&turn)
                .into_iter()
                .filter(|kind| *kind != "session.update")
                .collect::<Vec<_>>(),
            family.press_sends(),
            "{}: what a press sends",
            family.name()
        );
        outputs.extend(turn);
        outputs.extend(server_all(&mut call, 2_620, family.reply_over()));
        let settled = call.tick(2_620 + family.settles_after_ms());
        outputs.extend(settled.clone());

        assert_eq!(
            call.speaker.played().len(),
            10,
            "{}: each chunk played once",
            family.name()
        );
        assert_eq!(
            read_transcript(family, &outputs),
            [
                (Some(Role::User), "What time is it?".to_owned()),
                (Some(Role::Assistant), "It is noon.".to_owned()),
            ],
            "{}",
            family.name()
        );
        assert_eq!(messages_left_open(&outputs), 0, "{}", family.name());
        assert_eq!(
            last_status(&outputs).map(|(state, _)| state),
            Some(ConnectionState::Ready),
            "{}: back to ready",
            family.name()
        );
    }
}

#[test]
fn a_key_down_over_the_reply_flushes_the_speaker_before_anything_is_sent_on_both_families() {
    for family in FAMILIES {
        let (mut call, _) = ready(family);
        turn_with_an_audible_reply(family, &mut call);
        let mut barge_in = call.press(2_700);
        let first_flush = names(&barge_in)
            .iter()
            .position(|name| name == "audio:FlushPlayback")
            .unwrap_or_else(|| panic!("{}: no flush in {barge_in:?}", family.name()));
        let first_send = names(&barge_in)
            .iter()
            .position(|name| name.starts_with("send:"));
        assert!(
            first_send.is_none_or(|send| first_flush < send),
            "{}: the flush comes first: {:?}",
            family.name(),
            names(&barge_in)
        );
        barge_in.extend(server_all(&mut call, 2_710, family.reply_cut()));
        assert!(
            names(&barge_in)
                .iter()
                .any(|name| name.starts_with("interrupted:assistant")),
            "{}: the reply is marked cut: {:?}",
            family.name(),
            names(&barge_in)
        );
        call.speaker.played();
        call.assistant_audio(2_720);
        assert_eq!(
            call.speaker.played().len(),
            0,
            "{}: the cut reply's audio is not played",
            family.name()
        );
    }
}

#[test]
fn a_reply_nobody_ends_still_closes_and_a_late_user_word_does_not_cut_it() {
    // The Live API alone: nothing ends a reply but its quiet.
    let family = &Live;
    let (mut call, mut outputs) = ready(family);
    outputs.extend(turn_with_an_audible_reply(family, &mut call));
    // The user's transcript trails their audio: more words while the reply plays.
    outputs.extend(
        call.server(
            2_500,
            &json!({"type": "session.input_transcript.delta", "delta": " Please.",
            "start_ms": 1_900, "end_ms": 2_000})
            .to_string(),
        ),
    );
    assert!(
        !audio_commands(&outputs).contains(&AudioCommand::FlushPlayback),
        "late words of a finished press are not a barge-in"
    );
    let before_quiet = call.tick(2_600 + LIVE_QUIET_MS - 1);
    assert_eq!(messages_left_open(&before_quiet), 0);
    outputs.extend(before_quiet);
    assert!(
        messages_left_open(&outputs) > 0,
        "the reply is still open within its quiet period"
    );
    outputs.extend(call.tick(2_600 + 2 * LIVE_QUIET_MS));
    assert_eq!(messages_left_open(&outputs), 0, "every message closed");
    assert_eq!(
        read_transcript(family, &outputs),
        [
            (Some(Role::User), "What time is it? Please.".to_owned()),
            (Some(Role::Assistant), "It is noon.".to_owned()),
        ]
    );
}
