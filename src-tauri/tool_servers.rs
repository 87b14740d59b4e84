//! The app's MCP servers, as the settings list them: started when a conversation begins (and
//! kept while the list stays the same, so a reconnect does not restart them), their tools
//! declared to the conversation with what the user allows of each, and each call run off the
//! conversation's task, its outcome coming back as the machine's input.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;
use walkie_conversation::{Input, OutsideTool, ToolPolicy};
use walkie_mcp::{ServerSpec, Servers};
use walkie_openai::Tool;
use walkie_session::turn::ToolCallRequest;
use walkie_settings::tool_servers::{ToolPermission, ToolServer};

/// How long a server has to start and list its tools.
pub const START_DEADLINE: Duration = Duration::from_secs(20);
/// How long a call may take before the model is told the server did not answer.
pub const CALL_DEADLINE: Duration = Duration::from_secs(30);

/// The servers running for the settings' list.
#[derive(Default)]
pub struct ToolServers {
    running: Option<(Vec<ToolServer>, Arc<Servers>)>,
}

impl ToolServers {
    /// The servers of `listed` (the enabled ones), started now unless they already run;
    /// `None` when none is enabled. A server that cannot start is logged and left out.
    pub async fn for_list(&mut self, listed: &[ToolServer]) -> Option<Arc<Servers>> {
        let enabled: Vec<ToolServer> = listed
            .iter()
            .filter(|server| server.enabled)
            .cloned()
            .collect();
        if let Some((running_for, servers)) = &self.running
            && *running_for == enabled
        {
            return Some(servers.clone());
        }
        if let Some((_, old)) = self.running.take() {
            old.stop().await;
        }
        if enabled.is_empty() {
            return None;
        }
        let specs = enabled
            .iter()
            .filter_map(|server| {
                let (command, args) = server.program_and_args()?;
                Some(ServerSpec {
                    name: server.name.clone(),
                    command,
                    args,
                })
            })
            .collect();
        let (servers, problems) = Servers::start(specs, START_DEADLINE).await;
        for problem in problems {
            log::warn!("tool server: {problem}");
        }
        let servers = Arc::new(servers);
        self.running = Some((enabled, servers.clone()));
        Some(servers)
    }
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
            log::warn!("tool call {} failed: {error}", request.name);
        }
        // The conversation may have ended meanwhile: then nobody waits for the answer.
        let _ = results.send(Input::ToolFinished {
            call_id: request.call_id,
            result,
        });
    });
}
