// The transcript view: applies AG-UI text-message events (the same events walkie-agui verifies
// and assembles in Rust) to the transcript DOM, incrementally. A delta appends to its message's
// one text node; nothing already on screen is rebuilt, so a long conversation costs the same per
// token as a short one and a reader's text selection survives streaming.
//
// The stream reaching the webview has already passed walkie-agui's verifier, so an impossible
// sequence here means a bug upstream: it throws TranscriptSequenceError instead of being mended.
//
// DOM produced inside the container:
//   <article class="message" data-message-id="…" data-role="user|assistant|system|developer"
//            [data-streaming] [data-state="interrupted"|"cancelled"]>
//     <span class="message-speaker">You</span>
//     [<div class="message-pictures"><img class="message-picture" alt="Picture 1, 1024 × 768 pixels"></div>]
//     <p class="message-text">…one text node…</p>
//     <button class="message-copy" data-action="copy-message">Copy</button>
//   </article>
// The container's `.empty` placeholder is removed when the first message appears. A run of a
// new thread (the next conversation) adds <p class="conversation-divider"> first.
//
// Tool calls (TOOL_CALL_START / ARGS / END, a snapshot's `toolCalls`) show as a message of role
// "tool-call" (its id the call's, speaker "Used <tool>", text the arguments), and each result
// (TOOL_CALL_RESULT, a snapshot's tool message) as one of role "tool" ("Tool answer").

/** Speaker labels for messages that carry no `name`. */
export const SPEAKER_LABELS = Object.freeze({
  user: "You",
  assistant: "Walkie",
  system: "System",
  developer: "Developer",
});

/**
 * The names of the marks Walkie puts on messages (CUSTOM events), as
 * `walkie_session::transcript::MARK_*` names them.
 */
export const MARKS = Object.freeze({
  interrupted: "walkie.interrupted",
  cancelled: "walkie.cancelled",
  latency: "walkie.latency",
});
const TEXT_ROLES = new Set(["user", "assistant", "system", "developer"]);
const NEAR_BOTTOM_PX = 48;

/** An event that cannot follow what the transcript has seen (e.g. CONTENT for an unknown id). */
export class TranscriptSequenceError extends Error {
  constructor(message) {
    super(message);
    this.name = "TranscriptSequenceError";
  }
}

/**
 * The pictures a message's metadata lists (`metadata.pictures`: what the user showed), each
 * with a thumbnail that is a JPEG or PNG data URL; anything else there is left out, so saved
 * metadata can never make the page load a file or a remote address.
 * @param {unknown} metadata
 * @returns {{ thumbnail: string, widthPx: number, heightPx: number }[]}
 */
export function picturesOf(metadata) {
  const listed = metadata && typeof metadata === "object" ? metadata.pictures : undefined;
  if (!Array.isArray(listed)) return [];
  return listed.filter(
    (picture) =>
      picture &&
      typeof picture.thumbnail === "string" &&
      /^data:image\/(jpeg|png);base64,[A-Za-z0-9+/=]+$/.test(picture.thumbnail) &&
      Number.isInteger(picture.widthPx) &&
      Number.isInteger(picture.heightPx),
  );
}

/** The plain text of a history message's content: a string, or the text parts of an array. */
function contentText(content) {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) {
    return content
      .filter((part) => part && part.type === "text" && typeof part.text === "string")
      .map((part) => part.text)
      .join("");
  }
  return "";
}

/**
 * Creates a transcript bound to a container element.
 * @param {Element} container the transcript element (`<main id="transcript">`)
 * @param {{ document?: Document, follow?: boolean, pill?: { hidden: boolean } }} [options]
 *   `follow` (default true) keeps the view scrolled to the newest text until the reader scrolls
 *   up; then `pill` (a "↓ New" button, if given) shows when new text arrives below.
 */
/**
 * A reply's latency as the transcript shows it: seconds with two decimals ("0.31 s").
 * @param {number} latencyMs
 */
export function latencyText(latencyMs) {
  return `${(Math.max(0, latencyMs) / 1000).toFixed(2)} s`;
}

/**
 * The latency figure's tooltip: where the wait went, when Walkie saw it (the reply's first
 * packet), else what the figure measures.
 * @param {number} latencyMs
 * @param {{localMs: number, providerMs: number, networkMs: number, playoutMs: number} | null} [split]
 */
export function latencyTitle(latencyMs, split) {
  if (!split) return "From the end of your turn to the first sound of this reply";
  return (
    `Heard ${Math.round(latencyMs)} ms after your turn ended: ${split.localMs} ms here (the key's tail), ` +
    `${split.providerMs} ms at the provider, ${split.networkMs} ms on the network, ` +
    `${split.playoutMs} ms from its first packet to the speaker`
  );
}

