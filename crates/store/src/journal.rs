//! The append-only journal: one JSON object per line, the conversation's source of truth.
//!
//! Why JSON lines, one `write` per line: a killed process can only leave the *last* line torn, so
//! the reader can tell "torn by a crash" (an unterminated last line) from "damaged" (a bad line in
//! the middle), drop the former silently and name the latter. Every record carries the caller's
//! wall time (`unix_ms`); the journal reads no clock. Audio never enters it: samples go to the
//! turn WAVs, and the journal records how many were kept ([`WavClosed`]).
//!
//! When a write fails (a full disk, a folder gone read-only), [`JournalFile`] cuts the file back
//! to its last whole line and keeps the records in memory; [`JournalFile::resume`] writes them
//! once the disk takes them again, so no record is lost and no torn line is left in the middle.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use walkie_session::{Speaker, StampedEvent, TokenTotals};

use crate::error::StoreError;

/// The journal's file name inside a conversation folder.
pub const JOURNAL_FILE: &str = "journal.jsonl";
/// The journal format written by this version.
pub const FORMAT_VERSION: u32 = 1;

/// The first record of every journal: what the rest needs to be read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConversationStarted {
    /// The journal format.
    pub format_version: u32,
    /// The conversation's id (its folder name).
    pub id: String,
    /// Wall time of the start.
    pub unix_ms: i64,
    /// The user's offset from UTC when the conversation started, for readable times.
    pub utc_offset_minutes: i32,
    /// Rate of the captured user audio.
    pub user_sample_rate_hz: u32,
    /// Rate of the assistant's played audio.
    pub assistant_sample_rate_hz: u32,
}

/// The conversation was opened again after its close, to go on in a new call (Continue in the
/// history). The records of the new part follow, numbered after the earlier turns, until the
/// next close. Older versions read this line as one they do not know and skip it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reopened {
    /// Wall time of the reopening.
    pub unix_ms: i64,
    /// The user's offset from UTC now (the start record keeps the first one).
    pub utc_offset_minutes: i32,
    /// Rate of the captured user audio from now on.
    pub user_sample_rate_hz: u32,
    /// Rate of the assistant's played audio from now on.
    pub assistant_sample_rate_hz: u32,
}

/// One response, or one transcription of the user's speech, was billed by the provider. Older
/// versions read this line as one they do not know and skip it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Billed {
    pub unix_ms: i64,
    pub tokens: TokenTotals,
    /// What they cost in US dollars at `model`'s prices; `None` when its prices are unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    /// The model whose prices were used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Set for a transcription: the seconds of speech it was billed (zero when it was billed
    /// by tokens). An older Walkie reads such a line as a response's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transcribed_seconds: Option<f64>,
}

/// One turn WAV was finished: how many samples it holds and where they came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WavClosed {
    /// The turn number (1-based; the `NNNN` of the file name).
    pub turn: u32,
    /// Whose audio.
    pub speaker: Speaker,
    /// Samples in the file.
    pub sample_count: u64,
    /// The file's sample rate.
    pub sample_rate_hz: u32,
    /// Where the samples came from.
    pub source: AudioSource,
    /// Wall time of the close.
    pub unix_ms: i64,
    /// Wall time of the file's first sample: when it was said (the user's: the arrival of its
    /// last sample less the file's length) or began to play (the assistant's: the arrival of
    /// its first delta). Journals before it lack it, and so does a recovered file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audio_start_unix_ms: Option<i64>,
}

/// Where a turn WAV's samples came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AudioSource {
    /// The captured microphone samples the app sent.
    Captured,
    /// The assistant deltas that were played (cut where a barge-in cut them).
    PlayedDeltas,
    /// The part's WAV snapshot: nothing was played.
    Snapshot,
    /// Recovery: whatever whole samples the file held after a crash.
    Recovered,
    /// No audio.
    Empty,
}

/// What a recovery found and mended.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Recovered {
    /// Wall time of the recovery.
    pub unix_ms: i64,
    /// Bytes of a torn last line that were dropped.
    pub torn_bytes_dropped: u64,
    /// Lines that were not records (kept in the file, skipped by readers).
    pub garbage_lines: u64,
    /// Messages that were open and were closed as interrupted.
    pub messages_closed: Vec<String>,
    /// Session parts that were open and are now closed as interrupted.
    pub parts_closed: Vec<u32>,
    /// Turns that had not ended.
    pub turns_closed: Vec<u32>,
}

