//! The library: every conversation under one root folder — list, open, delete, retention,
//! export, recovery at start, and the recorder for a new conversation or one that goes on.
//!
//! Why a root passed in: the shell owns settings. It resolves the folder (the setting, else
//! [`default_data_dir`]: `WALKIE_DATA_DIR`, else the platform data directory) and hands the
//! store `…/conversations`; tests hand it a temporary folder. Nothing here reads a clock: "now"
//! is an argument wherever age matters.

use std::fs;
use std::path::{Path, PathBuf};

use crate::conversation::Conversation;
use crate::error::StoreError;
use crate::export::{AudioExport, ExportedAudio, render_webvtt, write_audio};
use crate::files::{WRITING_MARKER_FILE, write_atomically};
use crate::journal::{JOURNAL_FILE, JournalFile, Record, read_journal};
use crate::recorder::{Recorder, RecorderConfig};
use crate::recovery::{RecoveryReport, needs_recovery, recover_conversation};

/// The environment variable that overrides the data directory.
pub const DATA_DIR_ENV: &str = "WALKIE_DATA_DIR";
/// The longest name a conversation takes.
pub const MAX_TITLE_CHARS: usize = 80;
/// Words of a conversation shown in the library listing.
pub const FIRST_WORDS: usize = 12;
const MS_PER_DAY: i64 = 86_400_000;

/// The app's data directory: `$WALKIE_DATA_DIR` when set and not empty, else the platform data
/// directory (`$XDG_DATA_HOME/walkie` or `~/.local/share/walkie` on Linux).
pub fn default_data_dir() -> Result<PathBuf, StoreError> {
    data_dir_from(std::env::var_os(DATA_DIR_ENV), dirs::data_dir())
}

/// [`default_data_dir`] with its inputs given (for tests).
pub fn data_dir_from(
    env_override: Option<std::ffi::OsString>,
    platform_data_dir: Option<PathBuf>,
) -> Result<PathBuf, StoreError> {
    match env_override {
        Some(dir) if !dir.is_empty() => Ok(PathBuf::from(dir)),
        _ => platform_data_dir
            .map(|dir| dir.join("walkie"))
            .ok_or(StoreError::NoDataDir),
    }
}

/// The conversations folder inside a data directory.
pub fn conversations_dir(data_dir: &Path) -> PathBuf {
    data_dir.join("conversations")
}

/// One line of the library listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConversationSummary {
    pub id: String,
    pub dir: PathBuf,
    pub started_unix_ms: i64,
    pub duration_ms: u64,
    pub turn_count: usize,
    /// The name the user gave it, else the first words said (`…` when there are more).
    pub title: String,
    /// Still being written, or left by an unclean stop and not yet recovered.
    pub open: bool,
    /// What of it could not be read, as a sentence; `None` when all of it could.
    pub damaged: Option<String>,
}

/// How long conversations are kept: forever, or for a number of days after each started.
/// Written `null` or the number of days, in the settings file and to the webview alike; zero
/// days cannot be written (it would delete every conversation as it ends).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(into = "Option<u32>", try_from = "Option<u32>")]
pub enum Retention {
    /// Nothing is deleted on the user's behalf.
    #[default]
    Forever,
    /// Conversations that started more than this many days ago are deleted.
    KeepDays(std::num::NonZeroU32),
}

/// A retention of zero days was asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("a retention must keep conversations for at least one day")]
pub struct ZeroRetentionDays;

impl Retention {
    /// How many days conversations are kept; `None`: forever.
    pub fn days(self) -> Option<u32> {
        match self {
            Retention::Forever => None,
            Retention::KeepDays(days) => Some(days.get()),
        }
    }
}

impl From<Retention> for Option<u32> {
    fn from(retention: Retention) -> Self {
        retention.days()
    }
}

impl TryFrom<Option<u32>> for Retention {
    type Error = ZeroRetentionDays;

    fn try_from(days: Option<u32>) -> Result<Self, ZeroRetentionDays> {
        match days {
            None => Ok(Retention::Forever),
            Some(days) => std::num::NonZeroU32::new(days)
                .map(Retention::KeepDays)
                .ok_or(ZeroRetentionDays),
        }
    }
}

/// What of a conversation is saved: the user's choice, in force from the next conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Saved {
    /// The journal, the transcripts, each turn's WAVs and pictures.
    #[default]
    Everything,
    /// All of it but the audio: no turn WAV is written.
    TranscriptsOnly,
    /// No folder at all: the conversation leaves nothing on disk.
    Nothing,
}

