//! The jitter buffer under the network's bad habits: reordering, duplicates, late and lost
//! packets, jitter, and barge-in flushes.

use walkie_dsp::jitter::{JitterBuffer, JitterConfig, Playout, PushOutcome};

const FRAME_TICKS: u32 = 960; // 20 ms at 48 kHz

fn payload(seq: u16) -> Vec<u8> {
    vec![(seq & 0xFF) as u8, (seq >> 8) as u8, 0xAB]
}

fn push(buffer: &mut JitterBuffer, seq: u16, arrival_ms: u64) -> PushOutcome {
    buffer.push(seq, u32::from(seq) * FRAME_TICKS, &payload(seq), arrival_ms)
}

/// What a pop yields, reduced to a comparable value: Some(seq) for a packet.
#[derive(Debug, PartialEq)]
enum Out {
    Packet(u16),
    Recover(u16),
    Conceal,
    Waiting,
}

fn pop(buffer: &mut JitterBuffer) -> Out {
    let seq_of = |bytes: &[u8]| u16::from(bytes[0]) | (u16::from(bytes[1]) << 8);
    match buffer.pop() {
        Playout::Packet(bytes) => Out::Packet(seq_of(bytes)),
        Playout::Recover(bytes) => Out::Recover(seq_of(bytes)),
        Playout::Conceal => Out::Conceal,
        Playout::Waiting => Out::Waiting,
    }
}

#[test]
fn packets_on_time_play_in_order_after_one_frame_of_buffering() {
    let mut buffer = JitterBuffer::new(JitterConfig::default());
    assert_eq!(pop(&mut buffer), Out::Waiting);
    for seq in 0..5u16 {
        assert_eq!(
            push(&mut buffer, seq, u64::from(seq) * 20),
            PushOutcome::Queued
        );
        assert_eq!(pop(&mut buffer), Out::Packet(seq));
    }
    assert_eq!(buffer.target_ms(), 20);
    assert_eq!(buffer.stats().played, 5);
}

#[test]
fn reordered_packets_come_out_in_sequence() {
    let mut buffer = JitterBuffer::new(JitterConfig::default());
    for (seq, arrival) in [(1u16, 20u64), (0, 21), (3, 60), (2, 61), (4, 80)] {
        push(&mut buffer, seq, arrival);
    }
    let played: Vec<Out> = (0..5).map(|_| pop(&mut buffer)).collect();
    assert_eq!(played, (0..5).map(Out::Packet).collect::<Vec<_>>());
}

#[test]
fn a_duplicate_is_dropped_and_a_packet_after_its_turn_is_late() {
    let mut buffer = JitterBuffer::new(JitterConfig::default());
    push(&mut buffer, 10, 0);
    assert_eq!(push(&mut buffer, 10, 1), PushOutcome::Duplicate);
    assert_eq!(pop(&mut buffer), Out::Packet(10));
    assert_eq!(push(&mut buffer, 9, 5), PushOutcome::Late);
    assert_eq!(buffer.stats().duplicates, 1);
    assert_eq!(buffer.stats().late, 1);
}

#[test]
fn a_lost_packet_is_recovered_from_the_next_one_or_concealed() {
    let mut buffer = JitterBuffer::new(JitterConfig::default());
    for seq in [0u16, 2, 5] {
        push(&mut buffer, seq, u64::from(seq) * 20);
    }
    let played: Vec<Out> = (0..6).map(|_| pop(&mut buffer)).collect();
    assert_eq!(
        played,
        vec![
            Out::Packet(0),
            Out::Recover(2),
            Out::Packet(2),
            Out::Conceal,
            Out::Recover(5),
            Out::Packet(5)
        ]
    );
    assert_eq!(buffer.stats().concealed, 1);
    assert_eq!(buffer.stats().recovered, 2);
}

#[test]
fn a_stream_that_runs_dry_waits_in_silence_then_buffers_again() {
    let mut buffer = JitterBuffer::new(JitterConfig::default());
    push(&mut buffer, 0, 0);
    assert_eq!(pop(&mut buffer), Out::Packet(0));
    assert_eq!(pop(&mut buffer), Out::Waiting);
    assert_eq!(buffer.stats().underruns, 1);
    push(&mut buffer, 1, 500);
    assert_eq!(pop(&mut buffer), Out::Packet(1));
}

