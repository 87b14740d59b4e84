//! What can go wrong in the store, typed so the shell can tell the user what and where.
//!
//! Why every variant carries a path: "could not save" is useless to a user whose disk is full;
//! "could not write /home/me/.local/share/walkie/…/journal.jsonl: no space left on device" tells
//! them what to free. I/O errors keep their `std::io::ErrorKind` reachable through
//! [`StoreError::io_kind`] so the shell can tell a full disk from a read-only folder.

use std::io;
use std::path::{Path, PathBuf};

/// Every failure of the store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A file or folder could not be read, written, created, synced or removed.
    #[error("could not {action} {}: {source}", path.display())]
    Io {
        /// What the store was doing ("append to", "create", "sync", …).
        action: &'static str,
        /// The file or folder concerned.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: io::Error,
    },
    /// The data folder can be changed by every user of this computer: what it holds could be
    /// replaced under Walkie (a planted conversation, a link to another file).
    #[error(
        "{} can be changed by every user of this computer (its mode is {mode:o}): make it \
         yours alone (chmod o-w), or choose another data folder in Settings",
        path.display()
    )]
    OthersCanWrite {
        /// The folder.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// The data folder belongs to another user of this computer, who can change what it holds
    /// whatever its mode says.
    #[error(
        "{} belongs to another user of this computer (user id {owner_uid}): choose a folder of \
         your own in Settings",
        path.display()
    )]
    OwnedByAnother {
        /// The folder.
        path: PathBuf,
        /// Its owner's user id.
        owner_uid: u32,
    },
    /// A WAV file could not be written or read by the WAV codec.
    #[error("WAV file {}: {message}", path.display())]
    Wav {
        /// The WAV file.
        path: PathBuf,
        /// What the codec said.
        message: String,
    },
    /// A WAV file is not a mono 16-bit PCM RIFF file the store can repair.
    #[error("{} is not a repairable WAV file: {reason}", path.display())]
    UnrepairableWav {
        /// The WAV file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// A journal line is not a record the store wrote.
    #[error("journal {} line {line_number}: {reason}", path.display())]
    JournalGarbage {
        /// The journal.
        path: PathBuf,
        /// 1-based line number.
        line_number: usize,
        /// Why the line was rejected.
        reason: String,
    },
    /// The conversation is being recorded: its journal is written by the recorder alone.
    #[error("conversation '{id}' is going on now; name it once it has ended")]
    RenamingCurrent {
        /// Its id.
        id: String,
    },
    /// What the user typed cannot be a conversation's title.
    #[error("that name cannot be used: {reason}")]
    BadTitle {
        /// Why, and what to do.
        reason: &'static str,
    },
    /// The search index could not be read or written (it is a cache: rebuilt when it fails to
    /// open).
    #[error("the search index {} failed: {reason}", path.display())]
    Index {
        /// The index file.
        path: PathBuf,
        /// What SQLite said.
        reason: String,
    },
    /// The folder has no journal, or its journal has no start record: not a conversation.
    #[error("{} is not a conversation folder: {reason}", path.display())]
    NotAConversation {
        /// The folder.
        path: PathBuf,
        /// What is missing.
        reason: String,
    },
    /// No conversation with this id exists in the data directory.
    #[error("no conversation '{id}' in {}", data_dir.display())]
    UnknownConversation {
        /// The id asked for.
        id: String,
        /// Where it was looked for.
        data_dir: PathBuf,
    },
    /// The current conversation cannot be deleted or pruned while it is being written.
    #[error("conversation '{id}' is the current one and cannot be deleted")]
    CurrentConversation {
        /// Its id.
        id: String,
    },
    /// The conversation is being recorded right now, so it cannot be reopened to go on.
    #[error("conversation '{id}' is being recorded now; it can be continued once it has ended")]
    BeingRecorded {
        /// Its id.
        id: String,
    },
    /// A conversation id that would escape the data directory or is otherwise not a folder name.
    #[error("'{id}' is not a valid conversation id")]
    InvalidId {
        /// The id given.
        id: String,
    },
    /// The export destination already exists; the store never overwrites.
    #[error("export destination {} already exists", path.display())]
    DestinationExists {
        /// The destination.
        path: PathBuf,
    },
    /// An exported file's audio could not be encoded.
    #[error("could not encode the audio of {}: {reason}", path.display())]
    Encode {
        /// The file being written.
        path: PathBuf,
        /// What the encoder said.
        reason: String,
    },
    /// No data directory: `WALKIE_DATA_DIR` is unset and the platform has no data directory.
    #[error("no data directory: set WALKIE_DATA_DIR or HOME")]
    NoDataDir,
    /// The recorder was asked to do something its state does not allow.
    #[error("recorder misuse: {0}")]
    Misuse(&'static str),
}

impl StoreError {
    pub(crate) fn io(action: &'static str, path: &Path, source: io::Error) -> StoreError {
        StoreError::Io {
            action,
            path: path.to_path_buf(),
            source,
        }
    }

    pub(crate) fn wav(path: &Path, error: hound::Error) -> StoreError {
        match error {
            hound::Error::IoError(source) => StoreError::io("write WAV", path, source),
            other => StoreError::Wav {
                path: path.to_path_buf(),
                message: other.to_string(),
            },
        }
    }

    /// The I/O error kind, when this is an I/O failure (`StorageFull`, `ReadOnlyFilesystem`,
    /// `PermissionDenied`, …).
    pub fn io_kind(&self) -> Option<io::ErrorKind> {
        match self {
            StoreError::Io { source, .. } => Some(source.kind()),
            _ => None,
        }
    }

    /// Whether this is the disk being full.
    pub fn is_disk_full(&self) -> bool {
        self.io_kind() == Some(io::ErrorKind::StorageFull)
    }

    /// Whether this is a folder the store may not write (read-only file system or permissions).
    pub fn is_read_only(&self) -> bool {
        matches!(
            self.io_kind(),
            Some(io::ErrorKind::ReadOnlyFilesystem | io::ErrorKind::PermissionDenied)
        )
    }
}
