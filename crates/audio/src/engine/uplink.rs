//! The uplink worker: microphone → 48 kHz → echo canceller → pre-roll or 20 ms frames → Opus
//! → the [`FrameSink`].

use super::*;

impl Worker for Uplink {
    type Message = UpMsg;

    fn inbox(&self) -> &Receiver<UpMsg> {
        &self.rx
    }

    fn take(&mut self, message: UpMsg) -> bool {
        self.handle(message)
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

pub(super) struct Uplink {
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
    pub(super) fn new(
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

    pub(super) fn run(mut self) {
        self.run_passes();
        self.events.end_of_work();
    }

    /// Until told to stop; each pass ends by waking the app if it queued events that cannot
    /// wait (or bulk that has waited long enough).
    fn run_passes(&mut self) {
        loop {
            if !self.wait_and_take_messages(self.tick()) {
                return;
            }
            self.shared.uplink_passes.fetch_add(1, Ordering::Relaxed);
            self.pump();
            self.look_after_device();
            self.rest_capture();
            self.events.end_of_pass(Instant::now());
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

    /// Between presses in push-to-talk: nothing is sent and no echo canceller follows the
    /// microphone (there is none, or it is paused, as push-to-talk has it), so only the
    /// pre-roll and the meter take its audio, and a press wakes the worker at once.
    fn at_rest(&self) -> bool {
        !self.capturing && (self.echo.is_none() || self.echo_paused)
    }

    fn tick(&self) -> Duration {
        if self.at_rest() {
            RESTING_TICK
        } else {
            WORKER_TICK
        }
    }

    /// The microphone's stream reads at the uplink's pace: every period while frames are
    /// sent, ten times a second at rest.
    fn rest_capture(&self) {
        if let Some(capture) = self.capture.as_ref() {
            capture.rest(self.at_rest());
        }
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
        self.rest_capture();
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
        // The press's last audio goes to the app with the release, not a bulk wait later.
        self.events.hurry();
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
                if let Some(why) =
                    self.slot
                        .needs_reopen(capture, now, &self.shared.device_list_reads)
                {
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
