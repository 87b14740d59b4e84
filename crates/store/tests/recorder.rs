//! The recorder writes a conversation as the design says: a journal, both transcripts, one WAV
//! per side and turn; bad input gives typed errors; a full or read-only disk pauses saving
//! without stopping the conversation, and saving resumes.

mod support;

use std::fs;
use std::path::Path;
use std::process::Command;

use support::scripted_conversation::{
    BARGE_IN_TURN, Feed, SNAPSHOT_TURN, START_UNIX_MS, assistant_text, config, expected_after,
    script, user_text,
};
use walkie_agui::{Consumer, Mode};
use walkie_session::Speaker;
use walkie_store::files::{TRANSCRIPT_JSON_FILE, TRANSCRIPT_MD_FILE, WRITING_MARKER_FILE};
use walkie_store::journal::{JOURNAL_FILE, read_journal};
use walkie_store::wav::read_wav_samples;
use walkie_store::{
    Recorder, SaveState, Store, StoreError, needs_recovery, repair_wav, turn_wav_file,
};

/// Plays the whole script into a recorder; returns it (open), its feed and every AG-UI event the
/// feed produced.
fn play(store: &Store) -> (Recorder, Feed, Vec<walkie_agui::Event>) {
    play_with(store, config())
}

fn play_with(
    store: &Store,
    config: walkie_store::RecorderConfig,
) -> (Recorder, Feed, Vec<walkie_agui::Event>) {
    let mut recorder = store
        .start(config, START_UNIX_MS)
        .expect("the recorder starts");
    let mut feed = Feed::new(&recorder);
    let mut events = Vec::new();
    for step in script() {
        match &step.step {
            support::scripted_conversation::Step::Event(event) => {
                events.extend(feed.event(&mut recorder, event, step.unix_ms))
            }
            support::scripted_conversation::Step::UserAudio(samples) => {
                recorder.user_audio(samples, step.unix_ms)
            }
        }
    }
    (recorder, feed, events)
}

