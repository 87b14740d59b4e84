//! The pictures the user attaches to a message before sending it: from the file dialog or the
//! clipboard (the webview sends the file's bytes), or dropped on the window (Rust reads the
//! dropped files). Each is made fit to send ([`walkie_picture::prepare`], off the UI thread)
//! and held here under an id until the message that shows it is sent or the user removes it;
//! the webview only ever holds the thumbnail. A screenshot ([`crate::screenshot`]) is attached
//! the same way.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::Serialize;
use tauri::{AppHandle, Emitter, Manager};
use walkie_picture::{Picture, PictureLimits, Prepared, prepare, prepare_pixels};

use crate::{CommandError, screenshot};

/// The most pictures one message shows (and that wait to be sent).
pub const MAX_ATTACHED_PICTURES: usize = 4;
/// The header that carries the attached file's name (percent-encoded) beside its bytes.
const NAME_HEADER: &str = "walkie-picture-name";
/// The event that brings the webview a picture dropped on the window, or why it was not taken.
pub const PICTURE_DROPPED_EVENT: &str = "walkie://picture-dropped";

/// The pictures waiting for the message that shows them.
#[derive(Default)]
pub struct Attachments {
    waiting: Mutex<Waiting>,
}

#[derive(Default)]
struct Waiting {
    next_id: u64,
    pictures: BTreeMap<u64, Picture>,
}

/// A picture attached, as the webview shows it before it is sent.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AttachedPicture {
    pub id: u64,
    pub name: String,
    pub thumbnail: String,
    pub width_px: u32,
    pub height_px: u32,
    pub source_format: &'static str,
    pub source_width_px: u32,
    pub source_height_px: u32,
}

/// What a drop on the window brought, one event per file.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase", tag = "outcome")]
pub enum Dropped {
    Attached(AttachedPicture),
    Refused { message: String },
}

impl Attachments {
    /// Holds a prepared picture; refused when a message's worth already waits.
    fn hold(&self, name: String, prepared: Prepared) -> Result<AttachedPicture, CommandError> {
        let mut waiting = self
            .waiting
            .lock()
            .expect("the attachments lock is never poisoned: nothing panics while holding it");
        if waiting.pictures.len() >= MAX_ATTACHED_PICTURES {
            return Err(CommandError::Message(format!(
                "A message shows at most {MAX_ATTACHED_PICTURES} pictures: send these first, or remove one."
            )));
        }
        waiting.next_id += 1;
        let id = waiting.next_id;
        let Prepared {
            picture,
            source_format,
            source_width_px,
            source_height_px,
        } = prepared;
        let attached = AttachedPicture {
            id,
            name,
            thumbnail: picture.thumbnail_data_url().to_owned(),
            width_px: picture.width_px(),
            height_px: picture.height_px(),
            source_format,
            source_width_px,
            source_height_px,
        };
        waiting.pictures.insert(id, picture);
        Ok(attached)
    }

    /// The pictures `ids` name, in that order, still held; an id not held is an error (the
    /// picture was removed, or sent already).
    pub fn look_up(&self, ids: &[u64]) -> Result<Vec<Picture>, CommandError> {
        let waiting = self
            .waiting
            .lock()
            .expect("the attachments lock is never poisoned: nothing panics while holding it");
        ids.iter()
            .map(|id| {
                waiting.pictures.get(id).cloned().ok_or_else(|| {
                    CommandError::Message(
                        "A picture of this message is no longer attached: attach it again."
                            .to_owned(),
                    )
                })
            })
            .collect()
    }

    /// Lets go of pictures (sent, or removed by the user).
    pub fn release(&self, ids: &[u64]) {
        let mut waiting = self
            .waiting
            .lock()
            .expect("the attachments lock is never poisoned: nothing panics while holding it");
        for id in ids {
            waiting.pictures.remove(id);
        }
    }
}

/// Prepares `bytes` off the UI thread and holds the picture; the error names the file and
/// says what to do.
async fn attach(
    attachments: &Attachments,
    name: String,
    bytes: Vec<u8>,
) -> Result<AttachedPicture, CommandError> {
    let prepared =
        tauri::async_runtime::spawn_blocking(move || prepare(&bytes, &PictureLimits::default()))
            .await
            .map_err(|error| CommandError::Background(error.to_string()))?;
    match prepared {
        Ok(prepared) => attachments.hold(name, prepared),
        Err(error) => Err(CommandError::Message(format!(
            "{} cannot be shown: {error}. Choose another picture.",
            shown_name(&name)
        ))),
    }
}

