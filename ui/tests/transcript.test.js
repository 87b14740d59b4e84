import { test } from "node:test";
import assert from "node:assert/strict";
import { createTranscript, latencyText, latencyTitle, MARKS, picturesOf, TranscriptSequenceError } from "../transcript.js";

test("a reply's latency says where the wait went when it is known", () => {
  assert.equal(
    latencyTitle(262, { localMs: 200, providerMs: 38, networkMs: 2, playoutMs: 22 }),
    "Heard 262 ms after your turn ended: 200 ms here (the key's tail), 38 ms at the provider, 2 ms on the network, 22 ms from its first packet to the speaker",
  );
  assert.equal(latencyTitle(262, null), "From the end of your turn to the first sound of this reply");
});

test("a reply's latency shows in seconds with two decimals", () => {
  assert.equal(latencyText(312), "0.31 s");
  assert.equal(latencyText(1_005), "1.00 s");
  assert.equal(latencyText(-3), "0.00 s");
});

// A tiny DOM: just what transcript.js touches, plus counters that show how the page changed.
class FakeText {
  constructor(data) {
    this.data = data;
    this.appends = 0;
  }
  appendData(more) {
    this.data += more;
    this.appends += 1;
  }
  get textContent() {
    return this.data;
  }
}

class FakeElement {
  constructor(tagName) {
    this.tagName = tagName.toUpperCase();
    this.className = "";
    this.dataset = {};
    this.childNodes = [];
    this.parent = null;
    this.insertions = 0;
    this.scrollTop = 0;
    this.scrollHeight = 0;
    this.clientHeight = 0;
    this.listeners = {};
  }
  addEventListener(type, listener) {
    (this.listeners[type] ??= []).push(listener);
  }
  setAttribute(name, value) {
    (this.attributes ??= {})[name] = String(value);
  }
  getAttribute(name) {
    return this.attributes?.[name] ?? null;
  }
  /** The reader scrolls to `top`, as a browser reports it. */
  readerScrollsTo(top) {
    this.scrollTop = top;
    for (const listener of this.listeners.scroll ?? []) listener();
  }
  appendChild(child) {
    if (child.parent) child.remove();
    child.parent = this;
    this.childNodes.push(child);
    this.insertions += 1;
    return child;
  }
  remove() {
    if (!this.parent) return;
    this.parent.childNodes = this.parent.childNodes.filter((node) => node !== this);
    this.parent = null;
  }
  get children() {
    return this.childNodes.filter((node) => node instanceof FakeElement);
  }
  get textContent() {
    return this.childNodes.map((node) => node.textContent).join("");
  }
  set textContent(text) {
    this.childNodes = [new FakeText(text)];
  }
  after(node) {
    if (node.parent) node.remove();
    const siblings = this.parent.childNodes;
    siblings.splice(siblings.indexOf(this) + 1, 0, node);
    node.parent = this.parent;
  }
  querySelectorAll(selector) {
    const className = selector.replace(/^\./, "");
    return this.children.flatMap((child) => [
      ...(child.className.split(" ").includes(className) ? [child] : []),
      ...child.querySelectorAll(selector),
    ]);
  }
  querySelector(selector) {
    const className = selector.replace(/^\./, "");
    for (const child of this.children) {
      if (child.className.split(" ").includes(className)) return child;
      const found = child.querySelector(selector);
      if (found) return found;
    }
    return null;
  }
}

const fakeDocument = {
  createElement: (tagName) => new FakeElement(tagName),
  createTextNode: (data) => new FakeText(data),
};

function transcriptPage() {
  const container = new FakeElement("main");
  const placeholder = container.appendChild(new FakeElement("p"));
  placeholder.className = "empty";
  container.insertions = 0;
  const pill = { hidden: true };
  const transcript = createTranscript(container, { document: fakeDocument, pill });
  const feed = (...events) => events.forEach((event) => transcript.apply(event));
  const articles = () => container.children.filter((child) => child.className === "message");
  const shown = () =>
    articles().map((article) => ({
      id: article.dataset.messageId,
      role: article.dataset.role,
      speaker: article.children[0].textContent,
      text: article.children[1].textContent,
    }));
  return { container, transcript, feed, articles, shown, pill };
}

