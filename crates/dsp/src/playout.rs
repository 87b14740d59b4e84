//! The downlink's bookkeeping: when the next received frame is due for decoding
//! ([`PlayoutPacer`]), how much silence goes ahead of a reply ([`PlayoutCushion`]), and how much
//! of each reply the speaker has played ([`PlayedLedger`]).
//!
//! Why apart from the devices: they decide over frame counts and time only (when a 20 ms frame
//! is due, which item a stretch of the stream belongs to, when an empty queue means a reply is
//! over), so they are tested here in virtual time; the downlink worker tells them what its
//! device reports and carries out what they say. Time is microseconds on the worker's clock,
//! from any start, never going back.

use std::collections::VecDeque;

use crate::FRAME_MS;

/// One frame's time.
const FRAME_US: u64 = FRAME_MS as u64 * 1_000;

/// The pace gives up on a talkspurt whose next frame is this late, and restarts with the next
/// packet.
pub const TALKSPURT_END_AFTER_US: u64 = 60_000;

/// Behind the pace by more than this, the pace restarts at now instead of catching up.
pub const MAX_CATCH_UP_US: u64 = 100_000;

/// An empty playback queue for this long means the reply is over (not a gap between two
/// deltas).
pub const DRAINED_AFTER_US: u64 = 40_000;

/// When the downlink takes the next frame out of the jitter buffer: one every 20 ms while a
/// talkspurt plays, catching up after a short stall, at once when one starts.
#[derive(Debug, Clone, Default)]
pub struct PlayoutPacer {
    next_due_us: Option<u64>,
}

impl PlayoutPacer {
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether a frame may be taken at `now_us` (between talkspurts, always).
    pub fn is_due(&self, now_us: u64) -> bool {
        self.next_due_us.is_none_or(|due_us| now_us >= due_us)
    }

    /// A frame was taken at `now_us`. Returns whether it starts a talkspurt.
    pub fn took_frame(&mut self, now_us: u64) -> bool {
        let starts = self.next_due_us.is_none();
        let pace_us = match self.next_due_us {
            Some(due_us) if now_us.saturating_sub(due_us) <= MAX_CATCH_UP_US => due_us,
            _ => now_us,
        };
        self.next_due_us = Some(pace_us + FRAME_US);
        starts
    }

    /// No frame was there to take at `now_us`. Returns whether the talkspurt is given up (its
    /// next frame is [`TALKSPURT_END_AFTER_US`] late): the pace stops until the next one.
    pub fn found_none(&mut self, now_us: u64) -> bool {
        let given_up = self
            .next_due_us
            .is_some_and(|due_us| now_us.saturating_sub(due_us) >= TALKSPURT_END_AFTER_US);
        if given_up {
            self.next_due_us = None;
        }
        given_up
    }

    /// The talkspurt is dropped (a flush): the next frame starts a new one.
    pub fn stop(&mut self) {
        self.next_due_us = None;
    }

    /// Whether a talkspurt is being paced.
    pub fn is_pacing(&self) -> bool {
        self.next_due_us.is_some()
    }

    /// When the next frame is due, while pacing.
    pub fn next_due_us(&self) -> Option<u64> {
        self.next_due_us
    }
}

/// How much silence goes ahead of a reply that starts on an idle speaker: the headroom that
/// absorbs the jitter of the path from the decoder to the device for the whole reply (input
/// and output then run at the same pace, so what is ahead at the start stays ahead).
///
/// Why it adapts: a thin cushion keeps the reply's first sound early on a quiet machine, but on
/// a loaded one a late pass runs the device dry and the user hears a gap. A reply that ran dry
/// (the device played silence inside it) raises the cushion of the next ones by that silence;
/// each reply that played whole lowers it again by [`Self::RELAX_MS`], down to the base, as a
/// WebRTC jitter buffer's target follows the delays it sees.
#[derive(Debug, Clone, PartialEq)]
pub struct PlayoutCushion {
    base_ms: f64,
    max_ms: f64,
    current_ms: f64,
}

