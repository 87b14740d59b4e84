import { test } from "node:test";
import assert from "node:assert/strict";
import { connectionShown, healthView } from "../health.js";

const lossy = {
  level: "fair",
  sentence: "The network is losing 10 % of packets.",
  lossPercent: 10.4,
  filledPercent: 9.6,
  jitterMs: 3.2,
  roundTripMs: 1.4,
};

test("a lossy connection says so, with the figures behind it", () => {
  const view = healthView(lossy);
  assert.equal(view.level, "fair");
  assert.equal(view.label, "Fair");
  assert.equal(
    view.description,
    "The network is losing 10 % of packets. Packets lost: 10 %; audio filled in: 10 %; jitter: 3 ms; round trip: 1 ms.",
  );
});

test("figures not measured yet are said as such, and an unknown level reads as good", () => {
  const view = healthView({ ...lossy, level: "excellent", lossPercent: null, roundTripMs: null });
  assert.equal(view.level, "good");
  assert.match(view.description, /Packets lost: not measured yet;/);
  assert.match(view.description, /round trip: not measured yet\.$/);
});

test("the badge shows only while a call is up", () => {
  for (const state of ["ready", "listening", "thinking", "speaking"]) assert.ok(connectionShown(state), state);
  for (const state of ["connecting", "reconnecting", "not_connected", "error"]) assert.ok(!connectionShown(state), state);
});
