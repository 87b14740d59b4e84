import { test } from "node:test";
import assert from "node:assert/strict";
import {
  oneAfterAnother,
  accountFor,
  changedFields,
  deprecationWarning,
  fieldApplies,
  keywordsFromText,
  modelOptions,
  modelScopeShown,
  isLiveModel,
  voicesFor,
  speechSpeedProblem,
  dataFolderField,
  dataFolderSetting,
  shortcutHelpText,
  closeToTrayHelpText,
  describeKey,
  deviceOptions,
  fieldErrorText,
  formValues,
  handsFreeFieldShown,
  keyringMissingText,
  optionalAmountProblem,
  optionalWholeNumberProblem,
  settingsFromForm,
  shortcutFromKeys,
  wholeNumberProblem,
} from "../settings.js";

const base = {
  provider: "automatic",
  model: "gpt-realtime-2.1",
  voice: "marin",
  transcriptionModel: "gpt-realtime-whisper",
  reasoningEffort: null,
  parallelToolCalls: true,
  truncationRetentionRatio: null,
  speechSpeed: 1,
  transcriptionDelay: null,
  transcriptionKeywords: [],
  minutePrices: [],
  keptDeprecatedModels: ["gpt-realtime"],
  publishedPricesOf: "2026-12-04",
  pushToTalkTailMs: 200,
  preRollMs: 300,
  sessionLimitMinutes: 60,
  warmMic: true,
  handsFree: false,
  retentionDays: null,
  inputDevice: "",
  voiceDetection: "server_vad",
  eagerness: "auto",
  idleTimeoutMs: null,
  noiseReduction: "off",
};

test("form values read back into the same settings", () => {
  assert.deepEqual(settingsFromForm(formValues(base), base), base);
});

test("numbers, checkboxes and retention are read as their types", () => {
  const settings = settingsFromForm(
    { pushToTalkTailMs: "450", warmMic: false, retentionDays: "30", voice: "cedar" },
    base,
  );
  assert.equal(settings.pushToTalkTailMs, 450);
  assert.equal(settingsFromForm({ sessionLimitMinutes: " 30 " }, base).sessionLimitMinutes, 30);
  assert.equal(settings.warmMic, false);
  assert.equal(settings.retentionDays, 30);
  assert.equal(settings.voice, "cedar");
  assert.equal(settingsFromForm({ retentionDays: "forever" }, base).retentionDays, null);
});

test("a number field that is not a number is passed on for Rust to refuse", () => {
  assert.equal(settingsFromForm({ preRollMs: "lots" }, base).preRollMs, "lots");
  assert.equal(settingsFromForm({ preRollMs: "" }, base).preRollMs, "");
});

test("fields the settings do not have are not added", () => {
  assert.equal("apiKey" in settingsFromForm({ apiKey: "sk-secret" }, base), false);
});

test("each provider reads its key from its own account", () => {
  assert.equal(accountFor("automatic"), "openai");
  assert.equal(accountFor("openai"), "openai");
  assert.equal(accountFor("azure"), "azure");
  assert.equal(accountFor("custom"), "custom");
  assert.equal(accountFor("local"), null);
});

test("a key is described by where it comes from and its last four characters only", () => {
  assert.equal(
    describeKey({ source: "keyring", lastFour: "9xQz", environmentVariable: "OPENAI_API_KEY" }),
    "A key is saved in your system keyring (ending in 9xQz).",
  );
  assert.equal(
    describeKey({ source: "environment", lastFour: "abcd", environmentVariable: "OPENAI_API_KEY" }),
    "Using the key from OPENAI_API_KEY (ending in abcd).",
  );
  assert.match(
    describeKey({ source: "none", lastFour: null, environmentVariable: "OPENAI_API_KEY", keyringProblem: "no Secret Service" }),
    /No key saved.*OPENAI_API_KEY.*no Secret Service/,
  );
});

test("a chosen device that is not connected stays in the picker, marked", () => {
  const devices = [
    { id: "mic-a", name: "Desk mic", isDefault: true },
    { id: "mic-b", name: "Headset", isDefault: false },
  ];
  assert.deepEqual(deviceOptions(devices, "mic-b"), [
    { value: "", label: "System default" },
    { value: "mic-a", label: "Desk mic (default)" },
    { value: "mic-b", label: "Headset" },
  ]);
  assert.deepEqual(deviceOptions(devices, "usb-gone").at(-1), {
    value: "usb-gone",
    label: "usb-gone (not connected)",
  });
});

