//! Small file helpers: atomic replacement of derived files, and the folder layout.
//!
//! Why atomic replacement: `transcript.md` and `transcript.json` are rewritten whole; writing them
//! in place would leave a half file if the process died mid-write. A temporary file renamed over
//! the old one is either the old or the new transcript, never a mix.

use std::fs::{self, File};
use std::io::Write;
use std::path::Path;

use crate::conversation::Conversation;
use crate::error::StoreError;

/// Readable transcript.
pub const TRANSCRIPT_MD_FILE: &str = "transcript.md";
/// Assembled AG-UI messages plus turn metadata.
pub const TRANSCRIPT_JSON_FILE: &str = "transcript.json";
/// Present while a conversation is being written; its presence at start means an unclean stop.
pub const WRITING_MARKER_FILE: &str = ".writing";
/// Folder of the turn WAVs.
pub const TURNS_DIR: &str = "turns";

/// Replaces `path` with `bytes` atomically (temporary file, sync, rename).
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), StoreError> {
    let file_name = path
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    let temporary = path.with_file_name(format!(".{file_name}.tmp"));
    let mut file =
        File::create(&temporary).map_err(|error| StoreError::io("create", &temporary, error))?;
    file.write_all(bytes)
        .and_then(|()| file.sync_data())
        .map_err(|error| StoreError::io("write", &temporary, error))?;
    drop(file);
    fs::rename(&temporary, path).map_err(|error| StoreError::io("replace", path, error))
}

/// Writes `transcript.md` and `transcript.json` of a conversation folder from its model.
pub fn write_transcripts(dir: &Path, conversation: &Conversation) -> Result<(), StoreError> {
    write_atomically(
        &dir.join(TRANSCRIPT_MD_FILE),
        conversation.render_markdown(true).as_bytes(),
    )?;
    let json = serde_json::to_vec_pretty(&conversation.to_json())
        .expect("a serde_json::Value always serializes");
    write_atomically(&dir.join(TRANSCRIPT_JSON_FILE), &json)
}

/// Syncs a directory, so a file created or renamed in it survives a power cut.
pub fn sync_dir(dir: &Path) -> Result<(), StoreError> {
    File::open(dir)
        .and_then(|handle| handle.sync_all())
        .map_err(|error| StoreError::io("sync", dir, error))
}
