//! The recorder: one conversation being written, fed by the shell's worker thread.
//!
//! Why it derives no transcript itself: the journal must hold the transcript events that
//! `transcript.json` is assembled from, and they must be the very events the webview showed.
//! So the one [`TranscriptBridge`](walkie_session::transcript::TranscriptBridge) lives in the conversation machine; the recorder is given each
//! session event together with what the bridge made of it ([`BridgeNote`]) and the AG-UI events
//! it produced, and journals those (same ids, thread id and numbering as the webview).
//!
//! Turns are the bridge's exchanges, numbered by the bridge: the number in `turns/NNNN-*.wav` and
//! in the journal is the one in the message ids (`user-N`, `assistant-N`), because there is only
//! one numbering. The bridge decides (see [`walkie_session::transcript`] for its rules): a user
//! speech part opens a turn; an assistant part joins the user's turn until that turn has a reply,
//! and otherwise opens a turn of its own; a barge-in's cut reply stays in its turn and the new
//! question opens the next. The recorder keeps the files: a turn ends when the model completed it
//! ([`BridgeNote::TurnEnded`]) or a later turn superseded it (a part that opens a turn), and none
//! of its parts is open any more; then its WAVs close. A `RealtimeTurnComplete` with no reply in
//! progress (a response cancelled by a barge-in before it said anything) ends no turn, so the new
//! question's turn stays open for its reply.
//!
//! Audio: the user WAV gets what the shell passes to [`Recorder::user_audio`] (what was sent);
//! samples arriving before a user speech part starts are held (bounded, the pre-roll) and go at
//! the front of the next user WAV. The assistant WAV gets the played deltas, cut at
//! `interrupted_at_ms` when a barge-in cut the part; the part's snapshot is written only when no
//! delta of that part was played.
//!
//! Failures never stop the conversation: the model in memory goes on, records and samples wait
//! in memory, and saving is retried every `retry_interval_ms` (or on [`Recorder::retry_saving`]).

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use walkie_agui::{Event, TurnId};
use walkie_session::transcript::BridgeNote;
use walkie_session::{
    Part, PartDelta, PartIndex, Picture, SessionEvent, Speaker, SpeechPart, StampedEvent,
    UserContent,
};

use crate::civil_time::CivilTime;
use crate::conversation::{Conversation, turn_picture_file, turn_wav_file};
use crate::error::StoreError;
use crate::files::{
    TURNS_DIR, WRITING_MARKER_FILE, check_private_dir, create_private_dir, create_private_dir_all,
    create_private_file, sync_dir, write_atomically, write_transcripts,
};
use crate::journal::{
    AudioSource, Billed, ConversationStarted, FORMAT_VERSION, JOURNAL_FILE, JournalFile, Record,
    Reopened, WavClosed, read_journal,
};
use crate::recovery::{needs_recovery, recover_conversation};
use crate::wav::{TurnWav, UnsavedAudio};

/// How a conversation is recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecorderConfig {
    /// Rate of the samples passed to [`Recorder::user_audio`].
    pub user_sample_rate_hz: u32,
    /// Rate of the assistant's played deltas.
    pub assistant_sample_rate_hz: u32,
    /// The user's UTC offset, for readable times in `transcript.md` and the folder name.
    pub utc_offset_minutes: i32,
    /// User audio kept while no user turn is open (the pre-roll before a speech start).
    pub max_pending_user_audio_ms: u64,
    /// How often saving is retried after a failure.
    pub retry_interval_ms: i64,
    /// Audio held in memory, at most, while the disk refuses it (at the higher of the two
    /// rates); past it audio is dropped, and [`Recorder::dropped_audio_ms`] says how much.
    pub max_unsaved_audio_ms: u64,
    /// Whether turn WAVs are written ([`crate::Saved::TranscriptsOnly`] writes none).
    pub save_audio: bool,
}

impl Default for RecorderConfig {
    fn default() -> RecorderConfig {
        RecorderConfig {
            user_sample_rate_hz: 24_000,
            assistant_sample_rate_hz: walkie_session::DEFAULT_OUTPUT_SAMPLE_RATE_HZ,
            utc_offset_minutes: 0,
            max_pending_user_audio_ms: 2_000,
            retry_interval_ms: 1_000,
            max_unsaved_audio_ms: 120_000,
            save_audio: true,
        }
    }
}

