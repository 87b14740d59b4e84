//! The Tauri shell: the one place where the webview, the OS and Walkie's core meet.
//!
//! The shell owns no conversation logic. Webview calls (commands) become inputs of the
//! conversation driver ([`conversation`]), which owns the turn controller; the driver's outputs
//! come back to the webview as events: the status line and the transcript (AG-UI events).
//! The history panel's commands are in [`history`], the settings dialog's in
//! [`settings_commands`].

mod autostart;
pub mod closing;
pub mod conversation;
pub mod desktop;
pub mod dialler;
mod edges;
pub mod history;
#[cfg(test)]
mod ipc_contract;
mod mic_test;
mod pictures;
#[cfg(target_os = "linux")]
mod portal;
pub mod recording;
pub mod remote;
mod screenshot;
mod settings_commands;
mod shortcut;
mod tool_servers;
pub use walkie_settings::{self as settings, plan, secrets};
mod status;
mod voice_preview;
mod window_updates;

use std::sync::Mutex;

use tauri::{AppHandle, Emitter, Manager};
use tokio::sync::{mpsc, oneshot};

use conversation::{Command, Ui};
use history::{CurrentConversation, History};
use plan::Plan;
use recording::Saving;
use settings_commands::{SettingsState, load_settings};
pub use status::{ConnectionState, StatusEvent};
use walkie_conversation::{DeviceDirection, LevelReading};
use window_updates::{UpdateKind, WindowUpdate, WindowUpdates};

/// How the connection is doing: a [`walkie_conversation::ConnectionHealth`] (its level, its
/// sentence and the figures behind it), sent when the level or the sentence changes.
pub const HEALTH_EVENT: &str = "walkie://connection-health";
/// A tool call that asks first waits for the user: the card's content.
pub const TOOL_APPROVAL_EVENT: &str = "walkie://tool-approval";
/// A tool call's card is no longer needed (decided, expired, or its call ended).
pub const TOOL_APPROVAL_CLOSED_EVENT: &str = "walkie://tool-approval-closed";

/// What the conversation has spent, for the window: its tokens by modality, the user's speech
/// transcribed by the minute, and their cost when the models' prices are known (`free`: the
/// local provider bills nothing, the cost is what the same use would cost at those prices).
#[derive(Clone, Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SpendingView<'a> {
    responses: u64,
    total_tokens: u64,
    text_in: u64,
    cached_text_in: u64,
    audio_in: u64,
    cached_audio_in: u64,
    image_in: u64,
    cached_image_in: u64,
    text_out: u64,
    audio_out: u64,
    cost_usd: Option<f64>,
    model: Option<&'a str>,
    taken_on: Option<&'a str>,
    free: bool,
    transcribed_seconds: f64,
    transcription_cost_usd: Option<f64>,
    transcription_model: Option<&'a str>,
    transcription_taken_on: Option<&'a str>,
    /// The share of the input that was cached, in the last reply and over the conversation.
    last_cached_share: Option<f64>,
    cached_share: Option<f64>,
    /// The time of the sessions billed by duration (GPT-Live), active and paused.
    active_seconds: f64,
    paused_seconds: f64,
}

impl<'a> From<&'a walkie_conversation::Spending> for SpendingView<'a> {
    fn from(spending: &'a walkie_conversation::Spending) -> Self {
        let tokens = &spending.tokens;
        let pricing = spending.pricing.as_ref();
        let transcription = spending.transcription_pricing.as_ref();
        let (last_cached_share, cached_share) = spending.cached_shares();
        Self {
            responses: spending.responses,
            total_tokens: tokens.total(),
            text_in: tokens.text_in,
            cached_text_in: tokens.cached_text_in,
            audio_in: tokens.audio_in,
            cached_audio_in: tokens.cached_audio_in,
            image_in: tokens.image_in,
            cached_image_in: tokens.cached_image_in,
            text_out: tokens.text_out,
            audio_out: tokens.audio_out,
            cost_usd: spending.cost_usd,
            model: pricing.map(|pricing| pricing.model.as_str()),
            taken_on: pricing.map(|pricing| pricing.taken_on.as_str()),
            free: pricing
                .or(transcription)
                .is_some_and(|pricing| pricing.free),
            transcribed_seconds: spending.transcribed_seconds,
            transcription_cost_usd: spending.transcription_cost_usd,
            transcription_model: transcription.map(|pricing| pricing.model.as_str()),
            transcription_taken_on: transcription.map(|pricing| pricing.taken_on.as_str()),
            last_cached_share,
            cached_share,
            active_seconds: spending.session_seconds.active,
            paused_seconds: spending.session_seconds.paused,
        }
    }
}

