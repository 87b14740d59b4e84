//! A conversation's title, asked of the model beside it: once three turns are complete, at a
//! quiet moment, a `response.create` out of band (`conversation: "none"`, text out) goes out;
//! its answer is saved as the title and billed, and never reaches the transcript. A refusal,
//! a spent budget or the user's choice leave the first words.

mod support;
#[path = "../../session/tests/turn_support/mod.rs"]
mod turn_support;

use serde_json::{Value, json};
use support::*;
use turn_support::{
    assistant_says, audio_part_added, committed, output_started, output_stopped, response_created,
    server_error, user_transcript_completed,
};
use walkie_conversation::{
    Input, MAX_TITLE_REQUESTS, Output, Record, TITLE_AFTER_TURNS, TITLE_INSTRUCTIONS,
    TransportInput,
};
use walkie_session::turn::{Diagnostic, LATE_AUDIO_GRACE_MS};

/// One push-to-talk exchange, number `n`, from press to the reply played out; all outputs.
fn exchange(call: &mut Call, n: u64) -> Vec<Output> {
    let t = n * 10_000;
    let (response, item) = (format!("resp_R{n}"), format!("item_A{n}"));
    let mut outputs = call.utterance(t + 1_000, t + 2_000);
    let question = format!("item_U{n}");
    outputs.extend(call.server(t + 2_300, &committed(&question)));
    outputs.extend(call.server(
        t + 2_305,
        &user_transcript_completed(&question, "What is the capital of Portugal?"),
    ));
    outputs.extend(call.server(t + 2_310, &response_created(&response)));
    outputs.extend(call.server(t + 2_320, &audio_part_added(&response, &item)));
    outputs.extend(call.server(t + 2_330, &output_started(&response)));
    outputs.extend(call.server(t + 2_340, &assistant_says(&response, &item, "Lisbon.")));
    outputs.extend(call.server(t + 3_000, &reply_done(&response)));
    outputs.extend(call.server(t + 3_100, &output_stopped(&response)));
    outputs.extend(call.tick(t + 3_100 + LATE_AUDIO_GRACE_MS));
    outputs
}

/// A reply's `response.done`, billed.
fn reply_done(response_id: &str) -> String {
    json!({"type": "response.done", "event_id": "event_rd", "response": {
        "object": "realtime.response", "id": response_id, "status": "completed", "output": [],
        "usage": {"total_tokens": 300, "input_tokens": 200, "output_tokens": 100,
            "input_token_details": {"text_tokens": 50, "audio_tokens": 150, "cached_tokens": 0},
            "output_token_details": {"text_tokens": 20, "audio_tokens": 80}}}})
    .to_string()
}

/// The events sent, as JSON.
fn sent(outputs: &[Output]) -> Vec<Value> {
    outputs
        .iter()
        .filter_map(|output| match output {
            Output::Send(event) => Some(serde_json::from_str(&event.to_json()).unwrap()),
            _ => None,
        })
        .collect()
}

/// The out-of-band creates among `outputs`.
fn asides(outputs: &[Output]) -> Vec<Value> {
    sent(outputs)
        .into_iter()
        .filter(|event| {
            event["type"] == "response.create" && event["response"]["conversation"] == "none"
        })
        .collect()
}

fn titles(outputs: &[Output]) -> Vec<String> {
    outputs
        .iter()
        .filter_map(|output| match output {
            Output::Record(Record::Titled { title, .. }) => Some(title.clone()),
            _ => None,
        })
        .collect()
}

