//! The desktop's portals (xdg-desktop-portal, over the D-Bus session bus): the push-to-talk key
//! in a Wayland session, where no app may grab a key for itself.
//!
//! Why raw zbus and not ashpd: KDE Plasma 5.27 registers a session's shortcuts only from
//! `CreateSession`'s `shortcuts` option (its `BindShortcuts` just opens System Settings), which
//! ashpd does not send; and portals from 1.21 refuse an unsandboxed app that has not first
//! registered its id on the same connection. Each portal call is a request whose answer comes
//! as a `Response` signal on a path the caller can work out beforehand ([`Portal::ask`]).

use std::collections::HashMap;
use std::time::Duration;

use futures_util::StreamExt;
use zbus::zvariant::{OwnedObjectPath, OwnedValue, Value};

const DESKTOP: &str = "org.freedesktop.portal.Desktop";
const DESKTOP_PATH: &str = "/org/freedesktop/portal/desktop";
const GLOBAL_SHORTCUTS: &str = "org.freedesktop.portal.GlobalShortcuts";
const SCREENSHOT: &str = "org.freedesktop.portal.Screenshot";

/// Walkie's id with the desktop: the bundle identifier (tauri.conf.json). Portals from 1.20
/// accept it only where an installed menu entry has its name, so the package's entry is
/// `app.walkie.desktop.desktop` (src-tauri/linux/; the bundler's own `Walkie.desktop` is
/// hidden). Run from a build folder, with no entry installed, the registration is refused, and
/// portals from 1.21 then give Walkie no global shortcut.
pub const APP_ID: &str = "app.walkie.desktop";

/// The one shortcut Walkie binds: held, it is the push-to-talk key.
pub const PUSH_TO_TALK: &str = "push-to-talk";

/// How long a portal may take over a request that shows the user nothing.
const QUIET_REQUEST: Duration = Duration::from_secs(5);

/// Why a portal gave nothing.
#[derive(Debug, thiserror::Error)]
pub enum PortalError {
    #[error("no desktop portal answers on the session bus ({0})")]
    NoPortal(String),
    #[error("this desktop's portal offers no global shortcuts")]
    NotOffered,
    #[error("the desktop's portal did not answer within {0:?}")]
    Silent(Duration),
    #[error("the shortcut dialog was closed without binding a key")]
    Declined,
    #[error("the desktop's portal refused: {0}")]
    Refused(String),
}

impl From<zbus::Error> for PortalError {
    fn from(error: zbus::Error) -> Self {
        PortalError::Refused(error.to_string())
    }
}

/// A shortcut as the portal takes and gives it, `(sa{sv})`: its id and its properties.
type WireShortcut = (String, HashMap<String, OwnedValue>);

/// A request's options, `a{sv}`.
type Options = HashMap<&'static str, Value<'static>>;

/// One connection to the portal: the app id registered on it first, then every request.
pub struct Portal {
    connection: zbus::Connection,
    /// The caller's part of request and session paths: its unique name, `:1.42` → `1_42`.
    sender: String,
    requests_made: u32,
}

impl Portal {
    /// Connects to the session bus and tells the portal who Walkie is (portals before 1.20
    /// do not ask; that is not an error). A portal that does not answer within
    /// [`QUIET_REQUEST`] is [`PortalError::Silent`].
    pub async fn connect() -> Result<Self, PortalError> {
        tokio::time::timeout(QUIET_REQUEST, Self::connect_and_register())
            .await
            .map_err(|_| PortalError::Silent(QUIET_REQUEST))?
    }

    async fn connect_and_register() -> Result<Self, PortalError> {
        let connection = zbus::Connection::session()
            .await
            .map_err(|error| PortalError::NoPortal(error.to_string()))?;
        let sender = connection
            .unique_name()
            .map(|name| name.trim_start_matches(':').replace('.', "_"))
            .ok_or_else(|| PortalError::NoPortal("the bus gave no unique name".to_owned()))?;
        let registered = connection
            .call_method(
                Some(DESKTOP),
                DESKTOP_PATH,
                Some("org.freedesktop.host.portal.Registry"),
                "Register",
                &(APP_ID, HashMap::<&str, Value>::new()),
            )
            .await;
        match registered {
            Ok(_) => log::debug!("registered with the portal as {APP_ID}"),
            Err(zbus::Error::MethodError(name, _, _))
                if name.as_str() == "org.freedesktop.DBus.Error.ServiceUnknown" =>
            {
                return Err(PortalError::NoPortal(name.to_string()));
            }
            Err(zbus::Error::MethodError(name, _, _))
                if name.as_str() == "org.freedesktop.DBus.Error.UnknownMethod"
                    || name.as_str() == "org.freedesktop.DBus.Error.UnknownInterface" =>
            {
                log::debug!("the portal has no app registry (before 1.20)");
            }
            Err(error) => log::warn!(
                "the portal did not take Walkie's app id {APP_ID} ({error}); portals from 1.21 \
                 then refuse it global shortcuts"
            ),
        }
        Ok(Self {
            connection,
            sender,
            requests_made: 0,
        })
    }

