//! How one reply played on the speaker: what the downlink watches from the cushion written ahead
//! of a reply to its last sample, and the report it gives when the reply ends (drained, or cut
//! by a flush).
//!
//! Why a pure part: the rules — silence counts as a dropout only while the reply plays, the
//! sound server's and the jitter buffer's counts are taken over the reply alone, the first
//! sample's time is measured from its talkspurt's first packet — are what the log and the
//! benchmarks read, so they are tested here with the counts and the times given as arguments.

use crate::jitter::JitterStats;

/// The playback stream's running counts a reply is measured by, as read at one moment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PlaybackCounts {
    /// Frames of silence the device played because the ring held nothing to play.
    pub silence_frames: u64,
    /// Times the sound server ran dry (its stream's thread answered too late).
    pub server_underflows: u64,
    /// The frames of gap those put in.
    pub server_gap_frames: u64,
}

/// How one reply played on the speaker, from the cushion ahead of it to its last sample.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PlayoutReport {
    /// The reply's audio the device took.
    pub played_ms: f64,
    /// From the arrival of the talkspurt's first RTP packet to the callback that handed the
    /// reply's first sample to the device (the cushion included; the device's own output
    /// latency not). `None` for a reply that did not come as RTP, or stopped before its first
    /// sample played.
    pub arrival_to_device_ms: Option<f64>,
    /// Silence the device played inside the reply because the ring ran dry before more of it
    /// was written: what a listener hears as a dropout.
    pub silence_inside_ms: f64,
    /// Times the sound server ran dry while the reply played (its stream's thread answered
    /// too late): gaps a listener hears that the ring never saw.
    pub server_underflows: u64,
    /// The silence those gaps put inside the reply (the rest of it played that much later).
    pub server_gap_ms: f64,
    /// What the jitter buffer did while the reply was written: frames concealed, packets that
    /// came too late to play.
    pub concealed_frames: u64,
    pub late_packets: u64,
    /// Frames rebuilt from the next packet's in-band FEC, and the reply's packets the network
    /// lost (numbered, never arrived).
    pub recovered_frames: u64,
    pub lost_packets: u64,
    /// A barge-in flushed it before it ended.
    pub flushed: bool,
    /// The silence written ahead of it ([`crate::playout::PlayoutCushion`]).
    pub cushion_ms: u32,
}

impl std::fmt::Display for PlayoutReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let how = if self.flushed {
            "was cut after"
        } else {
            "played"
        };
        write!(f, "a reply {how} {:.0} ms", self.played_ms)?;
        if let Some(ms) = self.arrival_to_device_ms {
            write!(
                f,
                "; its first sample reached the device {ms:.1} ms after its first packet arrived"
            )?;
        }
        write!(
            f,
            "; {:.1} ms of silence inside it; the sound server ran dry {} times ({:.1} ms); {} \
             frames concealed, {} rebuilt from FEC; {} packets lost, {} late; a {} ms cushion \
             ahead of it",
            self.silence_inside_ms,
            self.server_underflows,
            self.server_gap_ms,
            self.concealed_frames,
            self.recovered_frames,
            self.lost_packets,
            self.late_packets,
            self.cushion_ms
        )
    }
}

/// The packets the network lost so far: numbered by the sender, never received.
fn lost_packets(jitter: &JitterStats) -> u64 {
    jitter.expected.saturating_sub(jitter.queued + jitter.late)
}

/// What is known of the reply on the speaker so far. Stream positions are the device's count
/// of frames; times are microseconds on the downlink's clock.
#[derive(Debug, Clone)]
pub struct ReplyWatch {
    /// The stream position of its first sample (after the cushion).
    start_frame: u64,
    /// When its talkspurt's first packet arrived, if it came as RTP.
    arrival_us: Option<u64>,
    /// When the callback that took its first sample reached it.
    at_device_us: Option<u64>,
    /// The stream's silence count when last looked at.
    silence_frames_seen: u64,
    silence_inside_frames: u64,
    cushion_ms: u32,
    counts_at_start: PlaybackCounts,
    jitter_at_start: JitterStats,
    flushed: bool,
}