#[test]
fn jitter_raises_the_target_depth_but_never_above_80_ms() {
    let mut buffer = JitterBuffer::new(JitterConfig::default());
    // Arrivals alternate 0 and 15 ms late against the media clock.
    for seq in 0..200u16 {
        let late_ms = if seq % 2 == 0 { 0 } else { 15 };
        push(&mut buffer, seq, u64::from(seq) * 20 + late_ms);
        let _ = pop(&mut buffer);
    }
    assert!(buffer.jitter_ms() > 10.0, "jitter {}", buffer.jitter_ms());
    assert_eq!(
        buffer.target_ms(),
        40,
        "one frame and twice the jitter, in frames"
    );

    let mut wild = JitterBuffer::new(JitterConfig::default());
    for seq in 0..200u16 {
        let late_ms = if seq % 2 == 0 { 0 } else { 90 };
        push(&mut wild, seq, u64::from(seq) * 20 + late_ms);
    }
    assert_eq!(wild.target_ms(), 80, "the target is capped");

    let mut steady = JitterBuffer::new(JitterConfig::default());
    for seq in 0..200u16 {
        push(&mut steady, seq, u64::from(seq) * 20);
        let _ = pop(&mut steady);
    }
    assert_eq!(steady.target_ms(), 20, "a steady network keeps one frame");
}

#[test]
fn the_depth_is_observable_and_a_flush_empties_it_at_once() {
    let mut buffer = JitterBuffer::new(JitterConfig::default());
    for seq in 0..4u16 {
        push(&mut buffer, seq, 0);
    }
    assert_eq!(buffer.depth_ms(), 80);
    buffer.flush();
    assert_eq!(buffer.depth_ms(), 0);
    assert_eq!(pop(&mut buffer), Out::Waiting);
    // After a flush the next packet starts a new playout, whatever its number.
    push(&mut buffer, 3, 100);
    assert_eq!(pop(&mut buffer), Out::Packet(3));
}

#[test]
fn sequence_numbers_wrap_around_without_a_hiccup() {
    let mut buffer = JitterBuffer::new(JitterConfig::default());
    let seqs = [65_534u16, 65_535, 0, 1];
    for (i, seq) in seqs.iter().enumerate() {
        buffer.push(
            *seq,
            (i as u32) * FRAME_TICKS,
            &payload(*seq),
            i as u64 * 20,
        );
    }
    let played: Vec<Out> = (0..4).map(|_| pop(&mut buffer)).collect();
    assert_eq!(
        played,
        seqs.iter().map(|s| Out::Packet(*s)).collect::<Vec<_>>()
    );
}

#[test]
fn a_jump_far_ahead_resynchronises_instead_of_waiting_forever() {
    let mut buffer = JitterBuffer::new(JitterConfig::default());
    push(&mut buffer, 0, 0);
    assert_eq!(pop(&mut buffer), Out::Packet(0));
    assert_eq!(push(&mut buffer, 30_000, 20), PushOutcome::Resynchronised);
    assert_eq!(pop(&mut buffer), Out::Packet(30_000));
    assert_eq!(buffer.stats().resyncs, 1);
}

#[test]
fn an_oversized_payload_is_refused() {
    let mut buffer = JitterBuffer::new(JitterConfig::default());
    assert_eq!(buffer.push(0, 0, &[0u8; 2_000], 0), PushOutcome::Oversized);
    assert_eq!(buffer.depth_ms(), 0);
}

#[test]
fn the_packets_the_network_lost_are_those_expected_that_never_came() {
    let mut buffer = JitterBuffer::new(JitterConfig::default());
    // 0..100 sent around the wrap, every tenth lost, one reordered, one duplicated.
    let mut arrival_ms = 0;
    for offset in 0u16..100 {
        let seq = 65_500u16.wrapping_add(offset);
        if offset % 10 == 3 {
            continue;
        }
        let seq = match offset {
            50 => seq.wrapping_add(1),
            51 => seq.wrapping_sub(1),
            _ => seq,
        };
        push(&mut buffer, seq, arrival_ms);
        if offset == 60 {
            push(&mut buffer, seq, arrival_ms);
        }
        arrival_ms += 20;
        pop(&mut buffer);
    }
    let stats = buffer.stats();
    assert_eq!(stats.expected, 100, "the first to the highest numbered");
    assert_eq!(
        stats.expected - stats.queued - stats.late,
        10,
        "every tenth lost, the reordered and duplicated ones not: {stats:?}"
    );
}