#[derive(Debug)]
struct LiveTurn {
    has_user_part: bool,
    has_assistant_part: bool,
    /// Completed by the model or superseded by a later turn: it ends once no part is open.
    finished: bool,
    open_parts: u32,
    interrupted: bool,
    user_wav: Option<TurnWav>,
    assistant_wav: Option<TurnWav>,
    assistant_source: AudioSource,
    /// Per open assistant speech part: its first sample in the WAV and the samples its deltas
    /// added.
    part_audio: HashMap<PartIndex, (u64, u64)>,
    /// When the user WAV's last sample arrived: the file ends then.
    user_audio_end_unix_ms: Option<i64>,
    /// When the assistant WAV's first sample began to play (its first delta's arrival).
    assistant_audio_start_unix_ms: Option<i64>,
}

/// Whether the recorder's files are up to date.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SaveState {
    /// Everything handed over is on disk.
    Saving,
    /// Writing failed; the conversation goes on in memory and saving is retried.
    Failing,
}

/// One conversation being written; see the module docs.
#[derive(Debug)]
pub struct Recorder {
    dir: PathBuf,
    id: String,
    config: RecorderConfig,
    journal: JournalFile,
    model: Conversation,
    /// The AG-UI events of the session event being recorded, journaled after it.
    scratch: Vec<Event>,
    turns: BTreeMap<u32, LiveTurn>,
    /// The latest turn opened, while it is live.
    current_turn: Option<u32>,
    pending_user_audio: VecDeque<i16>,
    /// When the newest sample of `pending_user_audio` arrived.
    pending_user_audio_end_unix_ms: Option<i64>,
    /// WAVs of ended turns whose close failed; closed again on retry.
    unclosed_wavs: Vec<TurnWav>,
    /// Pictures whose file the disk refused, with where they go; written again on retry.
    unsaved_pictures: Vec<(PathBuf, Picture)>,
    /// The memory every WAV shares for audio the disk refused.
    unsaved_room: Arc<UnsavedAudio>,
    save_error: Option<StoreError>,
    last_retry_unix_ms: i64,
    transcripts_stale: bool,
    closed: bool,
    /// The first turn this recorder may write: the turns before it were saved by an earlier
    /// part of a reopened conversation, and their files are never written again.
    first_new_turn: u32,
}

impl Recorder {
    /// Starts a conversation in a new folder under `root` (created if needed).
    pub fn start(
        root: &Path,
        config: RecorderConfig,
        now_unix_ms: i64,
    ) -> Result<Recorder, StoreError> {
        create_private_dir_all(root).map_err(|error| StoreError::io("create", root, error))?;
        check_private_dir(root)?;
        let stamp = CivilTime::from_unix_ms(now_unix_ms, config.utc_offset_minutes).folder_stamp();
        let (id, dir) = create_unique_dir(root, &stamp)?;
        let turns = dir.join(TURNS_DIR);
        create_private_dir(&turns).map_err(|error| StoreError::io("create", &turns, error))?;
        let marker = dir.join(WRITING_MARKER_FILE);
        create_private_file(&marker).map_err(|error| StoreError::io("create", &marker, error))?;
        let mut journal = JournalFile::create_new(&dir.join(JOURNAL_FILE))?;
        let started = Record::Started(ConversationStarted {
            format_version: FORMAT_VERSION,
            id: id.clone(),
            unix_ms: now_unix_ms,
            utc_offset_minutes: config.utc_offset_minutes,
            user_sample_rate_hz: config.user_sample_rate_hz,
            assistant_sample_rate_hz: config.assistant_sample_rate_hz,
        });
        journal.append(&started)?;
        sync_dir(&dir)?;
        sync_dir(root)?;
        let mut model = Conversation::new();
        model.apply(&started);
        write_transcripts(&dir, &model)?;
        Ok(Recorder::writing(
            dir,
            id,
            config,
            journal,
            model,
            now_unix_ms,
        ))
    }