impl ReplyWatch {
    /// A reply whose first sample is written at stream position `start_frame`, after a cushion
    /// of `cushion_ms`, with the stream's and the jitter buffer's counts as they stand.
    pub fn begin(
        start_frame: u64,
        arrival_us: Option<u64>,
        cushion_ms: u32,
        counts: PlaybackCounts,
        jitter: JitterStats,
    ) -> Self {
        Self {
            start_frame,
            arrival_us,
            at_device_us: None,
            silence_frames_seen: counts.silence_frames,
            silence_inside_frames: 0,
            cushion_ms,
            counts_at_start: counts,
            jitter_at_start: jitter,
            flushed: false,
        }
    }

    /// More of the reply was written: the silence the device played since the last look was
    /// inside it (more of it came after).
    pub fn wrote(&mut self, silence_frames: u64) {
        self.silence_inside_frames += silence_frames.saturating_sub(self.silence_frames_seen);
        self.silence_frames_seen = silence_frames;
    }

    /// The device has played `played_frames` of the stream. The first time that passes the
    /// reply's first sample, the position whose time is asked for is returned: the caller
    /// says when the device took it ([`Self::first_sample_at`]).
    pub fn first_sample_due(&self, played_frames: u64) -> Option<u64> {
        (self.at_device_us.is_none() && played_frames > self.start_frame)
            .then_some(self.start_frame)
    }

    /// The device took the reply's first sample at `at_device_us`: when its first packet
    /// arrived, if that is known.
    pub fn first_sample_at(&mut self, at_device_us: u64) -> Option<u64> {
        self.at_device_us = Some(at_device_us);
        self.arrival_us
    }

    /// A flush cut the reply: its report ends where the device honoured it.
    pub fn cut(&mut self) {
        self.flushed = true;
    }