/// The conversations under one root folder; see the module docs.
#[derive(Debug, Clone)]
pub struct Store {
    root: PathBuf,
}

impl Store {
    /// The store at `root` (created when the first conversation starts).
    pub fn new(root: impl Into<PathBuf>) -> Store {
        Store { root: root.into() }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Starts recording a new conversation.
    pub fn start(&self, config: RecorderConfig, now_unix_ms: i64) -> Result<Recorder, StoreError> {
        Recorder::start(&self.root, config, now_unix_ms)
    }

    /// Goes on recording conversation `id` (Continue in the history; see [`Recorder::reopen`]):
    /// same folder, earlier records and files kept, new turns numbered after its last one.
    /// Never `current`, which a recorder is writing.
    pub fn continue_conversation(
        &self,
        id: &str,
        current: Option<&str>,
        config: RecorderConfig,
        now_unix_ms: i64,
    ) -> Result<Recorder, StoreError> {
        let dir = self.dir_of(id)?;
        if Some(id) == current {
            return Err(StoreError::BeingRecorded { id: id.to_owned() });
        }
        self.check_private(&dir)?;
        Recorder::reopen(&dir, config, now_unix_ms)
    }

    /// Refuses the conversation folder `dir` when it, or the data folder, can be changed by
    /// every user of the computer ([`crate::files::check_private_dir`]): a conversation read
    /// from there to be continued is given to the model as the user's words.
    pub fn check_private(&self, dir: &Path) -> Result<(), StoreError> {
        crate::files::check_private_dir(&self.root)?;
        crate::files::check_private_dir(dir)
    }

    /// Repairs every conversation left by an unclean stop (call once at start, before
    /// [`Store::start`]). `current` is skipped. One folder's failure does not stop the others.
    pub fn recover(
        &self,
        now_unix_ms: i64,
        current: Option<&str>,
    ) -> Result<Vec<Result<RecoveryReport, StoreError>>, StoreError> {
        let mut reports = Vec::new();
        // A repair rewrites files: not in a folder others can change (or plant links in).
        if self.root.is_dir() {
            crate::files::check_private_dir(&self.root)?;
        }
        for (id, dir) in self.folders()? {
            if Some(id.as_str()) == current || !needs_recovery(&dir) {
                continue;
            }
            reports.push(recover_conversation(&dir, now_unix_ms));
        }
        Ok(reports)
    }

    /// Every conversation, newest first. Folders without a journal are not conversations and
    /// are skipped; one whose journal cannot be read at all is listed last, marked, named by
    /// its folder; one read in part is listed as far as it reads, marked.
    pub fn list(&self) -> Result<Vec<ConversationSummary>, StoreError> {
        let mut summaries = Vec::new();
        for (id, dir) in self.folders()? {
            let journal = dir.join(JOURNAL_FILE);
            if !journal.is_file() {
                continue;
            }
            let unreadable = |reason: String| ConversationSummary {
                title: id.clone(),
                id: id.clone(),
                dir: dir.clone(),
                started_unix_ms: i64::MIN,
                duration_ms: 0,
                turn_count: 0,
                open: false,
                damaged: Some(reason),
            };
            let parsed = match read_journal(&journal) {
                Ok(parsed) => parsed,
                Err(error) => {
                    summaries.push(unreadable(format!("its journal cannot be read: {error}")));
                    continue;
                }
            };
            if parsed.started().is_none() {
                summaries.push(unreadable(
                    "its journal does not begin with a start record".to_owned(),
                ));
                continue;
            }
            let conversation =
                Conversation::from_records(parsed.records.iter().map(|(_, record)| record));
            summaries.push(ConversationSummary {
                damaged: damage(&parsed, &conversation),
                id,
                open: dir.join(WRITING_MARKER_FILE).exists() || !conversation.is_closed(),
                started_unix_ms: conversation.started_unix_ms(),
                duration_ms: conversation.duration_ms(),
                turn_count: conversation.turns().count(),
                title: conversation.display_title(FIRST_WORDS),
                dir,
            });
        }
        summaries.sort_by(|a, b| (b.started_unix_ms, &b.id).cmp(&(a.started_unix_ms, &a.id)));
        Ok(summaries)
    }

    /// The folder of a conversation.
    pub fn dir_of(&self, id: &str) -> Result<PathBuf, StoreError> {
        validate_id(id)?;
        let dir = self.root.join(id);
        if !dir.join(JOURNAL_FILE).is_file() {
            return Err(StoreError::UnknownConversation {
                id: id.to_owned(),
                data_dir: self.root.clone(),
            });
        }
        Ok(dir)
    }

    /// Reads one conversation. Bad journal lines are skipped and listed in
    /// [`Conversation::problems`]; use [`Store::open_strict`] to refuse them.
    pub fn open(&self, id: &str) -> Result<Conversation, StoreError> {
        let dir = self.dir_of(id)?;
        let parsed = read_journal(&dir.join(JOURNAL_FILE))?;
        if parsed.started().is_none() {
            return Err(StoreError::NotAConversation {
                path: dir,
                reason: "its journal does not begin with a start record".into(),
            });
        }
        let mut conversation =
            Conversation::from_records(parsed.records.iter().map(|(_, record)| record));
        for garbage in &parsed.garbage {
            conversation.note_problem(format!(
                "journal line {} skipped: {}",
                garbage.line_number, garbage.reason
            ));
        }
        Ok(conversation)
    }

    /// Reads one conversation, failing on the first journal line that is not a record.
    pub fn open_strict(&self, id: &str) -> Result<Conversation, StoreError> {
        let dir = self.dir_of(id)?;
        let journal = dir.join(JOURNAL_FILE);
        let parsed = read_journal(&journal)?;
        if let Some(garbage) = parsed.garbage.first() {
            return Err(StoreError::JournalGarbage {
                path: journal,
                line_number: garbage.line_number,
                reason: garbage.reason.clone(),
            });
        }
        self.open(id)
    }

    /// Deletes a conversation (never `current`).
    pub fn delete(&self, id: &str, current: Option<&str>) -> Result<(), StoreError> {
        if Some(id) == current {
            return Err(StoreError::CurrentConversation { id: id.to_owned() });
        }
        let dir = self.dir_of(id)?;
        fs::remove_dir_all(&dir).map_err(|error| StoreError::io("delete", &dir, error))
    }

    /// Names conversation `id`: `title` made one line (line breaks and tabs become spaces,
    /// other control characters go) and trimmed, at most [`MAX_TITLE_CHARS`]. Saved in its
    /// journal, so it survives whatever is built from it (the search index, the listing); a
    /// closed conversation stays closed. Not `current`: its journal is being written. Returns
    /// the title as saved.
    pub fn rename(
        &self,
        id: &str,
        title: &str,
        current: Option<&str>,
        now_unix_ms: i64,
    ) -> Result<String, StoreError> {
        if Some(id) == current {
            return Err(StoreError::RenamingCurrent { id: id.to_owned() });
        }
        let dir = self.dir_of(id)?;
        let title = title_from(title)?;
        let path = dir.join(JOURNAL_FILE);
        let parsed = read_journal(&path)?;
        let mut journal = JournalFile::open_for_repair(&path, &parsed)?;
        journal.append(&Record::Titled {
            title: title.clone(),
            unix_ms: now_unix_ms,
        })?;
        Ok(title)
    }

    /// Applies a retention: deletes the conversations that started longer ago than it keeps
    /// them, never `current`. Returns the ids deleted.
    pub fn apply_retention(
        &self,
        retention: Retention,
        now_unix_ms: i64,
        current: Option<&str>,
    ) -> Result<Vec<String>, StoreError> {
        let expiring = self.expiring(retention, now_unix_ms, current)?;
        for id in &expiring {
            self.delete(id, current)?;
        }
        Ok(expiring)
    }

    /// The conversations `retention` would delete now (never `current`), newest first: what
    /// [`Self::apply_retention`] deletes, told before it does.
    pub fn expiring(
        &self,
        retention: Retention,
        now_unix_ms: i64,
        current: Option<&str>,
    ) -> Result<Vec<String>, StoreError> {
        let Some(days) = retention.days() else {
            return Ok(Vec::new());
        };
        Ok(self
            .list()?
            .into_iter()
            .filter(|summary| {
                now_unix_ms - summary.started_unix_ms > i64::from(days) * MS_PER_DAY
                    && Some(summary.id.as_str()) != current
            })
            .map(|summary| summary.id)
            .collect())
    }

    /// Copies a conversation's folder (journal, transcripts, WAVs) to `destination`, which must
    /// not exist.
    pub fn export_folder(&self, id: &str, destination: &Path) -> Result<(), StoreError> {
        let dir = self.dir_of(id)?;
        if destination.exists() {
            return Err(StoreError::DestinationExists {
                path: destination.to_path_buf(),
            });
        }
        copy_tree(&dir, destination)
    }

    /// Writes a conversation as one Markdown file at `destination`, which must not exist.
    pub fn export_markdown(&self, id: &str, destination: &Path) -> Result<(), StoreError> {
        let conversation = self.open(id)?;
        if destination.exists() {
            return Err(StoreError::DestinationExists {
                path: destination.to_path_buf(),
            });
        }
        write_atomically(destination, conversation.render_markdown(false).as_bytes())
    }

    /// Writes the audio of a whole conversation to `destination` (replacing it: a save dialog
    /// has asked), its turns where the journal places them; see [`crate::export`].
    pub fn export_audio(
        &self,
        id: &str,
        export: AudioExport,
        destination: &Path,
    ) -> Result<ExportedAudio, StoreError> {
        let dir = self.dir_of(id)?;
        let conversation = self.open(id)?;
        write_audio(&dir, &conversation, export, destination)
    }

    /// Writes a conversation's captions as WebVTT at `destination` (replacing it), on the time
    /// line of [`Store::export_audio`].
    pub fn export_captions(&self, id: &str, destination: &Path) -> Result<(), StoreError> {
        let conversation = self.open(id)?;
        write_atomically(destination, render_webvtt(&conversation).as_bytes())
    }

    /// (id, folder) of every folder under the root, sorted by id.
    pub(crate) fn folders(&self) -> Result<Vec<(String, PathBuf)>, StoreError> {
        let entries = match fs::read_dir(&self.root) {
            Ok(entries) => entries,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(error) => return Err(StoreError::io("list", &self.root, error)),
        };
        let mut folders = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|error| StoreError::io("list", &self.root, error))?;
            let Ok(id) = entry.file_name().into_string() else {
                continue;
            };
            if id.starts_with('.') || !entry.path().is_dir() {
                continue;
            }
            folders.push((id, entry.path()));
        }
        folders.sort();
        Ok(folders)
    }
}

