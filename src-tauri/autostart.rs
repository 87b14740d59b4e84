//! Start on login: an XDG autostart entry (`~/.config/autostart/app.walkie.desktop.desktop`)
//! that starts Walkie hidden in the tray, written when the setting is turned on and removed
//! when it is turned off.
//!
//! Why a file of its own and not the installed `.desktop` entry: the entry must carry
//! `--hidden`, and it must point at the Walkie the user runs (a package's, or a build's).

use std::path::{Path, PathBuf};

/// The entry's file name: the app id, as desktops expect.
const FILE_NAME: &str = "app.walkie.desktop.desktop";

/// Where the entry goes: `$XDG_CONFIG_HOME/autostart` (`~/.config/autostart`).
pub fn entry_path() -> Option<PathBuf> {
    dirs::config_dir().map(|config| config.join("autostart").join(FILE_NAME))
}

/// The entry that starts `exec` hidden.
pub fn entry(exec: &Path) -> String {
    format!(
        "[Desktop Entry]\n\
         Type=Application\n\
         Name=Walkie\n\
         Comment=Talk to a voice assistant, push-to-talk\n\
         Exec={} --hidden\n\
         Icon=walkie\n\
         Terminal=false\n\
         X-GNOME-Autostart-enabled=true\n",
        quoted_exec_argument(&exec.to_string_lossy())
    )
}

/// An `Exec` argument, quoted as the Desktop Entry Specification says: inside double quotes,
/// `"`, `` ` ``, `$` and `\` are escaped with a backslash; and `%` is doubled, as everywhere
/// in `Exec`. The `.desktop` file's own escaping (a backslash is written twice) comes on top.
fn quoted_exec_argument(argument: &str) -> String {
    let mut quoted = String::from("\"");
    for character in argument.chars() {
        match character {
            '"' | '`' | '$' => {
                quoted.push_str("\\\\");
                quoted.push(character);
            }
            '\\' => quoted.push_str("\\\\\\\\"),
            '%' => quoted.push_str("%%"),
            _ => quoted.push(character),
        }
    }
    quoted.push('"');
    quoted
}

/// Why the entry could not be written or removed, in words for the Settings field.
#[derive(Debug, thiserror::Error)]
pub enum AutostartError {
    #[error("no configuration folder is known for this user ($HOME is not set)")]
    NoConfigFolder,
    #[error("this Walkie's own path is unknown: {0}")]
    NoExecutable(std::io::Error),
    #[error("{path} could not be written: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} could not be removed: {source}")]
    Remove {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// Writes the entry (for `enabled`) or removes it.
pub fn set(enabled: bool) -> Result<(), AutostartError> {
    let path = entry_path().ok_or(AutostartError::NoConfigFolder)?;
    if !enabled {
        return match std::fs::remove_file(&path) {
            Ok(()) => Ok(()),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(source) => Err(AutostartError::Remove { path, source }),
        };
    }
    let exec = std::env::current_exe().map_err(AutostartError::NoExecutable)?;
    let write = || {
        if let Some(folder) = path.parent() {
            std::fs::create_dir_all(folder)?;
        }
        std::fs::write(&path, entry(&exec))
    };
    write().map_err(|source| AutostartError::Write {
        path: path.clone(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_entry_starts_this_walkie_hidden() {
        let entry = entry(Path::new("/usr/bin/walkie"));
        assert!(entry.starts_with("[Desktop Entry]\n"), "{entry}");
        assert!(
            entry.contains("\nExec=\"/usr/bin/walkie\" --hidden\n"),
            "{entry}"
        );
        assert!(entry.contains("\nType=Application\n"), "{entry}");
    }

    #[test]
    fn a_path_with_spaces_quotes_and_percent_signs_stays_one_argument() {
        let entry = entry(Path::new("/home/a b/100% \"w\"/$x/walkie"));
        assert!(
            entry.contains(r#"Exec="/home/a b/100%% \\"w\\"/\\$x/walkie" --hidden"#),
            "{entry}"
        );
    }
}
