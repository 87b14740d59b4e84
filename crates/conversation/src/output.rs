//! What the conversation machine asks of the world, in one queue, in causal order: a
//! barge-in's playback flush comes out before the cancel it causes is sent, a transcript's
//! END before the mark that the reply was cut.

use walkie_agui::Event;
use walkie_session::transcript::BridgeNote;
use walkie_session::turn::{AudioCommand, Diagnostic, OutgoingEvent, ReplyAudio, ToolCallRequest};
use walkie_session::{AudioChunk, StampedEvent};

use walkie_session::DeviceDirection;

use crate::input::LevelReading;
use crate::spending::{Spending, TokenTotals};
use crate::status::StatusEvent;
use crate::tools::ApprovalRequest;

/// One output. The driver carries each to its edge without waiting on it.
#[derive(Debug, Clone)]
pub enum Output {
    /// A client event for the data channel.
    Send(OutgoingEvent),
    /// A command for the audio engine.
    Audio(AudioCommand),
    /// What the engine does from now with the reply audio it decodes from RTP (played straight
    /// to the speaker, or not), and the item it counts played time against.
    ReplyAudio(ReplyAudio),
    /// The assistant audio given by [`Output::Play`] from now belongs to this item (the engine
    /// counts played time against it).
    BeginItem(String),
    /// Assistant audio to play, where it comes as PCM on the data channel (a WebSocket
    /// transport): a live speech delta (never a snapshot). Reply audio that comes as RTP is
    /// played by the engine itself ([`Output::ReplyAudio`]).
    Play(AudioChunk),
    /// A transcript event for the webview (AG-UI), marks included: a reply the user cut off, a
    /// recording taken back, how long a reply took to be heard, each a CUSTOM event after
    /// the message's own (`walkie_session::transcript::MARK_*`).
    Transcript(Event),
    /// The reply `message_id` was first heard `latency_ms` after the user's turn ended (the
    /// key came up, the provider heard them stop, or their typed message went out): its first
    /// sound played at the device. For the log; the transcript has it as a mark.
    ReplyLatency {
        message_id: String,
        latency_ms: u64,
        /// Where that time went, when the reply's first packet was seen.
        split: Option<LatencySplit>,
    },
    /// How a reply's playback went (the device's and the jitter buffer's account), once it
    /// ended: for the log and the benchmarks.
    ReplyPlayout(ReplyPlayout),
    /// How the connection is doing now changed (its level or its sentence).
    ConnectionHealth(crate::health::ConnectionHealth),
    /// A response was billed: what the conversation has spent so far.
    Spending(Box<Spending>),
    /// Something to save.
    Record(Record),
    /// The status line changed.
    Status(StatusEvent),
    /// A meter reading.
    Level {
        direction: DeviceDirection,
        level: LevelReading,
    },
    /// Something worth a log line.
    Diagnostic(Diagnostic),
    /// The call dropped: the driver hangs it up and stops its audio. The conversation goes on
    /// in the next call ([`Output::Dial`]).
    HangUpCall,
    /// Place a new call for this conversation, then feed [`crate::Input::Dialled`] or
    /// [`crate::Input::DialFailed`]. For a family that takes the conversation so far when the
    /// call is placed (the Live API's `input`), `history` holds it; otherwise it is empty and
    /// the machine gives it on the data channel.
    Dial { history: Vec<walkie_openai::Item> },
    /// The conversation is over (the status says why); the driver hangs up.
    Ended { reason: String },
    /// Run this call of an outside tool, then feed [`crate::Input::ToolFinished`].
    RunTool(ToolCallRequest),
    /// Show the user this call and ask whether it may run; their answer is
    /// [`crate::Input::ToolDecision`].
    AskApproval(ApprovalRequest),
    /// The card of this call is no longer needed (decided, expired, or its call ended).
    ApprovalClosed { call_id: String },
}

/// A time of day: milliseconds since the Unix epoch, UTC, as records are stamped.
///
/// Why a type: the machines take one clock, the driver's (`now_ms`), which never goes back
/// and reads the time of day because the driver starts it from the wall clock; deadlines are
/// compared on it as it is. A record's time is a reading of that clock and nothing else (not a
/// duration, not the provider's audio time), and [`UnixMs::of_clock`] is the one way to make
/// one from it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct UnixMs(i64);

impl UnixMs {
    /// The time of day at `clock_ms`, a reading of the driver's clock.
    pub const fn of_clock(clock_ms: u64) -> UnixMs {
        UnixMs(clock_ms as i64)
    }

    /// Milliseconds since the Unix epoch, as the store takes them.
    pub const fn get(self) -> i64 {
        self.0
    }
}