/// What of a journal could not be read, as a sentence; `None` when all of it could (a torn
/// last line, which a recovery cuts, is not damage).
fn damage(parsed: &crate::journal::ParsedJournal, conversation: &Conversation) -> Option<String> {
    let lines = parsed.garbage.len();
    match (lines, conversation.problems().first()) {
        (0, None) => None,
        (0, Some(problem)) => Some(format!("part of its journal does not add up: {problem}")),
        (1, _) => Some("a line of its journal could not be read; the rest is shown".to_owned()),
        (lines, _) => Some(format!(
            "{lines} lines of its journal could not be read; the rest is shown"
        )),
    }
}

/// `typed` as a conversation's title, or why it cannot be one.
pub(crate) fn title_from(typed: &str) -> Result<String, StoreError> {
    let one_line: String = typed
        .chars()
        .filter_map(|c| match c {
            '\n' | '\r' | '\t' => Some(' '),
            c if c.is_control() => None,
            c => Some(c),
        })
        .collect();
    let title = one_line.split_whitespace().collect::<Vec<_>>().join(" ");
    if title.is_empty() {
        return Err(StoreError::BadTitle {
            reason: "it is empty; type a name, or press Escape to keep the one it has",
        });
    }
    if title.chars().count() > MAX_TITLE_CHARS {
        return Err(StoreError::BadTitle {
            reason: "it is longer than 80 characters; shorten it",
        });
    }
    Ok(title)
}

fn validate_id(id: &str) -> Result<(), StoreError> {
    let valid = !id.is_empty()
        && !id.starts_with('.')
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_'));
    if valid {
        Ok(())
    } else {
        Err(StoreError::InvalidId { id: id.to_owned() })
    }
}

fn copy_tree(from: &Path, to: &Path) -> Result<(), StoreError> {
    fs::create_dir_all(to).map_err(|error| StoreError::io("create", to, error))?;
    let entries = fs::read_dir(from).map_err(|error| StoreError::io("list", from, error))?;
    for entry in entries {
        let entry = entry.map_err(|error| StoreError::io("list", from, error))?;
        let name = entry.file_name();
        if name.to_string_lossy().starts_with('.') {
            continue;
        }
        let source = entry.path();
        let target = to.join(&name);
        if source.is_dir() {
            copy_tree(&source, &target)?;
        } else {
            fs::copy(&source, &target).map_err(|error| StoreError::io("copy", &source, error))?;
        }
    }
    Ok(())
}
