//! The running audio engine: two worker threads between the sound card and the call.
//!
//! Why two workers: the uplink (microphone → Opus frames) and the downlink (RTP → speaker)
//! never wait on each other, and a slow consumer on one side cannot make the other click.
//! Each worker owns its device stream and every buffer it needs, sized when it starts; the
//! device callbacks only move samples through rings ([`crate::device`]).
//!
//! - **Uplink**: capture (down-mixed in the callback) → resample to 48 kHz → the echo
//!   canceller, with echo cancellation on (its reference is what the speaker stream played,
//!   tapped where samples leave for the device; [`EngineEvent::EchoCanceller`] says when it can
//!   be trusted; [`AudioCommand::CancelEcho`] pauses and resumes it; while it is trusted,
//!   [`EngineEvent::NearSpeech`] says the user started talking) → the warm mic's pre-roll
//!   while nobody talks, or 20 ms frames → Opus → the [`FrameSink`] the app connects to the
//!   transport. [`AudioCommand::OpenCapture`] first sends the pre-roll (the moment
//!   before the press), [`AudioCommand::GateMic`] replaces the microphone by silence (half
//!   duplex without an echo canceller) in what is sent and empties the pre-roll, so a press
//!   never sends what the mic heard while gated, nor the gated silence ahead of the user (the
//!   pre-roll starts again where the gate opened), and the privacy option keeps the device closed
//!   outside presses (no pre-roll then: that is its cost).
//! - **Downlink**: [`Engine::receive_rtp`] → a ring of packet slots → the jitter buffer the
//!   downlink owns → Opus decode, FEC recovery or concealment, paced at one frame per 20 ms
//!   (`walkie_dsp::playout`) → the speaker, at once, as the turn controller's [`ReplyAudio`]
//!   says (played from the reply's first sound, all of it while it is audible, nothing of a cut
//!   reply: [`Engine::reply_audio`]); the same frames go to the app as
//!   [`EngineEvent::AssistantAudio`] for the transcript and the recording. They are the live
//!   deltas, played once (DESIGN.md rule 2), and no hop through the app's task lies between
//!   the decoder and the device. PCM a WebSocket provider sends comes the other way, through
//!   the [`Player`]. The downlink resamples to the device rate, counts what the device actually
//!   took per item ([`EngineEvent::PlaybackProgress`], by the played ledger), and flushes
//!   within one device period ([`AudioCommand::HoldPlayback`] holds the reply as quickly and
//!   lets it go on). When a reply
//!   stops playing it says how it went ([`EngineEvent::ReplyPlayed`]: from its first packet to
//!   the device, and any gap inside it), so underruns show in the log, not only to the ear.
//! - **Devices**: a chosen device that disappears falls back to the default, a default that
//!   moves is followed, a stalled or dead stream is reopened; each is an [`EngineEvent`]. Errors
//!   are logged from the workers, rate-limited (never from a callback).
//! - **Events** queue up in a channel and each worker wakes the app once per pass of its
//!   loop ([`EventWaker`]), not once per event: a pass (20 ms) has a decoded frame, a
//!   progress report and a level reading, and every wakeup costs the app a context switch.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, Sender, TryRecvError};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::{JoinHandle, Thread};
use std::time::{Duration, Instant};

use walkie_session::turn::{AudioCommand, DecodedReplyAudio, ReplyAudio, ReplyGate};
use walkie_session::{AudioChunk, PlaybackSink};

use crate::codec::{
    CodecError, DEFAULT_OPUS_COMPLEXITY, MAX_PACKET_BYTES, OpusDecoder, OpusEncoder,
};
use crate::device::{
    Capture, DeviceDirection, DeviceError, DeviceProbe, FlushReport, Playback, PlaybackClock,
    PlaybackFlusher, PlayedReference, StreamCounters,
};
use crate::drift::ClockMark;
use crate::echo::{EchoError, EchoEvent, EchoStage};
use crate::health::{HealthCheck, Reopen, StreamCounts, StreamHealth, judge_listing};
use crate::jitter::{JitterBuffer, JitterConfig, JitterStats, Playout};
use crate::meter::{Level, LevelMeter};
use crate::onset::SpeechOnset;
use crate::playout::{LedgerOutput, PlayedLedger, PlayoutCushion, PlayoutPacer};
use crate::preroll::PreRoll;
use crate::resample::{ResampleSetupError, StreamResampler};
use crate::{CALL_RATE_HZ, FRAME_MS, FRAME_SAMPLES};

/// The warm mic's default memory, as the turn controller asks for it.
pub const DEFAULT_PRE_ROLL_MS: u32 = 300;
/// Silence put ahead of a reply when the speaker was idle: room for the 20 ms decode pace to
/// wobble without the device running dry (with the sound server's three periods behind it).
/// Where the downlink turns out slower, replies that ran dry raise it
/// ([`crate::playout::PlayoutCushion`]), up to [`MAX_PLAYOUT_CUSHION_MS`].
pub const DEFAULT_PLAYOUT_CUSHION_MS: u32 = 10;
/// The most silence put ahead of a reply, however late the downlink has been.
pub const MAX_PLAYOUT_CUSHION_MS: u32 = 40;
/// Level readings per second for the UI.
pub const DEFAULT_METER_READINGS_PER_SECOND: u32 = 15;

/// How long a worker sleeps at most between looks at its rings: one Opus frame. Messages wake
/// a worker at once (a press, a delta to play, a packet that starts a talkspurt), so the tick
/// only paces the steady work, which comes in 20 ms frames anyway; every wakeup costs CPU
/// (docs/benchmarks.md).
const WORKER_TICK: Duration = Duration::from_millis(20);
/// Between attempts to open a device when none could be opened.
const RETRY_OPEN_EVERY: Duration = Duration::from_millis(1000);
/// At most one log line per kind of trouble in this interval.
const LOG_EVERY: Duration = Duration::from_secs(5);
/// Ring sizes: capture holds what arrives between worker ticks many times over; playback holds
/// a burst of deltas (a WebSocket reply arrives faster than real time).
const CAPTURE_RING_MS: u32 = 500;
const PLAYBACK_RING_MS: u32 = 1000;
/// The player converts deltas in pieces of this many input samples (10 ms at 48 kHz).
const PLAYER_PIECE_SAMPLES: usize = 480;

/// How the engine is set up. Device ids are the ones [`crate::device::list_devices`] gives,
/// persisted by the app; `None` is the system default.
#[derive(Clone, Debug, PartialEq)]
pub struct EngineConfig {
    pub input_device: Option<String>,
    pub output_device: Option<String>,
    /// How much warm-mic audio is kept for a press (the largest `pre_roll_ms` honoured).
    pub pre_roll_ms: u32,
    /// Keep the microphone closed outside presses: no pre-roll, the first word may be clipped.
    pub privacy_mic: bool,
    pub opus_bitrate_bps: i32,
    /// libopus's encoder effort, 0–10 ([`crate::codec::DEFAULT_OPUS_COMPLEXITY`]).
    pub opus_complexity: i32,
    /// In-band forward error correction in what is sent: a lost packet can be rebuilt from the
    /// next. On; the benchmarks turn it off to measure it.
    pub opus_inband_fec: bool,
    pub jitter: JitterConfig,
    /// The rate of the chunks given to the [`Player`]: 48 kHz for decoded RTP (what
    /// [`EngineEvent::AssistantAudio`] carries); 24 kHz for a WebSocket provider's PCM.
    pub playback_rate_hz: u32,
    /// The silence ahead of a reply on an idle speaker, to begin with
    /// ([`DEFAULT_PLAYOUT_CUSHION_MS`]); replies that ran dry raise it.
    pub playout_cushion_ms: u32,
    pub meter_readings_per_second: u32,
    /// Cancel the speaker's echo in what the microphone sends (for speakers without a
    /// headset); [`EngineEvent::EchoCanceller`] says when it can be trusted.
    pub echo_cancellation: bool,
    /// Suppress steady background noise in what is sent (with echo cancellation).
    pub noise_suppression: bool,
}

impl Default for EngineConfig {
    fn default() -> Self {
        Self {
            input_device: None,
            output_device: None,
            pre_roll_ms: DEFAULT_PRE_ROLL_MS,
            privacy_mic: false,
            opus_bitrate_bps: 32_000,
            opus_complexity: DEFAULT_OPUS_COMPLEXITY,
            opus_inband_fec: true,
            jitter: JitterConfig::default(),
            playback_rate_hz: CALL_RATE_HZ,
            playout_cushion_ms: DEFAULT_PLAYOUT_CUSHION_MS,
            meter_readings_per_second: DEFAULT_METER_READINGS_PER_SECOND,
            echo_cancellation: false,
            noise_suppression: true,
        }
    }
}

/// Where encoded microphone frames go: the app connects it to the transport
/// (`PeerHandle::send_audio(Bytes::copy_from_slice(opus), samples)`).
///
/// Called on the uplink worker, in capture order; it should return quickly.
pub trait FrameSink: Send + 'static {
    /// One Opus packet of `samples` 48 kHz samples (960: 20 ms).
    fn send_frame(&mut self, opus: &[u8], samples: u32);
}

impl<F: FnMut(&[u8], u32) + Send + 'static> FrameSink for F {
    fn send_frame(&mut self, opus: &[u8], samples: u32) {
        self(opus, samples)
    }
}