#[test]
fn a_recorded_conversation_has_its_journal_transcripts_and_turn_wavs() {
    let root = tempfile::tempdir().expect("a temporary root");
    let store = Store::new(root.path());
    let (mut recorder, mut feed, mut events) = play(&store);
    let dir = recorder.dir().to_path_buf();
    assert!(
        dir.join(WRITING_MARKER_FILE).exists(),
        "marked while writing"
    );
    events.extend(
        feed.close(&mut recorder, START_UNIX_MS + 60_000)
            .expect("the close saves"),
    );
    assert_eq!(recorder.save_state(), SaveState::Saving);
    assert!(
        !dir.join(WRITING_MARKER_FILE).exists(),
        "unmarked after a clean close"
    );
    assert!(!needs_recovery(&dir));

    // The AG-UI events handed to the webview pass the strict verifier.
    let mut consumer = Consumer::new(Mode::Strict);
    for event in &events {
        consumer
            .push(event)
            .expect("the recorder's AG-UI events are a valid stream");
    }

    let conversation = store
        .open_strict(recorder.id())
        .expect("the journal reads back");
    let texts: Vec<(&str, &str)> = conversation
        .messages()
        .iter()
        .map(|message| (message.id(), message.content().unwrap_or_default()))
        .collect();
    let mut expected_texts = Vec::new();
    for turn in 1..=5u32 {
        expected_texts.push((format!("user-{turn}"), user_text(turn)));
        expected_texts.push((format!("assistant-{turn}"), assistant_text(turn)));
    }
    let expected_texts: Vec<(&str, &str)> = expected_texts
        .iter()
        .map(|(id, text)| (id.as_str(), text.as_str()))
        .collect();
    assert_eq!(
        texts, expected_texts,
        "each user message sits before its reply"
    );

    let full = expected_after(&script(), script().len());
    for turn in conversation.turns() {
        assert!(turn.ended_unix_ms.is_some());
        assert_eq!(turn.interrupted, turn.turn == BARGE_IN_TURN);
        for speaker in [Speaker::User, Speaker::Assistant] {
            let (rate, samples) = read_wav_samples(&dir.join(turn_wav_file(turn.turn, speaker)))
                .expect("every turn WAV opens");
            assert_eq!(rate, 24_000);
            assert_eq!(
                samples,
                full.wav(turn.turn, speaker)
                    .expect("the script wrote this WAV"),
                "turn {} {speaker:?}: pre-roll first, cut at the barge-in, snapshot when nothing played",
                turn.turn
            );
        }
    }
    let snapshot_turn = conversation.turn(SNAPSHOT_TURN).expect("the snapshot turn");
    assert_eq!(
        snapshot_turn.assistant_wav.as_ref().map(|wav| wav.source),
        Some(walkie_store::AudioSource::Snapshot)
    );
    let cut_turn = conversation.turn(BARGE_IN_TURN).expect("the barge-in turn");
    assert_eq!(
        cut_turn.assistant_wav.as_ref().map(|wav| wav.sample_count),
        Some(2_400)
    );

    let markdown = fs::read_to_string(dir.join(TRANSCRIPT_MD_FILE)).expect("transcript.md");
    assert_eq!(markdown, conversation.render_markdown(true));
    assert!(markdown.starts_with("# Conversation of 2023-11-14 22:13:20\n"));
    assert!(markdown.contains(
        "**User** · 22:13:20 · [audio](turns/0001-user.wav)\n\nQuestion number 1, please answer.\n"
    ));
    assert!(
        markdown.contains("**Assistant** · ")
            && markdown.contains(" · interrupted · [audio](turns/0003-assistant.wav)")
    );
    let json: serde_json::Value =
        serde_json::from_slice(&fs::read(dir.join(TRANSCRIPT_JSON_FILE)).expect("transcript.json"))
            .expect("transcript.json is JSON");
    assert_eq!(json["messages"][0]["role"], "user");
    assert_eq!(json["messages"][1]["content"], assistant_text(1));
    assert_eq!(json["turns"][2]["interruptedAtMs"], 100);
    assert_eq!(json["turns"][0]["userWav"]["sampleCount"], 480 * 7);

    // Audio stays out of the journal.
    let journal = fs::read_to_string(dir.join(JOURNAL_FILE)).expect("journal");
    assert!(!journal.contains("audio_chunk") && !journal.contains("audio/wav"));
}

#[test]
fn a_conversation_saved_without_audio_has_its_transcripts_and_no_wav() {
    let root = tempfile::tempdir().unwrap();
    let store = Store::new(root.path());
    let config = walkie_store::RecorderConfig {
        save_audio: false,
        ..config()
    };
    let (mut recorder, mut feed, _) = play_with(&store, config);
    let dir = recorder.dir().to_path_buf();
    feed.close(&mut recorder, START_UNIX_MS + 60_000)
        .expect("the close saves");
    let wavs: Vec<_> = fs::read_dir(dir.join("turns"))
        .map(|entries| {
            entries
                .map(|entry| entry.unwrap().file_name())
                .filter(|name| name.to_string_lossy().ends_with(".wav"))
                .collect()
        })
        .unwrap_or_default();
    assert!(wavs.is_empty(), "no turn WAV: {wavs:?}");
    let markdown = fs::read_to_string(dir.join(TRANSCRIPT_MD_FILE)).unwrap();
    assert!(markdown.contains(&user_text(1)), "{markdown}");
    assert!(markdown.contains(&assistant_text(2)), "{markdown}");
    assert!(
        !markdown.contains("[audio]"),
        "no link to audio: {markdown}"
    );
    let conversation = store.open(recorder.id()).unwrap();
    assert!(
        conversation
            .turns()
            .all(|turn| turn.user_wav.is_none() && turn.assistant_wav.is_none()),
        "the journal names no WAV"
    );
    assert!(
        conversation.problems().is_empty(),
        "{:?}",
        conversation.problems()
    );
}