impl PlayoutCushion {
    /// What each reply played whole takes off the cushion.
    pub const RELAX_MS: f64 = 2.0;

    /// A cushion of `base_ms`, never raised past `max_ms` (at least the base).
    pub fn new(base_ms: u32, max_ms: u32) -> Self {
        Self {
            base_ms: f64::from(base_ms),
            max_ms: f64::from(max_ms.max(base_ms)),
            current_ms: f64::from(base_ms),
        }
    }

    /// The silence to write ahead of the next reply, in whole milliseconds.
    pub fn ms(&self) -> u32 {
        self.current_ms.ceil() as u32
    }

    /// The largest it may become: what to size a buffer of silence for.
    pub fn max_ms(&self) -> u32 {
        self.max_ms as u32
    }

    /// A reply ended, with `silence_inside_ms` of silence the device played inside it because
    /// nothing was there to play (a flushed reply counts as well: what played of it).
    pub fn reply_played(&mut self, silence_inside_ms: f64) {
        self.current_ms = if silence_inside_ms > 0.0 {
            (self.current_ms + silence_inside_ms).min(self.max_ms)
        } else {
            (self.current_ms - Self::RELAX_MS).max(self.base_ms)
        };
    }
}

/// What the ledger tells, in the order it happened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LedgerOutput<I> {
    /// The device has played `played_ms` of `item` so far.
    Progress { item: I, played_ms: u64 },
    /// Everything written was played and nothing more came for [`DRAINED_AFTER_US`]; the reply
    /// ended at stream position `end_frame`.
    Drained { end_frame: u64 },
}

#[derive(Debug, Clone)]
struct Progress<I> {
    item: I,
    played_ms: f64,
    reported_ms: Option<u64>,
}

/// How much of each item (a reply, by its id `I`) the speaker has played: what the turn
/// controller truncates a barge-in at. The downlink says what it wrote to the device (a reply's
/// samples, or silence that belongs to no item) and where the device's count of played frames
/// stands; the ledger credits each item with its frames as they are played, and says when the
/// speaker ran out of reply. Allocation-free once made, while outputs are polled each pass.
#[derive(Debug, Clone)]
pub struct PlayedLedger<I> {
    rate_hz: f64,
    /// Stream positions (the device's count of played frames): the end of what was written,
    /// and how far it has been credited.
    written_frames: u64,
    credited_frames: u64,
    /// Which item each written stretch belongs to, by its end position.
    segments: VecDeque<(Option<I>, u64)>,
    progress: Option<Progress<I>>,
    /// A reply was written since the speaker last ran out of one.
    audible: bool,
    empty_since_us: Option<u64>,
    outputs: VecDeque<LedgerOutput<I>>,
}

impl<I: Clone + PartialEq> PlayedLedger<I> {
    /// A ledger for a stream at `rate_hz` (told again by [`Self::stream_opened`]).
    pub fn new(rate_hz: u32) -> Self {
        Self {
            rate_hz: f64::from(rate_hz.max(1)),
            written_frames: 0,
            credited_frames: 0,
            segments: VecDeque::with_capacity(1_024),
            progress: None,
            audible: false,
            empty_since_us: None,
            outputs: VecDeque::with_capacity(16),
        }
    }

    /// A new output stream at `rate_hz`: its positions start at 0.
    pub fn stream_opened(&mut self, rate_hz: u32) {
        self.rate_hz = f64::from(rate_hz.max(1));
        self.written_frames = 0;
        self.credited_frames = 0;
        self.segments.clear();
    }

    /// `frames` of `item`'s audio were written to the device (`None`: audio of no item).
    pub fn wrote_reply(&mut self, item: Option<&I>, frames: u64) {
        self.write(item, frames);
        self.audible = true;
    }