    /// Goes on recording the conversation in `dir` (Continue in the history): its journal is
    /// appended to after a `reopened` record, its records and files are kept as they are, and new
    /// turns are numbered after its last one. A conversation an unclean stop left open is
    /// repaired first. Until [`Recorder::close`] it is open again.
    pub fn reopen(
        dir: &Path,
        config: RecorderConfig,
        now_unix_ms: i64,
    ) -> Result<Recorder, StoreError> {
        if needs_recovery(dir) {
            recover_conversation(dir, now_unix_ms)?;
        }
        let journal_path = dir.join(JOURNAL_FILE);
        let parsed = read_journal(&journal_path)?;
        let Some(started) = parsed.started() else {
            return Err(StoreError::NotAConversation {
                path: dir.to_path_buf(),
                reason: "its journal does not begin with a start record".into(),
            });
        };
        let id = started.id.clone();
        let mut model = Conversation::from_records(parsed.records.iter().map(|(_, record)| record));
        for garbage in &parsed.garbage {
            model.note_problem(format!(
                "journal line {} skipped: {}",
                garbage.line_number, garbage.reason
            ));
        }
        let turns = dir.join(TURNS_DIR);
        fs::create_dir_all(&turns).map_err(|error| StoreError::io("create", &turns, error))?;
        // Marked before the journal changes: a stop from now on is repaired at the next start.
        let marker = dir.join(WRITING_MARKER_FILE);
        crate::files::create_private_file(&marker)
            .map_err(|error| StoreError::io("create", &marker, error))?;
        let mut journal = JournalFile::open_for_repair(&journal_path, &parsed)?;
        let reopened = Record::Reopened(Reopened {
            unix_ms: now_unix_ms,
            utc_offset_minutes: config.utc_offset_minutes,
            user_sample_rate_hz: config.user_sample_rate_hz,
            assistant_sample_rate_hz: config.assistant_sample_rate_hz,
        });
        journal.append(&reopened)?;
        sync_dir(dir)?;
        model.apply(&reopened);
        write_transcripts(dir, &model)?;
        let mut recorder =
            Recorder::writing(dir.to_path_buf(), id, config, journal, model, now_unix_ms);
        recorder.first_new_turn = recorder.model.last_turn().saturating_add(1);
        Ok(recorder)
    }

    fn writing(
        dir: PathBuf,
        id: String,
        config: RecorderConfig,
        journal: JournalFile,
        model: Conversation,
        now_unix_ms: i64,
    ) -> Recorder {
        Recorder {
            dir,
            id,
            config,
            journal,
            model,
            scratch: Vec::new(),
            turns: BTreeMap::new(),
            current_turn: None,
            pending_user_audio: VecDeque::new(),
            pending_user_audio_end_unix_ms: None,
            unclosed_wavs: Vec::new(),
            unsaved_pictures: Vec::new(),
            unsaved_room: UnsavedAudio::new(unsaved_samples(&config)),
            save_error: None,
            last_retry_unix_ms: now_unix_ms,
            transcripts_stale: false,
            closed: false,
            first_new_turn: 1,
        }
    }

    /// The conversation's id (its folder name).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The conversation's folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The conversation as recorded so far (in memory, whatever the disk did).
    pub fn conversation(&self) -> &Conversation {
        &self.model
    }

    /// Whether everything is saved.
    pub fn save_state(&self) -> SaveState {
        if self.save_error.is_some() {
            SaveState::Failing
        } else {
            SaveState::Saving
        }
    }

    /// Audio dropped because the disk refused it for longer than
    /// [`RecorderConfig::max_unsaved_audio_ms`] could hold (at the higher of the two rates).
    pub fn dropped_audio_ms(&self) -> u64 {
        self.unsaved_room.dropped_samples() * 1000 / u64::from(higher_rate_hz(&self.config))
    }

    /// The latest saving failure, while saving is failing.
    pub fn save_problem(&self) -> Option<&StoreError> {
        self.save_error.as_ref()
    }

