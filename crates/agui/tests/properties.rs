//! Property tests: the writer is valid under any interleaving of session signals, and the
//! consumer survives any event sequence, rejecting only with typed violations.

mod common;

use common::{assert_passes_agui_verify_strict, strict_consumer, texts};
use proptest::prelude::*;
use serde_json::{Value, json};
use walkie_agui::{
    Consumer, Event, Mode, Rule, Speaker, TranscriptInput, TranscriptWriter, TurnId,
};

/// One utterance's signals in the order the session would send them for it.
#[derive(Debug, Clone)]
struct Script {
    turn: TurnId,
    speaker: Speaker,
    early_deltas: Vec<String>,
    late_deltas: Vec<String>,
    /// `None`: the final transcript is what was streamed; `Some`: a revision.
    revision: Option<String>,
}

impl Script {
    fn streamed(&self) -> String {
        self.early_deltas
            .iter()
            .chain(&self.late_deltas)
            .map(String::as_str)
            .collect()
    }

    fn final_text(&self) -> String {
        self.revision.clone().unwrap_or_else(|| self.streamed())
    }

    /// The signals, as owned steps: 0 start, 1 delta, 2 stop, 3 done.
    fn steps(&self) -> Vec<Step> {
        let mut steps = vec![Step::Start];
        steps.extend(self.early_deltas.iter().cloned().map(Step::Delta));
        steps.push(Step::Stop);
        steps.extend(self.late_deltas.iter().cloned().map(Step::Delta));
        steps.push(Step::Done(self.final_text()));
        steps
    }
}

#[derive(Debug, Clone)]
enum Step {
    Start,
    Delta(String),
    Stop,
    Done(String),
    TurnComplete,
}

fn delta() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        "[a-z]{1,4} ?",
        Just("é".to_owned()),
        Just("\u{200d}".to_owned()),
        Just("👩".to_owned()),
    ]
}

fn script(turn: u64, speaker: Speaker) -> impl Strategy<Value = Script> {
    (
        prop::collection::vec(delta(), 0..5),
        prop::collection::vec(delta(), 0..4),
        prop::option::weighted(0.2, "[A-Z][a-z]{0,6}"),
    )
        .prop_map(move |(early_deltas, late_deltas, revision)| Script {
            turn: TurnId(turn),
            speaker,
            early_deltas,
            late_deltas,
            revision,
        })
}

fn conversation() -> impl Strategy<Value = (Vec<Script>, Vec<u8>)> {
    (1u64..4).prop_flat_map(|turns| {
        let scripts: Vec<_> = (1..=turns)
            .flat_map(|turn| {
                [
                    script(turn, Speaker::User),
                    script(turn, Speaker::Assistant),
                ]
            })
            .collect();
        (scripts, prop::collection::vec(any::<u8>(), 0..120))
    })
}

/// Merges the scripts (plus one TurnComplete per turn) in the order the picks choose, keeping
/// each script's own order. Returns the signals and the utterances in speech-start order.
fn interleave(scripts: &[Script], picks: &[u8]) -> (Vec<(TurnId, Speaker, Step)>, Vec<usize>) {
    let mut lanes: Vec<(TurnId, Speaker, Vec<Step>, Option<usize>)> = scripts
        .iter()
        .enumerate()
        .map(|(i, s)| (s.turn, s.speaker, s.steps(), Some(i)))
        .collect();
    let turns: Vec<TurnId> = scripts.iter().map(|s| s.turn).collect();
    for turn in turns
        .iter()
        .copied()
        .collect::<std::collections::BTreeSet<_>>()
    {
        lanes.push((turn, Speaker::User, vec![Step::TurnComplete], None));
    }
    let mut cursors = vec![0usize; lanes.len()];
    let mut merged = Vec::new();
    let mut speech_start_order = Vec::new();
    let mut pick = picks.iter().copied().cycle().chain(std::iter::repeat(0));
    loop {
        let live: Vec<usize> = (0..lanes.len())
            .filter(|&l| cursors[l] < lanes[l].2.len())
            .collect();
        if live.is_empty() {
            break;
        }
        let lane = live[pick.next().unwrap_or(0) as usize % live.len()];
        let (turn, speaker, steps, script) = &lanes[lane];
        let step = steps[cursors[lane]].clone();
        if matches!(step, Step::Start) {
            speech_start_order.push(script.expect("only scripts start speech"));
        }
        cursors[lane] += 1;
        merged.push((*turn, *speaker, step));
    }
    (merged, speech_start_order)
}

