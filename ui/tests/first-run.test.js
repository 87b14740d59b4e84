import { test } from "node:test";
import assert from "node:assert/strict";
import { showDemoCard, usesTheDemo } from "../first-run.js";

const view = (provider, openaiSource) => ({
  settings: { provider },
  keys: openaiSource ? [{ account: "openai", source: openaiSource }] : [],
});

test("the demo is in use when chosen, or automatic without an OpenAI key", () => {
  assert.equal(usesTheDemo(view("local")), true);
  assert.equal(usesTheDemo(view("automatic", "none")), true);
  assert.equal(usesTheDemo(view("automatic")), true);
  assert.equal(usesTheDemo(view("automatic", "keyring")), false);
  assert.equal(usesTheDemo(view("automatic", "environment")), false);
  assert.equal(usesTheDemo(view("openai", "none")), false, "OpenAI chosen: its error says what to do");
  assert.equal(usesTheDemo(view("custom")), false);
});

// Just what the card touches.
class FakeElement {
  constructor(tagName) {
    this.tagName = tagName;
    this.children = [];
    this.attributes = {};
    this.classes = new Set();
    this.listeners = {};
    this.textContent = "";
    this.ownerDocument = fakeDocument;
    this.classList = {
      add: (name) => this.classes.add(name),
      remove: (name) => this.classes.delete(name),
    };
  }
  set className(name) {
    this.classes = new Set([name]);
  }
  setAttribute(name, value) {
    this.attributes[name] = value;
  }
  removeAttribute(name) {
    delete this.attributes[name];
  }
  append(...nodes) {
    this.children.push(...nodes);
  }
  replaceChildren(...nodes) {
    this.children = nodes;
  }
  addEventListener(type, listener) {
    this.listeners[type] = listener;
  }
  text() {
    return [this.textContent, ...this.children.map((child) => (typeof child === "string" ? child : child.text()))].join(" ");
  }
  buttons() {
    return this.children.flatMap((child) =>
      typeof child === "string" ? [] : child.tagName === "button" ? [child] : child.buttons(),
    );
  }
}
const fakeDocument = { createElement: (tagName) => new FakeElement(tagName) };

test("the card says what the demo is, what a key costs and where the audio goes, with two ways on", () => {
  const placeholder = new FakeElement("div");
  const chosen = [];
  showDemoCard(placeholder, { addKey: () => chosen.push("add"), keepDemo: () => chosen.push("keep") });
  const text = placeholder.text();
  assert.match(text, /offline demo/);
  assert.match(text, /cannot understand speech/);
  assert.match(text, /bills/);
  assert.match(text, /your voice goes to OpenAI/);
  assert.equal(placeholder.attributes["aria-label"], "Getting started");
  const [addKey, keepDemo] = placeholder.buttons();
  assert.equal(addKey.textContent, "Add an OpenAI key");
  assert.equal(keepDemo.textContent, "Keep trying the demo");
  addKey.listeners.click();
  assert.deepEqual(chosen, ["add"]);
  keepDemo.listeners.click();
  assert.deepEqual(chosen, ["add", "keep"]);
  assert.equal(placeholder.classes.has("first-run"), false, "the card gives way to the plain hint");
  assert.match(placeholder.text(), /Both sides of the conversation appear here/);
  assert.deepEqual(placeholder.buttons(), []);
});