    /// Records one session event observed at wall time `unix_ms`, with what the transcript
    /// bridge noted about it and the AG-UI events it produced
    /// ([`TranscriptBridge::on_event_noted`](walkie_session::transcript::TranscriptBridge::on_event_noted)). Never fails: see [`Recorder::save_problem`].
    pub fn record(
        &mut self,
        event: &StampedEvent,
        note: BridgeNote,
        transcript: &[Event],
        unix_ms: i64,
    ) {
        if self.closed {
            return;
        }
        self.retry_if_due(unix_ms);
        // The AG-UI events wait in `scratch` until the session event is journaled, so the
        // journal keeps cause before effect.
        self.scratch.clear();
        self.scratch.extend_from_slice(transcript);
        match (&event.event, note) {
            (
                SessionEvent::PartStart(start),
                BridgeNote::PartInTurn {
                    turn,
                    speaker,
                    opens_turn,
                    ..
                },
            ) => {
                let turn = turn_number(turn);
                if opens_turn {
                    self.begin_turn(turn, speaker, unix_ms);
                }
                self.journal_session(event, Some(turn), unix_ms);
                self.part_started(turn, start.index, &start.part, speaker);
            }
            (SessionEvent::PartDelta(delta), BridgeNote::PartInTurn { turn, .. }) => {
                let turn = turn_number(turn);
                self.journal_session(event, Some(turn), unix_ms);
                if let PartDelta::Speech(speech) = &delta.delta
                    && let Some(chunk) = &speech.audio_chunk
                    && speech.speaker == Speaker::Assistant
                    && self.config.save_audio
                {
                    self.assistant_audio(turn, delta.index, chunk.samples(), unix_ms);
                }
            }
            (SessionEvent::PartEnd(end), BridgeNote::PartInTurn { turn, .. }) => {
                let turn = turn_number(turn);
                if let Part::Speech(speech) = &end.part
                    && speech.speaker == Speaker::Assistant
                    && self.config.save_audio
                {
                    self.finish_assistant_audio(turn, end.index, speech, unix_ms);
                }
                self.journal_session(event, Some(turn), unix_ms);
                self.part_ended(turn, &end.part, unix_ms);
            }
            (
                SessionEvent::EnqueuedMessages(delivered),
                BridgeNote::MessageOpensTurn { turn, speaker },
            ) => {
                // A typed message: its turn begins and has no user WAV; the pictures it showed
                // are files of the turn (the journal describes them, without their bytes).
                let turn = turn_number(turn);
                self.begin_turn(turn, speaker, unix_ms);
                let pictures = delivered
                    .messages
                    .iter()
                    .flat_map(|message| &message.parts)
                    .filter_map(|part| match part {
                        UserContent::Image(picture) => Some(picture.clone()),
                        UserContent::Text { .. } => None,
                    });
                for (index, picture) in pictures.enumerate() {
                    let path = self.dir.join(turn_picture_file(turn, index + 1));
                    self.save_picture(path, picture);
                }
                self.journal_session(event, Some(turn), unix_ms);
            }
            (SessionEvent::TurnComplete, BridgeNote::TurnEnded { turn }) => {
                let turn = turn_number(turn);
                self.journal_session(event, Some(turn), unix_ms);
                if let Some(live) = self.turns.get_mut(&turn) {
                    live.finished = true;
                }
                self.end_turn_if_done(turn, unix_ms);
            }
            _ => self.journal_session(event, None, unix_ms),
        }
    }

    /// Records AG-UI events that no session event caused: the messages the bridge closed when
    /// the conversation ended ([`TranscriptBridge::finish`](walkie_session::transcript::TranscriptBridge::finish)).
    pub fn transcript(&mut self, transcript: &[Event], unix_ms: i64) {
        if self.closed {
            return;
        }
        self.retry_if_due(unix_ms);
        self.scratch.clear();
        self.scratch.extend_from_slice(transcript);
        self.journal_transcript_events();
    }

    /// The user took the recording of message `message_id` back before it was sent.
    pub fn message_cancelled(&mut self, message_id: &str, unix_ms: i64) {
        if self.closed {
            return;
        }
        self.retry_if_due(unix_ms);
        self.append(Record::MessageCancelled {
            message_id: message_id.to_owned(),
            unix_ms,
        });
        self.transcripts_stale = true;
        self.write_transcripts_if_stale();
    }

    /// A response was billed: saved, and `transcript.json`'s sum says so.
    pub fn billed(&mut self, billed: Billed) {
        if self.closed {
            return;
        }
        self.retry_if_due(billed.unix_ms);
        self.append(Record::Billed(billed));
        self.transcripts_stale = true;
        self.write_transcripts_if_stale();
    }

    /// The model named the conversation: the name is journaled as a rename is, unless it is
    /// not one History would take (then it is a problem of the conversation, never fatal).
    pub fn titled(&mut self, title: &str, unix_ms: i64) {
        if self.closed {
            return;
        }
        self.retry_if_due(unix_ms);
        match crate::library::title_from(title) {
            Ok(title) => self.append(Record::Titled { title, unix_ms }),
            Err(error) => self
                .model
                .note_problem(format!("a title was not kept: {error}")),
        }
    }

    /// Captured user audio, exactly what was sent (mono, `user_sample_rate_hz`).
    pub fn user_audio(&mut self, samples: &[i16], unix_ms: i64) {
        if self.closed || !self.config.save_audio {
            return;
        }
        self.retry_if_due(unix_ms);
        let target = self
            .current_turn
            .and_then(|turn| self.turns.get_mut(&turn))
            .filter(|live| live.has_user_part && !live.finished)
            .and_then(|live| {
                let wav = live.user_wav.as_mut()?;
                Some((wav, &mut live.user_audio_end_unix_ms))
            });
        match target {
            Some((wav, end_unix_ms)) => {
                *end_unix_ms = Some(unix_ms);
                if let Err(error) = wav.write(samples) {
                    self.note_failure(error);
                }
            }
            None => {
                self.pending_user_audio_end_unix_ms = Some(unix_ms);
                self.pending_user_audio.extend(samples.iter().copied());
                let max_samples = (self.config.max_pending_user_audio_ms
                    * u64::from(self.config.user_sample_rate_hz)
                    / 1000) as usize;
                let excess = self.pending_user_audio.len().saturating_sub(max_samples);
                self.pending_user_audio.drain(..excess);
            }
        }
    }

