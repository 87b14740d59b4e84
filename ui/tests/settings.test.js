import { test } from "node:test";
import assert from "node:assert/strict";
import { accountFor, describeKey, deviceOptions, formValues, settingsFromForm } from "../settings.js";

const base = {
  provider: "automatic",
  model: "gpt-realtime",
  voice: "marin",
  pushToTalkTailMs: 200,
  preRollMs: 300,
  warmMic: true,
  handsFree: false,
  retentionDays: null,
  inputDevice: "",
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
