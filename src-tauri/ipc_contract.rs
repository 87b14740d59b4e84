//! The webview's contract with the shell, checked from both sides: every command and event
//! name the page uses is in `ui/ipc.js` (ui/tests/ipc.test.js checks the page), and here those
//! lists are compared with the commands this crate registers and the events it emits. A name
//! renamed on one side only fails here, not in a window that silently stops updating.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn repository() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
}

/// The string values of `export const <name> = Object.freeze({ key: "value", … });` in ipc.js.
fn page_names(list: &str) -> BTreeSet<String> {
    let ipc = read(&repository().join("ui/ipc.js"));
    let start = format!("export const {list} = Object.freeze({{");
    let body = ipc
        .split_once(&start)
        .and_then(|(_, rest)| rest.split_once("});"))
        .unwrap_or_else(|| panic!("ui/ipc.js has no {list} list"))
        .0;
    let mut names = BTreeSet::new();
    for line in body.lines().map(str::trim).filter(|line| !line.is_empty()) {
        let value = line
            .split_once(": \"")
            .and_then(|(_, rest)| rest.strip_suffix("\","))
            .unwrap_or_else(|| panic!("ui/ipc.js {list}: not `key: \"value\",`: {line}"));
        assert!(
            names.insert(value.to_owned()),
            "ui/ipc.js {list} names {value} twice"
        );
    }
    names
}

/// The Rust sources of the shell.
fn shell_sources() -> Vec<(PathBuf, String)> {
    let mut sources = Vec::new();
    let mut folders = vec![repository().join("src-tauri")];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).expect("src-tauri is readable") {
            let path = entry.expect("src-tauri is readable").path();
            if path.is_dir() {
                folders.push(path);
            } else if path.extension().is_some_and(|extension| extension == "rs")
                && !path.ends_with("ipc_contract.rs")
            {
                let text = read(&path);
                sources.push((path, text));
            }
        }
    }
    sources
}

/// The commands `tauri::generate_handler!` registers, by the name the page invokes.
fn registered_commands() -> BTreeSet<String> {
    let lib = read(&repository().join("src-tauri/lib.rs"));
    let list = lib
        .split_once("tauri::generate_handler![")
        .and_then(|(_, rest)| rest.split_once(']'))
        .expect("lib.rs registers its commands with generate_handler!")
        .0;
    list.split(',')
        .map(str::trim)
        .filter(|entry| !entry.is_empty())
        .map(|entry| entry.rsplit("::").next().unwrap_or(entry).to_owned())
        .collect()
}

/// The `walkie://…` event names spelled in the shell's sources.
fn emitted_events() -> BTreeSet<String> {
    let mut events = BTreeSet::new();
    for (_, text) in shell_sources() {
        for (start, _) in text.match_indices("\"walkie://") {
            let name = &text[start + 1..];
            let end = name.find('"').expect("a string literal ends");
            events.insert(name[..end].to_owned());
        }
    }
    events
}

/// The commands build.rs declares to Tauri (an undeclared one is refused at run time).
fn declared_commands() -> BTreeSet<String> {
    let build = read(&repository().join("src-tauri/build.rs"));
    let list = build
        .split_once("const APP_COMMANDS: &[&str] = &[")
        .and_then(|(_, rest)| rest.split_once("];"))
        .expect("build.rs declares APP_COMMANDS")
        .0;
    list.split(',')
        .map(|entry| entry.trim().trim_matches('"'))
        .filter(|entry| !entry.is_empty())
        .map(str::to_owned)
        .collect()
}

/// The app commands the main window's capability allows (`allow-<name>`, dashed).
fn allowed_commands() -> BTreeSet<String> {
    let config: serde_json::Value =
        serde_json::from_str(&read(&repository().join("tauri.conf.json")))
            .expect("tauri.conf.json is JSON");
    let capabilities = config["app"]["security"]["capabilities"]
        .as_array()
        .expect("tauri.conf.json lists capabilities");
    capabilities
        .iter()
        .flat_map(|capability| capability["permissions"].as_array().into_iter().flatten())
        .filter_map(|permission| permission.as_str()?.strip_prefix("allow-"))
        .map(|name| name.replace('-', "_"))
        .collect()
}

fn differences(page: &BTreeSet<String>, shell: &BTreeSet<String>) -> String {
    format!(
        "only the page has {:?}; only the shell has {:?}",
        page.difference(shell).collect::<Vec<_>>(),
        shell.difference(page).collect::<Vec<_>>()
    )
}

#[test]
fn the_page_invokes_exactly_the_commands_the_shell_registers() {
    let (page, shell) = (page_names("COMMANDS"), registered_commands());
    assert!(shell.len() > 20, "the handler list was read: {shell:?}");
    assert_eq!(page, shell, "{}", differences(&page, &shell));
}

#[test]
fn every_registered_command_is_declared_to_tauri_and_allowed_to_the_window() {
    let shell = registered_commands();
    let declared = declared_commands();
    assert_eq!(
        declared,
        shell,
        "build.rs: {}",
        differences(&declared, &shell)
    );
    let allowed = allowed_commands();
    assert_eq!(
        allowed,
        shell,
        "tauri.conf.json: {}",
        differences(&allowed, &shell)
    );
}

#[test]
fn the_page_listens_for_exactly_the_events_the_shell_emits() {
    let (page, shell) = (page_names("EVENTS"), emitted_events());
    assert!(
        shell.contains("walkie://updates"),
        "the sources were read: {shell:?}"
    );
    assert_eq!(page, shell, "{}", differences(&page, &shell));
}
