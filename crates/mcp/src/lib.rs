//! `walkie-mcp`: the edge to the MCP servers the user lists, through the official Rust SDK
//! (rmcp).
//!
//! Why a driver of its own: an MCP server is a process (or an address) that can be slow,
//! crash, or write garbage, and none of that may stop a call. Each server is started (its
//! command run with piped stdio, or its address reached over streamable HTTP) and asked for
//! its tools when the conversation begins; a call
//! runs with a deadline; a server found dead (its process ended, its stream closed) is started
//! again for the next call. Every failure is a [`CallError`] whose words the user and the model
//! can read. The tools are offered under names the Realtime API takes (`server__tool`, letters,
//! digits, `_` and `-`, at most 64), mapped back here. What a call may do is not decided here:
//! the conversation machine applies the user's policy before it asks for a run.

use std::collections::BTreeMap;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use process_wrap::tokio::{CommandWrap, ProcessGroup};
use rmcp::model::{CallToolRequestParams, ContentBlock, PaginatedRequestParams, ResourceContents};
use rmcp::service::{Peer, RoleClient, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ServiceError, ServiceExt};
use serde_json::Value;
use tokio::process::Command;
use tokio::sync::Mutex;

/// The longest name the Realtime API takes for a function tool.
pub const MAX_TOOL_NAME_CHARS: usize = 64;
/// At most this many pages of a server's tool list are read: a server that pages on and on is
/// cut off there, within its start's deadline.
pub const MAX_TOOL_PAGES: usize = 16;
/// At most this many of one server's tools are offered to the model.
pub const MAX_TOOLS_PER_SERVER: usize = 128;
/// A tool whose input schema takes more than this as JSON is left out: every tool declared goes
/// to the provider in the session's one data-channel message (64 KiB).
pub const MAX_TOOL_SCHEMA_BYTES: usize = 16 * 1024;

/// A server the user listed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerSpec {
    /// The user's name for it (shown, and the first part of its tools' names).
    pub name: String,
    pub reach: Reach,
    /// What the user gives this server alone (from the keyring).
    pub secrets: ServerSecrets,
}

/// What the user gives one server alone: variables added to the environment of one started by
/// its command, the `Authorization` header of every request to one at an address. `Debug`
/// prints only the variables' names.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct ServerSecrets {
    pub environment: Vec<(String, String)>,
    pub authorization: Option<String>,
}

impl std::fmt::Debug for ServerSecrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self
            .environment
            .iter()
            .map(|(name, _)| name.as_str())
            .collect();
        f.debug_struct("ServerSecrets")
            .field("environment", &names)
            .field(
                "authorization",
                &self.authorization.as_ref().map(|_| "<hidden>"),
            )
            .finish()
    }
}

/// How a server is reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reach {
    /// A program to run, with its arguments; it speaks MCP on its standard input and output.
    Command { program: String, args: Vec<String> },
    /// An address that speaks MCP's streamable HTTP (`https://…/mcp`).
    Address { url: String },
}

/// A tool a server offers, as the session declares it.
#[derive(Debug, Clone, PartialEq)]
pub struct ServedTool {
    /// The server's name ([`ServerSpec::name`]).
    pub server: String,
    /// The tool's name on its server.
    pub tool: String,
    /// The name the model calls it by (`server__tool`, made valid and unique).
    pub offered_name: String,
    pub description: Option<String>,
    /// The JSON Schema of its arguments.
    pub input_schema: Value,
}

/// Why a server could not be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ServerError {
    #[error("{server} could not be started ({reason})")]
    NotStarted { server: String, reason: String },
    #[error("{server} did not answer as an MCP server ({reason})")]
    NoHandshake { server: String, reason: String },
    #[error("{server} did not list its tools ({reason})")]
    NoTools { server: String, reason: String },
    /// The server is used, without some of its tools.
    #[error("{server} offers tools Walkie leaves out ({reason})")]
    ToolsCut { server: String, reason: String },
}

impl ServerError {
    /// Whether the server is used all the same, only some of its tools left out.
    pub fn leaves_the_server_in(&self) -> bool {
        matches!(self, ServerError::ToolsCut { .. })
    }
}

