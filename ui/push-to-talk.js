// Push-to-talk from two sources at once — the Space key and the on-screen button — folded into
// one pressed/released signal. Whichever source pressed first owns the press; the other cannot
// release it, key auto-repeat is not a new press, and losing the window's focus releases, so a
// talk key can never stay stuck down.

/** @typedef {"key" | "pointer"} TalkSource */

export function createPushToTalk(onChange) {
  /** @type {TalkSource | null} */
  let owner = null;
  return {
    get pressed() {
      return owner !== null;
    },
    /** @param {TalkSource} source */
    press(source) {
      if (owner !== null) return false;
      owner = source;
      onChange(true);
      return true;
    },
    /** @param {TalkSource} source */
    release(source) {
      if (owner !== source) return false;
      owner = null;
      onChange(false);
      return true;
    },
    /** Focus left the window: whatever held the press lets go. */
    releaseAll() {
      if (owner === null) return false;
      owner = null;
      onChange(false);
      return true;
    },
  };
}

const EDITABLE = new Set(["INPUT", "TEXTAREA", "SELECT"]);

/**
 * Whether a keyboard event is the talk key: Space, not typed into a field or an open dialog;
 * or Enter on the talk control itself (marked `data-talk-control`), which a keyboard user
 * reaches with Tab and expects to work like a held button.
 * @param {{ code?: string, key?: string, target?: any }} event
 */
export function isTalkKey(event) {
  if (event.key === "Enter") return event.target?.dataset?.talkControl !== undefined;
  if (event.code !== "Space" && event.key !== " ") return false;
  return isForThePage(event);
}

/**
 * Whether a keyboard event is the key that takes a recording back: Escape, not meant for a
 * field or an open dialog (which closes on it).
 * @param {{ key?: string, target?: any }} event
 */
export function isCancelKey(event) {
  return event.key === "Escape" && isForThePage(event);
}

/** Whether a key event is for the page itself, not typed into a field or an open dialog. */
function isForThePage(event) {
  const target = event.target;
  if (target == null) return true;
  if (EDITABLE.has(target.tagName) || target.isContentEditable) return false;
  if (typeof target.closest === "function" && target.closest("dialog[open]")) return false;
  return true;
}
