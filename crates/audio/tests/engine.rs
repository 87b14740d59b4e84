//! The engine on real devices: the test PulseAudio server's null sinks ("mic" and "spk",
//! started by scripts/test.sh through scripts/pulse.sh), real Opus, real time. A reply received
//! as RTP must come out of the virtual speaker once, whole and in order; a barge-in must silence
//! it within one device period; a press must carry the audio from just before it; the gated mic
//! must send nothing it hears; a device that vanishes must not end the conversation.

mod common;

use std::sync::Mutex;
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

use common::{
    PulseClient, SpareSink, StalledServer, assert_heard_in_order, from_bytes, pattern,
    require_test_server, rms_dbfs, server_keeps_every_sample, tone, tone_level_dbfs, wait_until,
    wakeups_of,
};
use walkie_audio::FRAME_SAMPLES;
use walkie_audio::codec::{MAX_PACKET_BYTES, OpusDecoder, OpusEncoder};
use walkie_audio::device::{DeviceDirection, PERIOD_MS, list_devices};
use walkie_audio::engine::{
    DEFAULT_PLAYOUT_CUSHION_MS, Engine, EngineConfig, EngineEvent, PlayoutReport,
};
use walkie_session::AudioChunk;
use walkie_session::PlaybackSink;
use walkie_session::turn::{AudioCommand, ReplyAudio, ReplyGate};

/// What the turn controller tells the engine of the reply audio it decodes.
fn told(gate: ReplyGate, item_id: Option<&str>) -> ReplyAudio {
    ReplyAudio {
        gate,
        item_id: item_id.map(str::to_owned),
    }
}

/// The null sinks are shared by every test of this file: one test at a time.
static SINKS: Mutex<()> = Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    require_test_server();
    SINKS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

struct Running {
    engine: Engine,
    events: Receiver<EngineEvent>,
    frames: Receiver<Vec<u8>>,
}

fn start(config: EngineConfig) -> Running {
    let (frame_tx, frames) = mpsc::channel();
    let (engine, events) = Engine::start(
        config,
        move |opus: &[u8], samples: u32| {
            assert_eq!(samples as usize, FRAME_SAMPLES, "every frame is 20 ms");
            let _ = frame_tx.send(opus.to_vec());
        },
        || {},
    )
    .expect("the engine starts");
    Running {
        engine,
        events,
        frames,
    }
}

impl Running {
    fn wait_for_devices(&self, mic: bool) {
        wait_until("the speaker to open", Duration::from_secs(5), || {
            self.engine.stats().output_rate_hz == 48_000
        });
        if mic {
            wait_until("the microphone to open", Duration::from_secs(5), || {
                self.engine.stats().mic_open
            });
        }
    }

    /// Takes events until `stop` says so; returns them all.
    fn events_until(
        &self,
        what: &str,
        limit: Duration,
        stop: impl FnMut(&EngineEvent) -> bool,
    ) -> Vec<EngineEvent> {
        common::events_until(&self.events, what, limit, stop)
    }

    fn frames_so_far(&self) -> Vec<Vec<u8>> {
        self.frames.try_iter().collect()
    }
}

fn decode_all(frames: &[Vec<u8>]) -> Vec<Vec<f32>> {
    let mut decoder = OpusDecoder::new().expect("libopus decoder");
    frames
        .iter()
        .map(|packet| {
            let mut frame = [0.0; FRAME_SAMPLES];
            let n = decoder
                .decode(packet, &mut frame)
                .expect("our own frames decode");
            frame[..n].to_vec()
        })
        .collect()
}

fn nonzero(samples: &[i16]) -> Vec<i16> {
    samples.iter().copied().filter(|&s| s != 0).collect()
}

/// The frequencies of the test reply's 200 ms segments, in order.
const SEGMENT_HZ: [f32; 6] = [300.0, 500.0, 700.0, 900.0, 1_100.0, 1_300.0];
const SEGMENT_SAMPLES: usize = 9_600;

#[test]
fn a_reply_received_as_rtp_comes_out_of_the_speaker_once_whole_and_in_order() {
    let _sinks = one_at_a_time();
    let recorder = PulseClient::spawn("parec", "spk.monitor");
    let running = start(EngineConfig::default());
    running.wait_for_devices(false);
    running
        .engine
        .reply_audio(&told(ReplyGate::Play, Some("item_reply")));

    // 1.2 s of speech-like tones, 20 ms Opus packets as the server would send them.
    let reply: Vec<f32> = SEGMENT_HZ
        .iter()
        .flat_map(|&hz| tone(hz, 0.3, SEGMENT_SAMPLES))
        .map(|s| f32::from(s) / 32_768.0)
        .collect();
    let mut encoder = OpusEncoder::new(32_000).expect("libopus encoder");
    let packets: Vec<Vec<u8>> = reply
        .chunks_exact(FRAME_SAMPLES)
        .map(|frame| {
            let mut packet = [0u8; MAX_PACKET_BYTES];
            let len = encoder.encode(frame, &mut packet).expect("encodes");
            packet[..len].to_vec()
        })
        .collect();
    // The network: packet 17 is lost, 30 and 31 arrive swapped, 40 arrives twice.
    let mut arrivals: Vec<usize> = (0..packets.len()).filter(|&i| i != 17).collect();
    let swap_at = arrivals
        .iter()
        .position(|&i| i == 30)
        .expect("packet 30 is sent");
    arrivals.swap(swap_at, swap_at + 1);
    let duplicate_at = arrivals
        .iter()
        .position(|&i| i == 40)
        .expect("packet 40 is sent");
    arrivals.insert(duplicate_at + 1, 40);

    let mut decoded: Vec<AudioChunk> = Vec::new();
    let mut last_progress_ms = 0;
    let mut reports = Vec::new();
    let mut handle = |event: EngineEvent| match event {
        EngineEvent::AssistantAudio(chunk) => {
            // The app's part: the chunk becomes a session delta (recorded, not played: the
            // engine has played it already).
            decoded.push(chunk);
            false
        }
        EngineEvent::PlaybackProgress { item_id, played_ms } => {
            assert_eq!(&*item_id, "item_reply");
            last_progress_ms = played_ms;
            false
        }
        EngineEvent::PlaybackDrained => true,
        EngineEvent::ReplyPlayed(report) => {
            reports.push(report);
            false
        }
        _ => false,
    };
    let started = Instant::now();
    for (n, &index) in arrivals.iter().enumerate() {
        let due = started + Duration::from_millis(20 * n as u64);
        while Instant::now() < due {
            if let Ok(event) = running.events.recv_timeout(Duration::from_millis(1)) {
                handle(event);
            }
        }
        running.engine.receive_rtp(
            1_000u16.wrapping_add(index as u16),
            960 * index as u32,
            &packets[index],
            Instant::now(),
        );
    }
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let event = running
            .events
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            .expect("the reply drains from the speaker");
        if handle(event) {
            break;
        }
    }
    std::thread::sleep(Duration::from_millis(300));
    let recorded = from_bytes(&recorder.end());

    let decoded_samples: Vec<i16> = decoded.iter().flat_map(|c| c.samples().to_vec()).collect();
    assert_eq!(
        decoded_samples.len(),
        packets.len() * FRAME_SAMPLES,
        "one 20 ms frame per packet sent: the lost one concealed or rebuilt, the duplicate dropped"
    );
    let jitter = running.engine.stats().jitter;
    assert!(
        jitter.recovered + jitter.concealed <= 2,
        "only the lost and the swapped packet needed repair: {jitter:?}"
    );
    assert_heard_in_order(
        &nonzero(&recorded),
        &nonzero(&decoded_samples),
        reports.iter().map(|report| report.server_underflows).sum(),
        "the speaker played the decoded samples",
    );
    let decoded_f32: Vec<f32> = decoded_samples
        .iter()
        .map(|&s| f32::from(s) / 32_768.0)
        .collect();
    for (segment, &hz) in SEGMENT_HZ.iter().enumerate() {
        let middle =
            &decoded_f32[segment * SEGMENT_SAMPLES + 2_400..segment * SEGMENT_SAMPLES + 7_200];
        let loudest = SEGMENT_HZ
            .iter()
            .copied()
            .max_by(|a, b| {
                tone_level_dbfs(middle, f64::from(*a))
                    .total_cmp(&tone_level_dbfs(middle, f64::from(*b)))
            })
            .expect("six candidates");
        assert_eq!(loudest, hz, "segment {segment} is in its place");
    }
    assert!(
        (1_199..=1_200).contains(&last_progress_ms),
        "the item's played time counts the whole reply and no cushion: {last_progress_ms} ms"
    );
    let [report] = reports[..] else {
        panic!("one report for the one reply: {reports:?}");
    };
    assert!(!report.flushed);
    assert!((report.played_ms - 1_200.0).abs() < 1.0, "{report:?}");
    let arrival_to_device_ms = report
        .arrival_to_device_ms
        .expect("a reply that came as RTP is timed from its first packet");
    let cushion_ms = f64::from(DEFAULT_PLAYOUT_CUSHION_MS);
    assert!(
        (cushion_ms..cushion_ms + 150.0).contains(&arrival_to_device_ms),
        "from the first packet to the device: the cushion and a little more ({report:?})"
    );
    assert!(
        report.concealed_frames <= 2,
        "the lost packet was concealed or rebuilt: {report:?}"
    );
}

