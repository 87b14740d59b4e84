//! Saving the conversation as it happens: the journal, `transcript.md`/`transcript.json` and
//! one WAV per turn (walkie-store).
//!
//! Why a thread of its own: the store writes and fsyncs files, and the conversation task — which
//! keeps the call, the devices and the screen in step — must not wait on a disk while a call runs.
//! The task hands over the conversation machine's records as they come; this thread feeds the
//! recorder. The task waits on the disk only when a conversation begins (the folder's repair,
//! opening the recorder) and when it closes. A store that cannot save (read-only folder, full disk)
//! never stops the conversation: the recorder keeps what it could not write in memory and retries.
//!
//! While it writes, the conversation is marked current ([`CurrentConversation`]) so the history
//! panel cannot delete it from under the recorder.
//!
//! What is saved is the user's choice ([`Saved`]): the next conversation takes the choice made,
//! and the window is told what the conversation under way saves ([`Saving::watch_in_force`]).
//!
//! What an unclean exit left open is repaired once per data folder ([`Saving::repair`]): the app
//! starts it at launch on a blocking thread, so it runs while the first call connects, and a
//! recording starts in a folder only after that folder's repair ended, so the repair never
//! touches a conversation being written.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, mpsc};
use std::thread::JoinHandle;
use std::time::Duration;

use walkie_conversation::Record;
use walkie_session::turn::WallClock;
use walkie_store::{Recorder, RecorderConfig, Saved, Store, StoreError, conversations_dir};

use crate::history::CurrentConversation;
use crate::plan::PlanError;

/// What every call's recording shares: which conversation is being written, which data
/// folders were repaired since the app started, what the user chose to save and what the
/// conversation under way saves. Cloning shares them all.
#[derive(Clone, Debug)]
pub struct Saving {
    pub current: CurrentConversation,
    /// Held while a folder is repaired, so a second caller waits for that repair.
    repaired: Arc<tokio::sync::Mutex<HashSet<PathBuf>>>,
    /// The user's choice, which the next conversation takes.
    chosen: Arc<Mutex<Saved>>,
    /// What the conversation under way saves (the choice until one begins).
    in_force: Arc<tokio::sync::watch::Sender<Saved>>,
}

impl Saving {
    pub fn new(current: CurrentConversation, chosen: Saved) -> Self {
        Self {
            current,
            repaired: Arc::default(),
            chosen: Arc::new(Mutex::new(chosen)),
            in_force: Arc::new(tokio::sync::watch::Sender::new(chosen)),
        }
    }