const run = (runId = "r1") => ({ type: "RUN_STARTED", threadId: "t", runId });
const finished = (runId = "r1") => ({ type: "RUN_FINISHED", threadId: "t", runId });
const start = (messageId, role, extra = {}) => ({ type: "TEXT_MESSAGE_START", messageId, role, ...extra });
const content = (messageId, delta) => ({ type: "TEXT_MESSAGE_CONTENT", messageId, delta });
const end = (messageId) => ({ type: "TEXT_MESSAGE_END", messageId });

test("a streamed message appears at its start and grows by appending to one text node", () => {
  const page = transcriptPage();
  page.feed(run(), start("a1", "assistant"));
  const [article] = page.articles();
  const textNode = article.children[1].childNodes[0];
  page.feed(content("a1", "Hel"), content("a1", "lo"), content("a1", ", world"), end("a1"), finished());

  assert.deepEqual(page.shown(), [{ id: "a1", role: "assistant", speaker: "Walkie", text: "Hello, world" }]);
  assert.equal(page.articles()[0], article, "the message element is never replaced");
  assert.equal(article.children[1].childNodes[0], textNode, "the text node is never replaced");
  assert.equal(textNode.appends, 3, "each delta is one append");
  assert.equal(page.container.insertions, 1, "the transcript itself was touched once, to add the message");
});

test("the placeholder disappears when the first message arrives", () => {
  const page = transcriptPage();
  assert.ok(page.container.querySelector(".empty"));
  page.feed(run(), start("u1", "user"));
  assert.equal(page.container.querySelector(".empty"), null);
});

test("a user message opened at speech start stays above the reply its late transcript follows", () => {
  const page = transcriptPage();
  page.feed(
    run(),
    start("user-1", "user"),
    end("user-1"),
    start("assistant-1", "assistant"),
    content("assistant-1", "Sure"),
    start("user-1", "user"),
    content("user-1", "Book a table"),
    end("user-1"),
    end("assistant-1"),
    finished(),
  );
  assert.deepEqual(
    page.shown().map(({ id, text }) => [id, text]),
    [
      ["user-1", "Book a table"],
      ["assistant-1", "Sure"],
    ],
  );
});

test("a reopened message continues where it stopped, closed but not sealed", () => {
  const page = transcriptPage();
  page.feed(run(), start("u1", "user"), content("u1", "What's "), end("u1"));
  assert.equal(page.articles()[0].dataset.streaming, undefined, "closed after END");
  page.feed(start("u1", "user"), content("u1", "the time?"));
  assert.equal(page.articles()[0].dataset.streaming, "", "streaming again after the reopening START");
  page.feed(end("u1"), finished());
  assert.equal(page.transcript.textOf("u1"), "What's the time?");
  assert.equal(page.articles().length, 1);
});

test("a reopen keeps the established role and speaker name", () => {
  const page = transcriptPage();
  page.feed(run(), start("m1", "user", { name: "Ann" }), content("m1", "a"), end("m1"));
  page.feed(start("m1", "assistant"), content("m1", "b"), end("m1"), finished());
  assert.deepEqual(page.shown(), [{ id: "m1", role: "user", speaker: "Ann", text: "ab" }]);
});

test("a snapshot restates listed messages, drops unlisted ones and appends new ones in order", () => {
  const page = transcriptPage();
  page.feed(run(), start("m1", "assistant"), content("m1", "draft"), end("m1"));
  page.feed(start("m2", "assistant"), content("m2", "gone"), end("m2"));
  const firstArticle = page.articles()[0];
  page.feed({
    type: "MESSAGES_SNAPSHOT",
    messages: [
      { id: "u0", role: "user", content: [{ type: "text", text: "question" }] },
      { id: "m1", role: "assistant", content: "final answer" },
      { id: "t1", role: "tool", content: "tool output", toolCallId: "c1" },
    ],
  });
  assert.deepEqual(
    page.shown().map(({ id, text }) => [id, text]),
    [
      ["m1", "final answer"],
      ["u0", "question"],
      ["t1", "tool output"],
    ],
  );
  assert.equal(page.articles()[0], firstArticle, "a restated message keeps its element");
});

test("content keeps appending to a message that a snapshot restated while open", () => {
  const page = transcriptPage();
  page.feed(run(), start("m1", "assistant"), content("m1", "a"));
  page.feed({ type: "MESSAGES_SNAPSHOT", messages: [{ id: "m1", role: "assistant", content: "A" }] });
  page.feed(content("m1", "b"), end("m1"), finished());
  assert.equal(page.transcript.textOf("m1"), "Ab");
});

