//! API keys: kept in the OS secret store (the Secret Service on Linux, Keychain on macOS, the
//! Credential Manager on Windows) through the `keyring` crate, or read from the environment.
//!
//! Why here and nowhere else: a key must never reach a file, the log, the journal or the
//! webview. This module is the only code that touches one. The webview may send a key in (the
//! user types it) but only ever gets a [`KeySummary`] back: where the key comes from and its
//! last four characters, enough to recognise it. Key values are wrapped in [`ApiKey`], whose
//! `Debug` prints nothing of them, so a stray `{:?}` cannot leak one into the log.
//!
//! Every call may block on D-Bus; callers run them off the async runtime's threads.

use serde::Serialize;

/// The keyring service name under which Walkie's keys are filed.
const SERVICE: &str = "walkie";

/// Longer input is not a key (a pasted paragraph, a file).
const MAX_KEY_CHARS: usize = 1_024;

/// Whose key: one entry per kind of provider.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum KeyAccount {
    #[serde(rename = "openai")]
    OpenAi,
    Azure,
    Custom,
}

impl KeyAccount {
    fn keyring_user(self) -> &'static str {
        match self {
            KeyAccount::OpenAi => "openai",
            KeyAccount::Azure => "azure",
            KeyAccount::Custom => "custom",
        }
    }

    /// The environment variable honoured when the keyring has no key for this account.
    pub fn environment_variable(self) -> Option<&'static str> {
        match self {
            KeyAccount::OpenAi => Some("OPENAI_API_KEY"),
            KeyAccount::Azure => Some("AZURE_OPENAI_API_KEY"),
            KeyAccount::Custom => None,
        }
    }
}

/// A key's value. Printing it with `{:?}` shows only that it is hidden.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    /// A key the caller was given (a provider's token, say), not read from the keyring or the
    /// environment; a value no HTTP header can carry is refused at Connect.
    pub fn given(value: impl Into<String>) -> ApiKey {
        ApiKey(value.into())
    }

    pub fn expose(&self) -> &str {
        &self.0
    }

    /// The last four characters, enough to recognise a key; `None` for a key shorter than
    /// [`SHORTEST_KEY_SHOWN_CHARS`], of which four would give away too much.
    fn last_four(&self) -> Option<String> {
        let chars: Vec<char> = self.0.chars().collect();
        (chars.len() >= SHORTEST_KEY_SHOWN_CHARS).then(|| chars[chars.len() - 4..].iter().collect())
    }
}

impl std::fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ApiKey(<hidden>)")
    }
}

/// Where a key in use comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum KeySource {
    Keyring,
    Environment,
    None,
}

/// The shortest key whose last four characters are shown: of a shorter one, four would be a
/// large part of the secret.
pub const SHORTEST_KEY_SHOWN_CHARS: usize = 16;

/// What the webview may know about a key.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct KeySummary {
    pub account: KeyAccount,
    pub source: KeySource,
    /// The key's last four characters, to recognise it; `None` without a key, or for a key too
    /// short to show any of.
    pub last_four: Option<String>,
    /// The variable that would be read, for the dialog's help text.
    pub environment_variable: Option<&'static str>,
    /// Why the keyring could not be read, when it could not.
    pub keyring_problem: Option<String>,
}

/// Why a key could not be stored or read.
#[derive(Debug, thiserror::Error)]
pub enum SecretError {
    /// No secret store answers (no Secret Service running on this desktop).
    #[error(
        "no secret store is available ({0}); start your desktop's keyring (GNOME Keyring, \
         KWallet) or set the key in the environment instead"
    )]
    Unavailable(String),
    /// The store answered but refused (locked, access denied, or failed).
    #[error("the secret store refused: {0}")]
    Refused(String),
    /// What was typed is not a key.
    #[error("that is not an API key: {0}")]
    NotAKey(&'static str),
}

