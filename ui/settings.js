// The settings dialog: shows what Rust holds, sends back what the user changed.
//
// Rust owns the settings (validation, the file, the keyring); this module only maps them to and
// from the form and shows Rust's answers. An API key goes one way: typed here, sent to Rust,
// stored in the OS keyring. What comes back is a summary (where the key comes from and its last
// four characters), never the key.

import { COMMANDS, EVENTS } from "./ipc.js";
import { describeError } from "./status.js";
import { FLOOR_DBFS } from "./meters.js";
import {
  MINUTE_PRICES,
  TOKEN_PRICES,
  createPriceTable,
  priceRowsForSettings,
  priceTableProblem,
} from "./prices.js";
import { createToolServerList, serverForSettings } from "./tool-servers.js";

/** The microphone test's news from Rust: `{ test, kind: "level" | "failed" | "stopped" }`. */

/** The key account a provider reads its key from; `null` when it takes none. */
export function accountFor(provider) {
  switch (provider) {
    case "automatic":
    case "openai":
      return "openai";
    case "azure":
      return "azure";
    case "custom":
      return "custom";
    default:
      return null;
  }
}

/**
 * A sentence about the key in use, from a key summary. With `keyringMissing`, the keyring's
 * problem is left to {@link keyringMissingText}, shown next to the button it disables.
 */
export function describeKey(summary, keyringMissing = false) {
  if (!summary) return "";
  const tail = summary.lastFour ? ` (ending in ${summary.lastFour})` : "";
  let sentence;
  switch (summary.source) {
    case "keyring":
      sentence = `A key is saved in your system keyring${tail}.`;
      break;
    case "environment":
      sentence = `Using the key from ${summary.environmentVariable}${tail}.`;
      break;
    default:
      if (keyringMissing) sentence = "No key saved.";
      else if (summary.environmentVariable) {
        sentence = `No key saved. Add one here, or set ${summary.environmentVariable}.`;
      } else sentence = "No key saved (the server may not need one).";
  }
  if (summary.keyringProblem && !keyringMissing) {
    sentence += ` The keyring could not be read: ${summary.keyringProblem}`;
  }
  return sentence;
}

/** Why "Save key" is off when no keyring answers, and what to do instead, in one line. */
export function keyringMissingText(environmentVariable) {
  const instead = environmentVariable
    ? `, or set ${environmentVariable} before starting Walkie`
    : "";
  return `No keyring is running, so a key cannot be saved here: start your desktop's keyring and restart Walkie${instead}.`;
}

const NUMBER_FIELDS = new Set(["pushToTalkTailMs", "preRollMs", "sessionLimitMinutes", "speechSpeed", "automaticToolRounds"]);
const BOOLEAN_FIELDS = new Set([
  "handsFree",
  "typedRepliesInText",
  "warmMic",
  "closeToTray",
  "startOnLogin",
  "echoCancellation",
  "voiceBargeIn",
  "parallelToolCalls",
  "askForTitles",
]);
// Empty is null: "none", or the server's own behaviour.
const OPTIONAL_NUMBER_FIELDS = new Set(["idleTimeoutMs", "liveIdleTimeoutS", "budgetUsd", "truncationRetentionRatio"]);
// A select whose first choice, "", is null: the model's default.
const OPTIONAL_CHOICE_FIELDS = new Set(["reasoningEffort", "transcriptionDelay"]);
/** The price tables, by the setting each is saved in. */
const PRICE_TABLES = { prices: TOKEN_PRICES, minutePrices: MINUTE_PRICES };
// Rust's bookkeeping, which the dialog never writes: kept as received, whatever a form holds.
const KEPT_FIELDS = new Set(["keptDeprecatedModels", "publishedPricesOf"]);

/**
 * The words to expect as the settings hold them: comma-separated in the field, each trimmed,
 * the empty ones dropped (a word cannot hold a comma).
 * @param {string | string[]} text
 */
export function keywordsFromText(text) {
  const words = Array.isArray(text) ? text : String(text ?? "").split(",");
  return words.map((word) => String(word).trim()).filter((word) => word !== "");
}

/**
 * Reads the form's fields into a settings object, starting from `base` so fields the form does
 * not show are kept as they were.
 * @param {Record<string, string | boolean>} values field name → input value (checkbox: boolean)
 * @param {object} base the settings last received from Rust
 */
export function settingsFromForm(values, base) {
  const settings = { ...base };
  for (const [name, value] of Object.entries(values)) {
    if ((!(name in base) && name !== "retentionDays") || KEPT_FIELDS.has(name)) continue;
    if (NUMBER_FIELDS.has(name)) {
      const number = Number(String(value).trim());
      // The dialog checks these first (wholeNumberProblem, speechSpeedProblem); anything else is
      // left for Rust to refuse.
      settings[name] = Number.isFinite(number) && String(value).trim() !== "" ? number : value;
    } else if (BOOLEAN_FIELDS.has(name)) {
      settings[name] = Boolean(value);
    } else if (name === "retentionDays") {
      settings[name] = value === "" || value === "forever" ? null : Number(value);
    } else if (name in PRICE_TABLES) {
      // The dialog checks the rows first (priceTableProblem).
      const rows = typeof value === "string" ? JSON.parse(value || "[]") : value;
      settings[name] = priceRowsForSettings(rows, PRICE_TABLES[name]);
    } else if (OPTIONAL_CHOICE_FIELDS.has(name)) {
      settings[name] = value === "" || value == null ? null : String(value);
    } else if (name === "transcriptionKeywords") {
      settings[name] = keywordsFromText(value);
    } else if (name === "toolServers") {
      // Rust checks the list (names, commands) and names what is wrong.
      const listed = typeof value === "string" ? JSON.parse(value || "[]") : value;
      settings[name] = (Array.isArray(listed) ? listed : []).map(serverForSettings);
    } else if (OPTIONAL_NUMBER_FIELDS.has(name)) {
      // Empty is "none". The dialog checks the rest first (optionalWholeNumberProblem);
      // anything else is left for Rust to refuse, naming the field.
      const text = String(value).trim();
      const number = Number(text);
      settings[name] = text === "" ? null : Number.isFinite(number) ? number : value;
    } else {
      settings[name] = typeof value === "string" ? value : String(value);
    }
  }
  return settings;
}

