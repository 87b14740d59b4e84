// The page's one state: what Rust last said (the status, the connection's health, the
// microphone's level) and how the user talks (from the settings). The views render from it;
// nothing is read back from the DOM, whose attributes are outputs (for the style sheet and
// assistive technology) only.

/**
 * @typedef {{ state: string, detail: string, seq?: number, action?: string, cancellable?: boolean }} Status
 * @typedef {{ handsFree: boolean, pressMode: string }} TalkMode
 */

/**
 * A new page state, before Rust has said anything. Each change returns whether it changed
 * what is shown; the caller renders then.
 */
export function createPageState() {
  const state = {
    /** @type {Status} the status shown */
    status: { state: "unknown", detail: "" },
    /** The newest `seq` of a status shown: an older one is stale. */
    seq: 0,
    /** @type {TalkMode} */
    talkMode: { handsFree: false, pressMode: "hold" },
    /** The call's latest connection health, if one was said. */
    health: null,
    /** The microphone's latest level reading (readings come only when the level moves). */
    micReading: null,
  };
  return {
    /** The state, to read. */
    get: () => state,
    /**
     * Takes a status to show; `false` for one older than the one shown (the page asked for the
     * latest while a newer event was on its way). A status without `seq` (the page's own, for a
     * command that failed) is always shown.
     * @param {Status} status
     */
    showStatus(status) {
      if (typeof status.seq === "number") {
        if (status.seq <= state.seq) return false;
        state.seq = status.seq;
      }
      state.status = status;
      return true;
    },
    /** @param {TalkMode} talkMode */
    setTalkMode(talkMode) {
      state.talkMode = { handsFree: talkMode.handsFree, pressMode: talkMode.pressMode };
    },
    setHealth(health) {
      state.health = health;
    },
    setMicReading(reading) {
      state.micReading = reading;
    },
    /** Whether the user is being listened to now. */
    listening: () => state.status.state === "listening",
  };
}
