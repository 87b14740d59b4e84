//! The history panel's side in Rust: list past conversations, open one to read and play it,
//! continue it in a new call, export it, open its folder, delete it, and apply the retention
//! setting.
//!
//! Why a module of its own: everything here reaches into the data folder on the webview's
//! request, so it is the one place that must treat the webview's arguments as untrusted. Ids are
//! checked by walkie-store (a conversation id is a folder name under the conversations folder,
//! never a path), the webview never names a file to write (exports go where the user picked in
//! a native dialog) and the only files it can read are the turn WAVs, through the asset
//! protocol whose scope [`History::allow_playback`] narrows to the conversations folder.
//!
//! Why [`CurrentConversation`]: the conversation being recorded is written on a thread of its own
//! (`recording.rs`); deleting its folder under it would lose it and make the recorder fail. The
//! recorder marks its conversation current while it writes, holding the same lock under which
//! history deletes and prunes, so a deletion can never race the start of a recording.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use serde::Serialize;
use tauri::{AppHandle, Manager};
use walkie_agui::{EarlierMessage, Message};
use walkie_store::files::write_atomically;
use walkie_store::{
    AudioExport, AudioFormat, ExportChannels, Retention, SearchIndex, Store, StoreError, WavInfo,
    conversations_dir,
};

/// Which conversation is being recorded right now (its id), shared by the recorder, which sets
/// it, and the history, which must not delete it. Cloning shares the same slot.
#[derive(Clone, Debug, Default)]
pub struct CurrentConversation(Arc<Mutex<Option<String>>>);

impl CurrentConversation {
    /// The id of the conversation being recorded, if one is.
    pub fn id(&self) -> Option<String> {
        self.lock().clone()
    }

    /// Holds the slot: while the guard lives, no recording starts or ends and nothing is
    /// deleted, so what the holder reads stays true.
    pub fn lock(&self) -> MutexGuard<'_, Option<String>> {
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// Why a history command could not do what the webview asked (sent as a
/// [`crate::WebviewError`]).
#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    /// The store refused or failed (unknown or invalid id, the current conversation, I/O).
    #[error(transparent)]
    Store(#[from] StoreError),
    /// No data folder could be found when the app started.
    #[error("conversations cannot be found: {reason}")]
    NoDataFolder { reason: String },
    /// A choice made in the panel (how long to keep, what to save) could not be saved with the
    /// settings.
    #[error("{choice} could not be saved: {reason}")]
    Settings {
        choice: &'static str,
        reason: String,
    },
    /// The export could not be written where the user chose.
    #[error("could not export to {}: {source}", path.display())]
    Export {
        path: PathBuf,
        #[source]
        source: StoreError,
    },
    /// The save dialog handed back something that is not a file path.
    #[error("the chosen destination is not a file on this computer")]
    ExportDestination,
    /// The conversation cannot be continued; the sentence says why and what to do instead.
    #[error("this conversation cannot be continued: {0}")]
    CannotContinue(String),
    /// The conversation task is not running, so nothing can be continued now.
    #[error("{0}")]
    Conversation(String),
    /// The system could not open the folder in a file manager.
    #[error("could not open {} in the file manager: {reason}", path.display())]
    OpenFolder { path: PathBuf, reason: String },
}

impl Serialize for HistoryError {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        crate::WebviewError::said(self).serialize(serializer)
    }
}

/// What Export… writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum Export {
    /// The transcript as Markdown.
    Markdown,
    /// The transcript as WebVTT captions, on the audio's time line.
    Captions,
    /// The audio of the whole conversation in one file.
    Audio {
        channels: ExportChannels,
        format: AudioFormat,
    },
}

impl Export {
    /// The save dialog's title, its filter's name and the file's extension.
    fn dialog(self) -> (&'static str, &'static str, &'static str) {
        match self {
            Export::Markdown => ("Export the conversation as Markdown", "Markdown", "md"),
            Export::Captions => ("Export the captions as WebVTT", "WebVTT captions", "vtt"),
            Export::Audio {
                format: AudioFormat::Wav,
                ..
            } => ("Export the conversation's audio as WAV", "WAV audio", "wav"),
            Export::Audio {
                format: AudioFormat::OggOpus,
                ..
            } => (
                "Export the conversation's audio as Opus",
                "Opus audio",
                "opus",
            ),
        }
    }
}

/// What an export wrote.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Exported {
    pub path: PathBuf,
    /// Turn recordings that could not be read: silent in the exported audio.
    pub left_out: Vec<String>,
}

/// One line of the history list.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ListedConversation {
    pub id: String,
    /// The name given to it, else the first words said ("" when nothing was said).
    pub title: String,
    pub started_unix_ms: i64,
    pub duration_ms: u64,
    pub turn_count: usize,
    /// Being recorded right now: it can be read but not deleted.
    pub current: bool,
    /// Not closed yet (the current one, or one an unclean stop left and no start repaired).
    pub open: bool,
    /// What of it could not be read, as a sentence (it is shown as far as it reads).
    pub damaged: Option<String>,
}

