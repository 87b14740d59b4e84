//! The downlink worker: received RTP → jitter buffer → Opus decode (FEC, concealment) paced
//! at 20 ms → the speaker, as the turn controller's word says; what the device played, per
//! item and per reply.

use super::*;

impl Worker for Downlink {
    type Message = DownMsg;

    fn inbox(&self) -> &Receiver<DownMsg> {
        &self.rx
    }

    fn take(&mut self, message: DownMsg) -> bool {
        self.handle(message)
    }
}

/// A delta waiting for room in the device ring.
struct Queued {
    item: Option<Arc<str>>,
    chunk: AudioChunk,
    offset: usize,
}

pub(super) struct Downlink {
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
    /// The frame that was due found the jitter buffer dry (a late packet, or the talkspurt's
    /// end): until a packet comes or the pacer gives up, the downlink looks again every
    /// [`DRY_LOOK_EVERY`], not as fast as it can.
    dry: bool,
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

impl Downlink {
    pub(super) fn new(
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
            dry: false,
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

    pub(super) fn run(mut self) {
        self.run_passes();
        self.events.end_of_work();
    }

    /// Until told to stop; each pass ends by waking the app if it queued events that cannot
    /// wait (or bulk that has waited long enough).
    fn run_passes(&mut self) {
        self.open_device();
        loop {
            let now_us = self.micros(Instant::now());
            let wait = match self.pacer.next_due_us() {
                None if self.at_rest() => RESTING_TICK,
                None => WORKER_TICK,
                // Overdue: only a packet's arrival changes what the jitter buffer says, and
                // packets do not wake the downlink while it paces.
                Some(_) if self.dry => DRY_LOOK_EVERY,
                Some(due_us) => {
                    Duration::from_micros(due_us.saturating_sub(now_us)).min(WORKER_TICK)
                }
            };
            // Until the next frame is due, at most a tick.
            if !self.wait_and_take_messages(wait) {
                return;
            }
            self.shared.downlink_passes.fetch_add(1, Ordering::Relaxed);
            let now = Instant::now();
            self.check_flush();
            self.decode_due(now);
            self.pump_playback();
            self.account(now);
            self.look_after_device(now);
            self.publish_jitter_report();
            self.events.end_of_pass(now);
        }
    }

    /// Nothing to play and nothing playing: no talkspurt paced, nothing waiting to be written,
    /// no reply still draining from the speaker, no flush under way.
    fn at_rest(&self) -> bool {
        self.pending.is_empty()
            && self.out_pos >= self.out.len()
            && !self.ledger.is_audible()
            && self.reply.is_none()
            && !self.awaiting_flush
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
            (Some(_), Some(reply)) => reply.cut(),
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
        self.dry = false;
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
                self.dry = self.pacer.is_pacing();
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
                        reply.wrote(playback.counters().xrun_frames.load(Ordering::Relaxed));
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
                self.reply = Some(ReplyWatch::begin(
                    start_frame,
                    self.talkspurt_arrival
                        .take()
                        .map(|at| micros_since(self.clock_epoch, at)),
                    self.cushion.ms(),
                    playback_counts(playback),
                    self.jitter.stats(),
                ));
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
            && let Some(start_frame) = reply.first_sample_due(played)
        {
            let at_device = sample_handed_at(playback.clock(), start_frame, rate_hz);
            let arrival_us = reply.first_sample_at(micros_since(self.clock_epoch, at_device));
            self.events.send(EngineEvent::ReplyHeard {
                first_packet_at: arrival_us
                    .map(|arrival_us| self.clock_epoch + Duration::from_micros(arrival_us)),
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
        let counts = self
            .playback
            .as_ref()
            .map(playback_counts)
            .unwrap_or_default();
        let report = reply.finish(end_frame, rate_hz, counts, self.jitter.stats());
        self.cushion.reply_played(report.silence_inside_ms);
        self.events.send(EngineEvent::ReplyPlayed(report));
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
                if let Some(why) =
                    self.slot
                        .needs_reopen(playback, now, &self.shared.device_list_reads)
                {
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

/// The playback stream's running counts a reply is measured by.
fn playback_counts(playback: &Playback) -> PlaybackCounts {
    let counters = playback.counters();
    PlaybackCounts {
        silence_frames: counters.xrun_frames.load(Ordering::Relaxed),
        server_underflows: counters.server_underflows.load(Ordering::Relaxed),
        server_gap_frames: counters.server_gap_frames.load(Ordering::Relaxed),
    }
}
