//! The app's MCP servers, as the settings list them: started when a conversation begins (and
//! kept while the list and their secrets stay the same, so a reconnect or new settings do not
//! restart them; stopped when the user hangs up and before Walkie quits; one that could not
//! start is named in the status line, with Settings to fix it), their tools
//! declared to the conversation with what the user allows of each, and each call run off the
//! conversation's task, its outcome coming back as the machine's input.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;
use walkie_conversation::{Input, OutsideTool, ToolPolicy, ToolServerProblem};
use walkie_mcp::{Reach, ServerSecrets, ServerSpec, Servers};
use walkie_openai::Tool;
use walkie_session::turn::ToolCallRequest;
use walkie_settings::secrets::{ToolServerSecrets, ToolServerSecretsSummary};
use walkie_settings::tool_servers::{ToolPermission, ToolServer};

/// How long a server has to start and list its tools.
pub const START_DEADLINE: Duration = Duration::from_secs(20);
/// How long a call may take before the model is told the server did not answer.
pub const CALL_DEADLINE: Duration = Duration::from_secs(30);

/// The servers running for the settings' list.
#[derive(Default)]
pub struct ToolServers {
    running: Option<Running>,
}

struct Running {
    /// The secrets of one of them changed since: the next conversation starts them anew.
    secrets_changed: bool,
    /// The enabled servers of the list they were started for.
    listed: Vec<ToolServer>,
    servers: Arc<Servers>,
    /// Why some of them could not be used, or only in part, each naming its server.
    problems: Vec<ToolServerProblem>,
}

impl ToolServers {
    /// The servers of `listed` (the enabled ones), started now (together) unless they already
    /// run, and why any of them could not be used (said again for every conversation until
    /// the list changes); `None` when none is enabled. A server that cannot start is left out.
    pub async fn for_list(
        &mut self,
        listed: &[ToolServer],
    ) -> (Option<Arc<Servers>>, Vec<ToolServerProblem>) {
        let enabled: Vec<ToolServer> = listed
            .iter()
            .filter(|server| server.enabled)
            .cloned()
            .collect();
        if let Some(running) = &self.running
            && running.listed == enabled
            && !running.secrets_changed
        {
            return (Some(running.servers.clone()), running.problems.clone());
        }
        self.stop().await;
        if enabled.is_empty() {
            return (None, Vec::new());
        }
        let mut specs = Vec::with_capacity(enabled.len());
        for server in &enabled {
            specs.extend(spec_of(server).await);
        }
        let (servers, problems) = Servers::start(specs, START_DEADLINE).await;
        let problems: Vec<ToolServerProblem> = problems
            .iter()
            .map(|problem| ToolServerProblem {
                said: problem.to_string(),
                server_used: problem.leaves_the_server_in(),
            })
            .collect();
        for problem in &problems {
            log::warn!(
                "tool server: {}",
                walkie_conversation::outside_text(
                    &problem.said,
                    walkie_conversation::MAX_OUTSIDE_TEXT_CHARS
                )
            );
        }
        let servers = Arc::new(servers);
        self.running = Some(Running {
            secrets_changed: false,
            listed: enabled,
            servers: servers.clone(),
            problems: problems.clone(),
        });
        (Some(servers), problems)
    }

    /// The secrets of a server changed: the next conversation starts the servers anew (the one
    /// under way keeps those it has).
    pub fn secrets_changed(&mut self) {
        if let Some(running) = self.running.as_mut() {
            running.secrets_changed = true;
        }
    }

    /// Stops the servers that run (their process groups end); the next conversation starts
    /// them again.
    pub async fn stop(&mut self) {
        if let Some(old) = self.running.take() {
            old.servers.stop().await;
        }
    }
}

/// How the listed `server` is reached: its address, or its command line split; `None` when
/// neither can be read (the settings refuse such a server). Its secrets are read from the
/// keyring: a keyring that cannot be read gives none (logged; the server says what it misses).
async fn spec_of(server: &ToolServer) -> Option<ServerSpec> {
    let name = server.name.clone();
    let secrets = tauri::async_runtime::spawn_blocking(move || {
        walkie_settings::secrets::tool_server_secrets(&name)
    })
    .await
    .map_err(|error| walkie_settings::secrets::SecretError::Refused(error.to_string()))
    .and_then(|read| read)
    .unwrap_or_else(|problem| {
        log::warn!(
            "the keyring's secrets for tool server {} could not be read: {problem}",
            server.name
        );
        Default::default()
    });
    spec_with(server, secrets)
}

/// `server` reached as its command or address says, given `secrets`.
fn spec_with(server: &ToolServer, secrets: ToolServerSecrets) -> Option<ServerSpec> {
    let reach = match server.address() {
        Some(url) => Reach::Address {
            url: url.to_owned(),
        },
        None => {
            let (program, args) = server.program_and_args()?;
            Reach::Command { program, args }
        }
    };
    Some(ServerSpec {
        name: server.name.clone(),
        reach,
        secrets: ServerSecrets {
            environment: secrets.environment.into_iter().collect(),
            authorization: secrets.authorization,
        },
    })
}

