import { test } from "node:test";
import assert from "node:assert/strict";
import { FLOOR_DBFS, renderLevel } from "../meters.js";

const meters = () => ({ input: { value: FLOOR_DBFS }, output: { value: FLOOR_DBFS } });

test("a reading sets the meter of its direction only", () => {
  const m = meters();
  assert.equal(renderLevel(m, { direction: "input", rmsDbfs: -18.5, peakDbfs: -3 }), true);
  assert.equal(m.input.value, -18.5);
  assert.equal(m.output.value, FLOOR_DBFS);
});

test("readings beyond the scale stay on it", () => {
  const m = meters();
  renderLevel(m, { direction: "output", rmsDbfs: -120 });
  assert.equal(m.output.value, FLOOR_DBFS);
  renderLevel(m, { direction: "output", rmsDbfs: 3 });
  assert.equal(m.output.value, 0);
});

test("a reading for an unknown direction or without a level changes nothing", () => {
  const m = meters();
  assert.equal(renderLevel(m, { direction: "sideways", rmsDbfs: -10 }), false);
  assert.equal(renderLevel(m, { direction: "input" }), false);
  assert.deepEqual(m, meters());
});