/// Told once after each pass of a worker's loop in which the worker queued events: the app
/// then drains the event [`Receiver`] with `try_recv`. Called on the worker thread; it must
/// not block (a `tokio::sync::Notify::notify_one` is the app's). A test that blocks on the
/// receiver instead passes `|| {}`.
pub trait EventWaker: Send + Sync + 'static {
    fn wake(&self);
}

impl<F: Fn() + Send + Sync + 'static> EventWaker for F {
    fn wake(&self) {
        self()
    }
}

/// A worker's end of the event channel: events go out as they happen, the waker once a pass.
#[derive(Clone)]
struct Events {
    tx: Sender<EngineEvent>,
    waker: Arc<dyn EventWaker>,
    queued: std::cell::Cell<bool>,
}

impl Events {
    fn send(&self, event: EngineEvent) {
        if self.tx.send(event).is_ok() {
            self.queued.set(true);
        }
    }

    /// The end of a pass: wakes the app if anything was queued in it.
    fn end_of_pass(&self) {
        if self.queued.replace(false) {
            self.waker.wake();
        }
    }
}

/// What the engine tells the app.
#[derive(Clone, Debug, PartialEq)]
pub enum EngineEvent {
    /// 20 ms of decoded assistant audio (48 kHz mono), in order: for
    /// `TurnController::assistant_audio`. It is played only when it comes back through the
    /// [`Player`] as a session delta.
    AssistantAudio(AudioChunk),
    /// The device has taken `played_ms` of the item's audio so far: for
    /// `TurnController::playback_progress`.
    PlaybackProgress { item_id: Arc<str>, played_ms: u64 },
    /// 20 ms of microphone audio (48 kHz mono) exactly as it was encoded and sent: what the
    /// saved user turn holds.
    SentAudio(AudioChunk),
    /// Everything queued was played and nothing more came: for
    /// `TurnController::playback_drained`.
    PlaybackDrained,
    /// A reply's first sample reached the device (`at_device`, the callback that took it);
    /// `first_packet_at` is when its talkspurt's first RTP packet arrived (`None` for a reply
    /// that did not come as RTP). Sent before the progress of that pass.
    ReplyHeard {
        first_packet_at: Option<Instant>,
        at_device: Instant,
    },
    /// The chosen device could not be used; the default is used instead and audio goes on.
    /// For an input, the app tells the controller (`device_changed`).
    DeviceFellBack {
        direction: DeviceDirection,
        wanted: String,
        using: String,
        reason: String,
    },
    /// The stream was reopened on another device: the default moved, or the chosen device came
    /// back after a fallback.
    DeviceChanged {
        direction: DeviceDirection,
        using: String,
    },
    /// No device of this direction can be opened; the engine keeps trying.
    DeviceUnavailable {
        direction: DeviceDirection,
        reason: String,
    },
    /// [`DEFAULT_METER_READINGS_PER_SECOND`] times a second per direction, for the UI.
    Level {
        direction: DeviceDirection,
        level: Level,
    },
    /// The echo canceller has learnt the echo path (`true`: the reply is no longer in what is
    /// sent), or must learn a new one (`false`: another device). For
    /// `TurnController::echo_cancelled`.
    EchoCanceller { converged: bool },
    /// While the echo canceller is trusted, the microphone (what the canceller left of it)
    /// heard someone start talking: for `TurnController::near_speech`, which may hold a reply
    /// before the provider's voice detection says the same.
    NearSpeech,
    /// The speaker's and the microphone's clocks, measured against each other while the echo
    /// canceller runs: microphone samples per speaker sample, less one, in ppm; `following`:
    /// the canceller's reference is resampled onto the microphone's clock. Told when first
    /// measured and when the reference starts to follow; for the log.
    ClockDrift { drift_ppm: i32, following: bool },
    /// A reply stopped playing (drained, or flushed by a barge-in): how it went, for the log
    /// and the benchmarks.
    ReplyPlayed(PlayoutReport),
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

/// Why the engine could not start.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error(transparent)]
    Codec(#[from] CodecError),
    #[error(transparent)]
    Resample(#[from] ResampleSetupError),
    #[error("could not start the audio worker thread: {0}")]
    Thread(std::io::Error),
}

/// A snapshot of the engine's counters.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct EngineStats {
    /// Opus frames handed to the [`FrameSink`].
    pub frames_sent: u64,
    /// Whether the microphone stream is open (warm or in a press).
    pub mic_open: bool,
    /// Whether frames are being sent (between `OpenCapture` and `CloseCapture`).
    pub capturing: bool,
    pub input_rate_hz: u32,
    pub output_rate_hz: u32,
    pub jitter: JitterStats,
    pub jitter_depth_ms: u32,
    pub jitter_target_ms: u32,
    /// The received audio's interarrival jitter (RFC 3550), in milliseconds.
    pub interarrival_jitter_ms: f64,
    /// Frames written to, and taken by, the current output stream.
    pub written_frames: u64,
    pub played_frames: u64,
    /// The stream position of the first sample of the latest reply (after the cushion).
    pub talkspurt_start_frame: u64,
    pub capture_xrun_frames: u64,
    pub playback_xrun_frames: u64,
    /// The largest output callback: the device period actually granted, in frames.
    pub output_period_frames: u64,
    /// Data callbacks of the current output stream, silent ones too: a count that moves means
    /// the device is taking periods.
    pub output_callbacks: u64,
    pub stream_reopens: u64,
    pub flushes: u64,
    /// Received packets that woke the downlink (those that may start a talkspurt; while one
    /// plays, the downlink finds packets on its own 20 ms pace).
    pub packet_wakes: u64,
}

#[derive(Debug, Default)]
struct Shared {
    frames_sent: AtomicU64,
    mic_open: AtomicBool,
    capturing: AtomicBool,
    input_rate_hz: AtomicU64,
    output_rate_hz: AtomicU64,
    written_frames: AtomicU64,
    talkspurt_start_frame: AtomicU64,
    capture_xrun_frames: AtomicU64,
    stream_reopens: AtomicU64,
    flushes: AtomicU64,
    packet_wakes: AtomicU64,
    /// Bumped by every flush: deltas sent before it are stale.
    flush_epoch: AtomicU64,
    /// Whether the downlink is pacing a talkspurt (it wakes every 20 ms by itself and takes
    /// the packets waiting then). It is cleared before the downlink's last look at the packet
    /// ring, and a packet is queued before its sender reads it (each side with a full fence
    /// between): a packet either finds it clear and wakes the downlink, or is taken by that
    /// last look.
    pacing: AtomicBool,
    /// The jitter buffer's figures, as the downlink last published them.
    jitter_report: Mutex<JitterReport>,
    /// The current output stream's flush handle: the barge-in path flushes the device directly,
    /// without waiting for the downlink worker.
    flusher: Mutex<Option<PlaybackFlusher>>,
    /// A new output stream's reference tap, from the downlink to the uplink's echo canceller.
    reference: Mutex<Option<PlayedReference>>,
}

/// The jitter buffer's figures, for [`Engine::stats`].
#[derive(Debug, Default, Clone, Copy)]
struct JitterReport {
    stats: JitterStats,
    depth_ms: u32,
    target_ms: u32,
    jitter_ms: f64,
}

impl Shared {
    fn flusher(&self) -> MutexGuard<'_, Option<PlaybackFlusher>> {
        self.flusher
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn reference(&self) -> MutexGuard<'_, Option<PlayedReference>> {
        self.reference
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn jitter_report(&self) -> MutexGuard<'_, JitterReport> {
        self.jitter_report
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// One received RTP packet on its way from the app's task to the downlink, in a fixed slot
/// (no allocation per packet).
struct ReceivedPacket {
    sequence_number: u16,
    rtp_timestamp: u32,
    arrival: Instant,
    /// The flush epoch it arrived in: one from before a flush belongs to the reply flushed.
    flush_epoch: u64,
    len: usize,
    payload: [u8; MAX_PACKET_BYTES],
}

/// Packets the ring to the downlink holds (over a second of 20 ms packets): more waiting means
/// the downlink is stuck, and the newest are dropped.
const RECEIVED_PACKETS_HELD: usize = 64;

/// What the uplink worker is asked: the controller's capture commands (a playback flush never
/// reaches it: [`Engine::apply`] flushes the device itself).
enum UpMsg {
    OpenCapture { pre_roll_ms: u64 },
    CloseCapture,
    GateMic { gated: bool },
    CancelEcho { on: bool },
    Shutdown,
}

enum DownMsg {
    Wake,
    Chunk {
        epoch: u64,
        chunk: AudioChunk,
    },
    BeginItem(Arc<str>),
    /// What to do with the reply audio decoded from now, told in flush epoch `epoch` (a flush
    /// after it wins).
    ReplyAudio {
        epoch: u64,
        gate: ReplyGate,
        item: Option<Arc<str>>,
    },
    Shutdown,
}

/// A worker's inbox: messages queue in a channel that the worker only ever polls, and each
/// send unparks the worker.
///
/// Why not a blocking `recv_timeout`: a receiver blocked in it registers with the channel under a
/// mutex that a send then takes too, so every delta to play (one each 20 ms) would cost the
/// downlink a futex sleep and a second wakeup. `unpark` is an atomic swap, plus a futex wake only
/// if the worker sleeps. A blocking wait elsewhere on the worker (a stream opening waits for its
/// thread) may use up an unpark; the message is then taken at the next tick, 20 ms at most.
struct Inbox<T> {
    tx: Sender<T>,
    worker: Thread,
}

impl<T> Clone for Inbox<T> {
    fn clone(&self) -> Self {
        Self {
            tx: self.tx.clone(),
            worker: self.worker.clone(),
        }
    }
}

impl<T> std::fmt::Debug for Inbox<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Inbox")
            .field("worker", &self.worker.name())
            .finish()
    }
}

