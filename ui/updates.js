// What the app sends while a conversation goes on (statuses, level readings, transcript
// events, spending), shown so that each update of the page repaints little. Why: painted on the
// CPU, WebKitGTK repaints, per update, the one rectangle bounding everything that changed, and
// each update also costs a layout and a frame. So the streams that come a dozen times a second
// are paced (pace.js), each on its own: the level readings show the newest of each meter, the
// transcript events all of theirs in order, at most about ten times a second. Kinds are not
// shown together, even when the app sends them in one batch: a meter in the footer and a status
// in the header changed in one update would repaint the whole window between them. Statuses and
// spending are rare and shown at once.

import { createPacer } from "./pace.js";

/**
 * @typedef {{ statuses: object[], levels: Map<string, object>, transcript: object[], spending: object | null }} Batch
 */

/**
 * The updates of one batch, by kind: what showing them takes.
 * @param {Array<[string, object]>} updates `[kind, payload]` in arrival order
 * @returns {Batch}
 */
export function collectBatch(updates) {
  const batch = { statuses: [], levels: new Map(), transcript: [], spending: null };
  for (const [kind, payload] of updates) {
    if (kind === "status") batch.statuses.push(payload);
    else if (kind === "level") batch.levels.set(payload?.direction, payload);
    else if (kind === "transcript") batch.transcript.push(payload);
    else if (kind === "spending") batch.spending = payload;
  }
  return batch;
}

/**
 * Shows the pushed updates (`show(batch)` once per batch, each batch of one kind): level
 * readings and transcript events paced, statuses and spending at once. `flush()` shows what
 * waits now (before reading or marking what the updates build).
 * @param {(batch: Batch) => void} show
 * @param {Parameters<typeof createPacer>[1]} [options]
 */
export function createUpdates(show, options) {
  const paced = {
    level: createPacer((updates) => show(collectBatch(updates)), options),
    transcript: createPacer((updates) => show(collectBatch(updates)), options),
  };
  return {
    /** @param {"status" | "level" | "transcript" | "spending"} kind @param {object} payload */
    push(kind, payload) {
      if (paced[kind]) paced[kind].push([kind, payload]);
      else show(collectBatch([[kind, payload]]));
    },
    flush() {
      paced.level.flush();
      paced.transcript.flush();
    },
  };
}

/**
 * Shows each region of the page in a frame of its own: `show(region, run)` runs `run` at once
 * when no region was shown since the last frame was drawn, otherwise after the frames of the
 * regions waiting before it. A region asked again before its turn runs only the newest `run`,
 * after the others waiting (so what is asked last is shown last). A `run` that returns `false`
 * changed nothing, and the next region is shown in the same frame. Why: WebKit lays out one changed region on its own, but two changed
 * in one frame lay out the whole page, and the repaint is the rectangle around both: a status
 * in the header and the talk control in the footer changed together repaint the window.
 * `flush()` runs every waiting region now.
 * @param {Parameters<typeof afterFrame>[1]} [options]
 */
export function createRegions(options) {
  /** @type {Map<string, () => void>} */
  const waiting = new Map();
  let frameOpen = true;
  function next() {
    frameOpen = true;
    for (const [region, run] of waiting) {
      waiting.delete(region);
      // A region that changed nothing leaves the frame to the next one.
      if (run() === false) continue;
      frameOpen = false;
      afterFrame(next, options);
      return;
    }
  }
  return {
    /** @param {string} region @param {() => boolean | void} run */
    show(region, run) {
      waiting.delete(region);
      waiting.set(region, run);
      if (frameOpen) next();
    },
    flush() {
      for (const [region, run] of [...waiting]) {
        waiting.delete(region);
        run();
      }
    },
  };
}

/**
 * Runs `run` once, after the page's next frame has been drawn (or within 100 ms, for a window
 * that draws none while hidden): what changes then is painted in a frame of its own.
 * @param {() => void} run
 * @param {{ frame?: (callback: () => void) => unknown, setTimer?: (run: () => void, ms: number) => unknown }} [options]
 */
export function afterFrame(run, options = {}) {
  const { frame = (callback) => requestAnimationFrame(callback), setTimer = (callback, ms) => setTimeout(callback, ms) } = options;
  let ran = false;
  const once = () => {
    if (ran) return;
    ran = true;
    run();
  };
  // Callbacks of a frame run before it is drawn; a task they queue runs after.
  frame(() => setTimer(once, 0));
  setTimer(once, 100);
}

/**
 * Sets an element's text only when it differs: writing the same text still lays the page out.
 * @param {{ textContent: string | null }} element
 * @param {string} text
 * @returns {boolean} whether it changed
 */
export function setText(element, text) {
  if (element.textContent === text) return false;
  element.textContent = text;
  return true;
}