#[test]
fn garbage_lines_in_a_journal_are_named_and_skipped_never_fatal() {
    let root = tempfile::tempdir().expect("a temporary root");
    let store = Store::new(root.path());
    let (mut recorder, mut feed, _) = play(&store);
    feed.close(&mut recorder, START_UNIX_MS + 60_000)
        .expect("the close saves");
    let journal_path = recorder.dir().join(JOURNAL_FILE);
    let mut lines: Vec<String> = fs::read_to_string(&journal_path)
        .expect("journal")
        .lines()
        .map(str::to_owned)
        .collect();
    lines.insert(3, "{\"record\":\"no_such_record\"}".into());
    lines.insert(5, "\u{1}\u{2} not json".into());
    fs::write(&journal_path, lines.join("\n") + "\n").expect("damage the journal");

    match store.open_strict(recorder.id()) {
        Err(StoreError::JournalGarbage {
            line_number,
            reason,
            ..
        }) => {
            assert_eq!(line_number, 4);
            assert!(reason.contains("not a journal record"), "{reason}");
        }
        other => panic!("expected a JournalGarbage error, got {other:?}"),
    }
    let conversation = store
        .open(recorder.id())
        .expect("the lenient reader skips garbage");
    assert_eq!(
        conversation.problems().len(),
        2,
        "{:?}",
        conversation.problems()
    );
    assert_eq!(
        conversation.messages().len(),
        10,
        "no message was lost to the garbage"
    );
}

#[test]
fn a_torn_or_truncated_wav_is_repaired_to_the_samples_present() {
    let root = tempfile::tempdir().expect("a temporary root");
    let store = Store::new(root.path());
    let (mut recorder, mut feed, _) = play(&store);
    feed.close(&mut recorder, START_UNIX_MS + 60_000)
        .expect("the close saves");
    let path = recorder.dir().join(turn_wav_file(1, Speaker::User));
    let (_, original) = read_wav_samples(&path).expect("the WAV opens");

    // Cut mid-sample: the odd byte goes, the header follows the data.
    let file = fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .expect("open");
    file.set_len(44 + 2 * 1000 + 1).expect("truncate");
    drop(file);
    let repair = repair_wav(&path, 24_000).expect("a truncated WAV is repairable");
    assert_eq!(repair.sample_count, 1000);
    let (_, samples) = read_wav_samples(&path).expect("the repaired WAV opens");
    assert_eq!(samples, original[..1000]);

    // Torn inside the header: an empty WAV at the conversation's rate.
    fs::write(&path, b"RIFF\x00\x00").expect("tear the header");
    assert_eq!(
        repair_wav(&path, 24_000).expect("repairable").sample_count,
        0
    );
    assert_eq!(read_wav_samples(&path).expect("opens").1.len(), 0);

    // Not a WAV at all: refused, untouched.
    let bytes = vec![b'x'; 100];
    fs::write(&path, &bytes).expect("overwrite");
    match repair_wav(&path, 24_000) {
        Err(StoreError::UnrepairableWav { reason, .. }) => assert!(reason.contains("RIFF")),
        other => panic!("expected UnrepairableWav, got {other:?}"),
    }
    assert_eq!(fs::read(&path).expect("read"), bytes);
}

#[test]
fn a_missing_turns_folder_pauses_wav_saving_and_it_resumes_with_every_sample() {
    let root = tempfile::tempdir().expect("a temporary root");
    let store = Store::new(root.path());
    let mut recorder = store
        .start(config(), START_UNIX_MS)
        .expect("the recorder starts");
    let mut feed = Feed::new(&recorder);
    let turns = recorder.dir().join("turns");
    fs::remove_dir(&turns).expect("remove turns/");
    fs::write(&turns, b"in the way").expect("a file where the folder was");
    let script = script();
    let half = script.len() / 2;
    for step in &script[..half] {
        feed.step(&mut recorder, step, step.unix_ms);
    }
    assert_eq!(recorder.save_state(), SaveState::Failing);
    let problem = recorder.save_problem().expect("the failure is reported");
    assert!(
        problem.to_string().contains("turns"),
        "names the path: {problem}"
    );
    assert!(
        recorder.conversation().messages().len() >= 2,
        "the conversation goes on in memory"
    );

    fs::remove_file(&turns).expect("clear the way");
    fs::create_dir(&turns).expect("turns/ again");
    recorder
        .retry_saving(script[half].unix_ms)
        .expect("saving resumes once the folder is back");
    for step in &script[half..] {
        feed.step(&mut recorder, step, step.unix_ms);
    }
    feed.close(&mut recorder, START_UNIX_MS + 60_000)
        .expect("the close saves");
    let full = expected_after(&script, script.len());
    for ((turn, speaker), samples) in &full.wavs {
        let (_, on_disk) = read_wav_samples(&recorder.dir().join(turn_wav_file(*turn, *speaker)))
            .expect("every WAV was written after the resume");
        assert_eq!(&on_disk, samples, "turn {turn} {speaker:?}");
    }
}

