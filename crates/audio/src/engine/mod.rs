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
//! - **Events** queue up in a channel and a worker wakes the app at the end of a pass of its
//!   loop ([`EventWaker`]), not once per event, and for the audio it records and the playback's
//!   progress only every 100 ms: a pass (20 ms) has a decoded frame, a progress report and a
//!   level reading, and every wakeup costs the app a context switch.

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
pub use crate::reply_report::PlayoutReport;
use crate::reply_report::{PlaybackCounts, ReplyWatch};
use crate::resample::{ResampleSetupError, StreamResampler};
use crate::{CALL_RATE_HZ, FRAME_MS, FRAME_SAMPLES};

mod devices;
mod downlink;
mod uplink;

use devices::DeviceSlot;
use downlink::Downlink;
use uplink::Uplink;

/// The warm mic's default memory, as the turn controller asks for it.
pub const DEFAULT_PRE_ROLL_MS: u32 = 300;
/// Silence put ahead of a reply when the speaker was idle: room for the 20 ms decode pace to
/// wobble without the device running dry (with the sound server's three periods behind it).
/// Where the downlink turns out slower, replies that ran dry raise it
/// ([`crate::playout::PlayoutCushion`]), up to [`MAX_PLAYOUT_CUSHION_MS`].
pub const DEFAULT_PLAYOUT_CUSHION_MS: u32 = 10;
/// The most silence put ahead of a reply, however late the downlink has been.
pub const MAX_PLAYOUT_CUSHION_MS: u32 = 40;
/// Level readings per second for the UI: a meter's pace. Each reading is a message to the
/// window and may repaint part of it, so no more than the eye follows.
pub const DEFAULT_METER_READINGS_PER_SECOND: u32 = 10;

/// How long a worker sleeps at most between looks at its rings: one Opus frame. Messages wake
/// a worker at once (a press, a delta to play, a packet that starts a talkspurt), so the tick
/// only paces the steady work, which comes in 20 ms frames anyway; every wakeup costs CPU.
const WORKER_TICK: Duration = Duration::from_millis(20);
/// The longest a worker keeps the reports the app takes in bulk (the audio for the recording
/// and the transcript, the playback's progress) before it wakes the app for them: each wake is
/// the conversation task's and the recording's. Every other report wakes it at the end of the
/// pass, with the bulk queued before it; and the app takes whatever is queued before any other
/// news (a barge-in truncates at the progress the engine last reported).
const BULK_REPORTS_EVERY: Duration = Duration::from_millis(100);
/// How long a worker sleeps at most while its side rests: the uplink between presses in
/// push-to-talk, the downlink with no reply to play. Messages and a talkspurt's first packet
/// wake a worker at once, so this tick only looks after the device (its health is judged every
/// 100 ms) and moves a warm microphone's audio into the pre-roll (its ring holds 500 ms).
const RESTING_TICK: Duration = Duration::from_millis(100);
/// How often the downlink looks for a late packet while the frame that was due waits for it:
/// the jitter buffer counts in milliseconds, and a late packet found up to this much later
/// takes at most this much more of the speaker's headroom (its cushion and two periods).
const DRY_LOOK_EVERY: Duration = Duration::from_millis(2);
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

/// Told at the end of a worker's pass in which it queued an event the app acts on, and at
/// most every [`BULK_REPORTS_EVERY`] for those it takes in bulk ([`EngineEvent::can_wait`]):
/// the app then drains the event [`Receiver`] with `try_recv`. Called on the worker thread; it
/// must not block (a `tokio::sync::Notify::notify_one` is the app's). A test that blocks on
/// the receiver instead passes `|| {}`.
pub trait EventWaker: Send + Sync + 'static {
    fn wake(&self);
}

impl<F: Fn() + Send + Sync + 'static> EventWaker for F {
    fn wake(&self) {
        self()
    }
}