    /// Retries saving now (the recorder also retries by itself every `retry_interval_ms`).
    /// `Ok` means everything handed over is on disk.
    pub fn retry_saving(&mut self, unix_ms: i64) -> Result<(), &StoreError> {
        self.last_retry_unix_ms = unix_ms;
        self.try_resume();
        match &self.save_error {
            None => Ok(()),
            Some(error) => Err(error),
        }
    }

    /// Closes the conversation: open parts are cut, open turns end, the journal gets its close
    /// record and the transcripts are written (the messages the bridge closed at the end come
    /// first, through [`Recorder::transcript`]). On a saving failure the error is returned and
    /// `close` can be called again.
    pub fn close(&mut self, unix_ms: i64) -> Result<(), StoreError> {
        if !self.closed {
            let open: Vec<u32> = self.turns.keys().copied().collect();
            for turn in open {
                if let Some(live) = self.turns.get_mut(&turn) {
                    live.interrupted |= live.open_parts > 0;
                    live.finished = true;
                    live.open_parts = 0;
                }
                self.end_turn(turn, unix_ms);
            }
            self.append(Record::Closed { unix_ms });
            self.closed = true;
            self.transcripts_stale = true;
        }
        self.try_resume();
        if let Some(error) = self.save_error.take() {
            self.save_error = Some(StoreError::Misuse("close is still owed after a failure"));
            return Err(error);
        }
        let marker = self.dir.join(WRITING_MARKER_FILE);
        match fs::remove_file(&marker) {
            Ok(()) => {}
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(error) => return Err(StoreError::io("remove", &marker, error)),
        }
        Ok(())
    }

    /// Bookkeeping of a part the bridge placed in `turn`: its count, and the WAV it will write.
    fn part_started(&mut self, turn: u32, index: PartIndex, part: &Part, speaker: Speaker) {
        let Some(live) = self.turns.get_mut(&turn) else {
            return;
        };
        live.open_parts += 1;
        match speaker {
            Speaker::User => live.has_user_part = true,
            Speaker::Assistant => live.has_assistant_part = true,
        }
        if speaker == Speaker::User && live.user_wav.is_none() && self.config.save_audio {
            let path = self.dir.join(turn_wav_file(turn, Speaker::User));
            let (mut wav, created) = TurnWav::create(
                path,
                self.config.user_sample_rate_hz,
                self.unsaved_room.clone(),
            );
            let pending: Vec<i16> = self.pending_user_audio.drain(..).collect();
            let written = wav.write(&pending);
            live.user_wav = Some(wav);
            let pending_end_unix_ms = self.pending_user_audio_end_unix_ms.take();
            if !pending.is_empty() {
                live.user_audio_end_unix_ms = pending_end_unix_ms;
            }
            if let Err(error) = created.and(written) {
                self.note_failure(error);
            }
        }
        if let Part::Speech(speech) = part
            && speech.speaker == Speaker::Assistant
            && let Some(live) = self.turns.get_mut(&turn)
        {
            let start = live.assistant_wav.as_ref().map_or(0, TurnWav::sample_count);
            live.part_audio.insert(index, (start, 0));
        }
    }

    fn part_ended(&mut self, turn: u32, part: &Part, unix_ms: i64) {
        if let Some(live) = self.turns.get_mut(&turn) {
            live.open_parts = live.open_parts.saturating_sub(1);
            if let Part::Speech(speech) = part {
                live.interrupted |= speech.interrupted_at_ms.is_some();
            }
        }
        self.end_turn_if_done(turn, unix_ms);
    }

