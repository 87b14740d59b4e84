import { test } from "node:test";
import assert from "node:assert/strict";
import { afterFrame, collectBatch, createRegions, createUpdates, setText } from "../updates.js";

const level = (direction, rmsDbfs) => ({ direction, rmsDbfs, peakDbfs: rmsDbfs + 6 });

test("a batch applies every status and transcript event in order, and only the newest reading of each meter and the newest spending", () => {
  const batch = collectBatch([
    ["status", { seq: 1, state: "listening" }],
    ["level", level("input", -30)],
    ["transcript", { type: "TEXT_MESSAGE_START", messageId: "m1" }],
    ["level", level("output", -20)],
    ["level", level("input", -12)],
    ["spending", { totalTokens: 10 }],
    ["transcript", { type: "TEXT_MESSAGE_CONTENT", messageId: "m1", delta: "Hi" }],
    ["status", { seq: 2, state: "thinking" }],
    ["spending", { totalTokens: 25 }],
  ]);
  assert.deepEqual(batch.statuses.map((status) => status.seq), [1, 2]);
  assert.deepEqual(batch.transcript.map((event) => event.type), ["TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT"]);
  assert.deepEqual(batch.levels.get("input"), level("input", -12));
  assert.deepEqual(batch.levels.get("output"), level("output", -20));
  assert.deepEqual(batch.spending, { totalTokens: 25 });
});

/** A clock and timers the test moves by hand. */
function manualTime() {
  let nowMs = 0;
  const pending = new Set();
  return {
    options: {
      intervalMs: 100,
      now: () => nowMs,
      setTimer: (run, ms) => {
        const timer = { run, atMs: nowMs + ms };
        pending.add(timer);
        return timer;
      },
      clearTimer: (timer) => pending.delete(timer),
    },
    advance(ms) {
      nowMs += ms;
      for (const timer of [...pending].sort((a, b) => a.atMs - b.atMs)) {
        if (timer.atMs > nowMs) continue;
        pending.delete(timer);
        timer.run();
      }
    },
  };
}

test("level readings and transcript events within the interval are a batch of their kind; statuses and spending are shown at once", () => {
  const time = manualTime();
  const shown = [];
  const updates = createUpdates((batch) => shown.push(batch), time.options);
  updates.push("level", level("input", -40));
  assert.equal(shown.length, 1, "the first reading after a pause is shown at once");
  time.advance(20);
  updates.push("level", level("input", -30));
  updates.push("transcript", { type: "RUN_STARTED" });
  assert.equal(shown.length, 2, "a transcript event after a pause is shown at once, apart from the readings");
  updates.push("level", level("input", -18));
  updates.push("transcript", { type: "TEXT_MESSAGE_START", messageId: "m1" });
  updates.push("status", { seq: 1, state: "thinking" });
  assert.equal(shown.length, 3, "a status does not wait");
  assert.deepEqual(shown[2].statuses, [{ seq: 1, state: "thinking" }]);
  assert.equal(shown[2].levels.size, 0, "and nothing of another kind is shown with it");
  time.advance(80);
  const readings = shown.find((batch) => batch.levels.size > 0 && batch !== shown[0]);
  assert.deepEqual(readings.levels.get("input"), level("input", -18), "the newest reading of the batch");
  assert.equal(readings.transcript.length, 0);
  assert.equal(shown.length, 4, "the transcript's own interval has not ended yet");
  time.advance(20);
  const transcript = shown.filter((batch) => batch.transcript.length > 0);
  assert.deepEqual(transcript.map((batch) => batch.transcript.length), [1, 1]);
  assert.equal(shown.length, 5);
});

test("flush shows what waits at once", () => {
  const time = manualTime();
  const shown = [];
  const updates = createUpdates((batch) => shown.push(batch), time.options);
  updates.push("transcript", { type: "RUN_STARTED" });
  updates.push("transcript", { type: "RUN_FINISHED" });
  updates.push("level", level("output", -50));
  updates.push("level", level("output", -20));
  assert.equal(shown.length, 2);
  updates.flush();
  assert.equal(shown.length, 4);
  assert.deepEqual(shown[2].levels.get("output"), level("output", -20));
  assert.deepEqual(shown[3].transcript, [{ type: "RUN_FINISHED" }]);
});