test("the idle timeout is a number, empty is none, and anything else goes to Rust to refuse", () => {
  assert.equal(settingsFromForm({ idleTimeoutMs: "12000" }, base).idleTimeoutMs, 12000);
  assert.equal(settingsFromForm({ idleTimeoutMs: " " }, base).idleTimeoutMs, null);
  assert.equal(settingsFromForm({ idleTimeoutMs: "soon" }, base).idleTimeoutMs, "soon");
  assert.equal(formValues({ ...base, idleTimeoutMs: null }).idleTimeoutMs, "");
});

test("the voice detection choices are read as the API names them", () => {
  const settings = settingsFromForm(
    { voiceDetection: "semantic_vad", eagerness: "high", noiseReduction: "far_field" },
    base,
  );
  assert.equal(settings.voiceDetection, "semantic_vad");
  assert.equal(settings.eagerness, "high");
  assert.equal(settings.noiseReduction, "far_field");
});

test("two devices with one name are told apart by their system names", () => {
  const devices = [
    { id: "pulseaudio:alsa_input.usb-A", name: "USB Audio", isDefault: false },
    { id: "pulseaudio:alsa_input.usb-B", name: "USB Audio", isDefault: true },
    { id: "pulseaudio:alsa_input.pci", name: "Built-in Audio", isDefault: false },
  ];
  assert.deepEqual(
    deviceOptions(devices, "").map((option) => option.label),
    ["System default", "USB Audio (alsa_input.usb-A)", "USB Audio (alsa_input.usb-B) (default)", "Built-in Audio"],
  );
});

test("without a keyring the key's line says so once, and what to do instead", () => {
  const summary = { source: "environment", lastFour: "abcd", environmentVariable: "OPENAI_API_KEY", keyringProblem: "no Secret Service" };
  assert.equal(describeKey(summary, true), "Using the key from OPENAI_API_KEY (ending in abcd).");
  assert.equal(describeKey({ ...summary, source: "none", lastFour: null }, true), "No key saved.");
  assert.equal(
    keyringMissingText("OPENAI_API_KEY"),
    "No keyring is running, so a key cannot be saved here: start your desktop's keyring and restart Walkie, or set OPENAI_API_KEY before starting Walkie.",
  );
  assert.equal(
    keyringMissingText(null),
    "No keyring is running, so a key cannot be saved here: start your desktop's keyring and restart Walkie.",
  );
});

test("the data folder field shows the folder in use when none is set, and saves no change as none", () => {
  assert.deepEqual(dataFolderField("", "/home/me/.local/share/walkie"), {
    value: "/home/me/.local/share/walkie",
    note: "",
  });
  assert.equal(dataFolderSetting("/home/me/.local/share/walkie", "", "/home/me/.local/share/walkie"), "");
  assert.equal(dataFolderSetting(" /srv/talks ", "", "/home/me/.local/share/walkie"), "/srv/talks");
  assert.deepEqual(dataFolderField("/srv/talks", "/home/me/.local/share/walkie"), {
    value: "/srv/talks",
    note: "Walkie saves in /home/me/.local/share/walkie until it restarts.",
  });
  assert.equal(dataFolderSetting("/srv/talks", "/srv/talks", "/old"), "/srv/talks");
});

