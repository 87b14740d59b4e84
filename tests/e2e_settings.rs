//! Settings in the real webview: what the user saves survives a restart, and an API key typed
//! into the dialog goes to the OS keyring (a private GNOME Keyring per test) and nowhere else —
//! not the settings file, not the log, not the data folder, not back into the page.
//!
//! Slow tests (X server, WebKitWebDriver, D-Bus and GNOME Keyring per test); they run in CI.

mod support;

use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use fantoccini::{Client, Locator};
use support::{AppDirs, Launch, SecretService, WebviewApp, click, rendered_text, wait_for};

/// A key no real service would accept, unique to this run so a match can only come from here.
fn fake_key(prefix: &str) -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("{prefix}-walkie-fake-{nanos:x}Q7zK")
}

async fn open_settings(client: &Client) {
    click(client, "#open-settings").await;
    wait_for(client, "#settings [data-role=config-file]", |text| {
        text.ends_with("settings.json")
    })
    .await;
}

/// Sets a field the way the user's input would: value (or checkbox state), then the events.
async fn set_field(client: &Client, name: &str, value: serde_json::Value) {
    let found = client
        .execute(
            r#"const [name, value] = arguments;
               const field = document.querySelector(`#settings [name="${name}"]`);
               if (!field) return false;
               if (field.type === "checkbox") field.checked = value; else field.value = value;
               field.dispatchEvent(new Event("input", { bubbles: true }));
               field.dispatchEvent(new Event("change", { bubbles: true }));
               return true;"#,
            vec![name.into(), value],
        )
        .await
        .unwrap();
    assert_eq!(
        found,
        serde_json::Value::Bool(true),
        "no field named {name}"
    );
}

async fn field_value(client: &Client, name: &str) -> serde_json::Value {
    client
        .execute(
            r#"const field = document.querySelector(`#settings [name="${arguments[0]}"]`);
               return field.type === "checkbox" ? field.checked : field.value;"#,
            vec![name.into()],
        )
        .await
        .unwrap()
}

/// Every file under `dir` (recursively) whose bytes contain `needle`.
fn files_containing(dir: &Path, needle: &str) -> (Vec<String>, usize) {
    let mut found = Vec::new();
    let mut files = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if let Ok(bytes) = std::fs::read(&path) {
                files += 1;
                if !needle.is_empty()
                    && bytes
                        .windows(needle.len())
                        .any(|window| window == needle.as_bytes())
                {
                    found.push(path.display().to_string());
                }
            }
        }
    }
    (found, files)
}

const TEST: &str = "settings_restart";

