//! The receive side's jitter buffer: RTP packets arrive early, late, twice or not at all; the
//! decoder needs one frame every 20 ms, in order.
//!
//! It holds packets by sequence number, starts playing out once it holds its target depth, and
//! adapts that target to the measured interarrival jitter (RFC 3550 §6.4.1) between one frame
//! and [`JitterConfig::max_target_ms`] (80 ms by default). A missing packet is concealed, or
//! rebuilt from the next packet's forward error correction when that one is already here. Pure:
//! arrival times come in as arguments; storage is allocated once.

use crate::codec::MAX_PACKET_BYTES;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JitterConfig {
    /// Duration of one packet.
    pub frame_ms: u32,
    /// RTP clock rate of the payload (48 kHz for Opus).
    pub clock_rate_hz: u32,
    /// The adaptive target never goes above this.
    pub max_target_ms: u32,
    /// How many packets can be held; a jump further ahead than this resynchronises.
    pub capacity_frames: usize,
}

impl Default for JitterConfig {
    fn default() -> Self {
        Self {
            frame_ms: 20,
            clock_rate_hz: 48_000,
            // Deep enough for a path whose packets take 40 ± 30 ms; the target follows the
            // measured jitter, so a steady network still plays after one frame.
            max_target_ms: 80,
            capacity_frames: 64,
        }
    }
}

/// What happened to a pushed packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PushOutcome {
    Queued,
    /// The same sequence number is already held.
    Duplicate,
    /// Its turn to play has passed.
    Late,
    /// Larger than any Opus packet; dropped.
    Oversized,
    /// So far from the playout point that the stream must have restarted: the buffer was
    /// emptied and starts again from this packet.
    Resynchronised,
}

/// What the decoder should do for the next 20 ms.
#[derive(Debug, PartialEq, Eq)]
pub enum Playout<'a> {
    /// Decode this packet.
    Packet(&'a [u8]),
    /// The packet is missing but the next one is here: decode its FEC data (`fec = true`).
    Recover(&'a [u8]),
    /// The packet is missing: conceal.
    Conceal,
    /// Nothing to play: not started yet, or the stream ran dry (silence, no concealment).
    Waiting,
}

/// Counters for the UI and the benchmarks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct JitterStats {
    /// Packets the sender numbered, from the first received to the highest: what should have
    /// arrived. Less the packets that did (`queued` and `late`), the packets the network lost.
    pub expected: u64,
    pub queued: u64,
    pub played: u64,
    pub recovered: u64,
    pub concealed: u64,
    pub duplicates: u64,
    pub late: u64,
    pub underruns: u64,
    pub resyncs: u64,
}

struct Slot {
    seq: u16,
    len: usize,
    occupied: bool,
    data: Box<[u8; MAX_PACKET_BYTES]>,
}

pub struct JitterBuffer {
    config: JitterConfig,
    slots: Box<[Slot]>,
    held: usize,
    /// While playing: the next sequence number to play. While buffering: the oldest held.
    head: Option<u16>,
    playing: bool,
    last_transit_ms: Option<f64>,
    jitter_ms: f64,
    /// The highest sequence number received, for [`JitterStats::expected`].
    highest_seq: Option<u16>,
    stats: JitterStats,
}

impl std::fmt::Debug for JitterBuffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JitterBuffer")
            .field("held", &self.held)
            .field("head", &self.head)
            .field("playing", &self.playing)
            .field("jitter_ms", &self.jitter_ms)
            .field("stats", &self.stats)
            .finish()
    }
}

/// `a - b` on the 16-bit sequence circle, as a signed distance.
fn seq_distance(a: u16, b: u16) -> i32 {
    i32::from(a.wrapping_sub(b) as i16)
}

impl JitterBuffer {
    pub fn new(config: JitterConfig) -> Self {
        let slots = (0..config.capacity_frames.max(2))
            .map(|_| Slot {
                seq: 0,
                len: 0,
                occupied: false,
                data: Box::new([0; MAX_PACKET_BYTES]),
            })
            .collect();
        Self {
            config,
            slots,
            held: 0,
            head: None,
            playing: false,
            last_transit_ms: None,
            jitter_ms: 0.0,
            highest_seq: None,
            stats: JitterStats::default(),
        }
    }

    fn slot_index(&self, seq: u16) -> usize {
        usize::from(seq) % self.slots.len()
    }

    /// Takes in one RTP packet that arrived at `arrival_ms`.
    pub fn push(
        &mut self,
        seq: u16,
        rtp_timestamp: u32,
        payload: &[u8],
        arrival_ms: u64,
    ) -> PushOutcome {
        if payload.len() > MAX_PACKET_BYTES {
            return PushOutcome::Oversized;
        }
        self.count_expected(seq);
        let mut outcome = PushOutcome::Queued;
        if let Some(head) = self.head {
            let distance = seq_distance(seq, head);
            if distance < 0 && self.playing {
                self.stats.late += 1;
                return PushOutcome::Late;
            }
            let span = if distance < 0 { -distance } else { distance };
            if span as usize >= self.slots.len() {
                self.flush();
                self.stats.resyncs += 1;
                outcome = PushOutcome::Resynchronised;
            } else if distance < 0 {
                // Still buffering and an older packet came in: it becomes the first to play,
                // unless that would push the newest held packet out of the window.
                if self.highest_held_distance_from(seq) >= self.slots.len() {
                    self.stats.late += 1;
                    return PushOutcome::Late;
                }
                self.head = Some(seq);
            }
        }
        if self.head.is_none() {
            self.head = Some(seq);
        }
        self.observe_transit(rtp_timestamp, arrival_ms);
        let index = self.slot_index(seq);
        let slot = &mut self.slots[index];
        if slot.occupied && slot.seq == seq {
            self.stats.duplicates += 1;
            return PushOutcome::Duplicate;
        }
        debug_assert!(
            !slot.occupied,
            "held packets lie within one window of the head"
        );
        slot.seq = seq;
        slot.len = payload.len();
        slot.data[..payload.len()].copy_from_slice(payload);
        slot.occupied = true;
        self.held += 1;
        self.stats.queued += 1;
        outcome
    }