/// One meter reading, as the webview reads it.
#[derive(Clone, Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct LevelEvent {
    /// `input` (the microphone) or `output` (the speaker).
    direction: DeviceDirection,
    rms_dbfs: f32,
    peak_dbfs: f32,
}

/// The one shape every command's error takes in the webview: `{ message, field, problems }`,
/// the sentence, the settings field at fault if there is one, and each field's problem when a
/// save is refused for several. `describeError` (ui/status.js) reads `message`; the settings
/// dialog also reads `field` and `problems`.
#[derive(serde::Serialize)]
pub(crate) struct WebviewError<'a> {
    pub message: String,
    pub field: Option<&'static str>,
    pub problems: &'a [settings::InvalidSetting],
}

impl WebviewError<'_> {
    /// An error with its sentence only.
    pub fn said(error: &impl std::fmt::Display) -> Self {
        WebviewError {
            message: error.to_string(),
            field: None,
            problems: &[],
        }
    }
}

/// Why a command could not do what the webview asked (sent as a [`WebviewError`], so the
/// settings dialog can point at the field at fault).
#[derive(Debug, thiserror::Error)]
pub enum CommandError {
    /// The conversation task is gone (it stopped unexpectedly, or the app is closing).
    #[error("the conversation has stopped; press Connect to start it again")]
    ConversationStopped,
    #[error(transparent)]
    Settings(#[from] settings::SettingsError),
    #[error(transparent)]
    Secret(#[from] secrets::SecretError),
    #[error("the global shortcut {shortcut} could not be registered: {reason}")]
    Shortcut { shortcut: String, reason: String },
    #[error("could not copy: {0}")]
    Clipboard(String),
    /// A test call the user asked for did not connect: the sentence says why.
    #[error("{0}")]
    TestCall(String),
    /// What the user gave cannot be used as it is: the sentence says what to do.
    #[error("{0}")]
    Message(String),
    #[error("a background task failed: {0}")]
    Background(String),
}

impl CommandError {
    /// The settings field at fault, if one is.
    pub(crate) fn field(&self) -> Option<&'static str> {
        match self {
            CommandError::Settings(settings::SettingsError::Invalid(invalid)) => {
                Some(invalid.field)
            }
            CommandError::Shortcut { .. } => Some("globalShortcut"),
            _ => None,
        }
    }
}

impl serde::Serialize for CommandError {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        WebviewError {
            field: self.field(),
            ..WebviewError::said(self)
        }
        .serialize(serializer)
    }
}

/// The webview's way to the conversation task; [`start_conversation`] replaces the way when it
/// starts the task again, and [`Conversation::close`] closes it for good when the app exits.
struct Conversation {
    link: Mutex<Link>,
    saving: Saving,
}

/// The running conversation task, as the shell reaches it.
struct Link {
    commands: mpsc::UnboundedSender<Command>,
    /// Resolves (with an error: nothing is ever sent) once the task has ended, its recording
    /// closed on disk: the task holds the sender and drops it when it ends, panics included.
    ended: Option<oneshot::Receiver<()>>,
    /// The app is exiting: no task starts again.
    closed: bool,
}

impl Conversation {
    fn new(saving: Saving) -> Self {
        Self {
            link: Mutex::new(Link {
                commands: mpsc::unbounded_channel().0,
                ended: None,
                closed: false,
            }),
            saving,
        }
    }

    fn send(&self, command: Command) -> Result<(), CommandError> {
        lock(&self.link)
            .commands
            .send(command)
            .map_err(|_| CommandError::ConversationStopped)
    }

    /// Closes the command channel for good, which hangs up the call and closes its
    /// conversation on disk; resolves once the task has ended (at once if none runs).
    fn close(&self) -> impl std::future::Future<Output = ()> + use<> {
        let ended = {
            let mut link = lock(&self.link);
            link.closed = true;
            link.commands = mpsc::unbounded_channel().0;
            link.ended.take()
        };
        async move {
            if let Some(ended) = ended {
                let _ = ended.await;
            }
        }
    }