    fn assistant_audio(&mut self, turn: u32, index: PartIndex, samples: &[i16], unix_ms: i64) {
        let rate = self.config.assistant_sample_rate_hz;
        let dir = &self.dir;
        let room = &self.unsaved_room;
        let Some(live) = self.turns.get_mut(&turn) else {
            return;
        };
        let mut failure = None;
        let wav = live.assistant_wav.get_or_insert_with(|| {
            let (wav, created) = TurnWav::create(
                dir.join(turn_wav_file(turn, Speaker::Assistant)),
                rate,
                room.clone(),
            );
            failure = created.err();
            wav
        });
        if let Err(error) = wav.write(samples) {
            failure = Some(error);
        }
        live.assistant_source = AudioSource::PlayedDeltas;
        live.assistant_audio_start_unix_ms.get_or_insert(unix_ms);
        if let Some((_, played)) = live.part_audio.get_mut(&index) {
            *played += samples.len() as u64;
        }
        if let Some(error) = failure {
            self.note_failure(error);
        }
    }

    /// At an assistant speech part's end: cut the played audio where a barge-in cut it, or write
    /// the snapshot when nothing of the part was played.
    fn finish_assistant_audio(
        &mut self,
        turn: u32,
        index: PartIndex,
        speech: &SpeechPart,
        unix_ms: i64,
    ) {
        let rate = self.config.assistant_sample_rate_hz;
        let dir = self.dir.clone();
        let room = self.unsaved_room.clone();
        let Some(live) = self.turns.get_mut(&turn) else {
            return;
        };
        let (start, played) = live.part_audio.remove(&index).unwrap_or((0, 0));
        let mut failure = None;
        if played > 0 {
            if let (Some(cut_ms), Some(wav)) = (speech.interrupted_at_ms, &mut live.assistant_wav) {
                let keep = start + cut_ms * u64::from(wav.sample_rate_hz()) / 1000;
                failure = wav.cut_to(keep).err();
            }
        } else if let Some(snapshot) = &speech.audio {
            let samples = snapshot.samples();
            let limit = speech.interrupted_at_ms.map_or(samples.len(), |cut_ms| {
                let cut = cut_ms * u64::from(snapshot.sample_rate_hz()) / 1000;
                samples
                    .len()
                    .min(usize::try_from(cut).unwrap_or(usize::MAX))
            });
            let wav = live.assistant_wav.get_or_insert_with(|| {
                let (wav, created) = TurnWav::create(
                    dir.join(turn_wav_file(turn, Speaker::Assistant)),
                    snapshot.sample_rate_hz(),
                    room.clone(),
                );
                failure = created.err();
                wav
            });
            if wav.sample_rate_hz() == snapshot.sample_rate_hz() {
                if let Err(error) = wav.write(&samples[..limit]) {
                    failure = Some(error);
                }
                // Nothing of it played: it is placed as if it had played as it arrived.
                let length_ms = limit as u64 * 1000 / u64::from(snapshot.sample_rate_hz().max(1));
                live.assistant_audio_start_unix_ms.get_or_insert(
                    unix_ms.saturating_sub(i64::try_from(length_ms).unwrap_or(i64::MAX)),
                );
                if live.assistant_source != AudioSource::PlayedDeltas {
                    live.assistant_source = AudioSource::Snapshot;
                }
            } else {
                failure = Some(StoreError::Wav {
                    path: wav.path().to_path_buf(),
                    message: format!(
                        "a {} Hz snapshot cannot join a {} Hz turn WAV; it was not saved",
                        snapshot.sample_rate_hz(),
                        rate
                    ),
                });
            }
        }
        if let Some(error) = failure {
            self.note_failure(error);
        }
    }

    /// A part opened `turn`: every earlier turn is superseded (it ends once its parts are done).
    /// A turn number an earlier part of a reopened conversation used is not opened again: its
    /// saved WAVs and turn record stay as they are, and the new part's audio is not saved.
    fn begin_turn(&mut self, turn: u32, opened_by: Speaker, unix_ms: i64) {
        if turn < self.first_new_turn {
            return;
        }
        let earlier: Vec<u32> = self
            .turns
            .range(..turn)
            .map(|(&number, _)| number)
            .collect();
        for previous in earlier {
            if let Some(live) = self.turns.get_mut(&previous) {
                live.finished = true;
            }
            self.end_turn_if_done(previous, unix_ms);
        }
        self.turns.insert(
            turn,
            LiveTurn {
                has_user_part: false,
                has_assistant_part: false,
                finished: false,
                open_parts: 0,
                interrupted: false,
                user_wav: None,
                assistant_wav: None,
                assistant_source: AudioSource::Empty,
                part_audio: HashMap::new(),
                user_audio_end_unix_ms: None,
                assistant_audio_start_unix_ms: None,
            },
        );
        self.current_turn = Some(turn);
        self.append(Record::TurnStarted {
            turn,
            unix_ms,
            opened_by,
        });
    }