/// A tiny tmpfs, to make the disk really full or really read-only. Needs the right to mount
/// (root here and in CI); returns `None` where that is refused.
struct TinyDisk {
    mount_point: tempfile::TempDir,
}

impl TinyDisk {
    fn mount(size_kib: u32) -> Option<TinyDisk> {
        let mount_point = tempfile::tempdir().ok()?;
        let status = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size_kib}k"), "tmpfs"])
            .arg(mount_point.path())
            .stderr(std::process::Stdio::null())
            .status()
            .ok()?;
        status.success().then_some(TinyDisk { mount_point })
    }

    fn path(&self) -> &Path {
        self.mount_point.path()
    }

    fn remount(&self, option: &str) {
        // Only called on a disk with no file open for writing.
        let status = Command::new("mount")
            .args(["-o", &format!("remount,{option}")])
            .arg(self.path())
            .status()
            .expect("mount runs");
        assert!(status.success(), "remount {option}");
    }
}

impl Drop for TinyDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.mount_point.path()).status();
    }
}

fn running_as_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|output| output.stdout.starts_with(b"0\n"))
        .unwrap_or(false)
}

#[test]
fn a_full_disk_pauses_saving_until_space_is_free_and_a_read_only_folder_is_a_clear_error() {
    let Some(disk) = TinyDisk::mount(1024) else {
        assert!(
            !running_as_root(),
            "root must be able to mount the tmpfs this test needs"
        );
        eprintln!("not root: the full-disk test needs a tmpfs; covered by the turns/ test only");
        return;
    };
    let store = Store::new(disk.path().join("conversations"));
    let mut recorder = store
        .start(config(), START_UNIX_MS)
        .expect("the recorder starts");
    let mut feed = Feed::new(&recorder);
    let script = script();
    let third = script.len() / 3;
    let play = |recorder: &mut Recorder,
                feed: &mut Feed,
                steps: &[support::scripted_conversation::ScriptStep]| {
        for step in steps {
            feed.step(recorder, step, step.unix_ms);
        }
    };
    play(&mut recorder, &mut feed, &script[..third]);
    assert_eq!(recorder.save_state(), SaveState::Saving);

    // Fill the disk.
    let filler = disk.path().join("filler");
    let mut filling = fs::File::create(&filler).expect("filler");
    let block = vec![0u8; 4096];
    while std::io::Write::write_all(&mut filling, &block).is_ok() {}
    drop(filling);
    play(&mut recorder, &mut feed, &script[third..2 * third]);
    let problem = recorder.save_problem().expect("a full disk is reported");
    assert!(problem.is_disk_full(), "typed as a full disk: {problem:?}");
    assert!(
        problem
            .to_string()
            .contains(disk.path().to_str().expect("utf-8 path"))
    );
    fs::remove_file(&filler).expect("free the disk");
    recorder
        .retry_saving(script[2 * third].unix_ms)
        .expect("saving resumes once space is free");
    assert_eq!(
        recorder.dropped_audio_ms(),
        0,
        "the room held every refused sample"
    );

    play(&mut recorder, &mut feed, &script[2 * third..]);
    feed.close(&mut recorder, START_UNIX_MS + 60_000)
        .expect("the close saves");

    // A read-only folder (a remount is refused while files are open for writing, so the
    // read-only disk is a second one): starting there is a typed error naming the folder.
    let read_only = TinyDisk::mount(64).expect("a second tmpfs mounts where the first did");
    read_only.remount("ro");
    match Store::new(read_only.path().join("conversations")).start(config(), START_UNIX_MS) {
        Err(error) => {
            assert!(error.is_read_only(), "typed as read-only: {error:?}");
            assert!(error.to_string().contains("conversations"), "{error}");
        }
        Ok(_) => panic!("a read-only folder cannot take a conversation"),
    }

    let conversation = store
        .open_strict(recorder.id())
        .expect("no torn line in the middle");
    assert_eq!(
        conversation.messages().len(),
        10,
        "every message reached the disk"
    );
    let full = expected_after(&script, script.len());
    for ((turn, speaker), samples) in &full.wavs {
        let (_, on_disk) = read_wav_samples(&recorder.dir().join(turn_wav_file(*turn, *speaker)))
            .expect("every WAV opens");
        assert_eq!(&on_disk, samples, "turn {turn} {speaker:?}");
    }
    let journal = read_journal(&recorder.dir().join(JOURNAL_FILE)).expect("journal");
    assert!(journal.garbage.is_empty() && journal.closed_cleanly());
}