    fn is_closed(&self) -> bool {
        lock(&self.link).closed
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Starts the conversation task (connecting as the settings say), and tells the window if it
/// ever stops: the status line says so, and Connect starts it again. Once the app is exiting,
/// it starts nothing.
fn start_conversation(app: &AppHandle) {
    let (commands, receiver) = mpsc::unbounded_channel();
    let (ended_sender, ended) = oneshot::channel::<()>();
    let conversation = app.state::<Conversation>();
    {
        let mut link = lock(&conversation.link);
        if link.closed {
            return;
        }
        link.commands = commands;
        link.ended = Some(ended);
    }
    let saving = conversation.saving.clone();
    let settings = app.state::<SettingsState>();
    let (settings, data_dir, settings_notice) = (
        settings.current(),
        settings.data_dir.clone(),
        lock(&settings.migrated).take(),
    );
    let ui = WindowUi { app: app.clone() };
    let dialler = app.state::<dialler::Dialler>().inner().clone();
    let task = async move {
        // Dropped when this task ends (returns, panics or is cancelled): the exit waits for it.
        let _ended = ended_sender;
        let mut plan =
            tauri::async_runtime::spawn_blocking(move || Plan::resolve(&settings, data_dir))
                .await
                .expect("resolving the settings does not panic");
        plan.settings_notice = settings_notice;
        conversation::run(plan, ui, receiver, saving, dialler).await;
    };
    let app = app.clone();
    tauri::async_runtime::spawn(supervise(task, move |why| {
        if app.state::<Conversation>().is_closed() {
            log::info!("the conversation task ended: the app is exiting");
            return;
        }
        log::error!("the conversation task stopped: {why}");
        show_status(&app, StatusEvent::stopped());
    }));
}

/// Runs `task` on a task of its own, then calls `stopped` with why it ended (a panic's message,
/// or that it returned).
async fn supervise(
    task: impl std::future::Future<Output = ()> + Send + 'static,
    stopped: impl FnOnce(String),
) {
    let why = match tauri::async_runtime::spawn(task).await {
        Ok(()) => "it returned".to_owned(),
        Err(error) => error.to_string(),
    };
    stopped(why);
}

/// Shows a status in the window (and the tray), numbered after the last one.
fn show_status(app: &AppHandle, status: StatusEvent) {
    if let Some(tray) = app.try_state::<desktop::Tray>() {
        tray.follow(status.state);
    }
    let Some(latest) = app.try_state::<LatestStatus>() else {
        return;
    };
    // Sent under the lock, so statuses reach the window in the order of their numbers.
    let mut latest = lock(&latest.0);
    let seq = latest.as_ref().map_or(0, |shown| shown.seq) + 1;
    let sequenced = SequencedStatus { seq, status };
    send_update(app, UpdateKind::Status, &sequenced);
    *latest = Some(sequenced);
}

/// Sends the window an update with the next batch (`walkie://updates`).
fn send_update(app: &AppHandle, kind: UpdateKind, payload: impl serde::Serialize) {
    let Some(updates) = app.try_state::<WindowUpdates>() else {
        return;
    };
    match WindowUpdate::new(kind, payload) {
        Ok(update) => updates.send(update),
        Err(error) => log::warn!("could not send the window an update ({kind:?}): {error}"),
    }
}

/// The latest status, for a page that loads (or reloads) after it was emitted.
#[derive(Default)]
struct LatestStatus(Mutex<Option<SequencedStatus>>);

/// A status with its place in the order of statuses, so the page can tell a stale one.
#[derive(Clone, Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct SequencedStatus {
    seq: u64,
    #[serde(flatten)]
    status: StatusEvent,
}

/// Emits the conversation's outputs to the main window.
struct WindowUi {
    app: AppHandle,
}

impl Ui for WindowUi {
    fn status(&mut self, status: StatusEvent) {
        show_status(&self.app, status);
    }

    fn level(&mut self, direction: DeviceDirection, level: LevelReading) {
        let reading = LevelEvent {
            direction,
            rms_dbfs: level.rms_dbfs,
            peak_dbfs: level.peak_dbfs,
        };
        send_update(&self.app, UpdateKind::Level, reading);
    }