test("the shortcut's help says where it is heard, and what reaches Walkie from any app on Wayland", () => {
  assert.equal(
    shortcutHelpText("everyApp"),
    "Talk while another window has the focus. Press the keys here to set it; Backspace clears it.",
  );
  const wayland = shortcutHelpText("thisWindow");
  assert.match(wayland, /^In this Wayland session it works only while Walkie has the focus/);
  assert.match(wayland, /bind walkie --toggle in your desktop's keyboard shortcuts/);
  assert.match(
    shortcutHelpText("portal", "Ctrl+Alt+K"),
    /^Your desktop holds Ctrl\+Alt\+K for Walkie in every app; its keyboard settings can change it\./,
  );
  assert.match(shortcutHelpText("portal", null), /^Your desktop can hold this shortcut for Walkie in every app/);
});

test("closing to the tray says what brings the window back, or that no tray shows and closing quits", () => {
  assert.match(closeToTrayHelpText(true), /^The window hides and the call goes on; Show Walkie in the tray menu/);
  assert.match(closeToTrayHelpText(false), /^No tray shows Walkie in this session .* so closing the window still quits it\.$/);
});

test("a number field that holds no whole number says what to type", () => {
  assert.equal(wholeNumberProblem("300"), null);
  assert.equal(wholeNumberProblem(" 0 "), null);
  for (const bad of ["", "lots", "12.5", "-3"]) {
    assert.equal(wholeNumberProblem(bad), "enter a whole number of milliseconds, e.g. 300", bad);
  }
  assert.equal(wholeNumberProblem("", true), "enter a whole number of milliseconds, e.g. 300");
  assert.equal(wholeNumberProblem("1.5", false, "minutes, e.g. 60"), "enter a whole number of minutes, e.g. 60");
});

test("only the fields whose values changed count as unsaved", () => {
  const before = { voice: "marin", warmMic: false, apiKey: "" };
  assert.deepEqual(changedFields(before, { ...before }), []);
  assert.deepEqual(changedFields(before, { ...before, apiKey: "sk-typed", warmMic: true }), ["warmMic", "apiKey"]);
});

test("an error under a field starts with the field's label", () => {
  assert.equal(fieldErrorText("Server address", "use https://"), "Server address: use https://");
});

test("the budget may be empty, else it is an amount in dollars above zero", () => {
  for (const good of ["", " 0.50 ", "2", "$1.25", ".5"]) {
    assert.equal(optionalAmountProblem(good), null, good);
  }
  for (const bad of ["cheap", "0", "-1", "1,50", "1.2.3"]) {
    assert.equal(
      optionalAmountProblem(bad),
      "enter an amount in US dollars, e.g. 0.50, or leave it empty for no budget",
      bad,
    );
  }
  const base = { budgetUsd: null, model: "gpt-realtime" };
  assert.equal(settingsFromForm({ budgetUsd: "0.5" }, base).budgetUsd, 0.5);
  assert.equal(settingsFromForm({ budgetUsd: "" }, base).budgetUsd, null);
  assert.equal(formValues({ budgetUsd: 0.5 }).budgetUsd, "0.5");
  assert.equal(formValues({ budgetUsd: null }).budgetUsd, "");
});

test("answering typed messages in text is a switch", () => {
  const base = { typedRepliesInText: false };
  assert.equal(settingsFromForm({ typedRepliesInText: true }, base).typedRepliesInText, true);
  assert.equal(formValues({ typedRepliesInText: true }).typedRepliesInText, true);
});

test("the idle timeout may be empty, else it must be a whole number", () => {
  assert.equal(optionalWholeNumberProblem(""), null);
  assert.equal(optionalWholeNumberProblem(" 12000 "), null);
  for (const bad of ["soon", "12.5", "-3"]) {
    assert.equal(
      optionalWholeNumberProblem(bad),
      "enter a whole number of milliseconds, e.g. 10000, or leave it empty to wait for you",
      bad,
    );
  }
  // A number field holding letters hands over "" with badInput set.
  assert.notEqual(optionalWholeNumberProblem("", true), null);
});

test("hands-free fields are shown only with hands-free on and the detection they belong to", () => {
  for (const shownFor of ["any", "server_vad", "semantic_vad"]) {
    assert.equal(handsFreeFieldShown(shownFor, false, "server_vad"), false, shownFor);
  }
  assert.equal(handsFreeFieldShown("any", true, "semantic_vad"), true);
  assert.equal(handsFreeFieldShown("server_vad", true, "server_vad"), true);
  assert.equal(handsFreeFieldShown("server_vad", true, "semantic_vad"), false);
  assert.equal(handsFreeFieldShown("semantic_vad", true, "semantic_vad"), true);
  assert.equal(handsFreeFieldShown("semantic_vad", true, "server_vad"), false);
});

test("a shortcut is set by pressing it, in the words the shortcut parser takes", () => {
  const press = (code, mods = {}) => shortcutFromKeys({ code, ...mods });
  assert.equal(press("Space", { ctrlKey: true, altKey: true }), "Ctrl+Alt+Space");
  assert.equal(press("KeyK", { ctrlKey: true, shiftKey: true }), "Ctrl+Shift+K");
  assert.equal(press("Digit1", { metaKey: true }), "Super+1");
  assert.equal(press("F9"), "F9", "a function key alone is a shortcut");
  assert.equal(press("KeyW"), "W");
  assert.equal(press("ControlLeft", { ctrlKey: true }), null, "a modifier waits for its key");
  assert.equal(press("Backspace"), "", "Backspace clears");
  assert.equal(press("Delete"), "");
  assert.equal(press("Backspace", { ctrlKey: true }), "Ctrl+Backspace");
  assert.equal(press("Tab"), null, "Tab moves on");
  assert.equal(press("Escape"), null, "Escape is the dialog's");
});

test("saves run one after another in the order asked, a slow first one included", async () => {
  const inOrder = oneAfterAnother();
  const events = [];
  let finishFirst;
  const first = inOrder(async () => {
    events.push("first starts");
    await new Promise((resolve) => (finishFirst = resolve));
    events.push("first ends");
    throw new Error("refused");
  });
  const second = inOrder(async () => {
    events.push("second starts");
    return "saved";
  });
  await Promise.resolve();
  assert.deepEqual(events, ["first starts"], "the second waits for the first");
  finishFirst();
  await assert.rejects(first, /refused/);
  assert.equal(await second, "saved", "a refused save does not stop the next");
  assert.deepEqual(events, ["first starts", "first ends", "second starts"]);
});

const view = {
  voices: ["alloy", "cedar", "marin"],
  liveModels: ["gpt-live-1", "gpt-live-1.1"],
  liveVoices: ["alloy", "beacon", "cedar", "marin", "vesper"],
  reasoningModels: ["gpt-realtime-2", "gpt-realtime-2.1", "gpt-realtime-2.1-mini"],
  transcriptionDelayModels: ["gpt-realtime-whisper"],
  transcriptionKeywordModels: ["gpt-transcribe", "gpt-live-transcribe"],
};
const deprecatedModels = [
  { model: "gpt-realtime", shutdownOn: "2027-01-20", replacement: "gpt-realtime-2.1" },
  { model: "whisper-1", shutdownOn: "2027-02-26", replacement: null },
];

test("the new session controls read as their types, empty choices as the model's default", () => {
  const settings = settingsFromForm(
    {
      reasoningEffort: "low",
      parallelToolCalls: false,
      truncationRetentionRatio: "0.8",
      speechSpeed: " 1.25 ",
      transcriptionDelay: "",
      transcriptionKeywords: " Walkie, , PipeWire ,Dr. Okafor",
    },
    base,
  );
  assert.equal(settings.reasoningEffort, "low");
  assert.equal(settings.parallelToolCalls, false);
  assert.equal(settings.truncationRetentionRatio, 0.8);
  assert.equal(settings.speechSpeed, 1.25);
  assert.equal(settings.transcriptionDelay, null);
  assert.deepEqual(settings.transcriptionKeywords, ["Walkie", "PipeWire", "Dr. Okafor"]);
  assert.equal(settingsFromForm({ truncationRetentionRatio: "" }, base).truncationRetentionRatio, null);
  assert.equal(formValues({ ...base, transcriptionKeywords: ["a", "b c"] }).transcriptionKeywords, "a, b c");
});

test("what Rust keeps for itself is never written by the form", () => {
  assert.equal("keptDeprecatedModels" in formValues(base), false);
  const settings = settingsFromForm({ keptDeprecatedModels: "[]", publishedPricesOf: "" }, base);
  assert.deepEqual(settings.keptDeprecatedModels, ["gpt-realtime"]);
  assert.equal(settings.publishedPricesOf, "2026-12-04");
});

test("keywords are split at commas and trimmed, the empty ones dropped", () => {
  assert.deepEqual(keywordsFromText(""), []);
  assert.deepEqual(keywordsFromText(" one ,two,, three "), ["one", "two", "three"]);
  assert.deepEqual(keywordsFromText(["kept ", ""]), ["kept"]);
});

test("reasoning fields show for reasoning models only, transcription ones for the models that take them", () => {
  assert.equal(modelScopeShown("reasoning", { model: " gpt-realtime-2.1 " }, view), true);
  assert.equal(modelScopeShown("reasoning", { model: "gpt-realtime-1.5" }, view), false);
  assert.equal(modelScopeShown("transcription-delay", { transcriptionModel: "gpt-realtime-whisper" }, view), true);
  assert.equal(modelScopeShown("transcription-delay", { transcriptionModel: "gpt-transcribe" }, view), false);
  assert.equal(modelScopeShown("transcription-keywords", { transcriptionModel: "gpt-transcribe" }, view), true);
  assert.equal(modelScopeShown("transcription-keywords", { transcriptionModel: "" }, view), false);
  assert.equal(modelScopeShown("no-such-scope", { model: "gpt-realtime-2.1" }, view), false);
});

test("a GPT-Live model shows its own fields and voices and hides the Realtime API's", () => {
  assert.equal(isLiveModel(" gpt-live-1.1 ", view), true);
  assert.equal(isLiveModel("gpt-live-2", view), true, "a newer one by its name");
  assert.equal(isLiveModel("gpt-realtime-2.1", view), false);
  assert.equal(modelScopeShown("live", { model: "gpt-live-1" }, view), true);
  assert.equal(modelScopeShown("not-live", { model: "gpt-live-1" }, view), false);
  assert.equal(modelScopeShown("not-live", { model: "gpt-realtime-2.1" }, view), true);
  assert.equal(
    modelScopeShown("transcription-delay", { model: "gpt-live-1.1", transcriptionModel: "gpt-realtime-whisper" }, view),
    false,
    "GPT-Live transcribes the user itself",
  );
  assert.deepEqual(voicesFor("gpt-live-1.1", view), view.liveVoices);
  assert.deepEqual(voicesFor("gpt-realtime-2.1", view), view.voices);
  assert.equal(
    optionalWholeNumberProblem("a minute", false, "seconds, e.g. 60", "never pause"),
    "enter a whole number of seconds, e.g. 60, or leave it empty to never pause",
  );
});

test("a field shows only when its provider, hands-free and model scopes all allow it", () => {
  const form = { provider: "openai", handsFree: false, voiceDetection: "server_vad", model: "gpt-realtime-2.1" };
  assert.equal(fieldApplies({ provider: "automatic openai", modelScope: "reasoning" }, form, view), true);
  assert.equal(fieldApplies({ provider: "local", modelScope: "reasoning" }, form, view), false);
  assert.equal(fieldApplies({ modelScope: "reasoning" }, { ...form, model: "gpt-realtime" }, view), false);
  assert.equal(fieldApplies({ handsFree: "any" }, form, view), false);
  assert.equal(fieldApplies({}, form, view), true);
});

test("a model that shuts down is warned of with its date and what to choose instead", () => {
  assert.equal(
    deprecationWarning("model", " gpt-realtime ", deprecatedModels),
    "gpt-realtime shuts down on 2027-01-20: choose gpt-realtime-2.1 to keep Walkie answering after that.",
  );
  assert.equal(
    deprecationWarning("transcriptionModel", "whisper-1", deprecatedModels),
    "whisper-1 shuts down on 2027-02-26: choose another model to keep your speech transcribed after that.",
  );
  assert.equal(deprecationWarning("model", "gpt-realtime-2.1", deprecatedModels), "");
  assert.equal(deprecationWarning("model", "gpt-realtime", undefined), "");
});

test("the model picker labels each model that shuts down with its date, the others plainly", () => {
  assert.deepEqual(modelOptions(["gpt-realtime-2.1", "gpt-realtime"], deprecatedModels), [
    { value: "gpt-realtime-2.1", label: null },
    { value: "gpt-realtime", label: "shuts down 2027-01-20" },
  ]);
  assert.deepEqual(modelOptions(undefined, deprecatedModels), []);
});

test("the speaking speed is a number from 0.25 to 1.5, and the problem says so", () => {
  for (const speed of ["0.25", "1", " 1.5 ", ".5"]) assert.equal(speechSpeedProblem(speed), null, speed);
  for (const speed of ["0.2", "1.55", "", "fast", "-1", "1e0"]) {
    assert.equal(speechSpeedProblem(speed), "enter 0.25 to 1.5 (1 is normal)", speed);
  }
  assert.equal(speechSpeedProblem("1", true), "enter 0.25 to 1.5 (1 is normal)", "what the browser could not read");
});
