//! A conversation exported whole: recorded here as the app records one (user audio arriving in
//! real time, replies arriving faster than they play, a barge-in that overlaps the two sides,
//! the user at 16 kHz and the assistant at 24 kHz), then written as one stereo WAV, one mixed
//! Ogg Opus file and WebVTT captions, each checked at the times the conversation happened.

mod support;

use std::path::Path;
use std::sync::Arc;

use support::scripted_conversation::Feed;
use walkie_session::{
    AudioChunk, Part, PartDelta, PartDeltaEvent, PartEndEvent, PartIndex, PartStartEvent,
    SessionEvent, Speaker, SpeechPart, StampedEvent,
};
use walkie_store::export::audio_clips;
use walkie_store::{AudioExport, AudioFormat, ExportChannels, RecorderConfig, Store};

const START_UNIX_MS: i64 = 1_700_000_000_000;
const USER_RATE_HZ: u32 = 16_000;
const ASSISTANT_RATE_HZ: u32 = 24_000;
const USER_TONE_HZ: f64 = 300.0;
const ASSISTANT_TONE_HZ: f64 = 1_000.0;
const AMPLITUDE: f64 = 0.3;

/// Where each side sounded, in ms from the start: what the export must reproduce.
const USER_SAID_MS: [(i64, i64); 3] = [(500, 1_500), (4_000, 4_600), (5_300, 6_000)];
const ASSISTANT_PLAYED_MS: [(i64, i64); 2] = [(2_000, 3_200), (5_000, 5_500)];
/// The second reply is cut 500 ms in, when the user's third question had been heard.
const CUT_MS: u64 = 500;

fn tone(rate_hz: u32, frequency_hz: f64, duration_ms: i64) -> Vec<i16> {
    let count = duration_ms as u64 * u64::from(rate_hz) / 1000;
    (0..count)
        .map(|n| {
            let phase = n as f64 * frequency_hz * std::f64::consts::TAU / f64::from(rate_hz);
            (phase.sin() * AMPLITUDE * 32_767.0) as i16
        })
        .collect()
}

struct Talk {
    recorder: walkie_store::Recorder,
    feed: Feed,
    seq: u64,
    next_part: u32,
}

impl Talk {
    fn event(&mut self, event: SessionEvent, at_ms: i64) {
        self.seq += 1;
        let stamped = StampedEvent {
            seq: self.seq,
            at_ms: at_ms as u64,
            event,
        };
        self.feed
            .event(&mut self.recorder, &stamped, START_UNIX_MS + at_ms);
    }

    fn part(&mut self) -> PartIndex {
        self.next_part += 1;
        PartIndex(self.next_part - 1)
    }

    /// The user says a tone from `from_ms` to `to_ms`, captured in 20 ms chunks as it is said.
    fn user_says(&mut self, (from_ms, to_ms): (i64, i64), words: &str) -> PartIndex {
        let index = self.part();
        self.event(
            SessionEvent::PartStart(PartStartEvent {
                index,
                part: Part::speech(Speaker::User),
            }),
            from_ms,
        );
        let samples = tone(USER_RATE_HZ, USER_TONE_HZ, to_ms - from_ms);
        let chunk = USER_RATE_HZ as usize / 50;
        for (number, piece) in samples.chunks(chunk).enumerate() {
            let arrived_ms = from_ms + 20 * (number as i64 + 1);
            self.recorder
                .user_audio(piece, START_UNIX_MS + arrived_ms.min(to_ms));
        }
        self.end_speech(index, Speaker::User, words, None, to_ms + 50);
        index
    }