/** The value each form field shows for `settings` (the inverse of {@link settingsFromForm}). */
export function formValues(settings) {
  const values = {};
  for (const [name, value] of Object.entries(settings)) {
    if (KEPT_FIELDS.has(name)) continue;
    if (name === "retentionDays") values[name] = value == null ? "forever" : String(value);
    else if (name in PRICE_TABLES) values[name] = JSON.stringify(value ?? []);
    else if (name === "transcriptionKeywords") values[name] = (value ?? []).join(", ");
    else if (name === "toolServers") values[name] = JSON.stringify((value ?? []).map(serverForSettings));
    else if (BOOLEAN_FIELDS.has(name)) values[name] = Boolean(value);
    else values[name] = value == null ? "" : String(value);
  }
  return values;
}

/**
 * The options of a device picker: the system default first, then the devices; a saved choice
 * that is not connected now stays in the list, marked, so opening the dialog never loses it.
 */
export function deviceOptions(devices, chosen) {
  const options = [{ value: "", label: "System default" }];
  const named = new Map();
  for (const device of devices) named.set(device.name, (named.get(device.name) ?? 0) + 1);
  for (const device of devices) {
    // Two devices with one name are told apart by their system name.
    let label = named.get(device.name) > 1 ? `${device.name} (${systemName(device.id)})` : device.name;
    if (device.isDefault) label += " (default)";
    options.push({ value: device.id, label });
  }
  if (chosen && !devices.some((device) => device.id === chosen)) {
    options.push({ value: chosen, label: `${chosen} (not connected)` });
  }
  return options;
}

/** A device id without its sound system's prefix (`pulseaudio:`, `alsa:`). */
function systemName(id) {
  const colon = id.indexOf(":");
  return colon > 0 ? id.slice(colon + 1) : id;
}

/**
 * What the data folder field shows: the folder set, or the one in use when none is set, so
 * the user always sees a real path; and a note when the one in use differs (until a restart).
 */
/**
 * What the global shortcut's help says, by where the shortcut is heard in this session and,
 * where the desktop's portal holds it, the keys the desktop says it bound.
 */
export function shortcutHelpText(reach, trigger) {
  const setting = "Press the keys here to set it; Backspace clears it.";
  if (reach === "portal") {
    if (!trigger) {
      return `Your desktop can hold this shortcut for Walkie in every app; its keyboard settings can change it. ${setting}`;
    }
    return `Your desktop holds ${trigger} for Walkie in every app; its keyboard settings can change it. ${setting}`;
  }
  if (reach === "thisWindow") {
    return "In this Wayland session it works only while Walkie has the focus: to talk from any app, " +
      `bind walkie --toggle in your desktop's keyboard shortcuts. ${setting}`;
  }
  return `Talk while another window has the focus. ${setting}`;
}

/** What "Closing the window keeps Walkie in the tray" says, by whether a tray shows Walkie. */
export function closeToTrayHelpText(trayShows) {
  if (trayShows === false) {
    return "No tray shows Walkie in this session (on GNOME, the AppIndicator extension adds one), " +
      "so closing the window still quits it.";
  }
  return "The window hides and the call goes on; Show Walkie in the tray menu (or walkie --show) brings it back.";
}

export function dataFolderField(setting, inUse) {
  const value = setting || inUse || "";
  const note = setting && inUse && setting !== inUse ? `Walkie saves in ${inUse} until it restarts.` : "";
  return { value, note };
}

/** The data folder setting for what the field holds: the folder in use shown unchanged stays "". */
export function dataFolderSetting(typed, setting, inUse) {
  const trimmed = typed.trim();
  return !setting && trimmed === (inUse ?? "") ? "" : trimmed;
}

/**
 * A number field's own check, for what the browser cannot hand over as a number: empty,
 * letters, a fraction. Returns the reason, or `null` when the value is a whole number (the
 * range is Rust's to check).
 */
/**
 * Runs async tasks one after another, in the order they were asked for. Two saves in flight
 * (a refused one, then the corrected one) would otherwise be carried out and answered in
 * either order, and the earlier one could undo the later on disk or on screen.
 */
export function oneAfterAnother() {
  let last = Promise.resolve();
  return (task) => {
    const run = last.then(task);
    last = run.catch(() => {});
    return run;
  };
}

export function wholeNumberProblem(text, badInput = false, example = "milliseconds, e.g. 300") {
  const trimmed = String(text).trim();
  if (!badInput && /^\d+$/.test(trimmed)) return null;
  return `enter a whole number of ${example}`;
}

/**
 * An idle timeout's own check: empty is "none" (wait for me, never pause); anything else must
 * be a whole number (the range is Rust's to check). Returns the reason, or `null`.
 * @param {string} text
 * @param {boolean} [badInput] the browser could not read the number
 * @param {string} [unit] the unit and an example, as the reason names them
 * @param {string} [whenEmpty] what an empty field means, as the reason says it
 */