/// A conversation where the user really speaks over the reply: the new question starts while the
/// first reply is still playing, then that reply is cut and its response completes.
#[test]
fn a_barge_in_saves_the_cut_reply_in_its_turn_and_the_new_question_in_the_next_with_the_same_numbers()
 {
    use std::sync::Arc;
    use walkie_session::{
        AudioChunk, Part, PartDelta, PartDeltaEvent, PartEndEvent, PartIndex, PartStartEvent,
        SessionEvent, SpeechPart, StampedEvent,
    };

    let samples = |value: i16, count: usize| vec![value; count];
    let start = |index: u32, speaker: Speaker| {
        SessionEvent::PartStart(PartStartEvent {
            index: PartIndex(index),
            part: Part::speech(speaker),
        })
    };
    let played = |index: u32, value: i16| {
        SessionEvent::PartDelta(PartDeltaEvent {
            index: PartIndex(index),
            delta: PartDelta::assistant_audio(AudioChunk::from_samples(samples(value, 480))),
        })
    };
    let end = |index: u32, speaker: Speaker, text: &str, cut_ms: Option<u64>| {
        SessionEvent::PartEnd(PartEndEvent {
            index: PartIndex(index),
            part: Part::Speech(SpeechPart {
                speaker,
                transcript: Some(Arc::from(text)),
                audio: None,
                interrupted_at_ms: cut_ms,
            }),
        })
    };
    enum Do {
        Event(SessionEvent),
        Audio(Vec<i16>),
    }
    let mut steps = vec![
        Do::Audio(samples(1, 480)),
        Do::Event(start(0, Speaker::User)),
        Do::Audio(samples(1, 480)),
        Do::Event(end(0, Speaker::User, "Tell me a story.", None)),
        Do::Event(start(1, Speaker::Assistant)),
    ];
    steps.extend((0..10).map(|_| Do::Event(played(1, 3))));
    steps.extend([
        Do::Event(start(2, Speaker::User)),
        Do::Audio(samples(2, 960)),
        Do::Event(end(1, Speaker::Assistant, "Once upon a time", Some(50))),
        Do::Event(SessionEvent::TurnComplete),
        Do::Audio(samples(2, 480)),
        Do::Event(end(2, Speaker::User, "A shorter one.", None)),
        Do::Event(start(3, Speaker::Assistant)),
        Do::Event(played(3, 4)),
        Do::Event(end(3, Speaker::Assistant, "The end.", None)),
        Do::Event(SessionEvent::TurnComplete),
    ]);

    let root = tempfile::tempdir().expect("a temporary root");
    let store = Store::new(root.path());
    let mut recorder = store
        .start(config(), START_UNIX_MS)
        .expect("the recorder starts");
    let mut feed = Feed::new(&recorder);
    let mut events = Vec::new();
    for (seq, step) in steps.into_iter().enumerate() {
        let unix_ms = START_UNIX_MS + 20 * (seq as i64 + 1);
        match step {
            Do::Event(event) => {
                let stamped = StampedEvent {
                    seq: seq as u64,
                    at_ms: 20 * (seq as u64 + 1),
                    event,
                };
                events.extend(feed.event(&mut recorder, &stamped, unix_ms));
            }
            Do::Audio(samples) => recorder.user_audio(&samples, unix_ms),
        }
    }
    events.extend(
        feed.close(&mut recorder, START_UNIX_MS + 10_000)
            .expect("the close saves"),
    );

    let mut consumer = Consumer::new(Mode::Strict);
    for event in &events {
        consumer
            .push(event)
            .expect("the recorder's AG-UI events are a valid stream");
    }
    let conversation = store
        .open_strict(recorder.id())
        .expect("the journal reads back");
    let texts: Vec<(&str, &str)> = conversation
        .messages()
        .iter()
        .map(|message| (message.id(), message.content().unwrap_or_default()))
        .collect();
    assert_eq!(
        texts,
        [
            ("user-1", "Tell me a story."),
            ("assistant-1", "Once upon a time"),
            ("user-2", "A shorter one."),
            ("assistant-2", "The end."),
        ]
    );
    let wav = |turn: u32, speaker: Speaker| {
        read_wav_samples(&recorder.dir().join(turn_wav_file(turn, speaker)))
            .expect("the turn WAV opens")
            .1
    };
    assert_eq!(
        wav(1, Speaker::User),
        samples(1, 960),
        "pre-roll and speech"
    );
    assert_eq!(
        wav(1, Speaker::Assistant),
        samples(3, 1_200),
        "the story, cut at 50 ms, stays in turn 1"
    );
    assert_eq!(wav(2, Speaker::User), samples(2, 1_440), "the new question");
    assert_eq!(wav(2, Speaker::Assistant), samples(4, 480), "its reply");
    let turns: Vec<(u32, bool, bool)> = conversation
        .turns()
        .map(|turn| (turn.turn, turn.interrupted, turn.ended_unix_ms.is_some()))
        .collect();
    assert_eq!(turns, [(1, true, true), (2, false, true)]);
}