test("chunks open, continue and close messages like their expanded events", () => {
  const page = transcriptPage();
  page.feed(
    run(),
    { type: "TEXT_MESSAGE_CHUNK", messageId: "u1", role: "user", name: "Ann", delta: "Hi, I'm Ann" },
    { type: "TEXT_MESSAGE_CHUNK", delta: "." },
    { type: "TEXT_MESSAGE_CHUNK", messageId: "a1", delta: "Hello" },
    finished(),
  );
  assert.deepEqual(page.shown(), [
    { id: "u1", role: "user", speaker: "Ann", text: "Hi, I'm Ann." },
    { id: "a1", role: "assistant", speaker: "Walkie", text: "Hello" },
  ]);
  assert.ok(page.articles().every((article) => article.dataset.streaming === undefined), "all closed");
});

test("a run error marks the messages it left open as interrupted, keeping their text", () => {
  const page = transcriptPage();
  page.feed(run(), start("a1", "assistant"), content("a1", "half"), { type: "RUN_ERROR", message: "boom" });
  const [article] = page.articles();
  assert.equal(article.dataset.state, "interrupted");
  assert.equal(article.dataset.streaming, undefined);
  assert.equal(page.transcript.textOf("a1"), "half");
});

test("text is shown exactly as sent: no trimming, no normalisation", () => {
  const page = transcriptPage();
  page.feed(run(), start("m1"), content("m1", "Cafe"), content("m1", "\u0301"), content("m1", "\n\t "));
  assert.equal(page.transcript.textOf("m1"), "Cafe\u0301\n\t ");
});

test("content for a message that is not open is an error, never mended", () => {
  const page = transcriptPage();
  page.feed(run());
  assert.throws(() => page.transcript.apply(content("ghost", "boo")), TranscriptSequenceError);
  page.feed(start("m1"), end("m1"));
  assert.throws(() => page.transcript.apply(content("m1", "late")), TranscriptSequenceError);
  assert.throws(() => page.transcript.apply(end("m1")), TranscriptSequenceError);
});

test("a batch is applied in order and brought into view with one layout, a bad event not stopping it", () => {
  const page = transcriptPage();
  const { container } = page;
  let heightReads = 0;
  Object.assign(container, { clientHeight: 100, scrollTop: 0 });
  Object.defineProperty(container, "scrollHeight", {
    get: () => {
      heightReads += 1;
      return 400;
    },
  });
  const errors = [];
  page.transcript.applyAll(
    [run(), start("a1", "assistant"), content("a1", "Hel"), content("ghost", "boo"), content("a1", "lo"), end("a1")],
    (error) => errors.push(error),
  );
  assert.deepEqual(page.shown(), [{ id: "a1", role: "assistant", speaker: "Walkie", text: "Hello" }]);
  assert.equal(errors.length, 1);
  assert.ok(errors[0] instanceof TranscriptSequenceError, "the bad event's own error");
  assert.equal(heightReads, 1, "the page's height is read once for the batch");
  assert.equal(container.scrollTop, 400, "followed to the bottom");
});

test("events outside the text-message family are ignored", () => {
  const page = transcriptPage();
  page.feed(run(), { type: "CUSTOM", name: "x", value: 1 }, { type: "SOMETHING_NEW" });
  assert.deepEqual(page.shown(), []);
});

test("the view follows new text until the reader scrolls up, then offers the pill", () => {
  const page = transcriptPage();
  const { container, pill } = page;
  Object.assign(container, { clientHeight: 100, scrollHeight: 100, scrollTop: 0 });
  page.feed(run(), start("m1"));
  container.scrollHeight = 400;
  page.feed(content("m1", "long text"));
  assert.equal(container.scrollTop, 400, "followed to the bottom");
  // The view gets shorter (a banner appears): it still follows.
  container.clientHeight = 60;
  container.scrollHeight = 500;
  page.feed(content("m1", " and more"));
  assert.equal(container.scrollTop, 500, "still following after the view changed height");
  assert.equal(pill.hidden, true);
  container.readerScrollsTo(50); // the reader scrolls up to read
  container.scrollHeight = 800;
  page.feed(content("m1", " more"));
  assert.equal(container.scrollTop, 50, "left where the reader is");
  assert.equal(pill.hidden, false, "the pill says there is more below");
  page.transcript.scrollToNewest();
  assert.equal(container.scrollTop, 800);
  assert.equal(pill.hidden, true);
  container.scrollHeight = 900;
  page.feed(content("m1", " again"));
  assert.equal(container.scrollTop, 900, "following again");
});

