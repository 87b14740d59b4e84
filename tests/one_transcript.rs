//! One transcript: what the store saves is what the webview showed. The conversation machine
//! runs a conversation with a barge-in and a late user transcript; its records go through the
//! app's recording (a real store in a temporary folder), its transcript events to a stand-in
//! for the webview; then the journal and `transcript.json` are read back and compared.

/// The session crate's scripted server events.
#[path = "../crates/session/tests/turn_support/mod.rs"]
mod turn_support;

use walkie_agui::{Consumer, Mode};
use walkie_conversation::{
    Conversation, ConversationConfig, EngineInput, Input, Output, RedialPolicy, TransportInput,
};
use walkie_openai::SessionConfig;
use walkie_session::AudioChunk;
use walkie_session::turn::{LATE_AUDIO_GRACE_MS, ToolRegistry, TurnConfig, WallClock};
use walkie_store::journal::{JOURNAL_FILE, read_journal};
use walkie_store::{Record as Journaled, Store, conversations_dir};

use turn_support::*;
use walkie_app::history::CurrentConversation;
use walkie_app::recording::Recording;

const START_UNIX_MS: u64 = 1_700_000_000_000;

/// The machine's outputs: the webview's transcript kept, the records saved.
fn carry(
    machine: &mut Conversation,
    recording: &mut Recording,
    shown: &mut Vec<walkie_agui::Event>,
) {
    while let Some(output) = machine.poll_output() {
        match output {
            Output::Transcript(event) => shown.push(event),
            Output::Record(record) => recording.save(record),
            _ => {}
        }
    }
}

#[test]
fn the_saved_transcript_is_the_one_the_webview_showed_after_a_barge_in_and_a_late_user_transcript()
{
    let data_dir = std::env::temp_dir().join(format!(
        "walkie-one-transcript-{}-{START_UNIX_MS}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&data_dir);
    let current = CurrentConversation::default();
    let now = WallClock {
        unix_ms: START_UNIX_MS as i64,
        utc_offset_minutes: 0,
    };
    let mut recording = Recording::start(
        &current,
        &Ok(data_dir.clone()),
        now,
        walkie_store::Saved::Everything,
    )
    .expect("the recording starts");
    let id = recording.id().to_owned();
    let mut machine = Conversation::new(
        ConversationConfig {
            turn: TurnConfig::push_to_talk(SessionConfig::default()),
            provider_label: "Local".to_owned(),
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
        ToolRegistry::with_builtins,
    );
    let mut shown = Vec::new();
    let audio = || {
        Input::Engine(EngineInput::AssistantAudio(AudioChunk::from_samples(
            vec![100; 960],
        )))
    };
    let text = |line: String| Input::ServerText(line);
    let tail_ms = TurnConfig::push_to_talk(SessionConfig::default()).tail_ms;
    let script = [
        (0, Input::Transport(TransportInput::Open)),
        (50, text(session_updated_with_transcription())),
        (1_000, Input::Press),
        (2_000, Input::Release),
        (2_000 + tail_ms, Input::Tick),
        (2_300, text(committed("item_U1"))),
        (2_310, text(response_created("resp_R1"))),
        (2_320, text(audio_part_added("resp_R1", "item_A1"))),
        (2_330, text(output_started("resp_R1"))),
        (
            2_340,
            text(assistant_says("resp_R1", "item_A1", "Once upon")),
        ),
        (2_350, audio()),
        (2_370, audio()),
        // The user talks over the reply: a barge-in.
        (3_000, Input::Press),
        (3_100, text(response_done("resp_R1", "cancelled"))),
        // The first question's transcript comes after its reply was cut.
        (
            3_200,
            text(user_transcript_completed("item_U1", "Tell me a story.")),
        ),
        (4_000, Input::Release),
        (4_000 + tail_ms, Input::Tick),
        (4_300, text(committed("item_U2"))),
        (4_310, text(response_created("resp_R2"))),
        (4_320, text(audio_part_added("resp_R2", "item_A2"))),
        (4_330, text(output_started("resp_R2"))),
        (
            4_340,
            text(assistant_says("resp_R2", "item_A2", "The end.")),
        ),
        (4_350, audio()),
        (4_400, text(response_done("resp_R2", "completed"))),
        (4_500, text(output_stopped("resp_R2"))),
        (4_500 + LATE_AUDIO_GRACE_MS, Input::Tick),
        (
            4_900,
            text(user_transcript_completed("item_U2", "A shorter one.")),
        ),
        (5_000, Input::HangUp),
    ];
    for (at_ms, input) in script {
        machine.handle_input(input, START_UNIX_MS + at_ms);
        carry(&mut machine, &mut recording, &mut shown);
    }
    drop(recording);

    let dir = conversations_dir(&data_dir).join(&id);
    let journal = read_journal(&dir.join(JOURNAL_FILE)).expect("the journal reads back");
    let saved: Vec<&walkie_agui::Event> = journal
        .records
        .iter()
        .filter_map(|(_, record)| match record {
            Journaled::Agui { event } => Some(event),
            _ => None,
        })
        .collect();
    let shown_json = serde_json::to_value(&shown).expect("AG-UI events serialise");
    assert_eq!(
        serde_json::to_value(&saved).expect("AG-UI events serialise"),
        shown_json,
        "the journal holds exactly the webview's events"
    );
    assert!(
        shown_json.to_string().contains("\"threadId\":\"call_1\""),
        "one thread id"
    );

    let mut webview = Consumer::new(Mode::Strict);
    for event in &shown {
        webview.push(event).expect("the webview's stream is valid");
    }
    let conversation = Store::new(conversations_dir(&data_dir))
        .open_strict(&id)
        .expect("the conversation reads back");
    let transcript_json: serde_json::Value = serde_json::from_slice(
        &std::fs::read(dir.join(walkie_store::files::TRANSCRIPT_JSON_FILE))
            .expect("transcript.json was written"),
    )
    .expect("transcript.json is JSON");
    assert_eq!(
        transcript_json["messages"],
        serde_json::to_value(webview.messages()).expect("messages serialise"),
        "transcript.json's messages are the webview's"
    );
    let texts: Vec<(String, String)> = conversation
        .messages()
        .iter()
        .map(|message| {
            let content = message.content().unwrap_or_default().to_owned();
            (message.id().to_owned(), content)
        })
        .collect();
    assert_eq!(
        texts,
        [
            ("user-1", "Tell me a story."),
            ("assistant-1", "Once upon"),
            ("user-2", "A shorter one."),
            ("assistant-2", "The end."),
        ]
        .map(|(id, text)| (id.to_owned(), text.to_owned()))
    );
    let _ = std::fs::remove_dir_all(&data_dir);
}