/// Why a call gave no result. Each is said to the model as the tool's error, and to the user.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CallError {
    #[error("there is no tool named {offered_name}")]
    UnknownTool { offered_name: String },
    #[error("{server} did not answer within {} s", after.as_secs())]
    TimedOut { server: String, after: Duration },
    #[error("{server} stopped during the call (it is started again for the next one)")]
    ServerStopped { server: String },
    #[error(transparent)]
    Server(#[from] ServerError),
    #[error("{server} refused the call: {message}")]
    Refused { server: String, message: String },
    #[error("{tool} failed: {message}")]
    ToolFailed { tool: String, message: String },
}

struct Connection {
    service: RunningService<RoleClient, ()>,
    /// The process group of a server started by its command: its own, led by it, so that
    /// what it starts in turn (`npx` starts `node`) is stopped with it.
    process_group: Option<rustix::process::Pid>,
}

impl Connection {
    fn peer(&self) -> Peer<RoleClient> {
        self.service.peer().clone()
    }

    fn is_alive(&self) -> bool {
        !self.service.is_transport_closed()
    }
}

struct Server {
    spec: ServerSpec,
    connection: Mutex<Option<Connection>>,
    /// Stopped for good ([`Servers::stop`]): a call still on its way does not start it again.
    stopped: std::sync::atomic::AtomicBool,
}

impl Server {
    /// A live connection: the one there is, or a new one (the server started again).
    async fn peer(&self, deadline: Duration) -> Result<Peer<RoleClient>, ServerError> {
        let mut connection = self.connection.lock().await;
        if self.stopped.load(std::sync::atomic::Ordering::Acquire) {
            return Err(ServerError::NotStarted {
                server: self.spec.name.clone(),
                reason: "it was stopped with the conversation".to_owned(),
            });
        }
        if let Some(live) = connection.as_ref().filter(|live| live.is_alive()) {
            return Ok(live.peer());
        }
        if connection.take().is_some() {
            // Dropping the service ends what is left of it.
            log::warn!("{} had stopped; starting it again", self.spec.name);
        }
        let started = start(&self.spec, deadline).await?;
        let peer = started.peer();
        *connection = Some(started);
        Ok(peer)
    }

    /// Ends the server: its input closed (how MCP asks a stdio server to exit) and, past
    /// [`POLITE_EXIT`], its whole process group sent SIGTERM, then SIGKILL past
    /// [`TERM_EXIT`]; it returns when no process of the group is left, or past that.
    async fn stop(&self) {
        let mut connection = self.connection.lock().await;
        self.stopped
            .store(true, std::sync::atomic::Ordering::Release);
        let Some(live) = connection.take() else {
            return;
        };
        drop(connection);
        let group = live.process_group;
        // rmcp's own shutdown waits 3 s at each step, longer than an exit may take: it goes on
        // in the background (reaping the leader), and the group is ended here on our bounds.
        let closing = tokio::spawn(live.service.cancel());
        let Some(group) = group else {
            let _ = tokio::time::timeout(POLITE_EXIT, closing).await;
            return;
        };
        // What the leader started may stay when it goes: the rest of the group is ended at once.
        if gone_within(group, POLITE_EXIT, |group| {
            rustix::process::test_kill_process(group).is_err()
        })
        .await
            && group_gone_within(group, Duration::ZERO).await
        {
            return;
        }
        let _ = rustix::process::kill_process_group(group, rustix::process::Signal::TERM);
        if group_gone_within(group, TERM_EXIT).await {
            return;
        }
        log::warn!("{} did not end on SIGTERM; killing it", self.spec.name);
        let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
        if !group_gone_within(group, TERM_EXIT).await {
            log::warn!("{} is still there after SIGKILL", self.spec.name);
        }
    }
}

/// How long a stdio server has to exit once its input is closed (its leader; what it started
/// is ended as soon as it is gone).
const POLITE_EXIT: Duration = Duration::from_millis(500);
/// How long a server's process group has to end after SIGTERM (and after SIGKILL).
const TERM_EXIT: Duration = Duration::from_millis(500);

/// Whether no process of `group` is left within `bound` (a zombie counts until it is reaped).
async fn group_gone_within(group: rustix::process::Pid, bound: Duration) -> bool {
    gone_within(group, bound, |group| {
        rustix::process::test_kill_process_group(group).is_err()
    })
    .await
}

