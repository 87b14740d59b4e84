//! Saving the conversation as it happens: the journal, `transcript.md`/`transcript.json` and
//! one WAV per turn (walkie-store).
//!
//! Why a thread of its own: the store writes and fsyncs files, and the conversation task — which
//! keeps the call, the devices and the screen in step — must never wait on a disk. The task
//! hands over the session's events and the microphone audio as they come; this thread feeds the
//! recorder. A store that cannot save (read-only folder, full disk) never stops the
//! conversation: the recorder keeps what it could not write in memory and retries.
//!
//! While it writes, the conversation is marked current ([`CurrentConversation`]) so the history
//! panel cannot delete it from under the recorder.

use std::sync::mpsc;
use std::thread::JoinHandle;

use walkie_session::{AudioChunk, StampedEvent};
use walkie_store::{RecorderConfig, Store, conversations_dir};

use crate::history::CurrentConversation;

enum Saved {
    Event(Box<StampedEvent>),
    UserAudio(AudioChunk),
}

/// The conversation being saved. Dropping it closes the conversation on disk.
pub struct Recording {
    sender: Option<mpsc::Sender<(Saved, i64)>>,
    thread: Option<JoinHandle<()>>,
    current: CurrentConversation,
    id: String,
}

impl Recording {
    /// Starts saving a new conversation under the data folder, after repairing what an
    /// unclean exit left behind. It is `current` until this recording is dropped.
    pub fn start(
        current: &CurrentConversation,
        data_dir: &std::path::Path,
        utc_offset_minutes: i32,
        now_unix_ms: i64,
    ) -> Result<Self, String> {
        let store = Store::new(conversations_dir(data_dir));
        match store.recover(now_unix_ms, None) {
            Ok(reports) => {
                for report in reports {
                    log::info!("repaired a conversation left open: {report:?}");
                }
            }
            Err(error) => log::warn!("could not check earlier conversations: {error}"),
        }
        // Held until the new conversation is marked current: a deletion cannot slip in between.
        let mut current_slot = current.lock();
        let mut recorder = store
            .start(
                RecorderConfig {
                    // The engine's decoded and sent audio are both 48 kHz mono.
                    user_sample_rate_hz: 48_000,
                    assistant_sample_rate_hz: 48_000,
                    utc_offset_minutes,
                    ..RecorderConfig::default()
                },
                now_unix_ms,
            )
            .map_err(|error| format!("conversations are not being saved: {error}"))?;
        log::info!("saving this conversation in {}", recorder.dir().display());
        let id = recorder.id().to_owned();
        *current_slot = Some(id.clone());
        drop(current_slot);
        let (sender, receiver) = mpsc::channel::<(Saved, i64)>();
        let thread = std::thread::Builder::new()
            .name("walkie-recording".to_owned())
            .spawn(move || {
                let mut last_ms = now_unix_ms;
                while let Ok((saved, unix_ms)) = receiver.recv() {
                    last_ms = unix_ms;
                    match saved {
                        Saved::Event(event) => {
                            recorder.record(&event, unix_ms);
                        }
                        Saved::UserAudio(chunk) => recorder.user_audio(chunk.samples(), unix_ms),
                    }
                }
                if let Err(error) = recorder.close(last_ms) {
                    log::warn!("the conversation could not be closed cleanly: {error}");
                }
            })
            .map_err(|error| {
                current.lock().take();
                format!("could not start saving: {error}")
            })?;
        Ok(Self {
            sender: Some(sender),
            thread: Some(thread),
            current: current.clone(),
            id,
        })
    }

    fn send(&mut self, saved: Saved, unix_ms: i64) {
        if let Some(sender) = &self.sender
            && sender.send((saved, unix_ms)).is_err()
        {
            log::warn!("the recording thread stopped; this conversation is no longer saved");
            self.sender = None;
        }
    }

    /// One session event, in stream order.
    pub fn event(&mut self, event: &StampedEvent, unix_ms: i64) {
        self.send(Saved::Event(Box::new(event.clone())), unix_ms);
    }

    /// Microphone audio exactly as it was sent.
    pub fn user_audio(&mut self, chunk: AudioChunk, unix_ms: i64) {
        self.send(Saved::UserAudio(chunk), unix_ms);
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