    /// `frames` of silence were written ahead of a reply (its cushion): no item's.
    pub fn wrote_silence(&mut self, frames: u64) {
        self.write(None, frames);
    }

    fn write(&mut self, item: Option<&I>, frames: u64) {
        self.written_frames += frames;
        match self.segments.back_mut() {
            Some((last, end)) if last.as_ref() == item => *end = self.written_frames,
            _ => self
                .segments
                .push_back((item.cloned(), self.written_frames)),
        }
    }

    /// Where what was written ends, as a stream position.
    pub fn written_frames(&self) -> u64 {
        self.written_frames
    }

    /// Whether a reply was written since the speaker last ran out of one.
    pub fn is_audible(&self) -> bool {
        self.audible
    }

    /// The device has played `played_frames` of the stream by `now_us`; `nothing_queued`:
    /// the downlink holds nothing more to write. While audio plays, progress is told once a
    /// frame's worth; once everything is played, at once.
    pub fn played(&mut self, played_frames: u64, nothing_queued: bool, now_us: u64) {
        self.credit_upto(played_frames);
        let idle = nothing_queued && played_frames >= self.written_frames;
        self.report_progress_step(if idle { 0 } else { u64::from(FRAME_MS) });
        if self.audible && idle {
            let since_us = *self.empty_since_us.get_or_insert(now_us);
            if now_us.saturating_sub(since_us) >= DRAINED_AFTER_US {
                self.audible = false;
                self.empty_since_us = None;
                self.outputs.push_back(LedgerOutput::Drained {
                    end_frame: played_frames.min(self.written_frames),
                });
            }
        } else {
            self.empty_since_us = None;
        }
    }

    /// The app flushed playback: what was counted so far is told, and the speaker is not
    /// playing a reply any more.
    pub fn flush_requested(&mut self) {
        self.report_progress_step(0);
        self.audible = false;
        self.empty_since_us = None;
    }

    /// The device carried the flush out at stream position `honoured_at_frames` and stands
    /// at `played_frames`: what it played until then was heard and is credited; the next reply
    /// is written from where the device stands.
    pub fn flush_honoured(&mut self, honoured_at_frames: u64, played_frames: u64) {
        self.credit_upto(honoured_at_frames);
        self.report_progress_step(0);
        self.written_frames = played_frames;
        self.credited_frames = played_frames;
        self.segments.clear();
    }

    /// What the ledger has to tell, oldest first.
    pub fn poll_output(&mut self) -> Option<LedgerOutput<I>> {
        self.outputs.pop_front()
    }

    /// Credits each item with the frames of it played up to stream position `played_frames`.
    fn credit_upto(&mut self, played_frames: u64) {
        while let Some((item, end)) = self.segments.front() {
            let end = *end;
            let upto = played_frames.min(end);
            if upto > self.credited_frames {
                let frames = upto - self.credited_frames;
                self.credited_frames = upto;
                if let Some(item) = item.clone() {
                    let ms = frames as f64 * 1000.0 / self.rate_hz;
                    match self.progress.as_mut() {
                        Some(progress) if progress.item == item => progress.played_ms += ms,
                        _ => {
                            self.report_progress_step(0);
                            self.progress = Some(Progress {
                                item,
                                played_ms: ms,
                                reported_ms: None,
                            });
                        }
                    }
                }
            }
            if played_frames >= end {
                self.segments.pop_front();
            } else {
                break;
            }
        }
    }

    /// Tells the current item's progress if it moved by at least `min_step_ms` (and at all).
    fn report_progress_step(&mut self, min_step_ms: u64) {
        if let Some(progress) = self.progress.as_mut() {
            let played_ms = progress.played_ms as u64;
            let due = match progress.reported_ms {
                None => true,
                Some(reported) => played_ms != reported && played_ms >= reported + min_step_ms,
            };
            if due {
                progress.reported_ms = Some(played_ms);
                self.outputs.push_back(LedgerOutput::Progress {
                    item: progress.item.clone(),
                    played_ms,
                });
            }
        }
    }
}

