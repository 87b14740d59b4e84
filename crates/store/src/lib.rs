//! `walkie-store`: the conversation store — transcripts and WAV turns that are never lost.
//!
//! Why a driver crate of its own: saving is the one edge where a crash must cost nothing. Every
//! conversation is a folder under the store root (DESIGN.md "Data on disk"):
//!
//! ```text
//! <root>/<yyyy-mm-dd_hh-mm-ss>/journal.jsonl      append-only JSON lines: session + AG-UI events
//!                              transcript.md      who spoke, when, what
//!                              transcript.json    the assembled AG-UI messages + turn metadata
//!                              turns/NNNN-user.wav       what was sent
//!                              turns/NNNN-assistant.wav  what was heard
//!                              turns/NNNN-user-K.jpg     the Kth picture the user showed
//!                              .writing           present while the conversation is written
//! ```
//!
//! * [`Store`] ([`library`]): recovery at start, list, open, delete, retention, export, and
//!   [`Store::start`] for a new [`Recorder`], [`Store::continue_conversation`] for one that goes
//!   on in the same folder.
//! * [`Recorder`] ([`recorder`]): fed session events and captured samples from a worker thread;
//!   returns the AG-UI events it derived (for the webview). It reads no clock: every call takes
//!   the wall time.
//! * [`journal`], [`wav`]: the two file formats, their writers and their crash-tolerant readers.
//! * [`recovery`]: repairs what an unclean stop left.
//! * [`Conversation`] ([`conversation`]): a conversation as its journal tells it, and the one
//!   renderer of both transcript files.

pub mod civil_time;
pub mod conversation;
pub mod error;
pub mod export;
pub mod files;
pub mod journal;
pub mod library;
pub mod logfile;
pub mod recorder;
pub mod recovery;
pub mod search;
pub mod wav;

pub use conversation::{
    Conversation, Spent, TurnInfo, WavInfo, message_id, turn_picture_file, turn_wav_file,
};
pub use error::StoreError;
pub use export::{AudioExport, AudioFormat, ExportChannels, ExportedAudio};
pub use journal::{AudioSource, Billed, JOURNAL_FILE, Record, parse_journal};
pub use library::{
    ConversationSummary, DATA_DIR_ENV, Retention, Saved, Store, ZeroRetentionDays,
    conversations_dir, data_dir_from, default_data_dir,
};
pub use recorder::{Recorder, RecorderConfig, SaveState};
pub use recovery::{RecoveryReport, needs_recovery, recover_conversation};
pub use search::{RefreshReport, SearchHit, SearchIndex, SnippetPart};
pub use wav::{plan_wav_repair, repair_wav};