    /// A reply whose deltas all arrive within 200 ms of `from_ms`, when it starts to play.
    fn assistant_plays(&mut self, from_ms: i64, duration_ms: i64) -> PartIndex {
        let index = self.part();
        self.event(
            SessionEvent::PartStart(PartStartEvent {
                index,
                part: Part::speech(Speaker::Assistant),
            }),
            from_ms - 200,
        );
        let samples = tone(ASSISTANT_RATE_HZ, ASSISTANT_TONE_HZ, duration_ms);
        let chunks: Vec<&[i16]> = samples.chunks(ASSISTANT_RATE_HZ as usize / 50).collect();
        let count = chunks.len() as i64;
        for (number, piece) in chunks.into_iter().enumerate() {
            self.event(
                SessionEvent::PartDelta(PartDeltaEvent {
                    index,
                    delta: PartDelta::assistant_audio(AudioChunk::from_samples(piece.to_vec())),
                }),
                from_ms + 200 * number as i64 / count,
            );
        }
        index
    }

    fn end_speech(
        &mut self,
        index: PartIndex,
        speaker: Speaker,
        words: &str,
        interrupted_at_ms: Option<u64>,
        at_ms: i64,
    ) {
        self.event(
            SessionEvent::PartEnd(PartEndEvent {
                index,
                part: Part::Speech(SpeechPart {
                    speaker,
                    transcript: Some(Arc::from(words)),
                    audio: None,
                    interrupted_at_ms,
                }),
            }),
            at_ms,
        );
    }
}

/// Records the conversation of the constants above; returns its id.
fn record(store: &Store) -> String {
    let config = RecorderConfig {
        user_sample_rate_hz: USER_RATE_HZ,
        assistant_sample_rate_hz: ASSISTANT_RATE_HZ,
        ..RecorderConfig::default()
    };
    let recorder = store
        .start(config, START_UNIX_MS)
        .expect("the recorder starts");
    let feed = Feed::new(&recorder);
    let mut talk = Talk {
        recorder,
        feed,
        seq: 0,
        next_part: 0,
    };
    talk.user_says(USER_SAID_MS[0], "What is the capital of Portugal?");
    let reply = talk.assistant_plays(ASSISTANT_PLAYED_MS[0].0, 1_200);
    talk.end_speech(
        reply,
        Speaker::Assistant,
        "Lisbon, on the Tagus.",
        None,
        2_300,
    );
    talk.event(SessionEvent::TurnComplete, 3_300);
    talk.user_says(USER_SAID_MS[1], "And of Spain?");
    let cut = talk.assistant_plays(ASSISTANT_PLAYED_MS[1].0, 1_000);
    // The user barges in; the reply is cut where it had played to.
    let index = talk.part();
    talk.event(
        SessionEvent::PartStart(PartStartEvent {
            index,
            part: Part::speech(Speaker::User),
        }),
        USER_SAID_MS[2].0,
    );
    talk.end_speech(
        cut,
        Speaker::Assistant,
        "Madrid, in the",
        Some(CUT_MS),
        5_500,
    );
    let (from_ms, to_ms) = USER_SAID_MS[2];
    let samples = tone(USER_RATE_HZ, USER_TONE_HZ, to_ms - from_ms);
    for (number, piece) in samples.chunks(USER_RATE_HZ as usize / 50).enumerate() {
        let arrived_ms = (from_ms + 20 * (number as i64 + 1)).min(to_ms);
        talk.recorder.user_audio(piece, START_UNIX_MS + arrived_ms);
    }
    talk.end_speech(index, Speaker::User, "Stop, thank you.", None, to_ms + 50);
    let mut recorder = talk.recorder;
    talk.feed
        .close(&mut recorder, START_UNIX_MS + 7_000)
        .expect("the conversation closes");
    recorder.id().to_owned()
}

/// Exports conversation `id`'s audio to `destination`, which must succeed.
fn export(
    store: &Store,
    id: &str,
    channels: ExportChannels,
    format: AudioFormat,
    destination: &Path,
) -> walkie_store::ExportedAudio {
    store
        .export_audio(id, AudioExport { channels, format }, destination)
        .expect("the export is written")
}