/// A turn WAV, for an `<audio>` element.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TurnAudio {
    /// Absolute path, inside the conversations folder (the asset protocol's scope).
    pub path: PathBuf,
    pub duration_ms: u64,
}

/// One exchange of an opened conversation: the message ids it holds and its WAVs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OpenedTurn {
    pub turn: u32,
    /// The AG-UI message id of each side (`user-N`, `assistant-N`).
    pub user_message_id: String,
    pub assistant_message_id: String,
    pub user_audio: Option<TurnAudio>,
    pub assistant_audio: Option<TurnAudio>,
    pub interrupted: bool,
    /// The user took this turn's recording back before it was sent.
    pub cancelled: bool,
}

/// An opened conversation: what the webview renders for reading and playing.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OpenedConversation {
    #[serde(flatten)]
    pub summary: ListedConversation,
    /// The AG-UI thread of its transcript (its first run's), by which the live view knows
    /// the conversation's messages.
    pub thread_id: Option<String>,
    /// The assembled AG-UI messages, for the transcript renderer's MESSAGES_SNAPSHOT.
    pub messages: Vec<Message>,
    pub turns: Vec<OpenedTurn>,
    /// What was wrong in the journal (skipped lines, broken sequences), never fatal.
    pub problems: Vec<String>,
}

/// A saved conversation to go on with: what the conversation task needs to continue it.
#[derive(Clone, Debug, PartialEq)]
pub struct Continuing {
    /// Its id: the folder the new call's turns are saved in.
    pub id: String,
    /// The AG-UI thread of its transcript: its first run's, else its id.
    pub thread_id: String,
    /// Its messages, in order: the text ones (id, role, text and metadata: the pictures a
    /// message showed) and the others (tool calls and their results) as they were saved.
    pub earlier: Vec<EarlierMessage>,
    /// What it spent so far: its tokens and billed responses, its speech transcribed, and
    /// (when priced) their cost.
    pub spent: walkie_conversation::SpentBefore,
    /// It has a name already (the user's or the model's): the model is not asked for one.
    pub titled: bool,
}

impl Continuing {
    /// What continuing `conversation` (saved as `id`) starts from.
    pub fn of(id: &str, conversation: &walkie_store::Conversation) -> Continuing {
        let earlier = conversation
            .messages()
            .iter()
            .cloned()
            .map(EarlierMessage::from)
            .collect();
        let spent = conversation.spent();
        Continuing {
            id: id.to_owned(),
            thread_id: conversation.thread_id().unwrap_or(id).to_owned(),
            earlier,
            spent: walkie_conversation::SpentBefore {
                tokens: spent.tokens,
                responses: spent.responses,
                transcribed_seconds: spent.transcribed_seconds,
                transcriptions: spent.transcriptions,
                cost_usd: spent.cost_usd,
            },
            titled: conversation.title().is_some(),
        }
    }
}

/// Why a conversation cannot be continued, said with what to do instead.
fn cannot_continue(error: StoreError) -> HistoryError {
    let sentence = match &error {
        StoreError::UnknownConversation { .. } => {
            "it is no longer in the data folder (deleted or moved); choose another one".to_owned()
        }
        StoreError::BeingRecorded { .. } => {
            "it is the conversation going on now; just keep talking".to_owned()
        }
        StoreError::InvalidId { .. } => format!("{error}; choose one from the list"),
        StoreError::OthersCanWrite { .. } | StoreError::OwnedByAnother { .. } => error.to_string(),
        _ => format!("{error}; check its folder, then press Continue again"),
    };
    HistoryError::CannotContinue(sentence)
}

/// The history over the app's data folder; see the module docs.
pub struct History {
    store: Result<Store, String>,
    current: CurrentConversation,
    retention: Mutex<Retention>,
    /// The search index, opened at the first search.
    search: Mutex<Option<Search>>,
}

/// The search index and when it was brought up to date.
struct Search {
    index: SearchIndex,
    /// The last look at every conversation (none yet: the first search makes one).
    full_refresh: Option<std::time::Instant>,
    /// The conversations that were going on at a search: looked at again, alone, when
    /// [`SEARCH_REFRESH`] has passed, so what was said a moment ago is found.
    watched: std::collections::BTreeSet<String>,
    watched_refresh: std::time::Instant,
}

/// The most hits a search shows.
const MAX_SEARCH_HITS: usize = 50;
/// How long a search trusts what the index holds of the conversation going on (it is findable
/// this long after its messages closed).
const SEARCH_REFRESH: std::time::Duration = std::time::Duration::from_secs(2);
/// How long a search trusts the index about every other conversation (one continued, repaired
/// or put in the folder by hand).
const SEARCH_FULL_REFRESH: std::time::Duration = std::time::Duration::from_secs(60);

