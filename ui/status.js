// The status line shows exactly what Rust last said about the connection: the webview derives
// no state of its own, so what a user reads is never ahead of or behind the app.

export const STATUS_EVENT = "walkie://status";

const KNOWN_STATES = new Set(["not_connected", "connecting"]);

/**
 * Applies one status event to the status element. Unknown states still show their text, marked
 * "unknown", so a newer backend never leaves the line blank.
 * @param {{ textContent: string, dataset: Record<string, string> }} element
 * @param {{ state: string, detail: string }} status
 */
export function renderStatus(element, status) {
  element.dataset.state = KNOWN_STATES.has(status.state) ? status.state : "unknown";
  element.textContent = status.detail;
}
