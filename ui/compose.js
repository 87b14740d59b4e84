// Typing during a call: the field under the transcript. Enter sends, Shift+Enter starts a new
// line. What the user typed stays in the field until the app has taken it, so a message that
// could not be sent (no call, too long) is never lost.
//
// Pictures join the message before it is sent: "Picture…" opens the file dialog, a picture
// pasted into the field is attached, and files dropped on the window arrive from Rust. Rust
// prepares and holds each picture; the page shows its thumbnail until the message goes, and a
// picture removed here is let go there.

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

/** The most pictures one message shows (Rust holds no more). */
export const MAX_PICTURES = 4;

/**
 * Whether a message can go out in the conversation's `state`; if not, the sentence that says
 * what to do (the text and pictures stay).
 * @param {string | undefined} state
 * @param {string} text
 * @param {number} [pictureCount]
 * @returns {string | null}
 */
export function whyNotSent(state, text, pictureCount = 0) {
  if (text.trim() === "" && pictureCount === 0) return "Type a message or attach a picture first, then press Enter.";
  if (!TAKES_TEXT.has(state)) return "Not connected: press Connect, then send your message.";
  return null;
}

/**
 * What the note says of a picture just attached: its name, and the size it will be sent at
 * when that is smaller than the original.
 * @param {{ name: string, widthPx: number, heightPx: number, sourceWidthPx: number, sourceHeightPx: number }} picture
 */
export function attachedNote(picture) {
  const name = picture.name || "The picture";
  const scaled = picture.widthPx < picture.sourceWidthPx || picture.heightPx < picture.sourceHeightPx;
  if (!scaled) return `${name} is attached.`;
  return `${name} is attached, to be sent at ${picture.widthPx} × ${picture.heightPx} (from ${picture.sourceWidthPx} × ${picture.sourceHeightPx}).`;
}

/**
 * The image files among pasted or dropped items (a `DataTransferItemList` or an array of
 * `{ kind, type, getAsFile }`).
 * @param {ArrayLike<{ kind: string, type: string, getAsFile: () => File | null }> | undefined} items
 * @returns {File[]}
 */
export function imageFiles(items) {
  return Array.from(items ?? [])
    .filter((item) => item.kind === "file" && item.type.startsWith("image/"))
    .map((item) => item.getAsFile())
    .filter((file) => file !== null);
}

/**
 * Wires the compose form. `send(text, pictureIds)` resolves once the app took the message;
 * `attach(file)` resolves with the picture Rust holds for it; `detach(id)` lets one go.
 * Returns `dropped(outcome)` for what Rust reports of files dropped on the window.
 * @param {HTMLFormElement} form
 * @param {{
 *   send: (text: string, pictures: number[]) => Promise<unknown>,
 *   attach: (file: File) => Promise<{ id: number, name: string, thumbnail: string, widthPx: number, heightPx: number, sourceWidthPx: number, sourceHeightPx: number }>,
 *   detach: (id: number) => Promise<unknown>,
 *   screenshotTargets: () => Promise<{ kind: "screen" | "window", id?: number, title?: string }[]>,
 *   screenshot: (target: object) => Promise<{ id: number, name: string, thumbnail: string, widthPx: number, heightPx: number, sourceWidthPx: number, sourceHeightPx: number }>,
 *   state: () => string | undefined,
 * }} app
 */
/** The screenshot menu's words for what can be taken. */
export function screenshotLabel(target) {
  if (target.kind === "screen") return "The whole screen";
  if (target.kind === "desktop") return "Choose in the desktop's screenshot dialog…";
  return target.title;
}