    fn end_turn_if_done(&mut self, turn: u32, unix_ms: i64) {
        if self
            .turns
            .get(&turn)
            .is_some_and(|live| live.finished && live.open_parts == 0)
        {
            self.end_turn(turn, unix_ms);
        }
    }

    fn end_turn(&mut self, turn: u32, unix_ms: i64) {
        let Some(live) = self.turns.remove(&turn) else {
            return;
        };
        if self.current_turn == Some(turn) {
            self.current_turn = None;
        }
        let wavs = [
            (
                Speaker::User,
                live.user_wav,
                AudioSource::Captured,
                AudioAnchor::EndsAt(live.user_audio_end_unix_ms),
            ),
            (
                Speaker::Assistant,
                live.assistant_wav,
                live.assistant_source,
                AudioAnchor::StartsAt(live.assistant_audio_start_unix_ms),
            ),
        ];
        for (speaker, wav, source, anchor) in wavs {
            let Some(mut wav) = wav else { continue };
            let sample_count = wav.sample_count();
            let sample_rate_hz = wav.sample_rate_hz();
            let audio_start_unix_ms = anchor.start_unix_ms(sample_count, sample_rate_hz);
            let source = if sample_count == 0 {
                AudioSource::Empty
            } else {
                source
            };
            if let Err(error) = wav.close() {
                self.note_failure(error);
                self.unclosed_wavs.push(wav);
            }
            self.append(Record::WavClosed(WavClosed {
                turn,
                speaker,
                sample_count,
                sample_rate_hz,
                source,
                unix_ms,
                audio_start_unix_ms,
            }));
        }
        self.append(Record::TurnEnded {
            turn,
            unix_ms,
            interrupted: live.interrupted,
        });
        self.transcripts_stale = true;
        self.write_transcripts_if_stale();
    }

    fn journal_transcript_events(&mut self) {
        let events = std::mem::take(&mut self.scratch);
        for event in &events {
            self.append(Record::Agui {
                event: event.clone(),
            });
        }
        self.scratch = events;
        self.scratch.clear();
    }

    /// Journals the session event, then the AG-UI events the bridge derived from it.
    fn journal_session(&mut self, event: &StampedEvent, turn: Option<u32>, unix_ms: i64) {
        if let Some(event) = without_audio(event) {
            self.append(Record::Session {
                unix_ms,
                turn,
                event: event.into_owned(),
            });
        }
        self.journal_transcript_events();
    }

    fn append(&mut self, record: Record) {
        self.model.apply(&record);
        if let Err(error) = self.journal.append(&record) {
            self.note_failure(error);
        }
    }

    /// Writes a picture's file; one the disk refuses waits in memory and is written again with
    /// the rest ([`Recorder::retry_saving`]).
    fn save_picture(&mut self, path: PathBuf, picture: Picture) {
        if let Err(error) = write_atomically(&path, picture.jpeg()) {
            self.note_failure(error);
            self.unsaved_pictures.push((path, picture));
        }
    }

    fn note_failure(&mut self, error: StoreError) {
        // A paused journal reports misuse for every queued record; keep the real cause.
        if matches!(error, StoreError::Misuse(_)) && self.save_error.is_some() {
            return;
        }
        self.save_error = Some(error);
    }

    fn retry_if_due(&mut self, unix_ms: i64) {
        if self.save_error.is_some()
            && unix_ms - self.last_retry_unix_ms >= self.config.retry_interval_ms
        {
            self.last_retry_unix_ms = unix_ms;
            self.try_resume();
        }
    }

    fn write_transcripts_if_stale(&mut self) {
        if self.transcripts_stale {
            match write_transcripts(&self.dir, &self.model) {
                Ok(()) => self.transcripts_stale = false,
                Err(error) => self.note_failure(error),
            }
        }
    }

    fn try_resume(&mut self) {
        if self.save_error.is_none() && !self.transcripts_stale {
            return;
        }
        let mut failure = self.journal.resume().err();
        for live in self.turns.values_mut() {
            for wav in [&mut live.user_wav, &mut live.assistant_wav]
                .into_iter()
                .flatten()
            {
                if let Err(error) = wav.resume() {
                    failure = Some(error);
                }
            }
        }
        for (path, picture) in std::mem::take(&mut self.unsaved_pictures) {
            if let Err(error) = write_atomically(&path, picture.jpeg()) {
                failure = Some(error);
                self.unsaved_pictures.push((path, picture));
            }
        }
        let mut still_unclosed = Vec::new();
        for mut wav in std::mem::take(&mut self.unclosed_wavs) {
            if let Err(error) = wav.close() {
                failure = Some(error);
                still_unclosed.push(wav);
            }
        }
        self.unclosed_wavs = still_unclosed;
        self.save_error = failure;
        self.write_transcripts_if_stale();
    }
}

