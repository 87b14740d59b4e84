import { test } from "node:test";
import assert from "node:assert/strict";
import { createPushToTalk, isCancelKey, isTalkKey } from "../push-to-talk.js";

function recorder() {
  const changes = [];
  return { changes, talk: createPushToTalk((pressed) => changes.push(pressed)) };
}

test("a press and its release each report one change", () => {
  const { changes, talk } = recorder();
  assert.equal(talk.press("key"), true);
  assert.equal(talk.pressed, true);
  assert.equal(talk.release("key"), true);
  assert.deepEqual(changes, [true, false]);
});

test("a second source cannot press again or release the first one's press", () => {
  const { changes, talk } = recorder();
  talk.press("pointer");
  assert.equal(talk.press("key"), false);
  assert.equal(talk.release("key"), false);
  assert.equal(talk.pressed, true);
  talk.release("pointer");
  assert.deepEqual(changes, [true, false]);
});

test("a release without a press changes nothing", () => {
  const { changes, talk } = recorder();
  assert.equal(talk.release("pointer"), false);
  assert.deepEqual(changes, []);
});

test("losing focus releases whichever source held the press", () => {
  const { changes, talk } = recorder();
  talk.press("key");
  assert.equal(talk.releaseAll(), true);
  assert.equal(talk.releaseAll(), false);
  assert.deepEqual(changes, [true, false]);
});

const element = (tagName, extra = {}) => ({ tagName, closest: () => null, ...extra });

test("Space on the page or a button is the talk key", () => {
  assert.equal(isTalkKey({ code: "Space", key: " ", target: element("BODY") }), true);
  assert.equal(isTalkKey({ code: "Space", key: " ", target: element("BUTTON") }), true);
});

test("other keys are not the talk key", () => {
  assert.equal(isTalkKey({ code: "Enter", key: "Enter", target: element("BODY") }), false);
  assert.equal(isTalkKey({ code: "KeyT", key: "t", target: element("BODY") }), false);
});

test("Enter is the talk key on the talk control only", () => {
  const talkControl = element("BUTTON", { dataset: { talkControl: "" } });
  assert.equal(isTalkKey({ code: "Enter", key: "Enter", target: talkControl }), true);
  assert.equal(isTalkKey({ code: "NumpadEnter", key: "Enter", target: talkControl }), true);
  assert.equal(isTalkKey({ code: "Enter", key: "Enter", target: element("BUTTON", { dataset: {} }) }), false);
  assert.equal(isTalkKey({ code: "Enter", key: "Enter", target: null }), false);
});

test("Space typed into a field or inside an open dialog is text, not talk", () => {
  assert.equal(isTalkKey({ code: "Space", key: " ", target: element("INPUT") }), false);
  assert.equal(isTalkKey({ code: "Space", key: " ", target: element("TEXTAREA") }), false);
  assert.equal(
    isTalkKey({ code: "Space", key: " ", target: element("DIV", { isContentEditable: true }) }),
    false,
  );
  const inDialog = element("BUTTON", { closest: (sel) => (sel === "dialog[open]" ? {} : null) });
  assert.equal(isTalkKey({ code: "Space", key: " ", target: inDialog }), false);
});

test("Escape on the page takes a recording back; in a field or an open dialog it is theirs", () => {
  assert.equal(isCancelKey({ key: "Escape", target: element("BODY") }), true);
  assert.equal(isCancelKey({ key: "Escape", target: element("BUTTON") }), true);
  assert.equal(isCancelKey({ key: "Enter", target: element("BODY") }), false);
  assert.equal(isCancelKey({ key: "Escape", target: element("INPUT") }), false);
  assert.equal(
    isCancelKey({ key: "Escape", target: element("BUTTON", { closest: () => ({ open: true }) }) }),
    false,
  );
});