    fn spending(&mut self, spending: &walkie_conversation::Spending) {
        send_update(
            &self.app,
            UpdateKind::Spending,
            SpendingView::from(spending),
        );
    }

    // The engine's account of each reply is in the log; the window shows the connection's
    // health instead.
    fn reply_playout(&mut self, _: &walkie_conversation::ReplyPlayout) {}

    fn connection_health(&mut self, health: &walkie_conversation::ConnectionHealth) {
        if let Err(error) = self.app.emit(HEALTH_EVENT, health) {
            log::warn!("could not show the connection's health in the window: {error}");
        }
    }

    fn ask_approval(&mut self, approval: &walkie_conversation::ApprovalRequest) {
        let card = serde_json::json!({
            "callId": approval.call_id,
            "title": approval.title,
            "arguments": serde_json::to_string_pretty(&approval.arguments).unwrap_or_default(),
            "timeoutSeconds": walkie_conversation::APPROVAL_TIMEOUT_MS / 1000,
        });
        if let Err(error) = self.app.emit(TOOL_APPROVAL_EVENT, card) {
            log::warn!("could not show a tool call to approve in the window: {error}");
        }
    }

    fn approval_closed(&mut self, call_id: &str) {
        if let Err(error) = self.app.emit(TOOL_APPROVAL_CLOSED_EVENT, call_id) {
            log::warn!("could not close a tool call's card in the window: {error}");
        }
    }

