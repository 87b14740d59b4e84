//! An MCP server for Walkie's tests, over stdio, built with the official SDK (rmcp): the tools
//! a desktop assistant meets in the wild, well-behaved and not. `echo` and `add` answer; `big`
//! answers with as many KiB as asked (a file read whole); `environment` names the variables it was
//! started with; `authorization` says the `Authorization` header of the call (over HTTP);
//! `sleep` answers late (a hung server, for timeouts); `crash` ends the process mid-call; `garble`
//! writes a line that is not JSON-RPC onto the protocol stream before it answers; `fail`
//! answers with a tool error. Its stderr says when it starts, so a test can count restarts.
//!
//! `--http` serves the same tools over streamable HTTP instead, on a free port of 127.0.0.1;
//! its first line on stdout is the address (`http://127.0.0.1:PORT/mcp`).
//!
//! `--with-child` starts a helper process first (this program again, with `--helper`: it waits
//! for ever), as `npx` starts `node`; `--stubborn` ignores SIGTERM and stays after its input
//! closes; each prints its process id on stderr ("helper pid N", "stubborn pid N"). Any
//! other argument is ignored, so a test can tag the processes it will look for.
//!
//! `--endless-tools` is a hostile server instead: its tool list pages on without end, 50 tools a
//! page, the first of them described by a 64 KiB schema; every page asked for is counted on
//! stderr ("listed page N").

use std::io::Write as _;

use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    Implementation, ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::transport::stdio;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt, tool, tool_handler, tool_router};
use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Deserialize, JsonSchema)]
struct EchoArgs {
    /// The text to give back.
    text: String,
}

#[derive(Deserialize, JsonSchema)]
struct AddArgs {
    a: i64,
    b: i64,
}

#[derive(Deserialize, JsonSchema)]
struct BigArgs {
    /// How many KiB the answer holds.
    kib: usize,
}

#[derive(Deserialize, JsonSchema)]
struct SleepArgs {
    /// How long to wait before answering.
    ms: u64,
}

#[derive(Clone)]
struct TestServer;

#[tool_router]
impl TestServer {
    #[tool(description = "Gives back the text it was given")]
    async fn echo(&self, Parameters(EchoArgs { text }): Parameters<EchoArgs>) -> String {
        text
    }

    #[tool(description = "Adds two integers")]
    async fn add(&self, Parameters(AddArgs { a, b }): Parameters<AddArgs>) -> String {
        a.saturating_add(b).to_string()
    }

    #[tool(description = "Answers with kib KiB of text, like a large file read whole")]
    async fn big(&self, Parameters(BigArgs { kib }): Parameters<BigArgs>) -> String {
        "0123456789abcde\n".repeat(kib.min(16 * 1024) * 64)
    }

    #[tool(description = "Says the Authorization header the call came with (over HTTP)")]
    async fn authorization(&self, context: RequestContext<RoleServer>) -> String {
        context
            .extensions
            .get::<hyper::http::request::Parts>()
            .and_then(|parts| parts.headers.get(hyper::http::header::AUTHORIZATION))
            .and_then(|value| value.to_str().ok())
            .map_or_else(|| "none".to_owned(), str::to_owned)
    }

    #[tool(description = "Names the environment variables it was started with")]
    async fn environment(&self) -> String {
        let mut names: Vec<String> = std::env::vars_os()
            .map(|(name, _)| name.to_string_lossy().into_owned())
            .collect();
        names.sort_unstable();
        names.join(" ")
    }

    #[tool(description = "Waits ms milliseconds, then answers")]
    async fn sleep(&self, Parameters(SleepArgs { ms }): Parameters<SleepArgs>) -> String {
        tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
        format!("slept {ms} ms")
    }

    #[tool(description = "Ends the server process at once, without answering")]
    async fn crash(&self) -> String {
        eprintln!("walkie-mcp-test-server: crashing as asked");
        std::process::exit(3)
    }