/// Sends `frames` 20 ms Opus packets of a `hz` tone at the network's pace, sequence numbers and
/// timestamps going on from `next`.
fn send_tone(engine: &Engine, encoder: &mut OpusEncoder, next: &mut u16, hz: f32, frames: usize) {
    let tone: Vec<f32> = tone(hz, 0.3, frames * FRAME_SAMPLES)
        .iter()
        .map(|&s| f32::from(s) / 32_768.0)
        .collect();
    let started = Instant::now();
    for (n, frame) in tone.chunks_exact(FRAME_SAMPLES).enumerate() {
        let due = started + Duration::from_millis(20 * n as u64);
        std::thread::sleep(due.saturating_duration_since(Instant::now()));
        let mut packet = [0u8; MAX_PACKET_BYTES];
        let len = encoder.encode(frame, &mut packet).expect("encodes");
        engine.receive_rtp(
            *next,
            960 * u32::from(*next),
            &packet[..len],
            Instant::now(),
        );
        *next = next.wrapping_add(1);
    }
}

/// How many 20 ms windows of `heard` have `hz` as the loudest of `candidates`, for a third of
/// the window or more (a whole window of the tones is about -13.5 dBFS): the codec's overlap
/// carries a few milliseconds of one frame's tone into the next, which is not a frame played.
fn windows_of(heard: &[i16], hz: f32, candidates: &[f32]) -> usize {
    heard
        .chunks_exact(FRAME_SAMPLES)
        .map(|window| {
            window
                .iter()
                .map(|&s| f32::from(s) / 32_768.0)
                .collect::<Vec<f32>>()
        })
        .filter(|window| {
            let level = |hz: f32| tone_level_dbfs(window, f64::from(hz));
            level(hz) > -18.0
                && candidates
                    .iter()
                    .all(|&other| other == hz || level(other) < level(hz))
        })
        .count()
}

#[test]
fn after_a_flush_the_cut_replys_late_packets_are_not_played_and_the_next_reply_is_from_its_start() {
    let _sinks = one_at_a_time();
    let recorder = PulseClient::spawn("parec", "spk.monitor");
    let running = start(EngineConfig::default());
    running.wait_for_devices(false);
    let engine = &running.engine;
    let mut encoder = OpusEncoder::new(32_000).expect("libopus encoder");
    let mut next = 0u16;
    let tones = [440.0, 1_320.0, 880.0];

    engine.reply_audio(&told(ReplyGate::Play, Some("item_cut")));
    send_tone(engine, &mut encoder, &mut next, 440.0, 25);
    // The barge-in: the server goes on sending the cut reply for a while.
    engine.apply(AudioCommand::FlushPlayback);
    running.events.try_iter().for_each(drop);
    send_tone(engine, &mut encoder, &mut next, 1_320.0, 15);
    // The user's turn: the cut reply's last packets leave the jitter buffer (dropped). Then the
    // next reply's audio part names its item, and its packets follow.
    // (Waited for as each of the 15 late packets decoded, then no frame for 100 ms with the
    // jitter buffer empty: a frame the flush overtook may count among the 15.)
    let mut decoded_after_flush = 0;
    let mut last_decoded = Instant::now();
    let give_up = Instant::now() + Duration::from_secs(5);
    while decoded_after_flush < 15
        || last_decoded.elapsed() < Duration::from_millis(100)
        || engine.stats().jitter_depth_ms > 0
    {
        assert!(
            Instant::now() < give_up,
            "the cut reply's late packets are decoded: {decoded_after_flush} so far"
        );
        if let Ok(EngineEvent::AssistantAudio(_)) =
            running.events.recv_timeout(Duration::from_millis(10))
        {
            decoded_after_flush += 1;
            last_decoded = Instant::now();
        }
    }
    engine.reply_audio(&told(ReplyGate::FromSound, Some("item_next")));
    send_tone(engine, &mut encoder, &mut next, 880.0, 25);
    let events = running.events_until("the next reply to drain", Duration::from_secs(5), |event| {
        matches!(event, EngineEvent::PlaybackDrained)
    });
    std::thread::sleep(Duration::from_millis(300));
    let heard = from_bytes(&recorder.end());

    assert!(
        windows_of(&heard, 440.0, &tones) >= 5,
        "the cut reply played until the flush"
    );
    assert_eq!(
        windows_of(&heard, 1_320.0, &tones),
        0,
        "nothing of what came after the flush for the cut reply"
    );
    let next_reply = windows_of(&heard, 880.0, &tones);
    assert!(
        next_reply >= 22,
        "the next reply played whole: {next_reply} of 25 windows"
    );
    let played_next = events.iter().filter_map(|event| match event {
        EngineEvent::PlaybackProgress { item_id, played_ms } if &**item_id == "item_next" => {
            Some(*played_ms)
        }
        _ => None,
    });
    assert!(
        played_next.max().is_some_and(|played_ms| played_ms >= 480),
        "what played of the next reply is counted against its item: {events:?}"
    );
}