    fn transcript(&mut self, event: &walkie_agui::Event) {
        send_update(&self.app, UpdateKind::Transcript, event);
    }
}

/// The latest status (`null` before the first): what a page that just loaded should show.
#[tauri::command]
fn status(latest: tauri::State<'_, LatestStatus>) -> Option<SequencedStatus> {
    lock(&latest.0).clone()
}

/// Sends `command` to the conversation task, if it runs.
pub(crate) fn send_to_conversation(app: &AppHandle, command: Command) -> Result<(), CommandError> {
    app.state::<Conversation>().send(command)
}

/// Hang up (if connected) and connect again; start the conversation task again if it stopped.
#[tauri::command]
fn connect(
    app: AppHandle,
    conversation: tauri::State<'_, Conversation>,
) -> Result<(), CommandError> {
    match conversation.send(Command::Reconnect) {
        Err(CommandError::ConversationStopped) => {
            start_conversation(&app);
            Ok(())
        }
        sent => sent,
    }
}

/// Stop trying to get a dropped call back (the Connect button reads Cancel meanwhile).
#[tauri::command]
fn cancel_reconnect(conversation: tauri::State<'_, Conversation>) -> Result<(), CommandError> {
    conversation.send(Command::CancelRedial)
}

/// The push-to-talk control went down (`pressed == true`) or up.
#[tauri::command]
fn push_to_talk(
    conversation: tauri::State<'_, Conversation>,
    pressed: bool,
) -> Result<(), CommandError> {
    conversation.send(Command::PushToTalk { pressed })
}

/// The user takes the recording under way back (Escape): nothing of it is sent.
#[tauri::command]
fn cancel_press(conversation: tauri::State<'_, Conversation>) -> Result<(), CommandError> {
    conversation.send(Command::CancelPress)
}

/// The user sent a message (typed text, attached pictures or both, `pictures` naming them
/// as [`pictures::attach_picture`] gave them): it goes to the call (once one is ready), and
/// its text is answered. Refused, so the page keeps it, when empty, too long for one message
/// to the provider, showing a picture no longer attached, or for a model that takes speech
/// only (GPT-Live).
#[tauri::command]
fn send_message(
    conversation: tauri::State<'_, Conversation>,
    attachments: tauri::State<'_, pictures::Attachments>,
    settings: tauri::State<'_, SettingsState>,
    text: String,
    pictures: Vec<u64>,
) -> Result<(), CommandError> {
    if text.trim().is_empty() && pictures.is_empty() {
        return Err(CommandError::Message(
            "Type a message or attach a picture first, then press Enter.".to_owned(),
        ));
    }
    let model = settings.current().model;
    if walkie_openai::live::is_live_model(&model) {
        return Err(CommandError::Message(format!(
            "Not sent: {} takes speech only; hold the key and say it (your text stays here).",
            model.trim()
        )));
    }
    if !walkie_session::turn::user_text_fits(text.trim()) {
        return Err(CommandError::Message(format!(
            "Too long to send: a typed message holds at most {} KiB; shorten it or send it in \
             parts.",
            walkie_session::turn::MAX_USER_TEXT_BYTES / 1024
        )));
    }
    let message = walkie_session::turn::UserMessage {
        text,
        pictures: attachments.look_up(&pictures)?,
    };
    conversation.send(Command::SendMessage(message))?;
    attachments.release(&pictures);
    Ok(())
}

/// The user allowed (or denied) a tool call shown in its card.
#[tauri::command]
fn tool_decision(
    conversation: tauri::State<'_, Conversation>,
    call_id: String,
    allowed: bool,
) -> Result<(), CommandError> {
    conversation.send(Command::ToolDecision { call_id, allowed })
}

/// Puts text (a message or the whole transcript) on the system clipboard.
#[tauri::command]
fn copy_text(app: AppHandle, text: String) -> Result<(), CommandError> {
    use tauri_plugin_clipboard_manager::ClipboardExt;
    app.clipboard()
        .write_text(text)
        .map_err(|error| CommandError::Clipboard(error.to_string()))
}

/// The log: `walkie.log` in the platform log folder (`WALKIE_LOG_DIR` overrides it), rotated at
/// 1 MB with 5 older files kept, the folder and files private to the user ([`logfile`]), plus
/// stderr. Nothing logged ever includes a key ([`secrets`] makes sure of it). Installed when the
/// app is set up, as the folder comes from the app's paths.
fn install_log(app: &AppHandle) -> Result<(), String> {
    use tauri_plugin_log::{Target, TargetKind, fern};
    let dir = match std::env::var_os("WALKIE_LOG_DIR") {
        Some(dir) if !dir.is_empty() => std::path::PathBuf::from(dir),
        _ => app
            .path()
            .app_log_dir()
            .map_err(|error| format!("no log folder: {error}"))?,
    };
    let mut targets = Vec::new();
    let no_file = match walkie_store::logfile::LogFile::open(&dir, 1_000_000, 5) {
        Ok(file) => {
            let file = Mutex::new(file);
            let output = fern::Output::call(move |record| {
                let mut file = file.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
                if let Err(error) = file.write_line(&record.args().to_string()) {
                    eprintln!("walkie: could not write the log file: {error}");
                }
            });
            targets.push(Target::new(TargetKind::Dispatch(
                fern::Dispatch::new().chain(output),
            )));
            None
        }
        Err(error) => Some(format!("no log file in {}: {error}", dir.display())),
    };
    targets.push(Target::new(TargetKind::Stderr));
    let (plugin, level, logger) = tauri_plugin_log::Builder::new()
        .clear_targets()
        .targets(targets)
        // Walkie's own reports at info; libraries (WebRTC, PulseAudio) only when they warn.
        .level(log::LevelFilter::Warn)
        .level_for("walkie", log::LevelFilter::Info)
        .level_for("walkie_app", log::LevelFilter::Info)
        .level_for("walkie_audio", log::LevelFilter::Info)
        .level_for("walkie_local", log::LevelFilter::Info)
        .level_for("walkie_rtc", log::LevelFilter::Info)
        .level_for("walkie_store", log::LevelFilter::Info)
        .split(app)
        .map_err(|error| format!("the log could not be set up: {error}"))?;
    app.plugin(plugin)
        .map_err(|error| format!("the log plugin could not start: {error}"))?;
    tauri_plugin_log::attach_logger(level, logger)
        .map_err(|error| format!("the log could not be installed: {error}"))?;
    if let Some(no_file) = no_file {
        log::warn!("{no_file}");
    }
    Ok(())
}

/// What the conversation under way saves, for the line under the talk button.
pub const SAVING_EVENT: &str = "walkie://saving";

/// Emits [`SAVING_EVENT`] whenever a conversation begins saving more or less than the one
/// before (the page asks `saving_in_force` when it loads).
fn tell_the_window_what_is_saved(app: &AppHandle, saving: &Saving) {
    let mut in_force = saving.watch_in_force();
    let app = app.clone();
    tauri::async_runtime::spawn(async move {
        while in_force.changed().await.is_ok() {
            let saved = *in_force.borrow_and_update();
            if let Err(error) = app.emit(SAVING_EVENT, saved) {
                log::warn!("could not tell the window what is saved: {error}");
            }
        }
    });
}

/// What the conversation under way saves.
#[tauri::command]
fn saving_in_force(saving: tauri::State<'_, Saving>) -> walkie_store::Saved {
    saving.in_force()
}

/// Saves what the user chose to save, with the other settings; the next conversation takes it.
pub(crate) fn persist_saved(
    app: &AppHandle,
    saved: walkie_store::Saved,
) -> Result<(), settings::SettingsError> {
    persist(app, |settings| settings.saved = saved)?;
    app.state::<Saving>().choose(saved);
    Ok(())
}

/// Saves a retention chosen in the history panel with the other settings.
pub(crate) fn persist_retention(
    app: &AppHandle,
    retention: walkie_store::Retention,
) -> Result<(), settings::SettingsError> {
    persist(app, |settings| settings.retention_days = retention.days())
}

/// Saves the settings in force with `change` made to them, and makes them the ones in force.
fn persist(
    app: &AppHandle,
    change: impl FnOnce(&mut settings::Settings),
) -> Result<(), settings::SettingsError> {
    let state = app.state::<SettingsState>();
    let mut settings = state.current();
    change(&mut settings);
    state.file.save(&settings)?;
    *state
        .current
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner()) = settings;
    Ok(())
}

