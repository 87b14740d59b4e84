//! Hear this voice, in virtual time: the reply asked for once and out of band, heard whole
//! before the preview says so, and every way it fails said in one sentence.

use serde_json::{Value, json};
use walkie_conversation::{
    LONGEST_PREVIEW_MS, PREVIEW_EVENT_ID, PREVIEW_INSTRUCTIONS, PreviewInput, PreviewOutput,
    VoicePreview,
};
use walkie_session::AudioChunk;

/// 100 ms of decoded call audio (48 kHz mono): a tone, or silence.
fn sound_100_ms() -> AudioChunk {
    AudioChunk::from_samples(
        (0..4_800)
            .map(|n| ((n as f64 * 0.06).sin() * 8_000.0) as i16)
            .collect::<Vec<i16>>(),
    )
}

fn silence_100_ms() -> AudioChunk {
    AudioChunk::from_samples(vec![0; 4_800])
}

fn transcript_delta(delta: &str) -> PreviewInput {
    PreviewInput::ServerText(
        json!({
            "type": "response.output_audio_transcript.delta",
            "event_id": "event_1",
            "response_id": "resp_P",
            "item_id": "item_P",
            "output_index": 0,
            "content_index": 0,
            "delta": delta,
        })
        .to_string(),
    )
}

fn buffer_stopped() -> PreviewInput {
    PreviewInput::ServerText(
        json!({"type": "output_audio_buffer.stopped", "event_id": "event_2", "response_id": "resp_P"})
            .to_string(),
    )
}

fn response_done() -> PreviewInput {
    PreviewInput::ServerText(
        json!({
            "type": "response.done",
            "event_id": "event_3",
            "response": {
                "object": "realtime.response",
                "id": "resp_P",
                "status": "completed",
                "status_details": null,
                "output": [],
                "conversation_id": null,
                "output_modalities": ["audio"],
            }
        })
        .to_string(),
    )
}

struct Preview {
    machine: VoicePreview,
    now_ms: u64,
}

impl Preview {
    /// A preview of marin whose call answered at 1,000 ms.
    fn answered() -> (Self, Vec<PreviewOutput>) {
        let mut preview = Self {
            machine: VoicePreview::new("marin", "OpenAI"),
            now_ms: 1_000,
        };
        let asked = preview.feed(PreviewInput::Answered);
        (preview, asked)
    }

    fn feed(&mut self, input: PreviewInput) -> Vec<PreviewOutput> {
        self.machine.handle_input(input, self.now_ms);
        std::iter::from_fn(|| self.machine.poll_output()).collect()
    }

    fn at(&mut self, now_ms: u64) -> &mut Self {
        self.now_ms = now_ms;
        self
    }

    /// The answer the preview finished with, from outputs that must hold exactly it.
    fn answer(outputs: Vec<PreviewOutput>) -> Result<String, String> {
        match <[PreviewOutput; 1]>::try_from(outputs) {
            Ok([PreviewOutput::Finished(answer)]) => answer,
            other => panic!("expected the preview to finish, and only that: {other:?}"),
        }
    }
}

#[test]
fn once_the_call_answers_one_out_of_band_audio_reply_is_asked_for_and_only_once() {
    let (mut preview, asked) = Preview::answered();
    let [PreviewOutput::Send { event, event_id }] = asked.as_slice() else {
        panic!("one event to send: {asked:?}");
    };
    assert_eq!(*event_id, PREVIEW_EVENT_ID);
    let sent: Value = serde_json::from_str(&event.to_json(Some(event_id))).unwrap();
    assert_eq!(sent["type"], "response.create");
    assert_eq!(
        sent["response"]["conversation"], "none",
        "the reply joins no conversation"
    );
    assert_eq!(sent["response"]["output_modalities"], json!(["audio"]));
    assert_eq!(sent["response"]["instructions"], PREVIEW_INSTRUCTIONS);
    assert_eq!(preview.feed(PreviewInput::Answered), []);
}

#[test]
fn the_preview_is_over_only_when_all_was_sent_and_the_speaker_ran_dry_and_counts_from_the_first_sound()
 {
    let (mut preview, _) = Preview::answered();
    assert_eq!(preview.at(1_400).feed(transcript_delta("Hi, this ")), []);
    // Silence ahead of the reply is not played, so not counted.
    assert_eq!(
        preview.feed(PreviewInput::AssistantAudio(silence_100_ms())),
        []
    );
    for _ in 0..10 {
        preview.feed(PreviewInput::AssistantAudio(sound_100_ms()));
    }
    // A pause inside the reply is played, so counted.
    preview.feed(PreviewInput::AssistantAudio(silence_100_ms()));
    preview.feed(PreviewInput::AssistantAudio(sound_100_ms()));
    assert_eq!(
        preview.feed(PreviewInput::Drained),
        [],
        "the speaker ran dry before the provider said the reply was all sent"
    );
    preview.feed(transcript_delta("is how I sound.\n"));
    assert_eq!(preview.feed(buffer_stopped()), []);
    let answer = Preview::answer(preview.at(2_700).feed(PreviewInput::Drained));
    assert_eq!(
        answer,
        Ok("marin (1.2 s): “Hi, this is how I sound.”".to_owned())
    );
    assert_eq!(
        preview.machine.next_deadline_ms(),
        None,
        "nothing is due once it is over"
    );
    assert_eq!(preview.feed(PreviewInput::Drained), [], "it finishes once");
}

