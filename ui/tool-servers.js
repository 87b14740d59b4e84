// The MCP servers in Settings: each a name, the command that starts it (or its https:// address),
// whether it is used, what its tools may do, and what one of its tools may do otherwise. Like the
// price table, the form carries the whole list as one field (a hidden input holding JSON), so the
// dialog's unsaved-changes check, its error slot and Rust's check all see it as one setting. Check
// starts the server as typed and lists its tools, so each can be given its own permission.
import { COMMANDS } from "./ipc.js";

/** What a tool may do, as the settings spell it, and the words for it. */
export const PERMISSIONS = [
  ["ask", "Ask me first"],
  ["always", "Always allow"],
  ["never", "Never"],
];

/**
 * What a server's tools without a choice of their own may do. Always is a choice per tool: said
 * of a server, it would cover tools the server adds later, which the user has never seen.
 */
export const SERVER_PERMISSIONS = PERMISSIONS.filter(([value]) => value !== "always");

/** The note of a server whose settings allow all its tools always (settings from before). */
export const ALWAYS_IS_PER_TOOL =
  "Always allow is chosen per tool now: press Check, then choose it for each tool you trust; the others ask first.";

/** A tool's own choice that defers to its server's. */
const AS_THE_SERVER = "";

/**
 * One server as the settings hold it: the fields in the order Rust writes them, the name and
 * command trimmed, the tools' permissions sorted by name, so an untouched list reads back the
 * same text.
 * @param {{ name?: string, command?: string, enabled?: boolean, permission?: string, tools?: Record<string, string> }} row
 */
export function serverForSettings(row) {
  const tools = {};
  for (const name of Object.keys(row.tools ?? {}).sort()) tools[name] = row.tools[name];
  return {
    name: String(row.name ?? "").trim(),
    command: String(row.command ?? "").trim(),
    enabled: Boolean(row.enabled),
    permission: SERVER_PERMISSIONS.some(([value]) => value === row.permission) ? row.permission : "ask",
    tools,
  };
}

/**
 * The tools a server's list shows: those it was found to have (Check), then those the settings
 * name that it no longer has, each with the permission it has of its own ("" for the server's).
 * @param {Record<string, string>} saved tool name → permission, from the settings
 * @param {{ name: string, description?: string }[] | null} found the tools Check listed
 */
export function toolRows(saved, found) {
  const rows = (found ?? []).map((tool) => ({
    name: tool.name,
    description: tool.description ?? "",
    permission: saved[tool.name] ?? AS_THE_SERVER,
    missing: false,
  }));
  for (const name of Object.keys(saved).sort()) {
    if (rows.some((row) => row.name === name)) continue;
    rows.push({ name, description: "", permission: saved[name], missing: found !== null });
  }
  return rows;
}

/**
 * What the keyring keeps for a server, as its part of the list says it: the variables' names and
 * whether there is a header, never a value.
 * @param {{ variables: string[], authorization: boolean, keyringProblem?: string | null } | null | undefined} kept
 */
export function secretsStateText(kept) {
  if (!kept) return "Open to see what is kept.";
  if (kept.keyringProblem) return `The keyring cannot be read: ${kept.keyringProblem}`;
  const names = [...kept.variables, ...(kept.authorization ? ["the Authorization header"] : [])];
  return names.length === 0 ? "Nothing is kept." : `Kept: ${names.join(", ")}.`;
}

/** The words of a command's error. */
function errorText(error) {
  return typeof error === "string" ? error : (error?.message ?? String(error));
}

/** What Check says of a server: how many tools, and their names. */
export function checkedText(tools) {
  if (tools.length === 0) return "It started, but offers no tools.";
  const names = tools.map((tool) => tool.name).join(", ");
  return `It works: ${tools.length} tool${tools.length === 1 ? "" : "s"} (${names}).`;
}

/**
 * Wires the list: `hidden` is the form field holding the servers as JSON; `invoke` is Tauri's
 * (for Check).
 * @param {{ list: HTMLElement, hidden: HTMLInputElement, add: HTMLElement, invoke: (command: string, args?: object) => Promise<unknown> }} parts
 */