#[test]
fn a_barge_in_flush_silences_the_speaker_within_one_device_period_and_the_next_reply_plays() {
    let _sinks = one_at_a_time();
    let recorder = PulseClient::spawn("parec", "spk.monitor");
    let running = start(EngineConfig::default());
    running.wait_for_devices(false);
    let mut player = running.engine.player();
    player.begin_item("item_cut");
    let long_reply = pattern(3 * 48_000);
    for delta in long_reply.chunks(960) {
        player.play(&AudioChunk::from_samples(delta.to_vec()));
    }
    let before = running.events_until("half a second of the reply", Duration::from_secs(10), |event| {
        matches!(event, EngineEvent::PlaybackProgress { played_ms, .. } if *played_ms >= 500)
    });

    running.engine.apply(AudioCommand::FlushPlayback);
    wait_until(
        "the device to carry out the flush",
        Duration::from_secs(2),
        || running.engine.last_flush().is_some(),
    );
    let flush = running
        .engine
        .last_flush()
        .expect("the flush was carried out");
    let stats = running.engine.stats();
    let reply_start = stats.talkspurt_start_frame;

    player.begin_item("item_next");
    let next_reply: Vec<i16> = pattern(9_600).iter().map(|&s| -s).collect();
    player.play(&AudioChunk::from_samples(next_reply.clone()));
    let after = running.events_until("the next reply to drain", Duration::from_secs(5), |event| {
        matches!(event, EngineEvent::PlaybackDrained)
    });
    std::thread::sleep(Duration::from_millis(300));
    let heard = nonzero(&from_bytes(&recorder.end()));

    let period_frames = u64::from(48 * PERIOD_MS);
    assert!(
        flush.frames_after_request() <= period_frames,
        "at most the {PERIOD_MS} ms period in progress plays after the flush: {flush:?}"
    );
    let heard_of_cut = (flush.honoured_at_frames - reply_start) as usize;
    assert!(
        heard_of_cut < long_reply.len() / 2,
        "the flush came early in the reply"
    );
    let reports = playout_reports(before.iter().chain(&after));
    let server_dropped = reports.iter().any(|report| report.server_underflows > 0);
    if server_dropped || !server_keeps_every_sample() {
        // On a loaded machine the sound server may run dry, and it drops what the stream
        // wrote before the stream could tell (a few periods); PipeWire may drop a quantum
        // without a word: what is heard is then compared by length, within 50 ms.
        println!("compared by length (the server ran dry: {server_dropped}): {reports:?}");
        assert!(
            heard.len() <= heard_of_cut + next_reply.len()
                && heard.len() + 48 * 50 >= heard_of_cut + next_reply.len(),
            "the cut reply up to the flush, then the next reply, less what the server dropped: \
             {} samples heard of {}",
            heard.len(),
            heard_of_cut + next_reply.len()
        );
    } else {
        assert_eq!(
            heard.len(),
            heard_of_cut + next_reply.len(),
            "the cut reply up to the flush, then the whole next reply"
        );
        assert_eq!(
            heard[..heard_of_cut],
            long_reply[..heard_of_cut],
            "a prefix, in order"
        );
        assert_eq!(
            heard[heard_of_cut..],
            next_reply[..],
            "the next reply, whole"
        );
    }
    let progress_of = |item: &str| {
        before
            .iter()
            .chain(&after)
            .filter_map(|event| match event {
                EngineEvent::PlaybackProgress { item_id, played_ms } if &**item_id == item => {
                    Some(*played_ms)
                }
                _ => None,
            })
            .max()
    };
    let told_ms = progress_of("item_cut").expect("the cut reply's progress was reported");
    assert!(
        told_ms.abs_diff(heard_of_cut as u64 / 48) <= 1,
        "what was heard of the cut reply ({} ms) is what the controller is told ({told_ms} ms)",
        heard_of_cut / 48
    );
    assert_eq!(progress_of("item_next"), Some(200));
    let [cut, next] = reports[..] else {
        panic!("a report for the cut reply and one for the next: {reports:?}");
    };
    assert!(cut.flushed && !next.flushed, "{reports:?}");
    assert!(
        (cut.played_ms - heard_of_cut as f64 / 48.0).abs() < 1.0,
        "the cut reply played what was heard of it: {cut:?}"
    );
    assert!((next.played_ms - 200.0).abs() < 1.0, "{next:?}");
    assert_eq!(
        (cut.arrival_to_device_ms, next.arrival_to_device_ms),
        (None, None),
        "deltas played without RTP have no packet to be timed from"
    );
}

#[test]
fn a_reply_that_ran_dry_in_the_middle_reports_the_silence_the_speaker_played_inside_it_and_the_next_gets_that_much_more_cushion()
 {
    let _sinks = one_at_a_time();
    let recorder = PulseClient::spawn("parec", "spk.monitor");
    let running = start(EngineConfig::default());
    running.wait_for_devices(false);
    let mut player = running.engine.player();
    player.begin_item("item_stalled");
    let first_half = pattern(4_800);
    player.play(&AudioChunk::from_samples(first_half.clone()));
    let mut events = running.events_until("the first half to play", Duration::from_secs(5), |event| {
        matches!(event, EngineEvent::PlaybackProgress { played_ms, .. } if *played_ms >= 100)
    });
    // The rest comes late, as after a stall on the network: the speaker runs dry meanwhile.
    std::thread::sleep(Duration::from_millis(10));
    let second_half: Vec<i16> = pattern(4_800).iter().map(|&s| -s).collect();
    player.play(&AudioChunk::from_samples(second_half.clone()));
    events.extend(
        running.events_until("the reply to drain", Duration::from_secs(5), |event| {
            matches!(event, EngineEvent::PlaybackDrained)
        }),
    );
    std::thread::sleep(Duration::from_millis(300));
    let heard = from_bytes(&recorder.end());
    // The next reply, on the idle speaker.
    player.begin_item("item_after");
    player.play(&AudioChunk::from_samples(pattern(4_800)));
    let after = running.events_until("the next reply to drain", Duration::from_secs(5), |event| {
        matches!(event, EngineEvent::PlaybackDrained)
    });

    let reports = playout_reports(&events);
    let [report] = reports[..] else {
        panic!("the stall did not end the reply: one report for it: {reports:?}");
    };
    let [next] = playout_reports(&after)[..] else {
        panic!("one report for the next reply: {after:?}");
    };
    assert_eq!(report.cushion_ms, DEFAULT_PLAYOUT_CUSHION_MS, "{report:?}");
    assert_eq!(
        next.cushion_ms,
        DEFAULT_PLAYOUT_CUSHION_MS + report.silence_inside_ms.ceil() as u32,
        "the gap the last reply had is put ahead of the next: {next:?}"
    );
    let silence_heard_ms = (sounding(&heard).len() - 9_600) as f64 / 48.0;
    assert!(
        report.silence_inside_ms >= 5.0,
        "the ring ran dry between the halves: {report:?}"
    );
    // On a loaded machine the sound server may run dry too; its gaps add to the ring's.
    assert!(
        (report.silence_inside_ms + report.server_gap_ms - silence_heard_ms).abs() <= 1.0,
        "the report says the silence the sink heard inside the reply: {silence_heard_ms} ms \
         heard, {report:?}"
    );
    assert!((report.played_ms - 200.0).abs() < 1.0, "{report:?}");
}

#[test]
fn a_reply_through_a_stalled_sound_server_keeps_its_timeline_and_the_speaker_counts_the_gap_it_played()
 {
    // The echo canceller's reference is what the speaker stream wrote, in order, silence
    // included: if the sink played a gap that the stream did not count, the echo would come
    // later than the reference says for the rest of the call, and the canceller would have to
    // learn the path again, letting the echo through meanwhile.
    let _sinks = one_at_a_time();
    let (recorder, running, reply, mut events) =
        a_second_of_reply_a_third_played("item_through_a_stall");
    {
        let _stalled = StalledServer::stop();
        // The stall itself: the stimulus, not a wait for something to happen.
        std::thread::sleep(Duration::from_millis(100));
    }
    events.extend(
        running.events_until("the reply to drain", Duration::from_secs(5), |event| {
            matches!(event, EngineEvent::PlaybackDrained)
        }),
    );
    std::thread::sleep(Duration::from_millis(300));
    let heard = from_bytes(&recorder.end());

    let reports = playout_reports(&events);
    let [report] = reports[..] else {
        panic!("one report for the reply: {reports:?}");
    };
    let span_ms = sounding(&heard).len() as f64 / 48.0;
    let heard = nonzero(&heard);
    println!(
        "{report:?}; spanned {span_ms} ms; {} samples heard",
        heard.len()
    );
    assert!(
        report.server_underflows >= 1 && report.server_gap_ms >= 20.0,
        "the stalled server ran dry inside the reply: {report:?}"
    );
    // Each underflow is counted as what the server was behind plus one period of zeros, measured
    // at the stream's next wake-up, so the sink may show up to a period less of each; and one
    // period owed may be written just before the reply's first sample or after its last. The
    // span may fall short of the count by that much, and never exceed it.
    let counted_ms = report.played_ms + report.silence_inside_ms + report.server_gap_ms;
    let short_by_at_most_ms = (report.server_underflows + 1) as f64 * f64::from(PERIOD_MS) + 1.0;
    assert!(
        span_ms <= counted_ms + 1.0 && span_ms >= counted_ms - short_by_at_most_ms,
        "the reply spanned {span_ms} ms on the sink: what the speaker stream wrote and counted, \
         the silence of the ring and of the server included: {report:?}"
    );
    assert_heard_in_order(
        &heard,
        &reply,
        report.server_underflows,
        "the reply through the stall",
    );
}