export function optionalWholeNumberProblem(
  text,
  badInput = false,
  unit = "milliseconds, e.g. 10000",
  whenEmpty = "wait for you",
) {
  const trimmed = String(text).trim();
  if (!badInput && (trimmed === "" || /^\d+$/.test(trimmed))) return null;
  return `enter a whole number of ${unit}, or leave it empty to ${whenEmpty}`;
}

/**
 * What is wrong with a typed budget, or null: empty (no budget) or an amount in dollars.
 * @param {string} text
 */
export function optionalAmountProblem(text) {
  const trimmed = String(text).trim().replace(/^\$/, "");
  if (trimmed === "" || (/^\d*\.?\d+$/.test(trimmed) && Number(trimmed) > 0)) return null;
  return "enter an amount in US dollars, e.g. 0.50, or leave it empty for no budget";
}

/**
 * Whether a hands-free field is shown: only with hands-free on, and then the ones for every
 * detection (`shownFor` "any") or for the detection chosen (`server_vad`, `semantic_vad`).
 */
export function handsFreeFieldShown(shownFor, handsFree, voiceDetection) {
  return Boolean(handsFree) && (shownFor === "any" || shownFor === voiceDetection);
}

/** The model fields a scope looks at, and the list in the settings view it looks the name up in. */
const MODEL_SCOPES = {
  reasoning: ["model", "reasoningModels"],
  "transcription-delay": ["transcriptionModel", "transcriptionDelayModels"],
  "transcription-keywords": ["transcriptionModel", "transcriptionKeywordModels"],
  live: ["model", "liveModels"],
};

/**
 * Whether `model` is served by the Live API (GPT-Live): one the SDK names, or a newer
 * `gpt-live-…` (as Rust's `is_live_model`).
 * @param {string} model
 * @param {object} view the settings view from Rust
 */
export function isLiveModel(model, view) {
  const name = String(model ?? "").trim();
  return (view?.liveModels ?? []).includes(name) || name.startsWith("gpt-live-");
}

/**
 * The voices the model takes: GPT-Live has its own list.
 * @param {string} model
 * @param {object} view the settings view from Rust
 */
export function voicesFor(model, view) {
  return isLiveModel(model, view) ? view?.liveVoices ?? [] : view?.voices ?? [];
}

/**
 * Whether a field that only some models take is shown (`data-model-scope`): when the model
 * field its scope looks at holds (trimmed, exactly) a name in the view's list for it.
 * @param {string} scope "reasoning" | "transcription-delay" | "transcription-keywords"
 * @param {{ model?: string, transcriptionModel?: string }} form what the model fields hold
 * @param {object} view the settings view from Rust
 */
export function modelScopeShown(scope, form, view) {
  // "not-live": the Realtime API's own settings, which a GPT-Live session does not take.
  if (scope === "not-live") return !isLiveModel(form.model, view);
  if (scope === "live") return isLiveModel(form.model, view);
  const [fieldName, listName] = MODEL_SCOPES[scope] ?? [];
  if (!fieldName) return false;
  // GPT-Live transcribes the user itself: no transcription model's settings apply.
  if (fieldName === "transcriptionModel" && isLiveModel(form.model, view)) return false;
  return (view?.[listName] ?? []).includes(String(form[fieldName] ?? "").trim());
}

/**
 * Whether a field applies to what the form holds: every scope it has must allow it, the
 * provider (`data-provider`, a list of providers), hands-free (`data-hands-free`) and the
 * model (`data-model-scope`).
 * @param {{ provider?: string, handsFree?: string, modelScope?: string }} scopes the group's dataset
 * @param {{ provider: string, handsFree: boolean, voiceDetection: string, model?: string, transcriptionModel?: string }} form
 * @param {object} view the settings view from Rust
 */
export function fieldApplies(scopes, form, view) {
  if (scopes.provider !== undefined && !scopes.provider.split(" ").includes(form.provider)) return false;
  if (
    scopes.handsFree !== undefined &&
    !handsFreeFieldShown(scopes.handsFree, form.handsFree, form.voiceDetection)
  ) {
    return false;
  }
  if (scopes.modelScope !== undefined && !modelScopeShown(scopes.modelScope, form, view)) return false;
  return true;
}

/**
 * The shutdown of the model a field holds (trimmed, exact name), or null.
 * @param {string} model
 * @param {Array<{ model: string, shutdownOn: string, replacement: string | null }>} deprecatedModels
 */
export function deprecationOf(model, deprecatedModels) {
  const name = String(model ?? "").trim();
  return (deprecatedModels ?? []).find((deprecated) => deprecated.model === name) ?? null;
}

/** What each model field keeps doing when its model is replaced in time. */
const KEPT_WORKING = {
  model: "keep Walkie answering",
  transcriptionModel: "keep your speech transcribed",
};

/**
 * The warning under a model field holding a deprecated model, or "" for any other name.
 * @param {"model" | "transcriptionModel"} fieldName
 * @param {string} model what the field holds
 * @param {Array<{ model: string, shutdownOn: string, replacement: string | null }>} deprecatedModels
 */
export function deprecationWarning(fieldName, model, deprecatedModels) {
  const deprecated = deprecationOf(model, deprecatedModels);
  if (!deprecated) return "";
  const choose = deprecated.replacement
    ? `choose ${deprecated.replacement} to ${KEPT_WORKING[fieldName]} after that`
    : `choose another model to ${KEPT_WORKING[fieldName]} after that`;
  return `${deprecated.model} shuts down on ${deprecated.shutdownOn}: ${choose}.`;
}