    /// Whether the desktop's portal offers global shortcuts.
    pub async fn offers_global_shortcuts(&self) -> Result<bool, PortalError> {
        self.offers(GLOBAL_SHORTCUTS).await
    }

    /// Whether the desktop's portal takes screenshots.
    pub async fn offers_screenshots(&self) -> Result<bool, PortalError> {
        self.offers(SCREENSHOT).await
    }

    /// Whether the portal offers `interface` (a desktop without a backend for it has none).
    async fn offers(&self, interface: &'static str) -> Result<bool, PortalError> {
        let proxy = zbus::Proxy::new(&self.connection, DESKTOP, DESKTOP_PATH, interface).await?;
        let version = tokio::time::timeout(QUIET_REQUEST, proxy.get_property::<u32>("version"))
            .await
            .map_err(|_| PortalError::Silent(QUIET_REQUEST))?;
        match version {
            Ok(version) => Ok(version >= 1),
            Err(zbus::Error::FDO(error))
                if matches!(
                    *error,
                    zbus::fdo::Error::UnknownInterface(_)
                        | zbus::fdo::Error::UnknownProperty(_)
                        | zbus::fdo::Error::InvalidArgs(_)
                ) =>
            {
                Ok(false)
            }
            Err(zbus::Error::MethodError(name, _, _))
                if name.as_str() == "org.freedesktop.DBus.Error.ServiceUnknown" =>
            {
                Err(PortalError::NoPortal(name.to_string()))
            }
            Err(error) => Err(error.into()),
        }
    }

    /// A fresh token for a request's path.
    fn token(&mut self) -> String {
        self.requests_made += 1;
        format!("walkie_{}", self.requests_made)
    }

    /// Calls `method` of `interface` with the body `args` makes of its options (given
    /// `handle_token` here) and waits up to `within` (forever for `None`: a dialog the user
    /// answers) for its `Response`: the results on success.
    async fn ask<B>(
        &mut self,
        interface: &'static str,
        method: &'static str,
        args: impl FnOnce(Options) -> B,
        mut options: Options,
        within: Option<Duration>,
    ) -> Result<HashMap<String, OwnedValue>, PortalError>
    where
        B: serde::Serialize + zbus::zvariant::DynamicType,
    {
        let token = self.token();
        let request_path = format!("{DESKTOP_PATH}/request/{}/{token}", self.sender);
        // Listen before asking: the answer may come before the call returns.
        let request = zbus::Proxy::new(
            &self.connection,
            DESKTOP,
            request_path,
            "org.freedesktop.portal.Request",
        )
        .await?;
        let mut responses = request.receive_signal("Response").await?;
        options.insert("handle_token", Value::from(token));
        let body = args(options);
        self.connection
            .call_method(Some(DESKTOP), DESKTOP_PATH, Some(interface), method, &body)
            .await?;
        let answer = async {
            let message = responses.next().await.ok_or_else(|| {
                PortalError::Refused("the portal left without answering".to_owned())
            })?;
            let (code, results): (u32, HashMap<String, OwnedValue>) =
                message.body().deserialize()?;
            match code {
                0 => Ok(results),
                1 => Err(PortalError::Declined),
                _ => Err(PortalError::Refused(format!("{interface}.{method} failed"))),
            }
        };
        match within {
            Some(within) => tokio::time::timeout(within, answer)
                .await
                .map_err(|_| PortalError::Silent(within))?,
            None => answer.await,
        }
    }
}

/// Asks the desktop for a screenshot, letting the user choose the screen, a window or an area
/// in its own dialog; returns the file it saved (the desktop's, left where it is).
pub async fn screenshot(portal: &mut Portal) -> Result<std::path::PathBuf, PortalError> {
    let mut options = HashMap::new();
    options.insert("interactive", Value::from(true));
    options.insert("modal", Value::from(true));
    let results = portal
        .ask(
            SCREENSHOT,
            "Screenshot",
            |options| ("", options),
            options,
            // The user chooses in the desktop's dialog.
            None,
        )
        .await?;
    let uri = results
        .get("uri")
        .and_then(|value| value.try_clone().ok())
        .and_then(|value| String::try_from(value).ok())
        .ok_or_else(|| PortalError::Refused("the desktop sent no screenshot".to_owned()))?;
    file_of_uri(&uri)
        .ok_or_else(|| PortalError::Refused(format!("the screenshot is not a local file: {uri}")))
}