#[tokio::test(flavor = "multi_thread")]
async fn e2e_settings_survive_a_restart_and_the_key_lives_only_in_the_keyring() {
    let dirs = AppDirs::fresh(TEST);
    let secrets = SecretService::start(&dirs);
    let key = fake_key("sk");
    let last_four = key[key.len() - 4..].to_owned();
    // A compatible server on this machine that refuses connections: the key is really used
    // (sent with the call) and the failure comes at once.
    let base_url = "http://127.0.0.1:9";

    let app = WebviewApp::launch_with(TEST, Launch::in_dirs(&dirs, Some(&secrets))).await;
    let typed_key = key.clone();
    let expected_last_four = last_four.clone();
    app.run(|client| async move {
        open_settings(&client).await;
        set_field(&client, "provider", "custom".into()).await;
        set_field(&client, "customBaseUrl", base_url.into()).await;
        set_field(&client, "voice", "cedar".into()).await;
        set_field(
            &client,
            "instructions",
            "Answer like a ship's captain.".into(),
        )
        .await;
        set_field(&client, "pushToTalkTailMs", "450".into()).await;
        set_field(&client, "pressMode", "toggle".into()).await;
        set_field(&client, "warmMic", false.into()).await;
        // The key is typed, as a person would.
        let key_field = client
            .find(Locator::Css("#settings [name=apiKey]"))
            .await
            .unwrap();
        key_field.send_keys(&typed_key).await.unwrap();
        click(&client, "#settings [data-action=save-key]").await;
        wait_for(&client, "#settings [data-role=key-state]", |text| {
            text == format!(
                "A key is saved in your system keyring (ending in {expected_last_four})."
            )
        })
        .await;
        assert_eq!(
            field_value(&client, "apiKey").await,
            "",
            "the typed key is cleared"
        );

        // A bad value is refused, named, and nothing is saved.
        set_field(&client, "preRollMs", "5000".into()).await;
        click(&client, "#settings button[value=save]").await;
        let refusal = wait_for(&client, "#settings [data-role=message]", |text| {
            text.starts_with("preRollMs:")
        })
        .await;
        assert!(refusal.contains("5000 ms"), "{refusal}");
        let invalid = client
            .find(Locator::Css("#settings [name=preRollMs]"))
            .await
            .unwrap();
        assert_eq!(
            invalid.attr("aria-invalid").await.unwrap().as_deref(),
            Some("true")
        );
        set_field(&client, "preRollMs", "300".into()).await;

        click(&client, "#settings button[value=save]").await;
        wait_for(&client, "#settings [data-role=message]", |text| {
            text == "Saved."
        })
        .await;
        client
            .execute_async(
                r#"const done = arguments[0];
                   document.activeElement?.blur();
                   document.querySelector('#settings').scrollTop = 0;
                   requestAnimationFrame(() => requestAnimationFrame(() => done(true)));"#,
                vec![],
            )
            .await
            .unwrap();
        support::screenshot(&client, "settings").await;
        // The new provider is dialled with the key: it refuses, and the status says where.
        click(&client, "#settings button[value=close]").await;
        wait_for(&client, "#status", |text| {
            text.starts_with("Not connected: could not connect to 127.0.0.1")
        })
        .await;
        let page = client.source().await.unwrap();
        assert!(!page.contains(&typed_key), "the page holds the key");
        // How long to keep conversations is chosen in the history panel, and kept with the rest.
        click(&client, "#open-history").await;
        let retention = client.find(Locator::Id("history-retention")).await.unwrap();
        retention.select_by_value("30").await.unwrap();
        wait_for(&client, "#history-notice", |text| !text.is_empty()).await;
        click(&client, "#history-close").await;
    })
    .await;

    // The same folders and keyring, a new process.
    let app = WebviewApp::launch_with(TEST, Launch::in_dirs(&dirs, Some(&secrets))).await;
    let leaked = key.clone();
    app.run(|client| async move {
        wait_for(&client, "#status", |text| {
            text.starts_with("Not connected: could not connect to 127.0.0.1")
        })
        .await;
        open_settings(&client).await;
        assert_eq!(field_value(&client, "provider").await, "custom");
        assert_eq!(field_value(&client, "customBaseUrl").await, base_url);
        assert_eq!(field_value(&client, "voice").await, "cedar");
        assert_eq!(
            field_value(&client, "instructions").await,
            "Answer like a ship's captain."
        );
        assert_eq!(field_value(&client, "pushToTalkTailMs").await, "450");
        assert_eq!(field_value(&client, "pressMode").await, "toggle");
        assert_eq!(field_value(&client, "warmMic").await, false);
        assert_eq!(
            rendered_text(&client, "#settings [data-role=key-state]")
                .await
                .as_deref(),
            Some(
                format!("A key is saved in your system keyring (ending in {last_four}).").as_str()
            )
        );
        assert!(!client.source().await.unwrap().contains(&leaked));
        click(&client, "#settings button[value=close]").await;
        click(&client, "#open-history").await;
        let retention = client.find(Locator::Id("history-retention")).await.unwrap();
        assert_eq!(
            retention.prop("value").await.unwrap().as_deref(),
            Some("30")
        );
    })
    .await;

    let settings = std::fs::read_to_string(dirs.config.join("settings.json")).unwrap();
    assert!(settings.contains("\"voice\": \"cedar\""), "{settings}");
    assert!(settings.contains("\"retentionDays\": 30"), "{settings}");
    let (_, log_files) = files_containing(&dirs.log, "");
    assert!(log_files >= 1, "the app wrote its log under WALKIE_LOG_DIR");
    let (mentions, _) = files_containing(&dirs.log, "settings saved to");
    assert_eq!(mentions.len(), 1, "the log records the save: {mentions:?}");
    for dir in [&dirs.config, &dirs.data, &dirs.log] {
        let (found, _) = files_containing(dir, &key);
        assert!(found.is_empty(), "the key is written in {found:?}");
    }
    drop(secrets);
}

#[tokio::test(flavor = "multi_thread")]
async fn e2e_a_key_in_the_environment_is_used_and_never_shown() {
    let key = fake_key("sk-env");
    let last_four = key[key.len() - 4..].to_owned();
    let app = WebviewApp::launch_with(
        "settings_environment_key",
        Launch {
            env: vec![("OPENAI_API_KEY", key.clone())],
            ..Launch::default()
        },
    )
    .await;
    let dirs = app.dirs().clone();
    let leaked = key.clone();
    app.run(|client| async move {
        // Automatic: a key is there, so the app calls OpenAI (unreachable from here).
        wait_for(&client, "#status", |text| text.contains("OpenAI")).await;
        open_settings(&client).await;
        assert_eq!(field_value(&client, "provider").await, "automatic");
        let described = wait_for(&client, "#settings [data-role=key-state]", |text| {
            text.starts_with("Using the key from OPENAI_API_KEY")
        })
        .await;
        assert!(
            described.contains(&format!("(ending in {last_four})")),
            "{described}"
        );
        // No secret store here: the dialog says so instead of failing.
        assert!(
            described.contains("The keyring could not be read"),
            "{described}"
        );
        assert!(!client.source().await.unwrap().contains(&leaked));
    })
    .await;
    for dir in [&dirs.config, &dirs.data, &dirs.log] {
        let (found, _) = files_containing(dir, &key);
        assert!(found.is_empty(), "the key is written in {found:?}");
    }
}
