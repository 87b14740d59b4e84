// The status line shows exactly what Rust last said about the connection: the webview derives
// no state of its own, so what a user reads is never ahead of or behind the app.
import { COMMANDS } from "./ipc.js";

const KNOWN_STATES = new Set([
  "not_connected",
  "connecting",
  "ready",
  "listening",
  "thinking",
  "speaking",
  "reconnecting",
  "error",
]);

/** What the banner's one button does, per the status's `action`. */
const ACTIONS = {
  open_settings: { label: "Open Settings", command: "open_settings" },
  try_again: { label: "Try again", command: COMMANDS.connect },
  dismiss: { label: "OK", command: "dismiss" },
};

/**
 * How a status is shown. The header keeps one line: for a problem only its headline ("Not
 * connected"); the reason, saying what went wrong and what to do, goes to the banner under the
 * header, with the one action that fits the cause. Rust sends the headline and the reason as
 * fields; a status without them is one piece. The headline and the reason together are the
 * status's whole text, so a screen reader hears all of it.
 * The technical account behind a problem, when Rust has one, sits behind "Details…".
 * @param {{ state: string, detail: string, headline?: string, reason?: string, action?: string, details?: string }} status
 * @returns {{ headline: string, rest: string, banner: null | { text: string, action: { label: string, command: string }, details: string | null } }}
 */
export function statusView(status) {
  const problem = status.state === "error" || status.action != null;
  const details = status.details ?? null;
  if (!problem || !status.headline || typeof status.reason !== "string") {
    const action = problem ? ACTIONS[status.action] ?? ACTIONS.try_again : null;
    return {
      headline: status.detail,
      rest: "",
      banner: action ? { text: status.detail, action, details } : null,
    };
  }
  const reason = status.reason;
  return {
    headline: status.headline,
    rest: `: ${reason}`,
    banner: {
      text: reason.charAt(0).toUpperCase() + reason.slice(1),
      action: ACTIONS[status.action] ?? ACTIONS.try_again,
      details,
    },
  };
}

/**
 * Shows one status on the status element: its headline shown, the rest of its text kept for
 * screen readers only (the banner shows it). Unknown states still show their text, marked
 * "unknown", so a newer backend never leaves the line blank. (Which status is shown, and which
 * is stale, is the page state's: page.js.)
 * @param {{ dataset: Record<string, string>, title: string, ownerDocument: Document, replaceChildren: Function }} element
 * @param {{ state: string, detail: string, action?: string }} status
 */
export function renderStatus(element, status) {
  element.dataset.state = KNOWN_STATES.has(status.state) ? status.state : "unknown";
  const view = statusView(status);
  element.title = status.detail;
  // The same words again (a new state that reads the same) are not written again.
  const [shownHeadline, shownRest] = element.children ?? [];
  if (shownHeadline?.textContent === view.headline && shownRest?.textContent === view.rest) return;
  const headline = element.ownerDocument.createElement("span");
  headline.textContent = view.headline;
  const rest = element.ownerDocument.createElement("span");
  rest.className = "visually-hidden";
  rest.textContent = view.rest;
  element.replaceChildren(headline, rest);
}

/**
 * Shows the banner for a problem status, or hides it.
 * @param {{ hidden: boolean, querySelector: Function }} banner
 * @param {{ state: string, detail: string, action?: string }} status
 */
export function renderBanner(banner, status) {
  const view = statusView(status).banner;
  banner.hidden = view === null;
  if (view === null) return;
  banner.dataset.kind = status.action === "dismiss" ? "notice" : "problem";
  banner.querySelector("[data-role=text]").textContent = view.text;
  const button = banner.querySelector("[data-role=action]");
  button.textContent = view.action.label;
  button.dataset.command = view.action.command;
  const details = banner.querySelector("[data-role=details]");
  details.hidden = view.details === null;
  details.open = false;
  details.querySelector("[data-role=details-text]").textContent = view.details ?? "";
  details.querySelector("[data-action=copy-details]").textContent = "Copy details";
}

/**
 * What the big talk control says, and the hint under it, for the conversation's state and how
 * the user talks. Every instruction comes from the current mode; with no call the control is
 * off and says why.
 * @param {string | undefined} state the status's state
 * @param {{ handsFree: boolean, pressMode: string }} mode
 * @returns {{ label: string, hint: string, disabled: boolean }}
 */
export function talkControl(state, mode) {
  const toggle = mode.pressMode === "toggle";
  if (state === "error" || state === "not_connected" || state === "unknown") {
    return { label: "Not connected", hint: "Connect to talk", disabled: true };
  }
  if (state === "connecting" || state === "reconnecting") {
    return { label: "Connecting…", hint: "Talking works once the call is ready", disabled: true };
  }
  if (state === "speaking") {
    return {
      label: toggle || mode.handsFree ? "Speaking: tap to stop" : "Speaking: press to stop",
      hint: mode.handsFree
        ? "Hands-free: start talking, or press Space, to stop the reply"
        : "Press Space or the button to stop the reply",
      disabled: false,
    };
  }
  if (mode.handsFree) {
    return {
      label: state === "thinking" ? "Thinking…" : "Listening",
      hint: "Hands-free: just talk; Walkie answers when you pause",
      disabled: false,
    };
  }
  if (state === "listening") {
    return toggle
      ? { label: "Listening: tap to send", hint: "Press Space or tap the button again to send, Esc to cancel", disabled: false }
      : { label: "Listening: release to send", hint: "Let go of Space or the button to send, Esc to cancel", disabled: false };
  }
  if (state === "thinking") {
    return { label: "Thinking…", hint: "Press Space or the button to stop the reply", disabled: false };
  }
  return toggle
    ? { label: "Tap to talk", hint: "Press Space or tap the button to talk, again to send", disabled: false }
    : { label: "Hold to talk", hint: "Hold Space or the button while you talk", disabled: false };
}

/**
 * The words of a failure, whatever shape it came in: a Tauri command's error is an object
 * `{ message, field }` or a string, a page error an `Error`. Never "[object Object]".
 * @param {unknown} error
 */
export function describeError(error) {
  if (typeof error === "string") return error;
  if (typeof error?.message === "string" && error.message !== "") return error.message;
  if (error === undefined || error === null) return "an unknown error";
  try {
    const json = JSON.stringify(error);
    if (json !== undefined && json !== "{}") return json;
  } catch {
    // A cyclic object: its own words are all there is.
  }
  const text = String(error);
  return text.startsWith("[object ") ? "an unknown error" : text;
}

/**
 * The status line for a failure the page ran into.
 * @param {unknown} error
 */
export function failureStatus(error) {
  const reason = describeError(error);
  return { state: "error", detail: `Something went wrong: ${reason}`, headline: "Something went wrong", reason };
}

const IN_CALL = new Set(["ready", "listening", "thinking", "speaking"]);

/**
 * What the header's Connect button does for a status: while a call is being placed (the
 * first attempt, or placed again after a drop or a refusal that may pass) the status says Cancel
 * stops it, and the button reads Cancel; during a call it starts a new conversation (and says
 * so); otherwise it connects.
 * @param {{ state?: string, cancellable?: boolean } | undefined} status
 */
export function connectAction(status) {
  if (status?.cancellable === true) {
    return { label: "Cancel", title: "Stop placing the call", command: COMMANDS.cancelReconnect };
  }
  if (IN_CALL.has(status?.state)) {
    return { label: "New conversation", title: "Hang up and start a new conversation", command: COMMANDS.connect };
  }
  return { label: "Connect", title: "Call the provider again", command: COMMANDS.connect };
}