fn write(signals: &[(TurnId, Speaker, Step)]) -> Vec<Event> {
    let mut writer = TranscriptWriter::new("thread-p");
    let mut events = Vec::new();
    for (at, (turn, speaker, step)) in signals.iter().enumerate() {
        let (turn, speaker) = (*turn, *speaker);
        let input = match step {
            Step::Start => TranscriptInput::SpeechStarted { turn, speaker },
            Step::Delta(delta) => TranscriptInput::TranscriptDelta {
                turn,
                speaker,
                delta,
            },
            Step::Stop => TranscriptInput::SpeechStopped { turn, speaker },
            Step::Done(transcript) => TranscriptInput::TranscriptDone {
                turn,
                speaker,
                transcript,
            },
            Step::TurnComplete => TranscriptInput::TurnComplete { turn },
        };
        writer.push(at as i64, input, &mut events);
    }
    writer.finish(signals.len() as i64, &mut events);
    events
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn any_interleaving_of_session_signals_writes_a_strictly_valid_transcript_in_speech_start_order(
        (scripts, picks) in conversation()
    ) {
        let (signals, order) = interleave(&scripts, &picks);
        let events = write(&signals);
        let consumer = strict_consumer(&events);
        let expected: Vec<(String, String, String)> = order
            .iter()
            .map(|&i| {
                let s = &scripts[i];
                let role = if s.speaker == Speaker::User { "user" } else { "assistant" };
                (TranscriptWriter::message_id(s.turn, s.speaker), role.to_owned(), s.final_text())
            })
            .collect();
        prop_assert_eq!(texts(&consumer), expected);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn the_writer_output_also_passes_the_real_agui_verify_strict((scripts, picks) in conversation()) {
        let (signals, _) = interleave(&scripts, &picks);
        let verdict = assert_passes_agui_verify_strict(&write(&signals));
        prop_assert_eq!(&verdict["outcome"], "ok");
    }
}

// ---- arbitrary event sequences ----

fn optional(values: Vec<Value>) -> impl Strategy<Value = Option<Value>> {
    prop::option::of(prop::sample::select(values))
}

fn arbitrary_event() -> impl Strategy<Value = Value> {
    let types = prop::sample::select(vec![
        "RUN_STARTED",
        "RUN_FINISHED",
        "RUN_ERROR",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "TEXT_MESSAGE_CHUNK",
        "MESSAGES_SNAPSHOT",
        "CUSTOM",
        "RAW",
        "SUBAGENT_FINISHED",
        "STEP_STARTED",
        "SOMETHING_NEW",
    ]);
    (
        types,
        optional(vec![
            json!("m1"),
            json!("m2"),
            json!("m3"),
            Value::Null,
            json!(7),
        ]),
        optional(vec![
            json!("assistant"),
            json!("user"),
            json!("system"),
            json!("tool"),
            Value::Null,
        ]),
        optional(vec![json!("ann"), json!("bob"), Value::Null]),
        optional(vec![
            json!(""),
            json!("hi"),
            json!("é"),
            json!("say \"hi\"\n\u{1F600}"),
            Value::Null,
            json!(["x"]),
        ]),
        optional(vec![json!("s1"), json!("s2"), Value::Null]),
        optional(vec![
            json!({}),
            json!({"k": 1}),
            json!({"k": null, "j": [1]}),
            Value::Null,
            json!(3),
        ]),
        optional(vec![
            json!(1),
            json!(1.5),
            json!("x"),
            json!(9_007_199_254_740_993_i64),
            Value::Null,
        ]),
        optional(vec![
            json!([{"id": "m1", "role": "assistant", "content": "snap"}]),
            json!([{"id": "m2", "role": "user", "content": [{"type": "text", "text": "p"}]}]),
            json!([{"id": "t1", "role": "tool", "content": "r", "toolCallId": "c"}]),
            json!([{"id": 5}]),
            json!("not messages"),
        ]),
        optional(vec![
            json!({"upstream": [1, 2]}),
            json!("text"),
            Value::Null,
        ]),
    )
        .prop_map(
            |(kind, id, role, name, delta, tag, metadata, timestamp, messages, raw_event)| {
                let mut event =
                    json!({"type": kind, "threadId": "t", "runId": "r", "message": "boom"});
                let fields = [
                    ("messageId", id),
                    ("role", role),
                    ("name", name),
                    ("delta", delta),
                    ("subagentRunId", tag),
                    ("metadata", metadata),
                    ("timestamp", timestamp),
                    ("messages", messages),
                    ("rawEvent", raw_event),
                ];
                for (key, value) in fields {
                    if let Some(value) = value {
                        event[key] = value;
                    }
                }
                event
            },
        )
}

fn arbitrary_stream() -> impl Strategy<Value = Vec<Value>> {
    let run_started = Just(json!({"type": "RUN_STARTED", "threadId": "t", "runId": "r"}));
    prop::collection::vec(prop_oneof![1 => run_started, 6 => arbitrary_event()], 0..40)
}

/// Pushes every event; checks violations are typed, indexed at the failing event and sticky.
fn consume(events: &[Value], mode: Mode) -> Result<Consumer, TestCaseError> {
    let mut consumer = Consumer::new(mode);
    let mut first_failure = None;
    for (index, event) in events.iter().enumerate() {
        match consumer.push_value(event) {
            Ok(()) => prop_assert!(
                first_failure.is_none(),
                "a push succeeded after a violation"
            ),
            Err(violation) => {
                prop_assert!(Rule::ALL.contains(&violation.rule));
                prop_assert!(!violation.message.is_empty(), "a violation explains itself");
                match &first_failure {
                    None => {
                        prop_assert_eq!(violation.event_index, index);
                        first_failure = Some(violation);
                    }
                    Some(first) => {
                        prop_assert_eq!(first, &violation, "the first violation is sticky")
                    }
                }
            }
        }
    }
    Ok(consumer)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2_000, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_event_sequences_never_panic_and_every_rejection_is_a_typed_violation(events in arbitrary_stream()) {
        let consumer = consume(&events, Mode::Consumer)?;
        let strict = consume(&events, Mode::Strict)?;
        // Strict only adds checks: whatever it accepts, the consumer accepts identically.
        if strict.failure().is_none() {
            prop_assert!(consumer.failure().is_none());
            prop_assert_eq!(consumer.report(), strict.report());
        }
        // The report always has the conformance shape.
        let report = consumer.report();
        prop_assert!(report["outcome"] == "ok" || report["violation"]["rule"].is_string());
    }

    #[test]
    fn a_stream_read_from_json_text_gets_the_verdict_and_history_of_the_same_stream_as_values(
        events in arbitrary_stream(),
    ) {
        for mode in [Mode::Consumer, Mode::Strict] {
            let mut from_values = Consumer::new(mode);
            let mut from_text = Consumer::new(mode);
            for event in &events {
                let text = serde_json::to_string(event).expect("a value encodes");
                let by_value = from_values.push_value(event);
                prop_assert_eq!(from_text.push_json(&text), by_value);
                prop_assert_eq!(
                    Event::from_json_str(&text).map_err(|error| error.field),
                    Event::from_value(event).map_err(|error| error.field)
                );
            }
            prop_assert_eq!(from_text.report(), from_values.report());
        }
    }

    #[test]
    fn arbitrary_text_never_panics_the_decoder(text in "\\PC{0,80}") {
        let mut consumer = Consumer::new(Mode::Strict);
        let _ = consumer.push_json(&text);
        let _ = Event::from_json_str(&text);
    }
}
