//! After warm-up, verifying and assembling a CONTENT event allocates nothing: the id lookup
//! borrows, the delta is appended in place. The only allocations left are the text buffer's own
//! geometric growth, which is amortised (O(log n) over a message of n bytes) and is measured here
//! too. The same holds for a CONTENT event read from JSON text. Counted with dhat's counting
//! global allocator.

use walkie_agui::event::{TextMessageContent, TextMessageStart};
use walkie_agui::{Consumer, Event, Mode};

#[global_allocator]
static ALLOCATOR: dhat::Alloc = dhat::Alloc;

fn content(message_id: &str, delta: &str) -> Event {
    Event::TextMessageContent(TextMessageContent {
        message_id: message_id.to_owned(),
        delta: delta.to_owned(),
        subagent_run_id: None,
        metadata: None,
        timestamp: None,
        raw_event: None,
    })
}

fn allocations_during(work: impl FnOnce()) -> u64 {
    let before = dhat::HeapStats::get().total_blocks;
    work();
    dhat::HeapStats::get().total_blocks - before
}

#[test]
fn content_events_allocate_nothing_after_warm_up() {
    let _profiler = dhat::Profiler::builder().testing().build();

    let mut consumer = Consumer::new(Mode::Strict);
    let setup: Vec<Event> = vec![
        serde_json::from_str(r#"{"type":"RUN_STARTED","threadId":"t","runId":"r"}"#)
            .expect("valid"),
        Event::TextMessageStart(TextMessageStart {
            message_id: "m1".into(),
            role: None,
            name: None,
            subagent_run_id: None,
            metadata: None,
            timestamp: None,
            raw_event: None,
        }),
    ];
    for event in &setup {
        consumer.push(event).expect("valid");
    }
    // Warm-up: the message's text grows to its working size (64 KiB exactly, then one more
    // byte, which makes the buffer grow geometrically and leaves room to spare).
    consumer
        .push(&content("m1", &"x".repeat(64 * 1024)))
        .expect("valid");
    consumer.push(&content("m1", "x")).expect("valid");
    let warmed_up_length = consumer.messages()[0].content().map_or(0, str::len);

    // Three rounds of 3 000 word-sized deltas (45 kB in all) fit in the capacity the warm-up left:
    // zero allocations. dhat counts every thread of the process, and the test harness's own thread
    // allocates now and then: the fewest of the three rounds is this code's. An allocation per
    // event would show 3 000 in every round.
    let word = content("m1", "word ");
    let steady = (0..3)
        .map(|_| {
            allocations_during(|| {
                for _ in 0..3_000 {
                    consumer.push(&word).expect("valid");
                }
            })
        })
        .min()
        .expect("three rounds");
    assert_eq!(steady, 0, "verify + assemble of a CONTENT event allocated");
    assert_eq!(
        consumer.messages()[0].content().map_or(0, str::len),
        warmed_up_length + 45_000
    );

    // Without a warm-up of the buffer, growth is geometric: a handful of allocations for 200 000
    // deltas, never one per event.
    let growing = allocations_during(|| {
        for _ in 0..200_000 {
            consumer.push(&word).expect("valid");
        }
    });
    assert!(
        growing <= 8,
        "{growing} allocations for 200 000 deltas: growth should be amortised"
    );

    // From JSON text (`push_json`, as agui-verify reads), a CONTENT event without escapes is
    // read in place: nothing allocated either, once warmed up the same way.
    let mut from_text = Consumer::new(Mode::Strict);
    for line in [
        r#"{"type":"RUN_STARTED","threadId":"t","runId":"r"}"#.to_owned(),
        r#"{"type":"TEXT_MESSAGE_START","messageId":"m1"}"#.to_owned(),
        format!(
            r#"{{"type":"TEXT_MESSAGE_CONTENT","messageId":"m1","delta":"{}"}}"#,
            "x".repeat(64 * 1024)
        ),
        r#"{"type":"TEXT_MESSAGE_CONTENT","messageId":"m1","delta":"x"}"#.to_owned(),
    ] {
        from_text.push_json(&line).expect("valid");
    }
    let word = r#"{"type":"TEXT_MESSAGE_CONTENT","messageId":"m1","delta":"word "}"#;
    let steady = (0..3)
        .map(|_| {
            allocations_during(|| {
                for _ in 0..3_000 {
                    from_text.push_json(word).expect("valid");
                }
            })
        })
        .min()
        .expect("three rounds");
    assert_eq!(
        steady, 0,
        "decode + verify + assemble of a CONTENT text allocated"
    );
    assert_eq!(
        from_text.messages()[0].content().map_or(0, str::len),
        warmed_up_length + 45_000
    );
}