/// The provider's answer to the aside: created with the metadata it was asked with, the
/// title in text deltas, done with its usage.
fn answer_aside(call: &mut Call, at_ms: u64, title: &str) -> Vec<Output> {
    let created = json!({"type": "response.created", "event_id": "event_x1", "response": {
        "object": "realtime.response", "id": "resp_T", "status": "in_progress", "output": [],
        "conversation_id": null, "output_modalities": ["text"],
        "metadata": {"walkie_aside": "title"}}});
    let mut outputs = call.server(at_ms, &created.to_string());
    let (first, rest) = title.split_at(title.len() / 2);
    for (offset, delta) in [first, rest].into_iter().enumerate() {
        let event = json!({"type": "response.output_text.delta", "event_id": "event_x2",
            "response_id": "resp_T", "item_id": "item_T", "output_index": 0, "content_index": 0,
            "delta": delta});
        outputs.extend(call.server(at_ms + 10 + offset as u64, &event.to_string()));
    }
    let done = json!({"type": "response.done", "event_id": "event_x3", "response": {
        "object": "realtime.response", "id": "resp_T", "status": "completed", "output": [],
        "conversation_id": null, "metadata": {"walkie_aside": "title"},
        "usage": {"total_tokens": 1_210, "input_tokens": 1_200, "output_tokens": 10,
            "input_token_details": {"text_tokens": 1_200, "audio_tokens": 0, "cached_tokens": 0},
            "output_token_details": {"text_tokens": 10, "audio_tokens": 0}}}});
    outputs.extend(call.server(at_ms + 50, &done.to_string()));
    outputs
}

#[test]
fn after_three_turns_the_model_is_asked_beside_the_conversation_and_its_title_is_saved_and_billed()
{
    let mut call = Call::ready_asking_titles(None);
    for n in 1..u64::from(TITLE_AFTER_TURNS) {
        assert!(
            asides(&exchange(&mut call, n)).is_empty(),
            "not after turn {n}"
        );
    }
    let outputs = exchange(&mut call, u64::from(TITLE_AFTER_TURNS));
    let asked = asides(&outputs);
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!(asked[0]["response"]["output_modalities"], json!(["text"]));
    assert_eq!(asked[0]["response"]["instructions"], TITLE_INSTRUCTIONS);
    assert_eq!(
        asked[0]["response"]["metadata"],
        json!({"walkie_aside": "title"})
    );

    let outputs = answer_aside(&mut call, 40_000, "\"Lisbon and the Tagus.\"");
    assert_eq!(titles(&outputs), ["Lisbon and the Tagus"]);
    assert!(
        transcript(&outputs).is_empty(),
        "the title is not said in the conversation: {:?}",
        transcript(&outputs)
    );
    let billed: Vec<_> = outputs
        .iter()
        .filter(|output| matches!(output, Output::Record(Record::Billed { .. })))
        .collect();
    assert_eq!(billed.len(), 1, "the aside is billed like a reply");
    let spent = spending(&outputs).expect("the spending view is told");
    assert_eq!(spent.responses, 4, "three replies and the title");

    // Asked once: later turns ask nothing more.
    assert!(asides(&exchange(&mut call, 5)).is_empty());
}

#[test]
fn a_refused_title_request_leaves_the_first_words_and_bothers_nobody() {
    let mut call = Call::ready_asking_titles(None);
    let mut outputs = Vec::new();
    for n in 1..=u64::from(TITLE_AFTER_TURNS) {
        outputs = exchange(&mut call, n);
    }
    let event_id = sent(&outputs)
        .into_iter()
        .find(|event| event["response"]["conversation"] == "none")
        .and_then(|event| event["event_id"].as_str().map(str::to_owned))
        .expect("the title was asked");
    let status_before = last_status(&outputs);
    let refused = call.server(
        40_000,
        &server_error(
            "invalid_value",
            "Metadata is not allowed here.",
            Some(&event_id),
        ),
    );
    assert!(titles(&refused).is_empty());
    assert!(
        refused.iter().any(|output| matches!(
            output,
            Output::Diagnostic(Diagnostic::AsideUnanswered { reason, .. })
                if reason == "Metadata is not allowed here."
        )),
        "logged: {refused:?}"
    );
    assert_eq!(
        last_status(&refused),
        None,
        "the status line says nothing of it"
    );
    assert!(status_before.is_some());
    assert!(
        asides(&exchange(&mut call, 4)).is_empty(),
        "not asked again"
    );
}

#[test]
fn a_spent_budget_asks_for_no_title() {
    // A budget of nothing: spent by the first reply.
    let mut call = Call::ready_asking_titles(Some(0.000_001));
    let mut outputs = Vec::new();
    for n in 1..=u64::from(TITLE_AFTER_TURNS) {
        outputs.extend(exchange(&mut call, n));
    }
    assert!(asides(&outputs).is_empty(), "{:?}", asides(&outputs));
}