impl<T> Inbox<T> {
    fn send(&self, message: T) {
        // A stopped worker has dropped its receiver: nothing is waiting for the message.
        let _ = self.tx.send(message);
        self.worker.unpark();
    }
}

/// A worker's side of its [`Inbox`].
trait Worker {
    type Message;

    fn inbox(&self) -> &Receiver<Self::Message>;

    /// Carries out one message; `false` to stop.
    fn take(&mut self, message: Self::Message) -> bool;

    /// Sleeps until `timeout` passes or a message's unpark, then carries out every queued
    /// message in order; `false` once told to stop, or when the engine has gone.
    fn wait_and_take_messages(&mut self, timeout: Duration) -> bool {
        std::thread::park_timeout(timeout);
        loop {
            match self.inbox().try_recv() {
                Ok(message) => {
                    if !self.take(message) {
                        return false;
                    }
                }
                Err(TryRecvError::Empty) => return true,
                Err(TryRecvError::Disconnected) => return false,
            }
        }
    }
}

impl Worker for Uplink {
    type Message = UpMsg;

    fn inbox(&self) -> &Receiver<UpMsg> {
        &self.rx
    }

    fn take(&mut self, message: UpMsg) -> bool {
        self.handle(message)
    }
}

impl Worker for Downlink {
    type Message = DownMsg;

    fn inbox(&self) -> &Receiver<DownMsg> {
        &self.rx
    }

    fn take(&mut self, message: DownMsg) -> bool {
        self.handle(message)
    }
}

/// The running engine. Dropping it stops the workers and closes the devices.
pub struct Engine {
    up: Inbox<UpMsg>,
    down: Inbox<DownMsg>,
    /// To the downlink, which owns the jitter buffer. Only [`Engine::receive_rtp`] writes it:
    /// the lock is never contended by the downlink.
    packets: Mutex<rtrb::Producer<ReceivedPacket>>,
    shared: Arc<Shared>,
    workers: Vec<JoinHandle<()>>,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("stats", &self.stats())
            .finish()
    }
}

/// When a callback reached the sample at stream position `frame`, from the speaker's clock
/// (the callback's start, plus the samples ahead of it in that callback).
fn sample_handed_at(clock: PlaybackClock, frame: u64, rate_hz: f64) -> Instant {
    let offset = |frames: u64| Duration::from_secs_f64(frames as f64 / rate_hz);
    if frame >= clock.frames_before_last_callback {
        clock.last_callback_at + offset(frame - clock.frames_before_last_callback)
    } else {
        let earlier = offset(clock.frames_before_last_callback - frame);
        clock
            .last_callback_at
            .checked_sub(earlier)
            .unwrap_or(clock.last_callback_at)
    }
}

impl Engine {
    /// Starts both workers. The devices open on the workers; one that cannot be opened is an
    /// [`EngineEvent::DeviceUnavailable`] and is retried, not an error here.
    pub fn start(
        config: EngineConfig,
        sink: impl FrameSink,
        waker: impl EventWaker,
    ) -> Result<(Self, Receiver<EngineEvent>), EngineError> {
        let (tx, event_rx) = mpsc::channel();
        let events = Events {
            tx,
            waker: Arc::new(waker),
            queued: std::cell::Cell::new(false),
        };
        let shared = Arc::new(Shared::default());
        let (packets, received) = rtrb::RingBuffer::new(RECEIVED_PACKETS_HELD);
        let (up_tx, up_rx) = mpsc::channel();
        let (down_tx, down_rx) = mpsc::channel();

        let uplink = Uplink::new(
            &config,
            up_rx,
            events.clone(),
            shared.clone(),
            Box::new(sink),
        )?;
        let downlink = Downlink::new(&config, down_rx, events, shared.clone(), received)?;
        let up_worker = std::thread::Builder::new()
            .name("walkie-audio-up".to_owned())
            .spawn(move || uplink.run())
            .map_err(EngineError::Thread)?;
        let down_worker = std::thread::Builder::new()
            .name("walkie-audio-down".to_owned())
            .spawn(move || downlink.run())
            .map_err(EngineError::Thread)?;
        let up = Inbox {
            tx: up_tx,
            worker: up_worker.thread().clone(),
        };
        let down = Inbox {
            tx: down_tx,
            worker: down_worker.thread().clone(),
        };
        Ok((
            Self {
                up,
                down,
                packets: Mutex::new(packets),
                shared,
                workers: vec![up_worker, down_worker],
            },
            event_rx,
        ))
    }

    /// Carries out one of the turn controller's audio commands.
    pub fn apply(&self, command: AudioCommand) {
        let message = match command {
            AudioCommand::FlushPlayback => return self.player().flush(),
            AudioCommand::HoldPlayback { held } => return self.player().hold(held),
            AudioCommand::OpenCapture { pre_roll_ms } => UpMsg::OpenCapture { pre_roll_ms },
            AudioCommand::CloseCapture => UpMsg::CloseCapture,
            AudioCommand::GateMic { gated } => UpMsg::GateMic { gated },
            AudioCommand::CancelEcho { on } => UpMsg::CancelEcho { on },
        };
        self.up.send(message);
    }

    /// One received RTP packet (`PeerEvent::Audio`): to the downlink's jitter buffer. `false`:
    /// dropped, larger than any Opus packet or with the downlink over a second behind.
    pub fn receive_rtp(
        &self,
        sequence_number: u16,
        rtp_timestamp: u32,
        payload: &[u8],
        arrival: Instant,
    ) -> bool {
        if payload.len() > MAX_PACKET_BYTES {
            return false;
        }
        let mut packet = ReceivedPacket {
            sequence_number,
            rtp_timestamp,
            arrival,
            flush_epoch: self.shared.flush_epoch.load(Ordering::Acquire),
            len: payload.len(),
            payload: [0; MAX_PACKET_BYTES],
        };
        packet.payload[..payload.len()].copy_from_slice(payload);
        let queued = self
            .packets
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .push(packet)
            .is_ok();
        // While a talkspurt plays, the downlink wakes on its 20 ms pace and finds the packet
        // then; only a packet that may start one needs to wake it (see `Shared::pacing`).
        std::sync::atomic::fence(Ordering::SeqCst);
        if queued && !self.shared.pacing.load(Ordering::SeqCst) {
            self.shared.packet_wakes.fetch_add(1, Ordering::Relaxed);
            self.down.send(DownMsg::Wake);
        }
        queued
    }

    /// What to do with the reply audio decoded from RTP: the downlink plays it straight to the
    /// speaker, as the turn controller says, and counts it against the item named. Until told,
    /// a reply is played from its first sound; a flush drops what is decoded after it until
    /// this is told again.
    pub fn reply_audio(&self, reply_audio: &ReplyAudio) {
        self.down.send(DownMsg::ReplyAudio {
            epoch: self.shared.flush_epoch.load(Ordering::Acquire),
            gate: reply_audio.gate,
            item: reply_audio.item_id.as_deref().map(Arc::from),
        });
    }

    /// The playback entry for audio that comes as PCM from the app (a WebSocket provider's
    /// speech deltas); decoded RTP does not pass here ([`Engine::reply_audio`]).
    pub fn player(&self) -> Player {
        Player {
            down: self.down.clone(),
            shared: self.shared.clone(),
        }
    }

    /// Where the speaker stands (for latency measurements), if an output stream is open.
    pub fn playback_clock(&self) -> Option<PlaybackClock> {
        self.shared.flusher().as_ref().map(PlaybackFlusher::clock)
    }

    /// What the last flush cost, if an output stream is open and it has been carried out.
    pub fn last_flush(&self) -> Option<FlushReport> {
        let flusher = self.shared.flusher();
        let flusher = flusher.as_ref()?;
        flusher.flush_done().then(|| flusher.last_flush())
    }

    pub fn stats(&self) -> EngineStats {
        let shared = &self.shared;
        let (played_frames, playback_xrun_frames, output_period_frames, output_callbacks) = shared
            .flusher()
            .as_ref()
            .map(|flusher| {
                let counters: &StreamCounters = flusher.counters();
                (
                    flusher.clock().played_frames,
                    counters.xrun_frames.load(Ordering::Relaxed),
                    counters.max_callback_frames.load(Ordering::Relaxed),
                    counters.callbacks.load(Ordering::Relaxed),
                )
            })
            .unwrap_or_default();
        let jitter = *shared.jitter_report();
        EngineStats {
            frames_sent: shared.frames_sent.load(Ordering::Relaxed),
            mic_open: shared.mic_open.load(Ordering::Relaxed),
            capturing: shared.capturing.load(Ordering::Relaxed),
            input_rate_hz: shared.input_rate_hz.load(Ordering::Relaxed) as u32,
            output_rate_hz: shared.output_rate_hz.load(Ordering::Relaxed) as u32,
            jitter: jitter.stats,
            jitter_depth_ms: jitter.depth_ms,
            jitter_target_ms: jitter.target_ms,
            interarrival_jitter_ms: jitter.jitter_ms,
            written_frames: shared.written_frames.load(Ordering::Relaxed),
            played_frames,
            talkspurt_start_frame: shared.talkspurt_start_frame.load(Ordering::Relaxed),
            capture_xrun_frames: shared.capture_xrun_frames.load(Ordering::Relaxed),
            playback_xrun_frames,
            output_period_frames,
            output_callbacks,
            stream_reopens: shared.stream_reopens.load(Ordering::Relaxed),
            flushes: shared.flushes.load(Ordering::Relaxed),
            packet_wakes: shared.packet_wakes.load(Ordering::Relaxed),
        }
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        self.up.send(UpMsg::Shutdown);
        self.down.send(DownMsg::Shutdown);
        for worker in self.workers.drain(..) {
            let _ = worker.join();
        }
    }
}