/// One line of the journal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "record", rename_all = "snake_case")]
pub enum Record {
    /// Always first.
    Started(ConversationStarted),
    /// A session event (audio stripped), with the turn its part belongs to when it has one.
    Session {
        unix_ms: i64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        turn: Option<u32>,
        event: StampedEvent,
    },
    /// An AG-UI transcript event (its own `timestamp` is the wall time).
    Agui { event: walkie_agui::Event },
    /// A turn began: a user speech start, or an assistant part outside any open turn.
    TurnStarted {
        turn: u32,
        unix_ms: i64,
        opened_by: Speaker,
    },
    /// A turn WAV was finished.
    WavClosed(WavClosed),
    /// A turn ended (the model finished it, or a later turn superseded it).
    TurnEnded {
        turn: u32,
        unix_ms: i64,
        /// A part of the turn was cut (a barge-in, or a crash).
        interrupted: bool,
    },
    /// A recovery mended the folder after an unclean stop.
    Recovered(Recovered),
    /// The conversation was closed; nothing follows but a reopening.
    Closed { unix_ms: i64 },
    /// The closed conversation goes on ([`Reopened`]).
    Reopened(Reopened),
    /// The user took this message's recording back (Escape) before it was sent: it was
    /// never answered.
    MessageCancelled { message_id: String, unix_ms: i64 },
    /// A response was billed ([`Billed`]).
    Billed(Billed),
    /// The user named the conversation (the last one given is its title). It may follow the
    /// close: a closed conversation stays closed. Older versions skip it as a line they do not
    /// know.
    Titled { title: String, unix_ms: i64 },
}

impl Record {
    /// Whether this record must be on disk before the call that wrote it returns (a message end,
    /// a part end, a turn end, the start and the close).
    pub fn needs_sync(&self) -> bool {
        match self {
            Record::Started(_)
            | Record::TurnEnded { .. }
            | Record::WavClosed(_)
            | Record::Recovered(_)
            | Record::Closed { .. }
            | Record::Reopened(_)
            | Record::Titled { .. } => true,
            Record::Agui { event } => matches!(event, walkie_agui::Event::TextMessageEnd(_)),
            Record::Session { event, .. } => {
                matches!(event.event, walkie_session::SessionEvent::PartEnd(_))
            }
            Record::TurnStarted { .. } | Record::MessageCancelled { .. } | Record::Billed(_) => {
                false
            }
        }
    }

    /// The record as one journal line, newline included.
    pub fn to_line(&self, line: &mut Vec<u8>) {
        line.clear();
        serde_json::to_writer(&mut *line, self)
            .expect("a Record serializes: every field is a plain serde type with string keys");
        line.push(b'\n');
    }
}

/// A line of the journal that is not a record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GarbageLine {
    /// 1-based line number.
    pub line_number: usize,
    /// Why it was rejected.
    pub reason: String,
}

/// A journal as read: its records, the lines that were not records, and a torn tail.
#[derive(Debug, Clone, Default)]
pub struct ParsedJournal {
    /// The records, in order, with their 1-based line numbers.
    pub records: Vec<(usize, Record)>,
    /// Lines in the middle that are not records.
    pub garbage: Vec<GarbageLine>,
    /// Bytes after the last newline that do not form a record (a write cut by a crash).
    pub torn_tail_bytes: u64,
    /// Length of the journal without the torn tail (where a repair truncates it).
    pub intact_len_bytes: u64,
    /// The last line was a whole record missing only its newline.
    pub missing_final_newline: bool,
}

impl ParsedJournal {
    /// The start record, when the journal has one first.
    pub fn started(&self) -> Option<&ConversationStarted> {
        match self.records.first() {
            Some((_, Record::Started(started))) => Some(started),
            _ => None,
        }
    }