export function createTranscript(container, options = {}) {
  const doc = options.document ?? container.ownerDocument;
  const follow = options.follow ?? true;
  const pill = options.pill ?? null;
  // Whether the view follows the newest text. Only the reader's own scrolling changes it: a
  // window or a banner changing the view's height must not make it stop following.
  let following = follow;
  const atBottom = () =>
    container.scrollHeight - container.scrollTop - container.clientHeight <= NEAR_BOTTOM_PX;
  container.addEventListener?.("scroll", () => {
    following = follow && atBottom();
    if (following && pill) pill.hidden = true;
  });
  if (follow && typeof ResizeObserver === "function") {
    new ResizeObserver(() => {
      if (following) container.scrollTop = container.scrollHeight;
    }).observe(container);
  }
  /** @type {Map<string, {element: Element, text: Text, speaker: Element, role: string}>} */
  const messages = new Map();
  /** The message a TEXT_MESSAGE_CHUNK stream is writing to, per lane (subagentRunId or ""). */
  const pendingChunks = new Map();
  /** The conversation (AG-UI thread) the messages belong to; `null` before the first run. */
  let threadId = null;

  /**
   * A run of another thread is another conversation: what is on screen stays, under a divider,
   * and is no longer written to. Message ids start over in each conversation, so a new
   * `user-1` must never reopen the last conversation's.
   */
  function beginThread(id) {
    if (typeof id !== "string" || id === threadId) return;
    if (threadId !== null && messages.size > 0) {
      messages.clear();
      pendingChunks.clear();
      const divider = doc.createElement("p");
      divider.className = "conversation-divider";
      divider.setAttribute?.("role", "separator");
      divider.textContent = "New conversation";
      divider.dataset.threadId = id;
      container.appendChild(divider);
    }
    threadId = id;
  }

  /**
   * Takes the messages of conversation (thread) `id` off the screen, with the divider that
   * began it: a conversation deleted in the history is no longer readable here. Returns how
   * many messages went.
   */
  function forgetThread(id) {
    const shown = () =>
      [...container.children].filter((element) => ["message", "conversation-divider"].includes(element.className));
    const gone = shown().filter((element) => element.dataset.threadId === id);
    for (const element of gone) element.remove();
    if (id === threadId) {
      messages.clear();
      pendingChunks.clear();
    }
    // A divider with no conversation above it divides nothing.
    const [first] = shown();
    if (first?.className === "conversation-divider") first.remove();
    return gone.filter((element) => element.className === "message").length;
  }

  function removePlaceholder() {
    const placeholder = container.querySelector(".empty");
    if (placeholder) placeholder.remove();
  }

  function setSpeaker(view, role, name) {
    view.role = role;
    view.element.dataset.role = role;
    view.speaker.textContent = name ?? SPEAKER_LABELS[role] ?? role;
  }

  /** Shows the pictures `metadata` lists above the message's text (once: a message's pictures are set when it is sent). */
  function showPictures(view, metadata) {
    const pictures = picturesOf(metadata);
    if (pictures.length === 0 || view.element.querySelector(".message-pictures")) return;
    const strip = doc.createElement("div");
    strip.className = "message-pictures";
    pictures.forEach((picture, index) => {
      const image = doc.createElement("img");
      image.className = "message-picture";
      image.src = picture.thumbnail;
      image.alt = `Picture ${index + 1}, ${picture.widthPx} × ${picture.heightPx} pixels`;
      strip.appendChild(image);
    });
    view.speaker.after(strip);
  }

  function createMessage(id, role, name, content = "") {
    const element = doc.createElement("article");
    element.className = "message";
    element.dataset.messageId = id;
    if (threadId !== null) element.dataset.threadId = threadId;
    const speaker = doc.createElement("span");
    speaker.className = "message-speaker";
    const paragraph = doc.createElement("p");
    paragraph.className = "message-text";
    const text = doc.createTextNode(content);
    paragraph.appendChild(text);
    // Copies this message (the page handles the click for every message at once).
    const copy = doc.createElement("button");
    copy.type = "button";
    copy.className = "message-copy";
    copy.dataset.action = "copy-message";
    copy.textContent = "Copy";
    copy.title = "Copy this message";
    element.appendChild(speaker);
    element.appendChild(paragraph);
    element.appendChild(copy);
    const view = { element, text, speaker, role };
    setSpeaker(view, role, name);
    // A tool's arguments or answer sit in a small box that scrolls when long (a file read
    // whole): the keyboard reaches it, and a screen reader names it.
    if (role === "tool" || role === "tool-call") {
      paragraph.tabIndex = 0;
      paragraph.setAttribute("role", "region");
      paragraph.setAttribute("aria-label", speaker.textContent);
    }
    removePlaceholder();
    container.appendChild(element);
    messages.set(id, view);
    return view;
  }

  function open(id, role, name) {
    const view = messages.get(id) ?? createMessage(id, role ?? "assistant", name);
    // A reopen keeps the message where it is, with its established role and name.
    view.element.dataset.streaming = "";
    delete view.element.dataset.state;
    return view;
  }

  function openView(id, type) {
    const view = messages.get(id);
    if (!view || !("streaming" in view.element.dataset)) {
      throw new TranscriptSequenceError(`${type} for message '${id}', which is not open`);
    }
    return view;
  }

  function close(view) {
    delete view.element.dataset.streaming;
  }

  function closeChunks(lane) {
    if (lane === undefined) {
      for (const id of pendingChunks.values()) close(messages.get(id));
      pendingChunks.clear();
    } else if (pendingChunks.has(lane)) {
      close(messages.get(pendingChunks.get(lane)));
      pendingChunks.delete(lane);
    }
  }

  function chunk(event) {
    const lane = event.subagentRunId ?? "";
    const pendingId = pendingChunks.get(lane);
    const id = event.messageId ?? pendingId;
    if (id === undefined) throw new TranscriptSequenceError("first TEXT_MESSAGE_CHUNK without a messageId");
    if (pendingId !== undefined && pendingId !== id) closeChunks(lane);
    if (pendingChunks.get(lane) !== id) {
      open(id, event.role, event.name);
      pendingChunks.set(lane, id);
    }
    if (typeof event.delta === "string" && event.delta !== "") messages.get(id).text.appendData(event.delta);
  }

  /** Shows a tool call (once): the tool's name as its speaker, its arguments as its text. */
  function showToolCall(id, name, args = "") {
    if (messages.has(id)) return messages.get(id);
    return createMessage(id, "tool-call", `Used ${name}`, args);
  }

  /** Shows what a tool answered, or restates it. */
  function showToolAnswer(id, content) {
    const text = contentText(content);
    const view = messages.get(id) ?? createMessage(id, "tool", "Tool answer", text);
    if (view.text.data !== text) view.text.data = text;
    return view;
  }

  function snapshot(history) {
    const listed = new Map();
    for (const message of history) if (!listed.has(message.id)) listed.set(message.id, message);
    for (const [id, view] of messages) {
      if (listed.has(id) || !TEXT_ROLES.has(view.role)) continue;
      view.element.remove();
      messages.delete(id);
    }
    for (const message of listed.values()) {
      if (message.role === "tool" && typeof message.toolCallId === "string") {
        showToolAnswer(message.id, message.content);
        continue;
      }
      if (Array.isArray(message.toolCalls)) {
        for (const call of message.toolCalls) {
          if (typeof call?.id !== "string" || typeof call.function?.name !== "string") continue;
          const args = typeof call.function.arguments === "string" ? call.function.arguments : "";
          showToolCall(call.id, call.function.name, args);
        }
      }
      if (!TEXT_ROLES.has(message.role) || typeof message.content !== "string" && !Array.isArray(message.content)) {
        continue;
      }
      const content = contentText(message.content);
      const view = messages.get(message.id);
      if (!view) {
        showPictures(createMessage(message.id, message.role, message.name, content), message.metadata);
        continue;
      }
      showPictures(view, message.metadata);
      if (view.text.data !== content) view.text.data = content;
      setSpeaker(view, message.role, message.name);
    }
  }

  function interruptOpenMessages() {
    for (const view of messages.values()) {
      if ("streaming" in view.element.dataset) {
        close(view);
        view.element.dataset.state = "interrupted";
      }
    }
  }

  function keepNewestInView() {
    if (following) container.scrollTop = container.scrollHeight;
    else if (follow && pill) pill.hidden = false;
  }

  /** Back to the newest text, following it again (the pill's click). */
  function scrollToNewest() {
    following = follow;
    container.scrollTop = container.scrollHeight;
    if (pill) pill.hidden = true;
  }

  /**
   * Applies one AG-UI event: text messages and tool calls; other events are ignored.
   * @param {{ type: string, [field: string]: unknown }} event
   */
  function apply(event) {
    if (applyOne(event)) keepNewestInView();
  }

  /**
   * Applies AG-UI events in their order, then brings the newest text into view once: one
   * layout of the page for the batch, not one per event. An event that fails goes to
   * `onError`; the ones after it are still applied.
   * @param {Array<{ type: string, [field: string]: unknown }>} events
   * @param {(error: unknown) => void} onError
   */
  function applyAll(events, onError) {
    let changed = false;
    for (const event of events) {
      try {
        changed = applyOne(event) || changed;
      } catch (error) {
        onError(error);
      }
    }
    if (changed) keepNewestInView();
  }

  /** Applies one event to the page; whether it was one the transcript shows. */
  function applyOne(event) {
    const lane = event.subagentRunId ?? "";
    switch (event.type) {
      case "TEXT_MESSAGE_START":
        closeChunks(lane);
        showPictures(open(event.messageId, event.role, event.name), event.metadata);
        break;
      case "TEXT_MESSAGE_CONTENT": {
        closeChunks(lane);
        const view = openView(event.messageId, event.type);
        if (event.delta !== "") view.text.appendData(event.delta);
        showPictures(view, event.metadata);
        break;
      }
      case "TEXT_MESSAGE_END": {
        closeChunks(lane);
        const view = openView(event.messageId, event.type);
        showPictures(view, event.metadata);
        close(view);
        break;
      }
      case "TEXT_MESSAGE_CHUNK":
        chunk(event);
        break;
      case "MESSAGES_SNAPSHOT":
        closeChunks();
        snapshot(event.messages ?? []);
        break;
      case "TOOL_CALL_START":
        closeChunks(lane);
        showToolCall(event.toolCallId, event.toolCallName);
        break;
      case "TOOL_CALL_ARGS": {
        closeChunks(lane);
        const view = messages.get(event.toolCallId);
        if (!view) throw new TranscriptSequenceError(`TOOL_CALL_ARGS for call '${event.toolCallId}', which never started`);
        view.text.appendData(event.delta);
        break;
      }
      case "TOOL_CALL_END":
        closeChunks(lane);
        break;
      case "TOOL_CALL_RESULT":
        closeChunks(lane);
        showToolAnswer(event.messageId, event.content);
        break;
      case "RUN_STARTED":
        closeChunks();
        beginThread(event.threadId);
        break;
      case "RUN_FINISHED":
        closeChunks();
        break;
      case "RUN_ERROR":
        closeChunks();
        interruptOpenMessages();
        break;
      case "CUSTOM":
        closeChunks(lane);
        return applyMark(event.name, event.value ?? {});
      default:
        return false;
    }
    return true;
  }

  /**
   * A mark Walkie puts on a message, in the stream as a CUSTOM event after the message's own
   * (AG-UI has no word for these); a mark of another name, or on a message not shown, is
   * ignored. Whether it changed the page.
   * @param {string} name
   * @param {{ messageId?: string, latencyMs?: number, split?: object }} value
   */
  function applyMark(name, value) {
    switch (name) {
      case MARKS.interrupted:
        return markInterrupted(value.messageId);
      case MARKS.cancelled:
        return markCancelled(value.messageId);
      case MARKS.latency:
        return markLatency(value.messageId, value.latencyMs ?? 0, value.split ?? null);
      default:
        return false;
    }
  }

  /** Marks a message as cut off (a reply the user talked over). */
  function markInterrupted(id) {
    const view = messages.get(id);
    if (!view) return false;
    view.element.dataset.state = "interrupted";
    return true;
  }

  /** Marks a message as a recording the user took back (Escape), never sent. */
  function markCancelled(id) {
    const view = messages.get(id);
    if (!view) return false;
    view.element.dataset.state = "cancelled";
    return true;
  }

  /**
   * Shows, small beside the speaker, how long a reply took to be heard after the user's turn
   * ended.
   * @param {string} id
   * @param {number} latencyMs
   */
  function markLatency(id, latencyMs, split = null) {
    const view = messages.get(id);
    if (!view) return false;
    let figure = view.element.querySelector(".message-latency");
    if (!figure) {
      figure = doc.createElement("span");
      figure.className = "message-latency";
      view.speaker.after(figure);
    }
    figure.title = latencyTitle(latencyMs, split);
    figure.textContent = latencyText(latencyMs);
    return true;
  }

  /** The whole transcript as plain text, one paragraph per message, speaker first. */
  function plainText() {
    return [...messages.values()]
      .map((view) => {
        const shown = view.element.querySelectorAll?.(".message-picture").length ?? 0;
        const pictures = shown === 0 ? "" : shown === 1 ? "[a picture] " : `[${shown} pictures] `;
        return { view, said: `${pictures}${view.text.data.trim()}`.trim() };
      })
      .filter(({ said }) => said !== "")
      .map(({ view, said }) => {
        const cut = view.element.dataset.state === "interrupted" ? " (interrupted)" : "";
        return `${view.speaker.textContent}${cut}: ${said}`;
      })
      .join("\n\n");
  }

  return {
    apply,
    applyAll,
    forgetThread,
    markCancelled,
    markInterrupted,
    markLatency,
    plainText,
    scrollToNewest,
    /** The ids on screen, in display order. */
    messageIds: () => [...messages.keys()],
    /** The text currently shown for a message, or undefined. */
    textOf: (id) => messages.get(id)?.text.data,
  };
}