test("scrolling back down to the newest text follows again and hides the pill", () => {
  const page = transcriptPage();
  const { container, pill } = page;
  Object.assign(container, { clientHeight: 100, scrollHeight: 300, scrollTop: 200 });
  page.feed(run(), start("m1"));
  container.readerScrollsTo(0);
  container.scrollHeight = 400;
  page.feed(content("m1", "text"));
  assert.equal(pill.hidden, false);
  container.readerScrollsTo(300 - 10); // within the last 48 px
  assert.equal(pill.hidden, true);
  container.scrollHeight = 600;
  page.feed(content("m1", " more"));
  assert.equal(container.scrollTop, 600);
});

test("every valid conformance case renders the history the Rust assembler expects", async () => {
  const { readFile } = await import("node:fs/promises");
  const casesUrl = new URL("../../crates/agui/tests/conformance/ag-ui-text-messages.json", import.meta.url);
  const cases = JSON.parse(await readFile(casesUrl, "utf8"));
  const valid = cases.filter(
    (c) => c.expect.outcome === "ok" && !c.advisory && c.events.every((e) => typeof e === "object"),
  );
  assert.ok(valid.length >= 20, `only ${valid.length} valid cases found`);
  for (const conformanceCase of valid) {
    const page = transcriptPage();
    page.feed(...conformanceCase.events);
    const expected = conformanceCase.expect.messages.map((m) => ({
      id: m.id,
      role: m.role,
      speaker: m.name ?? { user: "You", assistant: "Walkie", system: "System", developer: "Developer" }[m.role],
      text: m.content,
    }));
    assert.deepEqual(page.shown(), expected, conformanceCase.name);
  }
});

test("a reply the user talked over is marked interrupted after its end", () => {
  const page = transcriptPage();
  page.feed(run(), start("u1", "user"), content("u1", "Tell me a story"), end("u1"));
  page.feed(start("a1", "assistant"), content("a1", "Once upon"), end("a1"));
  assert.equal(page.transcript.markInterrupted("a1"), true);
  assert.equal(page.articles()[1].dataset.state, "interrupted");
  assert.equal(page.articles()[0].dataset.state, undefined, "only the cut reply is marked");
  assert.equal(page.transcript.markInterrupted("nobody"), false);
});

test("marks come in the stream as CUSTOM events: a cut reply, a recording not sent, a reply's latency", () => {
  const page = transcriptPage();
  const mark = (name, value) => ({ type: "CUSTOM", name, value });
  page.feed(run(), start("u1", "user"), end("u1"), mark(MARKS.cancelled, { messageId: "u1" }));
  page.feed(start("u2", "user"), content("u2", "Tell me a story"), end("u2"));
  page.feed(start("a2", "assistant"), content("a2", "Once upon"));
  page.feed(mark(MARKS.latency, { messageId: "a2", latencyMs: 310 }));
  page.feed(end("a2"), mark(MARKS.interrupted, { messageId: "a2" }));
  page.feed(mark("someone.else", { messageId: "a2" }), mark(MARKS.interrupted, { messageId: "nobody" }));
  const [cancelled, asked, cut] = page.articles();
  assert.equal(cancelled.dataset.state, "cancelled");
  assert.equal(asked.dataset.state, undefined);
  assert.equal(cut.dataset.state, "interrupted");
  assert.equal(cut.querySelector(".message-latency")?.textContent, latencyText(310));
});

test("a recording taken back with Escape is marked not sent after its end", () => {
  const page = transcriptPage();
  page.feed(run(), start("u1", "user"), end("u1"));
  assert.equal(page.transcript.markCancelled("u1"), true);
  assert.equal(page.articles()[0].dataset.state, "cancelled");
  assert.equal(page.transcript.markCancelled("nobody"), false);
  assert.equal(page.transcript.plainText(), "", "nothing was said");
});

test("the whole transcript copies as speaker-first paragraphs, cut replies said so", () => {
  const page = transcriptPage();
  page.feed(run(), start("u1", "user"), content("u1", " Tell me a story "), end("u1"));
  page.feed(start("a1", "assistant"), content("a1", "Once upon"), end("a1"));
  page.feed(start("u2", "user"), end("u2"));
  page.transcript.markInterrupted("a1");
  assert.equal(page.transcript.plainText(), "You: Tell me a story\n\nWalkie (interrupted): Once upon");
});