/// RMS of `channel` of interleaved `samples` between two times.
fn rms(
    samples: &[f32],
    channels: usize,
    channel: usize,
    rate_hz: u32,
    from_ms: i64,
    to_ms: i64,
) -> f64 {
    let frame =
        |ms: i64| (ms.max(0) as usize * rate_hz as usize / 1000).min(samples.len() / channels);
    let (from, to) = (frame(from_ms), frame(to_ms));
    assert!(to > from, "an empty window {from_ms}..{to_ms} ms");
    let energy: f64 = (from..to)
        .map(|n| f64::from(samples[n * channels + channel]).powi(2))
        .sum();
    (energy / (to - from) as f64).sqrt()
}

/// Windows 40 ms inside each span, clear of the edges.
fn inside((from_ms, to_ms): (i64, i64)) -> (i64, i64) {
    (from_ms + 40, to_ms - 40)
}

const LOUD: f64 = 0.1;
const QUIET: f64 = 0.01;

fn read_wav(path: &Path) -> (hound::WavSpec, Vec<f32>) {
    let mut reader = hound::WavReader::open(path).expect("the export is a WAV file");
    let spec = reader.spec();
    let samples = reader
        .samples::<i16>()
        .map(|sample| f32::from(sample.expect("a whole sample")) / 32_768.0)
        .collect();
    (spec, samples)
}

#[test]
fn the_journal_places_each_turn_wav_where_it_sounded() {
    let root = tempfile::tempdir().unwrap();
    let store = Store::new(root.path());
    let id = record(&store);
    let conversation = store.open(&id).unwrap();
    let placed: Vec<(Speaker, u64, u64)> = audio_clips(&conversation)
        .iter()
        .map(|clip| (clip.speaker, clip.start_ms, clip.end_ms()))
        .collect();
    let said_then: Vec<(Speaker, u64, u64)> = [
        (Speaker::User, USER_SAID_MS[0]),
        (Speaker::Assistant, ASSISTANT_PLAYED_MS[0]),
        (Speaker::User, USER_SAID_MS[1]),
        (Speaker::Assistant, ASSISTANT_PLAYED_MS[1]),
        (Speaker::User, USER_SAID_MS[2]),
    ]
    .into_iter()
    .map(|(speaker, (from_ms, to_ms))| (speaker, from_ms as u64, to_ms as u64))
    .collect();
    assert_eq!(placed, said_then);
}

#[test]
fn a_stereo_wav_export_holds_the_user_on_the_left_and_the_assistant_on_the_right_at_their_times() {
    let root = tempfile::tempdir().unwrap();
    let store = Store::new(root.path().join("conversations"));
    let id = record(&store);
    let destination = root.path().join("whole.wav");
    std::fs::write(
        &destination,
        b"an older file the save dialog agreed to replace",
    )
    .unwrap();
    let exported = export(
        &store,
        &id,
        ExportChannels::Stereo,
        AudioFormat::Wav,
        &destination,
    );
    assert_eq!(exported.clips, 5);
    assert!(exported.left_out.is_empty(), "{:?}", exported.left_out);

    let (spec, samples) = read_wav(&destination);
    assert_eq!(spec.channels, 2);
    assert_eq!(
        spec.sample_rate, ASSISTANT_RATE_HZ,
        "the higher of the two rates"
    );
    let length_ms = samples.len() as u64 / 2 * 1000 / u64::from(spec.sample_rate);
    assert_eq!(length_ms, 6_000, "it ends where the last sound ends");
    let rate = spec.sample_rate;
    let (left, right) = (0, 1);
    for said in USER_SAID_MS {
        let (from, to) = inside(said);
        let level = rms(&samples, 2, left, rate, from, to);
        assert!(
            level > LOUD,
            "the user's words at {said:?} ms are on the left: {level:.3}"
        );
    }
    for played in ASSISTANT_PLAYED_MS {
        let (from, to) = inside(played);
        let level = rms(&samples, 2, right, rate, from, to);
        assert!(
            level > LOUD,
            "the reply at {played:?} ms is on the right: {level:.3}"
        );
    }
    // Each side alone where the other was silent, and silence between turns.
    assert!(rms(&samples, 2, right, rate, 540, 1_460) < QUIET);
    assert!(rms(&samples, 2, left, rate, 2_040, 3_160) < QUIET);
    for silent in [(0, 460), (1_540, 1_960), (3_240, 3_960), (4_640, 4_960)] {
        for channel in [left, right] {
            let level = rms(&samples, 2, channel, rate, silent.0, silent.1);
            assert!(
                level < QUIET,
                "silence at {silent:?} ms on channel {channel}: {level:.4}"
            );
        }
    }
    // The barge-in: both sides at once.
    assert!(rms(&samples, 2, left, rate, 5_340, 5_460) > LOUD);
    assert!(rms(&samples, 2, right, rate, 5_340, 5_460) > LOUD);
    let leftovers: Vec<_> = std::fs::read_dir(root.path())
        .unwrap()
        .map(|entry| entry.unwrap().file_name())
        .filter(|name| name.to_string_lossy().ends_with(".tmp"))
        .collect();
    assert!(
        leftovers.is_empty(),
        "no temporary file is left: {leftovers:?}"
    );
}