/// The event as journaled: without audio samples, and a speech delta that appends text without
/// the whole transcript it repeats (the deltas add up to it; a revision, which appends nothing,
/// keeps it). So the journal grows with the transcript, not with its square. `None` for an
/// audio-only delta.
fn without_audio(event: &StampedEvent) -> Option<Cow<'_, StampedEvent>> {
    match &event.event {
        SessionEvent::PartDelta(delta) => match &delta.delta {
            PartDelta::Speech(speech) => {
                let appends = speech
                    .transcript_delta
                    .as_deref()
                    .is_some_and(|appended| !appended.is_empty());
                let repeats_whole = appends && speech.transcript.is_some();
                if speech.audio_chunk.is_none() && !repeats_whole {
                    return Some(Cow::Borrowed(event));
                }
                if speech.transcript_delta.is_none() && speech.transcript.is_none() {
                    return None;
                }
                let mut stripped = event.clone();
                if let SessionEvent::PartDelta(delta) = &mut stripped.event
                    && let PartDelta::Speech(speech) = &mut delta.delta
                {
                    speech.audio_chunk = None;
                    if repeats_whole {
                        speech.transcript = None;
                    }
                }
                Some(Cow::Owned(stripped))
            }
            _ => Some(Cow::Borrowed(event)),
        },
        SessionEvent::PartEnd(end) => match &end.part {
            Part::Speech(speech) if speech.audio.is_some() => {
                let mut stripped = event.clone();
                if let SessionEvent::PartEnd(end) = &mut stripped.event
                    && let Part::Speech(speech) = &mut end.part
                {
                    speech.audio = None;
                }
                Some(Cow::Owned(stripped))
            }
            _ => Some(Cow::Borrowed(event)),
        },
        _ => Some(Cow::Borrowed(event)),
    }
}

/// What the recorder knows of when a WAV sounded: the arrival of its last sample (captured
/// audio comes in real time) or of its first (played deltas come faster than they play).
enum AudioAnchor {
    EndsAt(Option<i64>),
    StartsAt(Option<i64>),
}

impl AudioAnchor {
    fn start_unix_ms(&self, sample_count: u64, sample_rate_hz: u32) -> Option<i64> {
        match *self {
            AudioAnchor::StartsAt(start) => start,
            AudioAnchor::EndsAt(end) => {
                let length_ms = u128::from(sample_count) * 1000 / u128::from(sample_rate_hz.max(1));
                end.map(|end| end.saturating_sub(i64::try_from(length_ms).unwrap_or(i64::MAX)))
            }
        }
    }
}

/// The store's number for a bridge exchange: the `NNNN` of its WAVs and the `N` of its message
/// ids. The journal keeps turns as `u32`; four billion exchanges in one conversation cannot
/// happen, and saturating keeps even that from panicking.
fn turn_number(turn: TurnId) -> u32 {
    u32::try_from(turn.0).unwrap_or(u32::MAX)
}

/// Creates `root/stamp`, or `root/stamp-2`, `-3`, … if taken.
fn create_unique_dir(root: &Path, stamp: &str) -> Result<(String, PathBuf), StoreError> {
    for attempt in 1..=1000u32 {
        let id = if attempt == 1 {
            stamp.to_owned()
        } else {
            format!("{stamp}-{attempt}")
        };
        let dir = root.join(&id);
        match create_private_dir(&dir) {
            Ok(()) => return Ok((id, dir)),
            Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(error) => return Err(StoreError::io("create", &dir, error)),
        }
    }
    Err(StoreError::io(
        "create",
        &root.join(stamp),
        std::io::Error::new(
            std::io::ErrorKind::AlreadyExists,
            "1000 conversations started in the same second",
        ),
    ))
}

/// The higher of the two audio rates (never zero).
fn higher_rate_hz(config: &RecorderConfig) -> u32 {
    config
        .user_sample_rate_hz
        .max(config.assistant_sample_rate_hz)
        .max(1)
}

/// [`RecorderConfig::max_unsaved_audio_ms`] in samples.
fn unsaved_samples(config: &RecorderConfig) -> usize {
    let samples = config.max_unsaved_audio_ms * u64::from(higher_rate_hz(config)) / 1000;
    usize::try_from(samples).unwrap_or(usize::MAX)
}
