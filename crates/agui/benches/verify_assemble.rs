//! Verify + assemble throughput on a 1 M-event synthetic spoken conversation (written by the
//! real TranscriptWriter), consumer and strict mode, plus decode + verify + assemble from JSON
//! text. `AGUI_BENCH_EVENTS_OUT=path` also writes the same events as JSON lines, the very text
//! the decoding bench reads, for bench/agui/compare.mjs to feed the official @ag-ui/client
//! verifier.

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use walkie_agui::{Consumer, Event, Mode, synthetic};

const EVENTS: usize = 1_000_000;

/// Returns the consumer so that dropping the assembled history (once per conversation, at the
/// end of a session) is not timed as part of processing events (`iter_with_large_drop`).
fn verify_and_assemble(events: &[Event], mode: Mode) -> Consumer {
    let mut consumer = Consumer::new(mode);
    for event in events {
        consumer
            .push(event)
            .expect("the synthetic conversation is valid");
    }
    consumer
}

fn bench(criterion: &mut Criterion) {
    let events = synthetic::conversation(EVENTS);
    let lines: Vec<String> = events
        .iter()
        .map(|event| serde_json::to_string(event).expect("serialises"))
        .collect();
    if let Ok(path) = std::env::var("AGUI_BENCH_EVENTS_OUT") {
        std::fs::write(&path, lines.join("\n")).expect("the events file is writable");
        eprintln!("wrote {} events to {path}", events.len());
    }

    let mut group = criterion.benchmark_group("agui");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(8))
        .warm_up_time(Duration::from_secs(2));
    group.throughput(Throughput::Elements(events.len() as u64));
    group.bench_function("verify_assemble_1m", |b| {
        b.iter_with_large_drop(|| verify_and_assemble(black_box(&events), Mode::Consumer))
    });
    group.bench_function("verify_assemble_strict_1m", |b| {
        b.iter_with_large_drop(|| verify_and_assemble(black_box(&events), Mode::Strict))
    });
    group.bench_function("decode_verify_assemble_1m", |b| {
        b.iter_with_large_drop(|| {
            let mut consumer = Consumer::new(Mode::Consumer);
            for line in &lines {
                consumer.push_json(black_box(line)).expect("valid");
            }
            consumer
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