test("the same text is not written again", () => {
  let writes = 0;
  let text = "Hold to talk";
  const element = {
    get textContent() {
      return text;
    },
    set textContent(value) {
      writes += 1;
      text = value;
    },
  };
  assert.equal(setText(element, "Hold to talk"), false);
  assert.equal(writes, 0);
  assert.equal(setText(element, "Listening: release to send"), true);
  assert.equal(writes, 1);
  assert.equal(text, "Listening: release to send");
});

test("what waits for the next frame runs after it is drawn, once, or within 100 ms when no frame comes", () => {
  const frames = [];
  const timers = [];
  const options = { frame: (callback) => frames.push(callback), setTimer: (run, ms) => timers.push({ run, ms }) };
  let runs = 0;
  afterFrame(() => (runs += 1), options);
  assert.equal(runs, 0, "not before the frame");
  frames.shift()();
  assert.equal(runs, 0, "not within the frame's callbacks either");
  const afterDrawn = timers.find((timer) => timer.ms === 0);
  afterDrawn.run();
  assert.equal(runs, 1);
  timers.find((timer) => timer.ms === 100).run();
  assert.equal(runs, 1, "the fallback does not run it again");

  let hiddenRuns = 0;
  const hiddenTimers = [];
  afterFrame(() => (hiddenRuns += 1), { frame: () => {}, setTimer: (run, ms) => hiddenTimers.push({ run, ms }) });
  hiddenTimers.find((timer) => timer.ms === 100).run();
  assert.equal(hiddenRuns, 1, "a hidden window that draws no frame still catches up");
});

test("each region is shown in a frame of its own, in the order asked, the newest of each", () => {
  const drawn = [];
  // A frame is drawn when the test says; what waits for it runs then.
  const options = { frame: (callback) => drawn.push(callback), setTimer: (run, ms) => ms === 0 && run() };
  const regions = createRegions(options);
  const shown = [];
  regions.show("header", () => shown.push("status: listening"));
  assert.deepEqual(shown, ["status: listening"], "the first is shown at once");
  regions.show("talk control", () => shown.push("label: release to send"));
  regions.show("hint", () => shown.push("hint: let go to send"));
  regions.show("talk control", () => shown.push("label: thinking"));
  assert.equal(shown.length, 1, "the others wait for the frame");
  drawn.shift()();
  assert.deepEqual(shown.slice(1), ["hint: let go to send"], "one region per frame");
  drawn.shift()();
  assert.deepEqual(shown.slice(2), ["label: thinking"], "the newest of a region asked again, after the others");
  drawn.shift()();
  assert.equal(drawn.length, 0, "nothing waits: the next region is shown at once");
  regions.show("meters", () => shown.push("meters"));
  assert.equal(shown.at(-1), "meters");
});

test("a region that changed nothing leaves its frame to the next", () => {
  const drawn = [];
  const regions = createRegions({ frame: (callback) => drawn.push(callback), setTimer: (run, ms) => ms === 0 && run() });
  const shown = [];
  regions.show("meters", () => shown.push("meters"));
  regions.show("placeholder", () => false);
  regions.show("header", () => shown.push("status: ready"));
  drawn.shift()();
  assert.deepEqual(shown, ["meters", "status: ready"], "the status line did not wait a frame for a placeholder that stayed");
});

test("flush shows every waiting region now", () => {
  const regions = createRegions({ frame: () => {}, setTimer: () => {} });
  const shown = [];
  regions.show("transcript", () => shown.push("transcript"));
  regions.show("meters", () => shown.push("meters"));
  regions.show("spending", () => shown.push("spending"));
  regions.flush();
  assert.deepEqual(shown, ["transcript", "meters", "spending"]);
});
