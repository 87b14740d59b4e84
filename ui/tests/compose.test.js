import { test } from "node:test";
import assert from "node:assert/strict";
import { composeKey, whyNotSent } from "../compose.js";

test("Enter alone sends; Shift+Enter and modifiers leave the key to the field", () => {
  assert.equal(composeKey({ key: "Enter" }), "send");
  assert.equal(composeKey({ key: "Enter", shiftKey: true }), null);
  assert.equal(composeKey({ key: "Enter", ctrlKey: true }), null);
  assert.equal(composeKey({ key: "a" }), null);
});

test("Enter while an input method composes a character does not send", () => {
  assert.equal(composeKey({ key: "Enter", isComposing: true }), null);
});

test("a message goes out during a call, and waits for a call being placed or brought back", () => {
  for (const state of ["connecting", "ready", "listening", "thinking", "speaking", "reconnecting"]) {
    assert.equal(whyNotSent(state, "Hello"), null, state);
  }
});

test("with no call, or nothing typed, the sentence says what to do", () => {
  assert.equal(whyNotSent("error", "Hello"), "Not connected: press Connect, then send your message.");
  assert.equal(whyNotSent("not_connected", "Hello"), "Not connected: press Connect, then send your message.");
  assert.equal(whyNotSent("ready", "  \n"), "Type a message first, then press Enter.");
});