    /// What the next conversation will save.
    pub fn chosen(&self) -> Saved {
        *self
            .chosen
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Makes `saved` the choice the next conversation takes.
    pub fn choose(&self, saved: Saved) {
        *self
            .chosen
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = saved;
    }

    /// What the conversation under way saves.
    pub fn in_force(&self) -> Saved {
        *self.in_force.borrow()
    }

    /// Sees [`Saving::in_force`] change as conversations begin.
    pub fn watch_in_force(&self) -> tokio::sync::watch::Receiver<Saved> {
        self.in_force.subscribe()
    }

    /// The choice, now in force for a conversation that begins.
    fn take_choice(&self) -> Saved {
        let saved = self.chosen();
        self.in_force.send_if_modified(|in_force| {
            let changed = *in_force != saved;
            *in_force = saved;
            changed
        });
        saved
    }

    /// Repairs what an unclean exit left open in the data folder, on a blocking thread, unless
    /// this folder was repaired already; a caller that comes while it runs waits for it.
    pub async fn repair(&self, data_dir: &Result<PathBuf, PlanError>) {
        let Ok(data_dir) = data_dir else {
            return;
        };
        let mut repaired = self.repaired.lock().await;
        if repaired.contains(data_dir) {
            return;
        }
        let store = Store::new(conversations_dir(data_dir));
        let current = self.current.id();
        let now_unix_ms = chrono::Utc::now().timestamp_millis();
        let repair = tauri::async_runtime::spawn_blocking(move || {
            store.recover(now_unix_ms, current.as_deref())
        });
        match repair.await {
            Ok(Ok(reports)) => {
                for report in reports {
                    log::info!("repaired a conversation left open: {report:?}");
                }
            }
            Ok(Err(error)) => log::warn!("could not check earlier conversations: {error}"),
            Err(error) => log::warn!("checking earlier conversations failed: {error}"),
        }
        repaired.insert(data_dir.clone());
    }

    /// Starts saving a new conversation in the data folder once the folder is repaired; `None`
    /// when the user chose to save nothing.
    pub async fn start(
        &self,
        data_dir: &Result<PathBuf, PlanError>,
        now: WallClock,
    ) -> Result<Option<Recording>, SavingError> {
        let saved = self.take_choice();
        if saved == Saved::Nothing {
            return Ok(None);
        }
        self.repair(data_dir).await;
        Recording::start(&self.current, data_dir, now, saved).map(Some)
    }

    /// Goes on saving the saved conversation `id` (Continue in the history) once the data
    /// folder is repaired; `None` when the user chose to save nothing.
    pub async fn continue_saved(
        &self,
        data_dir: &Result<PathBuf, PlanError>,
        id: &str,
        now: WallClock,
    ) -> Result<Option<Recording>, SavingError> {
        let saved = self.take_choice();
        if saved == Saved::Nothing {
            return Ok(None);
        }
        self.repair(data_dir).await;
        Recording::continue_saved(&self.current, data_dir, id, now, saved).map(Some)
    }
}

/// Why a conversation is not saved from its start (the call goes on without it).
#[derive(Debug, thiserror::Error)]
pub enum SavingError {
    /// No data folder could be found: the reason, as a phrase.
    #[error("{0}")]
    NoDataFolder(String),
    /// The store refused: a folder that cannot be written, a full disk, a conversation gone.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The recording thread could not start.
    #[error("could not start saving: {0}")]
    Thread(#[source] std::io::Error),
}

impl SavingError {
    /// What the status line says of it: what happened, and what to do.
    pub fn reason(&self) -> String {
        match self {
            SavingError::NoDataFolder(reason) => reason.clone(),
            SavingError::Store(problem) if problem.is_disk_full() || problem.is_read_only() => {
                why_not_saving(problem)
            }
            SavingError::Store(_) => {
                "the conversation could not be saved in the data folder. Choose another one in Settings".to_owned()
            }
            SavingError::Thread(_) => {
                "saving could not start; restart Walkie to save the next conversation".to_owned()
            }
        }
    }
}

/// How often the recording thread tries again to save what is waiting, while saving fails
/// and nothing else comes to save.
const RETRY_INTERVAL: Duration = Duration::from_secs(1);

/// News of the saving, for the window: it stopped (why, as a phrase that says what to do, and
/// the error behind it), or works again.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SavingNews {
    Stopped {
        reason: String,
        details: String,
    },
    /// What waited is on disk, but for this much audio (the memory for it was used up).
    Resumed {
        lost_audio_ms: u64,
    },
}

/// The conversation being saved. Dropping it closes the conversation on disk.
pub struct Recording {
    sender: Option<mpsc::Sender<Record>>,
    thread: Option<JoinHandle<()>>,
    news: tokio::sync::mpsc::UnboundedReceiver<SavingNews>,
    current: CurrentConversation,
    id: String,
}

impl Recording {
    /// Starts saving a new conversation under the data folder (or says why there is none); it
    /// repairs nothing ([`Saving::start`] does first). It is `current` until this recording is
    /// dropped.
    pub fn start(
        current: &CurrentConversation,
        data_dir: &Result<PathBuf, PlanError>,
        now: WallClock,
        saved: Saved,
    ) -> Result<Self, SavingError> {
        Self::begin(
            current,
            data_dir,
            now,
            saved,
            |store, _, config, now_unix_ms| store.start(config, now_unix_ms),
        )
    }

    /// Goes on saving the saved conversation `id` in its own folder (Continue in the history):
    /// its earlier turns are kept and the new ones numbered after them. It is `current` until
    /// this recording is dropped.
    pub fn continue_saved(
        current: &CurrentConversation,
        data_dir: &Result<PathBuf, PlanError>,
        id: &str,
        now: WallClock,
        saved: Saved,
    ) -> Result<Self, SavingError> {
        Self::begin(
            current,
            data_dir,
            now,
            saved,
            |store, current_id, config, now_unix_ms| {
                store.continue_conversation(id, current_id, config, now_unix_ms)
            },
        )
    }

