//! The MCP servers the user lists in Settings, and what they allow each server's tools to do.
//!
//! Why a command line and not a program and a list of arguments: that is how MCP servers are
//! documented ("npx -y @modelcontextprotocol/server-filesystem ~/Documents"), so the user can
//! paste one; it is split as a POSIX shell would (quotes, escapes), without running a shell.
//! A server reached over streamable HTTP is given by its address in the same field
//! (`https://…`); plain `http://` only for one on this computer, as nothing else protects what
//! its tools are told.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The most servers the list holds.
pub const MAX_TOOL_SERVERS: usize = 16;
/// The longest server name (it starts its tools' names, which the API caps at 64).
pub const MAX_SERVER_NAME_CHARS: usize = 24;

/// What the user allows of a tool.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ToolPermission {
    /// Run every call.
    Always,
    /// Show each call, and run it only if the user allows it.
    #[default]
    Ask,
    /// Never run it.
    Never,
}

/// One MCP server, reached over its standard input and output.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ToolServer {
    /// The user's name for it: letters, digits, `_` and `-`.
    pub name: String,
    /// The command line that starts it, or its address (`https://…`).
    pub command: String,
    /// Off: kept in the list, not started.
    pub enabled: bool,
    /// What a tool not in `tools` may do (one the server added since): ask or never. Always is
    /// a choice per tool only: said of a server, it would cover tools the user has never seen,
    /// so a saved `always` here (settings from before) reads as ask.
    pub permission: ToolPermission,
    /// Per tool, by its name on the server.
    pub tools: BTreeMap<String, ToolPermission>,
}

impl ToolServer {
    /// The server's address, when the command is one (it starts with `http://` or
    /// `https://`).
    pub fn address(&self) -> Option<&str> {
        let command = self.command.trim();
        let scheme = command.get(..8)?.to_ascii_lowercase();
        (scheme.starts_with("http://") || scheme == "https://").then_some(command)
    }

    /// What is wrong with the server's address (said after "the address of …"), when the
    /// command is an address; `None` otherwise.
    pub fn address_problem(&self) -> Option<String> {
        address_problem(self.address()?)
    }

    /// The program and its arguments, as the command line says them; `None` when it cannot be
    /// split (an unclosed quote) or is empty.
    pub fn program_and_args(&self) -> Option<(String, Vec<String>)> {
        let mut words = shlex::split(&self.command)?.into_iter();
        let program = words.next()?;
        Some((program, words.collect()))
    }

    /// What the user allows of `tool`: its own choice, else the server's (where always is
    /// ask).
    pub fn permission_of(&self, tool: &str) -> ToolPermission {
        self.tools
            .get(tool)
            .copied()
            .unwrap_or(match self.permission {
                ToolPermission::Always => ToolPermission::Ask,
                other => other,
            })
    }
}

/// What is wrong with the server list, said for the user (naming the server), or `None`.
pub fn tool_servers_problem(servers: &[ToolServer]) -> Option<String> {
    if servers.len() > MAX_TOOL_SERVERS {
        return Some(format!(
            "list at most {MAX_TOOL_SERVERS} servers; remove {}",
            servers.len() - MAX_TOOL_SERVERS
        ));
    }
    for (index, server) in servers.iter().enumerate() {
        let which = if server.name.trim().is_empty() {
            format!("server {}", index + 1)
        } else {
            format!("“{}”", server.name)
        };
        let name_ok = !server.name.is_empty()
            && server.name.chars().count() <= MAX_SERVER_NAME_CHARS
            && server
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        if !name_ok {
            return Some(format!(
                "name {which} with 1 to {MAX_SERVER_NAME_CHARS} letters, digits, _ or -"
            ));
        }
        if servers[..index]
            .iter()
            .any(|other| other.name == server.name)
        {
            return Some(format!(
                "{which} is listed twice; give each server its own name"
            ));
        }
        if server.command.trim().is_empty() {
            return Some(format!("enter the command that starts {which}"));
        }
        if server.address().is_some() {
            if let Some(problem) = server.address_problem() {
                return Some(format!("the address of {which} {problem}"));
            }
            continue;
        }
        if server.program_and_args().is_none() {
            return Some(format!(
                "the command of {which} has an unclosed quote; close it or remove it"
            ));
        }
    }
    None
}