fn classify(error: keyring::Error) -> SecretError {
    // Describe without the error's payload: some variants carry the secret's bytes.
    match error {
        keyring::Error::NoDefaultStore => SecretError::Unavailable("no Secret Service".into()),
        keyring::Error::NoStorageAccess(inner) => SecretError::Unavailable(inner.to_string()),
        keyring::Error::PlatformFailure(inner) => SecretError::Refused(inner.to_string()),
        keyring::Error::BadEncoding(_) => {
            SecretError::Refused("the stored key is not valid text".into())
        }
        keyring::Error::BadDataFormat(..) | keyring::Error::BadStoreFormat(_) => {
            SecretError::Refused("the stored key is damaged".into())
        }
        keyring::Error::TooLong(..) => {
            SecretError::Refused("the key is too long for the secret store".into())
        }
        keyring::Error::Invalid(what, why) => SecretError::Refused(format!("{what}: {why}")),
        keyring::Error::Ambiguous(_) => {
            SecretError::Refused("several keys are filed under Walkie's name".into())
        }
        keyring::Error::NotSupportedByStore(what) => SecretError::Refused(what),
        keyring::Error::NoEntry => SecretError::Refused("no key is stored".into()),
        _ => SecretError::Refused("an unknown secret store error".into()),
    }
}

fn entry(account: KeyAccount) -> Result<keyring::Entry, SecretError> {
    keyring::Entry::new(SERVICE, account.keyring_user()).map_err(classify)
}

/// The key saved in the keyring for `account`, if any.
pub fn stored_key(account: KeyAccount) -> Result<Option<ApiKey>, SecretError> {
    match entry(account)?.get_password() {
        Ok(key) => Ok(Some(ApiKey(key))),
        Err(keyring::Error::NoEntry) => Ok(None),
        Err(error) => Err(classify(error)),
    }
}

/// Checks what the user typed and saves it in the keyring, replacing any earlier key.
pub fn store_key(account: KeyAccount, typed: &str) -> Result<KeySummary, SecretError> {
    let key = typed.trim();
    if key.is_empty() {
        return Err(SecretError::NotAKey("it is empty"));
    }
    if key.chars().count() > MAX_KEY_CHARS {
        return Err(SecretError::NotAKey("it is too long"));
    }
    if key.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(SecretError::NotAKey("it contains spaces or line breaks"));
    }
    entry(account)?.set_password(key).map_err(classify)?;
    Ok(summary(account))
}

/// Removes the keyring's key for `account` (nothing to remove is fine).
pub fn forget_key(account: KeyAccount) -> Result<KeySummary, SecretError> {
    match entry(account)?.delete_credential() {
        Ok(()) | Err(keyring::Error::NoEntry) => Ok(summary(account)),
        Err(error) => Err(classify(error)),
    }
}

/// Why no key can be saved in (or read from) the keyring, when no secret store answers: the
/// store is looked for once per run, so one that starts later is seen after a restart.
pub fn keyring_unavailable() -> Option<String> {
    match keyring::Entry::store_status() {
        Ok(()) => None,
        Err(error) => Some(classify_status(error)),
    }
}

fn classify_status(error: &keyring::Error) -> String {
    // Only the kind: the store's own text may be long and is for the log.
    match error {
        keyring::Error::Invalid(..) => "this system has no secret store Walkie can use".into(),
        _ => "no secret store (GNOME Keyring, KWallet) is running".into(),
    }
}

/// The key to use for `account`: the keyring's, else the environment's. A keyring that cannot
/// be read counts as empty; its problem is returned for the user.
pub fn key_in_use(account: KeyAccount) -> (Option<ApiKey>, KeySource, Option<SecretError>) {
    let (stored, problem) = match stored_key(account) {
        Ok(stored) => (stored, None),
        Err(problem) => (None, Some(problem)),
    };
    if let Some(key) = stored {
        return (Some(key), KeySource::Keyring, None);
    }
    let from_environment = account
        .environment_variable()
        .and_then(|name| std::env::var(name).ok())
        .map(|value| value.trim().to_owned())
        .filter(|value| !value.is_empty());
    match from_environment {
        Some(key) => (Some(ApiKey(key)), KeySource::Environment, problem),
        None => (None, KeySource::None, problem),
    }
}

