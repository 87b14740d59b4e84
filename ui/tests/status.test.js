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