#[cfg(test)]
mod pacer_tests {
    use super::*;

    #[test]
    fn a_talkspurt_is_paced_a_frame_every_20_ms_from_its_first() {
        let mut pacer = PlayoutPacer::new();
        assert!(pacer.is_due(5_000), "between talkspurts, at once");
        assert!(
            pacer.took_frame(5_000),
            "the first frame starts a talkspurt"
        );
        assert!(!pacer.is_due(24_999));
        assert!(pacer.is_due(25_000));
        assert!(!pacer.took_frame(26_000), "the second does not");
        assert_eq!(
            pacer.next_due_us(),
            Some(45_000),
            "on the pace, not 20 ms after 26 ms"
        );
    }

    #[test]
    fn behind_by_up_to_100_ms_it_catches_up_and_further_behind_it_starts_again_from_now() {
        let mut pacer = PlayoutPacer::new();
        pacer.took_frame(0);
        // The worker woke 100 ms late: the frames due meanwhile are taken at once.
        pacer.took_frame(120_000);
        assert_eq!(pacer.next_due_us(), Some(40_000));
        let mut pacer = PlayoutPacer::new();
        pacer.took_frame(0);
        pacer.took_frame(150_000);
        assert_eq!(pacer.next_due_us(), Some(170_000));
    }

    #[test]
    fn a_talkspurt_whose_next_frame_is_60_ms_late_is_given_up_and_the_next_packet_starts_one() {
        let mut pacer = PlayoutPacer::new();
        pacer.took_frame(0);
        assert!(!pacer.found_none(20_000), "a frame not there yet");
        assert!(!pacer.found_none(79_999));
        assert!(pacer.is_pacing());
        assert!(pacer.found_none(80_000));
        assert!(!pacer.is_pacing());
        assert!(
            pacer.took_frame(300_000),
            "the next packet starts a talkspurt"
        );
        pacer.stop();
        assert!(pacer.is_due(300_001), "a flush drops the pace");
    }
}

#[cfg(test)]
mod cushion_tests {
    use super::*;

    #[test]
    fn a_reply_that_ran_dry_raises_the_next_cushion_by_its_silence_up_to_the_bound() {
        let mut cushion = PlayoutCushion::new(10, 40);
        assert_eq!(cushion.ms(), 10);
        cushion.reply_played(10.0);
        assert_eq!(
            cushion.ms(),
            20,
            "one 10 ms gap: 10 ms more ahead of the next reply"
        );
        cushion.reply_played(30.0);
        assert_eq!(cushion.ms(), 40, "never past the bound");
    }

    #[test]
    fn replies_played_whole_bring_it_back_to_the_base_and_no_lower() {
        let mut cushion = PlayoutCushion::new(10, 40);
        cushion.reply_played(10.0);
        let mut after = Vec::new();
        for _ in 0..7 {
            cushion.reply_played(0.0);
            after.push(cushion.ms());
        }
        assert_eq!(after, [18, 16, 14, 12, 10, 10, 10]);
    }

    #[test]
    fn a_bound_below_the_base_is_the_base() {
        let mut cushion = PlayoutCushion::new(10, 5);
        cushion.reply_played(10.0);
        assert_eq!((cushion.ms(), cushion.max_ms()), (10, 10));
    }
}

#[cfg(test)]
mod ledger_tests {
    use super::*;

    type Ledger = PlayedLedger<&'static str>;