/// Whether `gone` holds of `group` within `bound`, asked every 10 ms.
async fn gone_within(
    group: rustix::process::Pid,
    bound: Duration,
    gone: impl Fn(rustix::process::Pid) -> bool,
) -> bool {
    let deadline = tokio::time::Instant::now() + bound;
    while !gone(group) {
        if tokio::time::Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    true
}

async fn start(spec: &ServerSpec, deadline: Duration) -> Result<Connection, ServerError> {
    let not_started = |reason: String| ServerError::NotStarted {
        server: spec.name.clone(),
        reason: scrubbed(reason, &spec.reach),
    };
    let mut process_group = None;
    let handshake = match &spec.reach {
        Reach::Command { program, args } => {
            let mut command = Command::new(program);
            command
                .args(args)
                .env_clear()
                .envs(passed_environment(std::env::vars_os()))
                .envs(spec.secrets.environment.iter().cloned());
            let mut command = CommandWrap::from(command);
            command.wrap(ProcessGroup::leader());
            let (transport, _) = TokioChildProcess::builder(command)
                .stderr(Stdio::inherit())
                .spawn()
                .map_err(|error| not_started(error.to_string()))?;
            process_group = transport
                .id()
                .and_then(|id| rustix::process::Pid::from_raw(id as i32));
            tokio::time::timeout(deadline, ().serve(transport)).await
        }
        Reach::Address { url } => {
            let client = http_client(url, deadline).map_err(not_started)?;
            let mut config = StreamableHttpClientTransportConfig::with_uri(url.as_str());
            if let Some(authorization) = &spec.secrets.authorization {
                let mut value =
                    reqwest::header::HeaderValue::from_str(authorization).map_err(|_| {
                        not_started(
                            "its Authorization header cannot be sent as typed; type it again"
                                .to_owned(),
                        )
                    })?;
                value.set_sensitive(true);
                config
                    .custom_headers
                    .insert(reqwest::header::AUTHORIZATION, value);
            }
            let transport = StreamableHttpClientTransport::with_client(client, config);
            tokio::time::timeout(deadline, ().serve(transport)).await
        }
    };
    let service = match handshake {
        Ok(Ok(service)) => service,
        Ok(Err(error)) => {
            return Err(ServerError::NoHandshake {
                server: spec.name.clone(),
                reason: scrubbed(error.to_string(), &spec.reach),
            });
        }
        Err(_) => {
            return Err(ServerError::NoHandshake {
                server: spec.name.clone(),
                reason: format!("no answer within {} s", deadline.as_secs()),
            });
        }
    };
    Ok(Connection {
        service,
        process_group,
    })
}

/// `address` as error messages and the log may show it: scheme, host, port and path, with a
/// query (where a key often rides: `?key=…`), a fragment and a user name or password left out.
fn redacted_address(address: &str) -> String {
    match reqwest::Url::parse(address) {
        Ok(mut url) => {
            let hidden = url.query().is_some() || url.fragment().is_some();
            url.set_query(None);
            url.set_fragment(None);
            let _ = url.set_username("");
            let _ = url.set_password(None);
            if hidden {
                format!("{url}?…")
            } else {
                url.to_string()
            }
        }
        Err(_) => "(an address that could not be read)".to_owned(),
    }
}

/// `text` (an error's words) with the server's address in it redacted, whichever way the HTTP
/// stack spelt it.
fn scrubbed(text: String, reach: &Reach) -> String {
    let Reach::Address { url } = reach else {
        return text;
    };
    let redacted = redacted_address(url);
    let mut spellings = vec![url.trim().to_owned()];
    if let Ok(parsed) = reqwest::Url::parse(url.trim()) {
        spellings.push(parsed.to_string());
    }
    spellings.sort_by_key(|spelling| std::cmp::Reverse(spelling.len()));
    spellings
        .into_iter()
        .filter(|spelling| !spelling.is_empty())
        .fold(text, |text, spelling| text.replace(&spelling, &redacted))
}

/// What a server started by its command gets of Walkie's environment: what finds programs, the
/// user's files and folders and their language. Never the rest: Walkie's own API keys
/// (`OPENAI_API_KEY`, `AZURE_OPENAI_API_KEY`) are in it, and a tool server is someone else's
/// program.
const PASSED_ENVIRONMENT: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "LANG",
    "LANGUAGE",
    "TZ",
    "TMPDIR",
    "XDG_RUNTIME_DIR",
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
    "XDG_CACHE_HOME",
    "XDG_STATE_HOME",
];