#[test]
fn a_held_reply_goes_silent_and_then_on_from_where_it_stopped_losing_nothing() {
    let _sinks = one_at_a_time();
    let (recorder, running, reply, mut events) = a_second_of_reply_a_third_played("item_held");
    running
        .engine
        .apply(AudioCommand::HoldPlayback { held: true });
    let held_at = running.engine.stats().played_frames;
    // The hold itself: the stimulus, not a wait for something to happen.
    std::thread::sleep(Duration::from_millis(300));
    let after_hold = running.engine.stats().played_frames;
    running
        .engine
        .apply(AudioCommand::HoldPlayback { held: false });
    events.extend(
        running.events_until("the reply to drain", Duration::from_secs(5), |event| {
            matches!(event, EngineEvent::PlaybackDrained)
        }),
    );
    std::thread::sleep(Duration::from_millis(300));
    let heard = from_bytes(&recorder.end());

    let period_frames = u64::from(48 * PERIOD_MS);
    assert!(
        after_hold - held_at <= period_frames,
        "at most the period in progress played once held: {} frames",
        after_hold - held_at
    );
    assert_heard_in_order(
        &nonzero(&heard),
        &reply,
        playout_reports(&events)
            .iter()
            .map(|report| report.server_underflows)
            .sum(),
        "the held reply",
    );
    let silent_inside_ms = (sounding(&heard).len() as f64 - reply.len() as f64) / 48.0;
    assert!(
        (250.0..=1_000.0).contains(&silent_inside_ms),
        "the hold was heard as a silence inside the reply: {silent_inside_ms} ms"
    );
}

/// The sink recorded, the engine on the default devices, a 1 s reply of [`pattern`] as item
/// `item`, and the events until 300 ms of it played.
fn a_second_of_reply_a_third_played(
    item: &str,
) -> (PulseClient, Running, Vec<i16>, Vec<EngineEvent>) {
    let recorder = PulseClient::spawn("parec", "spk.monitor");
    let running = start(EngineConfig::default());
    running.wait_for_devices(false);
    let mut player = running.engine.player();
    player.begin_item(item);
    let reply = pattern(48_000);
    for piece in reply.chunks(FRAME_SAMPLES) {
        player.play(&AudioChunk::from_samples(piece.to_vec()));
    }
    let events = running.events_until("a third to play", Duration::from_secs(5), |event| {
        matches!(event, EngineEvent::PlaybackProgress { played_ms, .. } if *played_ms >= 300)
    });
    (recorder, running, reply, events)
}

/// What a sink recorded from its first sound to its last (the test replies are never zero).
fn sounding(heard: &[i16]) -> &[i16] {
    let first = heard
        .iter()
        .position(|&s| s != 0)
        .expect("the reply was heard");
    let last = heard
        .iter()
        .rposition(|&s| s != 0)
        .expect("the reply was heard");
    &heard[first..=last]
}

/// The engine's reports of how each reply played, in order.
fn playout_reports<'a>(events: impl IntoIterator<Item = &'a EngineEvent>) -> Vec<PlayoutReport> {
    events
        .into_iter()
        .filter_map(|event| match event {
            EngineEvent::ReplyPlayed(report) => Some(*report),
            _ => None,
        })
        .collect()
}

/// Waits for the input meter to hear the tone, then for it to go quiet again.
fn wait_for_tone_to_pass(running: &Running) {
    running.events_until("the tone in the mic", Duration::from_secs(5), |event| {
        matches!(event, EngineEvent::Level { direction: DeviceDirection::Input, level } if level.rms_dbfs > -20.0)
    });
    running.events_until("the tone to end", Duration::from_secs(5), |event| {
        matches!(event, EngineEvent::Level { direction: DeviceDirection::Input, level } if level.rms_dbfs < -60.0)
    });
}

#[test]
fn a_press_with_a_warm_mic_sends_the_audio_from_just_before_it_first() {
    let _sinks = one_at_a_time();
    let running = start(EngineConfig::default());
    running.wait_for_devices(true);
    let before_press: Vec<i16> = tone(1_000.0, 0.5, 9_600)
        .into_iter()
        .chain(std::iter::repeat_n(0, 96_000))
        .collect();
    let _mic = PulseClient::play("mic", &before_press);
    wait_for_tone_to_pass(&running);
    assert!(
        running.frames_so_far().is_empty(),
        "nothing is sent before the press"
    );

    running
        .engine
        .apply(AudioCommand::OpenCapture { pre_roll_ms: 300 });
    wait_until("the pre-roll to be sent", Duration::from_secs(2), || {
        running.engine.stats().frames_sent >= 15
    });
    std::thread::sleep(Duration::from_millis(100));
    running.engine.apply(AudioCommand::CloseCapture);
    wait_until("the capture to close", Duration::from_secs(2), || {
        !running.engine.stats().capturing
    });
    let frames = decode_all(&running.frames_so_far());

    assert!(
        frames.len() >= 15,
        "at least the pre-roll: {} frames",
        frames.len()
    );
    let levels: Vec<f32> = frames.iter().map(|f| tone_level_dbfs(f, 1_000.0)).collect();
    let loudest = levels[..15].iter().copied().fold(f32::MIN, f32::max);
    assert!(
        loudest > -15.0,
        "the tone played before the press is in the first 300 ms sent: {levels:?}"
    );
    let last = levels.last().copied().expect("frames were sent");
    assert!(
        last < -50.0,
        "after the press the mic was quiet: {levels:?}"
    );
}

#[test]
fn with_the_privacy_option_the_mic_is_closed_outside_presses_and_nothing_before_one_is_sent() {
    let _sinks = one_at_a_time();
    let running = start(EngineConfig {
        privacy_mic: true,
        ..EngineConfig::default()
    });
    running.wait_for_devices(false);
    std::thread::sleep(Duration::from_millis(200));
    assert!(
        !running.engine.stats().mic_open,
        "the mic is closed before the press"
    );
    let before_press: Vec<i16> = tone(1_000.0, 0.5, 9_600)
        .into_iter()
        .chain(std::iter::repeat_n(0, 96_000))
        .collect();
    let _mic = PulseClient::play("mic", &before_press);
    std::thread::sleep(Duration::from_millis(800));

    running
        .engine
        .apply(AudioCommand::OpenCapture { pre_roll_ms: 300 });
    wait_until("frames from the press", Duration::from_secs(5), || {
        running.engine.stats().frames_sent >= 10
    });
    running.engine.apply(AudioCommand::CloseCapture);
    wait_until("the mic to close again", Duration::from_secs(2), || {
        !running.engine.stats().mic_open
    });
    let frames = decode_all(&running.frames_so_far());

    let levels: Vec<f32> = frames.iter().map(|f| tone_level_dbfs(f, 1_000.0)).collect();
    assert!(
        levels.iter().all(|&level| level < -50.0),
        "nothing from before the press leaves the machine: {levels:?}"
    );
}