/// The mono samples of an Ogg Opus file, decoded by libopus, with the pre-skip and the end
/// trimming its headers and granule positions ask for.
fn decode_ogg_opus(path: &Path) -> Vec<f32> {
    let file = std::fs::File::open(path).unwrap();
    let mut reader = ogg::PacketReader::new(std::io::BufReader::new(file));
    let head = reader
        .read_packet_expected()
        .expect("an identification header");
    assert_eq!(&head.data[..8], b"OpusHead");
    assert_eq!(head.data[9], 1, "one channel");
    let pre_skip = usize::from(u16::from_le_bytes([head.data[10], head.data[11]]));
    let tags = reader.read_packet_expected().expect("a comment header");
    assert_eq!(&tags.data[..8], b"OpusTags");
    let mut decoder = walkie_dsp::codec::OpusDecoder::new().unwrap();
    let mut samples = Vec::new();
    let mut last_granule = 0;
    let mut frame = [0.0f32; walkie_dsp::FRAME_SAMPLES];
    while let Some(packet) = reader.read_packet().expect("whole pages") {
        let decoded = decoder
            .decode(&packet.data, &mut frame)
            .expect("an Opus packet");
        samples.extend_from_slice(&frame[..decoded]);
        last_granule = packet.absgp_page();
        if packet.last_in_stream() {
            break;
        }
    }
    let end = usize::try_from(last_granule).unwrap();
    assert!(
        end <= samples.len(),
        "the last granule trims, never extends"
    );
    samples.truncate(end);
    samples.drain(..pre_skip);
    samples
}

#[test]
fn a_mixed_opus_export_decodes_to_both_sides_at_their_times() {
    let root = tempfile::tempdir().unwrap();
    let store = Store::new(root.path().join("conversations"));
    let id = record(&store);
    let destination = root.path().join("whole.opus");
    export(
        &store,
        &id,
        ExportChannels::Mixed,
        AudioFormat::OggOpus,
        &destination,
    );
    let wav_size = 6 * ASSISTANT_RATE_HZ as u64 * 2 * 2;
    let opus_size = std::fs::metadata(&destination).unwrap().len();
    assert!(
        opus_size * 8 < wav_size,
        "{opus_size} bytes: Opus is far smaller than PCM"
    );

    let samples = decode_ogg_opus(&destination);
    let rate = walkie_dsp::CALL_RATE_HZ;
    assert_eq!(samples.len() as u64 * 1000 / u64::from(rate), 6_000);
    for spoken in USER_SAID_MS.iter().chain(&ASSISTANT_PLAYED_MS) {
        let (from, to) = inside(*spoken);
        let level = rms(&samples, 1, 0, rate, from, to);
        assert!(level > LOUD, "sound at {spoken:?} ms: {level:.3}");
    }
    for silent in [(0, 460), (1_540, 1_960), (3_240, 3_960)] {
        let level = rms(&samples, 1, 0, rate, silent.0, silent.1);
        assert!(level < QUIET, "silence at {silent:?} ms: {level:.4}");
    }
}