/// The variables of `parent` a stdio server is started with: [`PASSED_ENVIRONMENT`] and the
/// locale's `LC_*`.
pub fn passed_environment(
    parent: impl IntoIterator<Item = (std::ffi::OsString, std::ffi::OsString)>,
) -> Vec<(std::ffi::OsString, std::ffi::OsString)> {
    parent
        .into_iter()
        .filter(|(name, _)| {
            name.to_str()
                .is_some_and(|name| PASSED_ENVIRONMENT.contains(&name) || name.starts_with("LC_"))
        })
        .collect()
}

/// The HTTP client for a server's address: TLS by rustls with the system's roots (as the
/// provider's signalling), each request within `deadline`, no proxy for a server on this
/// computer, and no redirect followed: a redirect could lead from https to plain http or to
/// another host, around the rule that plain http is for this computer only.
fn http_client(url: &str, deadline: Duration) -> Result<reqwest::Client, String> {
    use rustls_platform_verifier::BuilderVerifierExt;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .and_then(|builder| builder.with_platform_verifier())
        .map_err(|error| format!("TLS setup: {error}"))?
        .with_no_client_auth();
    let mut builder = reqwest::Client::builder()
        .tls_backend_preconfigured(tls)
        .connect_timeout(deadline)
        .redirect(reqwest::redirect::Policy::none());
    let loopback = reqwest::Url::parse(url)
        .ok()
        .and_then(|url| url.host_str().map(str::to_owned))
        .is_some_and(|host| {
            host == "localhost"
                || host
                    .trim_matches(['[', ']'])
                    .parse::<std::net::IpAddr>()
                    .is_ok_and(|ip| ip.is_loopback())
        });
    if loopback {
        builder = builder.no_proxy();
    }
    builder
        .build()
        .map_err(|error| format!("HTTP client setup: {error}"))
}

/// The servers of a conversation, their tools, and the calls to them.
pub struct Servers {
    servers: Vec<Arc<Server>>,
    tools: Vec<ServedTool>,
    /// Offered name → (server index, tool name on the server).
    by_offered_name: BTreeMap<String, (usize, String)>,
}

impl std::fmt::Debug for Servers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Servers")
            .field("tools", &self.tools)
            .finish_non_exhaustive()
    }
}

impl Servers {
    /// Starts every server and lists its tools, all at once, each within `deadline` (so a
    /// slow one holds the others back by no more than that); a server that fails is reported
    /// and left out (the others are used). Tools and problems keep the servers' order.
    pub async fn start(specs: Vec<ServerSpec>, deadline: Duration) -> (Servers, Vec<ServerError>) {
        let mut servers = Servers {
            servers: Vec::new(),
            tools: Vec::new(),
            by_offered_name: BTreeMap::new(),
        };
        let mut problems = Vec::new();
        let mut starting = tokio::task::JoinSet::new();
        let mut names = BTreeMap::new();
        for (position, spec) in specs.into_iter().enumerate() {
            let name = spec.name.clone();
            let server = Arc::new(Server {
                spec,
                connection: Mutex::new(None),
                stopped: std::sync::atomic::AtomicBool::new(false),
            });
            let task = starting.spawn(async move {
                let listed = list_tools(&server, deadline).await;
                (position, Ok((server, listed)))
            });
            names.insert(task.id(), (position, name));
        }
        let mut started = Vec::with_capacity(starting.len());
        while let Some(joined) = starting.join_next().await {
            match joined {
                Ok(outcome) => started.push(outcome),
                // Only a bug in the SDK can end a start this way: that server is left out.
                Err(error) => {
                    if let Some((position, name)) = names.remove(&error.id()) {
                        started.push((
                            position,
                            Err(ServerError::NotStarted {
                                server: name,
                                reason: format!("its start ended abnormally: {error}"),
                            }),
                        ));
                    }
                }
            }
        }
        started.sort_by_key(|(position, _)| *position);
        for (_, outcome) in started {
            let (server, listed) = match outcome {
                Ok(started) => started,
                Err(problem) => {
                    problems.push(problem);
                    continue;
                }
            };
            match listed {
                Ok(listed) => {
                    if let Some(reason) = listed.cut {
                        problems.push(ServerError::ToolsCut {
                            server: server.spec.name.clone(),
                            reason,
                        });
                    }
                    let index = servers.servers.len();
                    servers.servers.push(server.clone());
                    for (tool, description, input_schema) in listed.tools {
                        let offered_name =
                            offered_name(&server.spec.name, &tool, &servers.by_offered_name);
                        servers
                            .by_offered_name
                            .insert(offered_name.clone(), (index, tool.clone()));
                        servers.tools.push(ServedTool {
                            server: server.spec.name.clone(),
                            tool,
                            offered_name,
                            description,
                            input_schema,
                        });
                    }
                }
                Err(problem) => {
                    server.stop().await;
                    problems.push(problem);
                }
            }
        }
        (servers, problems)
    }

