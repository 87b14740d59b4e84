import { test } from "node:test";
import assert from "node:assert/strict";
import { PACE_INTERVAL_MS, createPacer } from "../pace.js";

/** A pacer on a clock the test moves, with the timer it would set. */
function paced() {
  const shown = [];
  const clock = { ms: 1_000, timers: [] };
  const batches = [];
  const pacer = createPacer((batch) => {
    batches.push(batch);
    shown.push(...batch);
  }, {
    now: () => clock.ms,
    setTimer: (run, ms) => {
      const timer = { run, atMs: clock.ms + ms };
      clock.timers.push(timer);
      return timer;
    },
    clearTimer: (timer) => {
      clock.timers = clock.timers.filter((pending) => pending !== timer);
    },
  });
  const advance = (ms) => {
    clock.ms += ms;
    for (const timer of clock.timers.filter((pending) => pending.atMs <= clock.ms)) {
      clock.timers = clock.timers.filter((pending) => pending !== timer);
      timer.run();
    }
  };
  return { shown, batches, pacer, advance, clock };
}

test("an item after a pause is shown at once", () => {
  const { shown, pacer } = paced();
  pacer.push("Hello");
  assert.deepEqual(shown, ["Hello"]);
  assert.equal(pacer.waiting, 0);
});

test("items that come fast are shown together once the interval ends, in order", () => {
  const { shown, batches, pacer, advance } = paced();
  pacer.push("a");
  advance(10);
  pacer.push("b");
  advance(10);
  pacer.push("c");
  assert.deepEqual(shown, ["a"], "b and c wait for the interval");
  advance(PACE_INTERVAL_MS - 21);
  assert.deepEqual(shown, ["a"]);
  advance(1);
  assert.deepEqual(batches, [["a"], ["b", "c"]], "one batch for what waited");
});

test("a steady stream is shown in batches no closer than the interval", () => {
  const { shown, pacer, advance } = paced();
  const batchesAtMs = [];
  let seen = 0;
  for (let i = 0; i < 100; i += 1) {
    pacer.push(i);
    if (shown.length !== seen) {
      batchesAtMs.push(i * 20);
      seen = shown.length;
    }
    advance(20);
    if (shown.length !== seen) {
      batchesAtMs.push(i * 20 + 20);
      seen = shown.length;
    }
  }
  advance(PACE_INTERVAL_MS);
  assert.deepEqual(shown, [...Array(100).keys()], "every item, in order");
  const gaps = batchesAtMs.slice(1).map((atMs, i) => atMs - batchesAtMs[i]);
  assert.ok(gaps.every((gapMs) => gapMs >= PACE_INTERVAL_MS), `batches ${gaps} ms apart`);
  assert.ok(batchesAtMs.length <= 21, `${batchesAtMs.length} batches for 2 s of items`);
});

test("a flush shows what waits at once, and the interval's timer then shows nothing twice", () => {
  const { shown, pacer, advance, clock } = paced();
  pacer.push("a");
  pacer.push("b");
  pacer.flush();
  assert.deepEqual(shown, ["a", "b"]);
  assert.equal(clock.timers.length, 0, "the pending timer is cleared");
  advance(PACE_INTERVAL_MS * 2);
  assert.deepEqual(shown, ["a", "b"]);
});

test("a flush with nothing waiting changes nothing", () => {
  const { shown, pacer } = paced();
  pacer.flush();
  assert.deepEqual(shown, []);
});