    /// Whether the last record is a clean close.
    pub fn closed_cleanly(&self) -> bool {
        matches!(
            self.records
                .iter()
                .rev()
                .find(|(_, record)| !matches!(record, Record::Titled { .. })),
            Some((_, Record::Closed { .. }))
        )
    }
}

/// Reads journal bytes. Never fails and never panics: bad lines are reported, not fatal.
pub fn parse_journal(bytes: &[u8]) -> ParsedJournal {
    let mut parsed = ParsedJournal::default();
    let mut line_start = 0usize;
    let mut line_number = 0usize;
    while line_start < bytes.len() {
        line_number += 1;
        let (line, terminated) = match bytes[line_start..].iter().position(|&b| b == b'\n') {
            Some(offset) => (&bytes[line_start..line_start + offset], true),
            None => (&bytes[line_start..], false),
        };
        let next_start = line_start + line.len() + usize::from(terminated);
        let trimmed = line.strip_suffix(b"\r").unwrap_or(line);
        if trimmed.iter().all(u8::is_ascii_whitespace) {
            if terminated {
                parsed.intact_len_bytes = next_start as u64;
            } else {
                parsed.torn_tail_bytes = line.len() as u64;
            }
            line_start = next_start;
            continue;
        }
        match parse_line(trimmed) {
            Ok(record) => {
                parsed.records.push((line_number, record));
                parsed.intact_len_bytes = next_start as u64;
                parsed.missing_final_newline = !terminated;
            }
            Err(reason) if terminated => {
                parsed.garbage.push(GarbageLine {
                    line_number,
                    reason,
                });
                parsed.intact_len_bytes = next_start as u64;
            }
            Err(_) => parsed.torn_tail_bytes = line.len() as u64,
        }
        line_start = next_start;
    }
    parsed
}

fn parse_line(line: &[u8]) -> Result<Record, String> {
    let text = std::str::from_utf8(line).map_err(|error| format!("not UTF-8 text: {error}"))?;
    serde_json::from_str::<Record>(text).map_err(|error| format!("not a journal record: {error}"))
}

/// Reads and parses the journal at `path`.
pub fn read_journal(path: &Path) -> Result<ParsedJournal, StoreError> {
    let bytes = std::fs::read(path).map_err(|error| StoreError::io("read", path, error))?;
    Ok(parse_journal(&bytes))
}

/// The open journal of a conversation being written; see the module docs.
#[derive(Debug)]
pub struct JournalFile {
    path: PathBuf,
    file: Option<File>,
    /// Length of the file up to its last whole line known to be written.
    written_len_bytes: u64,
    /// Lines not yet on disk because writing failed, oldest first.
    backlog: Vec<u8>,
    backlog_records: usize,
    /// Whether the backlog holds a record that must be synced once written.
    backlog_needs_sync: bool,
    /// A sync failed; the next write syncs.
    sync_owed: bool,
    line: Vec<u8>,
}

impl JournalFile {
    /// Creates a new journal (0600 on Unix); fails if one exists.
    pub fn create_new(path: &Path) -> Result<JournalFile, StoreError> {
        let file = crate::files::private_file_options()
            .create_new(true)
            .append(true)
            .open(path)
            .map_err(|error| StoreError::io("create", path, error))?;
        Ok(JournalFile {
            path: path.to_path_buf(),
            file: Some(file),
            written_len_bytes: 0,
            backlog: Vec::new(),
            backlog_records: 0,
            backlog_needs_sync: false,
            sync_owed: false,
            line: Vec::with_capacity(512),
        })
    }

