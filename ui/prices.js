// The price table in Settings: a row per model, its prices in US dollars per million tokens.
// The form carries the whole table as one field (a hidden input holding JSON), so the dialog's
// unsaved-changes check, its error slot and Rust's check all see it as one setting.

/** The columns after the model: each row's price fields and the words for them. */
export const PRICE_COLUMNS = [
  ["textIn", "text in"],
  ["cachedTextIn", "cached text in"],
  ["textOut", "text out"],
  ["audioIn", "audio in"],
  ["cachedAudioIn", "cached audio in"],
  ["audioOut", "audio out"],
  ["imageIn", "image in"],
  ["cachedImageIn", "cached image in"],
];

/**
 * What is wrong with the rows as typed (`{ model, takenOn, ...prices as text or numbers }`), or
 * null. Rust checks the numbers' range again; this catches what is not a number at all.
 * @param {Array<Record<string, string | number>>} rows
 */
export function priceTableProblem(rows) {
  for (const [index, row] of rows.entries()) {
    const model = String(row.model ?? "").trim() || `row ${index + 1}`;
    for (const [key, words] of PRICE_COLUMNS) {
      const text = String(row[key] ?? "").trim();
      if (!/^\d*\.?\d+$/.test(text)) {
        return `${model}'s ${words} price must be a number of dollars per million tokens, e.g. 4 or 0.40`;
      }
    }
  }
  return null;
}

/**
 * The rows as the settings hold them: prices as numbers, the model trimmed.
 * @param {Array<Record<string, string | number>>} rows
 */
export function priceRowsForSettings(rows) {
  return rows.map((row) => {
    const out = { model: String(row.model ?? "").trim(), takenOn: row.takenOn ?? "" };
    for (const [key] of PRICE_COLUMNS) out[key] = Number(String(row[key]).trim());
    return out;
  });
}

/**
 * Wires the table: `hidden` is the form field holding the rows as JSON; `published` gives the
 * providers' published rows (for "Published prices").
 * @param {{ body: HTMLElement, hidden: HTMLInputElement, add: HTMLElement, reset: HTMLElement, published: () => object[] }} parts
 */
export function createPriceTable({ body, hidden, add, reset, published }) {
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

  function render() {
    body.replaceChildren(
      ...rows.map((row, index) => {
        const line = doc.createElement("tr");
        const name = String(row.model ?? "").trim() || `row ${index + 1}`;
        const model = doc.createElement("td");
        model.append(input(row, "model", `Model of row ${index + 1}`));
        if (row.takenOn) {
          const date = doc.createElement("span");
          date.className = "price-date";
          date.textContent = `published ${row.takenOn}`;
          model.append(date);
        }
        line.append(model);
        for (const [key, words] of PRICE_COLUMNS) {
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
    for (const [key] of PRICE_COLUMNS) row[key] = "0";
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