/// A worker's end of the event channel: events go out as they happen; the waker at the end
/// of a pass that queued one the app acts on, or bulk that has waited long enough.
#[derive(Clone)]
struct Events {
    tx: Sender<EngineEvent>,
    waker: Arc<dyn EventWaker>,
    /// Events queued since the app was last woken, and whether one of them cannot wait.
    queued: std::cell::Cell<bool>,
    urgent: std::cell::Cell<bool>,
    /// When this worker last woke the app.
    woke_at: std::cell::Cell<Option<Instant>>,
}

impl Events {
    fn new(tx: Sender<EngineEvent>, waker: Arc<dyn EventWaker>) -> Self {
        Self {
            tx,
            waker,
            queued: std::cell::Cell::new(false),
            urgent: std::cell::Cell::new(false),
            woke_at: std::cell::Cell::new(None),
        }
    }

    fn send(&self, event: EngineEvent) {
        let urgent = !event.can_wait();
        if self.tx.send(event).is_ok() {
            self.queued.set(true);
            if urgent {
                self.urgent.set(true);
            }
        }
    }

    /// The end of a pass at `now`: wakes the app for an event it acts on, or for bulk queued
    /// [`BULK_REPORTS_EVERY`] after the last wake.
    fn end_of_pass(&self, now: Instant) {
        if !self.queued.get() {
            return;
        }
        let bulk_due = self
            .woke_at
            .get()
            .is_none_or(|woke_at| now.saturating_duration_since(woke_at) >= BULK_REPORTS_EVERY);
        if self.urgent.get() || bulk_due {
            self.wake(now);
        }
    }

    /// What is queued wakes the app at the end of this pass, bulk or not.
    fn hurry(&self) {
        if self.queued.get() {
            self.urgent.set(true);
        }
    }

    /// The worker's last pass: whatever it queued is announced.
    fn end_of_work(&self) {
        if self.queued.get() {
            self.wake(Instant::now());
        }
    }

    fn wake(&self, now: Instant) {
        self.queued.set(false);
        self.urgent.set(false);
        self.woke_at.set(Some(now));
        self.waker.wake();
    }
}

