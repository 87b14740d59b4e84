//! Tools from an MCP server, end to end: the settings list the test server (built with rmcp,
//! the official SDK); the app starts it and declares its tools; the local provider's scripted
//! model calls them when asked in words; a tool that asks first shows a card and waits for
//! Allow or Deny; a server that crashes is reported and started again for the next call; a
//! hundred calls in one response get a hundred answers; every call and answer is shown and
//! saved.

mod support;

use support::audio::require_test_audio;
use support::{WebviewApp, mcp_test_server as test_server, wait_for, wait_for_text};

const READY: &str = "Ready (the local provider): hold Space or the button to talk.";

/// How long a hundred tool calls in one response may take to be answered and shown.
const HUNDRED_CALLS_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

/// How many tools' answers the transcript shows.
const ANSWERS_SHOWN: &str =
    "return document.querySelectorAll('#transcript article[data-role=\"tool\"]').length";

/// The tools' answers the local provider was sent (`function_call_output` items), in order.
fn tool_answers(trace: &std::path::Path) -> Vec<serde_json::Value> {
    support::client_events(trace)
        .into_iter()
        .filter(|event| event["item"]["type"] == "function_call_output")
        .map(|event| event["item"]["output"].clone())
        .collect()
}

/// One app of this file at a time: each runs a tool server, and one of them a hundred calls,
/// on a machine of 2 cores.
static ONE_APP: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The test server over streamable HTTP on loopback, and its address; ended when dropped.
struct HttpTestServer {
    child: std::process::Child,
    url: String,
}

impl HttpTestServer {
    fn start() -> HttpTestServer {
        use std::io::BufRead as _;
        let mut child = std::process::Command::new(test_server())
            .arg("--http")
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("the test server starts");
        let mut url = String::new();
        std::io::BufReader::new(child.stdout.take().expect("its stdout"))
            .read_line(&mut url)
            .expect("its address");
        HttpTestServer {
            child,
            url: url.trim().to_owned(),
        }
    }
}

impl Drop for HttpTestServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Writes settings that list one tool server, `test`, started by `command`, with `permission`
/// for its tools and `tools` their own choices; the local provider answers.
fn settings_with_test_server(
    dirs: &support::AppDirs,
    command: &str,
    permission: &str,
    tools: serde_json::Value,
) {
    std::fs::write(
        dirs.config.join("settings.json"),
        serde_json::json!({
            "provider": "local",
            "toolServers": [{
                "name": "test",
                "command": command,
                "enabled": true,
                "permission": permission,
                "tools": tools
            }]
        })
        .to_string(),
    )
    .expect("writing the settings");
}

async fn say(client: &fantoccini::Client, text: &str) {
    let field = client
        .find(fantoccini::Locator::Css("#compose-text"))
        .await
        .expect("the field to type in");
    field.click().await.expect("focusing the field");
    field.send_keys(text).await.expect("typing");
    support::press(client, fantoccini::key::Key::Enter).await;
}