/// What a search found, and a line to say once about the index itself.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SearchResults {
    pub hits: Vec<walkie_store::SearchHit>,
    pub notice: Option<String>,
}

impl History {
    /// The history of the conversations folder under `data_dir`.
    pub fn new(data_dir: &Path, current: CurrentConversation) -> History {
        History {
            store: Ok(Store::new(conversations_dir(data_dir))),
            current,
            retention: Mutex::new(Retention::default()),
            search: Mutex::new(None),
        }
    }

    /// A history with no data folder: every command says why.
    pub fn unavailable(reason: String, current: CurrentConversation) -> History {
        History {
            store: Err(reason),
            current,
            retention: Mutex::new(Retention::default()),
            search: Mutex::new(None),
        }
    }

    fn store(&self) -> Result<&Store, HistoryError> {
        self.store
            .as_ref()
            .map_err(|reason| HistoryError::NoDataFolder {
                reason: reason.clone(),
            })
    }

    /// Lets the webview's `<audio>` elements read files under the conversations folder, and
    /// nothing else (the asset protocol's scope is empty in tauri.conf.json).
    pub fn allow_playback(&self, app: &AppHandle) -> Result<(), String> {
        let root = self.store().map_err(|error| error.to_string())?.root();
        walkie_store::files::create_private_dir_all(root)
            .map_err(|error| format!("could not create {}: {error}", root.display()))?;
        // The scope compares canonical paths: allow the folder as the OS resolves it.
        let root = root
            .canonicalize()
            .map_err(|error| format!("could not resolve {}: {error}", root.display()))?;
        app.asset_protocol_scope()
            .allow_directory(&root, true)
            .map_err(|error| format!("could not allow playback from {}: {error}", root.display()))
    }

    /// Every conversation, newest first.
    pub fn list(&self) -> Result<Vec<ListedConversation>, HistoryError> {
        let current = self.current.id();
        let summaries = self.store()?.list()?;
        Ok(summaries
            .into_iter()
            .map(|summary| ListedConversation {
                current: current.as_deref() == Some(summary.id.as_str()),
                title: summary.title,
                id: summary.id,
                started_unix_ms: summary.started_unix_ms,
                duration_ms: summary.duration_ms,
                turn_count: summary.turn_count,
                open: summary.open,
                damaged: summary.damaged,
            })
            .collect())
    }

    /// The messages of every saved conversation that hold what the user typed, newest first.
    /// The index is opened (or built again, said once) and brought up to date at the first
    /// search; later ones look again at the conversations going on past [`SEARCH_REFRESH`] and
    /// at every conversation past [`SEARCH_FULL_REFRESH`]. A conversation that cannot be read is
    /// said, not fatal.
    pub fn search(&self, typed: &str) -> Result<SearchResults, HistoryError> {
        let store = self.store()?;
        let mut slot = self
            .search
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let mut notices = Vec::new();
        let search = match slot.as_mut() {
            Some(open) => open,
            None => {
                let (index, rebuilt) = SearchIndex::open(store)?;
                if let Some(reason) = rebuilt {
                    log::warn!("the search index was damaged ({reason}); it is built again");
                    notices
                        .push("The search index was damaged and has been built again.".to_owned());
                }
                slot.insert(Search {
                    index,
                    full_refresh: None,
                    watched: std::collections::BTreeSet::new(),
                    watched_refresh: std::time::Instant::now(),
                })
            }
        };
        if let Some(current) = self.current.id() {
            search.watched.insert(current);
        }
        let mut unreadable = Vec::new();
        if search
            .full_refresh
            .is_none_or(|at| at.elapsed() >= SEARCH_FULL_REFRESH)
        {
            unreadable = search.index.refresh(store)?.unreadable;
            search.full_refresh = Some(std::time::Instant::now());
            search.watched_refresh = std::time::Instant::now();
        } else if search.watched_refresh.elapsed() >= SEARCH_REFRESH {
            for id in &search.watched {
                // One that is gone (deleted) is dropped at the next full refresh.
                if let Ok(report) = search.index.refresh_conversation(store, id) {
                    unreadable.extend(report.unreadable);
                }
            }
            search.watched_refresh = std::time::Instant::now();
        }
        if !unreadable.is_empty() {
            let one = unreadable.len() == 1;
            notices.push(format!(
                "{} conversation{} could not be read and {} left out of the search: {}.",
                unreadable.len(),
                if one { "" } else { "s" },
                if one { "is" } else { "are" },
                unreadable.join(", ")
            ));
        }
        // A conversation deleted since the last full refresh is not shown.
        let hits = search
            .index
            .search(typed, MAX_SEARCH_HITS)?
            .into_iter()
            .filter(|hit| store.dir_of(&hit.conversation_id).is_ok())
            .collect();
        Ok(SearchResults {
            hits,
            notice: (!notices.is_empty()).then(|| notices.join(" ")),
        })
    }