/// The playback entry, cheap to clone: the session's speech deltas, and the barge-in flush.
#[derive(Clone, Debug)]
pub struct Player {
    down: Inbox<DownMsg>,
    shared: Arc<Shared>,
}

impl Player {
    /// The deltas played from now on belong to this assistant item (for the progress counts).
    pub fn begin_item(&self, item_id: &str) {
        self.down.send(DownMsg::BeginItem(Arc::from(item_id)));
    }

    /// Holds the reply (`true`: the device plays silence from its next period and keeps what
    /// is queued) or lets it go on where it stopped (`false`). A flush ends the hold.
    pub fn hold(&self, held: bool) {
        if let Some(flusher) = self.shared.flusher().as_ref() {
            flusher.hold(held);
        }
    }

    /// Barge-in: drops every queued sample (device ring, pending deltas, and the packets of
    /// the jitter buffer, which the downlink empties when it wakes); the device goes silent at
    /// its next period.
    pub fn flush(&self) {
        self.shared.flush_epoch.fetch_add(1, Ordering::AcqRel);
        if let Some(flusher) = self.shared.flusher().as_ref() {
            flusher.flush();
        }
        self.shared.flushes.fetch_add(1, Ordering::Relaxed);
        self.down.send(DownMsg::Wake);
    }
}

impl PlaybackSink for Player {
    fn play(&mut self, chunk: &AudioChunk) {
        let epoch = self.shared.flush_epoch.load(Ordering::Acquire);
        self.down.send(DownMsg::Chunk {
            epoch,
            chunk: chunk.clone(),
        });
    }
}

/// One log line per [`LOG_EVERY`] for a kind of trouble, with a count of the ones held back.
#[derive(Debug, Default)]
struct RateLimitedLog {
    last: Option<Instant>,
    suppressed: u64,
}

impl RateLimitedLog {
    fn warn(&mut self, now: Instant, message: std::fmt::Arguments<'_>) {
        if self
            .last
            .is_some_and(|last| now.duration_since(last) < LOG_EVERY)
        {
            self.suppressed += 1;
            return;
        }
        if self.suppressed > 0 {
            log::warn!("{message} ({} similar held back)", self.suppressed);
        } else {
            log::warn!("{message}");
        }
        self.last = Some(now);
        self.suppressed = 0;
    }
}

/// A device stream the engine watches.
trait WatchedStream {
    fn device_id(&self) -> &str;
    fn counters(&self) -> &StreamCounters;
}

impl WatchedStream for Capture {
    fn device_id(&self) -> &str {
        Capture::device_id(self)
    }
    fn counters(&self) -> &StreamCounters {
        Capture::counters(self)
    }
}

impl WatchedStream for Playback {
    fn device_id(&self) -> &str {
        Playback::device_id(self)
    }
    fn counters(&self) -> &StreamCounters {
        Playback::counters(self)
    }
}

/// One direction's device choice, fallback and health.
struct DeviceSlot {
    direction: DeviceDirection,
    /// The user's choice (`None`: follow the default).
    wanted: Option<String>,
    probe: Option<DeviceProbe>,
    fell_back: bool,
    unavailable_reported: bool,
    retry_at: Instant,
    /// The open stream's watch, on milliseconds since `epoch`.
    health: StreamHealth,
    epoch: Instant,
    error_log: RateLimitedLog,
    open_log: RateLimitedLog,
}

impl DeviceSlot {
    fn new(direction: DeviceDirection, wanted: Option<String>) -> Self {
        let now = Instant::now();
        Self {
            direction,
            wanted,
            probe: None,
            fell_back: false,
            unavailable_reported: false,
            retry_at: now,
            health: StreamHealth::opened(0),
            epoch: now,
            error_log: RateLimitedLog::default(),
            open_log: RateLimitedLog::default(),
        }
    }

    /// Opens the wanted device, or the default when it cannot be used; reports what happened.
    fn open<T: WatchedStream>(
        &mut self,
        previous_id: Option<&str>,
        open: impl Fn(Option<&str>) -> Result<T, DeviceError>,
        events: &Events,
    ) -> Option<T> {
        let now = Instant::now();
        let direction = self.direction;
        let wanted_result = match self.wanted.as_deref() {
            Some(wanted) => open(Some(wanted)),
            None => open(None),
        };
        let (stream, fell_back_because) = match (wanted_result, self.wanted.as_deref()) {
            (Ok(stream), _) => (stream, None),
            (Err(error), Some(_)) => match open(None) {
                Ok(stream) => (stream, Some(error.to_string())),
                Err(default_error) => {
                    self.report_unavailable(now, default_error, events);
                    return None;
                }
            },
            (Err(error), None) => {
                self.report_unavailable(now, error, events);
                return None;
            }
        };
        self.unavailable_reported = false;
        self.health = StreamHealth::opened(self.ms(now));
        let using = stream.device_id().to_owned();
        match (fell_back_because, &self.wanted) {
            (Some(reason), Some(wanted)) => {
                if !self.fell_back || previous_id != Some(using.as_str()) {
                    log::warn!("the {direction} {wanted} is not usable ({reason}); using {using}");
                    events.send(EngineEvent::DeviceFellBack {
                        direction,
                        wanted: wanted.clone(),
                        using,
                        reason,
                    });
                }
                self.fell_back = true;
            }
            _ => {
                self.fell_back = false;
                if previous_id.is_some_and(|previous| previous != using) {
                    log::info!("the {direction} is now {using}");
                    events.send(EngineEvent::DeviceChanged { direction, using });
                }
            }
        }
        Some(stream)
    }

    fn report_unavailable(&mut self, now: Instant, error: DeviceError, events: &Events) {
        self.retry_at = now + RETRY_OPEN_EVERY;
        self.open_log.warn(
            now,
            format_args!("cannot open a {}: {error}; retrying", self.direction),
        );
        if !self.unavailable_reported {
            self.unavailable_reported = true;
            events.send(EngineEvent::DeviceUnavailable {
                direction: self.direction,
                reason: error.to_string(),
            });
        }
    }

    /// `at` on the watch's clock.
    fn ms(&self, at: Instant) -> u64 {
        at.saturating_duration_since(self.epoch).as_millis() as u64
    }

    /// Whether the open stream must be reopened, as [`StreamHealth`] judges what its counters
    /// and the device list say; this reads them and logs the errors it counted.
    fn needs_reopen(&mut self, stream: &impl WatchedStream, now: Instant) -> Option<Reopen> {
        let counters = stream.counters();
        let counts = StreamCounts {
            callbacks: counters.callbacks.load(Ordering::Relaxed),
            errors: counters.errors.load(Ordering::Relaxed),
            fatal_errors: counters.fatal_errors.load(Ordering::Relaxed),
        };
        let (new_errors, list_due) = match self.health.look(self.ms(now), counts) {
            HealthCheck::Reopen(why) => return Some(why),
            HealthCheck::Fine { new_errors } => (new_errors, false),
            HealthCheck::ListDue { new_errors } => (new_errors, true),
        };
        if new_errors > 0 {
            self.error_log.warn(
                now,
                format_args!("{new_errors} error(s) on the {} stream", self.direction),
            );
        }
        if !list_due {
            return None;
        }
        let direction = self.direction;
        let probe = self.probe.get_or_insert_with(DeviceProbe::new);
        let devices = probe.list(direction).ok()?;
        let chosen_listed = self
            .wanted
            .as_deref()
            .map(|wanted| devices.iter().any(|device| device.id == wanted));
        judge_listing(chosen_listed, self.fell_back, || {
            probe
                .default_id(direction)
                .is_some_and(|default| default != stream.device_id())
        })
    }
}

/// Cuts the call-rate stream into 20 ms frames and encodes each into the sink.
struct Framer {
    frame: Vec<f32>,
    packet: Box<[u8; MAX_PACKET_BYTES]>,
    encoder: OpusEncoder,
    sink: Box<dyn FrameSink>,
    shared: Arc<Shared>,
    log: RateLimitedLog,
}

impl Framer {
    /// Encodes whole frames into the sink; each frame sent is also reported
    /// ([`EngineEvent::SentAudio`]), for the saved user turn.
    fn feed(&mut self, mut samples: &[f32], events: &Events) {
        while !samples.is_empty() {
            let take = (FRAME_SAMPLES - self.frame.len()).min(samples.len());
            self.frame.extend_from_slice(&samples[..take]);
            samples = &samples[take..];
            if self.frame.len() == FRAME_SAMPLES {
                self.encode(events);
            }
        }
    }

    /// Sends a partial frame padded with silence: nothing said before a close is lost.
    fn finish(&mut self, events: &Events) {
        if !self.frame.is_empty() {
            self.frame.resize(FRAME_SAMPLES, 0.0);
            self.encode(events);
        }
    }