/// The path of a `file://` URI (percent-decoded); `None` for any other.
fn file_of_uri(uri: &str) -> Option<std::path::PathBuf> {
    use std::os::unix::ffi::OsStringExt;
    let path = uri.strip_prefix("file://")?;
    // A host part ("file://host/...") names another machine unless it is empty.
    if !path.starts_with('/') {
        return None;
    }
    let bytes: Vec<u8> = percent_encoding::percent_decode_str(path).collect();
    Some(std::path::PathBuf::from(std::ffi::OsString::from_vec(
        bytes,
    )))
}

/// A bound push-to-talk key: the desktop's session and what it says the keys are.
pub struct ShortcutSession {
    pub session: OwnedObjectPath,
    /// The desktop's words for the keys bound ("Ctrl+Alt+K"), when it says.
    pub trigger: Option<String>,
}

/// Walkie's one shortcut as the portal takes it, with `preferred_trigger` in the portal's
/// notation when the user chose keys.
fn push_to_talk(preferred_trigger: &str) -> Vec<WireShortcut> {
    let mut properties = HashMap::new();
    properties.insert(
        "description".to_owned(),
        owned(Value::from("Hold to talk to Walkie")),
    );
    if let Some(trigger) = portal_trigger(preferred_trigger) {
        properties.insert("preferred_trigger".to_owned(), owned(Value::from(trigger)));
    }
    vec![(PUSH_TO_TALK.to_owned(), properties)]
}

fn owned(value: Value<'_>) -> OwnedValue {
    value
        .try_into_owned()
        .expect("a string value holds no file descriptor")
}

/// A shortcut as Walkie's settings write it ("Ctrl+Alt+K") in the XDG shortcuts notation the
/// portal's `preferred_trigger` takes ("CTRL+ALT+k"); `None` for no keys.
pub fn portal_trigger(shortcut: &str) -> Option<String> {
    let parts: Vec<&str> = shortcut
        .split('+')
        .map(str::trim)
        .filter(|part| !part.is_empty())
        .collect();
    let (key, modifiers) = parts.split_last()?;
    let mut trigger: Vec<String> = modifiers
        .iter()
        .map(|modifier| match modifier.to_ascii_lowercase().as_str() {
            "ctrl" | "control" | "commandorcontrol" | "cmdorctrl" => "CTRL".to_owned(),
            "alt" | "option" => "ALT".to_owned(),
            "shift" => "SHIFT".to_owned(),
            "super" | "meta" | "logo" | "cmd" | "command" => "LOGO".to_owned(),
            other => other.to_ascii_uppercase(),
        })
        .collect();
    let key = match key.to_ascii_lowercase().as_str() {
        "space" => "space".to_owned(),
        one if one.chars().count() == 1 => one.to_owned(),
        _ => key.to_string(),
    };
    trigger.push(key);
    Some(trigger.join("+"))
}

/// The `trigger_description` of Walkie's shortcut among `shortcuts`, if it is there.
fn bound_trigger(results: &HashMap<String, OwnedValue>) -> Option<Option<String>> {
    let shortcuts: Vec<WireShortcut> = results
        .get("shortcuts")
        .and_then(|value| value.try_clone().ok())
        .and_then(|value| Vec::<WireShortcut>::try_from(value).ok())?;
    let (_, properties) = shortcuts.into_iter().find(|(id, _)| id == PUSH_TO_TALK)?;
    Some(
        properties
            .get("trigger_description")
            .and_then(|value| String::try_from(value.try_clone().ok()?).ok())
            .filter(|text| !text.is_empty()),
    )
}

