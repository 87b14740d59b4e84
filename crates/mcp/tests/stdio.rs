//! Walkie and an MCP server over stdio, both real: the test server (built with rmcp, the
//! official SDK) is started as a process, its tools are listed and called, and a server that
//! sleeps, crashes, writes garbage or fails each gives a clear error while the next call works.

use std::time::Duration;

use serde_json::{Value, json};
use walkie_mcp::{
    CallError, MAX_TOOL_SCHEMA_BYTES, MAX_TOOLS_PER_SERVER, Reach, ServerError, ServerSecrets,
    ServerSpec, Servers,
};

const DEADLINE: Duration = Duration::from_secs(20);

fn test_server(name: &str) -> ServerSpec {
    ServerSpec {
        name: name.to_owned(),
        reach: Reach::Command {
            program: env!("CARGO_BIN_EXE_walkie-mcp-test-server").to_owned(),
            args: Vec::new(),
        },
        secrets: ServerSecrets::default(),
    }
}

async fn started() -> Servers {
    let (servers, problems) = Servers::start(vec![test_server("test")], DEADLINE).await;
    assert_eq!(problems, []);
    servers
}

#[tokio::test]
async fn a_servers_tools_are_listed_under_names_the_api_takes_with_their_schemas() {
    let servers = started().await;
    let mut names: Vec<&str> = servers
        .tools()
        .iter()
        .map(|tool| tool.offered_name.as_str())
        .collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "test__add",
            "test__authorization",
            "test__big",
            "test__crash",
            "test__echo",
            "test__environment",
            "test__fail",
            "test__garble",
            "test__sleep"
        ]
    );
    let add = servers
        .tools()
        .iter()
        .find(|tool| tool.tool == "add")
        .unwrap();
    assert_eq!(add.description.as_deref(), Some("Adds two integers"));
    assert_eq!(add.input_schema["type"], "object");
    assert!(
        add.input_schema["properties"]["a"].is_object(),
        "{}",
        add.input_schema
    );
    servers.stop().await;
}

#[tokio::test]
async fn calls_give_the_tools_answers() {
    let servers = started().await;
    assert_eq!(
        servers
            .call("test__add", json!({"a": 2, "b": 3}), DEADLINE)
            .await,
        Ok(json!("5"))
    );
    assert_eq!(
        servers
            .call("test__echo", json!({"text": "hello"}), DEADLINE)
            .await,
        Ok(json!("hello"))
    );
    assert_eq!(
        servers.call("test__nothing", json!({}), DEADLINE).await,
        Err(CallError::UnknownTool {
            offered_name: "test__nothing".to_owned()
        })
    );
    servers.stop().await;
}

#[tokio::test]
async fn a_call_past_its_deadline_times_out_and_the_server_still_answers_the_next() {
    let servers = started().await;
    let late = servers
        .call(
            "test__sleep",
            json!({"ms": 5_000}),
            Duration::from_millis(300),
        )
        .await;
    assert_eq!(
        late,
        Err(CallError::TimedOut {
            server: "test".to_owned(),
            after: Duration::from_millis(300)
        })
    );
    assert_eq!(
        servers
            .call("test__add", json!({"a": 1, "b": 1}), DEADLINE)
            .await,
        Ok(json!("2"))
    );
    servers.stop().await;
}

#[tokio::test]
async fn a_server_that_crashes_is_reported_and_started_again_for_the_next_call() {
    let servers = started().await;
    let crashed = servers.call("test__crash", json!({}), DEADLINE).await;
    assert_eq!(
        crashed,
        Err(CallError::ServerStopped {
            server: "test".to_owned()
        })
    );
    assert_eq!(
        crashed.unwrap_err().to_string(),
        "test stopped during the call (it is started again for the next one)"
    );
    assert_eq!(
        servers
            .call("test__add", json!({"a": 20, "b": 22}), DEADLINE)
            .await,
        Ok(json!("42")),
        "the server was started again"
    );
    servers.stop().await;
}

