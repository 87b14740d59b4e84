//! The receive side's jitter buffer: RTP packets arrive early, late, twice or not at all; the
//! decoder needs one frame every 20 ms, in order.
//!
//! It holds packets by sequence number and starts a talkspurt once its first packet has waited
//! as long as the fastest recent packet would have plus the spread of the recent delays (the
//! 95th percentile of each packet's delay over the fastest of the last few seconds, as WebRTC's
//! NetEq does), at most [`JitterConfig::max_target_ms`] of audio. From then on a frame is taken
//! every 20 ms, so a packet is late only when its delay exceeds the fastest one's by more than
//! the spread: the start is timed by the packet's media clock rather than by how many packets
//! happen to be held, which depends on the order they came in. The delays are measured against
//! a floor that starts again with each talkspurt (after a silence of [`TALKSPURT_GAP_MS`] or a
//! flush), since a sender need not advance its clock through a silence; what was learnt of the
//! spread carries over, because it belongs to the network, not to the talkspurt. The RFC 3550 interarrival jitter is kept for
//! the call's health. A missing packet is concealed, or rebuilt from the next packet's forward
//! error correction when that one is already here. Pure: arrival times come in as arguments;
//! storage is allocated once.

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
            // Deep enough for a Wi-Fi path's bursts of delay; the target follows the spread of
            // the delays, so a steady network still plays after one frame.
            max_target_ms: 160,
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

/// The buffer ran dry and nothing came for this long: what comes next is a new talkspurt, whose
/// delays are measured against its own fastest packet. Shorter dry spells are a late packet.
pub const TALKSPURT_GAP_MS: u64 = 120;

/// Width of one bin of the delay histogram.
const DELAY_BIN_MS: f64 = 5.0;
/// Bins of the delay histogram: delays over the fastest packet's up to 320 ms (the last bin
/// takes anything longer).
const DELAY_BINS: usize = 64;
/// Each packet's delay keeps this share of the histogram's weight: the older ones fade with a
/// time constant of about 100 packets (2 s of audio).
const DELAY_FORGET: f64 = 0.99;
/// The share of packets the target lets play on time.
const DELAY_QUANTILE: f64 = 0.95;
/// The floor the delays are measured against is the fastest transit of this block of arrivals
/// and the one before, so it follows a sender's clock that runs slow by a few parts per million.
const FLOOR_BLOCK_MS: u64 = 2_000;

/// How much later than the fastest recent packet each packet arrives: the spread the target
/// must cover.
#[derive(Clone, Debug)]
struct DelaySpread {
    /// Decaying weights of relative delay, [`DELAY_BIN_MS`] per bin.
    weights: [f64; DELAY_BINS],
    total_weight: f64,
    /// The fastest transit of this block of arrivals, and of the block before.
    floor_ms: Option<f64>,
    previous_floor_ms: Option<f64>,
    block_started_ms: u64,
    /// The histogram's 95th percentile, recomputed with each packet.
    spread_ms: f64,
}

impl DelaySpread {
    fn new() -> Self {
        Self {
            weights: [0.0; DELAY_BINS],
            total_weight: 0.0,
            floor_ms: None,
            previous_floor_ms: None,
            block_started_ms: 0,
            spread_ms: 0.0,
        }
    }

    fn observe(&mut self, transit_ms: f64, arrival_ms: u64) {
        if self.floor_ms.is_none()
            || arrival_ms.saturating_sub(self.block_started_ms) >= FLOOR_BLOCK_MS
        {
            self.previous_floor_ms = self.floor_ms;
            self.floor_ms = None;
            self.block_started_ms = arrival_ms;
        }
        let floor_ms = self
            .floor_ms
            .map_or(transit_ms, |floor| floor.min(transit_ms));
        self.floor_ms = Some(floor_ms);
        let fastest_ms = self
            .previous_floor_ms
            .map_or(floor_ms, |previous| previous.min(floor_ms));
        let relative_ms = (transit_ms - fastest_ms).max(0.0);
        let bin = ((relative_ms / DELAY_BIN_MS) as usize).min(DELAY_BINS - 1);
        for weight in self.weights.iter_mut() {
            *weight *= DELAY_FORGET;
        }
        self.weights[bin] += 1.0 - DELAY_FORGET;
        self.total_weight = self.total_weight * DELAY_FORGET + (1.0 - DELAY_FORGET);
        let wanted = self.total_weight * DELAY_QUANTILE;
        let mut seen = 0.0;
        let mut quantile_bin = DELAY_BINS - 1;
        for (index, weight) in self.weights.iter().enumerate() {
            seen += weight;
            if seen >= wanted {
                quantile_bin = index;
                break;
            }
        }
        // The bin's upper edge, so the spread covers the delays counted in it; delays under one
        // bin (a steady network's) count as none.
        self.spread_ms = if quantile_bin == 0 {
            0.0
        } else {
            (quantile_bin + 1) as f64 * DELAY_BIN_MS
        };
    }

    /// The fastest recent transit, if any packet of this talkspurt has come.
    fn fastest_ms(&self) -> Option<f64> {
        match (self.floor_ms, self.previous_floor_ms) {
            (Some(floor), Some(previous)) => Some(floor.min(previous)),
            (floor, previous) => floor.or(previous),
        }
    }

    /// A new talkspurt: its delays are measured against its own fastest packet.
    fn start_talkspurt(&mut self) {
        self.floor_ms = None;
        self.previous_floor_ms = None;
    }
}