/// What the store saves, at the time of day `unix_ms`.
#[derive(Debug, Clone)]
pub enum Record {
    /// A session event, what the transcript bridge made of it, and the AG-UI events it
    /// produced: the very events the webview was sent.
    Event {
        unix_ms: UnixMs,
        event: Box<StampedEvent>,
        note: BridgeNote,
        transcript: Vec<Event>,
    },
    /// Transcript events no session event caused: the messages and run the bridge closed when
    /// the call ended (also sent to the webview).
    Transcript {
        unix_ms: UnixMs,
        transcript: Vec<Event>,
    },
    /// Microphone audio exactly as it was sent.
    UserAudio { unix_ms: UnixMs, chunk: AudioChunk },
    /// The user took the recording of this message back before it was sent (after the
    /// record of its end).
    Cancelled { unix_ms: UnixMs, message_id: String },
    /// A response was billed `tokens` (its own), which cost `cost_usd` at `model`'s prices
    /// (`None`: unknown); or, with `transcribed_seconds`, a transcription of the user's speech
    /// was (its seconds, zero when billed by tokens).
    Billed {
        unix_ms: UnixMs,
        tokens: TokenTotals,
        cost_usd: Option<f64>,
        model: Option<String>,
        transcribed_seconds: Option<f64>,
    },
    /// The model named the conversation (asked beside it, [`crate::TITLE_INSTRUCTIONS`]).
    Titled { unix_ms: UnixMs, title: String },
}

/// How one reply's playback went.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ReplyPlayout {
    /// The reply's audio the device took.
    pub played_ms: f64,
    /// From its first packet's arrival to its first sample at the device.
    pub arrival_to_device_ms: Option<f64>,
    /// Silence played inside it because the speaker's ring ran dry, and the sound server's own
    /// gaps: what a listener hears as dropouts.
    pub silence_inside_ms: f64,
    pub server_gap_ms: f64,
    /// 20 ms frames the jitter buffer filled in (packet missing), and packets that came too
    /// late to play.
    pub concealed_frames: u64,
    pub late_packets: u64,
    /// Frames rebuilt from the next packet's in-band FEC, and packets the network lost.
    pub recovered_frames: u64,
    pub lost_packets: u64,
    /// A barge-in cut it.
    pub flushed: bool,
}

/// Where the time from the end of the user's turn to the reply's first sound went; the parts
/// add up to the whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LatencySplit {
    /// Here, before the turn went out: the key's tail, from the key coming up to the commit.
    pub local_ms: u64,
    /// At the provider: from the turn going out to the reply's first packet, less the network.
    pub provider_ms: u64,
    /// On the network: the last round trip ICE measured.
    pub network_ms: u64,
    /// From the reply's first packet to its first sample at the device (jitter buffer, decoding,
    /// the speaker's cushion).
    pub playout_ms: u64,
}

impl LatencySplit {
    /// The parts of `ended_ms` → `heard_ms`: the turn went out at `sent_ms` (the commit, or the
    /// turn's end when the client sends none), the first packet came at `first_packet_ms`, and
    /// `round_trip_ms` of the wait for it was the network's.
    pub fn of(
        ended_ms: u64,
        sent_ms: u64,
        first_packet_ms: u64,
        heard_ms: u64,
        round_trip_ms: Option<f64>,
    ) -> Self {
        let sent_ms = sent_ms.clamp(ended_ms, heard_ms);
        let first_packet_ms = first_packet_ms.clamp(sent_ms, heard_ms);
        let waited_ms = first_packet_ms - sent_ms;
        let network_ms = (round_trip_ms.unwrap_or(0.0).round().max(0.0) as u64).min(waited_ms);
        Self {
            local_ms: sent_ms - ended_ms,
            provider_ms: waited_ms - network_ms,
            network_ms,
            playout_ms: heard_ms - first_packet_ms,
        }
    }

    pub fn total_ms(&self) -> u64 {
        self.local_ms + self.provider_ms + self.network_ms + self.playout_ms
    }
}

#[cfg(test)]
mod tests {
    use super::LatencySplit;

    #[test]
    fn the_parts_add_up_to_the_wait_and_the_network_takes_no_more_than_the_provider_had() {
        let split = LatencySplit::of(1_000, 1_200, 1_450, 1_500, Some(40.4));
        assert_eq!(
            split,
            LatencySplit {
                local_ms: 200,
                provider_ms: 210,
                network_ms: 40,
                playout_ms: 50
            }
        );
        assert_eq!(split.total_ms(), 500);
        let fast = LatencySplit::of(1_000, 1_000, 1_010, 1_030, Some(900.0));
        assert_eq!((fast.network_ms, fast.provider_ms), (10, 0));
        assert_eq!(fast.total_ms(), 30);
        // A packet "before" the commit (clocks apart by a tick) counts from the commit.
        let odd = LatencySplit::of(1_000, 1_100, 1_090, 1_200, None);
        assert_eq!(odd.total_ms(), 200);
    }
}