    #[tool(description = "Writes garbage onto the protocol stream, then answers")]
    async fn garble(&self) -> String {
        let mut stdout = std::io::stdout().lock();
        let _ = stdout.write_all(b"}{ this is not JSON-RPC\n");
        let _ = stdout.flush();
        "garbled".to_owned()
    }

    #[tool(description = "Always fails")]
    async fn fail(&self) -> Result<String, String> {
        Err("this tool always fails".to_owned())
    }
}

#[tool_handler]
impl ServerHandler for TestServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("walkie-test-server", "0.1.0"))
    }
}

/// A server whose tool list never ends.
#[derive(Clone)]
struct EndlessTools;

/// Tools on each page of [`EndlessTools`]' list.
const TOOLS_PER_PAGE: usize = 50;

impl ServerHandler for EndlessTools {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("walkie-endless-tools", "0.1.0"))
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let page: usize = request
            .and_then(|params| params.cursor)
            .and_then(|cursor| cursor.parse().ok())
            .unwrap_or(0);
        eprintln!("walkie-mcp-test-server: listed page {page}");
        let schema = |padding: usize| {
            let mut schema = serde_json::Map::new();
            schema.insert("type".to_owned(), "object".into());
            schema.insert("description".to_owned(), "x".repeat(padding).into());
            schema
        };
        let tools = (0..TOOLS_PER_PAGE)
            .map(|number| {
                let padding = if page == 0 && number == 0 {
                    64 * 1024
                } else {
                    8
                };
                Tool::new(
                    format!("tool_{page}_{number}"),
                    "One of many",
                    schema(padding),
                )
            })
            .collect();
        let mut result = ListToolsResult::with_all_items(tools);
        result.next_cursor = Some((page + 1).to_string());
        Ok(result)
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let flag = |name: &str| std::env::args().any(|arg| arg == name);
    if flag("--helper") {
        eprintln!("walkie-mcp-test-server: helper pid {}", std::process::id());
        std::future::pending::<()>().await;
        return Ok(());
    }
    eprintln!("walkie-mcp-test-server: started");
    if flag("--with-child") {
        // Its standard streams are not the protocol's: the helper writes nothing on them.
        let helper = std::process::Command::new(std::env::current_exe()?)
            .arg("--helper")
            .args(std::env::args().skip(1).filter(|arg| arg != "--with-child"))
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .spawn()?;
        // Not waited for: it is meant to outlive this process unless its group is ended.
        std::mem::forget(helper);
    }
    let mut term = None;
    if flag("--stubborn") {
        eprintln!(
            "walkie-mcp-test-server: stubborn pid {}",
            std::process::id()
        );
        term = Some(tokio::signal::unix::signal(
            tokio::signal::unix::SignalKind::terminate(),
        )?);
    }
    if std::env::args().any(|arg| arg == "--http") {
        return serve_http().await;
    }
    if std::env::args().any(|arg| arg == "--endless-tools") {
        let service = EndlessTools.serve(stdio()).await?;
        service.waiting().await?;
        return Ok(());
    }
    let service = TestServer.serve(stdio()).await?;
    service.waiting().await?;
    if let Some(mut term) = term {
        loop {
            term.recv().await;
            eprintln!("walkie-mcp-test-server: SIGTERM ignored");
        }
    }
    Ok(())
}

async fn serve_http() -> Result<(), Box<dyn std::error::Error>> {
    use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
    use rmcp::transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService,
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    println!("http://{}/mcp", listener.local_addr()?);
    std::io::stdout().flush()?;
    let service = StreamableHttpService::new(
        || Ok(TestServer),
        LocalSessionManager::default().into(),
        StreamableHttpServerConfig::default(),
    );
    loop {
        let (stream, _) = listener.accept().await?;
        let service = hyper_util::service::TowerToHyperService::new(service.clone());
        tokio::spawn(async move {
            let connection = hyper::server::conn::http1::Builder::new()
                .serve_connection(hyper_util::rt::TokioIo::new(stream), service);
            if let Err(error) = connection.await {
                eprintln!("walkie-mcp-test-server: a connection ended: {error}");
            }
        });
    }
}
