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

fn pop(buffer: &mut JitterBuffer, now_ms: u64) -> Out {
    let seq_of = |bytes: &[u8]| u16::from(bytes[0]) | (u16::from(bytes[1]) << 8);
    match buffer.pop(now_ms) {
        Playout::Packet(bytes) => Out::Packet(seq_of(bytes)),
        Playout::Recover(bytes) => Out::Recover(seq_of(bytes)),
        Playout::Conceal => Out::Conceal,
        Playout::Waiting => Out::Waiting,
    }
}

#[test]
fn packets_on_time_play_in_order_after_one_frame_of_buffering() {
    let mut buffer = JitterBuffer::new(JitterConfig::default());
    assert_eq!(pop(&mut buffer, 0), Out::Waiting);
    for seq in 0..5u16 {
        assert_eq!(
            push(&mut buffer, seq, u64::from(seq) * 20),
            PushOutcome::Queued
        );
        assert_eq!(pop(&mut buffer, u64::from(seq) * 20), Out::Packet(seq));
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
    let played: Vec<Out> = (0..5)
        .map(|frame| pop(&mut buffer, 80 + frame * 20))
        .collect();
    assert_eq!(played, (0..5).map(Out::Packet).collect::<Vec<_>>());
}

#[test]
fn a_duplicate_is_dropped_and_a_packet_after_its_turn_is_late() {
    let mut buffer = JitterBuffer::new(JitterConfig::default());
    push(&mut buffer, 10, 0);
    assert_eq!(push(&mut buffer, 10, 1), PushOutcome::Duplicate);
    assert_eq!(pop(&mut buffer, 1), Out::Packet(10));
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
    let played: Vec<Out> = (0..6)
        .map(|frame| pop(&mut buffer, 100 + frame * 20))
        .collect();
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
    assert_eq!(pop(&mut buffer, 0), Out::Packet(0));
    assert_eq!(pop(&mut buffer, 20), Out::Waiting);
    assert_eq!(buffer.stats().underruns, 1);
    push(&mut buffer, 1, 500);
    assert_eq!(pop(&mut buffer, 500), Out::Packet(1));
}

#[test]
fn the_spread_of_the_delays_raises_the_target_depth_up_to_its_cap() {
    let mut buffer = JitterBuffer::new(JitterConfig::default());
    // Arrivals alternate 0 and 15 ms late against the media clock.
    for seq in 0..200u16 {
        let late_ms = if seq % 2 == 0 { 0 } else { 15 };
        push(&mut buffer, seq, u64::from(seq) * 20 + late_ms);
        let _ = pop(&mut buffer, u64::from(seq) * 20 + late_ms);
    }
    assert!(buffer.jitter_ms() > 10.0, "jitter {}", buffer.jitter_ms());
    assert_eq!(
        buffer.delay_spread_ms(),
        20.0,
        "15 ms, to the 5 ms step above"
    );
    assert_eq!(
        buffer.target_ms(),
        40,
        "one frame and the spread, in frames"
    );

    let mut wild = JitterBuffer::new(JitterConfig::default());
    for seq in 0..200u16 {
        let late_ms = if seq % 2 == 0 { 0 } else { 400 };
        push(&mut wild, seq, u64::from(seq) * 20 + late_ms);
    }
    assert_eq!(wild.target_ms(), 160, "the target is capped");

    let mut steady = JitterBuffer::new(JitterConfig::default());
    for seq in 0..200u16 {
        push(&mut steady, seq, u64::from(seq) * 20 + u64::from(seq % 3));
        let _ = pop(&mut steady, u64::from(seq) * 20 + u64::from(seq % 3));
    }
    assert_eq!(steady.target_ms(), 20, "a steady network keeps one frame");
}

/// A seeded stream of delays, each drawn evenly from `low_ms..=high_ms` (xorshift64*).
#[derive(Clone)]
struct Delays {
    state: u64,
    low_ms: u64,
    high_ms: u64,
}

impl Delays {
    fn next_ms(&mut self) -> u64 {
        self.state ^= self.state >> 12;
        self.state ^= self.state << 25;
        self.state ^= self.state >> 27;
        let draw = self.state.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 32;
        self.low_ms + draw % (self.high_ms - self.low_ms + 1)
    }
}

/// What one talkspurt met after its first second.
#[derive(Debug, Default, PartialEq)]
struct AfterFirstSecond {
    /// Packets that came after their turn (concealed or rebuilt instead).
    late_packets: u32,
    /// Frames handed to the speaker after it needed them: gaps a listener hears.
    heard_gaps: u32,
}

/// The silence the engine puts ahead of a reply on an idle speaker (its default cushion).
const CUSHION_MS: u64 = 10;

/// Talkspurts of `talkspurt_frames` frames with a second of silence between them, each packet
/// delayed by `delays`, played by the downlink's own pacer stepping a millisecond at a time into
/// a speaker that starts each talkspurt [`CUSHION_MS`] after its first frame and then needs one
/// frame every 20 ms (a frame it gets late delays the rest, as a device that ran dry does).
/// `clock_runs_in_silence`: whether the sender's RTP clock advances through the silences (a
/// sender need not). Returns what each talkspurt met after its first 50 frames.
fn play_through(
    mut delays: Delays,
    talkspurts: u16,
    talkspurt_frames: u16,
    clock_runs_in_silence: bool,
) -> (Vec<AfterFirstSecond>, JitterBuffer) {
    use walkie_dsp::playout::PlayoutPacer;

    const SILENCE_MS: u64 = 1_000;
    struct Sent {
        seq: u16,
        rtp_timestamp: u32,
        arrival_ms: u64,
        talkspurt: usize,
        offset: u16,
    }
    let mut sent = Vec::new();
    for talkspurt in 0..talkspurts {
        for offset in 0..talkspurt_frames {
            let seq = talkspurt * talkspurt_frames + offset;
            let send_ms = u64::from(talkspurt) * (u64::from(talkspurt_frames) * 20 + SILENCE_MS)
                + u64::from(offset) * 20;
            let rtp_timestamp = if clock_runs_in_silence {
                (send_ms * 48) as u32
            } else {
                u32::from(seq) * FRAME_TICKS
            };
            sent.push(Sent {
                seq,
                rtp_timestamp,
                arrival_ms: send_ms + delays.next_ms(),
                talkspurt: usize::from(talkspurt),
                offset,
            });
        }
    }
    sent.sort_by_key(|packet| packet.arrival_ms);
    let end_ms = sent.last().map_or(0, |packet| packet.arrival_ms) + 500;
    let mut outcomes: Vec<AfterFirstSecond> = (0..talkspurts)
        .map(|_| AfterFirstSecond::default())
        .collect();
    let mut buffer = JitterBuffer::new(JitterConfig::default());
    let mut pacer = PlayoutPacer::new();
    let mut next = 0;
    // The talkspurt playing, the frames the speaker got of it, and when it plays the first.
    let mut speaker: Option<(usize, u64, u64)> = None;
    for now_ms in 0..=end_ms {
        while next < sent.len() && sent[next].arrival_ms <= now_ms {
            let packet = &sent[next];
            let outcome = buffer.push(
                packet.seq,
                packet.rtp_timestamp,
                &payload(packet.seq),
                now_ms,
            );
            if outcome == PushOutcome::Late && packet.offset >= 50 {
                outcomes[packet.talkspurt].late_packets += 1;
            }
            next += 1;
        }
        let now_us = now_ms * 1_000;
        while pacer.is_due(now_us) {
            let talkspurt = match pop(&mut buffer, now_ms) {
                Out::Waiting => {
                    pacer.found_none(now_us);
                    break;
                }
                Out::Packet(seq) | Out::Recover(seq) => usize::from(seq / talkspurt_frames),
                Out::Conceal => speaker.map_or(0, |(talkspurt, _, _)| talkspurt),
            };
            pacer.took_frame(now_us);
            let (playing, frames, first_plays_ms) = match speaker {
                Some(playing) if playing.0 == talkspurt => playing,
                _ => (talkspurt, 0, now_ms + CUSHION_MS),
            };
            let needed_ms = first_plays_ms + frames * 20;
            let late_ms = now_ms.saturating_sub(needed_ms);
            if late_ms > 0 && frames >= 50 {
                outcomes[playing].heard_gaps += 1;
            }
            speaker = Some((playing, frames + 1, first_plays_ms + late_ms));
        }
    }
    (outcomes, buffer)
}

#[test]
fn at_40_plus_or_minus_30_ms_of_jitter_no_gap_is_heard_after_the_first_second_and_after_the_first_reply_no_packet_is_late()
 {
    let delays = Delays {
        state: 20_261_206,
        low_ms: 10,
        high_ms: 70,
    };
    for clock_runs_in_silence in [true, false] {
        let (outcomes, buffer) = play_through(delays.clone(), 6, 150, clock_runs_in_silence);
        let context = format!(
            "clock runs in silence: {clock_runs_in_silence}; {outcomes:?}; {:?}",
            buffer.stats()
        );
        assert!(
            outcomes.iter().all(|outcome| outcome.heard_gaps == 0),
            "{context}"
        );
        // The first reply learns the spread as it plays; the ones after start with it.
        assert!(
            outcomes[1..]
                .iter()
                .all(|outcome| outcome.late_packets == 0),
            "{context}"
        );
        assert!(
            (60..=100).contains(&buffer.target_ms()),
            "the target covers the 60 ms spread and little more: {}",
            buffer.target_ms()
        );
    }
}

#[test]
fn silences_and_flushes_do_not_count_as_delay_on_a_steady_network() {
    for clock_runs_in_silence in [true, false] {
        let steady = Delays {
            state: 7,
            low_ms: 20,
            high_ms: 22,
        };
        // (A packet 2 ms slower than the first still runs a one-frame buffer dry for those 2 ms:
        // the device's cushion covers that, not a frame more of latency on every call.)
        let (_, buffer) = play_through(steady, 4, 100, clock_runs_in_silence);
        assert_eq!(
            buffer.target_ms(),
            20,
            "clock runs in silence: {clock_runs_in_silence}"
        );
    }

    // A barge-in: the buffer is flushed and the next reply's clock starts elsewhere.
    let mut buffer = JitterBuffer::new(JitterConfig::default());
    for seq in 0..50u16 {
        push(&mut buffer, seq, u64::from(seq) * 20 + 20);
        let _ = pop(&mut buffer, u64::from(seq) * 20 + 20);
    }
    buffer.flush();
    for seq in 50..100u16 {
        push(&mut buffer, seq, u64::from(seq) * 20 + 700);
        let _ = pop(&mut buffer, u64::from(seq) * 20 + 700);
    }
    assert_eq!(
        buffer.target_ms(),
        20,
        "the reply after a flush starts afresh"
    );
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
    assert_eq!(pop(&mut buffer, 0), Out::Waiting);
    // After a flush the next packet starts a new playout, whatever its number.
    push(&mut buffer, 3, 100);
    assert_eq!(pop(&mut buffer, 100), Out::Packet(3));
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
    let played: Vec<Out> = (0..4)
        .map(|frame| pop(&mut buffer, 60 + frame * 20))
        .collect();
    assert_eq!(
        played,
        seqs.iter().map(|s| Out::Packet(*s)).collect::<Vec<_>>()
    );
}

#[test]
fn a_jump_far_ahead_resynchronises_instead_of_waiting_forever() {
    let mut buffer = JitterBuffer::new(JitterConfig::default());
    push(&mut buffer, 0, 0);
    assert_eq!(pop(&mut buffer, 0), Out::Packet(0));
    assert_eq!(push(&mut buffer, 30_000, 20), PushOutcome::Resynchronised);
    assert_eq!(pop(&mut buffer, 20), Out::Packet(30_000));
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
        pop(&mut buffer, arrival_ms);
    }
    let stats = buffer.stats();
    assert_eq!(stats.expected, 100, "the first to the highest numbered");
    assert_eq!(
        stats.expected - stats.queued - stats.late,
        10,
        "every tenth lost, the reordered and duplicated ones not: {stats:?}"
    );
}