test("every message carries its own copy button", () => {
  const page = transcriptPage();
  page.feed(run(), start("u1", "user"), content("u1", "Hi"), end("u1"));
  const copy = page.articles()[0].children[2];
  assert.equal(copy.dataset.action, "copy-message");
  assert.equal(copy.textContent, "Copy");
});

test("a run of another thread is a new conversation under a divider; its user-1 is a new message", () => {
  const page = transcriptPage();
  page.feed(run(), start("user-1", "user"), content("user-1", "First question"), end("user-1"), finished());
  page.feed(
    { type: "RUN_STARTED", threadId: "t2", runId: "r2" },
    start("user-1", "user"),
    content("user-1", "Second conversation"),
    end("user-1"),
  );
  assert.deepEqual(
    page.shown().map((message) => message.text),
    ["First question", "Second conversation"],
    "the first conversation's message is untouched",
  );
  const dividers = page.container.children.filter((child) => child.className === "conversation-divider");
  assert.equal(dividers.length, 1);
  assert.equal(page.container.children.indexOf(dividers[0]), 1, "between the two conversations");
  // A snapshot of the new conversation leaves the old one on screen.
  page.feed({ type: "MESSAGES_SNAPSHOT", messages: [{ id: "user-1", role: "user", content: "Second conversation" }] });
  assert.equal(page.shown().length, 2);
  // More runs of the same thread add no divider.
  page.feed(finished("r2"), { type: "RUN_STARTED", threadId: "t2", runId: "r3" });
  assert.equal(page.container.children.filter((child) => child.className === "conversation-divider").length, 1);
});

test("a conversation deleted in the history leaves the screen with its divider", () => {
  const page = transcriptPage();
  const conversation = (threadId, runId, text) => [
    { type: "RUN_STARTED", threadId, runId },
    start("user-1", "user"),
    content("user-1", text),
    end("user-1"),
    { type: "RUN_FINISHED", threadId, runId },
  ];
  page.feed(...conversation("t1", "r1", "First"), ...conversation("t2", "r2", "Second"));
  page.feed(...conversation("t3", "r3", "Third"));
  assert.equal(page.transcript.forgetThread("t2"), 1);
  assert.deepEqual(page.shown().map((message) => message.text), ["First", "Third"]);
  assert.equal(page.container.children.filter((child) => child.className === "conversation-divider").length, 1);
  // The first one gone, nothing is above the divider: it goes too.
  assert.equal(page.transcript.forgetThread("t1"), 1);
  assert.deepEqual(page.shown().map((message) => message.text), ["Third"]);
  assert.equal(page.container.children[0].className, "message", "no divider over nothing");
  // The one on screen now, deleted after it ended: gone, and a new message is a new one.
  assert.equal(page.transcript.forgetThread("t3"), 1);
  assert.deepEqual(page.shown(), []);
  assert.equal(page.transcript.forgetThread("unknown"), 0);
});

const THUMBNAIL = "data:image/jpeg;base64,/9j/4AAQSkZJRgABAQAAAQABAAD/2w==";

test("the pictures a typed message showed appear above its text, described by their size", () => {
  const page = transcriptPage();
  const pictures = [
    { thumbnail: THUMBNAIL, widthPx: 1024, heightPx: 768 },
    { thumbnail: THUMBNAIL, widthPx: 300, heightPx: 200 },
  ];
  page.feed(
    run(),
    start("user-1", "user"),
    content("user-1", "What is this?"),
    { type: "TEXT_MESSAGE_END", messageId: "user-1", metadata: { pictures } },
  );

  const [article] = page.articles();
  const [speaker, strip, text] = article.children;
  assert.equal(speaker.textContent, "You");
  assert.equal(strip.className, "message-pictures");
  assert.deepEqual(
    strip.children.map((image) => [image.src, image.alt]),
    [
      [THUMBNAIL, "Picture 1, 1024 × 768 pixels"],
      [THUMBNAIL, "Picture 2, 300 × 200 pixels"],
    ],
  );
  assert.equal(text.textContent, "What is this?");
  assert.equal(page.transcript.plainText(), "You: [2 pictures] What is this?");
});