    /// Opens an existing journal for appending after its last whole record, as
    /// [`parse_journal`] found it: a torn tail is cut off, and a last record that only lacks its
    /// newline gets one.
    pub fn open_for_repair(path: &Path, parsed: &ParsedJournal) -> Result<JournalFile, StoreError> {
        let file = crate::files::no_follow_options()
            .write(true)
            .open(path)
            .map_err(|error| StoreError::io("open", path, error))?;
        file.set_len(parsed.intact_len_bytes)
            .map_err(|error| StoreError::io("truncate the torn tail of", path, error))?;
        drop(file);
        let mut file = crate::files::no_follow_options()
            .append(true)
            .open(path)
            .map_err(|error| StoreError::io("open", path, error))?;
        let mut written_len_bytes = parsed.intact_len_bytes;
        if parsed.missing_final_newline {
            file.write_all(b"\n")
                .map_err(|error| StoreError::io("append to", path, error))?;
            written_len_bytes += 1;
        }
        Ok(JournalFile {
            path: path.to_path_buf(),
            file: Some(file),
            written_len_bytes,
            backlog: Vec::new(),
            backlog_records: 0,
            backlog_needs_sync: false,
            sync_owed: false,
            line: Vec::with_capacity(512),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Records waiting in memory because the disk refused them.
    pub fn backlog_records(&self) -> usize {
        self.backlog_records
    }

    /// Appends one record (one `write` of one whole line) and syncs when the record needs it.
    /// On failure the record is kept in the backlog and the error returned; call
    /// [`JournalFile::resume`] later.
    pub fn append(&mut self, record: &Record) -> Result<(), StoreError> {
        let mut line = std::mem::take(&mut self.line);
        record.to_line(&mut line);
        let result = self.append_line(&line, record.needs_sync());
        self.line = line;
        result
    }

    fn append_line(&mut self, line: &[u8], sync: bool) -> Result<(), StoreError> {
        if self.backlog_records > 0 || self.file.is_none() {
            self.backlog.extend_from_slice(line);
            self.backlog_records += 1;
            self.backlog_needs_sync |= sync;
            return Err(StoreError::Misuse(
                "journal writes are paused after a failure; waiting for resume",
            ));
        }
        if let Err(error) = self.write(line) {
            self.backlog.extend_from_slice(line);
            self.backlog_records += 1;
            self.backlog_needs_sync |= sync;
            self.cut_back();
            return Err(error);
        }
        if sync || self.sync_owed {
            self.sync()?;
        }
        Ok(())
    }

    /// One `write_all`; the written length only grows when all of it was written.
    fn write(&mut self, bytes: &[u8]) -> Result<(), StoreError> {
        let file = self.file.as_mut().ok_or(StoreError::Misuse(
            "the journal file is closed after a failure",
        ))?;
        file.write_all(bytes)
            .map_err(|error| StoreError::io("append to", &self.path, error))?;
        self.written_len_bytes += bytes.len() as u64;
        Ok(())
    }

    /// Cuts a partial write off, so later lines never follow half a line.
    fn cut_back(&mut self) {
        if let Some(file) = &self.file
            && file.set_len(self.written_len_bytes).is_err()
        {
            // The file cannot even be truncated: reopen on resume and truncate then.
            self.file = None;
        }
    }

    /// Writes the backlog, if any. Returns `Ok(())` when the journal is fully saved again.
    pub fn resume(&mut self) -> Result<(), StoreError> {
        if self.backlog_records == 0 {
            return if self.sync_owed { self.sync() } else { Ok(()) };
        }
        if self.file.is_none() {
            let file = crate::files::no_follow_options()
                .write(true)
                .open(&self.path)
                .map_err(|error| StoreError::io("reopen", &self.path, error))?;
            file.set_len(self.written_len_bytes)
                .map_err(|error| StoreError::io("truncate", &self.path, error))?;
            drop(file);
            let file = crate::files::no_follow_options()
                .append(true)
                .open(&self.path)
                .map_err(|error| StoreError::io("reopen", &self.path, error))?;
            self.file = Some(file);
        }
        let backlog = std::mem::take(&mut self.backlog);
        if let Err(error) = self.write(&backlog) {
            self.backlog = backlog;
            self.cut_back();
            return Err(error);
        }
        self.backlog_records = 0;
        if std::mem::take(&mut self.backlog_needs_sync) {
            self.sync()?;
        }
        Ok(())
    }

    /// Syncs the journal to disk. A failed sync is owed and retried with the next write.
    pub fn sync(&mut self) -> Result<(), StoreError> {
        let result = match &self.file {
            Some(file) => file
                .sync_data()
                .map_err(|error| StoreError::io("sync", &self.path, error)),
            None => Err(StoreError::Misuse(
                "the journal file is closed after a failure",
            )),
        };
        self.sync_owed = result.is_err();
        result
    }
}
