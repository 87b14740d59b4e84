//! The conversation's updates of the window (its status, transcript, meters and spending) go to
//! the page in batches, one Tauri event per batch, in the order they were made. Every event the
//! app sends costs the window's main thread and the web process a delivery of its own, whatever
//! it carries, and the page shows readings and transcript at most ten times a second anyway. A
//! status goes out within [`STATUS_WAIT_MS`] of being made, with everything made before it.
//!
//! [`Batches`] decides when a batch is due (time comes in as an argument); [`WindowUpdates`] is
//! its driver, a task that carries the batches to the page.

use serde::Serialize;
use tauri::{AppHandle, Emitter};
use tokio::sync::mpsc;

use crate::edges::Clock;

/// The event name the webview listens on for batches of [`WindowUpdate`]s.
pub const UPDATES_EVENT: &str = "walkie://updates";

/// How long a reading, a transcript event or the spending waits for others to go with it: the
/// page's pace for them.
pub const PACED_WAIT_MS: u64 = 100;
/// How long a status waits for the updates made in the same moment (a reply's start: three
/// statuses and the transcript's first events within a few milliseconds).
pub const STATUS_WAIT_MS: u64 = 10;

/// What an update of the window is, as the page's `updates.push` takes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum UpdateKind {
    /// The status line: a [`crate::StatusEvent`] with its number.
    Status,
    /// An AG-UI transcript event, the marks on its messages included (a reply cut off, a
    /// recording taken back, how long a reply took to be heard: CUSTOM events,
    /// `walkie_session::transcript::MARK_*`).
    Transcript,
    /// A meter reading of the microphone or the speaker.
    Level,
    /// What the conversation has spent: a [`crate::SpendingView`].
    Spending,
}

impl UpdateKind {
    /// How long an update of this kind may wait for others.
    fn wait_ms(self) -> u64 {
        match self {
            UpdateKind::Status => STATUS_WAIT_MS,
            UpdateKind::Transcript | UpdateKind::Level | UpdateKind::Spending => PACED_WAIT_MS,
        }
    }
}

/// One update of the window: `{ kind, payload }` in the page.
#[derive(Clone, Debug, Serialize)]
pub struct WindowUpdate {
    pub kind: UpdateKind,
    pub payload: serde_json::Value,
}

impl WindowUpdate {
    /// The update of this kind carrying `payload` as the page reads it.
    pub fn new(kind: UpdateKind, payload: impl Serialize) -> Result<Self, serde_json::Error> {
        Ok(Self {
            kind,
            payload: serde_json::to_value(payload)?,
        })
    }
}

/// The updates made and not yet sent, and when they are due: each update is due its kind's wait
/// after it was made, and a batch when its earliest update is.
#[derive(Debug)]
pub struct Batches<T> {
    pending: Vec<T>,
    due_ms: Option<u64>,
}

impl<T> Default for Batches<T> {
    fn default() -> Self {
        Self {
            pending: Vec::new(),
            due_ms: None,
        }
    }
}

impl<T> Batches<T> {
    /// Adds `update`, made at `now_ms`, which may wait `wait_ms` for others.
    pub fn push(&mut self, update: T, wait_ms: u64, now_ms: u64) {
        let due_ms = now_ms.saturating_add(wait_ms);
        self.due_ms = Some(self.due_ms.map_or(due_ms, |earlier| earlier.min(due_ms)));
        self.pending.push(update);
    }

    /// When the pending batch is due (`None`: nothing is pending).
    pub fn due_ms(&self) -> Option<u64> {
        self.due_ms
    }

    /// The pending updates in the order they were made, if they are due at `now_ms`.
    pub fn poll_batch(&mut self, now_ms: u64) -> Option<Vec<T>> {
        if self.due_ms? > now_ms {
            return None;
        }
        self.due_ms = None;
        Some(std::mem::take(&mut self.pending))
    }
}

/// Where the app's parts send the window's updates; the task [`WindowUpdates::start`] spawns
/// sends them to the page in batches.
#[derive(Clone)]
pub struct WindowUpdates {
    sender: mpsc::UnboundedSender<WindowUpdate>,
}