#[test]
fn the_gated_mic_sends_only_silence_while_the_assistant_is_audible() {
    let _sinks = one_at_a_time();
    let running = start(EngineConfig::default());
    running.wait_for_devices(true);
    running
        .engine
        .apply(AudioCommand::OpenCapture { pre_roll_ms: 0 });
    running.engine.apply(AudioCommand::GateMic { gated: true });
    let _mic = PulseClient::play("mic", &tone(1_000.0, 0.5, 3 * 48_000));
    running.events_until("the tone in the mic", Duration::from_secs(5), |event| {
        matches!(event, EngineEvent::Level { direction: DeviceDirection::Input, level } if level.rms_dbfs > -20.0)
    });
    std::thread::sleep(Duration::from_millis(300));
    let gated = running.frames_so_far();

    running.engine.apply(AudioCommand::GateMic { gated: false });
    std::thread::sleep(Duration::from_millis(400));
    running.engine.apply(AudioCommand::CloseCapture);
    wait_until("the capture to close", Duration::from_secs(2), || {
        !running.engine.stats().capturing
    });
    let ungated = running.frames_so_far();
    let all: Vec<Vec<u8>> = gated.iter().chain(&ungated).cloned().collect();
    let decoded = decode_all(&all);

    assert!(
        gated.len() >= 10,
        "frames kept flowing while gated: {}",
        gated.len()
    );
    for (n, frame) in decoded[..gated.len()].iter().enumerate() {
        assert!(
            rms_dbfs(frame) < -60.0,
            "gated frame {n} carries sound: {} dBFS",
            rms_dbfs(frame)
        );
    }
    let loudest_after = decoded[gated.len()..]
        .iter()
        .map(|f| tone_level_dbfs(f, 1_000.0))
        .fold(f32::MIN, f32::max);
    assert!(
        loudest_after > -15.0,
        "ungated, the mic is heard again: {loudest_after} dBFS"
    );
}

/// Push-to-talk without an echo canceller: the controller gates the warm mic while the
/// assistant is audible, and a press opens the gate before opening capture. Nobody could talk
/// into the gated mic, so the press sends neither what it heard (the assistant) nor the gated
/// silence ahead of the user: the pre-roll starts again where the gate opened.
#[test]
fn a_press_right_after_a_gated_stretch_sends_the_user_from_its_first_frame() {
    let _sinks = one_at_a_time();
    let running = start(EngineConfig::default());
    running.wait_for_devices(true);
    running.engine.apply(AudioCommand::GateMic { gated: true });
    let _mic = PulseClient::play("mic", &tone(1_000.0, 0.5, 4 * 48_000));
    running.events_until("the tone in the mic", Duration::from_secs(5), |event| {
        matches!(event, EngineEvent::Level { direction: DeviceDirection::Input, level } if level.rms_dbfs > -20.0)
    });
    // Longer than the 300 ms pre-roll (six readings at 10 a second), so a pre-roll kept through
    // the gate would be full.
    running.events_until("600 ms of gated microphone", Duration::from_secs(5), {
        let mut readings = 0;
        move |event| {
            if matches!(
                event,
                EngineEvent::Level {
                    direction: DeviceDirection::Input,
                    ..
                }
            ) {
                readings += 1;
            }
            readings >= 6
        }
    });
    assert!(
        running.frames_so_far().is_empty(),
        "nothing is sent before the press"
    );

    // The press, as the controller orders it: flush, open the gate, open capture.
    running.engine.apply(AudioCommand::FlushPlayback);
    running.engine.apply(AudioCommand::GateMic { gated: false });
    running
        .engine
        .apply(AudioCommand::OpenCapture { pre_roll_ms: 300 });
    wait_until("a second of the press", Duration::from_secs(3), || {
        running.engine.stats().frames_sent >= 50
    });
    running.engine.apply(AudioCommand::CloseCapture);
    wait_until("the capture to close", Duration::from_secs(2), || {
        !running.engine.stats().capturing
    });
    let frames = decode_all(&running.frames_so_far());

    // Opus's first frame fades in; from the second on every frame is the user at full level.
    let quiet: Vec<(usize, f32)> = frames[1..]
        .iter()
        .enumerate()
        .map(|(n, frame)| (n + 1, tone_level_dbfs(frame, 1_000.0)))
        .filter(|&(_, level)| level < -15.0)
        .collect();
    assert!(
        quiet.is_empty(),
        "the press sends the user, no gated silence: quiet frames (index, dBFS) {quiet:?} of {}",
        frames.len()
    );
}

#[test]
fn when_the_chosen_devices_vanish_the_engine_falls_back_to_the_defaults_and_goes_on() {
    let _sinks = one_at_a_time();
    let mut spare = SpareSink::load();
    let id_of = |direction, suffix: &str| {
        list_devices(direction)
            .expect("the devices are listed")
            .into_iter()
            .find(|device| device.id.ends_with(suffix))
            .unwrap_or_else(|| panic!("the spare {direction} is listed"))
            .id
    };
    let spare_speaker = id_of(DeviceDirection::Output, SpareSink::NAME);
    let spare_mic = id_of(
        DeviceDirection::Input,
        &format!("{}.monitor", SpareSink::NAME),
    );
    let running = start(EngineConfig {
        input_device: Some(spare_mic.clone()),
        output_device: Some(spare_speaker.clone()),
        ..EngineConfig::default()
    });
    running.wait_for_devices(true);
    let recorder = PulseClient::spawn("parec", "spk.monitor");

    spare.unload();
    let mut fell_back = Vec::new();
    running.events_until("both fallbacks", Duration::from_secs(10), |event| {
        if let EngineEvent::DeviceFellBack {
            direction,
            wanted,
            using,
            ..
        } = event
        {
            fell_back.push((*direction, wanted.clone(), using.clone()));
        }
        fell_back.len() == 2
    });
    fell_back.sort_by_key(|(direction, ..)| *direction == DeviceDirection::Output);
    assert_eq!(fell_back[0].0, DeviceDirection::Input);
    assert_eq!(fell_back[0].1, spare_mic);
    assert!(fell_back[0].2.ends_with("mic.monitor"), "{fell_back:?}");
    assert_eq!(fell_back[1].0, DeviceDirection::Output);
    assert_eq!(fell_back[1].1, spare_speaker);
    assert!(fell_back[1].2.ends_with("spk"), "{fell_back:?}");

    let mut player = running.engine.player();
    player.begin_item("item_after_loss");
    let reply = pattern(24_000);
    player.play(&AudioChunk::from_samples(reply.clone()));
    let events = running.events_until("the reply to drain", Duration::from_secs(5), |event| {
        matches!(event, EngineEvent::PlaybackDrained)
    });
    running
        .engine
        .apply(AudioCommand::OpenCapture { pre_roll_ms: 0 });
    wait_until(
        "the mic to send from the default",
        Duration::from_secs(5),
        || running.engine.stats().frames_sent >= 5,
    );
    running.engine.apply(AudioCommand::CloseCapture);
    std::thread::sleep(Duration::from_millis(300));

    let heard = nonzero(&from_bytes(&recorder.end()));
    // The reply's report comes when it drained; a run dry at its very end may report late.
    let server_underflows = playout_reports(&events)
        .iter()
        .map(|report| report.server_underflows)
        .sum();
    assert_heard_in_order(
        &heard,
        &reply,
        server_underflows,
        "the conversation goes on through the default speaker",
    );
}

/// The engine with the default devices, and the channel its waker sends on: the tests take
/// events the way the app does, when woken.
fn start_woken() -> (Engine, Receiver<EngineEvent>, Receiver<()>) {
    start_woken_with(EngineConfig::default())
}

fn start_woken_with(config: EngineConfig) -> (Engine, Receiver<EngineEvent>, Receiver<()>) {
    let (wake_tx, wakes) = mpsc::channel::<()>();
    let (engine, events) = Engine::start(
        config,
        |_: &[u8], _| {},
        move || {
            let _ = wake_tx.send(());
        },
    )
    .expect("the engine starts");
    (engine, events, wakes)
}

