// The price tables in Settings: a row per model, its prices in US dollars, per million tokens
// in one table and per minute in the other. The form carries each whole table as one field (a
// hidden input holding JSON), so the dialog's unsaved-changes check, its error slot and Rust's
// check all see it as one setting.

/**
 * A price table: its price columns (the row's field, the words for it), the unit a price is
 * in (with an example, for the check's sentence), and the words naming a row with no model
 * yet in the cells' labels. The two tables sit in one dialog, so their labels must differ.
 * @typedef {object} PriceTable
 * @property {Array<[string, string]>} columns
 * @property {string} unit
 * @property {string} rowWords
 */

/** @type {PriceTable} The token prices, per million tokens, by modality. */
export const TOKEN_PRICES = {
  columns: [
    ["textIn", "text in"],
    ["cachedTextIn", "cached text in"],
    ["textOut", "text out"],
    ["audioIn", "audio in"],
    ["cachedAudioIn", "cached audio in"],
    ["audioOut", "audio out"],
    ["imageIn", "image in"],
    ["cachedImageIn", "cached image in"],
  ],
  unit: "dollars per million tokens, e.g. 4 or 0.40",
  rowWords: "row",
};

/**
 * @type {PriceTable} The prices of models billed by duration, per minute: a paused minute is
 * for a model that bills a paused session (0 when it has none).
 */
export const MINUTE_PRICES = {
  columns: [
    ["perMinute", "per minute"],
    ["perPausedMinute", "per paused minute"],
  ],
  unit: "dollars per minute, e.g. 0.017",
  rowWords: "per-minute row",
};

/** A price older than this may have changed since. */
export const PRICE_AGE_LIMIT_DAYS = 180;

const DAY_MS = 24 * 60 * 60 * 1000;

/**
 * The note for a row published on `takenOn` (YYYY-MM-DD) when that is more than 180 days
 * before the local date of `now`, else "" (also for no date or one that is not a date).
 * @param {string} takenOn
 * @param {number} now milliseconds since the epoch
 */
export function priceAgeNote(takenOn, now = Date.now()) {
  const match = /^(\d{4})-(\d{2})-(\d{2})$/.exec(String(takenOn ?? ""));
  if (!match) return "";
  const published = Date.UTC(Number(match[1]), Number(match[2]) - 1, Number(match[3]));
  const today = new Date(now);
  // Whole days between two calendar dates, both counted at midnight UTC so no clock change
  // or time zone makes a day of 23 or 25 hours.
  const ageDays = Math.round(
    (Date.UTC(today.getFullYear(), today.getMonth(), today.getDate()) - published) / DAY_MS,
  );
  return ageDays > PRICE_AGE_LIMIT_DAYS ? "over 180 days old: check the provider's price page" : "";
}

/**
 * What is wrong with the rows as typed (`{ model, takenOn, ...prices as text or numbers }`), or
 * null. Rust checks the numbers' range again; this catches what is not a number at all.
 * @param {Array<Record<string, string | number>>} rows
 * @param {PriceTable} table
 */
export function priceTableProblem(rows, table) {
  for (const [index, row] of rows.entries()) {
    const model = String(row.model ?? "").trim() || `${table.rowWords} ${index + 1}`;
    for (const [key, words] of table.columns) {
      const text = String(row[key] ?? "").trim();
      if (!/^\d*\.?\d+$/.test(text)) {
        return `${model}'s ${words} price must be a number of ${table.unit}`;
      }
    }
  }
  return null;
}

/**
 * The rows as the settings hold them: prices as numbers, the model trimmed.
 * @param {Array<Record<string, string | number>>} rows
 * @param {PriceTable} table
 */
export function priceRowsForSettings(rows, table) {
  return rows.map((row) => {
    const out = { model: String(row.model ?? "").trim(), takenOn: row.takenOn ?? "" };
    for (const [key] of table.columns) out[key] = Number(String(row[key]).trim());
    return out;
  });
}

/**
 * Wires a table: `hidden` is the form field holding the rows as JSON; `published` gives the
 * providers' published rows (for "Published prices"); `idPrefix` names the date notes the
 * model cells point to; `now` is the time the age of a published row is counted to.
 * @param {{ table: PriceTable, body: HTMLElement, hidden: HTMLInputElement, add: HTMLElement, reset: HTMLElement, published: () => object[], idPrefix: string, now?: () => number }} parts
 */
export function createPriceTable({ table, body, hidden, add, reset, published, idPrefix, now = Date.now }) {
  const doc = body.ownerDocument;
  /** @type {Array<Record<string, string | number>>} */
  let rows = [];

  function store() {
    hidden.value = JSON.stringify(rows);
  }

  function input(row, key, label) {
    const element = doc.createElement("input");
    element.type = "text";
    element.autocomplete = "off";
    if (key !== "model") element.inputMode = "decimal";
    element.value = String(row[key] ?? "");
    element.setAttribute("aria-label", label);
    element.addEventListener("input", () => {
      row[key] = element.value;
      // A price the user changed is theirs: the published date no longer applies.
      if (key !== "model") row.takenOn = "";
      store();
    });
    return element;
  }

  /** The date under the model, and the age note when the date is old; their ids. */
  function dateNotes(row, index) {
    if (!row.takenOn) return { notes: [], ids: [] };
    const date = doc.createElement("span");
    date.className = "price-date";
    date.id = `${idPrefix}-date-${index + 1}`;
    date.textContent = `published ${row.takenOn}`;
    const notes = [date];
    const old = priceAgeNote(row.takenOn, now());
    if (old) {
      const note = doc.createElement("span");
      note.className = "price-old";
      note.id = `${idPrefix}-age-${index + 1}`;
      note.textContent = old;
      notes.push(note);
    }
    return { notes, ids: notes.map((note) => note.id) };
  }

  function render() {
    body.replaceChildren(
      ...rows.map((row, index) => {
        const line = doc.createElement("tr");
        const name = String(row.model ?? "").trim() || `${table.rowWords} ${index + 1}`;
        const model = doc.createElement("td");
        const modelInput = input(row, "model", `Model of ${table.rowWords} ${index + 1}`);
        const { notes, ids } = dateNotes(row, index);
        if (ids.length) modelInput.setAttribute("aria-describedby", ids.join(" "));
        model.append(modelInput, ...notes);
        line.append(model);
        for (const [key, words] of table.columns) {
          const cell = doc.createElement("td");
          cell.append(input(row, key, `${name}: ${words}`));
          line.append(cell);
        }
        const remove = doc.createElement("button");
        remove.type = "button";
        remove.textContent = "Remove";
        remove.setAttribute("aria-label", `Remove ${name}`);
        remove.addEventListener("click", () => {
          rows.splice(index, 1);
          store();
          render();
        });
        const last = doc.createElement("td");
        last.append(remove);
        line.append(last);
        return line;
      }),
    );
  }

  add.addEventListener("click", () => {
    const row = { model: "", takenOn: "" };
    for (const [key] of table.columns) row[key] = "0";
    rows.push(row);
    store();
    render();
    body.querySelector("tr:last-child input")?.focus();
  });
  reset.addEventListener("click", () => {
    rows = structuredClone(published());
    store();
    render();
  });

  return {
    /** Shows the rows the form's field holds (after the dialog filled it). */
    load() {
      try {
        rows = JSON.parse(hidden.value || "[]");
      } catch {
        rows = [];
      }
      render();
    },
  };
}