impl WindowUpdates {
    /// Starts the task that sends `app`'s main window the updates, in batches.
    pub fn start(app: AppHandle) -> Self {
        let (sender, receiver) = mpsc::unbounded_channel();
        tauri::async_runtime::spawn(send_batches(app, receiver, Clock::start()));
        Self { sender }
    }

    /// Sends `update` with the next batch.
    pub fn send(&self, update: WindowUpdate) {
        if self.sender.send(update).is_err() {
            log::warn!("the window's updates are no longer sent: the app is exiting");
        }
    }
}

/// The driver of [`Batches`]: takes in the updates as they come and emits each batch when due,
/// until every sender is gone.
async fn send_batches(
    app: AppHandle,
    mut receiver: mpsc::UnboundedReceiver<WindowUpdate>,
    clock: Clock,
) {
    let mut batches = Batches::default();
    loop {
        if let Some(batch) = batches.poll_batch(clock.now_ms())
            && let Err(error) = app.emit(UPDATES_EVENT, batch)
        {
            log::warn!("could not send the window its updates: {error}");
        }
        tokio::select! {
            update = receiver.recv() => match update {
                Some(update) => {
                    let wait_ms = update.kind.wait_ms();
                    batches.push(update, wait_ms, clock.now_ms());
                }
                None => return,
            },
            () = clock.sleep_until(batches.due_ms()) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_update_alone_is_sent_when_its_wait_is_over() {
        let mut batches = Batches::default();
        batches.push("reading", PACED_WAIT_MS, 1_000);
        assert_eq!(batches.due_ms(), Some(1_100));
        assert_eq!(batches.poll_batch(1_099), None);
        assert_eq!(batches.poll_batch(1_100), Some(vec!["reading"]));
        assert_eq!(batches.due_ms(), None, "nothing is left pending");
        assert_eq!(batches.poll_batch(5_000), None);
    }

    #[test]
    fn updates_made_while_one_waits_go_with_it_in_the_order_they_were_made() {
        let mut batches = Batches::default();
        batches.push("reading", PACED_WAIT_MS, 1_000);
        batches.push("delta", PACED_WAIT_MS, 1_040);
        batches.push("reading again", PACED_WAIT_MS, 1_090);
        assert_eq!(
            batches.due_ms(),
            Some(1_100),
            "the first one's wait decides"
        );
        assert_eq!(
            batches.poll_batch(1_100),
            Some(vec!["reading", "delta", "reading again"])
        );
    }

    #[test]
    fn a_status_brings_the_batch_forward_with_what_was_made_before_it() {
        let mut batches = Batches::default();
        batches.push("delta", PACED_WAIT_MS, 1_000);
        batches.push("status", STATUS_WAIT_MS, 1_020);
        assert_eq!(batches.due_ms(), Some(1_030));
        batches.push("reading", PACED_WAIT_MS, 1_025);
        assert_eq!(
            batches.due_ms(),
            Some(1_030),
            "a later reading does not put it off"
        );
        assert_eq!(
            batches.poll_batch(1_030),
            Some(vec!["delta", "status", "reading"])
        );
    }

    #[test]
    fn a_batch_after_a_sent_one_waits_from_its_own_first_update() {
        let mut batches = Batches::default();
        batches.push("status", STATUS_WAIT_MS, 1_000);
        assert_eq!(batches.poll_batch(1_010), Some(vec!["status"]));
        batches.push("reading", PACED_WAIT_MS, 1_011);
        assert_eq!(batches.due_ms(), Some(1_111));
    }

    #[test]
    fn updates_serialise_as_the_page_takes_them() {
        let update = WindowUpdate::new(
            UpdateKind::Level,
            serde_json::json!({ "direction": "input", "rmsDbfs": -20.0 }),
        )
        .unwrap();
        let json = serde_json::to_value(vec![update]).unwrap();
        assert_eq!(json[0]["kind"], "level");
        assert_eq!(json[0]["payload"]["direction"], "input");
        assert_eq!(json[0].as_object().unwrap().len(), 2);
    }
}
