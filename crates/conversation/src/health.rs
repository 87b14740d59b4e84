//! The call's health, from Walkie's own numbers: the reply audio's packets lost and their
//! interarrival jitter (what an RTCP receiver report would say), the share of the reply the
//! jitter buffer had to fill in, and the round trip of ICE's consent checks. The driver reads
//! them about once a second ([`HealthSample`]); this judges them over the last few seconds and
//! says, in one sentence, which side is at fault.
//!
//! Audio flows only while a reply plays, so a window without enough packets keeps the last
//! judgement of loss and filling-in (a bad network does not look fixed because the assistant
//! stopped talking); the round trip is measured all the time.

use std::collections::VecDeque;

use serde::Serialize;

/// The judgement spans this much of the call.
pub const HEALTH_WINDOW_MS: u64 = 5_000;
/// Fewer packets than this in the window (half a second of audio) say nothing about loss.
const MIN_PACKETS: u64 = 25;

/// Loss above these shares (percent) makes the connection fair, then poor.
const LOSS_FAIR_PERCENT: f64 = 3.0;
const LOSS_POOR_PERCENT: f64 = 15.0;
/// Filled-in audio above these shares of the reply (percent).
const FILLED_FAIR_PERCENT: f64 = 5.0;
const FILLED_POOR_PERCENT: f64 = 15.0;
/// Interarrival jitter above these (ms).
const JITTER_FAIR_MS: f64 = 30.0;
const JITTER_POOR_MS: f64 = 60.0;
/// A round trip above these (ms).
const ROUND_TRIP_FAIR_MS: f64 = 300.0;
const ROUND_TRIP_POOR_MS: f64 = 800.0;

/// One reading of the call's counters (cumulative since the call began).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct HealthSample {
    /// Reply packets the provider numbered, from the first received to the highest.
    pub expected_packets: u64,
    /// Reply packets that arrived (in time or late).
    pub received_packets: u64,
    /// Frames the jitter buffer played, and those it filled in (concealed or rebuilt from the
    /// next packet's redundancy) because their packet was missing.
    pub played_frames: u64,
    pub filled_frames: u64,
    /// The reply audio's interarrival jitter now.
    pub jitter_ms: f64,
    /// The last consent check's round trip, when one was answered.
    pub round_trip_ms: Option<f64>,
}

/// How the connection is doing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum HealthLevel {
    Good,
    Fair,
    Poor,
}

/// What the window shows: the level, one sentence, and the figures behind it.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ConnectionHealth {
    pub level: HealthLevel,
    pub sentence: String,
    /// Over the last few seconds of reply audio; `None` before any.
    pub loss_percent: Option<f64>,
    pub filled_percent: Option<f64>,
    pub jitter_ms: f64,
    pub round_trip_ms: Option<f64>,
}

/// Judges the samples of one call.
#[derive(Debug, Default)]
pub struct HealthWatch {
    samples: VecDeque<(u64, HealthSample)>,
    /// The last judgement of loss and filling-in, from a window with enough packets.
    loss_percent: Option<f64>,
    filled_percent: Option<f64>,
    /// The last round trip measured.
    round_trip_ms: Option<f64>,
    shown: Option<ConnectionHealth>,
}

impl HealthWatch {
    /// The last round trip ICE measured on this call.
    pub fn round_trip_ms(&self) -> Option<f64> {
        self.round_trip_ms
    }

    /// A new call: its counters start again.
    pub fn call_began(&mut self) {
        *self = Self::default();
    }

    /// Takes in a reading at `now_ms`; the health to show when it differs from what is shown.
    pub fn sample(&mut self, sample: HealthSample, now_ms: u64) -> Option<ConnectionHealth> {
        if self
            .samples
            .back()
            .is_some_and(|(_, last)| sample.expected_packets < last.expected_packets)
        {
            // Counters went back: a new audio engine. The old ones say nothing of it.
            self.samples.clear();
        }
        self.samples.push_back((now_ms, sample));
        self.round_trip_ms = sample.round_trip_ms.or(self.round_trip_ms);
        while self
            .samples
            .front()
            .is_some_and(|(at_ms, _)| now_ms.saturating_sub(*at_ms) > HEALTH_WINDOW_MS)
        {
            self.samples.pop_front();
        }
        let (_, oldest) = self.samples.front().expect("a sample was just pushed");
        let expected = sample.expected_packets - oldest.expected_packets;
        if expected >= MIN_PACKETS {
            let received = sample
                .received_packets
                .saturating_sub(oldest.received_packets)
                .min(expected);
            self.loss_percent = Some(percent(expected - received, expected));
            let played = sample.played_frames.saturating_sub(oldest.played_frames);
            let filled = sample.filled_frames.saturating_sub(oldest.filled_frames);
            self.filled_percent = Some(percent(filled, played + filled));
        }
        let health = judge(
            self.loss_percent,
            self.filled_percent,
            sample.jitter_ms,
            sample.round_trip_ms,
        );
        let changed = self
            .shown
            .as_ref()
            .is_none_or(|shown| shown.level != health.level || shown.sentence != health.sentence);
        if changed {
            self.shown = Some(health.clone());
            return Some(health);
        }
        None
    }
}

fn percent(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 * 100.0 / whole as f64
    }
}

fn level(value: f64, fair: f64, poor: f64) -> HealthLevel {
    if value >= poor {
        HealthLevel::Poor
    } else if value >= fair {
        HealthLevel::Fair
    } else {
        HealthLevel::Good
    }
}