/// Opens a GlobalShortcuts session holding Walkie's push-to-talk key: the shortcut goes in
/// `CreateSession` (Plasma 5.27 registers it from there), and is bound with `BindShortcuts`
/// only where the session does not list it already (GNOME and Hyprland ask the user once; on
/// Plasma that call would only open System Settings).
pub async fn bind_push_to_talk(
    portal: &mut Portal,
    preferred_trigger: &str,
) -> Result<ShortcutSession, PortalError> {
    if !portal.offers(GLOBAL_SHORTCUTS).await? {
        return Err(PortalError::NotOffered);
    }
    let session_token = portal.token();
    let shortcuts = push_to_talk(preferred_trigger);
    let mut options = HashMap::new();
    options.insert("session_handle_token", Value::from(session_token.clone()));
    options.insert("shortcuts", Value::from(shortcuts.clone()));
    let created = portal
        .ask(
            GLOBAL_SHORTCUTS,
            "CreateSession",
            |options| (options,),
            options,
            Some(QUIET_REQUEST),
        )
        .await?;
    let session = created
        .get("session_handle")
        .and_then(|value| value.try_clone().ok())
        .and_then(|value| String::try_from(value).ok())
        .unwrap_or_else(|| format!("{DESKTOP_PATH}/session/{}/{session_token}", portal.sender));
    let session = OwnedObjectPath::try_from(session).map_err(|error| {
        PortalError::Refused(format!("a session handle that is no path: {error}"))
    })?;
    let listed = portal
        .ask(
            GLOBAL_SHORTCUTS,
            "ListShortcuts",
            |options| (&session, options),
            HashMap::new(),
            Some(QUIET_REQUEST),
        )
        .await?;
    if let Some(trigger) = bound_trigger(&listed) {
        log::info!("the desktop holds Walkie's push-to-talk key: {trigger:?}");
        return Ok(ShortcutSession { session, trigger });
    }
    let bound = portal
        .ask(
            GLOBAL_SHORTCUTS,
            "BindShortcuts",
            |options| (&session, &shortcuts, "", options),
            HashMap::new(),
            // The desktop may ask the user which keys; they take their time.
            None,
        )
        .await?;
    let trigger = bound_trigger(&bound).ok_or(PortalError::Declined)?;
    log::info!("the desktop bound Walkie's push-to-talk key: {trigger:?}");
    Ok(ShortcutSession { session, trigger })
}

/// A press or release of Walkie's shortcut in `session`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyEdge {
    Pressed,
    Released,
}

/// Waits for the next press or release of Walkie's push-to-talk key in `session`; `None` when
/// the portal has gone.
pub struct KeyEdges {
    activated: zbus::proxy::SignalStream<'static>,
    deactivated: zbus::proxy::SignalStream<'static>,
    session: OwnedObjectPath,
}

impl KeyEdges {
    /// Listens on `portal`'s connection; start it before binding, so no edge is missed.
    pub async fn listen(portal: &Portal) -> Result<Self, PortalError> {
        let proxy =
            zbus::Proxy::new(&portal.connection, DESKTOP, DESKTOP_PATH, GLOBAL_SHORTCUTS).await?;
        Ok(Self {
            activated: proxy.receive_signal("Activated").await?,
            deactivated: proxy.receive_signal("Deactivated").await?,
            session: OwnedObjectPath::default(),
        })
    }

    /// Hears only `session`'s edges from now on.
    pub fn follow(&mut self, session: &OwnedObjectPath) {
        self.session = session.clone();
    }

    pub async fn next(&mut self) -> Option<KeyEdge> {
        loop {
            let (message, edge) = tokio::select! {
                message = self.activated.next() => (message?, KeyEdge::Pressed),
                message = self.deactivated.next() => (message?, KeyEdge::Released),
            };
            type Edge = (OwnedObjectPath, String, u64, HashMap<String, OwnedValue>);
            match message.body().deserialize::<Edge>() {
                Ok((session, shortcut, _timestamp, _)) => {
                    if session == self.session && shortcut == PUSH_TO_TALK {
                        return Some(edge);
                    }
                }
                Err(error) => {
                    log::warn!("the portal sent a shortcut signal Walkie cannot read: {error}")
                }
            }
        }
    }
}

/// Ends a shortcut session (its keys go back to the desktop).
pub async fn close(portal: &Portal, session: &OwnedObjectPath) {
    let closed = portal
        .connection
        .call_method(
            Some(DESKTOP),
            session.as_ref(),
            Some("org.freedesktop.portal.Session"),
            "Close",
            &(),
        )
        .await;
    if let Err(error) = closed {
        log::debug!("closing the shortcut session: {error}");
    }
}

#[cfg(test)]
mod tests {
    use super::{file_of_uri, portal_trigger};

    #[test]
    fn a_screenshot_uri_is_read_as_its_local_file_and_no_other() {
        assert_eq!(
            file_of_uri("file:///home/me/Pictures/Screenshot%20from%2012%3A00.png"),
            Some("/home/me/Pictures/Screenshot from 12:00.png".into())
        );
        assert_eq!(file_of_uri("file://elsewhere/shot.png"), None);
        assert_eq!(file_of_uri("https://example.com/shot.png"), None);
    }

    #[test]
    fn a_settings_shortcut_is_written_in_the_portals_notation() {
        assert_eq!(portal_trigger("Ctrl+Alt+K").as_deref(), Some("CTRL+ALT+k"));
        assert_eq!(
            portal_trigger("Super+Shift+Space").as_deref(),
            Some("LOGO+SHIFT+space")
        );
        assert_eq!(portal_trigger("F9").as_deref(), Some("F9"));
        assert_eq!(portal_trigger(""), None);
        assert_eq!(portal_trigger("  "), None);
    }
}