#[test]
fn a_conversation_not_asking_for_titles_never_asks() {
    let mut call = Call::ready();
    let mut outputs = Vec::new();
    for n in 1..=u64::from(TITLE_AFTER_TURNS) + 1 {
        outputs.extend(exchange(&mut call, n));
    }
    assert!(asides(&outputs).is_empty());
}

#[test]
fn a_reply_refused_while_the_title_was_answered_is_asked_again_once_it_is_done() {
    let mut call = Call::ready_asking_titles(None);
    for n in 1..=u64::from(TITLE_AFTER_TURNS) {
        exchange(&mut call, n);
    }
    let created = json!({"type": "response.created", "event_id": "event_x1", "response": {
        "object": "realtime.response", "id": "resp_T", "status": "in_progress", "output": [],
        "conversation_id": null, "metadata": {"walkie_aside": "title"}}});
    call.server(40_000, &created.to_string());
    // The user speaks meanwhile; a provider with one response at a time refuses the reply.
    let outputs = call.utterance(41_000, 42_000);
    let create = sent(&outputs)
        .into_iter()
        .find(|event| event["type"] == "response.create")
        .expect("the reply is asked for");
    assert_ne!(create["response"]["conversation"], "none");
    call.server(
        42_400,
        &server_error(
            "conversation_already_has_active_response",
            "Conversation already has an active response in progress: resp_T.",
            create["event_id"].as_str(),
        ),
    );
    let done = json!({"type": "response.done", "event_id": "event_x3", "response": {
        "object": "realtime.response", "id": "resp_T", "status": "completed", "output": [],
        "conversation_id": null, "metadata": {"walkie_aside": "title"}}});
    let outputs = call.server(42_500, &done.to_string());
    let again: Vec<Value> = sent(&outputs)
        .into_iter()
        .filter(|event| event["type"] == "response.create")
        .collect();
    assert_eq!(again.len(), 1, "the reply is asked again: {again:?}");
    assert_ne!(again[0]["response"]["conversation"], "none");
}

#[test]
fn a_server_that_does_not_echo_the_metadata_still_has_its_answer_taken_as_the_title() {
    let mut call = Call::ready_asking_titles(None);
    for n in 1..=u64::from(TITLE_AFTER_TURNS) {
        exchange(&mut call, n);
    }
    let created = json!({"type": "response.created", "event_id": "event_x1", "response": {
        "object": "realtime.response", "id": "resp_T", "status": "in_progress", "output": []}});
    let mut outputs = call.server(40_000, &created.to_string());
    let said = json!({"type": "response.output_audio_transcript.delta", "event_id": "event_x2",
        "response_id": "resp_T", "item_id": "item_T", "output_index": 0, "content_index": 0,
        "delta": "Capitals of Iberia"});
    outputs.extend(call.server(40_010, &said.to_string()));
    let done = json!({"type": "response.done", "event_id": "event_x3", "response": {
        "object": "realtime.response", "id": "resp_T", "status": "completed", "output": []}});
    outputs.extend(call.server(40_050, &done.to_string()));
    assert_eq!(titles(&outputs), ["Capitals of Iberia"]);
    assert!(
        transcript(&outputs).is_empty(),
        "{:?}",
        transcript(&outputs)
    );
}

#[test]
fn a_title_request_the_dropped_call_never_answered_is_asked_again_on_the_next_call_a_few_times() {
    let mut call = Call::ready_asking_titles(None);
    let mut outputs = Vec::new();
    for n in 1..=u64::from(TITLE_AFTER_TURNS) {
        outputs = exchange(&mut call, n);
    }
    let mut asked = asides(&outputs).len();
    assert_eq!(asked, 1);
    for drop in 0..MAX_TITLE_REQUESTS {
        let at_ms = 50_000 + u64::from(drop) * 60_000;
        call.input(
            at_ms,
            Input::Transport(TransportInput::Closed("the network dropped".to_owned())),
        );
        let outputs = redial(&mut call);
        assert!(titles(&outputs).is_empty());
        asked += asides(&outputs).len();
    }
    assert_eq!(
        asked, MAX_TITLE_REQUESTS as usize,
        "asked on each new call until the limit, then no more"
    );
}