fn shown_name(name: &str) -> String {
    if name.is_empty() {
        "The picture".to_owned()
    } else {
        format!("“{name}”")
    }
}

/// The webview attaches a file the user chose or pasted: its bytes are the request's body, its
/// name in a header.
#[tauri::command]
pub async fn attach_picture(
    request: tauri::ipc::Request<'_>,
    attachments: tauri::State<'_, Attachments>,
) -> Result<AttachedPicture, CommandError> {
    let tauri::ipc::InvokeBody::Raw(bytes) = request.body() else {
        return Err(CommandError::Message(
            "The picture did not arrive as a file: attach it again.".to_owned(),
        ));
    };
    let name = request
        .headers()
        .get(NAME_HEADER)
        .and_then(|value| value.to_str().ok())
        .map(percent_decoded)
        .unwrap_or_default();
    attach(&attachments, name, bytes.clone()).await
}

/// What a screenshot can take (for the webview's menu): on X11 the screen, then each window;
/// in a Wayland session, what the user chooses in the desktop's own dialog.
#[tauri::command]
pub async fn screenshot_targets() -> Result<Vec<screenshot::Target>, CommandError> {
    if crate::desktop::wayland_session(
        std::env::var("WAYLAND_DISPLAY").ok().as_deref(),
        std::env::var("XDG_SESSION_TYPE").ok().as_deref(),
    ) {
        return desktop_takes_screenshots()
            .await
            .map(|()| vec![screenshot::Target::Desktop]);
    }
    tauri::async_runtime::spawn_blocking(screenshot::targets)
        .await
        .map_err(|error| CommandError::Background(error.to_string()))?
        .map_err(|error| CommandError::Message(error.to_string()))
}

/// Whether the desktop's portal takes screenshots; else why not, in words for the window.
#[cfg(target_os = "linux")]
async fn desktop_takes_screenshots() -> Result<(), CommandError> {
    let no_screenshots = screenshot::ScreenshotError::Wayland.to_string();
    let portal = crate::portal::Portal::connect().await;
    match portal {
        Ok(portal) => match portal.offers_screenshots().await {
            Ok(true) => Ok(()),
            Ok(false) => Err(CommandError::Message(no_screenshots)),
            Err(error) => {
                log::warn!("the desktop's portal: {error}");
                Err(CommandError::Message(no_screenshots))
            }
        },
        Err(error) => {
            log::warn!("the desktop's portal: {error}");
            Err(CommandError::Message(no_screenshots))
        }
    }
}

#[cfg(not(target_os = "linux"))]
async fn desktop_takes_screenshots() -> Result<(), CommandError> {
    Err(CommandError::Message(
        screenshot::ScreenshotError::Wayland.to_string(),
    ))
}

/// Asks the desktop's portal for a screenshot the user chooses in its dialog, and attaches it
/// as a picture file (decoded within the same limits as one the user picks).
#[cfg(target_os = "linux")]
async fn attach_desktop_screenshot(
    attachments: &Attachments,
) -> Result<AttachedPicture, CommandError> {
    use crate::portal::{Portal, PortalError};
    let taken = async {
        let mut portal = Portal::connect().await?;
        crate::portal::screenshot(&mut portal).await
    };
    let path = match taken.await {
        Ok(path) => path,
        Err(PortalError::Declined) => {
            return Err(CommandError::Message(
                "No screenshot was taken: the desktop's dialog was closed.".to_owned(),
            ));
        }
        Err(error) => {
            return Err(CommandError::Message(format!(
                "The desktop took no screenshot ({error}): attach a saved one with Picture… instead."
            )));
        }
    };
    let bytes = tokio::fs::read(&path).await.map_err(|error| {
        CommandError::Message(format!(
            "The desktop's screenshot {} cannot be read ({error}): attach it with Picture… instead.",
            path.display()
        ))
    })?;
    attach(attachments, screenshot::Target::Desktop.name(), bytes).await
}

#[cfg(not(target_os = "linux"))]
async fn attach_desktop_screenshot(
    _attachments: &Attachments,
) -> Result<AttachedPicture, CommandError> {
    Err(CommandError::Message(
        screenshot::ScreenshotError::Wayland.to_string(),
    ))
}