/// The level is the worst figure's; the sentence names it.
fn judge(
    loss_percent: Option<f64>,
    filled_percent: Option<f64>,
    jitter_ms: f64,
    round_trip_ms: Option<f64>,
) -> ConnectionHealth {
    let loss = loss_percent.unwrap_or(0.0);
    let filled = filled_percent.unwrap_or(0.0);
    let round_trip = round_trip_ms.unwrap_or(0.0);
    // Worst first: at one level, loss explains filling-in, and both explain more than delay.
    let candidates = [
        (
            level(loss, LOSS_FAIR_PERCENT, LOSS_POOR_PERCENT),
            format!("The network is losing {} of packets.", whole_percent(loss)),
        ),
        (
            level(filled, FILLED_FAIR_PERCENT, FILLED_POOR_PERCENT),
            format!(
                "Packets come too late to play: {} of the reply was filled in.",
                whole_percent(filled)
            ),
        ),
        (
            level(jitter_ms, JITTER_FAIR_MS, JITTER_POOR_MS),
            format!(
                "The network delivers packets unevenly ({} ms of jitter).",
                jitter_ms.round()
            ),
        ),
        (
            level(round_trip, ROUND_TRIP_FAIR_MS, ROUND_TRIP_POOR_MS),
            format!(
                "The network is slow: {} ms there and back.",
                round_trip.round()
            ),
        ),
    ];
    let worst = candidates
        .iter()
        .map(|(level, _)| *level)
        .max()
        .unwrap_or(HealthLevel::Good);
    let sentence = match candidates.iter().find(|(level, _)| *level == worst) {
        Some((level, sentence)) if *level > HealthLevel::Good => sentence.clone(),
        _ => "The connection is good.".to_owned(),
    };
    ConnectionHealth {
        level: worst,
        sentence,
        loss_percent,
        filled_percent,
        jitter_ms,
        round_trip_ms,
    }
}

/// "6 %", or "under 1 %" for a loss that rounds to nothing but is not nothing.
fn whole_percent(value: f64) -> String {
    if value > 0.0 && value < 0.5 {
        "under 1 %".to_owned()
    } else {
        format!("{} %", value.round())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A call whose reply audio loses `lost_per_50` of every 50 packets a second.
    fn second(previous: HealthSample, lost_per_50: u64) -> HealthSample {
        HealthSample {
            expected_packets: previous.expected_packets + 50,
            received_packets: previous.received_packets + 50 - lost_per_50,
            played_frames: previous.played_frames + 50 - lost_per_50,
            filled_frames: previous.filled_frames + lost_per_50,
            jitter_ms: 2.0,
            round_trip_ms: Some(1.0),
        }
    }

    #[test]
    fn a_clean_call_is_good_and_ten_percent_loss_makes_it_fair_naming_the_network() {
        let mut watch = HealthWatch::default();
        let mut sample = second(HealthSample::default(), 0);
        let first = watch
            .sample(sample, 1_000)
            .expect("the first judgement is shown");
        assert_eq!(first.level, HealthLevel::Good);
        assert_eq!(first.sentence, "The connection is good.");
        let mut shown = None;
        for at in 2..8 {
            sample = second(sample, 5);
            if let Some(health) = watch.sample(sample, at * 1_000) {
                shown = Some(health);
            }
        }
        let shown = shown.expect("the loss changed what is shown");
        assert_eq!(shown.level, HealthLevel::Fair);
        assert_eq!(shown.sentence, "The network is losing 10 % of packets.");
    }

    #[test]
    fn a_pause_without_audio_keeps_the_judgement_and_clean_audio_restores_it() {
        let mut watch = HealthWatch::default();
        let mut sample = HealthSample::default();
        for at in 1..7 {
            sample = second(sample, 10);
            watch.sample(sample, at * 1_000);
        }
        // The reply ended: no packets for ten seconds.
        for at in 7..17 {
            assert_eq!(watch.sample(sample, at * 1_000), None, "nothing new to say");
        }
        let mut back = None;
        for at in 17..24 {
            sample = second(sample, 0);
            back = watch.sample(sample, at * 1_000).or(back);
        }
        let back = back.expect("a clean reply is news");
        assert_eq!(back.level, HealthLevel::Good);
        assert_eq!(back.loss_percent, Some(0.0));
    }

    #[test]
    fn a_slow_round_trip_or_uneven_arrival_is_said_as_such() {
        let slow = judge(Some(0.0), Some(0.0), 3.0, Some(450.0));
        assert_eq!(slow.level, HealthLevel::Fair);
        assert_eq!(slow.sentence, "The network is slow: 450 ms there and back.");
        let uneven = judge(Some(0.0), Some(0.0), 75.0, Some(20.0));
        assert_eq!(uneven.level, HealthLevel::Poor);
        assert_eq!(
            uneven.sentence,
            "The network delivers packets unevenly (75 ms of jitter)."
        );
        let worst_named = judge(Some(20.0), Some(6.0), 40.0, Some(400.0));
        assert_eq!(worst_named.level, HealthLevel::Poor);
        assert_eq!(
            worst_named.sentence,
            "The network is losing 20 % of packets."
        );
    }

    #[test]
    fn a_new_engine_starts_its_counts_again_without_a_false_loss() {
        let mut watch = HealthWatch::default();
        let mut sample = HealthSample::default();
        for at in 1..4 {
            sample = second(sample, 0);
            watch.sample(sample, at * 1_000);
        }
        let fresh = second(HealthSample::default(), 0);
        let health = watch.sample(fresh, 4_000);
        assert!(
            health
                .as_ref()
                .is_none_or(|health| health.level == HealthLevel::Good),
            "{health:?}"
        );
    }
}
