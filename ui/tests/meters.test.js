import { test } from "node:test";
import assert from "node:assert/strict";
import { FLOOR_DBFS, renderLevel, ringLevel } from "../meters.js";

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

test("the talk control's ring follows the microphone from the floor to full scale", () => {
  assert.equal(ringLevel({ direction: "input", rmsDbfs: FLOOR_DBFS }), 0);
  assert.equal(ringLevel({ direction: "input", rmsDbfs: -120 }), 0);
  assert.equal(ringLevel({ direction: "input", rmsDbfs: -30 }), 0.5);
  assert.equal(ringLevel({ direction: "input", rmsDbfs: 3 }), 1);
  assert.equal(ringLevel({ direction: "output", rmsDbfs: -10 }), 0, "the speaker is not the mic");
  assert.equal(ringLevel({ direction: "input", rmsDbfs: Number.NaN }), 0);
});
