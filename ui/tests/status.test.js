import { test } from "node:test";
import assert from "node:assert/strict";
import { renderStatus } from "../status.js";

const statusElement = () => ({ textContent: "", dataset: {} });

test("the status line shows the event's sentence and state", () => {
  const line = statusElement();
  renderStatus(line, { state: "connecting", detail: "Connecting…" });
  assert.equal(line.textContent, "Connecting…");
  assert.equal(line.dataset.state, "connecting");
});

test("a state this page does not know still shows its text, marked unknown", () => {
  const line = statusElement();
  renderStatus(line, { state: "teleporting", detail: "Beaming up" });
  assert.equal(line.textContent, "Beaming up");
  assert.equal(line.dataset.state, "unknown");
});

test("a status older than the one shown is ignored", () => {
  const line = statusElement();
  assert.equal(renderStatus(line, { seq: 3, state: "ready", detail: "Ready" }), true);
  assert.equal(renderStatus(line, { seq: 2, state: "connecting", detail: "Connecting…" }), false);
  assert.equal(line.textContent, "Ready");
  assert.equal(renderStatus(line, { seq: 4, state: "listening", detail: "Listening…" }), true);
  assert.equal(line.dataset.state, "listening");
});