/// What is wrong with a server's address (said after "the address of …"), or `None`.
fn address_problem(address: &str) -> Option<String> {
    let Ok(url) = url::Url::parse(address) else {
        return Some("is not a web address; check it, e.g. https://example.com/mcp".to_owned());
    };
    let Some(host) = url.host() else {
        return Some("names no host; check it, e.g. https://example.com/mcp".to_owned());
    };
    let loopback = match host {
        url::Host::Domain(name) => name.eq_ignore_ascii_case("localhost"),
        url::Host::Ipv4(ip) => ip.is_loopback(),
        url::Host::Ipv6(ip) => ip.is_loopback(),
    };
    if url.scheme() == "http" && !loopback {
        return Some(
            "needs https:// (plain http:// is only for a server on this computer)".to_owned(),
        );
    }
    // Settings are a file in plain text: a password there would sit beside the rest, and the
    // address reaches error messages and the log.
    if !url.username().is_empty() || url.password().is_some() {
        return Some(
            "holds a user name or password; remove it (Walkie keeps no credentials in an \
             address)"
                .to_owned(),
        );
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server(name: &str, command: &str) -> ToolServer {
        ToolServer {
            name: name.to_owned(),
            command: command.to_owned(),
            enabled: true,
            ..ToolServer::default()
        }
    }

    #[test]
    fn a_pasted_command_line_is_split_as_a_shell_would_without_running_one() {
        let files = server(
            "files",
            r#"npx -y @modelcontextprotocol/server-filesystem "/home/me/My Documents""#,
        );
        assert_eq!(
            files.program_and_args(),
            Some((
                "npx".to_owned(),
                vec![
                    "-y".to_owned(),
                    "@modelcontextprotocol/server-filesystem".to_owned(),
                    "/home/me/My Documents".to_owned()
                ]
            ))
        );
        assert_eq!(
            server("x", "tool; rm -rf ~").program_and_args().unwrap().1,
            ["rm", "-rf", "~"]
        );
    }

    #[test]
    fn each_problem_names_its_server_and_what_to_do() {
        assert_eq!(tool_servers_problem(&[server("files", "npx server")]), None);
        assert_eq!(
            tool_servers_problem(&[server("my files", "npx")]),
            Some("name “my files” with 1 to 24 letters, digits, _ or -".to_owned())
        );
        assert_eq!(
            tool_servers_problem(&[server("", "npx")]),
            Some("name server 1 with 1 to 24 letters, digits, _ or -".to_owned())
        );
        assert_eq!(
            tool_servers_problem(&[server("a", "x"), server("a", "y")]),
            Some("“a” is listed twice; give each server its own name".to_owned())
        );
        assert_eq!(
            tool_servers_problem(&[server("a", "  ")]),
            Some("enter the command that starts “a”".to_owned())
        );
        assert_eq!(
            tool_servers_problem(&[server("a", "npx 'unclosed")]),
            Some("the command of “a” has an unclosed quote; close it or remove it".to_owned())
        );
    }

    #[test]
    fn an_address_is_a_server_reached_over_http_and_plain_http_only_on_this_computer() {
        let web = server("web", " https://tools.example.com/mcp ");
        assert_eq!(web.address(), Some("https://tools.example.com/mcp"));
        assert_eq!(server("files", "npx server").address(), None);
        assert_eq!(tool_servers_problem(&[web]), None);
        assert_eq!(
            tool_servers_problem(&[server("local", "http://127.0.0.1:8000/mcp")]),
            None
        );
        assert_eq!(
            tool_servers_problem(&[server("local", "HTTP://localhost:8000/mcp")]),
            None
        );
        assert_eq!(
            tool_servers_problem(&[server("web", "http://tools.example.com/mcp")]),
            Some(
                "the address of “web” needs https:// (plain http:// is only for a server on \
                 this computer)"
                    .to_owned()
            )
        );
        assert_eq!(
            tool_servers_problem(&[server("web", "https://me:secret@tools.example.com/mcp")]),
            Some(
                "the address of “web” holds a user name or password; remove it (Walkie keeps \
                 no credentials in an address)"
                    .to_owned()
            )
        );
        assert_eq!(
            tool_servers_problem(&[server("web", "https://")]),
            Some(
                "the address of “web” is not a web address; check it, e.g. \
                 https://example.com/mcp"
                    .to_owned()
            )
        );
    }

    #[test]
    fn a_tool_without_its_own_permission_has_the_servers() {
        let mut files = server("files", "npx");
        files.permission = ToolPermission::Never;
        files
            .tools
            .insert("read".to_owned(), ToolPermission::Always);
        assert_eq!(files.permission_of("read"), ToolPermission::Always);
        assert_eq!(files.permission_of("delete"), ToolPermission::Never);
    }

    #[test]
    fn a_server_allowed_always_still_asks_for_a_tool_without_its_own_choice() {
        let mut files = server("files", "npx");
        files.permission = ToolPermission::Always;
        files
            .tools
            .insert("read".to_owned(), ToolPermission::Always);
        assert_eq!(files.permission_of("read"), ToolPermission::Always);
        assert_eq!(
            files.permission_of("delete"),
            ToolPermission::Ask,
            "a tool the user never chose for (one added since) asks first"
        );
    }
}