    /// Every tool the servers offer, in the servers' order.
    pub fn tools(&self) -> &[ServedTool] {
        &self.tools
    }

    /// Runs a call of the tool offered as `offered_name` with `arguments` (an object), within
    /// `deadline`: its text (or its structured result, as JSON), or why there is none. A
    /// server found stopped is started again first.
    pub async fn call(
        &self,
        offered_name: &str,
        arguments: Value,
        deadline: Duration,
    ) -> Result<Value, CallError> {
        let (index, tool) =
            self.by_offered_name
                .get(offered_name)
                .ok_or_else(|| CallError::UnknownTool {
                    offered_name: offered_name.to_owned(),
                })?;
        let server = &self.servers[*index];
        let name = server.spec.name.clone();
        let peer = server.peer(deadline).await?;
        let mut params = CallToolRequestParams::new(tool.clone());
        if let Value::Object(arguments) = arguments {
            params = params.with_arguments(arguments);
        }
        let answered = tokio::time::timeout(deadline, peer.call_tool(params)).await;
        let result = match answered {
            Err(_) => {
                return Err(CallError::TimedOut {
                    server: name,
                    after: deadline,
                });
            }
            Ok(Err(ServiceError::TransportClosed | ServiceError::TransportSend(_))) => {
                return Err(CallError::ServerStopped { server: name });
            }
            Ok(Err(ServiceError::McpError(error))) => {
                return Err(CallError::Refused {
                    server: name,
                    message: error.message.to_string(),
                });
            }
            Ok(Err(other)) => {
                // A closed stream can surface as another error: the next call restarts.
                if peer.is_transport_closed() {
                    return Err(CallError::ServerStopped { server: name });
                }
                return Err(CallError::Refused {
                    server: name,
                    message: scrubbed(other.to_string(), &server.spec.reach),
                });
            }
            Ok(Ok(result)) => result,
        };
        let text = content_text(&result.content);
        if result.is_error == Some(true) {
            return Err(CallError::ToolFailed {
                tool: tool.clone(),
                message: text,
            });
        }
        Ok(result.structured_content.unwrap_or(Value::String(text)))
    }

    /// Stops every server, all at once (their process groups end); a call still on its way
    /// fails instead of starting one again.
    pub async fn stop(&self) {
        let mut stopping = tokio::task::JoinSet::new();
        for server in &self.servers {
            let server = server.clone();
            stopping.spawn(async move { server.stop().await });
        }
        while stopping.join_next().await.is_some() {}
    }
}

/// At most this many tools left out for their size are named.
const NAMED_LEFT_OUT: usize = 3;

/// A server's tools as Walkie takes them: (name, description, input schema), and why some
/// were left out, if some were.
struct Listed {
    tools: Vec<(String, Option<String>, Value)>,
    cut: Option<String>,
}