    /// The reply ended at stream position `end_frame`, on a stream of `rate_hz`, with the
    /// counts as they stand now: how it went.
    pub fn finish(
        self,
        end_frame: u64,
        rate_hz: f64,
        counts: PlaybackCounts,
        jitter: JitterStats,
    ) -> PlayoutReport {
        let frames_ms = |frames: u64| frames as f64 * 1000.0 / rate_hz;
        let start = self.counts_at_start;
        PlayoutReport {
            played_ms: frames_ms(end_frame.saturating_sub(self.start_frame)),
            arrival_to_device_ms: self.arrival_us.zip(self.at_device_us).map(
                |(arrival_us, at_device_us)| {
                    at_device_us.saturating_sub(arrival_us) as f64 / 1000.0
                },
            ),
            silence_inside_ms: frames_ms(self.silence_inside_frames),
            server_underflows: counts
                .server_underflows
                .saturating_sub(start.server_underflows),
            server_gap_ms: frames_ms(
                counts
                    .server_gap_frames
                    .saturating_sub(start.server_gap_frames),
            ),
            concealed_frames: jitter
                .concealed
                .saturating_sub(self.jitter_at_start.concealed),
            late_packets: jitter.late.saturating_sub(self.jitter_at_start.late),
            recovered_frames: jitter
                .recovered
                .saturating_sub(self.jitter_at_start.recovered),
            lost_packets: lost_packets(&jitter).saturating_sub(lost_packets(&self.jitter_at_start)),
            flushed: self.flushed,
            cushion_ms: self.cushion_ms,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RATE_HZ: f64 = 48_000.0;

    fn counts(
        silence_frames: u64,
        server_underflows: u64,
        server_gap_frames: u64,
    ) -> PlaybackCounts {
        PlaybackCounts {
            silence_frames,
            server_underflows,
            server_gap_frames,
        }
    }

    fn jitter(
        expected: u64,
        queued: u64,
        late: u64,
        concealed: u64,
        recovered: u64,
    ) -> JitterStats {
        JitterStats {
            expected,
            queued,
            late,
            concealed,
            recovered,
            ..JitterStats::default()
        }
    }

    #[test]
    fn a_reply_is_measured_from_its_first_sample_not_from_the_cushion_ahead_of_it() {
        // 480 frames of cushion were written, then the reply from frame 480 to 48,480.
        let watch = ReplyWatch::begin(
            480,
            None,
            10,
            PlaybackCounts::default(),
            jitter(0, 0, 0, 0, 0),
        );
        let report = watch.finish(
            48_480,
            RATE_HZ,
            PlaybackCounts::default(),
            jitter(0, 0, 0, 0, 0),
        );
        assert_eq!(report.played_ms, 1_000.0);
        assert_eq!(report.cushion_ms, 10);
        assert!(!report.flushed);
        assert_eq!(
            report.arrival_to_device_ms, None,
            "no packet, no arrival time"
        );
    }

    #[test]
    fn silence_the_device_played_before_the_reply_began_is_not_a_dropout_inside_it() {
        // The stream had played 9,600 frames of silence before the reply (the idle speaker).
        let mut watch = ReplyWatch::begin(0, None, 10, counts(9_600, 0, 0), jitter(0, 0, 0, 0, 0));
        watch.wrote(9_600);
        // The ring ran dry for 480 frames in the middle of the reply, and again for 960.
        watch.wrote(10_080);
        watch.wrote(10_080);
        watch.wrote(11_040);
        let report = watch.finish(48_000, RATE_HZ, counts(11_040, 0, 0), jitter(0, 0, 0, 0, 0));
        assert_eq!(report.silence_inside_ms, 30.0);
    }

    #[test]
    fn the_sound_servers_and_the_jitter_buffers_counts_are_taken_over_the_reply_alone() {
        let watch = ReplyWatch::begin(0, None, 10, counts(0, 3, 1_440), jitter(100, 98, 1, 4, 2));
        let report = watch.finish(
            48_000,
            RATE_HZ,
            counts(0, 5, 2_400),
            // 50 more packets numbered; 46 of them came in time, 1 late: 3 lost.
            jitter(150, 144, 2, 10, 3),
        );
        assert_eq!(report.server_underflows, 2);
        assert_eq!(report.server_gap_ms, 20.0);
        assert_eq!(report.concealed_frames, 6);
        assert_eq!(report.late_packets, 1);
        assert_eq!(report.recovered_frames, 1);
        assert_eq!(report.lost_packets, 3, "1 lost before, 4 lost by the end");
    }

    #[test]
    fn the_first_sample_is_timed_once_from_its_talkspurts_first_packet() {
        let mut watch = ReplyWatch::begin(
            480,
            Some(1_000_000),
            10,
            PlaybackCounts::default(),
            jitter(0, 0, 0, 0, 0),
        );
        assert_eq!(
            watch.first_sample_due(480),
            None,
            "not played past its first sample yet"
        );
        assert_eq!(watch.first_sample_due(960), Some(480));
        assert_eq!(watch.first_sample_at(1_024_500), Some(1_000_000));
        assert_eq!(watch.first_sample_due(1_440), None, "timed once");
        let report = watch.finish(
            48_480,
            RATE_HZ,
            PlaybackCounts::default(),
            jitter(0, 0, 0, 0, 0),
        );
        assert_eq!(report.arrival_to_device_ms, Some(24.5));
    }

    #[test]
    fn a_reply_cut_before_its_first_sample_played_has_no_arrival_time_and_says_it_was_cut() {
        let mut watch = ReplyWatch::begin(
            480,
            Some(1_000_000),
            10,
            PlaybackCounts::default(),
            jitter(0, 0, 0, 0, 0),
        );
        watch.cut();
        // The flush took effect inside the cushion.
        let report = watch.finish(
            240,
            RATE_HZ,
            PlaybackCounts::default(),
            jitter(0, 0, 0, 0, 0),
        );
        assert!(report.flushed);
        assert_eq!(report.played_ms, 0.0);
        assert_eq!(report.arrival_to_device_ms, None);
        assert!(report.to_string().starts_with("a reply was cut after 0 ms"));
    }
}
