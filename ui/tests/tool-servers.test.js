import { test } from "node:test";
import assert from "node:assert/strict";
import { SERVER_PERMISSIONS, checkedText, secretsStateText, serverForSettings, toolRows } from "../tool-servers.js";
import { formValues, settingsFromForm } from "../settings.js";

const files = {
  name: "files",
  command: "npx -y @modelcontextprotocol/server-filesystem /home/me",
  enabled: true,
  permission: "ask",
  tools: { write_file: "never", read_file: "always" },
};

test("a server goes to the settings trimmed, in Rust's field order, its tools sorted", () => {
  const typed = { ...files, name: " files ", command: " npx server ", found: [{ name: "x" }], note: "It works" };
  const saved = serverForSettings(typed);
  assert.deepEqual(Object.keys(saved), ["name", "command", "enabled", "permission", "tools"]);
  assert.equal(saved.name, "files");
  assert.equal(saved.command, "npx server");
  assert.deepEqual(Object.keys(saved.tools), ["read_file", "write_file"], "sorted, as a BTreeMap writes them");
  assert.equal(serverForSettings({ name: "x", permission: "sometimes" }).permission, "ask", "an unknown permission asks");
});

test("a server cannot allow every tool always: that choice is made per tool", () => {
  assert.deepEqual(
    SERVER_PERMISSIONS.map(([value]) => value),
    ["ask", "never"],
    "always would cover tools the server adds later",
  );
  assert.equal(
    serverForSettings({ ...files, permission: "always" }).permission,
    "ask",
    "settings from before that allowed a whole server are saved as they are read: asking",
  );
  assert.deepEqual(serverForSettings({ ...files, permission: "always" }).tools, files.tools, "each tool keeps its own choice");
});

test("the list reads back into the same settings, and an untouched list is no change", () => {
  const base = { provider: "local", toolServers: [serverForSettings(files)] };
  const values = formValues(base);
  assert.deepEqual(settingsFromForm(values, base), base);
  assert.equal(values.toolServers, JSON.stringify(base.toolServers));
});

test("a server's tools are those Check found, then those the settings name that it no longer offers", () => {
  assert.deepEqual(
    toolRows(files.tools, null).map((row) => [row.name, row.permission, row.missing]),
    [
      ["read_file", "always", false],
      ["write_file", "never", false],
    ],
    "before a check, the tools the settings name",
  );
  const found = [
    { name: "list_directory", description: "Lists a folder" },
    { name: "read_file", description: "Reads a file" },
  ];
  assert.deepEqual(
    toolRows(files.tools, found).map((row) => [row.name, row.permission, row.missing]),
    [
      ["list_directory", "", false],
      ["read_file", "always", false],
      ["write_file", "never", true],
    ],
  );
});

test("Check says how many tools a server offers and names them", () => {
  assert.equal(checkedText([]), "It started, but offers no tools.");
  assert.equal(checkedText([{ name: "echo" }]), "It works: 1 tool (echo).");
  assert.equal(checkedText([{ name: "echo" }, { name: "add" }]), "It works: 2 tools (echo, add).");
});

test("what the keyring keeps for a server is said by name, never by value", () => {
  assert.equal(secretsStateText(null), "Open to see what is kept.");
  assert.equal(secretsStateText({ variables: [], authorization: false }), "Nothing is kept.");
  assert.equal(
    secretsStateText({ variables: ["GITHUB_TOKEN", "LOG_LEVEL"], authorization: true }),
    "Kept: GITHUB_TOKEN, LOG_LEVEL, the Authorization header.",
  );
  assert.equal(
    secretsStateText({ variables: [], authorization: false, keyringProblem: "no secret store is running" }),
    "The keyring cannot be read: no secret store is running",
  );
});
