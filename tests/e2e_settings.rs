//! Settings in the real webview: what the user saves survives a restart, and an API key typed
//! into the dialog goes to the OS keyring (a private GNOME Keyring per test) and nowhere else —
//! not the settings file, not the log, not the data folder, not back into the page.
//!
//! Slow tests (X server, WebKitWebDriver, D-Bus and GNOME Keyring per test); they run in CI.

mod support;

use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use fantoccini::{Client, Locator};
use support::{
    AppDirs, Launch, SecretService, WebviewApp, choose_custom_server, click, open_advanced,
    open_settings, press, rendered_text, set_field, spoken_exchange, talk_to_custom_server, texts,
    wait_for,
};

/// The test sound server's microphone and speaker, one test at a time.
static AUDIO_DEVICES: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// A key no real service would accept, unique to this run so a match can only come from here.
fn fake_key(prefix: &str) -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("{prefix}-walkie-fake-{nanos:x}Q7zK")
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
        let refusal = wait_for(&client, "#settings-preRollMs-error", |text| {
            !text.is_empty()
        })
        .await;
        assert!(
            refusal.starts_with("Include audio from before the press (ms):"),
            "{refusal}"
        );
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
        // The new provider is dialled with the key: it refuses, and the status says where,
        // while the call under way goes on.
        click(&client, "#settings button[value=close]").await;
        wait_for(&client, "#status", |text| {
            text.starts_with("Call goes on: the new settings' call to 127.0.0.1 failed")
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
        // The panel shows the saved policy once it has read it: wait for that, or time out.
        let retention = client.find(Locator::Id("history-retention")).await.unwrap();
        let deadline = tokio::time::Instant::now() + support::UI_TIMEOUT;
        let mut shown = retention.prop("value").await.unwrap();
        while shown.as_deref() != Some("30") && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            shown = retention.prop("value").await.unwrap();
        }
        assert_eq!(shown.as_deref(), Some("30"));
    })
    .await;

    let settings = std::fs::read_to_string(dirs.config.join("settings.json")).unwrap();
    assert!(settings.contains("\"voice\": \"cedar\""), "{settings}");
    assert!(settings.contains("\"retentionDays\": 30"), "{settings}");
    let (_, log_files) = support::files_containing(&dirs.log, "");
    assert!(log_files >= 1, "the app wrote its log under WALKIE_LOG_DIR");
    let (mentions, _) = support::files_containing(&dirs.log, "settings saved to");
    assert_eq!(mentions.len(), 1, "the log records the save: {mentions:?}");
    // What the app created is the user's alone: the settings and window files, the log file,
    // the conversations folder.
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = |path: &Path| {
            std::fs::metadata(path)
                .unwrap_or_else(|error| panic!("{}: {error}", path.display()))
                .permissions()
                .mode()
                & 0o777
        };
        assert_eq!(mode(&dirs.config.join("settings.json")), 0o600);
        assert_eq!(mode(&dirs.config.join("window-state.json")), 0o600);
        assert_eq!(mode(&dirs.log.join("walkie.log")), 0o600);
        assert_eq!(mode(&dirs.data.join("conversations")), 0o700);
    }
    for dir in [&dirs.config, &dirs.data, &dirs.log] {
        let (found, _) = support::files_containing(dir, &key);
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
        // No secret store here: a key cannot be saved, and the button says why, next to it.
        let save_key = client
            .find(Locator::Css("#settings [data-action=save-key]"))
            .await
            .unwrap();
        assert!(
            !save_key.is_enabled().await.unwrap(),
            "Save key is disabled"
        );
        let reason = rendered_text(&client, "#settings [data-role=keyring-missing]")
            .await
            .unwrap_or_default();
        assert!(
            reason.contains("No keyring") && reason.contains("OPENAI_API_KEY"),
            "{reason:?}"
        );
        assert!(shown_as(&client, "#settings [data-role=keyring-missing]", true).await);
        assert!(!client.source().await.unwrap().contains(&leaked));
    })
    .await;
    for dir in [&dirs.config, &dirs.data, &dirs.log] {
        let (found, _) = support::files_containing(dir, &key);
        assert!(found.is_empty(), "the key is written in {found:?}");
    }
}