struct Slot {
    seq: u16,
    /// When its audio starts on the sender's clock.
    media_ms: f64,
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
    delay_spread: DelaySpread,
    /// When the buffer last ran dry, until the next packet comes.
    dry_since_ms: Option<u64>,
    /// The newest RTP timestamp, extended past its wraps.
    newest_rtp_timestamp: Option<i64>,
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
            .field("spread_ms", &self.delay_spread.spread_ms)
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
                media_ms: 0.0,
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
            delay_spread: DelaySpread::new(),
            dry_since_ms: None,
            newest_rtp_timestamp: None,
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
        if let Some(dry_since_ms) = self.dry_since_ms.take()
            && arrival_ms.saturating_sub(dry_since_ms) >= TALKSPURT_GAP_MS
        {
            // A new talkspurt: don't count the silence before it as network delay.
            self.last_transit_ms = None;
            self.delay_spread.start_talkspurt();
        }
        let media_ms = self.media_ms(rtp_timestamp);
        self.count_expected(seq);
        let mut outcome = PushOutcome::Queued;
        if let Some(head) = self.head {
            let distance = seq_distance(seq, head);
            if distance < 0 && self.playing {
                // Its delay is what the target failed to cover: learn from it.
                self.observe_transit(media_ms, arrival_ms);
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
                    self.observe_transit(media_ms, arrival_ms);
                    self.stats.late += 1;
                    return PushOutcome::Late;
                }
                self.head = Some(seq);
            }
        }
        if self.head.is_none() {
            self.head = Some(seq);
        }
        self.observe_transit(media_ms, arrival_ms);
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
        slot.media_ms = media_ms;
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

    /// Learns from one packet's transit: the RFC 3550 interarrival jitter and the spread of the
    /// delays.
    fn observe_transit(&mut self, media_ms: f64, arrival_ms: u64) {
        let transit_ms = arrival_ms as f64 - media_ms;
        if let Some(last) = self.last_transit_ms {
            let change = transit_ms - last;
            self.jitter_ms += (change.abs() - self.jitter_ms) / 16.0;
        }
        self.last_transit_ms = Some(transit_ms);
        self.delay_spread.observe(transit_ms, arrival_ms);
    }

    /// The depth the buffer fills to before it plays: one frame plus the spread of the recent
    /// delays, in whole frames (rounded to the nearest, so a few milliseconds of spread do not
    /// cost a whole frame of latency), at most `max_target_ms`.
    pub fn target_ms(&self) -> u32 {
        let frame = self.config.frame_ms.max(1);
        let wanted = f64::from(frame) + self.delay_spread.spread_ms;
        let frames = (wanted / f64::from(frame)).round().max(1.0) as u32;
        (frames * frame).min(self.config.max_target_ms.max(frame))
    }

    /// The measured interarrival jitter (RFC 3550).
    pub fn jitter_ms(&self) -> f64 {
        self.jitter_ms
    }

    /// How much later than the fastest recent packet nearly all packets arrive (the 95th
    /// percentile, in 5 ms steps): what the target covers.
    pub fn delay_spread_ms(&self) -> f64 {
        self.delay_spread.spread_ms
    }

    /// Audio held, in milliseconds.
    pub fn depth_ms(&self) -> u32 {
        self.held as u32 * self.config.frame_ms
    }

    pub fn stats(&self) -> JitterStats {
        self.stats
    }

    /// The next 20 ms at `now_ms` (the clock of the arrival times). Call once per frame the
    /// player needs.
    pub fn pop(&mut self, now_ms: u64) -> Playout<'_> {
        if !self.playing {
            if !self.may_start(now_ms) {
                return Playout::Waiting;
            }
            self.playing = true;
        }
        let Some(head) = self.head else {
            self.playing = false;
            return Playout::Waiting;
        };
        if self.held == 0 {
            // Ran dry: the reply ended or a packet is late. Wait for the next one; how long
            // nothing comes tells which it was.
            self.playing = false;
            self.dry_since_ms = Some(now_ms);
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

    /// Whether a talkspurt may start at `now_ms`: the packet due first has waited as long as the
    /// fastest recent packet would have plus the spread, or the buffer holds its most.
    fn may_start(&self, now_ms: u64) -> bool {
        if self.held == 0 {
            return false;
        }
        if self.depth_ms() >= self.config.max_target_ms {
            return true;
        }
        let (Some(head), Some(fastest_ms)) = (self.head, self.delay_spread.fastest_ms()) else {
            return true;
        };
        // The media time of the packet due first, from the held packet nearest it (it may be
        // missing itself, after a dry spell).
        let Some((distance, media_ms)) = self
            .slots
            .iter()
            .filter(|slot| slot.occupied)
            .map(|slot| (seq_distance(slot.seq, head), slot.media_ms))
            .filter(|(distance, _)| *distance >= 0)
            .min_by_key(|(distance, _)| *distance)
        else {
            return true;
        };
        let frame_ms = f64::from(self.config.frame_ms);
        let head_media_ms = media_ms - f64::from(distance) * frame_ms;
        let spread_ms = self
            .delay_spread
            .spread_ms
            .min(f64::from(self.config.max_target_ms) - frame_ms);
        now_ms as f64 >= head_media_ms + fastest_ms + spread_ms
    }

    /// When a packet's audio starts on the sender's clock, the timestamp extended past its
    /// wrap (every 2^32 ticks, ~24.9 h at 48 kHz) by its signed distance from the newest.
    fn media_ms(&mut self, rtp_timestamp: u32) -> f64 {
        let extended = match self.newest_rtp_timestamp {
            None => i64::from(rtp_timestamp),
            Some(newest) => newest + i64::from(rtp_timestamp.wrapping_sub(newest as u32) as i32),
        };
        if self
            .newest_rtp_timestamp
            .is_none_or(|newest| extended > newest)
        {
            self.newest_rtp_timestamp = Some(extended);
        }
        extended as f64 * 1000.0 / f64::from(self.config.clock_rate_hz)
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
        self.dry_since_ms = None;
        self.delay_spread.start_talkspurt();
    }
}