    /// Opens the recorder with `open` (given the store, the conversation being recorded, the
    /// recorder's settings and the time) and starts the thread that feeds it; `saved` says
    /// whether it writes audio.
    fn begin(
        current: &CurrentConversation,
        data_dir: &Result<PathBuf, PlanError>,
        now: WallClock,
        saved: Saved,
        open: impl FnOnce(&Store, Option<&str>, RecorderConfig, i64) -> Result<Recorder, StoreError>,
    ) -> Result<Self, SavingError> {
        let data_dir = data_dir
            .as_ref()
            .map_err(|reason| SavingError::NoDataFolder(reason.to_string()))?;
        let (utc_offset_minutes, now_unix_ms) = (now.utc_offset_minutes, now.unix_ms);
        let store = Store::new(conversations_dir(data_dir));
        // Held until the new conversation is marked current: a deletion cannot slip in between.
        let mut current_slot = current.lock();
        let config = RecorderConfig {
            // The engine's decoded and sent audio are both 48 kHz mono.
            user_sample_rate_hz: 48_000,
            assistant_sample_rate_hz: 48_000,
            utc_offset_minutes,
            save_audio: saved == Saved::Everything,
            ..RecorderConfig::default()
        };
        let mut recorder = open(&store, current_slot.as_deref(), config, now_unix_ms)?;
        log::info!("saving this conversation in {}", recorder.dir().display());
        let id = recorder.id().to_owned();
        *current_slot = Some(id.clone());
        drop(current_slot);
        let (sender, receiver) = mpsc::channel::<Record>();
        let (news_sender, news) = tokio::sync::mpsc::unbounded_channel();
        let thread = std::thread::Builder::new()
            .name("walkie-recording".to_owned())
            .spawn(move || {
                let mut last_ms = now_unix_ms;
                let mut failing = false;
                loop {
                    match receiver.recv_timeout(RETRY_INTERVAL) {
                        Ok(record) => last_ms = save(&mut recorder, record),
                        Err(mpsc::RecvTimeoutError::Timeout) if failing => {
                            let now_ms = chrono::Utc::now().timestamp_millis();
                            let _ = recorder.retry_saving(now_ms);
                        }
                        Err(mpsc::RecvTimeoutError::Timeout) => {}
                        Err(mpsc::RecvTimeoutError::Disconnected) => break,
                    }
                    let problem = recorder.save_problem();
                    if problem.is_some() != failing {
                        failing = problem.is_some();
                        let lost_audio_ms = recorder.dropped_audio_ms();
                        let news =
                            problem.map_or(SavingNews::Resumed { lost_audio_ms }, |problem| {
                                log::warn!("saving stopped: {problem}");
                                SavingNews::Stopped {
                                    reason: why_not_saving(problem),
                                    details: problem.to_string(),
                                }
                            });
                        let _ = news_sender.send(news);
                    }
                }
                if let Err(error) = recorder.close(last_ms) {
                    log::warn!("the conversation could not be closed cleanly: {error}");
                }
            })
            .map_err(|error| {
                current.lock().take();
                SavingError::Thread(error)
            })?;
        Ok(Self {
            sender: Some(sender),
            thread: Some(thread),
            news,
            current: current.clone(),
            id,
        })
    }

    /// The next news of the saving; pending while there is none (and forever once the thread
    /// has ended).
    pub async fn next_news(&mut self) -> SavingNews {
        match self.news.recv().await {
            Some(news) => news,
            None => std::future::pending().await,
        }
    }

    /// The conversation's id (its folder name).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Closes the conversation on disk on a blocking thread (the close record, the transcripts,
    /// the WAV headers); resolves once they are written.
    pub async fn close(self) {
        if let Err(error) = tauri::async_runtime::spawn_blocking(move || drop(self)).await {
            log::warn!("closing the conversation failed: {error}");
        }
    }