/// Does what another launch of Walkie asked ([`remote`]): the talk key, the call, the window.
fn act_remotely(app: &AppHandle, action: remote::RemoteAction) {
    use remote::RemoteAction;
    let command = match action {
        RemoteAction::Show => return desktop::show_main_window(app),
        RemoteAction::Press => Command::PushToTalk { pressed: true },
        RemoteAction::Release => Command::PushToTalk { pressed: false },
        RemoteAction::Toggle => Command::TogglePress,
        RemoteAction::HangUp => Command::HangUp,
    };
    if let Some(conversation) = app.try_state::<Conversation>()
        && conversation.send(command).is_err()
    {
        log::warn!("walkie {} found no conversation to act on", action.flag());
    }
}

/// Builds and runs the app until it exits (its window closed, the tray's Quit, a signal), each
/// time after closing the conversation ([`closing`]).
pub fn run(hidden: bool) {
    let (file, settings, notice, migrated) = load_settings();
    let initial_shortcut = settings.global_shortcut.clone();
    let config_dir = file
        .path()
        .parent()
        .expect("the settings file is in a folder")
        .to_path_buf();
    let state = SettingsState {
        file,
        data_dir: plan::data_dir(&settings),
        current: Mutex::new(settings),
        notice: Mutex::new(notice),
        migrated: Mutex::new(migrated),
    };
    tauri::Builder::default()
        .plugin(desktop::single_instance())
        .plugin(shortcut::plugin())
        .plugin(desktop::window_state(&config_dir))
        .plugin(tauri_plugin_dialog::init())
        .plugin(tauri_plugin_opener::init())
        .plugin(tauri_plugin_clipboard_manager::init())
        .manage(state)
        .on_window_event(|window, event| {
            if let tauri::WindowEvent::CloseRequested { api, .. } = event
                && window.state::<SettingsState>().current().close_to_tray
            {
                api.prevent_close();
                desktop::close_to_tray(window.app_handle());
            }
            if matches!(
                event,
                tauri::WindowEvent::Resized(_) | tauri::WindowEvent::Moved(_)
            ) {
                desktop::save_window_state_soon(window.app_handle());
            }
            if let tauri::WindowEvent::DragDrop(tauri::DragDropEvent::Drop { paths, .. }) = event {
                pictures::files_dropped(window.app_handle(), paths.clone());
            }
        })
        .setup(move |app| {
            if let Err(error) = install_log(app.handle()) {
                eprintln!("walkie: {error}");
            }
            let current = CurrentConversation::default();
            let saved = app.state::<SettingsState>().current().saved;
            let saving = Saving::new(current.clone(), saved);
            app.manage(Conversation::new(saving.clone()));
            app.manage(saving.clone());
            tell_the_window_what_is_saved(app.handle(), &saving);
            app.manage(closing::Closing::default());
            app.manage(pictures::Attachments::default());
            app.manage(LatestStatus::default());
            app.manage(WindowUpdates::start(app.handle().clone()));
            app.manage(mic_test::MicTest::default());
            app.manage(voice_preview::Previewing::default());
            app.manage(dialler::Dialler::default());
            if let Err(error) = shortcut::register(app.handle(), "", &initial_shortcut) {
                log::warn!("{error}");
            }
            if desktop::wayland_session(
                std::env::var("WAYLAND_DISPLAY").ok().as_deref(),
                std::env::var("XDG_SESSION_TYPE").ok().as_deref(),
            ) {
                shortcut::hold_through_portal(app.handle(), initial_shortcut.clone());
            }
            match desktop::Tray::create(app.handle()) {
                Ok(tray) => {
                    app.manage(tray);
                }
                Err(error) => log::warn!("no tray icon: {error}"),
            }
            if hidden {
                desktop::start_hidden(app.handle());
            }
            desktop::paint_without_gl(app.handle());
            closing::exit_on_signals(app.handle().clone());
            let settings = app.state::<SettingsState>().current();
            let data_dir = app.state::<SettingsState>().data_dir.clone();
            // What an unclean exit left open is repaired off the main thread, while the first
            // call connects; that call's recording waits for it.
            let repaired_data_dir = data_dir.clone();
            tauri::async_runtime::spawn(async move { saving.repair(&repaired_data_dir).await });
            let history = match &data_dir {
                Ok(data_dir) => History::new(data_dir, current.clone()),
                Err(reason) => History::unavailable(reason.to_string(), current.clone()),
            };
            if let Err(reason) = history.allow_playback(app.handle()) {
                log::warn!("past turns cannot be played: {reason}");
            }
            app.manage(history);
            let retention = settings.retention();
            if let Err(error) = history::apply_retention(app.handle(), retention) {
                log::warn!("the retention setting could not be applied: {error}");
            }
            start_conversation(app.handle());
            Ok(())
        })
        .invoke_handler(tauri::generate_handler![
            status,
            connect,
            cancel_reconnect,
            push_to_talk,
            cancel_press,
            send_message,
            pictures::attach_picture,
            pictures::detach_picture,
            pictures::screenshot_targets,
            pictures::attach_screenshot,
            tool_decision,
            tool_servers::check_tool_server,
            tool_servers::tool_server_secrets,
            tool_servers::save_tool_server_secrets,
            copy_text,
            settings_commands::get_settings,
            settings_commands::list_devices,
            settings_commands::save_settings,
            settings_commands::set_turn_mode,
            settings_commands::check_settings,
            settings_commands::test_connection,
            voice_preview::preview_voice,
            voice_preview::stop_voice_preview,
            mic_test::mic_test_start,
            mic_test::mic_test_stop,
            settings_commands::choose_data_folder,
            settings_commands::set_api_key,
            settings_commands::forget_api_key,
            history::history_list,
            history::history_search,
            history::history_open,
            history::history_continue,
            history::history_delete,
            history::history_rename,
            history::history_export,
            history::history_open_folder,
            history::history_retention,
            history::history_set_retention,
            history::history_saved,
            history::history_set_saved,
            saving_in_force,
            history::history_expiring,
        ])
        .build(tauri::generate_context!())
        .expect("the Tauri runtime failed to start")
        .run(|app, event| {
            if let tauri::RunEvent::ExitRequested { code, api, .. } = event {
                closing::on_exit_requested(app, code, &api);
            }
        });
}

#[cfg(test)]
mod tests {
    use super::supervise;

    #[test]
    fn a_conversation_task_that_panics_is_reported_as_stopped_with_its_message() {
        let (told, heard) = std::sync::mpsc::channel();
        tauri::async_runtime::block_on(supervise(
            async { panic!("the machine broke") },
            move |why| told.send(why).expect("the test listens"),
        ));
        let why = heard
            .try_recv()
            .expect("the supervisor says why the task stopped");
        assert!(why.contains("panicked"), "{why}");
    }

    #[test]
    fn a_conversation_task_that_returns_is_reported_as_stopped_too() {
        let (told, heard) = std::sync::mpsc::channel();
        tauri::async_runtime::block_on(supervise(async {}, move |why| {
            told.send(why).expect("the test listens")
        }));
        assert_eq!(heard.try_recv().as_deref(), Ok("it returned"));
    }
}