    fn encode(&mut self, events: &Events) {
        match self.encoder.encode(&self.frame, &mut self.packet) {
            Ok(len) => {
                self.sink
                    .send_frame(&self.packet[..len], FRAME_SAMPLES as u32);
                self.shared.frames_sent.fetch_add(1, Ordering::Relaxed);
                let pcm: Vec<i16> = self
                    .frame
                    .iter()
                    .map(|&s| (s * 32_768.0).round().clamp(-32_768.0, 32_767.0) as i16)
                    .collect();
                events.send(EngineEvent::SentAudio(AudioChunk::from_samples(pcm)));
            }
            Err(error) => self.log.warn(
                Instant::now(),
                format_args!("dropped a microphone frame: {error}"),
            ),
        }
        self.frame.clear();
    }
}

struct Uplink {
    rx: Receiver<UpMsg>,
    events: Events,
    shared: Arc<Shared>,
    slot: DeviceSlot,
    capture: Option<Capture>,
    privacy: bool,
    capturing: bool,
    gated: bool,
    resampler: Option<(u32, StreamResampler)>,
    meter: Option<(u32, LevelMeter)>,
    meter_readings_per_second: u32,
    device_buf: Vec<f32>,
    call_buf: Vec<f32>,
    preroll: PreRoll,
    framer: Framer,
    /// Echo cancellation asked for, with noise suppression or not.
    echo_wanted: bool,
    /// The canceller is paused ([`AudioCommand::CancelEcho`]): the microphone goes out as
    /// captured.
    echo_paused: bool,
    noise_suppression: bool,
    /// The canceller and the speaker's tap it reads, once a speaker stream opened.
    echo: Option<UplinkEcho>,
    /// What the canceller sent of `call_buf` (the two are swapped).
    echo_out: Vec<f32>,
    /// The user starting to talk, in what the trusted canceller sends.
    near_speech: SpeechOnset,
    /// The devices' marks are told to the canceller as microseconds since this.
    clock_epoch: Instant,
}

/// The uplink's echo canceller and what it cancels: the tap of the speaker stream playing.
struct UplinkEcho {
    stage: EchoStage,
    reference: PlayedReference,
}

impl Uplink {
    fn new(
        config: &EngineConfig,
        rx: Receiver<UpMsg>,
        events: Events,
        shared: Arc<Shared>,
        sink: Box<dyn FrameSink>,
    ) -> Result<Self, EngineError> {
        // Sized for the largest device rate in common use; a faster device grows them once.
        let device_samples = 192_000 * CAPTURE_RING_MS as usize / 1000;
        Ok(Self {
            rx,
            events,
            slot: DeviceSlot::new(DeviceDirection::Input, config.input_device.clone()),
            capture: None,
            privacy: config.privacy_mic,
            capturing: false,
            gated: false,
            resampler: None,
            meter: None,
            meter_readings_per_second: config.meter_readings_per_second,
            device_buf: Vec::with_capacity(device_samples),
            call_buf: Vec::with_capacity(device_samples * 2),
            echo_wanted: config.echo_cancellation,
            echo_paused: false,
            noise_suppression: config.noise_suppression,
            echo: None,
            echo_out: Vec::with_capacity(device_samples * 2),
            near_speech: SpeechOnset::new(CALL_RATE_HZ),
            clock_epoch: Instant::now(),
            preroll: PreRoll::new(CALL_RATE_HZ, config.pre_roll_ms),
            framer: Framer {
                frame: Vec::with_capacity(FRAME_SAMPLES),
                packet: Box::new([0; MAX_PACKET_BYTES]),
                encoder: OpusEncoder::with_options(
                    config.opus_bitrate_bps,
                    config.opus_complexity,
                    config.opus_inband_fec,
                )?,
                sink,
                shared: shared.clone(),
                log: RateLimitedLog::default(),
            },
            shared,
        })
    }

    fn run(mut self) {
        self.run_passes();
        self.events.end_of_pass();
    }

    /// Until told to stop; each pass ends by waking the app if it queued events.
    fn run_passes(&mut self) {
        loop {
            if !self.wait_and_take_messages(WORKER_TICK) {
                return;
            }
            self.pump();
            self.look_after_device();
            self.events.end_of_pass();
        }
    }

    /// Carries out one message; `false` to stop.
    fn handle(&mut self, message: UpMsg) -> bool {
        match message {
            UpMsg::OpenCapture { pre_roll_ms } => self.open_capture(pre_roll_ms),
            UpMsg::CloseCapture => self.close_capture(),
            UpMsg::GateMic { gated } => {
                self.pump();
                self.gated = gated;
            }
            UpMsg::CancelEcho { on } => self.pause_echo(!on),
            UpMsg::Shutdown => return false,
        }
        true
    }

    fn wants_device(&self) -> bool {
        self.capturing || !self.privacy
    }

    fn open_capture(&mut self, pre_roll_ms: u64) {
        if self.capturing {
            return;
        }
        if self.capture.is_none() {
            self.open_device();
        } else {
            // The latest audio first, so the pre-roll reaches up to the press.
            self.pump();
        }
        self.capturing = true;
        self.shared.capturing.store(true, Ordering::Relaxed);
        let pre_roll_samples = (CALL_RATE_HZ as u64 * pre_roll_ms / 1000) as usize;
        let framer = &mut self.framer;
        let events = &self.events;
        self.preroll
            .drain_latest(pre_roll_samples, |samples| framer.feed(samples, events));
    }

    fn close_capture(&mut self) {
        if !self.capturing {
            return;
        }
        self.pump();
        self.framer.finish(&self.events);
        self.capturing = false;
        self.shared.capturing.store(false, Ordering::Relaxed);
        if self.privacy {
            self.close_device();
        }
    }

    fn close_device(&mut self) {
        self.shared.mic_open.store(false, Ordering::Relaxed);
        close_in_background(self.capture.take());
        self.preroll.clear();
    }

    fn open_device(&mut self) {
        let previous = self.capture.take();
        let previous_id = previous.as_ref().map(|c| c.device_id().to_owned());
        close_in_background(previous);
        let capture = self.slot.open(
            previous_id.as_deref(),
            |id| Capture::open(id, CAPTURE_RING_MS),
            &self.events,
        );
        let Some(capture) = capture else {
            self.shared.mic_open.store(false, Ordering::Relaxed);
            return;
        };
        let rate = capture.format().sample_rate_hz;
        if self
            .resampler
            .as_ref()
            .is_none_or(|(from, _)| *from != rate)
        {
            match StreamResampler::new(rate, CALL_RATE_HZ) {
                Ok(resampler) => self.resampler = Some((rate, resampler)),
                Err(error) => {
                    log::error!("cannot convert the microphone to 48 kHz: {error}");
                    return;
                }
            }
        }
        if self.meter.as_ref().is_none_or(|(at, _)| *at != rate) {
            self.meter = Some((rate, LevelMeter::new(rate, self.meter_readings_per_second)));
        }
        self.shared
            .input_rate_hz
            .store(u64::from(rate), Ordering::Relaxed);
        self.shared.mic_open.store(true, Ordering::Relaxed);
        self.capture = Some(capture);
        // Another microphone hears the speaker along another path.
        if let Some(echo) = self.echo.as_mut() {
            echo.stage.path_changed();
        }
    }

    fn reopen(&mut self) {
        if self.wants_device() {
            self.shared.stream_reopens.fetch_add(1, Ordering::Relaxed);
            self.open_device();
        }
    }

    fn look_after_device(&mut self) {
        let now = Instant::now();
        match &self.capture {
            Some(capture) => {
                if let Some(why) = self.slot.needs_reopen(capture, now) {
                    log::info!("reopening the microphone: {}", why.reason());
                    self.pump();
                    self.reopen();
                }
            }
            None if self.wants_device() && now >= self.slot.retry_at => self.open_device(),
            None => {}
        }
    }

    /// Moves what was captured on: meter, 48 kHz, then frames or the pre-roll.
    fn pump(&mut self) {
        let Some(capture) = self.capture.as_mut() else {
            return;
        };
        self.device_buf.clear();
        let device_rate_hz = u64::from(capture.format().sample_rate_hz.max(1));
        let epoch = self.clock_epoch;
        let mut stage = self.echo.as_mut().map(|echo| &mut echo.stage);
        capture.read_marks(|mark| {
            if let Some(stage) = stage.as_mut() {
                // The canceller's microphone samples are the call's 48 kHz.
                stage.microphone_clock(ClockMark {
                    at_us: micros_since(epoch, mark.at),
                    frames: mark.frames * u64::from(CALL_RATE_HZ) / device_rate_hz,
                });
            }
        });
        if capture.read_into(&mut self.device_buf) == 0 {
            return;
        }
        let xrun_frames = capture.counters().xrun_frames.load(Ordering::Relaxed);
        let overran = self
            .shared
            .capture_xrun_frames
            .swap(xrun_frames, Ordering::Relaxed)
            != xrun_frames;
        if overran && let Some(echo) = self.echo.as_mut() {
            // Captured audio was lost: the microphone's timeline jumped against the speaker's,
            // as if the echo path had changed.
            echo.stage.path_changed();
        }
        if let Some((_, meter)) = self.meter.as_mut() {
            let events = &self.events;
            meter.feed(&self.device_buf, |level| {
                events.send(EngineEvent::Level {
                    direction: DeviceDirection::Input,
                    level,
                });
            });
        }
        let Some((_, resampler)) = self.resampler.as_mut() else {
            return;
        };
        self.call_buf.clear();
        resampler.process(&self.device_buf, &mut self.call_buf);
        // Before the gate: the canceller learns the echo path while the reply is gated.
        self.cancel_echo();
        self.listen_for_near_speech();
        if self.gated {
            self.call_buf.fill(0.0);
        }
        if self.capturing {
            self.framer.feed(&self.call_buf, &self.events);
        } else if self.gated {
            // Nobody could talk into a gated mic: a press right after the reply must not send
            // its silence ahead of the user.
            self.preroll.clear();
        } else {
            self.preroll.push(&self.call_buf);
        }
    }
}

