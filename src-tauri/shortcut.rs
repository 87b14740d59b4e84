//! The push-to-talk key from any app: X11's key grab (the global-shortcut plugin), or in a
//! Wayland session the desktop's GlobalShortcuts portal, which alone may hand an app a key
//! pressed in another app's window. Both translate a key going down and up into the same
//! command; toggle mode ignores the up in the turn controller.

use std::sync::Mutex;

use tauri::{AppHandle, Manager};
use tauri_plugin_global_shortcut::{GlobalShortcutExt, Shortcut, ShortcutState};

use crate::conversation::Command;
use crate::{CommandError, Conversation};

/// The plugin, with one handler: the shortcut going down and up is the push-to-talk control
/// going down and up.
pub fn plugin() -> tauri::plugin::TauriPlugin<tauri::Wry> {
    tauri_plugin_global_shortcut::Builder::new()
        .with_handler(|app, _shortcut, event| {
            push_to_talk(app, event.state() == ShortcutState::Pressed);
        })
        .build()
}

fn push_to_talk(app: &AppHandle, pressed: bool) {
    if let Some(conversation) = app.try_state::<Conversation>() {
        let _ = conversation.send(Command::PushToTalk { pressed });
    }
}

/// Replaces the shortcut `old` with `new` (either may be empty for none). Where the desktop's
/// portal holds the key, it is asked to bind `new` instead and the X11 grab stays off (both
/// would see one press).
pub fn register(app: &AppHandle, old: &str, new: &str) -> Result<(), CommandError> {
    if let Some(portal) = app.try_state::<PortalKey>()
        && portal.rebind(new)
    {
        return Ok(());
    }
    grab(app, old, new)
}

/// The X11 grab: replaces `old` with `new`.
fn grab(app: &AppHandle, old: &str, new: &str) -> Result<(), CommandError> {
    let shortcuts = app.global_shortcut();
    let failed = |shortcut: &str, reason: String| CommandError::Shortcut {
        shortcut: shortcut.to_owned(),
        reason,
    };
    if !old.trim().is_empty()
        && let Ok(old) = old.trim().parse::<Shortcut>()
    {
        let _ = shortcuts.unregister(old);
    }
    if new.trim().is_empty() {
        return Ok(());
    }
    let parsed = new
        .trim()
        .parse::<Shortcut>()
        .map_err(|error| failed(new, error.to_string()))?;
    shortcuts
        .register(parsed)
        .map_err(|error| failed(new, error.to_string()))?;
    log::info!("global push-to-talk shortcut: {new}");
    Ok(())
}

/// Where the desktop's portal stands with Walkie's push-to-talk key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PortalKeyState {
    /// Being bound (or no portal answered yet).
    Asking,
    /// The portal offers global shortcuts, and no keys are chosen to bind.
    Offered,
    /// The desktop holds the key; `trigger` is its own description of it, when it gives one.
    Bound { trigger: Option<String> },
    /// No key from the portal; why, in words.
    Unavailable(String),
}

/// The push-to-talk key held through the desktop's portal, in a Wayland session.
pub struct PortalKey {
    state: Mutex<PortalKeyState>,
    rebind: tokio::sync::mpsc::UnboundedSender<String>,
}

impl PortalKey {
    pub fn state(&self) -> PortalKeyState {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }

    #[cfg(target_os = "linux")]
    fn set(&self, state: PortalKeyState) {
        *self
            .state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = state;
    }

    /// Asks for `shortcut` to be bound (again); returns whether the portal holds the key now
    /// (else the X11 grab is the one that hears it meanwhile).
    fn rebind(&self, shortcut: &str) -> bool {
        let held = matches!(self.state(), PortalKeyState::Bound { .. });
        let _ = self.rebind.send(shortcut.to_owned());
        held
    }
}

/// In a Wayland session, asks the desktop's portal for the push-to-talk key `shortcut`, and
/// carries its presses and releases to the conversation until Walkie quits. Until it holds
/// the key (or where it cannot), the X11 grab registered at start stays, for Walkie's own
/// window under XWayland.
#[cfg(target_os = "linux")]
pub fn hold_through_portal(app: &AppHandle, shortcut: String) {
    let (rebind, asked) = tokio::sync::mpsc::unbounded_channel();
    app.manage(PortalKey {
        state: Mutex::new(PortalKeyState::Asking),
        rebind,
    });
    let app = app.clone();
    tauri::async_runtime::spawn(async move {
        let why = carry_portal_key(&app, shortcut, asked).await;
        log::warn!("the push-to-talk key works in Walkie's window only: {why}");
        app.state::<PortalKey>()
            .set(PortalKeyState::Unavailable(why));
    });
}

#[cfg(not(target_os = "linux"))]
pub fn hold_through_portal(_app: &AppHandle, _shortcut: String) {}

/// Binds the key and carries its edges; rebinds when the setting changes. Returns why it
/// stopped holding the key for good.
#[cfg(target_os = "linux")]
async fn carry_portal_key(
    app: &AppHandle,
    mut shortcut: String,
    mut asked: tokio::sync::mpsc::UnboundedReceiver<String>,
) -> String {
    use crate::portal::{KeyEdge, KeyEdges, Portal, PortalError, bind_push_to_talk, close};

    let key = app.state::<PortalKey>();
    let mut portal = match Portal::connect().await {
        Ok(portal) => portal,
        Err(error) => return error.to_string(),
    };
    let mut edges = match KeyEdges::listen(&portal).await {
        Ok(edges) => edges,
        Err(error) => return error.to_string(),
    };
    loop {
        if shortcut.trim().is_empty() {
            key.set(match portal.offers_global_shortcuts().await {
                Ok(true) => PortalKeyState::Offered,
                Ok(false) => PortalKeyState::Unavailable(PortalError::NotOffered.to_string()),
                Err(error) => PortalKeyState::Unavailable(error.to_string()),
            });
        } else {
            key.set(PortalKeyState::Asking);
            match bind_push_to_talk(&mut portal, &shortcut).await {
                Ok(bound) => {
                    // The portal hears the key in Walkie's window too: the grab goes.
                    let _ = grab(app, &shortcut, "");
                    edges.follow(&bound.session);
                    key.set(PortalKeyState::Bound {
                        trigger: bound.trigger,
                    });
                    loop {
                        tokio::select! {
                            edge = edges.next() => match edge {
                                Some(edge) => push_to_talk(app, edge == KeyEdge::Pressed),
                                None => {
                                    let _ = grab(app, "", &shortcut);
                                    return "the desktop's portal has gone".to_owned();
                                }
                            },
                            changed = asked.recv() => {
                                close(&portal, &bound.session).await;
                                match changed {
                                    Some(changed) => {
                                        shortcut = changed;
                                        break;
                                    }
                                    None => return "Walkie is quitting".to_owned(),
                                }
                            }
                        }
                    }
                    continue;
                }
                Err(error) => {
                    log::warn!("the desktop's portal gave no push-to-talk key: {error}");
                    key.set(PortalKeyState::Unavailable(error.to_string()));
                    // Walkie's own window keeps the key (a grab already there stays).
                    let _ = grab(app, "", &shortcut);
                }
            }
        }
        // Asked again when the setting changes.
        match asked.recv().await {
            Some(changed) => shortcut = changed,
            None => return "Walkie is quitting".to_owned(),
        }
    }
}
