//! The log file: `walkie.log` in the log folder, rotated when it reaches its size limit into
//! `walkie.1.log` (the newest older one) … `walkie.<keep>.log`; older ones are deleted.
//!
//! Why not the log plugin's own file: it creates its folder and files with the default
//! permissions, readable by every account on the machine. Here the folder, when created, is
//! 0700 and every file 0600 on Unix (the same helpers the store and the settings use); the log
//! plugin still formats the lines and writes them to stderr.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::files::{create_private_dir_all, private_file_options};

const STEM: &str = "walkie";

/// An open log file that rotates itself.
pub struct LogFile {
    dir: PathBuf,
    max_bytes: u64,
    keep: usize,
    file: File,
    written_bytes: u64,
}

impl LogFile {
    /// Opens (creating them if needed) the folder `dir` and `walkie.log` in it, appending.
    /// The file is rotated before a line that would take it past `max_bytes`; `keep` older
    /// files are kept.
    pub fn open(dir: &Path, max_bytes: u64, keep: usize) -> std::io::Result<Self> {
        create_private_dir_all(dir)?;
        let (file, written_bytes) = open_current(dir)?;
        Ok(Self {
            dir: dir.to_path_buf(),
            max_bytes,
            keep,
            file,
            written_bytes,
        })
    }

    /// Appends one line (a line break is added).
    pub fn write_line(&mut self, line: &str) -> std::io::Result<()> {
        let length = line.len() as u64 + 1;
        if self.written_bytes > 0 && self.written_bytes + length > self.max_bytes {
            self.rotate()?;
        }
        let mut bytes = Vec::with_capacity(line.len() + 1);
        bytes.extend_from_slice(line.as_bytes());
        bytes.push(b'\n');
        self.file.write_all(&bytes)?;
        self.written_bytes += length;
        Ok(())
    }

    fn rotate(&mut self) -> std::io::Result<()> {
        self.file.flush()?;
        let numbered = |n: usize| self.dir.join(format!("{STEM}.{n}.log"));
        if self.keep == 0 {
            std::fs::remove_file(current_path(&self.dir))?;
        } else {
            match std::fs::remove_file(numbered(self.keep)) {
                Err(error) if error.kind() != std::io::ErrorKind::NotFound => return Err(error),
                _ => {}
            }
            for n in (1..self.keep).rev() {
                match std::fs::rename(numbered(n), numbered(n + 1)) {
                    Err(error) if error.kind() != std::io::ErrorKind::NotFound => {
                        return Err(error);
                    }
                    _ => {}
                }
            }
            std::fs::rename(current_path(&self.dir), numbered(1))?;
        }
        let (file, written_bytes) = open_current(&self.dir)?;
        self.file = file;
        self.written_bytes = written_bytes;
        Ok(())
    }
}

fn current_path(dir: &Path) -> PathBuf {
    dir.join(format!("{STEM}.log"))
}

fn open_current(dir: &Path) -> std::io::Result<(File, u64)> {
    let file = private_file_options()
        .create(true)
        .append(true)
        .open(current_path(dir))?;
    let length = file.metadata()?.len();
    Ok((file, length))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("walkie-logfile-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    fn read(path: &Path) -> String {
        std::fs::read_to_string(path).unwrap_or_default()
    }

    #[test]
    fn lines_are_appended_and_rotation_keeps_the_newest_files() {
        let dir = scratch("rotate");
        let mut log = LogFile::open(&dir, 20, 2).unwrap();
        for line in [
            "one......",
            "two......",
            "three....",
            "four.....",
            "five.....",
        ] {
            log.write_line(line).unwrap();
        }
        // Two 10-byte lines fit in 20 bytes; a third starts a new file.
        assert_eq!(read(&dir.join("walkie.log")), "five.....\n");
        assert_eq!(read(&dir.join("walkie.1.log")), "three....\nfour.....\n");
        assert_eq!(read(&dir.join("walkie.2.log")), "one......\ntwo......\n");
        assert!(!dir.join("walkie.3.log").exists());
        // Reopened, it appends.
        drop(log);
        let mut log = LogFile::open(&dir, 20, 2).unwrap();
        log.write_line("six......").unwrap();
        assert_eq!(read(&dir.join("walkie.log")), "five.....\nsix......\n");
        log.write_line("seven....").unwrap();
        assert_eq!(read(&dir.join("walkie.2.log")), "three....\nfour.....\n");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[cfg(unix)]
    #[test]
    fn the_log_folder_and_every_log_file_are_private() {
        use std::os::unix::fs::PermissionsExt;
        let parent = scratch("private");
        let dir = parent.join("logs");
        let mut log = LogFile::open(&dir, 10, 3).unwrap();
        for line in ["a line", "another line", "a third"] {
            log.write_line(line).unwrap();
        }
        let mode = |path: &Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&parent), 0o700, "a folder created for the log");
        assert_eq!(mode(&dir), 0o700, "the log folder");
        for file in ["walkie.log", "walkie.1.log", "walkie.2.log"] {
            assert_eq!(mode(&dir.join(file)), 0o600, "{file}");
        }
        let _ = std::fs::remove_dir_all(&parent);
    }
}