impl Uplink {
    /// Tells the app when the user starts talking, while the canceller is trusted and running
    /// (otherwise the reply's echo would be taken for the user).
    fn listen_for_near_speech(&mut self) {
        let trusted = !self.echo_paused
            && self
                .echo
                .as_ref()
                .is_some_and(|echo| echo.stage.is_converged());
        if !trusted {
            self.near_speech.reset();
            return;
        }
        if self.near_speech.feed(&self.call_buf) {
            self.events.send(EngineEvent::NearSpeech);
        }
    }

    /// Takes the speaker's echo out of `call_buf` (a whole number of 10 ms frames comes out;
    /// the rest waits for the next pass), reading what the speaker played since the last pass.
    fn cancel_echo(&mut self) {
        if !self.echo_wanted {
            return;
        }
        let new_reference = self.shared.reference().take();
        if let Some(reference) = new_reference {
            self.use_reference(reference);
        }
        if self.echo_paused {
            return;
        }
        let Some(echo) = self.echo.as_mut() else {
            return;
        };
        let result = feed_reference(echo, self.clock_epoch).and_then(|()| {
            self.echo_out.clear();
            let hint_ms = echo.reference.clock.clock().output_latency.as_millis();
            echo.stage.captured(
                &self.call_buf,
                &mut self.echo_out,
                u32::try_from(hint_ms).unwrap_or(u32::MAX),
            )
        });
        match result {
            Ok(()) => std::mem::swap(&mut self.call_buf, &mut self.echo_out),
            Err(error) => {
                log::error!("echo cancellation stopped: {error}");
                self.drop_echo();
                return;
            }
        }
        self.tell_echo_events();
    }

    /// Pauses the canceller (the microphone then goes out as captured) or runs it again. A
    /// paused one is no longer trusted; run again, it relearns the path, and what the speaker
    /// played meanwhile is skipped as a stale tap.
    fn pause_echo(&mut self, paused: bool) {
        if self.echo_paused == paused {
            return;
        }
        // What was captured so far goes through as the canceller stood.
        self.pump();
        self.echo_paused = paused;
        if paused && let Some(echo) = self.echo.as_mut() {
            echo.stage.path_changed();
            self.tell_echo_events();
        }
    }

    /// Tells the app what the canceller's trust became, if it changed.
    fn tell_echo_events(&mut self) {
        while let Some(event) = echo_event(&mut self.echo) {
            let converged = match event {
                EchoEvent::Converged => true,
                EchoEvent::Relearning => false,
                EchoEvent::Clocks {
                    drift_ppm,
                    following,
                } => {
                    self.events.send(EngineEvent::ClockDrift {
                        drift_ppm,
                        following,
                    });
                    continue;
                }
            };
            if let Some(echo) = &self.echo {
                let stats = echo.stage.stats();
                log::info!(
                    "echo canceller {}: delay {:?} ms, ERLE {:?} dB",
                    if converged {
                        "trusted"
                    } else {
                        "learning a new path"
                    },
                    stats.delay_ms,
                    stats.erle_db.map(|db| db.round())
                );
            }
            self.events.send(EngineEvent::EchoCanceller { converged });
        }
    }

    /// A new speaker stream: its tap, with the canceller kept when its rate is the same (the
    /// path may have changed: it learns again), or a new one.
    fn use_reference(&mut self, reference: PlayedReference) {
        if let Some(echo) = self
            .echo
            .as_mut()
            .filter(|echo| echo.stage.render_rate_hz() == reference.rate_hz)
        {
            echo.reference = reference;
            echo.stage.path_changed();
            return;
        }
        match EchoStage::new(reference.rate_hz, self.noise_suppression) {
            Ok(stage) => {
                self.drop_echo();
                self.echo = Some(UplinkEcho { stage, reference });
            }
            Err(error) => {
                log::error!("no echo cancellation for this speaker: {error}");
                self.drop_echo();
            }
        }
    }

    /// No canceller any more: a trusted one is not trusted.
    fn drop_echo(&mut self) {
        if self
            .echo
            .take()
            .is_some_and(|echo| echo.stage.is_converged())
        {
            self.events
                .send(EngineEvent::EchoCanceller { converged: false });
        }
    }
}

/// The canceller's event, if it has one.
fn echo_event(echo: &mut Option<UplinkEcho>) -> Option<EchoEvent> {
    echo.as_mut()?.stage.poll_event()
}

/// More played audio than this waiting in the tap means the uplink was not reading (the
/// microphone was closed): what is older than a pass is dropped, not fed late.
const STALE_REFERENCE_MS: usize = 200;

/// `at` as microseconds since `epoch` (0 before it).
fn micros_since(epoch: Instant, at: Instant) -> u64 {
    u64::try_from(at.saturating_duration_since(epoch).as_micros()).unwrap_or(u64::MAX)
}

/// Gives the canceller where the speaker stood and what it played since the last pass.
fn feed_reference(echo: &mut UplinkEcho, epoch: Instant) -> Result<(), EchoError> {
    while let Ok(mark) = echo.reference.marks.pop() {
        echo.stage.speaker_clock(ClockMark {
            at_us: micros_since(epoch, mark.at),
            frames: mark.frames,
        });
    }
    let rate_hz = echo.reference.rate_hz as usize;
    let mut available = echo.reference.samples.slots();
    if available > rate_hz * STALE_REFERENCE_MS / 1000 {
        let keep = rate_hz * FRAME_MS as usize / 1000;
        if let Ok(stale) = echo.reference.samples.read_chunk(available - keep) {
            stale.commit_all();
        }
        available = keep;
        // The speaker's timeline jumped against the microphone's.
        echo.stage.path_changed();
    }
    let Ok(chunk) = echo.reference.samples.read_chunk(available) else {
        return Ok(());
    };
    let (first, second) = chunk.as_slices();
    let result = echo
        .stage
        .played(first)
        .and_then(|()| echo.stage.played(second));
    chunk.commit_all();
    result
}

/// A delta waiting for room in the device ring.
struct Queued {
    item: Option<Arc<str>>,
    chunk: AudioChunk,
    offset: usize,
}

struct Downlink {
    rx: Receiver<DownMsg>,
    events: Events,
    shared: Arc<Shared>,
    /// Received packets, from [`Engine::receive_rtp`], into the jitter buffer this owns.
    received: rtrb::Consumer<ReceivedPacket>,
    jitter: JitterBuffer,
    /// The arrival of the first packet taken while no talkspurt was paced: where the next
    /// talkspurt's [`PlayoutReport::arrival_to_device_ms`] starts.
    idle_arrival: Option<Instant>,
    decoder: OpusDecoder,
    decoded: Box<[f32; FRAME_SAMPLES]>,
    decode_log: RateLimitedLog,
    /// When the next 20 ms frame is due from the jitter buffer.
    pacer: PlayoutPacer,
    /// The pacer's and the ledger's time is microseconds since this.
    clock_epoch: Instant,
    slot: DeviceSlot,
    playback: Option<Playback>,
    playback_rate_hz: u32,
    /// Tap what the speaker plays, for the uplink's echo canceller.
    tap_reference: bool,
    resampler: Option<(u32, StreamResampler)>,
    meter: Option<(u32, LevelMeter)>,
    meter_readings_per_second: u32,
    cushion: PlayoutCushion,
    zeros: Vec<f32>,
    pending: VecDeque<Queued>,
    current_item: Option<Arc<str>>,
    /// What the controller last said of decoded reply audio.
    decoded_reply: DecodedReplyAudio,
    piece: Vec<f32>,
    out: Vec<f32>,
    out_pos: usize,
    out_item: Option<Arc<str>>,
    seen_epoch: u64,
    awaiting_flush: bool,
    wrote_since_epoch_check: bool,
    /// What of each item the device played; stream positions are the device's count of
    /// played frames.
    ledger: PlayedLedger<Arc<str>>,
    /// The first packet's arrival of the talkspurt being decoded.
    talkspurt_arrival: Option<Instant>,
    /// The reply on the speaker, watched for its [`PlayoutReport`].
    reply: Option<ReplyWatch>,
}

/// What is known of the reply on the speaker so far.
#[derive(Debug)]
struct ReplyWatch {
    /// The stream position of its first sample (after the cushion).
    start_frame: u64,
    arrival: Option<Instant>,
    /// When the callback that took the first sample reached it.
    at_device: Option<Instant>,
    /// The device's count of silence frames when last looked at.
    silence_frames_seen: u64,
    silence_inside_frames: u64,
    /// The silence written ahead of it.
    cushion_ms: u32,
    server_underflows_at_start: u64,
    server_gap_frames_at_start: u64,
    jitter_at_start: JitterStats,
    flushed: bool,
}