/**
 * A model picker's options: each name, with the date a deprecated one shuts down as its
 * label (null for the others).
 * @param {string[]} models
 * @param {Array<{ model: string, shutdownOn: string }>} deprecatedModels
 */
export function modelOptions(models, deprecatedModels) {
  return (models ?? []).map((model) => {
    const deprecated = deprecationOf(model, deprecatedModels);
    return { value: model, label: deprecated ? `shuts down ${deprecated.shutdownOn}` : null };
  });
}

/** The slowest and fastest speaking speeds the models take; 1 is normal. */
export const SPEECH_SPEED_RANGE = [0.25, 1.5];

/**
 * The speaking speed's own check: a number from 0.25 to 1.5. Returns the reason, or null.
 * @param {string} text
 * @param {boolean} badInput the browser could not read the field as a number
 */
export function speechSpeedProblem(text, badInput = false) {
  const trimmed = String(text).trim();
  const [slowest, fastest] = SPEECH_SPEED_RANGE;
  if (!badInput && /^\d*\.?\d+$/.test(trimmed)) {
    const speed = Number(trimmed);
    if (speed >= slowest && speed <= fastest) return null;
  }
  return `enter ${slowest} to ${fastest} (1 is normal)`;
}

/**
 * The words for keeping a share of the conversation when it gets too long, for a ratio the
 * picker does not offer (one set in the settings file), so it is shown rather than lost.
 * @param {number} ratio 0.1 to 0.95
 */
export function retentionRatioLabel(ratio) {
  return `Keep ${Math.round(ratio * 100)} %, reuse the cache`;
}

/** The names of the fields whose values differ between two snapshots of the form. */
export function changedFields(before, after) {
  const names = new Set([...Object.keys(before), ...Object.keys(after)]);
  return [...names].filter((name) => before[name] !== after[name]);
}

/** One line under a field: its visible label and what to do. */
export function fieldErrorText(label, reason) {
  return `${label}: ${reason}`;
}

/** Wires the dialog. `invoke` is Tauri's. */
const MODIFIER_CODES = /^(Control|Alt|Shift|Meta|OS)(Left|Right)?$/;

/**
 * What a key press in the shortcut field means: the shortcut it names ("Ctrl+Alt+K", in the
 * words the global-shortcut parser takes), "" to clear the field (Backspace or Delete alone),
 * or null to let the key do what it does (Tab and Escape alone move on and close; a modifier
 * alone waits for the key it goes with).
 * @param {{ code: string, ctrlKey?: boolean, altKey?: boolean, shiftKey?: boolean, metaKey?: boolean }} event
 * @returns {string | null}
 */
export function shortcutFromKeys(event) {
  const modifiers = [
    event.ctrlKey && "Ctrl",
    event.altKey && "Alt",
    event.shiftKey && "Shift",
    event.metaKey && "Super",
  ].filter(Boolean);
  const code = event.code ?? "";
  if (code === "" || MODIFIER_CODES.test(code)) return null;
  if (modifiers.length === 0) {
    if (code === "Tab" || code === "Escape") return null;
    if (code === "Backspace" || code === "Delete") return "";
  }
  const key = code.replace(/^Key(?=[A-Z]$)/, "").replace(/^Digit(?=[0-9]$)/, "");
  return [...modifiers, key].join("+");
}