/// Takes a screenshot of `target` now and attaches it.
#[tauri::command]
pub async fn attach_screenshot(
    target: screenshot::Target,
    attachments: tauri::State<'_, Attachments>,
) -> Result<AttachedPicture, CommandError> {
    if target == screenshot::Target::Desktop {
        return attach_desktop_screenshot(&attachments).await;
    }
    let name = target.name();
    let prepared = tauri::async_runtime::spawn_blocking(move || {
        let capture = screenshot::capture(&target).map_err(|error| error.to_string())?;
        prepare_pixels(
            capture.width_px,
            capture.height_px,
            capture.rgba,
            &PictureLimits::default(),
        )
        .map_err(|error| format!("The screenshot cannot be shown: {error}."))
    })
    .await
    .map_err(|error| CommandError::Background(error.to_string()))?
    .map_err(CommandError::Message)?;
    attachments.hold(name, prepared)
}

/// The user removed an attached picture before sending.
#[tauri::command]
pub fn detach_picture(id: u64, attachments: tauri::State<'_, Attachments>) {
    attachments.release(&[id]);
}

/// Files dropped on the window: each that reads as a picture is attached, and the webview is
/// told of each, taken or not (in the order dropped).
pub fn files_dropped(app: &AppHandle, paths: Vec<PathBuf>) {
    let app = app.clone();
    tauri::async_runtime::spawn(async move {
        for path in paths {
            let dropped = match read_dropped(&path).await {
                Ok(bytes) => {
                    let attachments = app.state::<Attachments>();
                    attach(&attachments, file_name(&path), bytes).await
                }
                Err(error) => Err(error),
            };
            let dropped = match dropped {
                Ok(attached) => Dropped::Attached(attached),
                Err(error) => Dropped::Refused {
                    message: error.to_string(),
                },
            };
            if let Err(error) = app.emit(PICTURE_DROPPED_EVENT, &dropped) {
                log::warn!("the webview was not told of a dropped file: {error}");
            }
        }
    });
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// A dropped file's bytes, refused early when it is a folder or larger than a picture is read.
async fn read_dropped(path: &Path) -> Result<Vec<u8>, CommandError> {
    let name = shown_name(&file_name(path));
    let max_bytes = PictureLimits::default().max_source_bytes;
    let path = path.to_owned();
    let read = tauri::async_runtime::spawn_blocking(move || {
        let metadata = std::fs::metadata(&path)?;
        if !metadata.is_file() {
            return Ok(Err("it is not a file"));
        }
        if metadata.len() > max_bytes as u64 {
            return Ok(Err("it is larger than a picture is read (64 MiB)"));
        }
        std::fs::read(&path).map(Ok)
    })
    .await
    .map_err(|error| CommandError::Background(error.to_string()))?;
    match read {
        Ok(Ok(bytes)) => Ok(bytes),
        Ok(Err(why)) => Err(CommandError::Message(format!(
            "{name} cannot be shown: {why}. Choose a picture."
        ))),
        Err(error) => Err(CommandError::Message(format!(
            "{name} cannot be read: {error}. Check it can be opened, then drop it again."
        ))),
    }
}

/// The name as the webview sent it (`encodeURIComponent`), decoded; a malformed escape is
/// kept as it is.
fn percent_decoded(encoded: &str) -> String {
    percent_encoding::percent_decode_str(encoded)
        .decode_utf8_lossy()
        .into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refusal(dropped: Result<Vec<u8>, CommandError>) -> String {
        dropped.expect_err("refused").to_string()
    }

    #[test]
    fn a_dropped_folder_or_missing_file_is_refused_by_name_and_a_picture_is_read() {
        let folder = std::env::temp_dir().join(format!("walkie-drop-{}", std::process::id()));
        std::fs::create_dir_all(&folder).unwrap();
        let picture = folder.join("cat.png");
        std::fs::write(&picture, b"\x89PNG...").unwrap();
        let run = |path: PathBuf| {
            tauri::async_runtime::block_on(async move { read_dropped(&path).await })
        };

        assert_eq!(
            refusal(run(folder.clone())),
            format!(
                "“{}” cannot be shown: it is not a file. Choose a picture.",
                folder.file_name().unwrap().to_string_lossy()
            )
        );
        let gone = refusal(run(folder.join("gone.png")));
        assert!(gone.starts_with("“gone.png” cannot be read: "), "{gone}");
        assert!(
            gone.ends_with("Check it can be opened, then drop it again."),
            "{gone}"
        );
        assert_eq!(run(picture).unwrap(), b"\x89PNG...");
        std::fs::remove_dir_all(&folder).unwrap();
    }

    #[test]
    fn a_file_name_sent_percent_encoded_reads_back_whole() {
        assert_eq!(percent_decoded("caf%C3%A9%20photo.png"), "café photo.png");
        assert_eq!(percent_decoded("100%.png"), "100%.png");
        assert_eq!(percent_decoded("%E2%82"), "\u{FFFD}");
    }
}
