// Typing during a call: the field under the transcript. Enter sends, Shift+Enter starts a new
// line. What the user typed stays in the field until the app has taken it, so a message that
// could not be sent (no call, too long) is never lost.

import { describeError } from "./status.js";

/** The states in which a typed message goes to a call, or waits for the one being placed. */
const TAKES_TEXT = new Set(["connecting", "ready", "listening", "thinking", "speaking", "reconnecting"]);

/**
 * What a key press in the field means: "send" for Enter alone (not while an input method is
 * composing a character), otherwise null (the field handles it: Shift+Enter is a new line).
 * @param {{ key?: string, shiftKey?: boolean, isComposing?: boolean, ctrlKey?: boolean, altKey?: boolean, metaKey?: boolean }} event
 */
export function composeKey(event) {
  if (event.key !== "Enter" || event.isComposing) return null;
  if (event.shiftKey || event.altKey || event.ctrlKey || event.metaKey) return null;
  return "send";
}

/**
 * Whether a typed message can go out in the conversation's `state`; if not, the sentence
 * that says what to do (the text stays in the field).
 * @param {string | undefined} state
 * @param {string} text
 * @returns {string | null}
 */
export function whyNotSent(state, text) {
  if (text.trim() === "") return "Type a message first, then press Enter.";
  if (!TAKES_TEXT.has(state)) return "Not connected: press Connect, then send your message.";
  return null;
}

/**
 * Wires the compose form: `send(text)` resolves once the app took the message.
 * @param {HTMLFormElement} form
 * @param {{ send: (text: string) => Promise<unknown>, state: () => string | undefined }} app
 */
export function createCompose(form, { send, state }) {
  const field = form.querySelector("textarea");
  const note = form.querySelector("[data-role=compose-note]");
  const say = (sentence, kind = "info") => {
    note.textContent = sentence;
    note.dataset.kind = kind;
  };

  async function submit() {
    const text = field.value;
    const why = whyNotSent(state(), text);
    if (why) return say(why, "error");
    try {
      await send(text);
    } catch (error) {
      return say(describeError(error), "error");
    }
    // Only what was sent leaves the field: anything typed meanwhile stays.
    field.value = field.value.startsWith(text) ? field.value.slice(text.length) : field.value;
    say("");
  }

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    submit();
  });
  field.addEventListener("keydown", (event) => {
    if (composeKey(event) !== "send") return;
    event.preventDefault();
    submit();
  });
  field.addEventListener("input", () => {
    if (note.dataset.kind === "error") say("");
  });
}