/// A tool a server offers, as Check in Settings shows it.
#[derive(Debug, serde::Serialize)]
pub struct CheckedTool {
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// Starts `server` as Settings shows it (saved or not), lists its tools and stops it: the user
/// sees what it offers, or why it cannot be used, before any conversation depends on it.
#[tauri::command]
pub async fn check_tool_server(server: ToolServer) -> Result<Vec<CheckedTool>, String> {
    let named = ToolServer {
        name: if server.name.trim().is_empty() {
            "The server".to_owned()
        } else {
            server.name.trim().to_owned()
        },
        ..server
    };
    if named.command.trim().is_empty() {
        return Err("Enter the command that starts it, or its address".to_owned());
    }
    // What Save would refuse is not reached either (plain http to another computer).
    if let Some(problem) = named.address_problem() {
        return Err(format!("Its address {problem}"));
    }
    let spec = spec_of(&named)
        .await
        .ok_or_else(|| "Its command has an unclosed quote".to_owned())?;
    let (servers, problems) = Servers::start(vec![spec], START_DEADLINE).await;
    servers.stop().await;
    // A server used without some of its tools shows the tools it is used with.
    if let Some(problem) = problems
        .into_iter()
        .find(|problem| !problem.leaves_the_server_in())
    {
        return Err(problem.to_string());
    }
    Ok(servers
        .tools()
        .iter()
        .map(|tool| CheckedTool {
            name: tool.tool.clone(),
            description: tool.description.clone(),
        })
        .collect())
}

/// What the keyring keeps for the tool server named `name`: the variables' names and whether
/// there is a header, never a value.
#[tauri::command]
pub async fn tool_server_secrets(name: String) -> Result<ToolServerSecretsSummary, String> {
    tauri::async_runtime::spawn_blocking(move || {
        walkie_settings::secrets::tool_server_secrets_summary(name.trim())
    })
    .await
    .map_err(|error| error.to_string())
}

/// Keeps what the user typed for the tool server named `name` in the keyring (NAME=value and
/// `Authorization:` lines), replacing what was kept; nothing typed removes it. The servers
/// are started anew, with it, for the next conversation.
#[tauri::command]
pub async fn save_tool_server_secrets(
    dialler: tauri::State<'_, crate::dialler::Dialler>,
    name: String,
    typed: String,
) -> Result<ToolServerSecretsSummary, String> {
    let secrets = ToolServerSecrets::parse(&typed).map_err(|error| error.to_string())?;
    let name = name.trim().to_owned();
    if name.is_empty() {
        return Err("Name the server first: its secrets are kept under its name".to_owned());
    }
    let variables = secrets.environment.len();
    let summary = tauri::async_runtime::spawn_blocking({
        let name = name.clone();
        move || walkie_settings::secrets::store_tool_server_secrets(&name, &secrets)
    })
    .await
    .map_err(|error| error.to_string())?
    .map_err(|error| error.to_string())?;
    log::info!(
        "the secrets of tool server {name} were saved in the keyring ({variables} variables, {} header)",
        if summary.authorization { "a" } else { "no" }
    );
    dialler.tool_servers.lock().await.secrets_changed();
    Ok(summary)
}

/// The servers' tools as the conversation declares them, each with the user's permission.
pub fn outside_tools(servers: &Servers, listed: &[ToolServer]) -> Vec<OutsideTool> {
    servers
        .tools()
        .iter()
        .map(|served| {
            let permission = listed
                .iter()
                .find(|server| server.name == served.server)
                .map_or(ToolPermission::Ask, |server| {
                    server.permission_of(&served.tool)
                });
            OutsideTool {
                definition: Tool::Function {
                    name: served.offered_name.clone(),
                    description: served.description.clone(),
                    parameters: served.input_schema.clone(),
                },
                title: format!("{}, on {}", served.tool, served.server),
                policy: match permission {
                    ToolPermission::Always => ToolPolicy::Always,
                    ToolPermission::Ask => ToolPolicy::Ask,
                    ToolPermission::Never => ToolPolicy::Never,
                },
            }
        })
        .collect()
}

/// Runs `request` on `servers` off the caller's task; its outcome is sent on `results`.
pub fn run(servers: Arc<Servers>, request: ToolCallRequest, results: mpsc::UnboundedSender<Input>) {
    tauri::async_runtime::spawn(async move {
        let result = servers
            .call(&request.name, request.arguments, CALL_DEADLINE)
            .await
            .map_err(|error| error.to_string());
        if let Err(error) = &result {
            log::warn!(
                "tool call {} failed: {}",
                walkie_conversation::outside_text(
                    &request.name,
                    walkie_conversation::MAX_OUTSIDE_TEXT_CHARS
                ),
                walkie_conversation::outside_text(
                    &error.to_string(),
                    walkie_conversation::MAX_OUTSIDE_TEXT_CHARS
                )
            );
        }
        // The conversation may have ended meanwhile: then nobody waits for the answer.
        let _ = results.send(Input::ToolFinished {
            call_id: request.call_id,
            result,
        });
    });
}