    /// One conversation, to read and play.
    pub fn open(&self, id: &str) -> Result<OpenedConversation, HistoryError> {
        let store = self.store()?;
        let dir = store.dir_of(id)?;
        let conversation = store.open(id)?;
        let audio = |wav: &Option<WavInfo>| {
            let wav = wav.as_ref()?;
            let path = dir.join(&wav.file);
            path.is_file().then(|| TurnAudio {
                path,
                duration_ms: wav.duration_ms(),
            })
        };
        let turns: Vec<OpenedTurn> = conversation
            .turns()
            .map(|info| OpenedTurn {
                turn: info.turn,
                cancelled: conversation.message_cancelled(&walkie_store::message_id(
                    info.turn,
                    walkie_session::Speaker::User,
                )),
                user_message_id: walkie_store::message_id(info.turn, walkie_session::Speaker::User),
                assistant_message_id: walkie_store::message_id(
                    info.turn,
                    walkie_session::Speaker::Assistant,
                ),
                user_audio: audio(&info.user_wav),
                assistant_audio: audio(&info.assistant_wav),
                interrupted: info.interrupted,
            })
            .collect();
        let current = self.current.id().as_deref() == Some(id);
        Ok(OpenedConversation {
            summary: ListedConversation {
                id: id.to_owned(),
                title: conversation.display_title(walkie_store::library::FIRST_WORDS),
                started_unix_ms: conversation.started_unix_ms(),
                duration_ms: conversation.duration_ms(),
                turn_count: turns.len(),
                current,
                open: current || !conversation.is_closed(),
                damaged: match conversation.problems() {
                    [] => None,
                    [problem] => Some(format!("part of it could not be read: {problem}")),
                    [problem, rest @ ..] => Some(format!(
                        "part of it could not be read: {problem} (and {} more)",
                        rest.len()
                    )),
                },
            },
            thread_id: conversation.thread_id().map(str::to_owned),
            messages: conversation.messages().to_vec(),
            turns,
            problems: conversation.problems().to_vec(),
        })
    }

    /// What continuing conversation `id` starts from: its messages and its thread. Not the
    /// one being recorded (it goes on already).
    pub fn continuing(&self, id: &str) -> Result<Continuing, HistoryError> {
        let store = self.store()?;
        let dir = store.dir_of(id).map_err(cannot_continue)?;
        // Its words are given to the model as the user's: not from a folder others can change.
        store.check_private(&dir).map_err(cannot_continue)?;
        if self.current.id().as_deref() == Some(id) {
            return Err(cannot_continue(StoreError::BeingRecorded {
                id: id.to_owned(),
            }));
        }
        let conversation = store.open(id).map_err(cannot_continue)?;
        Ok(Continuing::of(id, &conversation))
    }

    /// Deletes a conversation's folder; never the one being recorded.
    pub fn delete(&self, id: &str) -> Result<(), HistoryError> {
        let store = self.store()?;
        let current = self.current.lock();
        store.delete(id, current.as_deref())?;
        Ok(())
    }

    /// Names conversation `id` (not the one being recorded); returns the name as saved.
    pub fn rename(&self, id: &str, title: &str) -> Result<String, HistoryError> {
        let store = self.store()?;
        let current = self.current.lock();
        let now_unix_ms = chrono::Utc::now().timestamp_millis();
        Ok(store.rename(id, title, current.as_deref(), now_unix_ms)?)
    }

    /// Writes conversation `id` as `export` asks at `destination` (replacing it: the save
    /// dialog has already asked the user).
    pub fn export(
        &self,
        id: &str,
        export: Export,
        destination: &Path,
    ) -> Result<Exported, HistoryError> {
        let store = self.store()?;
        let failed = |source| HistoryError::Export {
            path: destination.to_path_buf(),
            source,
        };
        let mut exported = Exported {
            path: destination.to_path_buf(),
            left_out: Vec::new(),
        };
        match export {
            Export::Markdown => {
                let conversation = store.open(id)?;
                write_atomically(destination, conversation.render_markdown(false).as_bytes())
                    .map_err(failed)?;
            }
            Export::Captions => {
                store.dir_of(id)?;
                store.export_captions(id, destination).map_err(failed)?;
            }
            Export::Audio { channels, format } => {
                store.dir_of(id)?;
                let audio = store
                    .export_audio(id, AudioExport { channels, format }, destination)
                    .map_err(failed)?;
                exported.left_out = audio.left_out;
            }
        }
        Ok(exported)
    }

    /// The folder of a conversation (for the file manager).
    pub fn folder(&self, id: &str) -> Result<PathBuf, HistoryError> {
        Ok(self.store()?.dir_of(id)?)
    }

