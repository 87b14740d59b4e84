import { test } from "node:test";
import assert from "node:assert/strict";
import { attachedNote, composeKey, imageFiles, screenshotLabel, whyNotSent } from "../compose.js";

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
  assert.equal(whyNotSent("ready", "  \n"), "Type a message or attach a picture first, then press Enter.");
});

test("a picture alone is a message to send; with no call it waits in the field like text", () => {
  assert.equal(whyNotSent("ready", "", 1), null);
  assert.equal(whyNotSent("error", "", 1), "Not connected: press Connect, then send your message.");
});

test("the note says a picture is attached, and the size it goes at when it was made smaller", () => {
  const photo = { name: "cat.jpg", widthPx: 1024, heightPx: 768, sourceWidthPx: 4000, sourceHeightPx: 3000 };
  assert.equal(attachedNote(photo), "cat.jpg is attached, to be sent at 1024 × 768 (from 4000 × 3000).");
  const small = { name: "", widthPx: 300, heightPx: 200, sourceWidthPx: 300, sourceHeightPx: 200 };
  assert.equal(attachedNote(small), "The picture is attached.");
});

test("of what is pasted or dropped, only image files are attached", () => {
  const file = (name) => ({ name });
  const items = [
    { kind: "string", type: "text/plain", getAsFile: () => null },
    { kind: "file", type: "image/png", getAsFile: () => file("shot.png") },
    { kind: "file", type: "application/pdf", getAsFile: () => file("paper.pdf") },
    { kind: "file", type: "image/jpeg", getAsFile: () => null },
  ];
  assert.deepEqual(imageFiles(items).map((f) => f.name), ["shot.png"]);
  assert.deepEqual(imageFiles(undefined), []);
});

test("the screenshot menu names the screen, each window, or the desktop's own dialog", () => {
  assert.equal(screenshotLabel({ kind: "screen" }), "The whole screen");
  assert.equal(screenshotLabel({ kind: "window", id: 7, title: "Notes" }), "Notes");
  assert.equal(screenshotLabel({ kind: "desktop" }), "Choose in the desktop's screenshot dialog…");
});