    fn outputs(ledger: &mut Ledger) -> Vec<LedgerOutput<&'static str>> {
        std::iter::from_fn(|| ledger.poll_output()).collect()
    }

    fn progress(item: &'static str, played_ms: u64) -> LedgerOutput<&'static str> {
        LedgerOutput::Progress { item, played_ms }
    }

    #[test]
    fn each_item_is_credited_with_what_the_device_played_of_it_and_the_cushion_with_nothing() {
        let mut ledger = Ledger::new(48_000);
        ledger.wrote_silence(960);
        ledger.wrote_reply(Some(&"a"), 4_800);
        ledger.wrote_reply(Some(&"b"), 2_400);
        ledger.played(960, false, 0);
        assert_eq!(outputs(&mut ledger), [], "the cushion is no item's");
        ledger.played(960 + 2_400, false, 50_000);
        assert_eq!(outputs(&mut ledger), [progress("a", 50)]);
        // The rest of a and some of b: a's last count goes out as b starts.
        ledger.played(960 + 4_800 + 1_440, false, 150_000);
        assert_eq!(
            outputs(&mut ledger),
            [progress("a", 100), progress("b", 30)]
        );
    }

    #[test]
    fn while_audio_plays_progress_is_told_once_a_frames_worth_and_the_last_count_at_once() {
        let mut ledger = Ledger::new(48_000);
        ledger.wrote_reply(Some(&"a"), 48_000);
        ledger.played(480, false, 10_000);
        ledger.played(960, false, 20_000);
        ledger.played(1_440, false, 30_000);
        assert_eq!(
            outputs(&mut ledger),
            [progress("a", 10), progress("a", 30)],
            "20 ms was not a step of 20 ms after 10"
        );
        ledger.played(48_000, true, 1_000_000);
        assert_eq!(outputs(&mut ledger), [progress("a", 1_000)]);
    }

    #[test]
    fn an_empty_queue_is_drained_after_40_ms_and_a_shorter_gap_is_not() {
        let mut ledger = Ledger::new(48_000);
        ledger.wrote_reply(Some(&"a"), 960);
        ledger.played(960, true, 100_000);
        ledger.played(960, true, 139_999);
        let _progress = outputs(&mut ledger);
        // A gap of 39.999 ms between two deltas, then more audio.
        ledger.wrote_reply(Some(&"a"), 960);
        ledger.played(960, false, 140_000);
        ledger.played(1_920, true, 150_000);
        assert!(!outputs(&mut ledger).contains(&LedgerOutput::Drained { end_frame: 960 }));
        ledger.played(1_920, true, 190_000);
        assert_eq!(
            outputs(&mut ledger).last(),
            Some(&LedgerOutput::Drained { end_frame: 1_920 })
        );
        ledger.played(1_920, true, 500_000);
        assert_eq!(outputs(&mut ledger), [], "told once");
    }

    #[test]
    fn a_flush_credits_what_played_until_it_took_effect_and_the_next_reply_counts_from_there() {
        let mut ledger = Ledger::new(48_000);
        ledger.wrote_reply(Some(&"a"), 48_000);
        ledger.played(4_800, false, 100_000);
        ledger.flush_requested();
        assert_eq!(outputs(&mut ledger), [progress("a", 100)]);
        assert!(!ledger.is_audible());
        // The device honoured it 480 frames later, and has played 960 since (silence).
        ledger.flush_honoured(5_280, 6_240);
        assert_eq!(outputs(&mut ledger), [progress("a", 110)]);
        ledger.wrote_reply(Some(&"b"), 960);
        assert_eq!(ledger.written_frames(), 7_200);
        ledger.played(7_200, true, 200_000);
        assert_eq!(outputs(&mut ledger), [progress("b", 20)]);
    }

    #[test]
    fn a_new_stream_starts_its_positions_at_zero_at_its_own_rate() {
        let mut ledger = Ledger::new(48_000);
        ledger.wrote_reply(Some(&"a"), 4_800);
        ledger.stream_opened(44_100);
        ledger.wrote_reply(Some(&"a"), 441);
        ledger.played(441, true, 0);
        assert_eq!(outputs(&mut ledger), [progress("a", 10)]);
    }
}
