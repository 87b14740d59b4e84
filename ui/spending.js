// What the conversation has spent, in one discreet line under the meters: its tokens and, when
// the model's prices are known, their cost. The breakdown (by modality, cached input, whose
// prices of when) is in the line's tooltip. Rust sends the figures (`spending` updates); this
// only words them.

import { formatDurationMs } from "./history.js";

/**
 * @typedef {object} Spending
 * @property {number} responses
 * @property {number} totalTokens
 * @property {number} textIn
 * @property {number} cachedTextIn
 * @property {number} audioIn
 * @property {number} cachedAudioIn
 * @property {number} imageIn
 * @property {number} cachedImageIn
 * @property {number} textOut
 * @property {number} audioOut
 * @property {number | null} costUsd
 * @property {string | null} model
 * @property {string | null} takenOn
 * @property {boolean} free
 * @property {number} transcribedSeconds your speech billed by duration
 * @property {number | null} transcriptionCostUsd included in costUsd
 * @property {string | null} transcriptionModel whose prices the transcriptions are costed at
 * @property {string | null} transcriptionTakenOn
 * @property {number | null} lastCachedShare the share of the last reply's input that was cached
 * @property {number | null} cachedShare the same over the conversation
 * @property {number} [activeSeconds] a session billed by its duration (GPT-Live): its time listening and speaking
 * @property {number} [pausedSeconds] and its time paused, billed less
 */

/**
 * A dollar amount as small amounts need it: four decimals under a cent, three under a dollar.
 * @param {number} usd
 */
export function dollars(usd) {
  const amount = Math.max(0, usd);
  const decimals = amount < 0.01 ? 4 : amount < 1 ? 3 : 2;
  return `$${amount.toFixed(decimals)}`;
}

/**
 * A token count the way people read it: 950, 1.2k, 34k, 1.5M.
 * @param {number} count
 */
export function tokenCount(count) {
  if (count < 1_000) return String(count);
  if (count < 10_000) return `${(count / 1_000).toFixed(1)}k`;
  if (count < 1_000_000) return `${Math.round(count / 1_000)}k`;
  return `${(count / 1_000_000).toFixed(1)}M`;
}

/**
 * How long the speech transcribed was, as people read a duration: "4 s", "2 min 05 s".
 * @param {number} seconds
 */
export function speechDuration(seconds) {
  return formatDurationMs(Math.max(0, seconds) * 1000);
}

/**
 * A share as a whole percentage: 0.734 is "73 %".
 * @param {number} share
 */
function percent(share) {
  return `${Math.round(share * 100)} %`;
}

/**
 * The line, or "" when nothing was billed yet.
 * @param {Spending} spending
 */
export function spendingLine(spending) {
  const transcribed = (spending.transcribedSeconds ?? 0) > 0;
  const active = spending.activeSeconds ?? 0;
  const paused = spending.pausedSeconds ?? 0;
  const timed = active + paused > 0;
  if (spending.responses === 0 && !transcribed && !timed) return "";
  const parts = [];
  if (timed) {
    parts.push(`${speechDuration(active)} live` + (paused > 0 ? ` + ${speechDuration(paused)} paused` : ""));
  }
  if (spending.responses > 0) parts.push(`${tokenCount(spending.totalTokens)} tokens`);
  if (transcribed) parts.push(`${speechDuration(spending.transcribedSeconds)} transcribed`);
  if (spending.costUsd != null) {
    const model = spending.model ?? spending.transcriptionModel;
    parts.push(spending.free ? `free (${dollars(spending.costUsd)} on ${model})` : dollars(spending.costUsd));
  }
  return parts.join(" · ");
}

/**
 * The tooltip: the tokens by modality, the speech transcribed, the cached share, and what the
 * cost is based on.
 * @param {Spending} spending
 */
export function spendingDetails(spending) {
  const cached = (all, part) => (part > 0 ? `${all} (${part} cached)` : String(all));
  const lines = [
    `In: ${cached(spending.textIn, spending.cachedTextIn)} text, ` +
      `${cached(spending.audioIn, spending.cachedAudioIn)} audio` +
      (spending.imageIn > 0 ? `, ${cached(spending.imageIn, spending.cachedImageIn)} image` : ""),
    `Out: ${spending.textOut} text, ${spending.audioOut} audio`,
    `${spending.responses} ${spending.responses === 1 ? "reply" : "replies"} in this conversation`,
  ];
  if (spending.lastCachedShare != null && spending.cachedShare != null) {
    lines.push(
      `Cached input: ${percent(spending.lastCachedShare)} of the last reply's, ` +
        `${percent(spending.cachedShare)} over the conversation`,
    );
  }
  if (spending.responses > 0) {
    if (spending.model == null || spending.costUsd == null) {
      lines.push("No published prices for this model: tokens only.");
    } else {
      const when = spending.takenOn ? ` as published on ${spending.takenOn}` : "";
      lines.push(`Costed at ${spending.model}'s prices${when}.`);
    }
  }
  if ((spending.transcribedSeconds ?? 0) > 0) {
    const seconds = `Your speech: ${Math.round(spending.transcribedSeconds)} s transcribed`;
    if (spending.transcriptionCostUsd != null && spending.transcriptionModel) {
      const when = spending.transcriptionTakenOn ? ` as published on ${spending.transcriptionTakenOn}` : "";
      lines.push(
        `${seconds}, ${dollars(spending.transcriptionCostUsd)} at ${spending.transcriptionModel}'s per-minute price${when}.`,
      );
    } else {
      lines.push(`${seconds}; no per-minute price for its model, so not in the cost.`);
    }
  }
  const active = spending.activeSeconds ?? 0;
  const paused = spending.pausedSeconds ?? 0;
  if (active + paused > 0) {
    const time = `GPT-Live: ${Math.round(active)} s live, ${Math.round(paused)} s paused`;
    lines.push(
      spending.costUsd != null && spending.model
        ? `${time}, at ${spending.model}'s per-minute prices.`
        : `${time}; no per-minute price for its model, so not in the cost.`,
    );
  }
  if (spending.costUsd != null && spending.free) {
    lines.push("The offline demo bills nothing; this is what OpenAI would.");
  }
  return lines.join("\n");
}

/**
 * Shows each spending report in `element`, and `shown` (the element or what holds it) only
 * while there is something to show.
 * @param {HTMLElement} element
 * @param {HTMLElement} [shown]
 */
export function createSpending(element, shown = element) {
  return {
    /** @param {Spending} spending */
    show(spending) {
      const line = spendingLine(spending);
      if (element.textContent !== line) element.textContent = line;
      element.title = line ? spendingDetails(spending) : "";
      shown.hidden = !line;
    },
  };
}
