//! Walkie and an MCP server over streamable HTTP, both real: the test server (rmcp's streamable
//! HTTP service on hyper) listens on loopback; its tools are listed and called through the
//! address alone, a slow call times out, and an address where no MCP server answers is
//! reported as one that could not be started.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::json;
use walkie_mcp::{CallError, Reach, ServerError, ServerSpec, Servers};

const DEADLINE: Duration = Duration::from_secs(20);

/// The test server over HTTP, and its address; ended when dropped.
struct HttpServer {
    child: Child,
    url: String,
}

impl HttpServer {
    fn start() -> HttpServer {
        let mut child = Command::new(env!("CARGO_BIN_EXE_walkie-mcp-test-server"))
            .arg("--http")
            .stdout(Stdio::piped())
            .spawn()
            .expect("the test server starts");
        let mut url = String::new();
        BufReader::new(child.stdout.take().expect("its stdout"))
            .read_line(&mut url)
            .expect("its address");
        HttpServer {
            child,
            url: url.trim().to_owned(),
        }
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn at(name: &str, url: &str) -> ServerSpec {
    ServerSpec {
        name: name.to_owned(),
        reach: Reach::Address {
            url: url.to_owned(),
        },
        secrets: walkie_mcp::ServerSecrets::default(),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_at_an_address_lists_its_tools_and_answers_calls() {
    let server = HttpServer::start();
    assert!(
        server.url.starts_with("http://127.0.0.1:"),
        "{}",
        server.url
    );
    let (servers, problems) = Servers::start(vec![at("web", &server.url)], DEADLINE).await;
    assert_eq!(problems, []);
    let mut names: Vec<&str> = servers
        .tools()
        .iter()
        .map(|tool| tool.offered_name.as_str())
        .collect();
    names.sort_unstable();
    assert!(
        names.contains(&"web__add") && names.contains(&"web__echo"),
        "{names:?}"
    );
    assert_eq!(
        servers
            .call("web__add", json!({"a": 40, "b": 2}), DEADLINE)
            .await,
        Ok(json!("42"))
    );
    assert_eq!(
        servers
            .call(
                "web__sleep",
                json!({"ms": 5_000}),
                Duration::from_millis(300)
            )
            .await,
        Err(CallError::TimedOut {
            server: "web".to_owned(),
            after: Duration::from_millis(300)
        })
    );
    assert_eq!(
        servers
            .call("web__echo", json!({"text": "still here"}), DEADLINE)
            .await,
        Ok(json!("still here")),
        "a call that timed out does not stop the next"
    );
    servers.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_address_where_no_server_answers_is_reported_and_the_others_are_used() {
    let server = HttpServer::start();
    // A port that was free a moment ago: nothing listens there.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    let nobody = format!("http://{}/mcp", closed.local_addr().expect("its address"));
    drop(closed);
    let (servers, problems) = Servers::start(
        vec![at("nobody", &nobody), at("web", &server.url)],
        Duration::from_secs(5),
    )
    .await;
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(
        matches!(&problems[0], ServerError::NoHandshake { server, .. } | ServerError::NotStarted { server, .. } if server == "nobody"),
        "{:?}",
        problems[0]
    );
    assert!(servers.tools().iter().all(|tool| tool.server == "web"));
    assert!(!servers.tools().is_empty());
    servers.stop().await;
}

/// An address that answers every request with a redirect to `to`; ended when dropped (its
/// thread ends with the test process).
fn redirecting_to(to: &str) -> String {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    let url = format!("http://{}/mcp", listener.local_addr().expect("its address"));
    let to = to.to_owned();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut request = [0u8; 8192];
            let _ = stream.read(&mut request);
            let _ = write!(
                stream,
                "HTTP/1.1 307 Temporary Redirect\r\nLocation: {to}\r\nContent-Length: 0\r\n\
                 Connection: close\r\n\r\n"
            );
        }
    });
    url
}

#[tokio::test(flavor = "multi_thread")]
async fn an_address_that_redirects_is_not_followed_to_where_it_points() {
    // The redirect points at a real MCP server: following it would list its tools.
    let server = HttpServer::start();
    let redirecting = redirecting_to(&server.url);
    let (servers, problems) =
        Servers::start(vec![at("moved", &redirecting)], Duration::from_secs(5)).await;
    assert!(servers.tools().is_empty(), "{:?}", servers.tools());
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(
        matches!(&problems[0], ServerError::NoHandshake { server, .. } | ServerError::NotStarted { server, .. } if server == "moved"),
        "{:?}",
        problems[0]
    );
    assert!(
        problems[0].to_string().contains("307"),
        "the problem says what the address answered: {}",
        problems[0]
    );
    servers.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_key_in_an_address_never_reaches_the_words_of_its_error() {
    // Nothing listens there, so the error names the address it could not reach.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    let address = format!(
        "http://{}/mcp?key=sk-walkie-secret#also-secret",
        closed.local_addr().expect("its address")
    );
    drop(closed);
    let (servers, problems) =
        Servers::start(vec![at("keyed", &address)], Duration::from_secs(5)).await;
    assert_eq!(problems.len(), 1, "{problems:?}");
    let words = problems[0].to_string();
    assert!(!words.contains("sk-walkie-secret"), "{words}");
    assert!(!words.contains("also-secret"), "{words}");
    assert!(words.contains("keyed"), "the server is named: {words}");
    servers.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_servers_authorization_header_goes_with_its_calls_and_only_its() {
    let server = HttpServer::start();
    let mut with_header = at("keyed", &server.url);
    with_header.secrets.authorization = Some("Bearer walkie-test-not-a-token".to_owned());
    let (servers, problems) = Servers::start(
        vec![with_header.clone(), at("plain", &server.url)],
        DEADLINE,
    )
    .await;
    assert_eq!(problems, []);
    assert_eq!(
        servers
            .call("keyed__authorization", json!({}), DEADLINE)
            .await,
        Ok(json!("Bearer walkie-test-not-a-token"))
    );
    assert_eq!(
        servers
            .call("plain__authorization", json!({}), DEADLINE)
            .await,
        Ok(json!("none")),
        "another server is not given it"
    );
    servers.stop().await;
    assert!(
        !format!("{with_header:?}").contains("not-a-token"),
        "the header never prints: {with_header:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_header_that_cannot_be_sent_is_said_without_its_value() {
    let server = HttpServer::start();
    let mut with_header = at("keyed", &server.url);
    with_header.secrets.authorization = Some("Bearer secret\u{7f}value".to_owned());
    let (_servers, problems) = Servers::start(vec![with_header], DEADLINE).await;
    assert_eq!(problems.len(), 1, "{problems:?}");
    let said = problems[0].to_string();
    assert!(said.contains("Authorization header"), "{said}");
    assert!(!said.contains("secret"), "{said}");
}