/// A server's tools, page by page within `deadline` in all: at most [`MAX_TOOL_PAGES`] pages
/// and [`MAX_TOOLS_PER_SERVER`] tools, none whose schema is over [`MAX_TOOL_SCHEMA_BYTES`].
async fn list_tools(server: &Server, deadline: Duration) -> Result<Listed, ServerError> {
    let peer = server.peer(deadline).await?;
    let no_tools = |reason: String| ServerError::NoTools {
        server: server.spec.name.clone(),
        reason,
    };
    let mut listed = Listed {
        tools: Vec::new(),
        cut: None,
    };
    let mut over_count = 0_usize;
    let mut too_large = Vec::new();
    let mut pages_left_unread = false;
    let reading = async {
        let mut cursor = None;
        for page in 0.. {
            if page == MAX_TOOL_PAGES {
                pages_left_unread = true;
                break;
            }
            let params = PaginatedRequestParams::default().with_cursor(cursor.take());
            let result = peer
                .list_tools(Some(params))
                .await
                .map_err(|error| no_tools(scrubbed(error.to_string(), &server.spec.reach)))?;
            for tool in result.tools {
                let schema = Value::Object((*tool.input_schema).clone());
                let schema_bytes =
                    serde_json::to_vec(&schema).map_or(usize::MAX, |json| json.len());
                if schema_bytes > MAX_TOOL_SCHEMA_BYTES {
                    too_large.push(outside_name(&tool.name));
                } else if listed.tools.len() == MAX_TOOLS_PER_SERVER {
                    over_count += 1;
                } else {
                    let description = tool.description.map(|description| description.to_string());
                    listed
                        .tools
                        .push((tool.name.to_string(), description, schema));
                }
            }
            // Full: the rest is not read, however many pages it has.
            let full = listed.tools.len() == MAX_TOOLS_PER_SERVER;
            match result.next_cursor {
                Some(_) if full => {
                    over_count += 1;
                    break;
                }
                Some(next) => cursor = Some(next),
                None => break,
            }
        }
        Ok::<(), ServerError>(())
    };
    tokio::time::timeout(deadline, reading)
        .await
        .map_err(|_| no_tools(format!("no answer within {} s", deadline.as_secs())))??;
    let mut why = Vec::new();
    if !too_large.is_empty() {
        why.push(left_out_for_size(&too_large));
    }
    if over_count > 0 {
        why.push(format!(
            "it lists more than {MAX_TOOLS_PER_SERVER} tools: the first {MAX_TOOLS_PER_SERVER} \
             are used"
        ));
    } else if pages_left_unread {
        why.push(format!(
            "its list goes on past {MAX_TOOL_PAGES} pages: the {} tools of those are used",
            listed.tools.len()
        ));
    }
    if !why.is_empty() {
        listed.cut = Some(why.join("; "));
    }
    Ok(listed)
}

/// The tools left out for their size, in words: how many, and the first few by name (a
/// hostile list is not repeated whole).
fn left_out_for_size(names: &[String]) -> String {
    let named = names.len().min(NAMED_LEFT_OUT);
    let more = match names.len() - named {
        0 => String::new(),
        more => format!(" and {more} more"),
    };
    format!(
        "{} described at over {} KiB: {}{more}",
        names.len(),
        MAX_TOOL_SCHEMA_BYTES / 1024,
        names[..named].join(", ")
    )
}

/// A tool's name as the server gave it, made safe to show: at most 64 characters, no control
/// characters.
fn outside_name(name: &str) -> String {
    name.chars()
        .filter(|character| !character.is_control())
        .take(MAX_TOOL_NAME_CHARS)
        .collect()
}

/// `server__tool`, with every character the API refuses made `_`, at most
/// [`MAX_TOOL_NAME_CHARS`], and made unique among `taken` with a number.
pub fn offered_name<V>(server: &str, tool: &str, taken: &BTreeMap<String, V>) -> String {
    let valid = |text: &str| -> String {
        text.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect()
    };
    let base: String = format!("{}__{}", valid(server), valid(tool))
        .chars()
        .take(MAX_TOOL_NAME_CHARS)
        .collect();
    if !taken.contains_key(&base) {
        return base;
    }
    (2..)
        .map(|number| {
            let suffix = format!("_{number}");
            let kept: String = base
                .chars()
                .take(MAX_TOOL_NAME_CHARS - suffix.len())
                .collect();
            format!("{kept}{suffix}")
        })
        .find(|candidate| !taken.contains_key(candidate))
        .expect("some numbered name is free")
}