/// What the engine tells the app.
#[derive(Clone, Debug, PartialEq)]
pub enum EngineEvent {
    /// 20 ms of decoded assistant audio (48 kHz mono), every frame in order, for the turn
    /// engine's `TurnInput::AssistantAudio` (the transcript's and the turn WAV's deltas). The
    /// downlink has played it already, or dropped it, as [`Engine::reply_audio`] last said.
    AssistantAudio(AudioChunk),
    /// The device has taken `played_ms` of the item's audio so far: for the turn engine's
    /// `TurnInput::PlaybackProgress`.
    PlaybackProgress { item_id: Arc<str>, played_ms: u64 },
    /// 20 ms of microphone audio (48 kHz mono) exactly as it was encoded and sent: what the
    /// saved user turn holds.
    SentAudio(AudioChunk),
    /// Everything queued was played and nothing more came: for the turn engine's
    /// `TurnInput::PlaybackDrained`.
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

impl EngineEvent {
    /// Whether the app takes this report in bulk (the audio it records and transcribes, the
    /// playback's progress): it may wait up to [`BULK_REPORTS_EVERY`] in the queue. The rest
    /// (a reply heard or drained, a meter's reading, a device's news…) wakes the app at once.
    pub fn can_wait(&self) -> bool {
        matches!(
            self,
            EngineEvent::AssistantAudio(_)
                | EngineEvent::SentAudio(_)
                | EngineEvent::PlaybackProgress { .. }
        )
    }
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
    /// Passes of each worker so far: how often it woke (a 20 ms pace is 50 a second).
    pub uplink_passes: u64,
    pub downlink_passes: u64,
    /// Reads of the device list, both directions (each costs the sound server a round trip).
    pub device_list_reads: u64,
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
    uplink_passes: AtomicU64,
    downlink_passes: AtomicU64,
    device_list_reads: AtomicU64,
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
        let events = Events::new(tx, Arc::new(waker));
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
            uplink_passes: shared.uplink_passes.load(Ordering::Relaxed),
            downlink_passes: shared.downlink_passes.load(Ordering::Relaxed),
            device_list_reads: shared.device_list_reads.load(Ordering::Relaxed),
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

/// `at` as microseconds since `epoch` (0 before it).
fn micros_since(epoch: Instant, at: Instant) -> u64 {
    u64::try_from(at.saturating_duration_since(epoch).as_micros()).unwrap_or(u64::MAX)
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU32;

    /// A worker's events, a waker that counts, and the channel's far end.
    fn events() -> (Events, Arc<AtomicU32>, Receiver<EngineEvent>) {
        let (tx, rx) = mpsc::channel();
        let wakes = Arc::new(AtomicU32::new(0));
        let counted = wakes.clone();
        let waker = move || {
            counted.fetch_add(1, Ordering::Relaxed);
        };
        (Events::new(tx, Arc::new(waker)), wakes, rx)
    }

    fn frame() -> EngineEvent {
        EngineEvent::SentAudio(AudioChunk::from_samples(vec![0i16; 960]))
    }

    fn woken(wakes: &AtomicU32) -> u32 {
        wakes.load(Ordering::Relaxed)
    }

    #[test]
    fn frames_wake_the_app_at_once_after_a_quiet_spell_then_once_every_100_ms() {
        let (events, wakes, rx) = events();
        let start = Instant::now();
        let mut woken_at_ms = Vec::new();
        for pass in 0..25u64 {
            events.send(frame());
            let before = woken(&wakes);
            events.end_of_pass(start + Duration::from_millis(20 * pass));
            if woken(&wakes) > before {
                woken_at_ms.push(20 * pass);
            }
        }
        assert_eq!(woken_at_ms, [0, 100, 200, 300, 400]);
        assert_eq!(rx.try_iter().count(), 25, "every frame was queued");
    }

    #[test]
    fn a_report_the_app_acts_on_wakes_it_at_the_end_of_its_pass_with_the_frames_before_it() {
        let (events, wakes, rx) = events();
        let start = Instant::now();
        events.send(frame());
        events.end_of_pass(start);
        rx.try_iter().for_each(drop);
        events.send(frame());
        events.end_of_pass(start + Duration::from_millis(20));
        assert_eq!(woken(&wakes), 1, "a frame 20 ms after a wake waits");
        events.send(EngineEvent::PlaybackDrained);
        events.end_of_pass(start + Duration::from_millis(40));
        assert_eq!(
            woken(&wakes),
            2,
            "the drained playback woke the app at once"
        );
        assert_eq!(
            rx.try_iter().collect::<Vec<_>>(),
            [frame(), EngineEvent::PlaybackDrained],
            "the frame that waited comes first"
        );
    }

    #[test]
    fn hurried_frames_wake_the_app_at_the_end_of_the_pass_and_the_last_pass_announces_the_rest() {
        let (events, wakes, rx) = events();
        let start = Instant::now();
        events.send(frame());
        events.end_of_pass(start);
        events.send(frame());
        events.hurry();
        events.end_of_pass(start + Duration::from_millis(20));
        assert_eq!(
            woken(&wakes),
            2,
            "the press's last frame woke the app with its release"
        );
        events.send(frame());
        events.end_of_pass(start + Duration::from_millis(40));
        assert_eq!(woken(&wakes), 2, "the next frame waits again");
        events.end_of_work();
        assert_eq!(woken(&wakes), 3, "the worker's end announced what waited");
        events.end_of_work();
        assert_eq!(woken(&wakes), 3, "and nothing more when nothing waits");
        assert_eq!(rx.try_iter().count(), 3);
    }

    #[test]
    fn only_audio_and_playback_progress_may_wait() {
        let level = EngineEvent::Level {
            direction: DeviceDirection::Input,
            level: Level {
                rms_dbfs: -30.0,
                peak_dbfs: -20.0,
            },
        };
        assert!(frame().can_wait());
        assert!(
            EngineEvent::PlaybackProgress {
                item_id: "item_1".into(),
                played_ms: 20,
            }
            .can_wait()
        );
        assert!(
            !level.can_wait(),
            "a meter's reading is shown as it is read"
        );
        assert!(!EngineEvent::PlaybackDrained.can_wait());
        assert!(!EngineEvent::NearSpeech.can_wait());
    }
}