    /// One record of the conversation machine, in its order.
    pub fn save(&mut self, record: Record) {
        if let Some(sender) = &self.sender
            && sender.send(record).is_err()
        {
            log::warn!("the recording thread stopped; this conversation is no longer saved");
            self.sender = None;
        }
    }
}

/// Hands one record of the conversation machine to the recorder; returns its time.
fn save(recorder: &mut Recorder, record: Record) -> i64 {
    let at = |unix_ms: walkie_conversation::UnixMs| unix_ms.get();
    match record {
        Record::Event {
            unix_ms,
            event,
            note,
            transcript,
        } => {
            recorder.record(&event, note, &transcript, at(unix_ms));
            at(unix_ms)
        }
        Record::Transcript {
            unix_ms,
            transcript,
        } => {
            recorder.transcript(&transcript, at(unix_ms));
            at(unix_ms)
        }
        Record::UserAudio { unix_ms, chunk } => {
            recorder.user_audio(chunk.samples(), at(unix_ms));
            at(unix_ms)
        }
        Record::Cancelled {
            unix_ms,
            message_id,
        } => {
            recorder.message_cancelled(&message_id, at(unix_ms));
            at(unix_ms)
        }
        Record::Billed {
            unix_ms,
            tokens,
            cost_usd,
            model,
            transcribed_seconds,
        } => {
            recorder.billed(walkie_store::Billed {
                unix_ms: at(unix_ms),
                tokens,
                cost_usd,
                model,
                transcribed_seconds,
            });
            at(unix_ms)
        }
        Record::Titled { unix_ms, title } => {
            recorder.titled(&title, at(unix_ms));
            at(unix_ms)
        }
    }
}

/// Why saving stopped, as a phrase that says what to do about it (the error itself goes
/// behind "Details…").
fn why_not_saving(problem: &StoreError) -> String {
    if problem.is_disk_full() {
        format!(
            "the disk is full. Free some space, or choose another data folder in Settings; until then the transcript and up to {} s of audio wait in memory",
            RecorderConfig::default().max_unsaved_audio_ms / 1000
        )
    } else if problem.is_read_only() {
        "the data folder cannot be written. Choose another one in Settings".to_owned()
    } else {
        "writing to the data folder failed; Walkie tries again every second".to_owned()
    }
}

impl Drop for Recording {
    fn drop(&mut self) {
        // Closing the channel tells the thread to close the conversation; wait for the files.
        self.sender = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        // Closed on disk: it may be deleted from now on.
        let mut current = self.current.lock();
        if current.as_deref() == Some(self.id.as_str()) {
            *current = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use walkie_store::journal::{JOURNAL_FILE, read_journal};

    use super::*;

    fn closed_cleanly(dir: &Path) -> bool {
        read_journal(&dir.join(JOURNAL_FILE))
            .expect("the journal is there")
            .closed_cleanly()
    }

    #[test]
    fn what_a_killed_run_left_open_is_repaired_before_the_first_recording_and_the_live_one_never() {
        let data_dir =
            std::env::temp_dir().join(format!("walkie-repair-once-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&data_dir);
        let store = Store::new(conversations_dir(&data_dir));
        // An earlier run, killed while it recorded: its recorder never closed.
        let left_open = store
            .start(RecorderConfig::default(), 1_700_000_000_000)
            .expect("a recorder starts");
        let left_open_dir = left_open.dir().to_owned();
        drop(left_open);
        assert!(!closed_cleanly(&left_open_dir));

        let saving = Saving::new(CurrentConversation::default(), Saved::Everything);
        let data = Ok(data_dir.clone());
        let now = WallClock {
            unix_ms: 1_700_000_100_000,
            utc_offset_minutes: 0,
        };
        let recording = tauri::async_runtime::block_on(saving.start(&data, now))
            .expect("the recording starts")
            .expect("everything is saved");
        assert!(
            closed_cleanly(&left_open_dir),
            "repaired before the recording started"
        );
        let live_dir = conversations_dir(&data_dir).join(recording.id());
        // The next call's start (and a repair asked for again) leaves the live one alone.
        tauri::async_runtime::block_on(saving.repair(&data));
        assert!(!closed_cleanly(&live_dir));
        // So does a repair of a folder not yet repaired: the live one is current.
        tauri::async_runtime::block_on(
            Saving::new(saving.current.clone(), Saved::Everything).repair(&data),
        );
        assert!(!closed_cleanly(&live_dir));

        tauri::async_runtime::block_on(recording.close());
        assert!(closed_cleanly(&live_dir), "closed by its recording");
        assert_eq!(saving.current.id(), None);
        let _ = std::fs::remove_dir_all(&data_dir);
    }

    #[test]
    fn a_choice_to_save_nothing_takes_effect_with_the_next_conversation_and_leaves_no_folder() {
        let data_dir =
            std::env::temp_dir().join(format!("walkie-save-nothing-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&data_dir);
        let saving = Saving::new(CurrentConversation::default(), Saved::Everything);
        let mut in_force = saving.watch_in_force();
        saving.choose(Saved::Nothing);
        assert_eq!(
            saving.in_force(),
            Saved::Everything,
            "not before one begins"
        );
        let data = Ok(data_dir.clone());
        let now = WallClock {
            unix_ms: 1_700_000_100_000,
            utc_offset_minutes: 0,
        };
        let recording =
            tauri::async_runtime::block_on(saving.start(&data, now)).expect("nothing to fail");
        assert!(recording.is_none());
        assert!(in_force.has_changed().unwrap(), "the window is told");
        assert_eq!(*in_force.borrow_and_update(), Saved::Nothing);
        assert!(
            !conversations_dir(&data_dir).exists(),
            "not even the conversations folder"
        );
        assert_eq!(saving.current.id(), None);
    }
}