    /// Counts the packets numbered up to `seq` when it is the highest yet; a jump too far to
    /// be loss (a restarted stream) counts as one.
    fn count_expected(&mut self, seq: u16) {
        match self.highest_seq {
            None => {
                self.stats.expected += 1;
                self.highest_seq = Some(seq);
            }
            Some(highest) => {
                let ahead = seq_distance(seq, highest);
                if ahead > 0 {
                    let ahead = ahead as usize;
                    self.stats.expected += if ahead < self.slots.len() {
                        ahead as u64
                    } else {
                        1
                    };
                    self.highest_seq = Some(seq);
                } else if -ahead as usize >= self.slots.len() {
                    // Far behind: a new stream, not a late packet of this one.
                    self.stats.expected += 1;
                    self.highest_seq = Some(seq);
                }
            }
        }
    }

    fn highest_held_distance_from(&self, seq: u16) -> usize {
        self.slots
            .iter()
            .filter(|slot| slot.occupied)
            .map(|slot| seq_distance(slot.seq, seq).unsigned_abs() as usize)
            .max()
            .unwrap_or(0)
    }

    /// RFC 3550 interarrival jitter, in milliseconds.
    fn observe_transit(&mut self, rtp_timestamp: u32, arrival_ms: u64) {
        let media_ms = f64::from(rtp_timestamp) * 1000.0 / f64::from(self.config.clock_rate_hz);
        let transit_ms = arrival_ms as f64 - media_ms;
        if let Some(last) = self.last_transit_ms {
            let mut change = transit_ms - last;
            // The RTP clock wraps every 2^32 ticks (~24.9 h at 48 kHz): ignore that step.
            if change.abs() > 3_600_000.0 {
                change = 0.0;
            }
            self.jitter_ms += (change.abs() - self.jitter_ms) / 16.0;
        }
        self.last_transit_ms = Some(transit_ms);
    }

    /// The depth the buffer fills to before it plays: one frame plus twice the jitter, in
    /// whole frames (rounded to the nearest, so a fraction of a millisecond of jitter does not
    /// cost a whole frame of latency), at most `max_target_ms`.
    pub fn target_ms(&self) -> u32 {
        let frame = self.config.frame_ms.max(1);
        let wanted = f64::from(frame) + 2.0 * self.jitter_ms;
        let frames = (wanted / f64::from(frame)).round().max(1.0) as u32;
        (frames * frame).min(self.config.max_target_ms.max(frame))
    }

    /// The measured interarrival jitter.
    pub fn jitter_ms(&self) -> f64 {
        self.jitter_ms
    }

    /// Audio held, in milliseconds.
    pub fn depth_ms(&self) -> u32 {
        self.held as u32 * self.config.frame_ms
    }

    pub fn stats(&self) -> JitterStats {
        self.stats
    }

    /// The next 20 ms. Call once per frame the player needs.
    pub fn pop(&mut self) -> Playout<'_> {
        if !self.playing {
            if self.held == 0 || self.depth_ms() < self.target_ms() {
                return Playout::Waiting;
            }
            self.playing = true;
        }
        let Some(head) = self.head else {
            self.playing = false;
            return Playout::Waiting;
        };
        if self.held == 0 {
            // Ran dry: the reply ended or the network stalled. Buffer up again before playing,
            // and don't count the silence between talkspurts as network jitter.
            self.playing = false;
            self.last_transit_ms = None;
            self.stats.underruns += 1;
            return Playout::Waiting;
        }
        self.head = Some(head.wrapping_add(1));
        let index = self.slot_index(head);
        if self.slots[index].occupied && self.slots[index].seq == head {
            self.slots[index].occupied = false;
            self.held -= 1;
            self.stats.played += 1;
            let slot = &self.slots[index];
            return Playout::Packet(&slot.data[..slot.len]);
        }
        let next = head.wrapping_add(1);
        let next_index = self.slot_index(next);
        let next_slot = &self.slots[next_index];
        if next_slot.occupied && next_slot.seq == next {
            self.stats.recovered += 1;
            return Playout::Recover(&next_slot.data[..next_slot.len]);
        }
        self.stats.concealed += 1;
        Playout::Conceal
    }

    /// Drops everything held (barge-in): the next packet starts a fresh playout.
    pub fn flush(&mut self) {
        for slot in self.slots.iter_mut() {
            slot.occupied = false;
        }
        self.held = 0;
        self.head = None;
        self.playing = false;
        self.last_transit_ms = None;
    }
}