#[test]
fn the_microphones_audio_wakes_the_app_about_ten_times_a_second_not_once_a_frame_and_no_report_is_missed()
 {
    let _sinks = one_at_a_time();
    // A meter reading every half second, so that the frames' own wakes show.
    let (engine, events, wakes) = start_woken_with(EngineConfig {
        meter_readings_per_second: 2,
        ..EngineConfig::default()
    });
    wait_until("the devices to open", Duration::from_secs(5), || {
        let stats = engine.stats();
        stats.output_rate_hz == 48_000 && stats.mic_open
    });
    let _mic = PulseClient::play("mic", &tone(440.0, 0.3, 48_000 * 3));
    engine.apply(AudioCommand::OpenCapture { pre_roll_ms: 0 });

    // Two seconds of talking, taken the way the app takes it: sleep until woken, then drain.
    let mut woken = 0u32;
    let mut frames_sent = 0u32;
    let mut most_frames_in_a_wake = 0u32;
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(2) {
        if wakes.recv_timeout(Duration::from_millis(200)).is_err() {
            continue;
        }
        woken += 1;
        let frames = events
            .try_iter()
            .filter(|event| matches!(event, EngineEvent::SentAudio(_)))
            .count() as u32;
        frames_sent += frames;
        most_frames_in_a_wake = most_frames_in_a_wake.max(frames);
    }
    engine.apply(AudioCommand::CloseCapture);
    eprintln!(
        "woken {woken} times in 2 s for {frames_sent} frames, at most {most_frames_in_a_wake} in one wake"
    );

    assert!(
        frames_sent >= 80,
        "about 50 frames a second were sent and reported: {frames_sent}"
    );
    // A frame a pass; the app is woken for them every 100 ms (and for the meter's readings).
    assert!(
        woken <= 30,
        "woken {woken} times in 2 s for {frames_sent} frames: the frames of 100 ms come with one wake"
    );
    // The frames wait 100 ms, not longer: five of them, and a pass late on a loaded machine.
    assert!(
        most_frames_in_a_wake <= 7,
        "{most_frames_in_a_wake} frames came with one wake: audio waited longer than 100 ms"
    );
    // Whatever a worker queues is announced: once the workers have stopped, taking the
    // events of every wake left leaves none behind.
    drop(engine);
    for _ in wakes.try_iter() {
        events.try_iter().for_each(drop);
    }
    let unannounced = events.try_iter().count();
    assert_eq!(unannounced, 0, "events were queued without waking the app");
}

