// What streams in is shown at most about ten times a second. Why: painted on the CPU, every
// update of the page costs WebKitGTK a layout and a frame, and a provider's transcript deltas
// and the level readings can come dozens a second. An item after a pause is shown at once;
// those that follow within the interval are shown together when it ends, in their order, none
// dropped (updates.js paces the level readings and the transcript events this way).

/** The shortest time between two batches, in ms. */
export const PACE_INTERVAL_MS = 100;

/**
 * Hands `deliver` the pushed items in batches, in order: an item alone and at once when the
 * last batch was at least `intervalMs` ago, otherwise with the others that come before the
 * interval ends. `flush()` hands over what waits now (before reading or marking what `deliver`
 * builds).
 * @template T
 * @param {(batch: T[]) => void} deliver
 * @param {{ intervalMs?: number, now?: () => number,
 *   setTimer?: (run: () => void, ms: number) => unknown, clearTimer?: (timer: unknown) => void }} [options]
 */
export function createPacer(deliver, options = {}) {
  const {
    intervalMs = PACE_INTERVAL_MS,
    now = () => performance.now(),
    setTimer = (run, ms) => setTimeout(run, ms),
    clearTimer = (timer) => clearTimeout(timer),
  } = options;
  let waiting = [];
  let lastBatchMs = -Infinity;
  let timer = null;

  function handOver() {
    if (timer !== null) clearTimer(timer);
    timer = null;
    if (waiting.length === 0) return;
    const batch = waiting;
    waiting = [];
    lastBatchMs = now();
    deliver(batch);
  }

  return {
    /** @param {T} item */
    push(item) {
      waiting.push(item);
      if (timer !== null) return;
      const waitMs = lastBatchMs + intervalMs - now();
      if (waitMs <= 0) handOver();
      else timer = setTimer(handOver, waitMs);
    },
    flush: handOver,
    /** How many items wait for the interval to end. */
    get waiting() {
      return waiting.length;
    },
  };
}
