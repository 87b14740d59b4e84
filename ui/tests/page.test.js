import { test } from "node:test";
import assert from "node:assert/strict";
import { createPageState } from "../page.js";

test("before Rust has said anything the page shows no known state and the hold key", () => {
  const page = createPageState();
  assert.equal(page.get().status.state, "unknown");
  assert.deepEqual(page.get().talkMode, { handsFree: false, pressMode: "hold" });
  assert.equal(page.listening(), false);
});

test("a status older than the one shown is stale and changes nothing", () => {
  const page = createPageState();
  assert.equal(page.showStatus({ seq: 3, state: "ready", detail: "Ready" }), true);
  assert.equal(page.showStatus({ seq: 2, state: "connecting", detail: "Connecting…" }), false);
  assert.equal(page.get().status.detail, "Ready");
  assert.equal(page.showStatus({ seq: 4, state: "listening", detail: "Listening…" }), true);
  assert.equal(page.listening(), true);
});

test("the page's own status for a failed command is shown and does not forget the newest seq", () => {
  const page = createPageState();
  page.showStatus({ seq: 5, state: "ready", detail: "Ready" });
  assert.equal(page.showStatus({ state: "error", detail: "Something went wrong: no key" }), true);
  assert.equal(page.get().status.state, "error");
  assert.equal(
    page.showStatus({ seq: 4, state: "connecting", detail: "Connecting…" }),
    false,
    "a status older than the newest from Rust is still stale"
  );
  assert.equal(page.showStatus({ seq: 6, state: "ready", detail: "Ready" }), true);
});

test("the talk mode keeps only what the settings say of talking", () => {
  const page = createPageState();
  page.setTalkMode({ handsFree: true, pressMode: "toggle", voice: "marin" });
  assert.deepEqual(page.get().talkMode, { handsFree: true, pressMode: "toggle" });
});

test("the latest health and microphone reading are kept until replaced", () => {
  const page = createPageState();
  page.setHealth({ level: "good" });
  page.setMicReading({ direction: "input", rmsDbfs: -30 });
  page.setMicReading({ direction: "input", rmsDbfs: -20 });
  assert.deepEqual(page.get().health, { level: "good" });
  assert.equal(page.get().micReading.rmsDbfs, -20);
});
