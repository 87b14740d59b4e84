//! What saving costs: one journal append per session event (a transcript delta, serialized and
//! written with one `write`), and one second of assistant audio written to a turn WAV in 20 ms
//! chunks with a header flush after each (as the recorder does). Files are real, in a temporary
//! folder on the same disk as the target directory.

use std::hint::black_box;
use std::sync::Arc;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use walkie_session::{PartDelta, PartDeltaEvent, PartIndex, SessionEvent, Speaker, StampedEvent};
use walkie_store::journal::{JournalFile, Record};
use walkie_store::wav::{TurnWav, UnsavedAudio};

const SAMPLE_RATE_HZ: u32 = 24_000;
const CHUNK_SAMPLES: usize = 480;

fn journal_append(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let mut journal =
        JournalFile::create_new(&dir.path().join("journal.jsonl")).expect("a journal");
    let record = Record::Session {
        unix_ms: 1_700_000_000_000,
        turn: Some(12),
        event: StampedEvent {
            seq: 4_242,
            at_ms: 123_456,
            event: SessionEvent::PartDelta(PartDeltaEvent {
                index: PartIndex(24),
                delta: PartDelta::transcript(
                    Speaker::Assistant,
                    Arc::from("sure, "),
                    Arc::from("Well, sure, "),
                ),
            }),
        },
    };
    let mut group = c.benchmark_group("journal");
    group.throughput(Throughput::Elements(1));
    group.bench_function("append_transcript_delta_event", |b| {
        b.iter(|| {
            journal
                .append(black_box(&record))
                .expect("the append is written")
        })
    });
    group.finish();
}

fn wav_write(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let chunk: Vec<i16> = (0..CHUNK_SAMPLES)
        .map(|i| (i as i16).wrapping_mul(97))
        .collect();
    let chunks_per_second = SAMPLE_RATE_HZ as usize / CHUNK_SAMPLES;
    let mut group = c.benchmark_group("turn_wav");
    group.throughput(Throughput::Elements(SAMPLE_RATE_HZ as u64));
    group.bench_function("write_one_second_24khz_in_20ms_chunks", |b| {
        let (mut wav, created) = TurnWav::create(
            dir.path().join("turn.wav"),
            SAMPLE_RATE_HZ,
            UnsavedAudio::new(SAMPLE_RATE_HZ as usize),
        );
        created.expect("the WAV is created");
        b.iter(|| {
            for _ in 0..chunks_per_second {
                wav.write(black_box(&chunk)).expect("the chunk is written");
            }
        })
    });
    group.finish();
}

criterion_group!(benches, journal_append, wav_write);
criterion_main!(benches);