#[tokio::test]
async fn garbage_on_the_protocol_stream_and_a_failing_tool_leave_the_server_usable() {
    let servers = started().await;
    let garbled = servers.call("test__garble", json!({}), DEADLINE).await;
    assert!(
        matches!(&garbled, Ok(Value::String(text)) if text == "garbled")
            || matches!(
                &garbled,
                Err(CallError::ServerStopped { .. } | CallError::Refused { .. })
            ),
        "{garbled:?}"
    );
    assert_eq!(
        servers.call("test__fail", json!({}), DEADLINE).await,
        Err(CallError::ToolFailed {
            tool: "fail".to_owned(),
            message: "this tool always fails".to_owned()
        })
    );
    assert_eq!(
        servers
            .call("test__echo", json!({"text": "still here"}), DEADLINE)
            .await,
        Ok(json!("still here"))
    );
    servers.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_calls_at_once_give_a_hundred_right_answers() {
    let servers = std::sync::Arc::new(started().await);
    let calls = (0..100).map(|n| {
        let servers = servers.clone();
        tokio::spawn(async move {
            servers
                .call("test__add", json!({"a": n, "b": 1000}), DEADLINE)
                .await
        })
    });
    let mut answers = Vec::new();
    for call in calls {
        answers.push(call.await.expect("the call's task"));
    }
    let expected: Vec<Result<Value, CallError>> = (0..100)
        .map(|n| Ok(json!((n + 1000).to_string())))
        .collect();
    assert_eq!(answers, expected);
    servers.stop().await;
}

#[tokio::test]
async fn a_server_that_cannot_start_or_is_not_mcp_is_reported_and_the_others_are_used() {
    let missing = ServerSpec {
        name: "missing".to_owned(),
        reach: Reach::Command {
            program: "/nonexistent/walkie-mcp-server".to_owned(),
            args: Vec::new(),
        },
        secrets: ServerSecrets::default(),
    };
    let not_mcp = ServerSpec {
        name: "chatty".to_owned(),
        reach: Reach::Command {
            program: "sh".to_owned(),
            args: vec!["-c".to_owned(), "echo hello; exit 0".to_owned()],
        },
        secrets: ServerSecrets::default(),
    };
    let (servers, problems) = Servers::start(
        vec![missing, not_mcp, test_server("test")],
        Duration::from_secs(5),
    )
    .await;
    assert_eq!(problems.len(), 2, "{problems:?}");
    assert!(matches!(&problems[0], ServerError::NotStarted { server, .. } if server == "missing"));
    assert!(
        problems[0]
            .to_string()
            .starts_with("missing could not be started (No such file or directory"),
        "{}",
        problems[0]
    );
    assert!(matches!(&problems[1], ServerError::NoHandshake { server, .. } if server == "chatty"));
    assert!(servers.tools().iter().all(|tool| tool.server == "test"));
    assert!(!servers.tools().is_empty());
    servers.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_started_by_its_command_gets_the_users_paths_and_language_and_nothing_of_walkies()
{
    let servers = started().await;
    let answer = servers
        .call("test__environment", json!({}), DEADLINE)
        .await
        .expect("the server names its environment");
    let names: Vec<&str> = answer.as_str().expect("a text answer").split(' ').collect();
    assert!(
        names.contains(&"PATH") && names.contains(&"HOME"),
        "{names:?}"
    );
    // Cargo gives this test process CARGO_* variables: the server gets none of them.
    assert!(
        std::env::vars().any(|(name, _)| name.starts_with("CARGO_")),
        "the test's own environment has something to leave out"
    );
    assert!(
        names.iter().all(|name| !name.starts_with("CARGO_")),
        "{names:?}"
    );
    servers.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_servers_own_variables_are_added_to_its_environment_and_only_its() {
    let mut own = test_server("own");
    own.secrets.environment = vec![("WALKIE_TEST_TOKEN".to_owned(), "not-a-token".to_owned())];
    let (servers, problems) = Servers::start(vec![own, test_server("other")], DEADLINE).await;
    assert_eq!(problems, []);
    let names_of = |answer: Value| -> Vec<String> {
        answer
            .as_str()
            .expect("a text answer")
            .split(' ')
            .map(str::to_owned)
            .collect()
    };
    let own_names = names_of(
        servers
            .call("own__environment", json!({}), DEADLINE)
            .await
            .expect("own names its environment"),
    );
    assert!(
        own_names.contains(&"WALKIE_TEST_TOKEN".to_owned()),
        "{own_names:?}"
    );
    assert!(own_names.contains(&"PATH".to_owned()), "{own_names:?}");
    let other_names = names_of(
        servers
            .call("other__environment", json!({}), DEADLINE)
            .await
            .expect("other names its environment"),
    );
    assert!(
        !other_names.contains(&"WALKIE_TEST_TOKEN".to_owned()),
        "{other_names:?}"
    );
    servers.stop().await;
}

#[test]
fn walkies_api_keys_are_never_passed_to_a_server() {
    let parent = [
        ("PATH", "/usr/bin"),
        ("OPENAI_API_KEY", "sk-walkie-fake"),
        ("AZURE_OPENAI_API_KEY", "azure-fake"),
        ("LC_TIME", "de_DE.UTF-8"),
        ("WALKIE_DATA_DIR", "/home/me/walkie"),
        ("HOME", "/home/me"),
    ]
    .map(|(name, value)| (name.into(), value.into()));
    let passed: Vec<(String, String)> = walkie_mcp::passed_environment(parent)
        .into_iter()
        .map(|(name, value)| {
            (
                name.to_string_lossy().into_owned(),
                value.to_string_lossy().into_owned(),
            )
        })
        .collect();
    let passed: Vec<(&str, &str)> = passed
        .iter()
        .map(|(name, value)| (name.as_str(), value.as_str()))
        .collect();
    assert_eq!(
        passed,
        [
            ("PATH", "/usr/bin"),
            ("LC_TIME", "de_DE.UTF-8"),
            ("HOME", "/home/me")
        ]
    );
}

#[tokio::test]
async fn a_server_whose_tool_list_never_ends_is_used_with_its_first_tools_and_said_so() {
    let endless = ServerSpec {
        name: "endless".to_owned(),
        reach: Reach::Command {
            program: env!("CARGO_BIN_EXE_walkie-mcp-test-server").to_owned(),
            args: vec!["--endless-tools".to_owned()],
        },
        secrets: ServerSecrets::default(),
    };
    let started = std::time::Instant::now();
    let (servers, problems) = Servers::start(vec![endless], DEADLINE).await;
    assert!(
        started.elapsed() < DEADLINE / 2,
        "the list is cut off once full, not at the deadline ({:?})",
        started.elapsed()
    );
    assert_eq!(servers.tools().len(), MAX_TOOLS_PER_SERVER);
    assert!(
        servers
            .tools()
            .iter()
            .all(|tool| serde_json::to_vec(&tool.input_schema).unwrap().len()
                <= MAX_TOOL_SCHEMA_BYTES),
        "no tool with an oversized schema is offered"
    );
    assert_eq!(
        servers.tools()[0].tool,
        "tool_0_1",
        "the tool described at 64 KiB is left out"
    );
    let [problem] = problems.as_slice() else {
        panic!("one problem, the cut: {problems:?}");
    };
    assert!(problem.leaves_the_server_in(), "{problem:?}");
    assert!(matches!(problem, ServerError::ToolsCut { .. }));
    let said = problem.to_string();
    assert!(
        said.starts_with("endless offers tools Walkie leaves out"),
        "{said}"
    );
    assert!(
        said.contains("1 described at over 16 KiB: tool_0_0"),
        "{said}"
    );
    assert!(
        said.contains(&format!(
            "it lists more than {MAX_TOOLS_PER_SERVER} tools: the first {MAX_TOOLS_PER_SERVER} \
             are used"
        )),
        "{said}"
    );
    servers.stop().await;
}

/// A server started with `args`, tagged for [`processes_tagged`].
fn tagged_server(args: &[&str], tag: &str) -> ServerSpec {
    let mut spec = test_server("tagged");
    let Reach::Command {
        args: spec_args, ..
    } = &mut spec.reach
    else {
        unreachable!("the test server is started by its command");
    };
    spec_args.extend(args.iter().map(|arg| (*arg).to_owned()));
    spec_args.push(tag.to_owned());
    spec
}

/// The processes whose arguments hold `tag` (a zombie has none: it is gone but for its
/// reaping).
fn processes_tagged(tag: &str) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .expect("the process table")
        .flatten()
        .filter_map(|entry| {
            let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
            let cmdline = std::fs::read(entry.path().join("cmdline")).ok()?;
            cmdline
                .split(|byte| *byte == 0)
                .any(|arg| arg == tag.as_bytes())
                .then_some(pid)
        })
        .collect()
}

/// Kills what is left of the tagged processes when a test ends, failed or not: one left
/// holds the test's output open, and the run would wait on it.
struct EndTagged(String);

impl Drop for EndTagged {
    fn drop(&mut self) {
        for pid in processes_tagged(&self.0) {
            if let Some(pid) = rustix::process::Pid::from_raw(pid as i32) {
                let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
            }
        }
    }
}

#[tokio::test]
async fn stopping_a_server_ends_the_processes_it_started_too() {
    let tag = format!("walkie-mcp-test-{}-with-child", std::process::id());
    let _end = EndTagged(tag.clone());
    let (servers, problems) =
        Servers::start(vec![tagged_server(&["--with-child"], &tag)], DEADLINE).await;
    assert_eq!(problems, []);
    assert_eq!(
        processes_tagged(&tag).len(),
        2,
        "the server and the helper it started run"
    );
    servers.stop().await;
    assert_eq!(
        processes_tagged(&tag),
        Vec::<u32>::new(),
        "neither the server nor its helper is left"
    );
}

#[tokio::test]
async fn a_server_that_ignores_its_input_closing_and_sigterm_is_killed() {
    let tag = format!("walkie-mcp-test-{}-stubborn", std::process::id());
    let _end = EndTagged(tag.clone());
    let (servers, problems) =
        Servers::start(vec![tagged_server(&["--stubborn"], &tag)], DEADLINE).await;
    assert_eq!(problems, []);
    assert_eq!(processes_tagged(&tag).len(), 1);
    servers.stop().await;
    assert_eq!(processes_tagged(&tag), Vec::<u32>::new());
    assert!(
        matches!(
            servers
                .call("tagged__echo", json!({"text": "again?"}), DEADLINE)
                .await,
            Err(CallError::Server(ServerError::NotStarted { .. }))
        ),
        "a stopped server is not started again by a late call"
    );
}