export function createSettingsDialog(
  dialog,
  invoke,
  { onSaved, confirm = defaultConfirm(dialog), listen = null } = {},
) {
  const form = dialog.querySelector("form");
  const message = dialog.querySelector("[data-role=message]");
  const keyState = dialog.querySelector("[data-role=key-state]");
  const keyringMissing = dialog.querySelector("[data-role=keyring-missing]");
  const advanced = dialog.querySelector("[data-role=advanced]");
  const keyInput = form.elements.namedItem("apiKey");
  const keyButtons = dialog.querySelectorAll("[data-action=save-key], [data-action=forget-key]");
  const dataFolderHelp = dialog.querySelector("[data-role=data-folder-help]");
  const priceTable = createPriceTable({
    table: TOKEN_PRICES,
    body: dialog.querySelector("[data-role=price-rows]"),
    hidden: form.elements.namedItem("prices"),
    add: dialog.querySelector("[data-action=add-price]"),
    reset: dialog.querySelector("[data-action=published-prices]"),
    published: () => view?.publishedPrices ?? [],
    idPrefix: "settings-prices",
  });
  const minutePriceTable = createPriceTable({
    table: MINUTE_PRICES,
    body: dialog.querySelector("[data-role=minute-price-rows]"),
    hidden: form.elements.namedItem("minutePrices"),
    add: dialog.querySelector("[data-action=add-minute-price]"),
    reset: dialog.querySelector("[data-action=published-minute-prices]"),
    published: () => view?.publishedMinutePrices ?? [],
    idPrefix: "settings-minutePrices",
  });
  const toolServerList = createToolServerList({
    list: dialog.querySelector("[data-role=tool-servers]"),
    hidden: form.elements.namedItem("toolServers"),
    add: dialog.querySelector("[data-action=add-tool-server]"),
    invoke,
  });
  const dataFolderHelpText = dataFolderHelp.textContent;
  let view = null;
  let saved = {};
  const inOrder = oneAfterAnother();

  function field(name) {
    return form.elements.namedItem(name);
  }

  function say(text, kind = "info") {
    message.textContent = text;
    message.dataset.kind = kind;
  }

  // Each named field gets a slot for its error, under it, that screen readers read with it.
  const errorSlots = new Map();
  for (const element of form.elements) {
    if (!element.name || element.type === "submit") continue;
    const slot = document.createElement("p");
    slot.className = "field-error";
    slot.id = `settings-${element.name}-error`;
    slot.dataset.role = "field-error";
    slot.hidden = true;
    const anchor = element.closest(".field") ?? element.closest("label") ?? element;
    if (anchor.classList.contains("field")) {
      // Under the input (and its row), above the help lines.
      const row = element.closest(".row") ?? (element.closest("label.check") || element);
      row.after(slot);
    } else {
      anchor.after(slot);
    }
    const described = element.getAttribute("aria-describedby");
    element.setAttribute("aria-describedby", described ? `${slot.id} ${described}` : slot.id);
    errorSlots.set(element.name, slot);
  }

  function visibleLabel(element) {
    const label = element.labels?.[0];
    if (!label) return element.dataset.label ?? element.name;
    return (label.querySelector("[data-role=label]") ?? label).textContent.trim();
  }

  function clearInvalid() {
    for (const element of form.querySelectorAll("[aria-invalid=true]")) {
      element.removeAttribute("aria-invalid");
    }
    for (const slot of errorSlots.values()) {
      slot.hidden = true;
      slot.textContent = "";
    }
  }

  /** Marks every field in `problems` ({ field, reason }) at once; focuses the first. */
  function showProblems(problems) {
    let first = null;
    for (const { field: name, reason } of problems) {
      const element = field(name);
      const slot = errorSlots.get(name);
      if (!element || !slot) continue;
      element.setAttribute("aria-invalid", "true");
      slot.textContent = fieldErrorText(visibleLabel(element), reason);
      slot.hidden = false;
      if (advanced.contains(element)) advanced.open = true;
      first ??= element;
    }
    const count = problems.length;
    say(
      count === 1
        ? "Not saved: fix the setting marked in red."
        : `Not saved: fix the ${count} settings marked in red.`,
      "error",
    );
    first?.focus();
  }

  function showError(error) {
    if (error?.problems?.length) {
      showProblems(error.problems);
      return;
    }
    say(describeError(error), "error");
  }

  /** What the fields that decide which others apply hold now. */
  function scopeValues() {
    return {
      provider: field("provider").value,
      handsFree: field("handsFree").checked,
      voiceDetection: field("voiceDetection").value,
      model: field("model").value,
      transcriptionModel: field("transcriptionModel").value,
    };
  }

  /** Shows the fields that apply to the provider, hands-free and the models chosen; hides the rest. */
  function showFieldsThatApply() {
    const values = scopeValues();
    for (const group of form.querySelectorAll("[data-provider], [data-hands-free], [data-model-scope]")) {
      group.hidden = !fieldApplies(group.dataset, values, view);
    }
  }

  /** The warnings under the model fields, for a model that shuts down. */
  function showModelWarnings() {
    for (const name of ["model", "transcriptionModel"]) {
      const warning = dialog.querySelector(`#settings-${name}-warning`);
      const text = deprecationWarning(name, field(name).value, view?.deprecatedModels);
      // Written only when it changes, so the live region does not repeat it at each key.
      if (warning.textContent !== text) warning.textContent = text;
    }
  }

  function showProviderFields() {
    const provider = field("provider").value;
    showFieldsThatApply();
    const account = accountFor(provider);
    const summary = view?.keys.find((key) => key.account === account);
    const missing = Boolean(view?.keyringMissing);
    keyState.textContent = describeKey(summary, missing);
    keyInput.disabled = missing;
    for (const button of keyButtons) button.disabled = missing;
    keyringMissing.hidden = !missing;
    keyringMissing.textContent = missing ? keyringMissingText(summary?.environmentVariable) : "";
  }

  function fill(select, options, chosen) {
    select.replaceChildren(
      ...options.map(({ value, label }) => {
        const option = document.createElement("option");
        option.value = value;
        option.textContent = label;
        return option;
      }),
    );
    select.value = chosen ?? "";
  }

  /**
   * Fills the voice picker with the voices `model` takes, keeping `chosen` when it is one of
   * them (else the first: GPT-Live's default, marin, where it is offered).
   */
  function fillVoices(model, chosen) {
    const voices = voicesFor(model, view);
    const kept = voices.includes(chosen) ? chosen : voices.includes("marin") ? "marin" : voices[0];
    const select = field("voice");
    const same =
      select.options.length === voices.length && [...select.options].every((option, index) => option.value === voices[index]);
    if (same) {
      select.value = kept ?? "";
      return;
    }
    fill(select, voices.map((voice) => ({ value: voice, label: voice })), kept);
  }

  /** Fills a model picker's suggestions, a deprecated model's shutdown date as its label. */
  function fillModels(datalist, models) {
    datalist.replaceChildren(
      ...modelOptions(models, view.deprecatedModels).map(({ value, label }) => {
        const option = document.createElement("option");
        option.value = value;
        if (label) option.label = label;
        return option;
      }),
    );
  }

  function render() {
    const values = formValues(view.settings);
    fillVoices(view.settings.model, view.settings.voice);
    fillModels(dialog.querySelector("#models"), [...view.models, ...(view.liveModels ?? [])]);
    fillModels(dialog.querySelector("#transcription-models"), view.transcriptionModels);
    // A ratio set in the file that the picker does not offer is shown, not turned into another.
    const retention = field("truncationRetentionRatio");
    if (values.truncationRetentionRatio && ![...retention.options].some((option) => option.value === values.truncationRetentionRatio)) {
      const option = document.createElement("option");
      option.value = values.truncationRetentionRatio;
      option.textContent = retentionRatioLabel(Number(values.truncationRetentionRatio));
      retention.append(option);
    }
    for (const [name, value] of Object.entries(values)) {
      const element = field(name);
      // The device pickers are filled when the device list arrives.
      if (!element || name === "inputDevice" || name === "outputDevice") continue;
      if (element.type === "checkbox") element.checked = value;
      else element.value = value;
    }
    const folder = dataFolderField(view.settings.dataFolder, view.dataFolderInUse);
    field("dataFolder").value = folder.value;
    dataFolderHelp.textContent = folder.note ? `${folder.note} ${dataFolderHelpText}` : dataFolderHelpText;
    dialog.querySelector("[data-role=config-file]").textContent = view.configFile;
    dialog.querySelector("#settings-globalShortcut-help").textContent = shortcutHelpText(view.shortcutReach, view.shortcutTrigger);
    dialog.querySelector("#settings-closeToTray-help").textContent = closeToTrayHelpText(view.trayShows);
    priceTable.load();
    minutePriceTable.load();
    toolServerList.load();
    showProviderFields();
    showModelWarnings();
  }

  async function loadDevices() {
    try {
      const devices = await invoke(COMMANDS.listDevices);
      fill(field("inputDevice"), deviceOptions(devices.inputs, view.settings.inputDevice), view.settings.inputDevice);
      fill(field("outputDevice"), deviceOptions(devices.outputs, view.settings.outputDevice), view.settings.outputDevice);
      if (devices.problem) say(`Some devices could not be listed: ${devices.problem}`, "error");
    } catch (error) {
      say(`The devices could not be listed: ${describeError(error)}`, "error");
    }
    // Filling the pickers is not an edit.
    saved.inputDevice = field("inputDevice").value;
    saved.outputDevice = field("outputDevice").value;
  }

  /** Every field's value as typed, the key included (compared, never sent as a setting). */
  function snapshot() {
    const values = {};
    for (const element of form.elements) {
      if (!element.name || element.type === "submit") continue;
      values[element.name] = element.type === "checkbox" ? element.checked : element.value;
    }
    return values;
  }

  function unsaved() {
    return changedFields(saved, snapshot()).length > 0 || toolServerList.hasUnkeptSecrets();
  }

  /** The settings the form holds, and what the form itself found wrong. */
  function readForm() {
    const values = snapshot();
    delete values.apiKey;
    const problems = [];
    for (const [name, example] of [
      ["pushToTalkTailMs", "milliseconds, e.g. 300"],
      ["preRollMs", "milliseconds, e.g. 300"],
      ["sessionLimitMinutes", "minutes, e.g. 60"],
      ["automaticToolRounds", "rounds, e.g. 8"],
    ]) {
      const element = field(name);
      const reason = wholeNumberProblem(element.value, element.validity?.badInput, example);
      if (reason) {
        problems.push({ field: name, reason });
        values[name] = view.settings[name];
      }
    }
    const liveIdle = field("liveIdleTimeoutS");
    if (isLiveModel(values.model, view)) {
      const reason = optionalWholeNumberProblem(
        liveIdle.value,
        liveIdle.validity?.badInput,
        "seconds, e.g. 60",
        "never pause",
      );
      if (reason) {
        problems.push({ field: "liveIdleTimeoutS", reason });
        values.liveIdleTimeoutS = formValues(view.settings).liveIdleTimeoutS;
      }
    }
    const idle = field("idleTimeoutMs");
    if (!handsFreeFieldShown("server_vad", values.handsFree, values.voiceDetection)) {
      // Hidden, it does not apply: semantic detection takes none; without hands-free the
      // saved value stays.
      values.idleTimeoutMs =
        values.voiceDetection === "semantic_vad" ? "" : formValues(view.settings).idleTimeoutMs;
    } else {
      const reason = optionalWholeNumberProblem(idle.value, idle.validity?.badInput);
      if (reason) {
        problems.push({ field: "idleTimeoutMs", reason });
        values.idleTimeoutMs = formValues(view.settings).idleTimeoutMs;
      }
    }
    // A view without the field has nothing to check: settingsFromForm leaves it out.
    const speed = field("speechSpeed");
    if ("speechSpeed" in view.settings) {
      if (!fieldApplies(speed.closest(".field").dataset, scopeValues(), view)) {
        // Hidden, it does not apply (the offline demo): the saved value stays.
        values.speechSpeed = formValues(view.settings).speechSpeed;
      } else {
        const reason = speechSpeedProblem(speed.value, speed.validity?.badInput);
        if (reason) {
          problems.push({ field: "speechSpeed", reason });
          values.speechSpeed = formValues(view.settings).speechSpeed;
        }
      }
    }
    for (const group of form.querySelectorAll("[data-model-scope]")) {
      if (fieldApplies(group.dataset, scopeValues(), view)) continue;
      // Hidden, the model chosen does not take it: the saved value stays for a model that does.
      for (const element of group.querySelectorAll("[name]")) {
        if (element.name in view.settings) values[element.name] = formValues(view.settings)[element.name];
      }
    }
    for (const [name, table, reset] of [
      ["prices", TOKEN_PRICES, "Published prices"],
      ["minutePrices", MINUTE_PRICES, "Published per-minute prices"],
    ]) {
      let rows = [];
      try {
        rows = JSON.parse(values[name] || "[]");
      } catch {
        rows = null;
      }
      const reason = rows === null ? `the table could not be read; press ${reset}` : priceTableProblem(rows, table);
      if (reason) {
        problems.push({ field: name, reason });
        values[name] = formValues(view.settings)[name];
      }
    }
    const budget = optionalAmountProblem(values.budgetUsd ?? "");
    if (budget) {
      problems.push({ field: "budgetUsd", reason: budget });
      values.budgetUsd = formValues(view.settings).budgetUsd;
    } else if (typeof values.budgetUsd === "string") {
      values.budgetUsd = values.budgetUsd.trim().replace(/^\$/, "");
    }
    values.dataFolder = dataFolderSetting(values.dataFolder, view.settings.dataFolder, view.dataFolderInUse);
    return { settings: settingsFromForm(values, view.settings), problems };
  }

  /** Opens the dialog; `focus` names a field to put the cursor in (e.g. "apiKey"). */
  async function open({ focus } = {}) {
    clearInvalid();
    say("");
    keyInput.value = "";
    try {
      view = await invoke(COMMANDS.getSettings);
    } catch (error) {
      showError(error);
      return;
    }
    render();
    if (view.notice) say(view.notice, "error");
    saved = snapshot();
    dialog.showModal();
    // WebKitGTK focuses the dialog's first field after showModal returns, autofocus or not:
    // the field asked for takes the focus once that has happened.
    const target = focus ? field(focus) : null;
    if (target) requestAnimationFrame(() => target.focus());
    await loadDevices();
  }

  /** Saves the settings and a typed key together, after any save asked for before it.
   * Resolves to whether it saved. */
  function save() {
    return inOrder(saveNow);
  }

  /** The key typed (not yet saved) for `provider`'s account, as Rust takes it, or null. */
  function typedKeyFor(provider) {
    const account = accountFor(provider);
    const typedKey = keyInput.value.trim();
    return account && typedKey && !keyInput.disabled ? { account, key: typedKey } : null;
  }

  async function saveNow() {
    clearInvalid();
    const { settings, problems } = readForm();
    if (problems.length) {
      // Show Rust's findings on the other fields with the form's own, all at once.
      let more = [];
      try {
        more = await invoke(COMMANDS.checkSettings, { settings });
      } catch {
        more = [];
      }
      showProblems([...problems, ...more]);
      return false;
    }
    const key = typedKeyFor(settings.provider);
    try {
      view = await invoke(COMMANDS.saveSettings, { settings, key });
    } catch (error) {
      showError(error);
      return false;
    }
    keyInput.value = "";
    // The settings are saved; variables typed for a tool server are kept in the keyring too.
    const secretsProblem = await toolServerList.keepTypedSecrets();
    render();
    saved = snapshot();
    await loadDevices();
    if (secretsProblem) {
      showProblems([{ field: "toolServers", reason: secretsProblem }]);
      return false;
    }
    say("Saved.");
    onSaved?.(view.settings);
    return true;
  }

  /** Calls the provider the form names, with the key typed there, without saving anything. */
  async function testConnection() {
    const button = dialog.querySelector("[data-action=test-connection]");
    const result = dialog.querySelector("[data-role=test-result]");
    clearInvalid();
    const { settings, problems } = readForm();
    if (problems.length) {
      showProblems(problems);
      return;
    }
    const key = typedKeyFor(settings.provider);
    button.disabled = true;
    result.dataset.kind = "info";
    result.textContent = "Calling the provider…";
    try {
      result.textContent = await invoke(COMMANDS.testConnection, { settings, key });
    } catch (error) {
      if (error?.problems?.length) {
        result.textContent = "";
        showProblems(error.problems);
      } else {
        result.dataset.kind = "error";
        result.textContent = describeError(error);
      }
    } finally {
      button.disabled = false;
    }
  }

  // The voice preview: one short reply in the chosen voice, from a call of its own.
  const previewButton = dialog.querySelector("[data-action=preview-voice]");
  const previewResult = dialog.querySelector("[data-role=voice-preview]");
  /** Counts previews, so the answer of one stopped or replaced never lands on the next. */
  let previewNumber = 0;
  let previewing = false;

  function showPreviewOff() {
    previewing = false;
    previewButton.textContent = "Hear this voice";
    previewButton.setAttribute("aria-pressed", "false");
  }

  async function previewVoice() {
    if (previewing) return stopPreview();
    clearInvalid();
    const { settings, problems } = readForm();
    if (problems.length) {
      showProblems(problems);
      return;
    }
    const number = ++previewNumber;
    previewing = true;
    previewButton.textContent = "Stop";
    previewButton.setAttribute("aria-pressed", "true");
    previewResult.dataset.kind = "info";
    previewResult.textContent = `Calling for a reply in ${settings.voice}…`;
    let sentence;
    let kind = "info";
    try {
      sentence = await invoke(COMMANDS.previewVoice, { settings, key: typedKeyFor(settings.provider) });
    } catch (error) {
      if (error?.problems?.length) {
        sentence = "";
        showProblems(error.problems);
      } else {
        sentence = describeError(error);
        kind = "error";
      }
    }
    if (number !== previewNumber) return;
    showPreviewOff();
    previewResult.dataset.kind = kind;
    previewResult.textContent = sentence;
  }

  async function stopPreview() {
    if (!previewing) return;
    previewNumber += 1;
    showPreviewOff();
    previewResult.dataset.kind = "info";
    previewResult.textContent = "Stopped.";
    try {
      await invoke(COMMANDS.stopVoicePreview);
    } catch {
      // The preview ends by itself, about 30 seconds after its reply was asked for.
    }
  }

  // The microphone test: the chosen microphone's level on a bar, until stopped or closed.
  const micTestButton = dialog.querySelector("[data-action=mic-test]");
  const micTestLevel = dialog.querySelector("[data-role=mic-test-level]");
  const micTestState = dialog.querySelector("[data-role=mic-test-state]");
  /** The number of the test running now, or null. */
  let micTest = null;

  function showMicTestOff(sentence = "", kind = "info") {
    micTest = null;
    micTestLevel.value = FLOOR_DBFS;
    micTestButton.textContent = "Test microphone";
    micTestButton.setAttribute("aria-pressed", "false");
    micTestState.dataset.kind = kind;
    micTestState.textContent = sentence;
  }

  function showMicTest(report) {
    if (report?.test !== micTest || micTest === null) return;
    if (report.kind === "level") {
      micTestLevel.value = Math.min(0, Math.max(FLOOR_DBFS, report.rmsDbfs));
    } else if (report.kind === "failed") {
      showMicTestOff(
        `The microphone could not be opened (${report.reason}): choose another in the list.`,
        "error",
      );
    } else {
      showMicTestOff();
    }
  }

  async function startMicTest() {
    micTestState.dataset.kind = "info";
    micTestState.textContent = "Speak: the bar follows your voice.";
    try {
      micTest = await invoke(COMMANDS.micTestStart, { device: field("inputDevice").value });
      micTestButton.textContent = "Stop test";
      micTestButton.setAttribute("aria-pressed", "true");
    } catch (error) {
      showMicTestOff(describeError(error), "error");
    }
  }

  async function stopMicTest() {
    if (micTest === null) return;
    showMicTestOff();
    try {
      await invoke(COMMANDS.micTestStop);
    } catch {
      // The test ends by itself after a minute.
    }
  }

  listen?.(EVENTS.micTest, (event) => showMicTest(event.payload));

  async function saveKey() {
    const account = accountFor(field("provider").value);
    if (!account) return;
    clearInvalid();
    try {
      const summary = await invoke(COMMANDS.setApiKey, { account, key: keyInput.value });
      keyInput.value = "";
      saved.apiKey = "";
      view.keys = view.keys.map((key) => (key.account === account ? summary : key));
      showProviderFields();
      say("The key is saved in your system keyring.");
    } catch (error) {
      showProblems([{ field: "apiKey", reason: describeError(error) }]);
    }
  }

  async function forgetKey() {
    const account = accountFor(field("provider").value);
    if (!account) return;
    try {
      const summary = await invoke(COMMANDS.forgetApiKey, { account });
      view.keys = view.keys.map((key) => (key.account === account ? summary : key));
      showProviderFields();
      say("The key was removed from your system keyring.");
    } catch (error) {
      showError(error);
    }
  }

  async function browse() {
    const dataFolder = field("dataFolder");
    try {
      const chosen = await invoke(COMMANDS.chooseDataFolder, { current: dataFolder.value.trim() || null });
      if (chosen) {
        dataFolder.value = chosen;
        dataFolder.dispatchEvent(new Event("input", { bubbles: true }));
      }
    } catch (error) {
      showProblems([{ field: "dataFolder", reason: describeError(error) }]);
    }
    dataFolder.focus();
  }

  /** Closes, asking first when something typed is not saved. */
  async function requestClose() {
    if (!unsaved() || !confirm) {
      dialog.close();
      return;
    }
    const choice = await confirm();
    if (choice === "discard") dialog.close();
    else if (choice === "save" && (await save())) dialog.close();
  }

  // The shortcut is set by pressing it; pasting or typing a name still works.
  field("globalShortcut").addEventListener("keydown", (event) => {
    const shortcut = shortcutFromKeys(event);
    if (shortcut === null) return;
    event.preventDefault();
    field("globalShortcut").value = shortcut;
    field("globalShortcut").dispatchEvent(new Event("input", { bubbles: true }));
  });
  field("provider").addEventListener("change", showProviderFields);
  field("handsFree").addEventListener("change", showFieldsThatApply);
  field("voiceDetection").addEventListener("change", showFieldsThatApply);
  for (const name of ["model", "transcriptionModel"]) {
    field(name).addEventListener("input", () => {
      showFieldsThatApply();
      showModelWarnings();
      if (name === "model") fillVoices(field("model").value, field("voice").value);
    });
  }
  dialog.querySelector("[data-action=save-key]").addEventListener("click", saveKey);
  dialog.querySelector("[data-action=test-connection]").addEventListener("click", testConnection);
  previewButton.addEventListener("click", previewVoice);
  micTestButton.addEventListener("click", () => (micTest === null ? startMicTest() : stopMicTest()));
  // A new choice of microphone is tested at once; closing the dialog ends the test.
  field("inputDevice").addEventListener("change", () => {
    if (micTest !== null) stopMicTest().then(startMicTest);
  });
  dialog.addEventListener("close", stopMicTest);
  dialog.addEventListener("close", stopPreview);
  dialog.querySelector("[data-action=forget-key]").addEventListener("click", forgetKey);
  dialog.querySelector("[data-action=browse]").addEventListener("click", browse);
  dialog.querySelector("[data-action=close]").addEventListener("click", requestClose);
  // Escape: the same as Close, never a silent discard.
  dialog.addEventListener("cancel", (event) => {
    event.preventDefault();
    requestClose();
  });
  // Save is the only submit button, so Enter in a field saves.
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    save();
  });
  return { open };
}

/** The page's own question, `#settings-confirm`, when it has one. */
function defaultConfirm(dialog) {
  const question = dialog.ownerDocument?.getElementById("settings-confirm");
  return question ? createConfirm(question) : null;
}

/**
 * Wires the "keep your changes?" question. Resolves to "keep", "discard" or "save"; Escape
 * keeps editing.
 */
export function createConfirm(dialog) {
  return () =>
    new Promise((resolve) => {
      dialog.returnValue = "keep";
      dialog.addEventListener("close", () => resolve(dialog.returnValue || "keep"), { once: true });
      dialog.showModal();
    });
}
