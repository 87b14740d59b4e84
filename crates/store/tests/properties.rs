//! Property targets for the two crash-tolerant readers: the journal reader and the WAV repair
//! never panic on any input, and a journal or WAV cut at any byte keeps everything before it.

use proptest::prelude::*;
use walkie_session::{SessionEvent, StampedEvent};
use walkie_store::journal::{ConversationStarted, Record};
use walkie_store::wav::{WAV_HEADER_BYTES, canonical_header};
use walkie_store::{parse_journal, plan_wav_repair};

fn sample_journal(records: usize) -> (Vec<u8>, Vec<Record>) {
    let mut all = vec![Record::Started(ConversationStarted {
        format_version: 1,
        id: "2024-01-01_00-00-00".into(),
        unix_ms: 1,
        utc_offset_minutes: 0,
        user_sample_rate_hz: 24_000,
        assistant_sample_rate_hz: 24_000,
    })];
    for seq in 0..records as u64 {
        all.push(Record::Session {
            unix_ms: seq as i64,
            turn: Some(1),
            event: StampedEvent {
                seq,
                at_ms: seq,
                event: SessionEvent::TurnComplete,
            },
        });
    }
    let mut bytes = Vec::new();
    let mut line = Vec::new();
    for record in &all {
        record.to_line(&mut line);
        bytes.extend_from_slice(&line);
    }
    (bytes, all)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn the_journal_reader_never_panics_on_any_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
        let parsed = parse_journal(&bytes);
        prop_assert!(parsed.intact_len_bytes <= bytes.len() as u64);
    }

    #[test]
    fn the_journal_reader_never_panics_on_mangled_records(
        records in 1usize..8,
        edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..6),
    ) {
        let (mut bytes, _) = sample_journal(records);
        for (at, byte) in edits {
            let index = at.index(bytes.len());
            bytes[index] = byte;
        }
        let _ = parse_journal(&bytes);
    }

    #[test]
    fn a_journal_cut_at_any_byte_keeps_every_whole_record_before_the_cut(
        records in 1usize..10,
        cut in any::<prop::sample::Index>(),
    ) {
        let (bytes, all) = sample_journal(records);
        let cut = cut.index(bytes.len() + 1);
        let parsed = parse_journal(&bytes[..cut]);
        let whole_lines = bytes[..cut].iter().filter(|&&b| b == b'\n').count();
        prop_assert!(parsed.garbage.is_empty());
        prop_assert!(parsed.records.len() >= whole_lines);
        for ((_, read), written) in parsed.records.iter().zip(&all) {
            prop_assert_eq!(read, written);
        }
    }

    #[test]
    fn the_wav_repair_never_panics_on_any_header(
        head in proptest::collection::vec(any::<u8>(), 0..64),
        len in any::<u64>(),
        rate in any::<u32>(),
    ) {
        if let Ok(plan) = plan_wav_repair(&head, len, rate) {
            prop_assert!(plan.repaired_len_bytes >= WAV_HEADER_BYTES);
            prop_assert!(plan.repaired_len_bytes <= len.max(WAV_HEADER_BYTES));
        }
    }

    #[test]
    fn a_wav_cut_at_any_length_is_repaired_to_its_whole_samples(
        extra_bytes in 0u64..100_000,
        stale_count in any::<u32>(),
    ) {
        let header = canonical_header(24_000, u64::from(stale_count) % 50_000);
        let len = WAV_HEADER_BYTES + extra_bytes;
        let plan = plan_wav_repair(&header, len, 16_000).expect("a store WAV is repairable");
        prop_assert_eq!(plan.sample_count, extra_bytes / 2);
        prop_assert_eq!(plan.sample_rate_hz, 24_000);
        prop_assert_eq!(plan.header, canonical_header(24_000, extra_bytes / 2));
    }
}
