// The connection badge in the header: how the call's network is doing, from Walkie's own
// numbers (reply packets lost, audio filled in, jitter, the consent checks' round trip). Rust
// judges them and says which side is at fault (walkie://connection-health); this only shows it.

/**
 * @typedef {object} ConnectionHealth
 * @property {"good" | "fair" | "poor"} level
 * @property {string} sentence what is wrong, or that nothing is
 * @property {number | null} lossPercent over the last seconds of reply audio
 * @property {number | null} filledPercent
 * @property {number} jitterMs
 * @property {number | null} roundTripMs
 */

const LABELS = { good: "Good", fair: "Fair", poor: "Poor" };

/** A figure for the tooltip, or "not measured yet". */
function figure(value, unit) {
  return value == null ? "not measured yet" : `${Math.round(value)} ${unit}`;
}

/**
 * What the badge shows for `health`: its level, its short label, and the sentence with the
 * figures behind it (the tooltip, and what a screen reader reads).
 * @param {ConnectionHealth} health
 */
export function healthView(health) {
  const level = health.level in LABELS ? health.level : "good";
  const figures =
    `Packets lost: ${figure(health.lossPercent, "%")}; audio filled in: ${figure(health.filledPercent, "%")}; ` +
    `jitter: ${figure(health.jitterMs, "ms")}; round trip: ${figure(health.roundTripMs, "ms")}.`;
  return {
    level,
    label: LABELS[level],
    description: `${health.sentence} ${figures}`,
  };
}

/**
 * Shows `health` on the badge element (its dot, label and description).
 * @param {HTMLElement} badge
 * @param {ConnectionHealth} health
 */
export function renderHealth(badge, health) {
  const view = healthView(health);
  badge.dataset.level = view.level;
  badge.querySelector("[data-role=label]").textContent = view.label;
  badge.title = view.description;
  badge.setAttribute("aria-label", `Connection ${view.label.toLowerCase()}. ${view.description}`);
}

/** Whether a call is up in `state` (the badge shows only then). */
export function connectionShown(state) {
  return ["ready", "listening", "thinking", "speaking"].includes(state);
}