#[test]
fn a_response_done_before_any_audio_played_means_the_audio_in_flight_is_all_of_it() {
    let (mut preview, _) = Preview::answered();
    preview.at(1_300).feed(response_done());
    preview.feed(PreviewInput::AssistantAudio(sound_100_ms()));
    let answer = Preview::answer(preview.feed(PreviewInput::Drained));
    assert_eq!(answer, Ok("Played 0.1 s of marin.".to_owned()));
}

#[test]
fn a_refusal_is_said_in_one_line_naming_the_voice_and_the_provider() {
    let (mut preview, _) = Preview::answered();
    let error = json!({
        "type": "error",
        "event_id": "event_9",
        "error": {"type": "invalid_request_error", "code": "invalid_value", "message": "Voice\n'nova' is\u{202E} not supported.", "param": "voice"}
    });
    let answer = Preview::answer(preview.feed(PreviewInput::ServerText(error.to_string())));
    assert_eq!(
        answer,
        Err(
            "The preview of marin from OpenAI failed. The provider refused the reply: Voice \
             'nova' is not supported."
                .to_owned()
        )
    );
}

#[test]
fn text_that_is_no_server_event_changes_nothing() {
    let (mut preview, _) = Preview::answered();
    assert_eq!(
        preview.feed(PreviewInput::ServerText("{not json".to_owned())),
        []
    );
    assert_eq!(
        preview.machine.next_deadline_ms(),
        Some(1_000 + LONGEST_PREVIEW_MS)
    );
}

#[test]
fn with_no_audio_the_preview_gives_up_at_its_deadline_and_not_before() {
    let (mut preview, _) = Preview::answered();
    let due_ms = preview
        .machine
        .next_deadline_ms()
        .expect("a deadline once asked");
    assert_eq!(due_ms, 1_000 + LONGEST_PREVIEW_MS);
    assert_eq!(preview.at(due_ms - 1).feed(PreviewInput::Tick), []);
    let answer = Preview::answer(preview.at(due_ms).feed(PreviewInput::Tick));
    assert_eq!(
        answer,
        Err(
            "The preview of marin from OpenAI failed. No audio came within 30 seconds: try \
             again, or check the provider's status page."
                .to_owned()
        )
    );
}

#[test]
fn at_its_deadline_a_preview_that_played_something_says_what_played() {
    let (mut preview, _) = Preview::answered();
    preview.feed(PreviewInput::AssistantAudio(sound_100_ms()));
    let answer = Preview::answer(
        preview
            .at(1_000 + LONGEST_PREVIEW_MS)
            .feed(PreviewInput::Tick),
    );
    assert_eq!(answer, Ok("Played 0.1 s of marin.".to_owned()));
}

#[test]
fn a_call_that_ends_before_any_audio_fails_with_its_reason_and_after_some_is_a_preview_played() {
    let (mut before, _) = Preview::answered();
    let answer = Preview::answer(before.feed(PreviewInput::CallEnded {
        reason: Some("the provider closed the call".to_owned()),
    }));
    assert_eq!(
        answer,
        Err(
            "The preview of marin from OpenAI failed. The call ended before the reply (the \
             provider closed the call): try again."
                .to_owned()
        )
    );

    let (mut after, _) = Preview::answered();
    after.feed(PreviewInput::AssistantAudio(sound_100_ms()));
    let answer = Preview::answer(after.feed(PreviewInput::CallEnded { reason: None }));
    assert_eq!(answer, Ok("Played 0.1 s of marin.".to_owned()));
}

#[test]
fn a_speaker_that_cannot_open_says_to_choose_another() {
    let (mut preview, _) = Preview::answered();
    let answer = Preview::answer(preview.feed(PreviewInput::SpeakerUnavailable {
        reason: "no such device".to_owned(),
    }));
    assert_eq!(
        answer,
        Err(
            "The preview of marin from OpenAI failed. The speaker could not be opened (no such \
             device): choose another in Settings."
                .to_owned()
        )
    );
}

#[test]
fn stopped_by_the_user_the_preview_says_so_and_takes_nothing_more() {
    let (mut preview, _) = Preview::answered();
    preview.feed(PreviewInput::AssistantAudio(sound_100_ms()));
    let answer = Preview::answer(preview.feed(PreviewInput::Stop));
    assert_eq!(answer, Ok("Stopped.".to_owned()));
    assert_eq!(preview.feed(buffer_stopped()), []);
    assert_eq!(preview.feed(PreviewInput::Drained), []);
}