/// What the webview may see about the key in use for `account`.
pub fn summary(account: KeyAccount) -> KeySummary {
    let (key, source, problem) = key_in_use(account);
    KeySummary {
        account,
        source,
        last_four: key.as_ref().and_then(ApiKey::last_four),
        environment_variable: account.environment_variable(),
        keyring_problem: problem.map(|problem| problem.to_string()),
    }
}

/// The most variables one tool server's secrets hold.
pub const MAX_TOOL_SERVER_VARIABLES: usize = 32;
/// The longest value of one of them (or of the `Authorization` header).
pub const MAX_TOOL_SERVER_SECRET_CHARS: usize = 4_096;

/// What one tool server is given besides what everyone's is: environment variables for a
/// server started by its command, an `Authorization` header for one at an address. Kept in
/// the keyring as one entry per server (a token is what they usually hold); `Debug` prints
/// only the names.
#[derive(Clone, Default, PartialEq, Eq, serde::Deserialize, Serialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ToolServerSecrets {
    pub environment: std::collections::BTreeMap<String, String>,
    pub authorization: Option<String>,
}

impl std::fmt::Debug for ToolServerSecrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolServerSecrets")
            .field("environment", &self.environment.keys().collect::<Vec<_>>())
            .field(
                "authorization",
                &self.authorization.as_ref().map(|_| "<hidden>"),
            )
            .finish()
    }
}

/// What the webview may know of a server's secrets: the variables' names, and whether there
/// is a header.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolServerSecretsSummary {
    pub variables: Vec<String>,
    pub authorization: bool,
    /// Why the keyring could not be read, when it could not.
    pub keyring_problem: Option<String>,
}

/// Why what the user typed for a server's secrets was refused: the line and what to do.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum ToolServerSecretsError {
    #[error("Line {line}: write NAME=value, or Authorization: and the header's value")]
    NotAnEntry { line: usize },
    #[error("Line {line}: a variable's name is letters, digits and _, not starting with a digit")]
    BadName { line: usize },
    #[error("Line {line}: the value is longer than {MAX_TOOL_SERVER_SECRET_CHARS} characters")]
    TooLong { line: usize },
    #[error("Line {line}: the value holds a control character; remove it")]
    ControlCharacter { line: usize },
    #[error("Line {line}: {name} is given twice; keep one")]
    Twice { line: usize, name: String },
    #[error("Give at most {MAX_TOOL_SERVER_VARIABLES} variables")]
    TooMany,
}

impl ToolServerSecrets {
    /// Reads what the user typed: one `NAME=value` or `Authorization: value` per line; blank
    /// lines and lines starting with `#` are skipped.
    pub fn parse(typed: &str) -> Result<ToolServerSecrets, ToolServerSecretsError> {
        let mut secrets = ToolServerSecrets::default();
        for (index, text) in typed.lines().enumerate() {
            let line = index + 1;
            let trimmed = text.trim();
            if trimmed.is_empty() || trimmed.starts_with('#') {
                continue;
            }
            let header = trimmed
                .split_once(':')
                .filter(|(name, _)| name.trim().eq_ignore_ascii_case("authorization"));
            let (name, value) = match header {
                Some((_, value)) => (None, value.trim()),
                None => {
                    let (name, value) = trimmed
                        .split_once('=')
                        .ok_or(ToolServerSecretsError::NotAnEntry { line })?;
                    (Some(name.trim()), value)
                }
            };
            if value.chars().count() > MAX_TOOL_SERVER_SECRET_CHARS {
                return Err(ToolServerSecretsError::TooLong { line });
            }
            if value.chars().any(char::is_control) {
                return Err(ToolServerSecretsError::ControlCharacter { line });
            }
            let Some(name) = name else {
                if value.is_empty() {
                    return Err(ToolServerSecretsError::NotAnEntry { line });
                }
                if secrets.authorization.replace(value.to_owned()).is_some() {
                    return Err(ToolServerSecretsError::Twice {
                        line,
                        name: "Authorization".to_owned(),
                    });
                }
                continue;
            };
            let name_ok = name
                .chars()
                .next()
                .is_some_and(|first| first.is_ascii_alphabetic() || first == '_')
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            if !name_ok {
                return Err(ToolServerSecretsError::BadName { line });
            }
            if secrets
                .environment
                .insert(name.to_owned(), value.to_owned())
                .is_some()
            {
                return Err(ToolServerSecretsError::Twice {
                    line,
                    name: name.to_owned(),
                });
            }
            if secrets.environment.len() > MAX_TOOL_SERVER_VARIABLES {
                return Err(ToolServerSecretsError::TooMany);
            }
        }
        Ok(secrets)
    }

