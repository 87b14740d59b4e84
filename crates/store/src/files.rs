//! Small file helpers: atomic replacement of derived files, private creation, and the folder
//! layout.
//!
//! Why atomic replacement: `transcript.md` and `transcript.json` are rewritten whole; writing them
//! in place would leave a half file if the process died mid-write. A temporary file renamed over
//! the old one is either the old or the new transcript, never a mix.
//!
//! Why private creation: recordings, transcripts, settings and logs are the user's alone. On
//! Unix every folder Walkie creates for them is made 0700 and every file 0600 (before the umask,
//! which can only take permissions away), so other accounts on the machine cannot read them.

use std::fs::{self, DirBuilder, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

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

/// Mode of the folders Walkie creates for its data (Unix).
pub const PRIVATE_DIR_MODE: u32 = 0o700;
/// Mode of the files Walkie creates for its data (Unix).
pub const PRIVATE_FILE_MODE: u32 = 0o600;

/// Creates `path` and any missing parents, each one created 0700 on Unix; folders that already
/// exist are left as they are.
pub fn create_private_dir_all(path: &Path) -> std::io::Result<()> {
    private_dir_builder().recursive(true).create(path)
}

/// Refuses a data folder that another user could change: one that belongs to another user (not
/// this process's, nor root's), or that every user may write (others may write it, without the
/// sticky bit that would keep them to their own files). Whatever Walkie saves or reads back
/// there could be replaced under it. A folder its group may write is left alone: on desktops
/// that give each user a group of their own, that is how the user's own folders are made.
pub fn check_private_dir(path: &Path) -> Result<(), StoreError> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let metadata = fs::metadata(path)
            .map_err(|error| StoreError::io("read the permissions of", path, error))?;
        let owner_uid = metadata.uid();
        if belongs_to_another(owner_uid, rustix::process::geteuid().as_raw()) {
            return Err(StoreError::OwnedByAnother {
                path: path.to_owned(),
                owner_uid,
            });
        }
        let mode = metadata.mode() & 0o7777;
        let sticky = mode & 0o1000 != 0;
        if mode & 0o002 != 0 && !sticky {
            return Err(StoreError::OthersCanWrite {
                path: path.to_owned(),
                mode,
            });
        }
    }
    #[cfg(not(unix))]
    let _ = path;
    Ok(())
}

/// Whether a folder owned by `owner_uid` belongs to another user than the process's
/// (`process_uid`): root's folders (the system's, a mount point) are no other user's.
fn belongs_to_another(owner_uid: u32, process_uid: u32) -> bool {
    owner_uid != 0 && owner_uid != process_uid
}

/// Options that open a file only if it is no symbolic link (on Unix; the open fails otherwise):
/// what Walkie rewrites in the data folder is its own file, never one a link points at.
pub fn no_follow_options() -> OpenOptions {
    #[cfg_attr(not(unix), allow(unused_mut))]
    let mut options = OpenOptions::new();
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::custom_flags(
        &mut options,
        rustix::fs::OFlags::NOFOLLOW.bits() as i32,
    );
    options
}

/// Creates the folder `path` (0700 on Unix); fails if it exists.
pub fn create_private_dir(path: &Path) -> std::io::Result<()> {
    private_dir_builder().create(path)
}

fn private_dir_builder() -> DirBuilder {
    #[cfg_attr(not(unix), allow(unused_mut))]
    let mut builder = DirBuilder::new();
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, PRIVATE_DIR_MODE);
    builder
}

/// Options that create a file 0600 on Unix (the mode applies only when the file is created)
/// and never open one through a symbolic link; add `write`, `append`, `create`… as needed.
pub fn private_file_options() -> OpenOptions {
    #[cfg_attr(not(unix), allow(unused_mut))]
    let mut options = no_follow_options();
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, PRIVATE_FILE_MODE);
    options
}

/// Creates or truncates `path` for writing, as [`File::create`] does, but 0600 on Unix when it
/// is new.
pub fn create_private_file(path: &Path) -> std::io::Result<File> {
    private_file_options()
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)
}

/// Replaces `path` with `bytes` atomically (temporary file, sync, rename). A new file is
/// private (0600 on Unix).
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), StoreError> {
    let temporary = temporary_path(path);
    // A temporary file left by a crash may carry other permissions: start afresh.
    let _ = fs::remove_file(&temporary);
    let mut file = create_private_file(&temporary)
        .map_err(|error| StoreError::io("create", &temporary, error))?;
    file.write_all(bytes)
        .and_then(|()| file.sync_data())
        .map_err(|error| StoreError::io("write", &temporary, error))?;
    drop(file);
    fs::rename(&temporary, path).map_err(|error| StoreError::io("replace", path, error))
}

/// The hidden file beside `path` that is written first and then renamed over it.
pub fn temporary_path(path: &Path) -> PathBuf {
    let file_name = path
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    path.with_file_name(format!(".{file_name}.tmp"))
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

#[cfg(test)]
mod tests {
    use super::belongs_to_another;

    #[test]
    fn a_folder_belongs_to_another_unless_it_is_the_processs_or_roots() {
        assert!(belongs_to_another(65_534, 1_000), "nobody's, to a user");
        assert!(belongs_to_another(1_001, 1_000), "another user's");
        assert!(!belongs_to_another(1_000, 1_000), "the user's own");
        assert!(!belongs_to_another(0, 1_000), "root's, to a user");
        assert!(belongs_to_another(1_000, 0), "a user's, to root");
        assert!(!belongs_to_another(0, 0), "root's own");
    }
}