impl Downlink {
    fn new(
        config: &EngineConfig,
        rx: Receiver<DownMsg>,
        events: Events,
        shared: Arc<Shared>,
        received: rtrb::Consumer<ReceivedPacket>,
    ) -> Result<Self, EngineError> {
        // Checked here so a bad rate is an error at start, not a silent speaker later.
        StreamResampler::new(config.playback_rate_hz, CALL_RATE_HZ)?;
        Ok(Self {
            rx,
            events,
            shared,
            received,
            jitter: JitterBuffer::new(config.jitter),
            idle_arrival: None,
            decoder: OpusDecoder::new()?,
            decoded: Box::new([0.0; FRAME_SAMPLES]),
            decode_log: RateLimitedLog::default(),
            pacer: PlayoutPacer::new(),
            clock_epoch: Instant::now(),
            slot: DeviceSlot::new(DeviceDirection::Output, config.output_device.clone()),
            playback: None,
            playback_rate_hz: config.playback_rate_hz,
            tap_reference: config.echo_cancellation,
            resampler: None,
            meter: None,
            meter_readings_per_second: config.meter_readings_per_second,
            cushion: PlayoutCushion::new(config.playout_cushion_ms, MAX_PLAYOUT_CUSHION_MS),
            zeros: vec![0.0; 192 * MAX_PLAYOUT_CUSHION_MS.max(config.playout_cushion_ms) as usize],
            pending: VecDeque::with_capacity(1024),
            current_item: None,
            decoded_reply: DecodedReplyAudio::default(),
            piece: Vec::with_capacity(PLAYER_PIECE_SAMPLES),
            out: Vec::new(),
            out_pos: 0,
            out_item: None,
            seen_epoch: 0,
            awaiting_flush: false,
            wrote_since_epoch_check: false,
            ledger: PlayedLedger::new(config.playback_rate_hz),
            talkspurt_arrival: None,
            reply: None,
        })
    }

    fn run(mut self) {
        self.run_passes();
        self.events.end_of_pass();
    }

    /// Until told to stop; each pass ends by waking the app if it queued events.
    fn run_passes(&mut self) {
        self.open_device();
        loop {
            let now_us = self.micros(Instant::now());
            let wait = self.pacer.next_due_us().map_or(WORKER_TICK, |due_us| {
                Duration::from_micros(due_us.saturating_sub(now_us)).min(WORKER_TICK)
            });
            // Until the next frame is due, at most a tick.
            if !self.wait_and_take_messages(wait) {
                return;
            }
            let now = Instant::now();
            self.check_flush();
            self.decode_due(now);
            self.pump_playback();
            self.account(now);
            self.look_after_device(now);
            self.publish_jitter_report();
            self.events.end_of_pass();
        }
    }

    fn handle(&mut self, message: DownMsg) -> bool {
        match message {
            DownMsg::Wake => {}
            DownMsg::Chunk { epoch, chunk } => {
                if epoch >= self.shared.flush_epoch.load(Ordering::Acquire) {
                    self.pending.push_back(Queued {
                        item: self.current_item.clone(),
                        chunk,
                        offset: 0,
                    });
                }
            }
            DownMsg::BeginItem(item) => self.current_item = Some(item),
            DownMsg::ReplyAudio { epoch, gate, item } => {
                let flush_epoch = self.shared.flush_epoch.load(Ordering::Acquire);
                self.decoded_reply.tell(gate, item, epoch, flush_epoch);
            }
            DownMsg::Shutdown => return false,
        }
        true
    }

    /// A flush from the app: drop what is queued here too, and wait for the device to confirm
    /// before writing the next reply (written earlier, the device's flush would eat it).
    fn check_flush(&mut self) {
        let epoch = self.shared.flush_epoch.load(Ordering::Acquire);
        if epoch == self.seen_epoch {
            self.wrote_since_epoch_check = false;
            return;
        }
        self.seen_epoch = epoch;
        self.pending.clear();
        self.out.clear();
        self.out_pos = 0;
        self.jitter.flush();
        self.idle_arrival = None;
        self.pacer.stop();
        self.stop_pacing();
        if let Some((_, resampler)) = self.resampler.as_mut() {
            resampler.reset();
        }
        self.account(Instant::now());
        self.ledger.flush_requested();
        self.tell_ledger();
        if let Some(playback) = &self.playback {
            if self.wrote_since_epoch_check {
                // A write may have raced the app's flush into the ring: flush once more.
                playback.flush();
            }
            self.awaiting_flush = true;
        }
        self.wrote_since_epoch_check = false;
        match (&self.playback, self.reply.as_mut()) {
            (Some(_), Some(reply)) => reply.flushed = true,
            _ => self.reply = None,
        }
    }

    /// A decoded frame straight to the speaker, as the controller's [`ReplyAudio`] says: no
    /// hop through the app's task lies between the decoder and the device.
    fn play_decoded(&mut self, chunk: &AudioChunk) {
        if self.playback_rate_hz != CALL_RATE_HZ {
            // The player takes PCM at another rate, from the app (a WebSocket provider's).
            return;
        }
        let flush_epoch = self.shared.flush_epoch.load(Ordering::Acquire);
        if !self.decoded_reply.admit(chunk, flush_epoch) {
            return;
        }
        self.pending.push_back(Queued {
            item: self.decoded_reply.item().cloned(),
            chunk: chunk.clone(),
            offset: 0,
        });
    }

    /// Takes every frame that is due out of the jitter buffer: decoded, rebuilt from FEC or
    /// concealed, played ([`Self::play_decoded`]) and handed to the app for the transcript and
    /// the recording.
    fn decode_due(&mut self, now: Instant) {
        let now_us = self.micros(now);
        self.take_packets();
        loop {
            if !self.pacer.is_due(now_us) {
                return;
            }
            let decoded = match self.jitter.pop(now_us / 1_000) {
                Playout::Packet(packet) => Some(self.decoder.decode(packet, &mut self.decoded)),
                Playout::Recover(next) => Some(self.decoder.recover(next, &mut self.decoded)),
                Playout::Conceal => Some(self.decoder.conceal(&mut self.decoded)),
                Playout::Waiting => None,
            };
            if decoded.is_none() && self.pacer.found_none(now_us) {
                // A packet queued before this last look is taken now; one after it wakes us.
                self.stop_pacing();
                if self.take_packets() {
                    continue;
                }
            }
            let Some(decoded) = decoded else {
                return;
            };
            if self.pacer.took_frame(now_us) {
                self.talkspurt_arrival = self.idle_arrival.take();
            }
            self.shared.pacing.store(true, Ordering::Release);
            match decoded {
                Ok(samples) => {
                    let pcm: Vec<i16> = self.decoded[..samples.min(FRAME_SAMPLES)]
                        .iter()
                        .map(|&s| (s * 32_768.0).round().clamp(-32_768.0, 32_767.0) as i16)
                        .collect();
                    let chunk = AudioChunk::from_samples(pcm);
                    self.play_decoded(&chunk);
                    self.events.send(EngineEvent::AssistantAudio(chunk));
                }
                Err(error) => self
                    .decode_log
                    .warn(now, format_args!("dropped a received frame: {error}")),
            }
        }
    }

    /// Moves the received packets into the jitter buffer (those from before the last flush are
    /// dropped). Returns whether there were any.
    fn take_packets(&mut self) -> bool {
        let mut took = false;
        while let Ok(packet) = self.received.pop() {
            took = true;
            if packet.flush_epoch < self.seen_epoch {
                continue;
            }
            if !self.pacer.is_pacing() {
                self.idle_arrival.get_or_insert(packet.arrival);
            }
            let arrival_ms = self.micros(packet.arrival) / 1_000;
            let _outcome = self.jitter.push(
                packet.sequence_number,
                packet.rtp_timestamp,
                &packet.payload[..packet.len],
                arrival_ms,
            );
        }
        took
    }

    /// The talkspurt's pace stopped: the next packet wakes the downlink.
    fn stop_pacing(&self) {
        self.shared.pacing.store(false, Ordering::SeqCst);
        std::sync::atomic::fence(Ordering::SeqCst);
    }

    /// Publishes the jitter buffer's figures for [`Engine::stats`] (skipped while a reader
    /// holds them: the next pass does it).
    fn publish_jitter_report(&self) {
        if let Ok(mut report) = self.shared.jitter_report.try_lock() {
            *report = JitterReport {
                stats: self.jitter.stats(),
                depth_ms: self.jitter.depth_ms(),
                target_ms: self.jitter.target_ms(),
                jitter_ms: self.jitter.jitter_ms(),
            };
        }
    }