/// The bytes of the journal after one reply of `reply_chars` characters, streamed ten at a
/// time, each delta carrying the whole transcript so far as the session gives it.
fn journal_bytes_after_a_reply_of(reply_chars: usize) -> u64 {
    use std::sync::Arc;
    use walkie_session::{
        Part, PartDelta, PartDeltaEvent, PartIndex, PartStartEvent, SessionEvent, StampedEvent,
    };
    let root = tempfile::tempdir().expect("a temporary folder");
    let store = Store::new(root.path());
    let mut recorder = store
        .start(config(), START_UNIX_MS)
        .expect("the recorder starts");
    let mut feed = Feed::new(&recorder);
    let reply = PartIndex(0);
    let stamped = |seq: u64, event: SessionEvent| StampedEvent {
        seq,
        at_ms: seq,
        event,
    };
    feed.event(
        &mut recorder,
        &stamped(
            1,
            SessionEvent::PartStart(PartStartEvent {
                index: reply,
                part: Part::speech(Speaker::Assistant),
            }),
        ),
        START_UNIX_MS,
    );
    let mut so_far = String::new();
    for (seq, _) in (2..).zip(0..reply_chars / 10) {
        so_far.push_str("abcdefghi ");
        let delta = PartDelta::transcript(
            Speaker::Assistant,
            Arc::from("abcdefghi "),
            Arc::from(so_far.as_str()),
        );
        let event = SessionEvent::PartDelta(PartDeltaEvent {
            index: reply,
            delta,
        });
        feed.event(
            &mut recorder,
            &stamped(seq, event),
            START_UNIX_MS + seq as i64,
        );
    }
    feed.close(&mut recorder, START_UNIX_MS + 1_000_000)
        .expect("the conversation closes");
    fs::metadata(recorder.dir().join(JOURNAL_FILE))
        .expect("the journal")
        .len()
}