/// Whether the element `css` selects is rendered (present, not hidden, in an open dialog).
/// Whether the element matching `css` is shown, once it is as `expected` or the UI timeout
/// passed (a dialog opens and closes asynchronously: the test waits for it, not a sleep).
async fn shown_as(client: &Client, css: &str, expected: bool) -> bool {
    let deadline = tokio::time::Instant::now() + support::UI_TIMEOUT;
    loop {
        let now_shown = shown(client, css).await;
        if now_shown == expected || tokio::time::Instant::now() >= deadline {
            return now_shown;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

async fn shown(client: &Client, css: &str) -> bool {
    client
        .execute(
            r#"const element = document.querySelector(arguments[0]);
               if (!element || element.getClientRects().length === 0) return false;
               // WebKit lays out the content of a closed <details>; it is not shown.
               const closed = element.closest("details:not([open])");
               return !closed || closed.querySelector(":scope > summary").contains(element);"#,
            vec![css.into()],
        )
        .await
        .unwrap()
        == serde_json::Value::Bool(true)
}

/// Presses one key on whatever has the focus, as a keyboard does.
/// The visible label of a settings field, as the user reads it.
async fn label_of(client: &Client, name: &str) -> String {
    let label = client
        .execute(
            r#"const field = document.querySelector(`#settings [name="${arguments[0]}"]`);
               const label = field.labels[0];
               const own = label.querySelector("[data-role=label]") ?? label;
               return own.innerText.trim();"#,
            vec![name.into()],
        )
        .await
        .unwrap();
    label.as_str().expect("a field's label is text").to_owned()
}

/// The error shown for a field: the text of the element its `aria-describedby` names as its
/// error, when that element is visible.
async fn error_under(client: &Client, name: &str) -> Option<String> {
    let text = client
        .execute(
            r#"const field = document.querySelector(`#settings [name="${arguments[0]}"]`);
               const ids = (field.getAttribute("aria-describedby") ?? "").split(/\s+/);
               for (const id of ids) {
                 const element = id && document.getElementById(id);
                 if (element && element.dataset.role === "field-error"
                     && element.getClientRects().length > 0 && element.innerText.trim()) {
                   // Under the field: below it on the screen.
                   const below = element.getBoundingClientRect().top
                     >= field.getBoundingClientRect().bottom - 1;
                   return below ? element.innerText.trim() : "(not under the field)";
                 }
               }
               return null;"#,
            vec![name.into()],
        )
        .await
        .unwrap();
    text.as_str().map(str::to_owned)
}

#[tokio::test(flavor = "multi_thread")]
async fn e2e_enter_after_typing_a_key_saves_it_in_the_keyring() {
    let dirs = AppDirs::fresh("settings_enter_saves");
    let secrets = SecretService::start(&dirs);
    let key = fake_key("sk-enter");
    let last_four = key[key.len() - 4..].to_owned();
    let app = WebviewApp::launch_with(
        "settings_enter_saves",
        Launch::in_dirs(&dirs, Some(&secrets)),
    )
    .await;
    let typed_key = key.clone();
    app.run(|client| async move {
        open_settings(&client).await;
        set_field(&client, "provider", "custom".into()).await;
        set_field(&client, "customBaseUrl", "http://127.0.0.1:9".into()).await;
        let key_field = client
            .find(Locator::Css("#settings [name=apiKey]"))
            .await
            .unwrap();
        // Pasted, then Enter, as people do.
        key_field.send_keys(&typed_key).await.unwrap();
        press(&client, fantoccini::key::Key::Enter).await;
        wait_for(&client, "#settings [data-role=key-state]", |text| {
            text == format!("A key is saved in your system keyring (ending in {last_four}).")
        })
        .await;
        wait_for(&client, "#settings [data-role=message]", |text| {
            text == "Saved."
        })
        .await;
        assert_eq!(
            field_value(&client, "apiKey").await,
            "",
            "the typed key is cleared"
        );
    })
    .await;
    let settings = std::fs::read_to_string(dirs.config.join("settings.json")).unwrap();
    assert!(settings.contains("\"provider\": \"custom\""), "{settings}");
    for dir in [&dirs.config, &dirs.data, &dirs.log] {
        let (found, _) = support::files_containing(dir, &key);
        assert!(found.is_empty(), "the key is written in {found:?}");
    }
    drop(secrets);
}

#[tokio::test(flavor = "multi_thread")]
async fn e2e_escape_with_unsaved_edits_asks_and_keeping_them_keeps_them() {
    let app = WebviewApp::launch("settings_escape_asks").await;
    app.run(|client| async move {
        open_settings(&client).await;
        // Instructions are in the advanced part: open it first.
        open_advanced(&client).await;
        let instructions = client
            .find(Locator::Css("#settings [name=instructions]"))
            .await
            .unwrap();
        set_field(&client, "instructions", "".into()).await;
        client
            .execute(
                "document.querySelector('#settings [name=instructions]')\
                   .scrollIntoView({ block: 'center' });",
                vec![],
            )
            .await
            .unwrap();
        instructions.click().await.unwrap();
        instructions.send_keys("Talk like a pirate.").await.unwrap();
        press(&client, fantoccini::key::Key::Escape).await;
        let question = wait_for(&client, "#settings-confirm", |text| !text.is_empty()).await;
        assert!(question.contains("Keep editing"), "{question}");
        assert!(
            shown_as(&client, "#settings", true).await,
            "the settings stay open behind the question"
        );
        click(&client, "#settings-confirm [value=keep]").await;
        assert!(!shown_as(&client, "#settings-confirm", false).await);
        assert!(
            shown_as(&client, "#settings", true).await,
            "the settings are still open"
        );
        assert_eq!(
            field_value(&client, "instructions").await,
            "Talk like a pirate."
        );

        // Close asks too; discarding closes, and the next opening shows what is saved.
        click(&client, "#settings [data-action=close]").await;
        wait_for(&client, "#settings-confirm", |text| !text.is_empty()).await;
        click(&client, "#settings-confirm [value=discard]").await;
        assert!(
            !shown_as(&client, "#settings", false).await,
            "discarding closes the settings"
        );
        open_settings(&client).await;
        assert_ne!(
            field_value(&client, "instructions").await,
            "Talk like a pirate."
        );
        // Without edits, Escape just closes.
        press(&client, fantoccini::key::Key::Escape).await;
        assert!(!shown_as(&client, "#settings-confirm", false).await);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn e2e_bad_values_show_their_errors_at_once_under_their_labelled_fields() {
    let app = WebviewApp::launch("settings_errors").await;
    let config = app.dirs().config.clone();
    app.run(|client| async move {
        open_settings(&client).await;
        set_field(&client, "provider", "custom".into()).await;
        set_field(&client, "customBaseUrl", "http://example.com".into()).await;
        set_field(&client, "preRollMs", "5000".into()).await;
        set_field(&client, "sessionLimitMinutes", "1".into()).await;
        set_field(&client, "globalShortcut", "Ctrl+Banana".into()).await;
        set_field(&client, "budgetUsd", "cheap".into()).await;
        click(&client, "#settings button[value=save]").await;
        wait_for(&client, "#settings [data-role=message]", |text| {
            !text.is_empty()
        })
        .await;
        for name in [
            "customBaseUrl",
            "preRollMs",
            "sessionLimitMinutes",
            "globalShortcut",
            "budgetUsd",
        ] {
            let label = label_of(&client, name).await;
            let error = error_under(&client, name)
                .await
                .unwrap_or_else(|| panic!("no error shown for {label:?}"));
            assert!(error.starts_with(&format!("{label}:")), "{name}: {error:?}");
            assert!(!error.contains(name), "the internal name shows: {error:?}");
            assert_eq!(error.lines().count(), 1, "one line: {error:?}");
            let field = client
                .find(Locator::Css(&format!("#settings [name={name}]")))
                .await
                .unwrap();
            assert_eq!(
                field.attr("aria-invalid").await.unwrap().as_deref(),
                Some("true")
            );
        }
        let shortcut = error_under(&client, "globalShortcut").await.unwrap();
        assert!(
            shortcut.contains("Not a shortcut Walkie can use"),
            "{shortcut}"
        );
        assert!(shortcut.contains("Ctrl+Alt+Space"), "{shortcut}");
        assert!(!shortcut.contains("github.com"), "{shortcut}");
        let pre_roll = error_under(&client, "preRollMs").await.unwrap();
        assert!(pre_roll.contains("2000"), "says the limit: {pre_roll}");
        let session_limit = error_under(&client, "sessionLimitMinutes").await.unwrap();
        assert!(
            session_limit.contains("2 to 240 minutes"),
            "says the range: {session_limit}"
        );
        let budget = error_under(&client, "budgetUsd").await.unwrap();
        assert!(budget.contains("e.g. 0.50"), "says what to type: {budget}");
        // Fixing one field clears its error when saved again; the others stay.
        set_field(&client, "preRollMs", "300".into()).await;
        click(&client, "#settings button[value=save]").await;
        wait_for(&client, "#settings [data-role=message]", |text| {
            !text.is_empty()
        })
        .await;
        assert!(error_under(&client, "customBaseUrl").await.is_some());
        assert_eq!(error_under(&client, "preRollMs").await, None);
    })
    .await;
    assert!(
        !config.join("settings.json").exists(),
        "nothing is saved while a field is wrong"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn e2e_the_provider_switch_hides_the_fields_that_provider_ignores() {
    let app = WebviewApp::launch("settings_provider_fields").await;
    app.run(|client| async move {
        open_settings(&client).await;
        // Everything is reachable: open the advanced part.
        open_advanced(&client).await;
        assert!(shown_as(&client, "#settings [name=instructions]", true).await);
        let fields = [
            "apiKey",
            "model",
            "azureResourceUrl",
            "azureDeployment",
            "customBaseUrl",
        ];
        for (provider, visible) in [
            ("local", &[][..]),
            ("openai", &["apiKey", "model"][..]),
            (
                "azure",
                &["apiKey", "model", "azureResourceUrl", "azureDeployment"][..],
            ),
            ("custom", &["apiKey", "model", "customBaseUrl"][..]),
            ("automatic", &["apiKey", "model"][..]),
        ] {
            set_field(&client, "provider", provider.into()).await;
            for name in fields {
                assert_eq!(
                    shown_as(
                        &client,
                        &format!("#settings [name={name}]"),
                        visible.contains(&name)
                    )
                    .await,
                    visible.contains(&name),
                    "{name} with the {provider} provider"
                );
            }
        }
        // Loopback "Monitor of …" sources are not microphones.
        let deadline = std::time::Instant::now() + support::UI_TIMEOUT;
        while client
            .execute(
                "return document.querySelectorAll('#settings [name=inputDevice] option').length;",
                vec![],
            )
            .await
            .unwrap()
            == 0
        {
            assert!(
                std::time::Instant::now() < deadline,
                "the microphones were never listed"
            );
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        let microphones = client
            .execute(
                r#"return [...document.querySelectorAll('#settings [name=inputDevice] option')]
                     .map((option) => option.textContent);"#,
                vec![],
            )
            .await
            .unwrap();
        let microphones: Vec<String> = serde_json::from_value(microphones).unwrap();
        assert!(
            microphones
                .iter()
                .all(|label| !label.starts_with("Monitor of")),
            "{microphones:?}"
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn e2e_every_error_fits_a_360_px_window_and_a_wide_one() {
    let app = WebviewApp::launch("settings_sizes").await;
    let display = app.display().to_owned();
    app.run(|client| async move {
        open_settings(&client).await;
        let bad = [
            ("customBaseUrl", "example.com/realtime?x=1"),
            ("model", " "),
            ("globalShortcut", "F9"),
            ("preRollMs", "lots"),
            ("pushToTalkTailMs", "99999"),
            ("dataFolder", "my talks"),
            ("automaticToolRounds", "0"),
        ];
        set_field(&client, "provider", "custom".into()).await;
        for (name, value) in bad {
            set_field(&client, name, value.into()).await;
        }
        for (width, label) in [(360, "settings-errors-narrow"), (1280, "settings-errors-wide")] {
            support::resize_window(&client, &display, width, 720).await;
            click(&client, "#settings button[value=save]").await;
            wait_for(&client, "#settings [data-role=message]", |text| {
                text == format!("Not saved: fix the {} settings marked in red.", bad.len())
            })
            .await;
            for (name, _) in bad {
                let error = error_under(&client, name)
                    .await
                    .unwrap_or_else(|| panic!("no error under {name}"));
                assert_eq!(error.lines().count(), 1, "one line: {error:?}");
            }
            let overflow = client
                .execute(
                    r##"const dialog = document.querySelector("#settings");
                       const save = dialog.querySelector("button[value=save]").getBoundingClientRect();
                       // What sticks out (a table that scrolls in its own box does not), innermost
                       // last, to name in a failure.
                       const right = dialog.getBoundingClientRect().right;
                       const out = [...dialog.querySelectorAll("*")]
                         .filter((e) => !e.parentElement.closest(".table-scroll"))
                         .filter((e) => e.getClientRects().length && (e.getBoundingClientRect().right > right + 0.5 ||
                                   (e.scrollWidth > e.clientWidth + 1 && getComputedStyle(e).overflowX === "visible")))
                         .map((e) => `${e.tagName.toLowerCase()}${e.id ? "#" + e.id : ""}` +
                                     `${e.getAttribute("name") ? "[name=" + e.getAttribute("name") + "]" : ""}` +
                                     ` +${Math.round(e.getBoundingClientRect().right - right)}/${e.scrollWidth - e.clientWidth}`);
                       return [dialog.scrollWidth - dialog.clientWidth,
                               save.right - window.innerWidth, out.slice(-6).join(", ")];"##,
                    vec![],
                )
                .await
                .unwrap();
            let (wider, save_past, sticking_out): (f64, f64, String) =
                serde_json::from_value(overflow).unwrap();
            assert!(
                wider <= 0.0,
                "{width} px: the dialog scrolls sideways by {wider} px ({sticking_out})"
            );
            assert!(save_past <= 0.0, "{width} px: Save is {save_past} px off the window");
            support::screenshot(&client, label).await;
        }
        // The last field of the dialog, with its error, as a user scrolled to it reads it.
        client
            .execute(
                "document.getElementById('settings-automaticToolRounds').scrollIntoView({block: 'center'});",
                vec![],
            )
            .await
            .unwrap();
        support::screenshot(&client, "settings-errors-tool-rounds").await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn e2e_the_data_folder_shows_its_path_and_browse_puts_the_chosen_folder_in_it() {
    let app = WebviewApp::launch("settings_browse").await;
    let display = app.display().to_owned();
    let data_dir = app.data_dir().to_path_buf();
    let chosen = app.dirs().root.join("chosen folder");
    std::fs::create_dir_all(&chosen).unwrap();
    let config = app.dirs().config.clone();
    let expected = chosen.display().to_string();
    app.run(|client| async move {
        open_settings(&client).await;
        open_advanced(&client).await;
        // The folder in use is shown as a path, not only as a hint.
        assert_eq!(
            field_value(&client, "dataFolder").await,
            data_dir.display().to_string()
        );
        click(&client, "#settings [data-action=browse]").await;
        support::type_into_native_dialog(&display, "Save conversations in", "ctrl+l", &chosen)
            .await;
        let deadline = std::time::Instant::now() + support::UI_TIMEOUT;
        while field_value(&client, "dataFolder").await != expected.as_str() {
            assert!(
                std::time::Instant::now() < deadline,
                "the field shows {:?}",
                field_value(&client, "dataFolder").await
            );
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        click(&client, "#settings button[value=save]").await;
        wait_for(&client, "#settings [data-role=message]", |text| {
            text == "Saved."
        })
        .await;
        let note = rendered_text(&client, "#settings [data-role=data-folder-help]")
            .await
            .unwrap_or_default();
        assert!(note.contains("until it restarts"), "{note}");
    })
    .await;
    let settings = std::fs::read_to_string(config.join("settings.json")).unwrap();
    assert!(settings.contains("chosen folder"), "{settings}");
}

#[tokio::test(flavor = "multi_thread")]
async fn e2e_the_hands_free_fields_show_only_when_they_apply_and_their_errors_sit_under_them() {
    let app = WebviewApp::launch("settings_hands_free").await;
    let config = app.dirs().config.clone();
    app.run(|client| async move {
        open_settings(&client).await;
        open_advanced(&client).await;
        let fields = ["voiceDetection", "eagerness", "idleTimeoutMs"];
        for (hands_free, detection, visible) in [
            (false, "server_vad", &[][..]),
            (false, "semantic_vad", &[][..]),
            (true, "server_vad", &["voiceDetection", "idleTimeoutMs"][..]),
            (true, "semantic_vad", &["voiceDetection", "eagerness"][..]),
        ] {
            set_field(&client, "handsFree", hands_free.into()).await;
            set_field(&client, "voiceDetection", detection.into()).await;
            for name in fields {
                assert_eq!(
                    shown_as(
                        &client,
                        &format!("#settings [name={name}]"),
                        visible.contains(&name)
                    )
                    .await,
                    visible.contains(&name),
                    "{name} with hands-free {hands_free} and {detection}"
                );
            }
        }
        // Noise reduction is the provider's: the offline demo has none.
        assert!(shown_as(&client, "#settings [name=noiseReduction]", true).await);
        set_field(&client, "provider", "local".into()).await;
        assert!(!shown_as(&client, "#settings [name=noiseReduction]", false).await);
        set_field(&client, "provider", "automatic".into()).await;

        set_field(&client, "voiceDetection", "server_vad".into()).await;
        set_field(&client, "idleTimeoutMs", "1000".into()).await;
        set_field(&client, "preRollMs", "5000".into()).await;
        click(&client, "#settings button[value=save]").await;
        wait_for(&client, "#settings [data-role=message]", |text| {
            text == "Not saved: fix the 2 settings marked in red."
        })
        .await;
        let idle = error_under(&client, "idleTimeoutMs")
            .await
            .expect("an error under the idle timeout");
        let label = label_of(&client, "idleTimeoutMs").await;
        assert!(idle.starts_with(&format!("{label}:")), "{idle}");
        assert!(idle.contains("enter 5000 to 30000 ms"), "{idle}");
        assert!(error_under(&client, "preRollMs").await.is_some());
        client
            .execute(
                r#"const done = arguments[0];
                   const dialog = document.querySelector('#settings');
                   const first = dialog.querySelector('[name=noiseReduction]').closest('.field');
                   dialog.scrollTop += first.getBoundingClientRect().top
                     - dialog.getBoundingClientRect().top - 16;
                   requestAnimationFrame(() => requestAnimationFrame(() => done(true)));"#,
                vec![],
            )
            .await
            .unwrap();
        support::screenshot(&client, "settings-hands-free").await;

        set_field(&client, "preRollMs", "300".into()).await;

        // With semantic detection the hidden idle timeout does not apply and is not sent.
        set_field(&client, "voiceDetection", "semantic_vad".into()).await;
        set_field(&client, "eagerness", "high".into()).await;
        support::screenshot(&client, "settings-semantic-vad").await;
        set_field(&client, "noiseReduction", "far_field".into()).await;
        // Saved with Enter from a text field: after the script scrolled the dialog for the
        // screenshots, WebKitWebDriver's click on Save was seen landing on another field.
        client
            .execute(
                "document.querySelector('#settings [name=model]').focus();",
                vec![],
            )
            .await
            .unwrap();
        press(&client, fantoccini::key::Key::Enter).await;
        wait_for(&client, "#settings [data-role=message]", |text| {
            text == "Saved."
        })
        .await;
    })
    .await;
    let saved: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(config.join("settings.json")).expect("the settings were saved"),
    )
    .expect("the file is JSON");
    assert_eq!(saved["handsFree"], true);
    assert_eq!(saved["voiceDetection"], "semantic_vad");
    assert_eq!(saved["eagerness"], "high");
    assert_eq!(saved["noiseReduction"], "far_field");
    assert_eq!(saved["idleTimeoutMs"], serde_json::Value::Null);
}

#[tokio::test(flavor = "multi_thread")]
async fn e2e_the_shortcut_is_set_by_pressing_it_and_backspace_clears_it() {
    use fantoccini::actions::{InputSource, KeyAction, KeyActions};
    use fantoccini::key::Key;
    let app = WebviewApp::launch("settings_shortcut_keys").await;
    let settings_file = app.dirs().config.join("settings.json");
    app.run(|client| async move {
        open_settings(&client).await;
        open_advanced(&client).await;
        client
            .execute(
                "document.querySelector('#settings [name=globalShortcut]')\
                   .scrollIntoView({ block: 'center' });",
                vec![],
            )
            .await
            .unwrap();
        click(&client, "#settings [name=globalShortcut]").await;
        let (ctrl, alt): (char, char) = (Key::Control.into(), Key::Alt.into());
        client
            .perform_actions(
                KeyActions::new("keyboard".into())
                    .then(KeyAction::Down { value: ctrl })
                    .then(KeyAction::Down { value: alt })
                    .then(KeyAction::Down { value: 'k' })
                    .then(KeyAction::Up { value: 'k' })
                    .then(KeyAction::Up { value: alt })
                    .then(KeyAction::Up { value: ctrl }),
            )
            .await
            .expect("WebDriver sends the keys");
        assert_eq!(field_value(&client, "globalShortcut").await, "Ctrl+Alt+K");
        press(&client, Key::Backspace).await;
        assert_eq!(field_value(&client, "globalShortcut").await, "");
        client
            .perform_actions(
                KeyActions::new("keyboard".into())
                    .then(KeyAction::Down { value: ctrl })
                    .then(KeyAction::Down { value: 'w' })
                    .then(KeyAction::Up { value: 'w' })
                    .then(KeyAction::Up { value: ctrl }),
            )
            .await
            .expect("WebDriver sends the keys");
        assert_eq!(field_value(&client, "globalShortcut").await, "Ctrl+W");
        click(&client, "#settings button[value=save]").await;
        wait_for(&client, "#settings [data-role=message]", |text| {
            text == "Saved."
        })
        .await;
    })
    .await;
    let saved: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&settings_file).expect("saved settings"))
            .expect("JSON");
    assert_eq!(saved["globalShortcut"], "Ctrl+W");
}

/// The app on the demo, with a keyring of its own, beside a local provider started by the test
/// (tracing what it receives, for the oracle) that the settings form can be pointed at.
async fn app_beside_a_test_server(
    test: &'static str,
) -> (walkie_local::LocalProvider, SecretService, WebviewApp) {
    let dirs = AppDirs::fresh(test);
    let provider = walkie_local::LocalProvider::start(walkie_local::ProviderConfig {
        trace_dir: Some(dirs.trace.join("test-server")),
        ..walkie_local::ProviderConfig::default()
    })
    .await
    .expect("a local provider on loopback");
    let secrets = SecretService::start(&dirs);
    let app = WebviewApp::launch_with(test, Launch::in_dirs(&dirs, Some(&secrets))).await;
    (provider, secrets, app)
}

/// Opens Settings and types the test server in, key and all, saving nothing.
async fn type_the_test_server_into_the_form(client: &Client, base_url: &str, token: &str) {
    open_settings(client).await;
    set_field(client, "provider", "custom".into()).await;
    set_field(client, "customBaseUrl", base_url.into()).await;
    support::type_api_key(client, token).await;
}

/// "Test connection" places a short call with what the form holds, key included, and says how
/// it went under the button, without saving anything and without ending the call under way.
#[tokio::test(flavor = "multi_thread")]
async fn e2e_test_connection_calls_what_the_form_holds_and_leaves_the_call_under_way() {
    const TEST: &str = "settings_test_connection";
    let (provider, _secrets, app) = app_beside_a_test_server(TEST).await;
    let settings_file = app.dirs().config.join("settings.json");
    let (base_url, token) = (provider.base_url(), provider.token().to_owned());
    app.run(move |client| async move {
        let ready = "Ready (the local provider): hold Space or the button to talk.";
        wait_for(&client, "#status", |status| status == ready).await;
        type_the_test_server_into_the_form(&client, &base_url, &token).await;
        click(&client, "#settings [data-action=test-connection]").await;
        let answered = wait_for(&client, "#settings [data-role=test-result]", |text| {
            text.contains("answered")
        })
        .await;
        assert!(
            answered.starts_with("127.0.0.1 answered: a call connected in")
                && answered.ends_with("ms, and was hung up."),
            "{answered}"
        );
        // An address where nothing answers: the reason, under the button.
        client
            .find(Locator::Css("#settings [name=apiKey]"))
            .await
            .expect("the key field")
            .clear()
            .await
            .expect("clearing the key");
        set_field(&client, "customBaseUrl", "http://127.0.0.1:9".into()).await;
        click(&client, "#settings [data-action=test-connection]").await;
        let failed = wait_for(&client, "#settings [data-role=test-result]", |text| {
            text.starts_with("The test call to 127.0.0.1 failed.")
        })
        .await;
        assert!(failed.contains("could not be reached"), "{failed}");
        let kind = client
            .execute(
                "return document.querySelector('#settings [data-role=test-result]').dataset.kind;",
                vec![],
            )
            .await
            .unwrap();
        assert_eq!(kind, serde_json::json!("error"));
        client
            .execute(
                "document.querySelector('#settings [data-role=test-result]')\
                   .scrollIntoView({ block: 'center' });",
                vec![],
            )
            .await
            .unwrap();
        support::screenshot(&client, "settings-test-connection").await;
        // The call under way was never touched, and nothing was saved.
        let title = client
            .execute("return document.getElementById('status').title;", vec![])
            .await
            .unwrap();
        assert_eq!(title, serde_json::json!(ready));
    })
    .await;
    let saved = std::fs::read_to_string(&settings_file).unwrap_or_default();
    assert!(!saved.contains("custom"), "nothing was saved: {saved}");
    assert_eq!(
        provider.calls_total(),
        1,
        "the test placed one call to the server"
    );
}

/// Saving settings whose call fails keeps the call under way: the window says why, with
/// Settings as the way out, and the next turn is answered on the same call. Settings whose
/// call answers take over once it has.
#[tokio::test(flavor = "multi_thread")]
async fn e2e_new_settings_take_over_the_call_only_once_their_own_call_answers() {
    const TEST: &str = "settings_make_before_break";
    support::audio::require_test_audio();
    let _devices = AUDIO_DEVICES.lock().await;
    let (provider, _secrets, app) = app_beside_a_test_server(TEST).await;
    let (base_url, token) = (provider.base_url(), provider.token().to_owned());
    app.run(move |client| async move {
        wait_for(&client, "#status", |status| {
            status.starts_with("Ready (the local provider)")
        })
        .await;
        // Nothing listens at this address: the demo's call goes on, and the window says why.
        choose_custom_server(&client, "http://127.0.0.1:9").await;
        let status = wait_for(&client, "#status", |status| {
            status.starts_with("Call goes on:")
        })
        .await;
        assert!(
            status.starts_with(
                "Call goes on: the new settings' call to 127.0.0.1 failed, so the local \
                 provider still answers. The provider could not be reached"
            ),
            "{status}"
        );
        assert_eq!(
            rendered_text(&client, "#status > span:first-child")
                .await
                .as_deref(),
            Some("Call goes on"),
            "one line in the header"
        );
        let banner = wait_for(&client, "#banner [data-role=text]", |text| !text.is_empty()).await;
        assert!(
            banner.starts_with("The new settings' call to 127.0.0.1 failed"),
            "{banner}"
        );
        assert_eq!(
            rendered_text(&client, "#banner [data-role=action]")
                .await
                .as_deref(),
            Some("Open Settings")
        );
        support::screenshot(&client, "new-settings-refused").await;
        // The call under way still answers.
        spoken_exchange(&client, 1.0, 0).await;
        // A server that answers (with its key): the call moves there once it does.
        talk_to_custom_server(&client, &base_url, &token).await;
        let replies = texts(&client, "assistant").await;
        assert_eq!(replies.len(), 1, "the demo's reply stays: {replies:?}");
        spoken_exchange(&client, 1.0, 1).await;
    })
    .await;
    assert_eq!(
        provider.calls_total(),
        1,
        "the new server accepted one call: the one the conversation moved to"
    );
    provider.shutdown().await;
}

/// "Hear this voice" plays one short reply in the chosen voice from a call of its own, with
/// what the form holds (the typed key too): the provider is asked for an out-of-band reply,
/// the local provider's chime for that voice reaches the speaker, and its words show under
/// the button. Nothing is saved and the call under way goes on.
#[tokio::test(flavor = "multi_thread")]
async fn e2e_hear_this_voice_plays_one_reply_in_that_voice_beside_the_call_under_way() {
    const TEST: &str = "settings_voice_preview";
    support::audio::require_test_audio();
    let _devices = AUDIO_DEVICES.lock().await;
    let (provider, _secrets, app) = app_beside_a_test_server(TEST).await;
    let settings_file = app.dirs().config.join("settings.json");
    let (base_url, token) = (provider.base_url(), provider.token().to_owned());
    app.run(move |client| async move {
        let ready = "Ready (the local provider): hold Space or the button to talk.";
        wait_for(&client, "#status", |status| status == ready).await;
        type_the_test_server_into_the_form(&client, &base_url, &token).await;
        set_field(&client, "voice", "marin".into()).await;
        let speaker = support::audio::PulseStream::record_speaker();
        click(&client, "#settings [data-action=preview-voice]").await;
        let said = wait_for(&client, "#settings [data-role=voice-preview]", |text| {
            text.starts_with("marin (")
        })
        .await;
        assert!(
            said.ends_with(
                "s): “This is Walkie's local provider. It has no voices, so this chime stands \
                 in for marin.”"
            ),
            "{said}"
        );
        let heard = tokio::task::spawn_blocking(move || speaker.end())
            .await
            .expect("the recording");
        let span = support::audio::sounding_span_frames(&heard);
        assert!(
            (30..=60).contains(&span),
            "the chime's 36 frames reached the speaker once: {span} frames sounded"
        );
        assert_eq!(
            rendered_text(&client, "#settings [data-action=preview-voice]")
                .await
                .as_deref(),
            Some("Hear this voice")
        );
        support::screenshot(&client, "settings-voice-preview").await;
        let title = client
            .execute("return document.getElementById('status').title;", vec![])
            .await
            .unwrap();
        assert_eq!(
            title,
            serde_json::json!(ready),
            "the call under way goes on"
        );
    })
    .await;
    let saved = std::fs::read_to_string(&settings_file).unwrap_or_default();
    assert!(!saved.contains("marin"), "nothing was saved: {saved}");
    assert_eq!(provider.calls_total(), 1, "the preview placed one call");
    provider.shutdown().await;
}

/// Types `value` into the price table's cell labelled `label` (e.g. "gpt-realtime-2.1: text out").
async fn set_price(client: &Client, label: &str, value: &str) {
    let cell = client
        .find(Locator::Css(&format!("#settings [aria-label='{label}']")))
        .await
        .unwrap_or_else(|error| panic!("no price cell {label:?}: {error}"));
    cell.clear().await.expect("clearing the cell");
    cell.send_keys(value).await.expect("typing the price");
}

/// The price table: a bad price is refused naming the model and the price; an edited row
/// loses its published date; a row added for another model is saved; and the call under way
/// is costed at the new prices at once.
#[tokio::test(flavor = "multi_thread")]
async fn e2e_the_price_table_is_edited_in_settings_and_the_call_under_way_is_costed_by_it() {
    let app = WebviewApp::launch("settings_prices").await;
    let config = app.dirs().config.clone();
    app.run(|client| async move {
        wait_for(&client, "#status", |text| text.starts_with("Ready")).await;
        open_settings(&client).await;
        open_advanced(&client).await;
        let dates = client
            .execute(
                "return [...document.querySelectorAll('#settings .price-date')].map(d => d.innerText);",
                vec![],
            )
            .await
            .unwrap();
        let published = format!("published {}", walkie_settings::prices::PUBLISHED_ON);
        assert_eq!(
            dates,
            serde_json::json!([
                published,
                published,
                published,
                published,
                "published 2025-08-28",
                "published 2025-10-06",
                published,
                published,
                published,
                published
            ]),
            "six rows per million tokens, then four per minute"
        );
        let minute_models = client
            .execute(
                "return [...document.querySelectorAll('#settings [data-role=minute-price-rows] tr')]\
                 .map(row => row.querySelector('input').value);",
                vec![],
            )
            .await
            .unwrap();
        assert_eq!(
            minute_models,
            serde_json::json!([
                "gpt-realtime-whisper",
                "gpt-transcribe",
                "gpt-live-transcribe",
                "gpt-live-1.1"
            ])
        );
        // A row published more than 180 days ago says to check it, and the model's cell points
        // to the note.
        let old_note = client
            .execute(
                "const cell = document.querySelector(\"#settings [aria-label='Model of row 5']\");\
                 const ids = cell.getAttribute('aria-describedby').split(' ');\
                 return ids.map(id => document.getElementById(id)?.innerText);",
                vec![],
            )
            .await
            .unwrap();
        assert_eq!(
            old_note,
            serde_json::json!([
                "published 2025-08-28",
                "over 180 days old: check the provider's price page"
            ])
        );
        set_price(&client, "gpt-realtime-2.1: audio out", "64$").await;
        click(&client, "#settings button[value=save]").await;
        let error = wait_for(&client, "#settings-prices-error", |text| !text.is_empty()).await;
        assert_eq!(
            error,
            "Prices per million tokens (US$): gpt-realtime-2.1's audio out price must be a number of \
             dollars per million tokens, e.g. 4 or 0.40"
        );
        support::screenshot(&client, "settings-prices").await;
        // Every price but text out at nothing, text out at $1000 a million: the typed reply's
        // cost is its text tokens out, to the tenth of a cent.
        for (_, words) in [
            ("textIn", "text in"),
            ("cachedTextIn", "cached text in"),
            ("audioIn", "audio in"),
            ("cachedAudioIn", "cached audio in"),
            ("audioOut", "audio out"),
            ("imageIn", "image in"),
            ("cachedImageIn", "cached image in"),
        ] {
            set_price(&client, &format!("gpt-realtime-2.1: {words}"), "0").await;
        }
        set_price(&client, "gpt-realtime-2.1: text out", "1000").await;
        click(&client, "#settings [data-action=add-price]").await;
        // The new row's model has the focus: type its name there.
        let focused = client
            .execute(
                "return document.activeElement.getAttribute('aria-label');",
                vec![],
            )
            .await
            .unwrap();
        assert_eq!(focused, serde_json::json!("Model of row 7"));
        client
            .active_element()
            .await
            .expect("the focused cell")
            .send_keys("my-deployment")
            .await
            .expect("typing the model");
        click(&client, "#settings button[value=save]").await;
        wait_for(&client, "#settings [data-role=message]", |text| {
            text.starts_with("Saved")
        })
        .await;
        let saved: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(config.join("settings.json")).expect("settings.json"),
        )
        .unwrap();
        let prices = saved["prices"].as_array().expect("the table is saved");
        assert_eq!(prices.len(), 7);
        assert_eq!(prices[0]["textOut"], 1000.0);
        assert_eq!(prices[0]["takenOn"], "", "an edited row is the user's own");
        assert_eq!(prices[1]["takenOn"], walkie_settings::prices::PUBLISHED_ON);
        assert_eq!(prices[6]["model"], "my-deployment");
        press(&client, fantoccini::key::Key::Escape).await;

        // The call under way is costed at the new prices: type a question.
        let field = client
            .find(Locator::Css("#compose-text"))
            .await
            .expect("the field to type in");
        field.click().await.expect("focusing the field");
        field.send_keys("How much is this?").await.expect("typing");
        press(&client, fantoccini::key::Key::Enter).await;
        let line = wait_for(&client, "#spending", |text| text.contains(" tokens")).await;
        let details = client
            .execute("return document.querySelector('#spending').title;", vec![])
            .await
            .unwrap();
        let details = details.as_str().expect("the tooltip").to_owned();
        let text_out: f64 = details
            .lines()
            .find_map(|line| line.strip_prefix("Out: "))
            .and_then(|out| out.split(' ').next())
            .and_then(|count| count.parse().ok())
            .unwrap_or_else(|| panic!("the text tokens out: {details:?}"));
        let cost = text_out * 1000.0 / 1e6;
        assert!(
            line.ends_with(&format!(" · free (${cost:.3} on gpt-realtime-2.1)")),
            "{text_out} text tokens out at $1000 a million: {line:?}"
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn e2e_a_gpt_live_model_offers_its_own_voices_and_pause_and_hides_what_it_does_not_take() {
    let app = WebviewApp::launch("settings_live").await;
    let config = app.dirs().config.clone();
    app.run(|client| async move {
        open_settings(&client).await;
        open_advanced(&client).await;
        assert!(!shown_as(&client, "#settings [name=liveIdleTimeoutS]", false).await);
        set_field(&client, "model", "gpt-live-1.1".into()).await;
        assert!(shown_as(&client, "#settings [name=liveIdleTimeoutS]", true).await);
        for realtime_only in [
            "transcriptionModel",
            "transcriptionDelay",
            "noiseReduction",
            "speechSpeed",
        ] {
            assert!(
                !shown_as(&client, &format!("#settings [name={realtime_only}]"), false).await,
                "{realtime_only} is the Realtime API's"
            );
        }
        let voices = client
            .execute(
                "return [...document.querySelectorAll('#settings [name=voice] option')]\
                   .map(o => o.value);",
                vec![],
            )
            .await
            .unwrap();
        let voices: Vec<String> = serde_json::from_value(voices).unwrap();
        assert_eq!(
            voices.len(),
            walkie_openai::live::LIVE_VOICES.len(),
            "{voices:?}"
        );
        assert!(voices.contains(&"vesper".to_owned()), "{voices:?}");
        set_field(&client, "voice", "vesper".into()).await;
        set_field(&client, "liveIdleTimeoutS", "2".into()).await;
        click(&client, "#settings button[value=save]").await;
        let pause = wait_for(&client, "#settings [data-role=message]", |text| {
            text.starts_with("Not saved")
        })
        .await;
        assert!(pause.contains("fix the setting marked in red"), "{pause}");
        let error = error_under(&client, "liveIdleTimeoutS")
            .await
            .expect("an error under the pause");
        let label = label_of(&client, "liveIdleTimeoutS").await;
        assert!(error.starts_with(&format!("{label}:")), "{error}");
        assert!(error.contains("enter 5 to 3600 seconds"), "{error}");
        support::screenshot(&client, "settings-live").await;
        set_field(&client, "liveIdleTimeoutS", "90".into()).await;
        click(&client, "#settings button[value=save]").await;
        wait_for(&client, "#settings [data-role=message]", |text| {
            text == "Saved."
        })
        .await;
    })
    .await;
    let saved: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(config.join("settings.json")).unwrap())
            .unwrap();
    assert_eq!(saved["model"], "gpt-live-1.1");
    assert_eq!(saved["voice"], "vesper");
    assert_eq!(saved["liveIdleTimeoutS"], 90);
}