test("a saved conversation's pictures come back with its messages (History's snapshot)", () => {
  const page = transcriptPage();
  page.feed(run(), {
    type: "MESSAGES_SNAPSHOT",
    messages: [
      { id: "user-1", role: "user", content: "", metadata: { pictures: [{ thumbnail: THUMBNAIL, widthPx: 640, heightPx: 480 }] } },
      { id: "assistant-1", role: "assistant", content: "A cat." },
    ],
  });

  const [user, assistant] = page.articles();
  assert.equal(user.querySelectorAll(".message-picture").length, 1);
  assert.equal(assistant.querySelectorAll(".message-picture").length, 0);
  assert.equal(page.transcript.plainText(), "You: [a picture]\n\nWalkie: A cat.");
});

test("a thumbnail that is not an inline JPEG or PNG is never loaded", () => {
  for (const thumbnail of [
    "file:///etc/passwd",
    "https://example.com/cat.jpg",
    "data:image/svg+xml;base64,PHN2Zz4=",
    "data:image/jpeg;base64,AAAA\" onerror=\"alert(1)",
  ]) {
    assert.deepEqual(picturesOf({ pictures: [{ thumbnail, widthPx: 1, heightPx: 1 }] }), [], thumbnail);
  }
  assert.deepEqual(picturesOf({ pictures: [{ thumbnail: THUMBNAIL, widthPx: "1", heightPx: 1 }] }), []);
  assert.deepEqual(picturesOf(null), []);
  assert.deepEqual(picturesOf({ pictures: "many" }), []);
});

test("a tool call shows the tool and its arguments, then what it answered, where they happened", () => {
  const page = transcriptPage();
  page.feed(
    run(),
    start("user-1", "user"),
    content("user-1", "What is 2 + 3?"),
    end("user-1"),
    { type: "TOOL_CALL_START", toolCallId: "call_1", toolCallName: "tests__add" },
    { type: "TOOL_CALL_ARGS", toolCallId: "call_1", delta: '{"a": 2, ' },
    { type: "TOOL_CALL_ARGS", toolCallId: "call_1", delta: '"b": 3}' },
    { type: "TOOL_CALL_END", toolCallId: "call_1" },
    finished(),
    run("r2"),
    { type: "TOOL_CALL_RESULT", messageId: "call_1-result", toolCallId: "call_1", content: "5", role: "tool" },
    start("assistant-1", "assistant"),
    content("assistant-1", "It is 5."),
    end("assistant-1"),
    finished("r2"),
  );
  assert.deepEqual(page.shown(), [
    { id: "user-1", role: "user", speaker: "You", text: "What is 2 + 3?" },
    { id: "call_1", role: "tool-call", speaker: "Used tests__add", text: '{"a": 2, "b": 3}' },
    { id: "call_1-result", role: "tool", speaker: "Tool answer", text: "5" },
    { id: "assistant-1", role: "assistant", speaker: "Walkie", text: "It is 5." },
  ]);
  assert.throws(
    () => page.transcript.apply({ type: "TOOL_CALL_ARGS", toolCallId: "call_9", delta: "{}" }),
    TranscriptSequenceError,
  );
  // Their boxes scroll when long (a file read whole): the keyboard reaches them, named.
  const boxes = page.container.children
    .filter((message) => message.dataset.role === "tool" || message.dataset.role === "tool-call")
    .map((message) => message.children.find((child) => child.className === "message-text"));
  assert.deepEqual(
    boxes.map((box) => [box.tabIndex, box.getAttribute("role"), box.getAttribute("aria-label")]),
    [
      [0, "region", "Used tests__add"],
      [0, "region", "Tool answer"],
    ],
  );
});

test("a snapshot shows the tool calls an assistant message holds and the tool messages answering them", () => {
  const page = transcriptPage();
  page.feed({
    type: "MESSAGES_SNAPSHOT",
    messages: [
      { id: "user-1", role: "user", content: "Read my notes" },
      {
        id: "call_1",
        role: "assistant",
        toolCalls: [{ id: "call_1", type: "function", function: { name: "files__read", arguments: '{"path":"n.txt"}' } }],
      },
      { id: "call_1-result", role: "tool", toolCallId: "call_1", content: [{ type: "text", text: "buy milk" }] },
      { id: "assistant-1", role: "assistant", content: "They say: buy milk." },
    ],
  });
  assert.deepEqual(page.shown(), [
    { id: "user-1", role: "user", speaker: "You", text: "Read my notes" },
    { id: "call_1", role: "tool-call", speaker: "Used files__read", text: '{"path":"n.txt"}' },
    { id: "call_1-result", role: "tool", speaker: "Tool answer", text: "buy milk" },
    { id: "assistant-1", role: "assistant", speaker: "Walkie", text: "They say: buy milk." },
  ]);
});