#[test]
fn between_presses_with_nothing_to_play_the_workers_and_the_microphones_stream_rest_and_a_press_still_sends_from_before_it()
 {
    let _sinks = one_at_a_time();
    // As the app runs push-to-talk: the echo canceller set up, and paused.
    let (engine, events, _wakes) = start_woken_with(EngineConfig {
        echo_cancellation: true,
        ..EngineConfig::default()
    });
    engine.apply(AudioCommand::CancelEcho { on: false });
    wait_until("the devices to open", Duration::from_secs(5), || {
        let stats = engine.stats();
        stats.output_rate_hz == 48_000 && stats.mic_open
    });
    let _mic = PulseClient::play("mic", &tone(440.0, 0.3, 48_000 * 3));
    // Half a second of the microphone's readings: its stream has settled into its pace (a
    // stream just opened reads as the server posts).
    let mut readings = 0;
    while readings < 5 {
        match events.recv_timeout(Duration::from_secs(2)) {
            Ok(EngineEvent::Level {
                direction: DeviceDirection::Input,
                ..
            }) => readings += 1,
            Ok(_) => {}
            Err(error) => panic!("the microphone's meter did not read: {error}"),
        }
    }

    // A second of a warm microphone, no press, no reply: the app takes what comes.
    let before = engine.stats();
    let mic_wakeups_before = wakeups_of("walkie-pulse-in");
    let started = Instant::now();
    let mut levels = 0;
    while started.elapsed() < Duration::from_secs(1) {
        if let Ok(EngineEvent::Level { direction, .. }) =
            events.recv_timeout(Duration::from_millis(50))
        {
            levels += u32::from(direction == DeviceDirection::Input);
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    let after = engine.stats();
    let up_per_second = (after.uplink_passes - before.uplink_passes) as f64 / seconds;
    let down_per_second = (after.downlink_passes - before.downlink_passes) as f64 / seconds;
    let mic_per_second = (wakeups_of("walkie-pulse-in") - mic_wakeups_before) as f64 / seconds;
    eprintln!(
        "at rest: the uplink made {up_per_second:.0} passes a second, the downlink \
         {down_per_second:.0}; the microphone's stream woke {mic_per_second:.0} times"
    );
    // A 20 ms pace is 50 a second; at rest each looks every 100 ms.
    assert!(
        up_per_second <= 20.0,
        "the uplink made {up_per_second:.0} passes a second between presses"
    );
    assert!(
        down_per_second <= 20.0,
        "the downlink made {down_per_second:.0} passes a second with nothing to play"
    );
    // The microphone's stream read once a period (20 ms) wakes 50 times a second or more.
    assert!(
        mic_per_second <= 30.0,
        "the microphone's stream woke {mic_per_second:.0} times a second between presses"
    );
    assert!(
        levels >= 5,
        "the microphone's meter still read the room: {levels} readings"
    );

    // A press after the rest sends the audio from just before it first (the pre-roll was
    // kept up to the press).
    engine.apply(AudioCommand::OpenCapture { pre_roll_ms: 300 });
    let mut frames = 0;
    let pressed = Instant::now();
    while frames < 15 && pressed.elapsed() < Duration::from_secs(2) {
        if let Ok(EngineEvent::SentAudio(chunk)) = events.recv_timeout(Duration::from_millis(100)) {
            assert!(
                chunk.samples().iter().any(|&sample| sample != 0),
                "a frame of the pre-roll was silent: the rest lost the microphone's audio"
            );
            frames += 1;
        }
    }
    assert_eq!(frames, 15, "the press sent its 300 ms of pre-roll");
    engine.apply(AudioCommand::CloseCapture);
}

/// An engine whose speaker is open, told to play the reply `item_reply`, and one Opus packet
/// of a tone to send it as RTP.
fn told_to_play_a_reply() -> (Engine, Receiver<EngineEvent>, Receiver<()>, Vec<u8>) {
    let (engine, events, wakes) = start_woken();
    wait_until("the speaker to open", Duration::from_secs(5), || {
        engine.stats().output_rate_hz == 48_000
    });
    let mut encoder = OpusEncoder::new(32_000).expect("libopus encoder");
    let mut packet = [0u8; MAX_PACKET_BYTES];
    let frame: Vec<f32> = tone(440.0, 0.3, FRAME_SAMPLES)
        .iter()
        .map(|&s| f32::from(s) / 32_768.0)
        .collect();
    let len = encoder.encode(&frame, &mut packet).expect("encodes");
    engine.reply_audio(&told(ReplyGate::Play, Some("item_reply")));
    (engine, events, wakes, packet[..len].to_vec())
}

#[test]
fn a_reply_wakes_the_downlink_once_per_frame_and_not_for_its_packets() {
    let _sinks = one_at_a_time();
    let (engine, events, wakes, packet) = told_to_play_a_reply();

    // A 3 s reply, one packet every 20 ms; the app is woken for each decoded frame (its
    // transcript and recording), which the engine has played already.
    let started = Instant::now();
    let mut sent = 0u16;
    let mut played = 0u32;
    let mut wakeups_from = None;
    while started.elapsed() < Duration::from_secs(3) {
        let due = started + Duration::from_millis(20 * u64::from(sent));
        if Instant::now() >= due {
            engine.receive_rtp(sent, 960 * u32::from(sent), &packet, Instant::now());
            sent += 1;
        }
        if wakes
            .recv_timeout(due.saturating_duration_since(Instant::now()))
            .is_ok()
        {
            for event in events.try_iter() {
                if let EngineEvent::AssistantAudio(_) = event {
                    played += 1;
                }
            }
        }
        // The last two seconds, once the reply flows.
        if wakeups_from.is_none() && started.elapsed() >= Duration::from_secs(1) {
            let stats = engine.stats();
            wakeups_from = Some((
                Instant::now(),
                wakeups_of("walkie-audio-do"),
                played,
                sent,
                stats.packet_wakes,
            ));
        }
    }
    let (from, wakeups_before, played_before, sent_before, packet_wakes_before) =
        wakeups_from.expect("the reply ran 3 s");
    let seconds = from.elapsed().as_secs_f64();
    let wakeups_per_second = (wakeups_of("walkie-audio-do") - wakeups_before) as f64 / seconds;
    let deltas_per_second = f64::from(played - played_before) / seconds;
    let packets = u64::from(sent - sent_before);
    let packet_wakes = engine.stats().packet_wakes - packet_wakes_before;
    eprintln!(
        "the downlink woke {wakeups_per_second:.0} times a second for {deltas_per_second:.0} deltas; \
         {packet_wakes} of {packets} packets woke it"
    );
    assert!(
        deltas_per_second > 45.0,
        "the reply flowed: {deltas_per_second:.0} deltas a second"
    );
    // Its 20 ms pace wakes it; a packet received while the reply plays
    // does not (a wake for each would be ~50 more a second); one that comes after the
    // buffer ran dry (a late sender on a loaded machine) may start the talkspurt again. How
    // often the thread really wakes depends on the load: that figure is the benches'.
    assert!(packets >= 80, "packets flowed: {packets}");
    assert!(
        packet_wakes * 10 <= packets,
        "{packet_wakes} of {packets} packets received mid-reply woke the downlink"
    );
}

#[test]
fn a_reply_that_ends_leaves_the_downlink_waking_at_a_few_ms_until_it_gives_up() {
    let _sinks = one_at_a_time();
    let (engine, events, _wakes, packet) = told_to_play_a_reply();

    // A 1 s reply, a packet every 20 ms, then nothing: the frame due next finds the jitter
    // buffer dry until the pace gives the talkspurt up (60 ms late).
    let started = Instant::now();
    for sent in 0..50u16 {
        let due = started + Duration::from_millis(20 * u64::from(sent));
        std::thread::sleep(due.saturating_duration_since(Instant::now()));
        engine.receive_rtp(sent, 960 * u32::from(sent), &packet, Instant::now());
    }
    let last_sent = Instant::now();
    let wakeups_before = wakeups_of("walkie-audio-do");
    let mut played = 0;
    loop {
        match events.recv_timeout(Duration::from_secs(2)) {
            Ok(EngineEvent::AssistantAudio(_)) => played += 1,
            Ok(EngineEvent::ReplyPlayed(_)) => break,
            Ok(_) => {}
            Err(error) => panic!("the reply did not end: {error}"),
        }
    }
    let waited_ms = last_sent.elapsed().as_secs_f64() * 1e3;
    let wakeups = wakeups_of("walkie-audio-do") - wakeups_before;
    eprintln!(
        "the downlink woke {wakeups} times in the {waited_ms:.0} ms from the reply's last \
         packet to its end"
    );
    assert!(played >= 45, "the reply played: {played} frames");
    // At most a look every 2 ms while the pace waits for a late packet, and its 20 ms tick
    // otherwise; looking again at once is one every tenth of a millisecond.
    assert!(
        wakeups as f64 <= waited_ms / 2.0 + 15.0,
        "the downlink woke {wakeups} times in {waited_ms:.0} ms after the reply's last packet"
    );
}

/// The sound server's clients now (`pactl list short clients`).
fn sound_server_clients() -> usize {
    let listed = std::process::Command::new("pactl")
        .args(["list", "short", "clients"])
        .output()
        .expect("pactl (pulseaudio-utils) runs");
    String::from_utf8_lossy(&listed.stdout).lines().count()
}

#[test]
fn engines_started_and_dropped_one_after_another_leave_no_sound_server_connection_behind() {
    let _sinks = one_at_a_time();
    // The first engine of the process opens the one connection it keeps for device checks.
    drop(start_woken());
    let before = sound_server_clients();
    for _ in 0..6 {
        let (engine, _events, _wakes) = start_woken();
        wait_until("the devices to open", Duration::from_secs(5), || {
            engine.stats().output_rate_hz == 48_000 && engine.stats().mic_open
        });
        drop(engine);
    }
    let after = sound_server_clients();
    assert!(
        after <= before,
        "six engines left {} connections to the sound server behind",
        after - before
    );
}

/// A reply played while the microphone is the speaker's own monitor (every sample comes
/// straight back, through the sound server's latency), with capture open as hands-free keeps
/// it: the decoded frames the engine sent, and the stretches of them (frame ranges) sent while
/// the canceller was trusted (from its `converged: true` to its `converged: false`, if any),
/// and how many frames the playback underran by (each gap moves the echo the canceller learnt).
fn reply_heard_by_its_own_microphone(canceller: Canceller, stall: Option<Duration>) -> Heard {
    let monitor = list_devices(DeviceDirection::Input)
        .expect("the devices are listed")
        .into_iter()
        .find(|device| device.id.ends_with("spk.monitor"))
        .expect("the speaker's monitor is listed")
        .id;
    reply_heard_by(Some(monitor), canceller, stall)
}

/// How the engine's echo canceller stands for a run.
#[derive(Clone, Copy, PartialEq)]
enum Canceller {
    /// Not in the engine's configuration.
    Off,
    /// Configured, and running.
    On,
    /// Configured, and paused as push-to-talk pauses it.
    Paused,
}

/// What the engine sent while a reply played within the microphone's earshot.
struct Heard {
    /// The frames sent, decoded.
    sent: Vec<Vec<f32>>,
    /// The stretches of sent frames while the canceller was trusted.
    trusted: Vec<std::ops::Range<usize>>,
    /// The sent frame at which the sound server ran again after a stall, if it was stalled.
    resumed_at_frame: Option<usize>,
    /// How the speaker's and the microphone's clocks were found (ppm apart, followed).
    clocks: Vec<(i32, bool)>,
}

/// Plays a 6 s reply with the microphone `input_device`; with `stall`, the sound server is
/// stopped that long once the canceller has been trusted for a second.
fn reply_heard_by(
    input_device: Option<String>,
    canceller: Canceller,
    stall: Option<Duration>,
) -> Heard {
    let running = start(EngineConfig {
        input_device,
        echo_cancellation: canceller != Canceller::Off,
        ..EngineConfig::default()
    });
    if canceller == Canceller::Paused {
        running.engine.apply(AudioCommand::CancelEcho { on: false });
    }
    running.wait_for_devices(true);
    running
        .engine
        .apply(AudioCommand::OpenCapture { pre_roll_ms: 0 });
    let mut player = running.engine.player();
    player.begin_item("item_reply");
    let reply = walkie_dsp::testkit::speech_like(6_000);
    for piece in reply.chunks(FRAME_SAMPLES) {
        player.play(&AudioChunk::from_samples(piece.to_vec()));
    }
    let mut frames = Vec::new();
    let mut trusted = Vec::new();
    let mut trusted_since = None;
    let mut stall = stall;
    let mut resumed_at_frame = None;
    let mut clocks = Vec::new();
    running.events_until("the reply to drain", Duration::from_secs(15), |event| {
        frames.extend(running.frames_so_far());
        if let Some(since) = trusted_since
            && frames.len() >= since + 50
            && let Some(stall) = stall.take()
        {
            let _stalled = StalledServer::stop();
            // The stall itself: the stimulus, not a wait for something to happen.
            std::thread::sleep(stall);
            drop(_stalled);
            resumed_at_frame = Some(frames.len());
        }
        match event {
            EngineEvent::EchoCanceller { converged: true } => {
                trusted_since.get_or_insert(frames.len());
            }
            EngineEvent::EchoCanceller { converged: false } => {
                if let Some(since) = trusted_since.take() {
                    trusted.push(since..frames.len());
                }
            }
            EngineEvent::ClockDrift {
                drift_ppm,
                following,
            } => clocks.push((*drift_ppm, *following)),
            _ => {}
        }
        matches!(event, EngineEvent::PlaybackDrained)
    });
    frames.extend(running.frames_so_far());
    if let Some(since) = trusted_since {
        trusted.push(since..frames.len());
    }
    let stats = running.engine.stats();
    println!(
        "capture overruns {} frames, playback underruns {} frames",
        stats.capture_xrun_frames, stats.playback_xrun_frames
    );
    Heard {
        sent: decode_all(&frames),
        trusted,
        resumed_at_frame,
        clocks,
    }
}

/// How many of the sent frames the provider's voice detection would take for speech.
fn frames_at_speech_level(frames: &[Vec<f32>]) -> usize {
    frames
        .iter()
        .filter(|frame| rms_dbfs(frame) >= walkie_dsp::testkit::room::VAD_THRESHOLD_DBFS)
        .count()
}

#[test]
fn a_paused_echo_canceller_sends_what_the_mic_hears_and_is_never_trusted() {
    let _sinks = one_at_a_time();
    let Heard { sent, trusted, .. } = reply_heard_by_its_own_microphone(Canceller::Paused, None);
    let at_speech_level = frames_at_speech_level(&sent);
    assert_eq!(trusted, [], "a paused canceller is never trusted");
    // As a share of what was sent: on a loaded PipeWire the reply reaches the microphone a few
    // frames later than on PulseAudio, which a count of frames read as the canceller at work.
    assert!(
        at_speech_level * 2 > sent.len(),
        "paused, the canceller takes nothing out: {at_speech_level} of {} frames at speech level",
        sent.len()
    );
}

#[test]
fn with_echo_cancellation_the_reply_the_mic_hears_is_not_sent_once_the_canceller_has_learnt_it() {
    let _sinks = one_at_a_time();
    let Heard {
        sent: raw,
        trusted: never,
        ..
    } = reply_heard_by_its_own_microphone(Canceller::Off, None);
    let raw_at_speech_level = frames_at_speech_level(&raw);
    assert_eq!(never, [], "no canceller, never trusted");
    assert!(
        raw_at_speech_level > 200,
        "without the canceller the reply is sent back: {raw_at_speech_level} of {} frames",
        raw.len()
    );

    // Gaps in the playback (the ring or the sound server running dry on a starved machine)
    // are in the canceller's reference as the silence they were, so the path it learnt holds
    // through them: once trusted, not one frame of the reply at speech level.
    let Heard {
        sent: cleaned,
        trusted,
        clocks,
        ..
    } = reply_heard_by_its_own_microphone(Canceller::On, None);
    // The null sink and its monitor run on one clock: however the two streams' callbacks
    // jitter on this loaded server, the canceller's reference is never moved off it.
    println!("clocks (ppm apart, followed): {clocks:?}");
    assert!(
        clocks.iter().all(|&(_, following)| !following),
        "one clock for both streams, taken for two: {clocks:?}"
    );
    let trusted_frames: usize = trusted.iter().map(|range| range.len()).sum();
    let leaked: Vec<(usize, f32)> = trusted
        .iter()
        .flat_map(|range| range.clone())
        .map(|n| (n, rms_dbfs(&cleaned[n])))
        .filter(|&(_, level)| level >= walkie_dsp::testkit::room::VAD_THRESHOLD_DBFS)
        .collect();
    println!(
        "trusted over frames {trusted:?} of {}; at speech level then: {leaked:?} \
         ({raw_at_speech_level} without the canceller)",
        cleaned.len()
    );
    assert!(
        trusted_frames > 100,
        "the canceller was trusted for {trusted_frames} of {} frames: {trusted:?}",
        cleaned.len()
    );
    assert_eq!(
        leaked,
        [],
        "once trusted, none of the reply got through (frame, dBFS)"
    );
    assert!(
        raw_at_speech_level * 2 > raw.len(),
        "the echo is loud without the canceller"
    );
}

#[test]
fn a_sound_server_that_stalls_mid_reply_does_not_let_the_echo_the_canceller_learnt_through() {
    let _sinks = one_at_a_time();
    let heard = reply_heard_by_its_own_microphone(Canceller::On, Some(Duration::from_millis(100)));
    let resumed_at = heard
        .resumed_at_frame
        .expect("the canceller was trusted for a second, and the server stalled then");
    let trusted_after_stall: Vec<usize> = heard
        .trusted
        .iter()
        .flat_map(|range| range.clone())
        .filter(|&n| n >= resumed_at)
        .collect();
    let leaked: Vec<(usize, f32)> = trusted_after_stall
        .iter()
        .map(|&n| (n, rms_dbfs(&heard.sent[n])))
        .filter(|&(_, level)| level >= walkie_dsp::testkit::room::VAD_THRESHOLD_DBFS)
        .collect();
    println!(
        "resumed at frame {resumed_at}; trusted {:?} of {}; at speech level since: {leaked:?}",
        heard.trusted,
        heard.sent.len()
    );
    assert!(
        trusted_after_stall.len() > 100,
        "the canceller stayed trusted through the stall: {:?} of {} frames, resumed at {resumed_at}",
        heard.trusted,
        heard.sent.len()
    );
    assert_eq!(
        leaked,
        [],
        "no echo got through after the stall (frame, dBFS)"
    );
}

/// The scheduling policy (`/proc`'s number: 0 normal, 1 FIFO) of this process's thread named
/// `name` (as the kernel keeps it: at most 15 bytes).
fn scheduling_policy_of_thread(name: &str) -> Option<u32> {
    std::fs::read_dir("/proc/self/task").ok()?.find_map(|task| {
        let task = task.ok()?.path();
        let comm = std::fs::read_to_string(task.join("comm")).ok()?;
        if comm.trim_end() != name {
            return None;
        }
        let stat = std::fs::read_to_string(task.join("stat")).ok()?;
        // Fields after the name in parentheses start at the 3rd; the policy is the 41st.
        let after_name = &stat[stat.rfind(')')? + 1..];
        after_name.split_whitespace().nth(41 - 3)?.parse().ok()
    })
}

#[test]
fn the_speaker_streams_thread_runs_at_real_time_priority_where_the_system_allows_it() {
    use thread_priority::{
        RealtimeThreadSchedulePolicy, ThreadPriority, ThreadPriorityValue, ThreadSchedulePolicy,
        set_thread_priority_and_policy, thread_native_id,
    };
    let _sinks = one_at_a_time();
    // Whether this process may ask for it: tried on a thread of the test's own.
    let allowed = std::thread::spawn(|| {
        let value = ThreadPriorityValue::try_from(10u8).expect("10 is a valid priority");
        set_thread_priority_and_policy(
            thread_native_id(),
            ThreadPriority::Crossplatform(value),
            ThreadSchedulePolicy::Realtime(RealtimeThreadSchedulePolicy::Fifo),
        )
        .is_ok()
    })
    .join()
    .expect("the probing thread ends");
    let running = start(EngineConfig::default());
    running.wait_for_devices(false);
    let policy = scheduling_policy_of_thread("walkie-pulse-ou")
        .expect("the speaker stream has a thread of its own");
    assert_eq!(
        policy == 1,
        allowed,
        "the speaker's thread is at FIFO priority exactly when the system allows it \
         (allowed here: {allowed}; its policy: {policy})"
    );
    // And it plays as before.
    let mut player = running.engine.player();
    player.begin_item("item_rt");
    player.play(&AudioChunk::from_samples(pattern(4_800)));
    running.events_until("the reply to drain", Duration::from_secs(5), |event| {
        matches!(event, EngineEvent::PlaybackDrained)
    });
}