export function createToolServerList({ list, hidden, add, invoke }) {
  const doc = list.ownerDocument;
  /** @type {Array<{ name: string, command: string, enabled: boolean, permission: string, tools: Record<string, string>, found: object[] | null, note: string, noteKind: string }>} */
  let rows = [];

  function store() {
    hidden.value = JSON.stringify(rows.map(serverForSettings));
  }

  const nameOf = (row, index) => String(row.name ?? "").trim() || `server ${index + 1}`;

  function textInput(value, label, placeholder, onInput) {
    const element = doc.createElement("input");
    element.type = "text";
    element.autocomplete = "off";
    element.spellcheck = false;
    element.value = value;
    element.placeholder = placeholder;
    element.setAttribute("aria-label", label);
    element.addEventListener("input", () => {
      onInput(element.value);
      store();
    });
    return element;
  }

  function select(options, value, label, onChange) {
    const element = doc.createElement("select");
    for (const [optionValue, words] of options) {
      const option = doc.createElement("option");
      option.value = optionValue;
      option.textContent = words;
      element.append(option);
    }
    element.value = value;
    element.setAttribute("aria-label", label);
    element.addEventListener("change", () => {
      onChange(element.value);
      store();
    });
    return element;
  }

  function button(words, label, onClick) {
    const element = doc.createElement("button");
    element.type = "button";
    element.textContent = words;
    if (label) element.setAttribute("aria-label", label);
    element.addEventListener("click", onClick);
    return element;
  }

  async function check(row, index, note, checkButton) {
    checkButton.disabled = true;
    row.note = `Starting ${nameOf(row, index)}…`;
    row.noteKind = "info";
    note.textContent = row.note;
    note.dataset.kind = row.noteKind;
    try {
      const tools = await invoke(COMMANDS.checkToolServer, { server: serverForSettings(row) });
      row.found = Array.isArray(tools) ? tools : [];
      row.note = checkedText(row.found);
      row.noteKind = "info";
    } catch (error) {
      const reason = typeof error === "string" ? error : (error?.message ?? String(error));
      row.note = `${reason.replace(/[.;]?$/, "")}. Fix it above, then press Check again.`;
      row.noteKind = "error";
    }
    render();
    list.querySelectorAll("[data-action=check-tool-server]")[index]?.focus();
  }

  function server(row, index) {
    const item = doc.createElement("li");
    item.className = "tool-server";
    const name = nameOf(row, index);

    const top = doc.createElement("div");
    top.className = "row";
    top.append(
      textInput(row.name, `Name of server ${index + 1}`, "Name, e.g. files", (value) => (row.name = value)),
    );
    const on = doc.createElement("label");
    on.className = "check";
    const box = doc.createElement("input");
    box.type = "checkbox";
    box.checked = row.enabled;
    box.addEventListener("change", () => {
      row.enabled = box.checked;
      store();
    });
    on.append(box, doc.createTextNode(" Use it"));
    top.append(
      on,
      button("Remove", `Remove ${name}`, () => {
        rows.splice(index, 1);
        store();
        render();
        (list.querySelector("li:last-child input") ?? add).focus();
      }),
    );

    const command = textInput(
      row.command,
      `Command or address of ${name}`,
      "npx -y @modelcontextprotocol/server-filesystem ~/Documents",
      (value) => (row.command = value),
    );
    command.className = "tool-server-command";

    const policy = doc.createElement("div");
    policy.className = "row";
    const policyLabel = doc.createElement("label");
    policyLabel.append(doc.createTextNode("Its tools: "));
    policyLabel.append(
      select(SERVER_PERMISSIONS, row.permission, `What the tools of ${name} may do`, (value) => (row.permission = value)),
    );
    const note = doc.createElement("p");
    note.className = "tool-server-note";
    note.setAttribute("role", "status");
    note.textContent = row.note;
    note.dataset.kind = row.noteKind;
    const checkButton = button("Check", `Check ${name}`, () => check(row, index, note, checkButton));
    checkButton.dataset.action = "check-tool-server";
    policy.append(policyLabel, checkButton);

    item.append(top, command, policy, note, secretsPart(row, index));

    const tools = toolRows(row.tools, row.found);
    if (tools.length > 0) {
      const toolList = doc.createElement("ul");
      toolList.className = "tool-list";
      toolList.setAttribute("aria-label", `The tools of ${name}`);
      for (const tool of tools) {
        const line = doc.createElement("li");
        const label = doc.createElement("span");
        label.className = "tool-name";
        label.textContent = tool.missing ? `${tool.name} (no longer offered)` : tool.name;
        if (tool.description) label.title = tool.description;
        const serverWords = SERVER_PERMISSIONS.find(([value]) => value === row.permission)?.[1] ?? "";
        const choices = [[AS_THE_SERVER, `As the server (${serverWords.toLowerCase()})`], ...PERMISSIONS];
        line.append(
          label,
          select(choices, tool.permission, `What ${tool.name} of ${name} may do`, (value) => {
            if (value === AS_THE_SERVER) delete row.tools[tool.name];
            else row.tools[tool.name] = value;
          }),
        );
        toolList.append(line);
      }
      item.append(toolList);
    }
    return item;
  }

  /**
   * The server's variables and header, kept in the keyring: what is kept is named (never its
   * values); what is typed is kept with Keep (or the dialog's Save), replacing it.
   */
  function secretsPart(row, index) {
    const name = nameOf(row, index);
    const part = doc.createElement("details");
    part.className = "tool-server-secrets";
    part.open = row.secretsOpen === true;
    const summary = doc.createElement("summary");
    summary.textContent = "Variables and header (kept in the keyring)";
    const state = doc.createElement("p");
    state.className = "tool-server-secrets-state";
    state.textContent = secretsStateText(row.secretsKept);
    const typed = doc.createElement("textarea");
    typed.rows = 3;
    typed.spellcheck = false;
    typed.autocomplete = "off";
    typed.value = row.secretsTyped ?? "";
    typed.placeholder = "GITHUB_TOKEN=… (one per line; for an address: Authorization: Bearer …)";
    typed.setAttribute("aria-label", `Variables and header of ${name}`);
    typed.addEventListener("input", () => (row.secretsTyped = typed.value));
    const secretsNote = doc.createElement("p");
    secretsNote.className = "tool-server-note";
    secretsNote.setAttribute("role", "status");
    const keep = button("Keep", `Keep the variables and header of ${name}`, async () => {
      const problem = await keepSecrets(row, index);
      secretsNote.textContent = problem ?? "Kept. The next conversation starts the server with them.";
      secretsNote.dataset.kind = problem ? "error" : "info";
      state.textContent = secretsStateText(row.secretsKept);
      typed.value = row.secretsTyped ?? "";
    });
    const forget = button("Forget", `Forget the variables and header of ${name}`, async () => {
      row.secretsTyped = "";
      typed.value = "";
      const problem = await keepSecrets(row, index, { forget: true });
      secretsNote.textContent = problem ?? "Forgotten.";
      secretsNote.dataset.kind = problem ? "error" : "info";
      state.textContent = secretsStateText(row.secretsKept);
    });
    const actions = doc.createElement("div");
    actions.className = "row";
    actions.append(keep, forget);
    part.addEventListener("toggle", async () => {
      row.secretsOpen = part.open;
      if (!part.open || row.secretsKept) return;
      const serverName = String(row.name ?? "").trim();
      if (!serverName) return;
      try {
        row.secretsKept = await invoke(COMMANDS.toolServerSecrets, { name: serverName });
      } catch (error) {
        row.secretsKept = { variables: [], authorization: false, keyringProblem: errorText(error) };
      }
      state.textContent = secretsStateText(row.secretsKept);
    });
    part.append(summary, state, typed, actions, secretsNote);
    return part;
  }

  /** Keeps what is typed for `row` in the keyring (or, with `forget`, nothing); the problem, or null. */
  async function keepSecrets(row, index, { forget = false } = {}) {
    const serverName = String(row.name ?? "").trim();
    if (!serverName) return `Name ${nameOf(row, index)} first: its secrets are kept under its name.`;
    try {
      row.secretsKept = await invoke(COMMANDS.saveToolServerSecrets, {
        name: serverName,
        typed: forget ? "" : (row.secretsTyped ?? ""),
      });
      row.secretsTyped = "";
      return null;
    } catch (error) {
      return `${errorText(error).replace(/[.;]?$/, "")}. Fix it, then press Keep again.`;
    }
  }

  function render() {
    list.replaceChildren(...rows.map(server));
  }

  add.addEventListener("click", () => {
    rows.push({ name: "", command: "", enabled: true, permission: "ask", tools: {}, found: null, note: "", noteKind: "info" });
    store();
    render();
    list.querySelector("li:last-child input")?.focus();
  });

  return {
    /** Whether variables or a header are typed and not kept yet. */
    hasUnkeptSecrets() {
      return rows.some((row) => (row.secretsTyped ?? "").trim() !== "");
    },
    /**
     * Keeps what is typed for every server (the dialog's Save); the first problem, naming its
     * server, or null.
     */
    async keepTypedSecrets() {
      for (const [index, row] of rows.entries()) {
        if ((row.secretsTyped ?? "").trim() === "") continue;
        const problem = await keepSecrets(row, index);
        if (problem) {
          render();
          return `${nameOf(row, index)}: ${problem}`;
        }
      }
      render();
      return null;
    },
    /** Shows the servers the form's field holds (after the dialog filled it). */
    load() {
      let listed = [];
      try {
        listed = JSON.parse(hidden.value || "[]");
      } catch {
        listed = [];
      }
      // What was typed for a server's secrets and not kept stays (a reload after Save).
      const before = new Map(rows.map((row) => [String(row.name ?? "").trim(), row]));
      rows = (Array.isArray(listed) ? listed : []).map((saved) => {
        const earlier = before.get(String(saved.name ?? "").trim());
        return {
          ...serverForSettings(saved),
          tools: { ...(saved.tools ?? {}) },
          found: null,
          note: saved.permission === "always" ? ALWAYS_IS_PER_TOOL : "",
          noteKind: "info",
          secretsTyped: earlier?.secretsTyped ?? "",
          secretsKept: earlier?.secretsKept ?? null,
          secretsOpen: earlier?.secretsOpen ?? false,
        };
      });
      render();
    },
  };
}