export function createCompose(form, { send, attach, detach, screenshotTargets, screenshot, state }) {
  const doc = form.ownerDocument;
  const field = form.querySelector("textarea");
  const note = form.querySelector("[data-role=compose-note]");
  const strip = form.querySelector("[data-role=attachments]");
  const chooser = form.querySelector("input[type=file]");
  const chooseButton = form.querySelector("[data-action=attach-picture]");
  const shotButton = form.querySelector("[data-action=screenshot]");
  const shotMenu = form.querySelector("[data-role=screenshot-menu]");
  /** @type {{ id: number, name: string, element: HTMLElement }[]} */
  let attached = [];
  const say = (sentence, kind = "info") => {
    note.textContent = sentence;
    note.dataset.kind = kind;
  };

  function show(picture) {
    const item = doc.createElement("li");
    item.className = "attachment";
    const image = doc.createElement("img");
    image.src = picture.thumbnail;
    image.alt = `${picture.name || "Picture"}, ${picture.widthPx} × ${picture.heightPx} pixels`;
    const remove = doc.createElement("button");
    remove.type = "button";
    remove.className = "attachment-remove";
    remove.textContent = "×";
    remove.setAttribute("aria-label", `Remove ${picture.name || "the picture"}`);
    remove.title = "Remove this picture";
    remove.addEventListener("click", () => {
      attached = attached.filter((entry) => entry.id !== picture.id);
      item.remove();
      strip.hidden = attached.length === 0;
      detach(picture.id).catch(() => {});
      say("");
      field.focus();
    });
    item.append(image, remove);
    strip.append(item);
    strip.hidden = false;
    attached.push({ id: picture.id, name: picture.name, element: item });
    say(attachedNote(picture));
  }

  async function attachFiles(files) {
    for (const file of files) {
      if (attached.length >= MAX_PICTURES) {
        return say(`A message shows at most ${MAX_PICTURES} pictures: send these first, or remove one.`, "error");
      }
      say(`Attaching ${file.name || "the picture"}…`);
      try {
        show(await attach(file));
      } catch (error) {
        return say(describeError(error), "error");
      }
    }
  }

  async function submit() {
    const text = field.value;
    const sending = attached.slice();
    const why = whyNotSent(state(), text, sending.length);
    if (why) return say(why, "error");
    try {
      await send(text, sending.map((entry) => entry.id));
    } catch (error) {
      return say(describeError(error), "error");
    }
    // Only what was sent leaves the field: anything typed or attached meanwhile stays.
    field.value = field.value.startsWith(text) ? field.value.slice(text.length) : field.value;
    for (const entry of sending) entry.element.remove();
    attached = attached.filter((entry) => !sending.includes(entry));
    strip.hidden = attached.length === 0;
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
  // A pasted picture is attached; pasted text goes into the field as usual.
  field.addEventListener("paste", (event) => {
    const files = imageFiles(event.clipboardData?.items);
    if (files.length === 0) return;
    event.preventDefault();
    attachFiles(files);
  });
  chooseButton.addEventListener("click", () => chooser.click());

  function closeShotMenu({ refocus = true } = {}) {
    if (shotMenu.hidden) return;
    shotMenu.hidden = true;
    shotButton.setAttribute("aria-expanded", "false");
    if (refocus) shotButton.focus();
  }

  async function takeShot(target) {
    closeShotMenu({ refocus: false });
    field.focus();
    if (attached.length >= MAX_PICTURES) {
      return say(`A message shows at most ${MAX_PICTURES} pictures: send these first, or remove one.`, "error");
    }
    say("Taking the screenshot…");
    // Two frames, so the closed menu is off the screen before it is taken.
    await new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve)));
    try {
      show(await screenshot(target));
    } catch (error) {
      say(describeError(error), "error");
    }
  }

  shotButton.addEventListener("click", async () => {
    if (!shotMenu.hidden) return closeShotMenu();
    let targets;
    try {
      targets = await screenshotTargets();
    } catch (error) {
      return say(describeError(error), "error");
    }
    shotMenu.replaceChildren(
      ...targets.map((target) => {
        const item = doc.createElement("button");
        item.type = "button";
        item.setAttribute("role", "menuitem");
        item.textContent = screenshotLabel(target);
        item.title = item.textContent;
        item.addEventListener("click", () => takeShot(target));
        return item;
      }),
    );
    shotMenu.hidden = false;
    shotButton.setAttribute("aria-expanded", "true");
    shotMenu.querySelector("button")?.focus();
  });
  shotMenu.addEventListener("keydown", (event) => {
    const items = [...shotMenu.querySelectorAll("button")];
    const at = items.indexOf(doc.activeElement);
    if (event.key === "Escape") {
      event.preventDefault();
      event.stopPropagation();
      closeShotMenu();
    } else if (event.key === "ArrowDown" || event.key === "ArrowUp") {
      event.preventDefault();
      const step = event.key === "ArrowDown" ? 1 : -1;
      items[(at + step + items.length) % items.length]?.focus();
    }
  });
  shotMenu.addEventListener("focusout", (event) => {
    if (!shotMenu.contains(event.relatedTarget) && event.relatedTarget !== shotButton) closeShotMenu({ refocus: false });
  });
  chooser.addEventListener("change", () => {
    const files = Array.from(chooser.files ?? []);
    chooser.value = "";
    attachFiles(files).then(() => field.focus());
  });

  return {
    /** Rust's report of one file dropped on the window. */
    dropped(outcome) {
      if (outcome.outcome === "attached") show(outcome);
      else say(outcome.message, "error");
    },
  };
}
