// The status line shows exactly what Rust last said about the connection: the webview derives
// no state of its own, so what a user reads is never ahead of or behind the app.

export const STATUS_EVENT = "walkie://status";

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

/**
 * Applies one status event to the status element. Unknown states still show their text, marked
 * "unknown", so a newer backend never leaves the line blank. A status carrying a `seq` older
 * than the one shown is stale (the page asked for the latest while a newer event was on its
 * way) and is ignored; returns whether the status was shown.
 * @param {{ textContent: string, dataset: Record<string, string> }} element
 * @param {{ state: string, detail: string, seq?: number }} status
 */
export function renderStatus(element, status) {
  const shownSeq = Number(element.dataset.seq ?? 0);
  if (typeof status.seq === "number") {
    if (status.seq <= shownSeq) return false;
    element.dataset.seq = String(status.seq);
  }
  element.dataset.state = KNOWN_STATES.has(status.state) ? status.state : "unknown";
  element.textContent = status.detail;
  return true;
}
