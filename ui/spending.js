// What the conversation has spent, in one discreet line under the meters: its tokens and, when
// the model's prices are known, their cost. The breakdown (by modality, cached input, whose
// prices of when) is in the line's tooltip. Rust sends the figures (walkie://spending); this
// only words them.

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
 * The line, or "" when nothing was billed yet.
 * @param {Spending} spending
 */
export function spendingLine(spending) {
  if (spending.responses === 0) return "";
  const tokens = `${tokenCount(spending.totalTokens)} tokens`;
  if (spending.costUsd == null) return tokens;
  if (spending.free) return `${tokens} · free (${dollars(spending.costUsd)} on ${spending.model})`;
  return `${tokens} · ${dollars(spending.costUsd)}`;
}

/**
 * The tooltip: the tokens by modality, and what the cost is based on.
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
  if (spending.costUsd == null) {
    lines.push("No published prices for this model: tokens only.");
  } else {
    const when = spending.takenOn ? ` as published on ${spending.takenOn}` : "";
    lines.push(`Costed at ${spending.model}'s prices${when}.`);
    if (spending.free) lines.push("The offline demo bills nothing; this is what OpenAI would.");
  }
  return lines.join("\n");
}

/**
 * Shows each spending report in `element` (hidden while there is nothing to show).
 * @param {HTMLElement} element
 */
export function createSpending(element) {
  return {
    /** @param {Spending} spending */
    show(spending) {
      const line = spendingLine(spending);
      element.textContent = line;
      element.title = line ? spendingDetails(spending) : "";
      element.hidden = !line;
    },
  };
}
