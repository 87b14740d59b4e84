// The settings dialog: shows what Rust holds, sends back what the user changed.
//
// Rust owns the settings (validation, the file, the keyring); this module only maps them to and
// from the form and shows Rust's answers. An API key goes one way: typed here, sent to Rust,
// stored in the OS keyring. What comes back is a summary (where the key comes from and its last
// four characters), never the key.

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

/** A sentence about the key in use, from a key summary. */
export function describeKey(summary) {
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
      sentence = summary.environmentVariable
        ? `No key saved. Add one here, or set ${summary.environmentVariable}.`
        : "No key saved (the server may not need one).";
  }
  if (summary.keyringProblem) sentence += ` The keyring could not be read: ${summary.keyringProblem}`;
  return sentence;
}

const NUMBER_FIELDS = new Set(["pushToTalkTailMs", "preRollMs"]);
const BOOLEAN_FIELDS = new Set(["handsFree", "warmMic"]);

/**
 * Reads the form's fields into a settings object, starting from `base` so fields the form does
 * not show are kept as they were.
 * @param {Record<string, string | boolean>} values field name → input value (checkbox: boolean)
 * @param {object} base the settings last received from Rust
 */
export function settingsFromForm(values, base) {
  const settings = { ...base };
  for (const [name, value] of Object.entries(values)) {
    if (!(name in base) && name !== "retentionDays") continue;
    if (NUMBER_FIELDS.has(name)) {
      const number = Number(String(value).trim());
      // A non-number is sent as is; Rust refuses it and names the field.
      settings[name] = Number.isFinite(number) && String(value).trim() !== "" ? number : value;
    } else if (BOOLEAN_FIELDS.has(name)) {
      settings[name] = Boolean(value);
    } else if (name === "retentionDays") {
      settings[name] = value === "" || value === "forever" ? null : Number(value);
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
    if (name === "retentionDays") values[name] = value == null ? "forever" : String(value);
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
  for (const device of devices) {
    options.push({ value: device.id, label: device.isDefault ? `${device.name} (default)` : device.name });
  }
  if (chosen && !devices.some((device) => device.id === chosen)) {
    options.push({ value: chosen, label: `${chosen} (not connected)` });
  }
  return options;
}

/** Wires the dialog. `invoke` is Tauri's. */
export function createSettingsDialog(dialog, invoke, { onSaved } = {}) {
  const form = dialog.querySelector("form");
  const message = dialog.querySelector("[data-role=message]");
  const keyState = dialog.querySelector("[data-role=key-state]");
  const keyInput = form.elements.namedItem("apiKey");
  let view = null;

  function field(name) {
    return form.elements.namedItem(name);
  }

  function say(text, kind = "info") {
    message.textContent = text;
    message.dataset.kind = kind;
  }

  function clearInvalid() {
    for (const element of form.querySelectorAll("[aria-invalid=true]")) {
      element.removeAttribute("aria-invalid");
    }
  }

  function showProviderFields() {
    const provider = field("provider").value;
    for (const group of form.querySelectorAll("[data-provider]")) {
      group.hidden = !group.dataset.provider.split(" ").includes(provider);
    }
    const account = accountFor(provider);
    const summary = view?.keys.find((key) => key.account === account);
    keyState.textContent = describeKey(summary);
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

  function render() {
    const values = formValues(view.settings);
    fill(
      field("voice"),
      view.voices.map((voice) => ({ value: voice, label: voice })),
      view.settings.voice,
    );
    for (const [name, value] of Object.entries(values)) {
      const element = field(name);
      // The device pickers are filled when the device list arrives.
      if (!element || name === "inputDevice" || name === "outputDevice") continue;
      if (element.type === "checkbox") element.checked = value;
      else element.value = value;
    }
    field("dataFolder").placeholder = view.dataFolderInUse ?? "";
    dialog.querySelector("[data-role=config-file]").textContent = view.configFile;
    showProviderFields();
  }

  async function loadDevices() {
    try {
      const devices = await invoke("list_devices");
      fill(field("inputDevice"), deviceOptions(devices.inputs, view.settings.inputDevice), view.settings.inputDevice);
      fill(field("outputDevice"), deviceOptions(devices.outputs, view.settings.outputDevice), view.settings.outputDevice);
      if (devices.problem) say(`Some devices could not be listed: ${devices.problem}`, "error");
    } catch (error) {
      say(`The devices could not be listed: ${error.message ?? error}`, "error");
    }
  }

  function readForm() {
    const values = {};
    for (const element of form.elements) {
      if (!element.name || element.name === "apiKey") continue;
      values[element.name] = element.type === "checkbox" ? element.checked : element.value;
    }
    return settingsFromForm(values, view.settings);
  }

  function showError(error) {
    const text = error?.message ?? String(error);
    say(text, "error");
    if (error?.field) {
      const element = field(error.field);
      if (element) {
        element.setAttribute("aria-invalid", "true");
        element.focus();
      }
    }
  }

  async function open() {
    clearInvalid();
    say("");
    keyInput.value = "";
    try {
      view = await invoke("get_settings");
    } catch (error) {
      showError(error);
      return;
    }
    render();
    if (view.notice) say(view.notice, "error");
    dialog.showModal();
    await loadDevices();
  }

  async function save() {
    clearInvalid();
    try {
      view = await invoke("save_settings", { settings: readForm() });
      render();
      say("Saved.");
      onSaved?.(view.settings);
    } catch (error) {
      showError(error);
    }
  }

  async function saveKey() {
    const account = accountFor(field("provider").value);
    if (!account) return;
    try {
      const summary = await invoke("set_api_key", { account, key: keyInput.value });
      keyInput.value = "";
      view.keys = view.keys.map((key) => (key.account === account ? summary : key));
      showProviderFields();
      say("The key is saved in your system keyring.");
    } catch (error) {
      showError({ ...error, field: "apiKey", message: error?.message ?? String(error) });
    }
  }

  async function forgetKey() {
    const account = accountFor(field("provider").value);
    if (!account) return;
    try {
      const summary = await invoke("forget_api_key", { account });
      view.keys = view.keys.map((key) => (key.account === account ? summary : key));
      showProviderFields();
      say("The key was removed from your system keyring.");
    } catch (error) {
      showError(error);
    }
  }

  field("provider").addEventListener("change", showProviderFields);
  dialog.querySelector("[data-action=save-key]").addEventListener("click", saveKey);
  dialog.querySelector("[data-action=forget-key]").addEventListener("click", forgetKey);
  form.addEventListener("submit", (event) => {
    // "Close" closes; "Save" stays open to show the answer.
    if (event.submitter?.value === "save") {
      event.preventDefault();
      save();
    }
  });
  return { open };
}