async fn click(client: &fantoccini::Client, css: &str) {
    support::click(client, css).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn e2e_an_mcp_servers_tools_are_called_asked_for_denied_and_survive_a_crash() {
    require_test_audio();
    let _one_app = ONE_APP.lock().await;
    let dirs = support::AppDirs::fresh("mcp_tools");
    let command = format!("'{}'", test_server().display());
    // Settings from before: "always" said of the server. It covers no tool without
    // a choice of its own (echo asks, below).
    settings_with_test_server(
        &dirs,
        &command,
        "always",
        serde_json::json!({"add": "always", "big": "always", "crash": "always", "sleep": "never"}),
    );
    let app = WebviewApp::launch_with("mcp_tools", support::Launch::in_dirs(&dirs, None)).await;
    let received = app.dirs().trace.join("client-events.jsonl");
    let trace = received.clone();
    app.run(|client| async move {
        wait_for_text(&client, "#status", READY).await;

        // Always allowed: it runs at once.
        say(&client, r#"use test__add with {"a": 2, "b": 3}"#).await;
        wait_for(&client, "#transcript", |text| {
            text.contains(r#"The test__add tool answered: "5""#)
        })
        .await;

        // An answer of 1 MiB, far more than one message to the model holds: it is cut to fit,
        // the model and the transcript are told, and the call goes on.
        say(&client, r#"use test__big with {"kib": 1024}"#).await;
        wait_for(&client, "#transcript", |text| {
            text.contains("The test__big tool answered:")
                && text.contains("Walkie cut this answer: it was 1024 KiB")
        })
        .await;
        wait_for_text(&client, "#status", READY).await;
        support::screenshot(&client, "tool-answer-cut").await;

        // Asks first: a card, and nothing more until the user decides.
        say(&client, r#"use test__echo with {"text": "hello"}"#).await;
        let card = wait_for(&client, "#approvals", |text| text.contains("wants to use")).await;
        assert!(
            card.starts_with("The assistant wants to use echo, on test. Allow it?"),
            "{card}"
        );
        assert!(
            card.contains(r#""text": "hello""#),
            "the arguments are shown: {card}"
        );
        let focused = client
            .execute("return document.activeElement?.id ?? null", vec![])
            .await
            .expect("the focused element");
        assert_eq!(
            focused, "compose-text",
            "the card leaves the focus in the field: an Enter meant for it never allows"
        );
        support::screenshot(&client, "tool-approval").await;
        assert_eq!(
            support::accessibility_violations(&client).await,
            Vec::<String>::new(),
            "with a tool call's card"
        );
        click(&client, ".approval button.primary").await;
        wait_for(&client, "#transcript", |text| {
            text.contains(r#"The test__echo tool answered: "hello""#)
        })
        .await;
        wait_for(&client, "#approvals", str::is_empty).await;

        // Denied: the model is told, nothing runs.
        say(&client, r#"use test__echo with {"text": "secret"}"#).await;
        wait_for(&client, "#approvals", |text| text.contains("wants to use")).await;
        click(&client, ".approval button.quiet").await;
        wait_for(&client, "#transcript", |text| {
            text.contains("the user denied this call")
        })
        .await;

        // Never allowed: refused without a card.
        say(&client, r#"use test__sleep with {"ms": 10}"#).await;
        wait_for(&client, "#transcript", |text| {
            text.contains("the user does not allow this tool")
        })
        .await;

        // A crash: reported, and the server is started again for the next call.
        support::watch_statuses(&client).await;
        say(&client, "use test__crash").await;
        wait_for(&client, "#transcript", |text| {
            text.contains("test stopped during the call (it is started again for the next one)")
        })
        .await;
        assert!(
            support::statuses_seen(&client)
                .await
                .iter()
                .any(|status| status.contains("A tool failed: test stopped during the call")),
            "the user is told too"
        );
        say(&client, r#"use test__add with {"a": 20, "b": 22}"#).await;
        wait_for(&client, "#transcript", |text| {
            text.contains(r#"The test__add tool answered: "42""#)
        })
        .await;
        support::screenshot(&client, "tool-calls-shown").await;

        // A hundred calls in one response: a hundred answers, then the reply.
        say(&client, r#"use test__add 100 times with {"a": 1, "b": 1}"#).await;
        // Two hundred messages drawn on 2 cores: more than the usual wait. Should it run
        // out, what the provider was sent and what the page shows say which side stalled.
        let waited = support::try_wait_for_within(
            &client,
            "#transcript",
            HUNDRED_CALLS_TIMEOUT,
            |text| {
                text.contains(r#"100 tool calls were answered; the last, test__add, answered: "2""#)
            },
        )
        .await;
        if let Err(last) = waited {
            let answers_shown = client
                .execute(ANSWERS_SHOWN, vec![])
                .await
                .expect("the answers shown");
            let tail = last.as_deref().map(|text| {
                &text[text.char_indices().rev().nth(399).map_or(0, |(at, _)| at)..]
            });
            panic!(
                "no reply to a hundred calls after {HUNDRED_CALLS_TIMEOUT:?}: the provider was \
                 sent {} answers of 107, the page shows {answers_shown}; the transcript ends \
                 {tail:?}",
                tool_answers(&trace).len()
            );
        }
        let shown = client
            .execute(
                "return [...document.querySelectorAll('#transcript article[data-role=\"tool-call\"]')]\
                 .map((article) => article.querySelector('.message-speaker').textContent)",
                vec![],
            )
            .await
            .expect("the tool calls shown");
        let shown: Vec<String> = serde_json::from_value(shown).expect("their speakers");
        assert_eq!(shown.len(), 107, "every call is shown: {shown:?}");
        assert_eq!(shown[0], "Used test__add");
    })
    .await;

    let outputs = tool_answers(&received);
    assert_eq!(outputs.len(), 107, "one answer per call: {outputs:?}");
    let cut: Vec<&str> = outputs
        .iter()
        .filter_map(serde_json::Value::as_str)
        .filter(|output| output.contains("Walkie cut this answer"))
        .collect();
    assert_eq!(cut.len(), 1, "the 1 MiB answer went out cut");
    assert!(
        cut[0].len() < 64 * 1024,
        "within one message: {} bytes",
        cut[0].len()
    );

    // Saved: every call and every answer, in both transcripts.
    let folder = std::fs::read_dir(dirs.data.join("conversations"))
        .expect("the conversations folder")
        .map(|entry| entry.expect("a folder entry").path())
        .find(|path| path.join("transcript.json").is_file())
        .expect("the conversation was saved");
    let saved: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(folder.join("transcript.json")).expect("transcript.json"),
    )
    .expect("JSON");
    let messages = saved["messages"].as_array().expect("its messages");
    let calls = messages
        .iter()
        .filter(|message| message["toolCalls"].is_array())
        .count();
    let answers: Vec<&serde_json::Value> = messages
        .iter()
        .filter(|message| message["role"] == "tool")
        .collect();
    assert_eq!((calls, answers.len()), (107, 107), "{messages:#?}");
    assert!(
        answers.iter().any(|answer| answer["content"]
            .as_str()
            .is_some_and(|content| content.contains("the user denied this call"))),
        "a denial is saved as the answer the model was given"
    );
    let markdown = std::fs::read_to_string(folder.join("transcript.md")).expect("transcript.md");
    assert_eq!(
        markdown.matches("Called ` test__add ` with").count(),
        102,
        "{markdown}"
    );
}

/// A server started by its command (which starts a helper of its own, as `npx` starts `node`)
/// is not given Walkie's API key, and neither it nor its helper outlives Walkie.
#[tokio::test(flavor = "multi_thread")]
async fn e2e_a_servers_processes_never_get_the_api_key_and_end_when_walkie_quits() {
    require_test_audio();
    let _one_app = ONE_APP.lock().await;
    let name = "mcp_processes";
    let dirs = support::AppDirs::fresh(name);
    let tag = format!("walkie-e2e-{}-{name}", std::process::id());
    let _leftovers = support::KillTagged(tag.clone());
    settings_with_test_server(
        &dirs,
        &format!("'{}' --with-child {tag}", test_server().display()),
        "ask",
        serde_json::json!({"environment": "always"}),
    );
    let mut launch = support::Launch::in_dirs(&dirs, None);
    launch
        .env
        .push(("OPENAI_API_KEY", "sk-walkie-e2e-not-a-key".to_owned()));
    let app = WebviewApp::launch_with(name, launch).await;
    let pid = app.walkie_pid();
    app.run(|client| async move {
        wait_for_text(&client, "#status", READY).await;
        assert_eq!(
            support::processes_with_arg(&tag).len(),
            2,
            "the server and its helper run"
        );
        say(&client, "use test__environment").await;
        let transcript = wait_for(&client, "#transcript", |text| {
            text.contains("The test__environment tool answered:")
        })
        .await;
        assert!(transcript.contains("PATH"), "{transcript}");
        assert!(
            !transcript.contains("OPENAI_API_KEY"),
            "Walkie's key reached the server: {transcript}"
        );

        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid as i32),
            nix::sys::signal::Signal::SIGTERM,
        )
        .expect("signalling Walkie");
        support::wait_until_exited(pid, std::time::Duration::from_secs(15)).await;
        assert_eq!(
            support::processes_with_arg(&tag),
            Vec::<u32>::new(),
            "a process Walkie started is left after it quit"
        );
    })
    .await;
}

/// A variable typed for a server in Settings is kept in the keyring (in no file, never shown
/// back), and the server is given it from the next conversation.
#[tokio::test(flavor = "multi_thread")]
async fn e2e_a_servers_variable_typed_in_settings_is_kept_in_the_keyring_and_reaches_it() {
    require_test_audio();
    let _one_app = ONE_APP.lock().await;
    let name = "mcp_secrets";
    let dirs = support::AppDirs::fresh(name);
    let keyring = support::SecretService::start(&dirs);
    let value = "walkie-e2e-not-a-token";
    settings_with_test_server(
        &dirs,
        &format!("'{}'", test_server().display()),
        "ask",
        serde_json::json!({"environment": "always"}),
    );
    let app = WebviewApp::launch_with(name, support::Launch::in_dirs(&dirs, Some(&keyring))).await;
    app.run(|client| async move {
        wait_for_text(&client, "#status", READY).await;
        support::open_settings(&client).await;
        support::open_advanced(&client).await;
        click(&client, "#settings .tool-server-secrets summary").await;
        wait_for(&client, "#settings .tool-server-secrets-state", |text| {
            text == "Nothing is kept."
        })
        .await;
        let field = client
            .find(fantoccini::Locator::Css(
                "#settings [aria-label='Variables and header of test']",
            ))
            .await
            .expect("the server's variables field");
        field.send_keys("WALKIE_E2E_TOKEN=").await.expect("typing");
        field.send_keys(value).await.expect("typing");
        click(&client, "#settings button[value=save]").await;
        wait_for(&client, "#settings [data-role=message]", |text| {
            text.starts_with("Saved")
        })
        .await;
        wait_for(&client, "#settings .tool-server-secrets-state", |text| {
            text == "Kept: WALKIE_E2E_TOKEN."
        })
        .await;
        support::screenshot(&client, "settings-tool-server-secrets").await;
        assert!(
            !client.source().await.expect("the page").contains(value),
            "the value is never shown back"
        );
        support::press(&client, fantoccini::key::Key::Escape).await;

        // The next conversation starts the server anew, with the variable.
        support::watch_statuses(&client).await;
        click(&client, "#connect").await;
        let deadline = std::time::Instant::now() + support::UI_TIMEOUT;
        while !support::statuses_seen(&client)
            .await
            .iter()
            .any(|status| status.starts_with("Connecting"))
        {
            assert!(
                std::time::Instant::now() < deadline,
                "no new call was placed"
            );
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        wait_for_text(&client, "#status", READY).await;
        say(&client, "use test__environment").await;
        let transcript = wait_for(&client, "#transcript", |text| {
            text.contains("The test__environment tool answered:")
        })
        .await;
        assert!(transcript.contains("WALKIE_E2E_TOKEN"), "{transcript}");
    })
    .await;
    for dir in [&dirs.config, &dirs.data, &dirs.log] {
        let (found, _) = support::files_containing(dir, value);
        assert!(found.is_empty(), "the value is written in {found:?}");
    }
    drop(keyring);
}

/// Adds the `number`th server in Settings as a user would: Add a server (its name field takes
/// the focus), the name, the command, then Check.
async fn add_server(client: &fantoccini::Client, number: usize, name: &str, command: &str) {
    click(client, "#settings [data-action=add-tool-server]").await;
    client
        .active_element()
        .await
        .expect("the focused name")
        .send_keys(name)
        .await
        .expect("typing the name");
    client
        .find(fantoccini::Locator::Css(&format!(
            "#settings [aria-label='Command or address of server {number}']"
        )))
        .await
        .expect("the command field")
        .send_keys(command)
        .await
        .expect("typing the command");
    click(
        client,
        &format!("#settings [aria-label='Check server {number}']"),
    )
    .await;
}

/// Settings: a server is added by typing its name and command; Check starts it and lists its
/// tools, and one of them is allowed always; a name the settings refuse is said under the list;
/// saved, the list is in settings.json. A server whose command does not start says so at
/// Check, and, left in the list, in the status line of the next conversation. A server at an
/// address (streamable HTTP) is checked and called the same way.
#[tokio::test(flavor = "multi_thread")]
async fn e2e_tool_servers_are_added_checked_and_saved_in_settings() {
    require_test_audio();
    let _one_app = ONE_APP.lock().await;
    let app = WebviewApp::launch("mcp_settings").await;
    let config = app.dirs().config.clone();
    let server = test_server().display().to_string();
    let web = HttpTestServer::start();
    let web_url = web.url.clone();
    let display = app.display().to_owned();
    app.run(|client| async move {
        wait_for_text(&client, "#status", READY).await;
        support::open_settings(&client).await;
        support::open_advanced(&client).await;
        add_server(&client, 1, "my tools", &format!("'{server}'")).await;
        let note = wait_for(&client, "#settings .tool-server-note", |text| {
            text.starts_with("It works")
        })
        .await;
        assert_eq!(
            note,
            "It works: 9 tools (add, authorization, big, crash, echo, environment, fail, garble, sleep)."
        );
        client
            .find(fantoccini::Locator::Css(
                "#settings [aria-label='What echo of my tools may do']",
            ))
            .await
            .expect("echo's permission")
            .select_by_value("always")
            .await
            .expect("choosing Always allow");
        support::screenshot(&client, "settings-tool-servers").await;
        assert_eq!(
            support::accessibility_violations(&client).await,
            Vec::<String>::new(),
            "with a tool server checked"
        );
        click(&client, "#settings button[value=save]").await;
        let error = wait_for(&client, "#settings-toolServers-error", |text| {
            !text.is_empty()
        })
        .await;
        assert_eq!(
            error,
            "Tool servers (MCP): name “my tools” with 1 to 24 letters, digits, _ or -"
        );
        let name = client
            .find(fantoccini::Locator::Css(
                "#settings [aria-label='Name of server 1']",
            ))
            .await
            .expect("the name field");
        name.clear().await.expect("clearing the name");
        name.send_keys("mine").await.expect("typing the name");

        // A second server whose program is not there.
        add_server(&client, 2, "broken", "/nonexistent/mcp-server").await;
        let note = wait_for(
            &client,
            "#settings .tool-server:nth-child(2) .tool-server-note",
            |text| text.contains("could not be started"),
        )
        .await;
        assert!(
            note.starts_with("broken could not be started (No such file or directory")
                && note.ends_with(". Fix it above, then press Check again."),
            "{note}"
        );
        // An address another computer would be reached at in plain http is not even tried.
        add_server(&client, 3, "web", "http://tools.example.com/mcp").await;
        let note = wait_for(
            &client,
            "#settings .tool-server:nth-child(3) .tool-server-note",
            |text| text.starts_with("Its address"),
        )
        .await;
        assert_eq!(
            note,
            "Its address needs https:// (plain http:// is only for a server on this computer). \
             Fix it above, then press Check again."
        );
        click(&client, "#settings [aria-label='Remove web']").await;

        // A third at an address, over streamable HTTP, its add allowed always.
        add_server(&client, 3, "web", &web_url).await;
        wait_for(
            &client,
            "#settings .tool-server:nth-child(3) .tool-server-note",
            |text| text.starts_with("It works: 9 tools"),
        )
        .await;
        let web_choices = client
            .execute(
                r##"return [...document.querySelector("#settings [aria-label='What the tools of web may do']").options]
                   .map((option) => option.value);"##,
                vec![],
            )
            .await
            .expect("the choices for web's tools");
        assert_eq!(
            web_choices,
            serde_json::json!(["ask", "never"]),
            "always is chosen per tool: said of a server, it would cover tools it adds later"
        );
        client
            .find(fantoccini::Locator::Css(
                "#settings [aria-label='What add of web may do']",
            ))
            .await
            .expect("add's permission")
            .select_by_value("always")
            .await
            .expect("choosing Always allow");
        // At the narrowest window, the three servers, their notes and tools fit its width.
        support::resize_window(&client, &display, 360, 720).await;
        let sideways = client
            .execute(
                r##"const dialog = document.querySelector("#settings");
                   return dialog.scrollWidth - dialog.clientWidth;"##,
                vec![],
            )
            .await
            .expect("the dialog's width");
        assert!(
            sideways.as_f64().is_some_and(|by| by <= 0.0),
            "the dialog scrolls sideways by {sideways} px"
        );
        support::screenshot(&client, "settings-tool-servers-narrow").await;
        click(&client, "#settings button[value=save]").await;
        wait_for(&client, "#settings [data-role=message]", |text| {
            text.starts_with("Saved")
        })
        .await;
        let saved: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(config.join("settings.json")).expect("settings.json"),
        )
        .expect("JSON");
        assert_eq!(
            saved["toolServers"],
            serde_json::json!([
                {"name": "mine", "command": format!("'{server}'"), "enabled": true,
                 "permission": "ask", "tools": {"echo": "always"}},
                {"name": "broken", "command": "/nonexistent/mcp-server", "enabled": true,
                 "permission": "ask", "tools": {}},
                {"name": "web", "command": web_url, "enabled": true,
                 "permission": "ask", "tools": {"add": "always"}},
            ])
        );
        support::press(&client, fantoccini::key::Key::Escape).await;

        // The next conversation starts both: the broken one is named, the other's tools work.
        click(&client, "#connect").await;
        let status = wait_for(&client, "#status", |text| text.starts_with("Not available")).await;
        assert!(
            status.starts_with("Not available: broken could not be started (No such file")
                && status.contains("Its tools are left out of this conversation."),
            "{status}"
        );
        say(&client, r#"use mine__echo with {"text": "from settings"}"#).await;
        wait_for(&client, "#transcript", |text| {
            text.contains(r#"The mine__echo tool answered: "from settings""#)
        })
        .await;
        say(&client, r#"use web__add with {"a": 19, "b": 23}"#).await;
        wait_for(&client, "#transcript", |text| {
            text.contains(r#"The web__add tool answered: "42""#)
        })
        .await;
    })
    .await;
    drop(web);
}