    /// The retention in force.
    pub fn retention(&self) -> Retention {
        *self
            .retention
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// How many conversations `retention` would delete now (never the current one).
    pub fn expiring(&self, retention: Retention, now_unix_ms: i64) -> Result<usize, HistoryError> {
        let store = self.store()?;
        let current = self.current.lock();
        Ok(store
            .expiring(retention, now_unix_ms, current.as_deref())?
            .len())
    }

    /// Makes `retention` the one in force and applies it now: deletes the conversations it
    /// does not keep (never the current one). Returns the ids deleted.
    pub fn apply_retention(
        &self,
        retention: Retention,
        now_unix_ms: i64,
    ) -> Result<Vec<String>, HistoryError> {
        *self
            .retention
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = retention;
        let store = self.store()?;
        let current = self.current.lock();
        Ok(store.apply_retention(retention, now_unix_ms, current.as_deref())?)
    }
}

fn now_unix_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

/// Makes `retention` the one in force and applies it (at start, and whenever the setting
/// changes). Returns the ids of the conversations deleted.
pub fn apply_retention(app: &AppHandle, retention: Retention) -> Result<Vec<String>, HistoryError> {
    let deleted = app
        .state::<History>()
        .apply_retention(retention, now_unix_ms())?;
    if !deleted.is_empty() {
        log::info!(
            "retention {retention:?} deleted {} conversation(s): {deleted:?}",
            deleted.len()
        );
    }
    Ok(deleted)
}

/// Every past conversation, newest first.
#[tauri::command]
pub fn history_list(
    history: tauri::State<'_, History>,
) -> Result<Vec<ListedConversation>, HistoryError> {
    history.list()
}

/// The messages of every saved conversation that hold `query`, best first (off the main
/// thread: the first search builds the index).
#[tauri::command]
pub async fn history_search(app: AppHandle, query: String) -> Result<SearchResults, HistoryError> {
    tauri::async_runtime::spawn_blocking(move || app.state::<History>().search(&query))
        .await
        .map_err(|error| HistoryError::Conversation(format!("the search stopped: {error}")))?
}

/// One conversation: its messages and its turn WAVs.
#[tauri::command]
pub fn history_open(
    history: tauri::State<'_, History>,
    id: String,
) -> Result<OpenedConversation, HistoryError> {
    history.open(&id)
}

/// Hangs up the conversation going on, then continues conversation `id` in a new call: its
/// messages shown again and given to the new session, its folder saving the new turns.
#[tauri::command]
pub fn history_continue(
    app: AppHandle,
    history: tauri::State<'_, History>,
    id: String,
) -> Result<(), HistoryError> {
    let continuing = history.continuing(&id)?;
    crate::send_to_conversation(
        &app,
        crate::conversation::Command::Continue(Box::new(continuing)),
    )
    .map_err(|error| HistoryError::Conversation(error.to_string()))
}

/// Names a conversation (not the one being recorded); returns the name as saved.
#[tauri::command]
pub fn history_rename(
    history: tauri::State<'_, History>,
    id: String,
    title: String,
) -> Result<String, HistoryError> {
    history.rename(&id, &title)
}

/// Deletes a conversation (not the one being recorded).
#[tauri::command]
pub fn history_delete(history: tauri::State<'_, History>, id: String) -> Result<(), HistoryError> {
    history.delete(&id)
}

/// Asks where to save a conversation as `export` says, then writes it there (off the main
/// thread: an hour's audio takes a while to encode). Returns what was written, or `null` when
/// the user cancelled.
#[tauri::command]
pub async fn history_export(
    app: AppHandle,
    id: String,
    export: Export,
) -> Result<Option<Exported>, HistoryError> {
    use tauri_plugin_dialog::DialogExt;
    // Check the id before asking the user anything.
    app.state::<History>().folder(&id)?;
    let (title, filter, extension) = export.dialog();
    let (answer, chosen) = tokio::sync::oneshot::channel();
    let mut dialog = app
        .dialog()
        .file()
        .set_title(title)
        .set_file_name(format!("walkie-{id}.{extension}"))
        .add_filter(filter, &[extension]);
    if let Some(window) = app.get_webview_window("main") {
        dialog = dialog.set_parent(&window);
    }
    dialog.save_file(move |path| {
        let _ = answer.send(path);
    });
    let Some(path) = chosen.await.ok().flatten() else {
        return Ok(None);
    };
    let path = path
        .into_path()
        .map_err(|_| HistoryError::ExportDestination)?;
    tauri::async_runtime::spawn_blocking(move || {
        app.state::<History>().export(&id, export, &path).map(Some)
    })
    .await
    .map_err(|error| HistoryError::Conversation(format!("the export stopped: {error}")))?
}

/// Opens a conversation's folder in the system's file manager.
#[tauri::command]
pub fn history_open_folder(
    app: AppHandle,
    history: tauri::State<'_, History>,
    id: String,
) -> Result<(), HistoryError> {
    use tauri_plugin_opener::OpenerExt;
    // Only a folder the store resolved from a valid id: never a path the webview names.
    let folder = history.folder(&id)?;
    app.opener()
        .open_path(folder.to_string_lossy(), None::<&str>)
        .map_err(|error| HistoryError::OpenFolder {
            path: folder.clone(),
            reason: error.to_string(),
        })
}

/// The retention in force.
#[tauri::command]
pub fn history_retention(history: tauri::State<'_, History>) -> Retention {
    history.retention()
}

/// How many saved conversations `retention` would delete if chosen now: the panel says so
/// before it deletes anything.
#[tauri::command]
pub fn history_expiring(
    history: tauri::State<'_, History>,
    retention: Retention,
) -> Result<usize, HistoryError> {
    history.expiring(retention, now_unix_ms())
}

/// Changes the retention and applies it at once. Returns the ids deleted.
#[tauri::command]
pub fn history_set_retention(
    app: AppHandle,
    retention: Retention,
) -> Result<Vec<String>, HistoryError> {
    crate::persist_retention(&app, retention).map_err(|error| HistoryError::Settings {
        choice: "how long conversations are kept",
        reason: error.to_string(),
    })?;
    apply_retention(&app, retention)
}

/// What the user chose to save of the next conversations.
#[tauri::command]
pub fn history_saved(saving: tauri::State<'_, crate::recording::Saving>) -> walkie_store::Saved {
    saving.chosen()
}

/// Saves what the user chose to save, for the next conversation on.
#[tauri::command]
pub fn history_set_saved(app: AppHandle, saved: walkie_store::Saved) -> Result<(), HistoryError> {
    crate::persist_saved(&app, saved).map_err(|error| HistoryError::Settings {
        choice: "what is saved",
        reason: error.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use walkie_agui::Role;

    use std::sync::Arc as StdArc;

    use walkie_session::transcript::TranscriptBridge;
    use walkie_session::{
        AudioChunk, Part, PartDelta, PartDeltaEvent, PartEndEvent, PartIndex, PartStartEvent,
        SessionEvent, Speaker, SpeechPart, StampedEvent,
    };
    use walkie_store::RecorderConfig;

    const DAY_MS: i64 = 86_400_000;
    const RATE_HZ: u32 = 16_000;

    struct Folder(PathBuf);

    impl Folder {
        fn new(name: &str) -> Folder {
            let path = std::env::temp_dir().join(format!(
                "walkie-history-{name}-{}-{}",
                std::process::id(),
                now_unix_ms()
            ));
            std::fs::create_dir_all(&path).unwrap();
            Folder(path)
        }
    }

    impl Drop for Folder {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    /// Records a closed one-turn conversation: the user says `words` for `user_ms`.
    fn record(data_dir: &Path, started_unix_ms: i64, words: &str, user_ms: u64) -> String {
        let store = Store::new(conversations_dir(data_dir));
        let config = RecorderConfig {
            user_sample_rate_hz: RATE_HZ,
            assistant_sample_rate_hz: RATE_HZ,
            ..RecorderConfig::default()
        };
        let mut recorder = store.start(config, started_unix_ms).unwrap();
        let mut bridge = TranscriptBridge::new(recorder.id());
        let mut seq = 0;
        let mut at = started_unix_ms;
        let mut event = |recorder: &mut walkie_store::Recorder, event: SessionEvent| {
            seq += 1;
            at += 10;
            let stamped = StampedEvent {
                seq,
                at_ms: (at - started_unix_ms) as u64,
                event,
            };
            let mut transcript = Vec::new();
            let note = bridge.on_event_noted(at, &stamped.event, &mut transcript);
            recorder.record(&stamped, note, &transcript, at);
            at
        };
        let user = PartIndex(0);
        let now = event(
            &mut recorder,
            SessionEvent::PartStart(PartStartEvent {
                index: user,
                part: Part::speech(Speaker::User),
            }),
        );
        let samples = vec![1_000i16; (user_ms * u64::from(RATE_HZ) / 1000) as usize];
        recorder.user_audio(&samples, now);
        event(
            &mut recorder,
            SessionEvent::PartEnd(PartEndEvent {
                index: user,
                part: Part::Speech(SpeechPart {
                    speaker: Speaker::User,
                    transcript: Some(StdArc::from(words)),
                    audio: None,
                    interrupted_at_ms: None,
                }),
            }),
        );
        let reply = PartIndex(1);
        event(
            &mut recorder,
            SessionEvent::PartStart(PartStartEvent {
                index: reply,
                part: Part::speech(Speaker::Assistant),
            }),
        );
        event(
            &mut recorder,
            SessionEvent::PartDelta(PartDeltaEvent {
                index: reply,
                delta: PartDelta::assistant_audio(AudioChunk::from_samples(vec![
                    -500i16;
                    RATE_HZ as usize
                        / 10
                ])),
            }),
        );
        event(
            &mut recorder,
            SessionEvent::PartEnd(PartEndEvent {
                index: reply,
                part: Part::Speech(SpeechPart {
                    speaker: Speaker::Assistant,
                    transcript: Some(StdArc::from("Heard you.")),
                    audio: None,
                    interrupted_at_ms: None,
                }),
            }),
        );
        let end = event(&mut recorder, SessionEvent::TurnComplete);
        let mut closing = Vec::new();
        bridge.finish(end + 10, &mut closing);
        recorder.transcript(&closing, end + 10);
        recorder.close(end + 10).unwrap();
        recorder.id().to_owned()
    }

    #[test]
    fn lists_newest_first_and_marks_the_current_conversation() {
        let data = Folder::new("list");
        let old = record(&data.0, 1_700_000_000_000, "the older one", 300);
        let new = record(&data.0, 1_700_000_000_000 + DAY_MS, "the newer one", 300);
        let current = CurrentConversation::default();
        *current.lock() = Some(new.clone());
        let history = History::new(&data.0, current);
        let listed = history.list().unwrap();
        let ids: Vec<&str> = listed.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, [new.as_str(), old.as_str()]);
        assert_eq!(listed[0].title, "the newer one");
        assert!(listed[0].current);
        assert!(!listed[1].current);
        assert_eq!(listed[1].turn_count, 1);
    }

    #[test]
    fn opens_a_conversation_with_its_messages_and_turn_wavs() {
        let data = Folder::new("open");
        let id = record(&data.0, 1_700_000_000_000, "play me back", 500);
        let history = History::new(&data.0, CurrentConversation::default());
        let opened = history.open(&id).unwrap();
        let texts: Vec<(&str, Option<&str>)> = opened
            .messages
            .iter()
            .map(|m| (m.id(), m.content()))
            .collect();
        assert_eq!(
            texts,
            [
                ("user-1", Some("play me back")),
                ("assistant-1", Some("Heard you."))
            ]
        );
        let turn = &opened.turns[0];
        assert_eq!(turn.user_message_id, "user-1");
        let user_audio = turn.user_audio.as_ref().expect("the user WAV");
        assert_eq!(user_audio.duration_ms, 500);
        assert!(user_audio.path.starts_with(data.0.join("conversations")));
        let assistant_audio = turn.assistant_audio.as_ref().expect("the assistant WAV");
        assert_eq!(assistant_audio.duration_ms, 100);
        // What the webview receives: camelCase fields and AG-UI messages.
        let json = serde_json::to_value(&opened).unwrap();
        assert_eq!(json["id"], id.as_str());
        assert_eq!(json["messages"][0]["role"], "user");
        assert_eq!(json["turns"][0]["userAudio"]["durationMs"], 500);
    }

    #[test]
    fn bad_ids_are_refused_with_a_sentence_never_a_panic() {
        let data = Folder::new("ids");
        record(&data.0, 1_700_000_000_000, "keep me", 100);
        let history = History::new(&data.0, CurrentConversation::default());
        for id in ["../conversations", "", ".hidden", "a/b", "/etc"] {
            let error = history.open(id).unwrap_err();
            assert_eq!(
                serde_json::to_value(&error).unwrap(),
                serde_json::json!({
                    "message": format!("'{id}' is not a valid conversation id"),
                    "field": null,
                    "problems": [],
                }),
                "the one error shape the webview reads"
            );
            assert!(history.delete(id).is_err());
            assert!(history.folder(id).is_err());
        }
        let error = history.open("2020-01-01_00-00-00").unwrap_err();
        assert!(
            error
                .to_string()
                .starts_with("no conversation '2020-01-01_00-00-00' in "),
            "{error}"
        );
        assert_eq!(history.list().unwrap().len(), 1);
    }

    #[test]
    fn deletes_a_conversation_but_never_the_current_one() {
        let data = Folder::new("delete");
        let old = record(&data.0, 1_700_000_000_000, "delete me", 100);
        let new = record(&data.0, 1_700_000_000_000 + DAY_MS, "recording", 100);
        let current = CurrentConversation::default();
        *current.lock() = Some(new.clone());
        let history = History::new(&data.0, current);
        let error = history.delete(&new).unwrap_err();
        assert_eq!(
            error.to_string(),
            format!("conversation '{new}' is the current one and cannot be deleted")
        );
        history.delete(&old).unwrap();
        assert!(!data.0.join("conversations").join(&old).exists());
        assert!(data.0.join("conversations").join(&new).exists());
        let ids: Vec<String> = history.list().unwrap().into_iter().map(|c| c.id).collect();
        assert_eq!(ids, [new]);
    }

    #[test]
    fn retention_deletes_what_is_older_than_the_days_kept_except_the_current_one() {
        let data = Folder::new("retention");
        let now = 1_700_000_000_000 + 40 * DAY_MS;
        let ancient = record(&data.0, now - 40 * DAY_MS, "ancient", 100);
        let current_but_old = record(&data.0, now - 35 * DAY_MS, "still recording", 100);
        let recent = record(&data.0, now - 2 * DAY_MS, "recent", 100);
        let current = CurrentConversation::default();
        *current.lock() = Some(current_but_old.clone());
        let history = History::new(&data.0, current);
        assert_eq!(history.retention(), Retention::Forever);
        assert_eq!(
            history.apply_retention(Retention::Forever, now).unwrap(),
            Vec::<String>::new()
        );
        let thirty_days = Retention::try_from(Some(30)).unwrap();
        let deleted = history.apply_retention(thirty_days, now).unwrap();
        assert_eq!(deleted, [ancient]);
        assert_eq!(history.retention(), thirty_days);
        let mut kept: Vec<String> = history.list().unwrap().into_iter().map(|c| c.id).collect();
        kept.sort();
        let mut expected = vec![current_but_old, recent];
        expected.sort();
        assert_eq!(kept, expected);
    }

    #[test]
    fn exports_markdown_replacing_the_chosen_file() {
        let data = Folder::new("export");
        let id = record(&data.0, 1_700_000_000_000, "export these words", 100);
        let history = History::new(&data.0, CurrentConversation::default());
        let destination = data.0.join("chosen.md");
        std::fs::write(&destination, "old content").unwrap();
        let exported = history.export(&id, Export::Markdown, &destination).unwrap();
        assert_eq!(exported.path, destination);
        let markdown = std::fs::read_to_string(&destination).unwrap();
        assert!(markdown.starts_with("# Conversation of "), "{markdown}");
        assert!(markdown.contains("export these words"), "{markdown}");
        assert!(
            !markdown.contains("[audio]"),
            "no dangling WAV links: {markdown}"
        );
        let error = history
            .export(
                &id,
                Export::Markdown,
                &data.0.join("no-such-folder").join("x.md"),
            )
            .unwrap_err();
        assert!(
            error.to_string().starts_with("could not export to "),
            "{error}"
        );
    }

    #[test]
    #[cfg(unix)]
    fn a_conversation_in_a_folder_every_user_can_change_is_not_continued() {
        use std::os::unix::fs::PermissionsExt;
        let data = Folder::new("continue_shared");
        let id = record(&data.0, 1_700_000_000_000, "planted words", 100);
        let history = History::new(&data.0, CurrentConversation::default());
        assert!(history.continuing(&id).is_ok(), "the user's own folder");
        let conversations = conversations_dir(&data.0);
        std::fs::set_permissions(&conversations, std::fs::Permissions::from_mode(0o777))
            .expect("chmod");
        match history.continuing(&id) {
            Err(HistoryError::CannotContinue(sentence)) => {
                assert!(
                    sentence.contains("every user of this computer"),
                    "{sentence}"
                )
            }
            other => panic!(
                "continued from a folder anyone can change: {:?}",
                other.map(|c| c.id)
            ),
        }
    }

    #[test]
    fn continuing_gives_the_saved_messages_and_thread_but_never_for_the_current_one() {
        let data = Folder::new("continue");
        let id = record(&data.0, 1_700_000_000_000, "go on from here", 100);
        let current = CurrentConversation::default();
        let history = History::new(&data.0, current.clone());
        let continuing = history.continuing(&id).unwrap();
        assert_eq!(continuing.id, id);
        assert_eq!(continuing.thread_id, id, "the recorded runs' thread");
        assert_eq!(
            continuing
                .earlier
                .iter()
                .filter_map(|message| match message {
                    EarlierMessage::Text {
                        message_id,
                        role,
                        text,
                        ..
                    } => Some((message_id.clone(), *role, text.clone())),
                    EarlierMessage::Kept(_) => None,
                })
                .collect::<Vec<_>>(),
            [
                (
                    "user-1".to_owned(),
                    Role::User,
                    "go on from here".to_owned()
                ),
                (
                    "assistant-1".to_owned(),
                    Role::Assistant,
                    "Heard you.".to_owned()
                ),
            ]
        );

        *current.lock() = Some(id.clone());
        assert_eq!(
            history.continuing(&id).unwrap_err().to_string(),
            "this conversation cannot be continued: it is the conversation going on now; just keep talking"
        );
        assert_eq!(
            history
                .continuing("2020-01-01_00-00-00")
                .unwrap_err()
                .to_string(),
            "this conversation cannot be continued: it is no longer in the data folder (deleted or moved); choose another one"
        );
        assert_eq!(
            serde_json::to_value(history.continuing("../x").unwrap_err()).unwrap()["message"],
            "this conversation cannot be continued: '../x' is not a valid conversation id; choose one from the list"
        );
    }

    #[test]
    fn without_a_data_folder_every_command_says_why() {
        let history = History::unavailable(
            "no data directory: set WALKIE_DATA_DIR or HOME".into(),
            CurrentConversation::default(),
        );
        assert_eq!(
            history.list().unwrap_err().to_string(),
            "conversations cannot be found: no data directory: set WALKIE_DATA_DIR or HOME"
        );
        assert!(history.open("x").is_err());
        assert!(history.delete("x").is_err());
    }
}