/// A tool's answer as the text the model is given: text as it is, a text resource's text
/// under its address; what is not text (an image, audio, a binary resource) named with its
/// type and size instead — a function's output is text only.
fn content_text(content: &[ContentBlock]) -> String {
    const MAX_NAMED_CHARS: usize = 200;
    let named = |text: &str| -> String {
        let mut named: String = text
            .chars()
            .filter(|c| !c.is_control())
            .take(MAX_NAMED_CHARS)
            .collect();
        if text.chars().count() > MAX_NAMED_CHARS {
            named.push('…');
        }
        named
    };
    let kib = |base64: &str| (base64.len() * 3 / 4).div_ceil(1024);
    content
        .iter()
        .map(|block| match block {
            ContentBlock::Text(text) => text.text.clone(),
            ContentBlock::Resource(embedded) => match &embedded.resource {
                ResourceContents::TextResourceContents { uri, text, .. } => {
                    format!("[resource {}]\n{text}", named(uri))
                }
                ResourceContents::BlobResourceContents {
                    uri,
                    mime_type,
                    blob,
                    ..
                } => format!(
                    "[a binary resource Walkie does not pass on: {}, {}, {} KiB]",
                    named(uri),
                    named(mime_type.as_deref().unwrap_or("of no stated type")),
                    kib(blob)
                ),
                _ => "[a resource of a kind Walkie does not know, not passed on]".to_owned(),
            },
            ContentBlock::ResourceLink(link) => {
                format!(
                    "[a link to resource {}: {}]",
                    named(&link.name),
                    named(&link.uri)
                )
            }
            ContentBlock::Image(image) => format!(
                "[an image Walkie does not pass on: {}, {} KiB]",
                named(&image.mime_type),
                kib(&image.data)
            ),
            ContentBlock::Audio(audio) => format!(
                "[audio Walkie does not pass on: {}, {} KiB]",
                named(&audio.mime_type),
                kib(&audio.data)
            ),
            _ => "[content of a kind Walkie does not know, not passed on]".to_owned(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_that_is_not_text_is_named_with_its_type_and_size_and_text_passes_as_it_is() {
        let png_4_kib = "A".repeat(4 * 1024 * 4 / 3);
        let content = [
            ContentBlock::text("two files:"),
            ContentBlock::embedded_text("file:///notes.txt", "buy milk"),
            ContentBlock::image(png_4_kib, "image/png"),
            ContentBlock::audio("UklGRg==", "audio/wav"),
            ContentBlock::resource(ResourceContents::BlobResourceContents {
                uri: "file:///a.zip".to_owned(),
                mime_type: None,
                blob: "UEsDBA==".to_owned(),
                meta: None,
            }),
        ];
        assert_eq!(
            content_text(&content),
            "two files:\n\
             [resource file:///notes.txt]\nbuy milk\n\
             [an image Walkie does not pass on: image/png, 4 KiB]\n\
             [audio Walkie does not pass on: audio/wav, 1 KiB]\n\
             [a binary resource Walkie does not pass on: file:///a.zip, of no stated type, 1 KiB]"
        );
    }

    #[test]
    fn a_servers_words_about_what_it_sent_are_one_line_and_cut() {
        let content = [ContentBlock::image(
            "",
            format!("image/png\n{}", "x".repeat(300)),
        )];
        let text = content_text(&content);
        assert!(!text.contains('\n'), "{text}");
        assert!(text.chars().count() < 300, "{text}");
        assert!(text.contains("x…, 0 KiB]"), "{text}");
    }

    #[test]
    fn tools_left_out_for_their_size_are_counted_and_only_the_first_few_named() {
        let names: Vec<String> = (0..40).map(|n| format!("huge_{n}")).collect();
        assert_eq!(
            left_out_for_size(&names[..1]),
            "1 described at over 16 KiB: huge_0"
        );
        assert_eq!(
            left_out_for_size(&names),
            "40 described at over 16 KiB: huge_0, huge_1, huge_2 and 37 more"
        );
    }

    #[test]
    fn an_offered_name_is_valid_for_the_api_short_enough_and_unique() {
        let mut taken = BTreeMap::new();
        assert_eq!(
            offered_name("My files", "read.file", &taken),
            "My_files__read_file"
        );
        taken.insert("My_files__read_file".to_owned(), ());
        assert_eq!(
            offered_name("My files", "read.file", &taken),
            "My_files__read_file_2"
        );
        let long = offered_name(&"s".repeat(80), "t", &taken);
        assert_eq!(long.chars().count(), MAX_TOOL_NAME_CHARS);
    }
}