#[test]
fn captions_show_each_message_while_its_audio_sounds() {
    let root = tempfile::tempdir().unwrap();
    let store = Store::new(root.path().join("conversations"));
    let id = record(&store);
    let destination = root.path().join("whole.vtt");
    store.export_captions(&id, &destination).unwrap();
    let captions = std::fs::read_to_string(&destination).unwrap();
    assert!(captions.starts_with("WEBVTT\n\n"), "{captions}");
    for cue in [
        "00:00:00.500 --> 00:00:01.500\n<v You>What is the capital of Portugal?\n",
        "00:00:02.000 --> 00:00:03.200\n<v Assistant>Lisbon, on the Tagus.\n",
        "00:00:05.000 --> 00:00:05.500\n<v Assistant>Madrid, in the\n",
        "00:00:05.300 --> 00:00:06.000\n<v You>Stop, thank you.\n",
    ] {
        assert!(captions.contains(cue), "{cue:?} in\n{captions}");
    }
}

#[test]
fn a_missing_turn_wav_leaves_a_gap_and_is_named() {
    let root = tempfile::tempdir().unwrap();
    let store = Store::new(root.path().join("conversations"));
    let id = record(&store);
    let missing = store
        .dir_of(&id)
        .unwrap()
        .join(walkie_store::turn_wav_file(1, Speaker::Assistant));
    std::fs::remove_file(&missing).unwrap();
    let destination = root.path().join("whole.wav");
    let exported = export(
        &store,
        &id,
        ExportChannels::Stereo,
        AudioFormat::Wav,
        &destination,
    );
    assert_eq!(exported.clips, 4);
    assert_eq!(
        exported.left_out,
        vec![walkie_store::turn_wav_file(1, Speaker::Assistant)]
    );
    let (spec, samples) = read_wav(&destination);
    assert!(rms(&samples, 2, 1, spec.sample_rate, 2_040, 3_160) < QUIET);
    assert!(rms(&samples, 2, 0, spec.sample_rate, 540, 1_460) > LOUD);
}

#[test]
fn a_turn_a_corrupt_journal_places_past_the_conversations_end_is_left_out_instead_of_its_silence() {
    let root = tempfile::tempdir().unwrap();
    let store = Store::new(root.path().join("conversations"));
    let id = record(&store);
    let dir = store.dir_of(&id).unwrap();
    let late = walkie_store::turn_wav_file(9, Speaker::User);
    std::fs::copy(
        dir.join(walkie_store::turn_wav_file(1, Speaker::User)),
        dir.join(&late),
    )
    .unwrap();
    // Its records are in time; only the WAV's start says five hours later.
    let closed_at = START_UNIX_MS + 6_500;
    let five_hours_later = START_UNIX_MS + 5 * 3_600_000;
    let mut journal = std::fs::OpenOptions::new()
        .append(true)
        .open(dir.join(walkie_store::JOURNAL_FILE))
        .unwrap();
    use std::io::Write;
    writeln!(
        journal,
        r#"{{"record":"turn_started","turn":9,"unix_ms":{closed_at},"opened_by":"user"}}
{{"record":"wav_closed","turn":9,"speaker":"user","sample_count":16000,"sample_rate_hz":16000,"source":"captured","unix_ms":{closed_at},"audio_start_unix_ms":{five_hours_later}}}"#
    )
    .unwrap();
    let destination = root.path().join("whole.wav");
    let exported = export(
        &store,
        &id,
        ExportChannels::Mixed,
        AudioFormat::Wav,
        &destination,
    );
    assert_eq!(exported.left_out, vec![late]);
    assert_eq!(exported.duration_ms, 6_000);
}