    pub fn is_empty(&self) -> bool {
        self.environment.is_empty() && self.authorization.is_none()
    }

    fn summary(&self) -> ToolServerSecretsSummary {
        ToolServerSecretsSummary {
            variables: self.environment.keys().cloned().collect(),
            authorization: self.authorization.is_some(),
            keyring_problem: None,
        }
    }
}

fn tool_server_entry(server: &str) -> Result<keyring::Entry, SecretError> {
    keyring::Entry::new(SERVICE, &format!("tool-server/{server}")).map_err(classify)
}

/// The secrets kept for the tool server named `server` (none when none are kept).
pub fn tool_server_secrets(server: &str) -> Result<ToolServerSecrets, SecretError> {
    match tool_server_entry(server)?.get_password() {
        Ok(json) => serde_json::from_str(&json).map_err(|_| {
            SecretError::Refused(format!(
                "what the keyring holds for {server} cannot be read; save it again"
            ))
        }),
        Err(keyring::Error::NoEntry) => Ok(ToolServerSecrets::default()),
        Err(error) => Err(classify(error)),
    }
}

/// Keeps `secrets` for the tool server named `server`, replacing what was kept; none removes
/// the entry.
pub fn store_tool_server_secrets(
    server: &str,
    secrets: &ToolServerSecrets,
) -> Result<ToolServerSecretsSummary, SecretError> {
    let entry = tool_server_entry(server)?;
    if secrets.is_empty() {
        match entry.delete_credential() {
            Ok(()) | Err(keyring::Error::NoEntry) => {}
            Err(error) => return Err(classify(error)),
        }
    } else {
        let json = serde_json::to_string(secrets).map_err(|error| {
            SecretError::Refused(format!("the secrets could not be written: {error}"))
        })?;
        entry.set_password(&json).map_err(classify)?;
    }
    Ok(secrets.summary())
}