    /// Moves queued deltas into the device ring, as far as it has room.
    fn pump_playback(&mut self) {
        if self.awaiting_flush && !self.finish_flush() {
            return;
        }
        let Some(playback) = self.playback.as_mut() else {
            return;
        };
        let Some((_, resampler)) = self.resampler.as_mut() else {
            return;
        };
        loop {
            if self.out_pos < self.out.len() {
                let written = playback.write(&self.out[self.out_pos..]);
                if written > 0 {
                    let samples = &self.out[self.out_pos..self.out_pos + written];
                    if let Some((_, meter)) = self.meter.as_mut() {
                        let events = &self.events;
                        meter.feed(samples, |level| {
                            events.send(EngineEvent::Level {
                                direction: DeviceDirection::Output,
                                level,
                            });
                        });
                    }
                    self.out_pos += written;
                    self.ledger
                        .wrote_reply(self.out_item.as_ref(), written as u64);
                    if let Some(reply) = self.reply.as_mut() {
                        // Silence the device played since the last write was inside the
                        // reply: more of it has come since.
                        let silence_frames =
                            playback.counters().xrun_frames.load(Ordering::Relaxed);
                        reply.silence_inside_frames +=
                            silence_frames.saturating_sub(reply.silence_frames_seen);
                        reply.silence_frames_seen = silence_frames;
                    }
                    self.wrote_since_epoch_check = true;
                }
                if self.out_pos < self.out.len() {
                    break;
                }
            }
            self.out.clear();
            self.out_pos = 0;
            let Some(front) = self.pending.front_mut() else {
                break;
            };
            if front.offset == 0
                && !self.ledger.is_audible()
                && playback.played_frames() >= self.ledger.written_frames()
            {
                // A reply starts on an idle speaker: a cushion of silence ahead of it absorbs
                // the jitter of the downlink's pace. Only at the start: a cushion after every
                // late chunk would stretch the reply.
                let rate = playback.format().sample_rate_hz as usize;
                let cushion = (rate * self.cushion.ms() as usize / 1000).min(self.zeros.len());
                let written = playback.write(&self.zeros[..cushion]);
                self.ledger.wrote_silence(written as u64);
                let start_frame = self.ledger.written_frames();
                self.shared
                    .talkspurt_start_frame
                    .store(start_frame, Ordering::Relaxed);
                self.reply = Some(ReplyWatch {
                    start_frame,
                    arrival: self.talkspurt_arrival.take(),
                    at_device: None,
                    silence_frames_seen: playback.counters().xrun_frames.load(Ordering::Relaxed),
                    silence_inside_frames: 0,
                    cushion_ms: self.cushion.ms(),
                    server_underflows_at_start: playback
                        .counters()
                        .server_underflows
                        .load(Ordering::Relaxed),
                    server_gap_frames_at_start: playback
                        .counters()
                        .server_gap_frames
                        .load(Ordering::Relaxed),
                    jitter_at_start: self.jitter.stats(),
                    flushed: false,
                });
            }
            let samples = front.chunk.samples();
            let take = (samples.len() - front.offset).min(PLAYER_PIECE_SAMPLES);
            self.piece.clear();
            self.piece.extend(
                samples[front.offset..front.offset + take]
                    .iter()
                    .map(|&s| f32::from(s) / 32_768.0),
            );
            front.offset += take;
            self.out_item.clone_from(&front.item);
            if front.offset >= samples.len() {
                self.pending.pop_front();
            }
            resampler.process(&self.piece, &mut self.out);
        }
        self.shared
            .written_frames
            .store(self.ledger.written_frames(), Ordering::Relaxed);
    }

    /// Once the device has carried out a flush: counts what played until it took effect (that
    /// was heard), and starts the next reply from an empty ring. `false` while still waiting.
    fn finish_flush(&mut self) -> bool {
        let Some(playback) = self.playback.as_ref() else {
            return false;
        };
        if !playback.flush_done() {
            return false;
        }
        let honoured_at = playback.last_flush().honoured_at_frames;
        let rate_hz = f64::from(playback.format().sample_rate_hz);
        let played = playback.played_frames();
        self.awaiting_flush = false;
        self.report_reply(honoured_at.min(self.ledger.written_frames()), rate_hz);
        self.ledger.flush_honoured(honoured_at, played);
        self.tell_ledger();
        self.shared.written_frames.store(played, Ordering::Relaxed);
        true
    }

    /// Counts what the device took, per item, and notices when it ran dry.
    fn account(&mut self, now: Instant) {
        let Some(playback) = self.playback.as_ref() else {
            return;
        };
        if self.awaiting_flush {
            return;
        }
        let played = playback.played_frames();
        let rate_hz = f64::from(playback.format().sample_rate_hz);
        if let Some(reply) = self.reply.as_mut()
            && reply.at_device.is_none()
            && played > reply.start_frame
        {
            let at_device = sample_handed_at(playback.clock(), reply.start_frame, rate_hz);
            reply.at_device = Some(at_device);
            self.events.send(EngineEvent::ReplyHeard {
                first_packet_at: reply.arrival,
                at_device,
            });
        }
        let nothing_queued = self.pending.is_empty() && self.out_pos >= self.out.len();
        let now_us = self.micros(now);
        self.ledger.played(played, nothing_queued, now_us);
        self.tell_ledger();
    }

    /// Passes on what the ledger says: an item's progress, or the reply over.
    fn tell_ledger(&mut self) {
        while let Some(output) = self.ledger.poll_output() {
            match output {
                LedgerOutput::Progress { item, played_ms } => {
                    self.events.send(EngineEvent::PlaybackProgress {
                        item_id: item,
                        played_ms,
                    });
                }
                LedgerOutput::Drained { end_frame } => {
                    let rate_hz = self.playback.as_ref().map_or(f64::from(CALL_RATE_HZ), |p| {
                        f64::from(p.format().sample_rate_hz)
                    });
                    self.report_reply(end_frame, rate_hz);
                    self.events.send(EngineEvent::PlaybackDrained);
                }
            }
        }
    }

    /// `at` on the pacer's and the ledger's clock.
    fn micros(&self, at: Instant) -> u64 {
        micros_since(self.clock_epoch, at)
    }

    /// Says how the watched reply went, now that it ended at stream position `end_frame`.
    fn report_reply(&mut self, end_frame: u64, rate_hz: f64) {
        let Some(reply) = self.reply.take() else {
            return;
        };
        let jitter = self.jitter.stats();
        let (server_underflows, server_gap_frames) =
            self.playback.as_ref().map_or((0, 0), |playback| {
                let counters = playback.counters();
                (
                    counters
                        .server_underflows
                        .load(Ordering::Relaxed)
                        .saturating_sub(reply.server_underflows_at_start),
                    counters
                        .server_gap_frames
                        .load(Ordering::Relaxed)
                        .saturating_sub(reply.server_gap_frames_at_start),
                )
            });
        let frames_ms = |frames: u64| frames as f64 * 1000.0 / rate_hz;
        self.cushion
            .reply_played(frames_ms(reply.silence_inside_frames));
        self.events.send(EngineEvent::ReplyPlayed(PlayoutReport {
            played_ms: frames_ms(end_frame.saturating_sub(reply.start_frame)),
            arrival_to_device_ms: reply
                .arrival
                .zip(reply.at_device)
                .map(|(arrival, at_device)| {
                    at_device.saturating_duration_since(arrival).as_secs_f64() * 1000.0
                }),
            silence_inside_ms: frames_ms(reply.silence_inside_frames),
            server_underflows,
            server_gap_ms: frames_ms(server_gap_frames),
            concealed_frames: jitter
                .concealed
                .saturating_sub(reply.jitter_at_start.concealed),
            late_packets: jitter.late.saturating_sub(reply.jitter_at_start.late),
            recovered_frames: jitter
                .recovered
                .saturating_sub(reply.jitter_at_start.recovered),
            lost_packets: lost_packets(&jitter)
                .saturating_sub(lost_packets(&reply.jitter_at_start)),
            flushed: reply.flushed,
            cushion_ms: reply.cushion_ms,
        }));
    }

    fn open_device(&mut self) {
        self.account(Instant::now());
        let previous = self.playback.take();
        let previous_id = previous.as_ref().map(|p| p.device_id().to_owned());
        *self.shared.flusher() = None;
        close_in_background(previous);
        let tap_reference = self.tap_reference;
        let playback = self.slot.open(
            previous_id.as_deref(),
            |id| Playback::open_with_reference(id, PLAYBACK_RING_MS, tap_reference),
            &self.events,
        );
        let Some(mut playback) = playback else {
            return;
        };
        if let Some(reference) = playback.take_reference() {
            *self.shared.reference() = Some(reference);
        }
        let rate = playback.format().sample_rate_hz;
        if self.resampler.as_ref().is_none_or(|(to, _)| *to != rate) {
            match StreamResampler::new(self.playback_rate_hz, rate) {
                Ok(resampler) => {
                    let out_capacity = resampler.max_output_for(PLAYER_PIECE_SAMPLES);
                    self.out = Vec::with_capacity(out_capacity);
                    self.out_pos = 0;
                    self.resampler = Some((rate, resampler));
                }
                Err(error) => {
                    log::error!("cannot convert playback to the speaker's rate: {error}");
                    return;
                }
            }
        }
        if self.meter.as_ref().is_none_or(|(at, _)| *at != rate) {
            self.meter = Some((rate, LevelMeter::new(rate, self.meter_readings_per_second)));
        }
        if self.zeros.len() < rate as usize * self.cushion.max_ms() as usize / 1000 {
            self.zeros = vec![0.0; rate as usize * self.cushion.max_ms() as usize / 1000];
        }
        self.shared
            .output_rate_hz
            .store(u64::from(rate), Ordering::Relaxed);
        self.ledger.stream_opened(rate);
        self.awaiting_flush = false;
        // Positions on the old stream mean nothing on this one.
        self.reply = None;
        *self.shared.flusher() = Some(playback.flusher());
        self.playback = Some(playback);
    }

    fn look_after_device(&mut self, now: Instant) {
        match &self.playback {
            Some(playback) => {
                if let Some(why) = self.slot.needs_reopen(playback, now) {
                    log::info!("reopening the speaker: {}", why.reason());
                    self.shared.stream_reopens.fetch_add(1, Ordering::Relaxed);
                    self.open_device();
                }
            }
            None if now >= self.slot.retry_at => self.open_device(),
            None => {}
        }
    }
}

/// Closes a device stream on a thread of its own: closing a PulseAudio stream can block for
/// a second (cpal joins its helper threads), and a worker must not stall that long.
fn close_in_background<T: Send + 'static>(stream: Option<T>) {
    if let Some(stream) = stream {
        let closing = std::thread::Builder::new()
            .name("walkie-audio-close".to_owned())
            .spawn(move || drop(stream));
        if let Err(error) = closing {
            log::warn!("closing a stream in place, no thread for it: {error}");
        }
    }
}