#[test]
fn the_journal_grows_with_the_transcript_not_with_its_square() {
    let short = journal_bytes_after_a_reply_of(10_000);
    let long = journal_bytes_after_a_reply_of(20_000);
    let growth = long as f64 / short as f64;
    assert!(
        growth < 2.2,
        "twice the reply made the journal {growth:.2} times as large ({short} → {long} bytes)"
    );
    assert!(
        long < 20_000 * 200,
        "{long} bytes of journal for 20,000 characters of reply"
    );
}

/// Every folder and file under `dir`, `dir` included.
#[cfg(unix)]
fn tree(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut found = vec![dir.to_path_buf()];
    for entry in fs::read_dir(dir).expect("a readable folder") {
        let path = entry.expect("a readable entry").path();
        if path.is_dir() {
            found.extend(tree(&path));
        } else {
            found.push(path);
        }
    }
    found
}

#[cfg(unix)]
#[test]
fn everything_a_recording_creates_is_the_users_alone() {
    use std::os::unix::fs::PermissionsExt;
    let scratch = tempfile::tempdir().expect("a temporary folder");
    // The data folder does not exist yet: the store creates it, and its parent.
    let parent = scratch.path().join("data");
    let root = parent.join("walkie");
    let store = Store::new(&root);
    let (mut recorder, mut feed, _) = play(&store);
    let dir = recorder.dir().to_path_buf();
    let mode = |path: &Path| fs::metadata(path).expect("it exists").permissions().mode() & 0o777;
    assert_eq!(mode(&dir.join(WRITING_MARKER_FILE)), 0o600, "the marker");
    feed.close(&mut recorder, START_UNIX_MS + 60_000)
        .expect("the close saves");
    let created = tree(&parent);
    assert!(
        created
            .iter()
            .any(|path| path.ends_with(TRANSCRIPT_MD_FILE))
            && created
                .iter()
                .any(|path| path.extension().is_some_and(|ext| ext == "wav")),
        "{created:?}"
    );
    for path in created {
        let expected = if path.is_dir() { 0o700 } else { 0o600 };
        assert_eq!(mode(&path), expected, "{}", path.display());
    }
}

#[cfg(unix)]
#[test]
fn a_data_folder_every_user_can_change_is_refused_before_anything_is_saved_or_restated() {
    use std::os::unix::fs::PermissionsExt;
    let root = tempfile::tempdir().expect("a temporary root");
    let store = Store::new(root.path());
    // A conversation saved while the folder was the user's alone.
    let (mut recorder, mut feed, _) = play(&store);
    feed.close(&mut recorder, START_UNIX_MS + 60_000)
        .expect("the close saves");
    let id = recorder.id().to_owned();
    drop(recorder);

    fs::set_permissions(root.path(), fs::Permissions::from_mode(0o777)).expect("chmod");
    let before: Vec<_> = fs::read_dir(root.path()).expect("the folder").collect();
    let refused = store.start(config(), START_UNIX_MS + 120_000);
    assert!(
        matches!(
            &refused,
            Err(StoreError::OthersCanWrite { mode: 0o777, .. })
        ),
        "{:?}",
        refused.as_ref().err()
    );
    let Err(refusal) = refused else {
        panic!("the folder was used")
    };
    let said = refusal.to_string();
    assert!(said.contains("every user of this computer"), "{said}");
    assert!(
        said.contains("choose another data folder in Settings"),
        "{said}"
    );
    let after: Vec<_> = fs::read_dir(root.path()).expect("the folder").collect();
    assert_eq!(before.len(), after.len(), "nothing was created in it");
    assert!(
        matches!(
            store.continue_conversation(&id, None, config(), START_UNIX_MS + 130_000),
            Err(StoreError::OthersCanWrite { .. })
        ),
        "its conversations are not restated to the model either"
    );

    // A shared folder with the sticky bit keeps each user to their own files: accepted, as is
    // one its group may write.
    fs::set_permissions(root.path(), fs::Permissions::from_mode(0o1777)).expect("chmod");
    assert!(store.start(config(), START_UNIX_MS + 140_000).is_ok());
    fs::set_permissions(root.path(), fs::Permissions::from_mode(0o770)).expect("chmod");
    assert!(store.start(config(), START_UNIX_MS + 150_000).is_ok());
}