/// What the webview may see of the secrets kept for `server`.
pub fn tool_server_secrets_summary(server: &str) -> ToolServerSecretsSummary {
    match tool_server_secrets(server) {
        Ok(secrets) => secrets.summary(),
        Err(problem) => ToolServerSecretsSummary {
            keyring_problem: Some(problem.to_string()),
            ..ToolServerSecretsSummary::default()
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_servers_secrets_are_read_one_per_line_and_never_print_their_values() {
        let secrets = ToolServerSecrets::parse(
            "# for the GitHub server\nGITHUB_TOKEN=fake token = with an equals sign\n\n\
             authorization:  Bearer fake-bearer-value \n_DEBUG=\n",
        )
        .expect("valid");
        assert_eq!(
            secrets.environment.get("GITHUB_TOKEN").map(String::as_str),
            Some("fake token = with an equals sign")
        );
        assert_eq!(
            secrets.environment.get("_DEBUG").map(String::as_str),
            Some("")
        );
        assert_eq!(
            secrets.authorization.as_deref(),
            Some("Bearer fake-bearer-value")
        );
        let printed = format!("{secrets:?}");
        assert!(printed.contains("GITHUB_TOKEN"), "{printed}");
        assert!(!printed.contains("fake"), "{printed}");
        assert_eq!(
            secrets.summary(),
            ToolServerSecretsSummary {
                variables: vec!["GITHUB_TOKEN".to_owned(), "_DEBUG".to_owned()],
                authorization: true,
                keyring_problem: None,
            }
        );
    }

    #[test]
    fn a_line_that_is_not_a_secret_is_refused_by_its_number() {
        use ToolServerSecretsError::*;
        let refused = |typed: &str| ToolServerSecrets::parse(typed).unwrap_err();
        assert_eq!(refused("A=1\njust words"), NotAnEntry { line: 2 });
        assert_eq!(refused("1ABC=x"), BadName { line: 1 });
        assert_eq!(refused("MY-VAR=x"), BadName { line: 1 });
        assert_eq!(refused("Authorization:"), NotAnEntry { line: 1 });
        assert_eq!(
            refused("A=1\nA=2"),
            Twice {
                line: 2,
                name: "A".to_owned()
            }
        );
        assert_eq!(refused("A=\u{7}"), ControlCharacter { line: 1 });
        assert_eq!(
            refused(&format!(
                "A={}",
                "x".repeat(MAX_TOOL_SERVER_SECRET_CHARS + 1)
            )),
            TooLong { line: 1 }
        );
        let many: String = (0..=MAX_TOOL_SERVER_VARIABLES)
            .map(|n| format!("V{n}=x\n"))
            .collect();
        assert_eq!(refused(&many), TooMany);
        assert_eq!(
            refused("A=1\nA=2").to_string(),
            "Line 2: A is given twice; keep one"
        );
    }

    #[test]
    fn a_key_never_prints_itself() {
        // Not shaped like a real key, so no secret scanner mistakes it for one.
        let key = ApiKey("fake key for the test: cdef".to_owned());
        let printed = format!("{key:?} {:?}", Some(&key));
        assert!(!printed.contains("fake key"), "{printed}");
        assert!(!printed.contains("cdef"), "{printed}");
        assert_eq!(key.last_four().as_deref(), Some("cdef"));
    }

    #[test]
    fn a_short_key_shows_none_of_its_characters() {
        assert_eq!(ApiKey("abc".to_owned()).last_four(), None);
        assert_eq!(
            ApiKey("abcd".to_owned()).last_four(),
            None,
            "not the whole key"
        );
        assert_eq!(ApiKey("0123456789ab".to_owned()).last_four(), None);
        assert_eq!(
            ApiKey("ключ-ΩΩΩΩ-ключ-ΩΩΩΩ".to_owned())
                .last_four()
                .as_deref(),
            Some("ΩΩΩΩ")
        );
    }

    #[test]
    fn text_that_is_not_a_key_is_refused_before_the_keyring_is_asked() {
        for (typed, why) in [
            ("   ", "it is empty"),
            ("sk-two words", "it contains spaces or line breaks"),
            ("sk-a\nb", "it contains spaces or line breaks"),
        ] {
            match store_key(KeyAccount::Custom, typed) {
                Err(SecretError::NotAKey(reason)) => assert_eq!(reason, why),
                other => panic!("{typed:?} gave {other:?}"),
            }
        }
        let long = "k".repeat(MAX_KEY_CHARS + 1);
        assert!(matches!(
            store_key(KeyAccount::Custom, &long),
            Err(SecretError::NotAKey("it is too long"))
        ));
    }

    #[test]
    fn errors_about_a_missing_store_say_what_to_do() {
        let message = SecretError::Unavailable("no Secret Service".into()).to_string();
        assert!(message.contains("keyring"), "{message}");
        assert!(message.contains("environment"), "{message}");
    }
}
