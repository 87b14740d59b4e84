import { test } from "node:test";
import assert from "node:assert/strict";
import {
  RETENTION_DAYS,
  audioByMessage,
  continueState,
  conversationMeta,
  conversationTitle,
  createHistoryPanel,
  formatClock,
  formatDurationMs,
  formatStarted,
  retentionFromValue,
  retentionLabel,
  retentionToValue, interruptedReplies, cancelledRecordings, expiringSentence, searchStatus, hitMeta, exportRequest, exportedSentence, savingNote, savedChosenSentence, damageSentence } from "../history.js";

test("durations read in seconds, minutes or hours, never as raw milliseconds", () => {
  assert.equal(formatDurationMs(0), "0 s");
  assert.equal(formatDurationMs(42_400), "42 s");
  assert.equal(formatDurationMs(59_499), "59 s");
  assert.equal(formatDurationMs(60_000), "1 min 00 s");
  assert.equal(formatDurationMs(185_000), "3 min 05 s");
  assert.equal(formatDurationMs(3_600_000 + 2 * 60_000 + 30_000), "1 h 02 min");
  assert.equal(formatDurationMs(-5), "0 s");
});

test("the start time is shown in the zone asked for", () => {
  const at = Date.UTC(2024, 2, 12, 9, 5);
  const utc = formatStarted(at, { locale: "en-GB", timeZone: "UTC" });
  const paris = formatStarted(at, { locale: "en-GB", timeZone: "Europe/Paris" });
  assert.match(utc, /12 Mar 2024/);
  assert.match(utc, /09:05/);
  assert.match(paris, /10:05/);
});

test("a listing line says when, how long and how many turns", () => {
  const line = conversationMeta(
    { startedUnixMs: Date.UTC(2024, 2, 12, 9, 5), durationMs: 185_000, turnCount: 1 },
    { locale: "en-GB", timeZone: "UTC" },
  );
  assert.match(line, /^12 Mar 2024, 09:05 · 3 min 05 s · 1 turn$/);
  const many = conversationMeta(
    { startedUnixMs: 0, durationMs: 1_000, turnCount: 3 },
    { locale: "en-GB", timeZone: "UTC" },
  );
  assert.match(many, / · 1 s · 3 turns$/);
});

test("a conversation where nothing was said still has a title", () => {
  assert.equal(conversationTitle({ title: "Hello there …" }), "Hello there …");
  assert.equal(conversationTitle({ title: "  " }), "Nothing said");
  assert.equal(conversationTitle({}), "Nothing said");
});

test("each message gets the WAV of its own side of its turn, and only those that exist", () => {
  const audio = audioByMessage([
    {
      turn: 1,
      userMessageId: "user-1",
      assistantMessageId: "assistant-1",
      userAudio: { path: "/data/conversations/a/turns/0001-user.wav", durationMs: 1500 },
      assistantAudio: { path: "/data/conversations/a/turns/0001-assistant.wav", durationMs: 900 },
    },
    {
      turn: 2,
      userMessageId: "user-2",
      assistantMessageId: "assistant-2",
      userAudio: null,
      assistantAudio: { path: "/data/conversations/a/turns/0002-assistant.wav", durationMs: 300 },
    },
  ]);
  assert.deepEqual([...audio.keys()], ["user-1", "assistant-1", "assistant-2"]);
  assert.equal(audio.get("user-1").path, "/data/conversations/a/turns/0001-user.wav");
  assert.equal(audio.get("assistant-1").durationMs, 900);
  assert.equal(audio.get("user-1").label, "Play what you said in turn 1");
  assert.equal(audio.get("assistant-2").label, "Play Walkie's reply in turn 2");
  assert.equal(audio.has("user-2"), false);
});

test("retention round-trips between the select and the policy Rust reads", () => {
  for (const days of RETENTION_DAYS) {
    const value = days === null ? "forever" : String(days);
    assert.equal(retentionToValue(retentionFromValue(value)), value);
  }
  assert.equal(retentionFromValue("30"), 30);
  assert.equal(retentionFromValue("forever"), null);
  assert.equal(retentionToValue(14), "14");
  assert.equal(retentionToValue(null), "forever");
  assert.equal(retentionToValue(undefined), "forever");
  for (const bad of ["0", "-3", "2.5", "", "soon"]) {
    assert.throws(() => retentionFromValue(bad), RangeError, bad);
  }
});

test("retention choices read as words", () => {
  assert.equal(retentionLabel(null), "forever");
  assert.equal(retentionLabel(1), "for 1 day");
  assert.equal(retentionLabel(30), "for 30 days");
  assert.equal(retentionLabel(365), "for a year");
});

test("a player's clock shows minutes and seconds, and a dash while the length is unknown", () => {
  assert.equal(formatClock(0), "0:00");
  assert.equal(formatClock(1.8), "0:01");
  assert.equal(formatClock(61.2), "1:01");
  assert.equal(formatClock(754), "12:34");
  assert.equal(formatClock(Number.NaN), "–:––");
  assert.equal(formatClock(Number.POSITIVE_INFINITY), "–:––");
  assert.equal(formatClock(-1), "–:––");
});

// A tiny DOM: just what createHistoryPanel touches.
class FakeElement {
  constructor(tagName, id = "") {
    this.tagName = tagName.toUpperCase();
    this.id = id;
    this.hidden = false;
    this.disabled = false;
    this.title = "";
    this.textContent = "";
    this.className = "";
    this.value = "";
    this.dataset = {};
    this.children = [];
    this.options = [];
    this.listeners = {};
    this.open = false;
    this.focused = false;
  }
  addEventListener(type, listener) {
    (this.listeners[type] ??= []).push(listener);
  }
  dispatch(type) {
    for (const listener of this.listeners[type] ?? []) listener({ type, target: this });
  }
  click() {
    if (!this.disabled) this.dispatch("click");
  }
  append(...nodes) {
    this.children.push(...nodes.filter((node) => typeof node === "object"));
  }
  replaceChildren(...nodes) {
    this.children = [];
    this.append(...nodes);
  }
  querySelectorAll() {
    return [];
  }
  setAttribute(name, value) {
    this[name] = value;
  }
  focus() {
    this.focused = true;
  }
  showModal() {
    this.open = true;
  }
  close() {
    this.open = false;
    this.dispatch("close");
  }
}

/** The panel over a fake page; `answers` says what each command resolves to (or rejects with). */
function historyPage(answers) {
  const elements = new Map();
  const doc = {
    getElementById(id) {
      if (!elements.has(id)) elements.set(id, new FakeElement(id === "history" ? "dialog" : "div", id));
      return elements.get(id);
    },
    createElement: (tagName) => new FakeElement(tagName),
  };
  const calls = [];
  const invoke = async (command, args) => {
    calls.push([command, args]);
    const answer = answers[command];
    if (answer instanceof Error) throw answer.message;
    return typeof answer === "function" ? answer(args) : answer;
  };
  const panel = createHistoryPanel({
    document: doc,
    invoke,
    loadAudio: async () => "blob:unused",
    releaseAudio: () => {},
    createTranscript: () => ({ apply: () => {} }),
  });
  return { panel, calls, byId: (id) => doc.getElementById(id) };
}

/** Lets the panel's pending promises settle (one turn of the event loop). */
const settled = () => new Promise((resolve) => setImmediate(resolve));

const PAST = {
  id: "2024-03-10_09-00-00",
  title: "What is the capital of Portugal?",
  startedUnixMs: 0,
  durationMs: 4_000,
  turnCount: 1,
  current: false,
  open: false,
  messages: [],
  turns: [],
};

test("Continue asks Rust to go on with the opened conversation, then the panel closes", async () => {
  const { panel, calls, byId } = historyPage({
    history_list: [PAST],
    history_retention: null,
    history_open: PAST,
    history_continue: null,
  });
  await panel.open();
  assert.equal(byId("history").open, true);
  await panel.openConversation(PAST.id);
  const button = byId("history-continue");
  assert.equal(button.disabled, false);
  button.click();
  await settled();
  assert.deepEqual(calls.at(-1), ["history_continue", { id: PAST.id }]);
  assert.equal(byId("history").open, false, "the panel closes on success");
  assert.equal(byId("history-error").hidden, true);
});

test("a Continue that fails keeps the panel open and says what to do in one line", async () => {
  const why =
    "this conversation cannot be continued: it is no longer in the data folder (deleted or moved); choose another one";
  const { panel, byId } = historyPage({
    history_list: [PAST],
    history_retention: null,
    history_open: PAST,
    history_continue: new Error(why),
  });
  await panel.open();
  await panel.openConversation(PAST.id);
  byId("history-continue").click();
  await settled();
  assert.equal(byId("history").open, true, "the panel stays open");
  const error = byId("history-error");
  assert.equal(error.hidden, false);
  assert.equal(error.textContent, why);
  assert.doesNotMatch(error.textContent, /\n/);
});

test("the conversation going on now cannot be continued, and the button says why", async () => {
  const now = { ...PAST, current: true, open: true };
  const { panel, calls, byId } = historyPage({
    history_list: [now],
    history_retention: null,
    history_open: now,
  });
  await panel.open();
  await panel.openConversation(now.id);
  const button = byId("history-continue");
  assert.equal(button.disabled, true);
  assert.match(button.title, /going on now/);
  button.click();
  await settled();
  assert.equal(calls.some(([command]) => command === "history_continue"), false);
  assert.deepEqual(continueState(PAST), {
    disabled: false,
    title: "Hang up the call under way and go on with this conversation",
  });
});

test("the replies the user talked over are marked in an opened conversation", () => {
  const turns = [
    { turn: 1, assistantMessageId: "assistant-1", interrupted: true },
    { turn: 2, assistantMessageId: "assistant-2", interrupted: false },
  ];
  assert.deepEqual(interruptedReplies(turns), ["assistant-1"]);
  assert.deepEqual(interruptedReplies([]), []);
});

test("the recordings the user took back are marked in an opened conversation", () => {
  const turns = [
    { turn: 1, userMessageId: "user-1", cancelled: false },
    { turn: 2, userMessageId: "user-2", cancelled: true },
  ];
  assert.deepEqual(cancelledRecordings(turns), ["user-2"]);
  assert.deepEqual(cancelledRecordings([]), []);
});

test("a shorter retention says how many conversations it deletes, and that it cannot be undone", () => {
  assert.equal(
    expiringSentence(12, 7),
    "12 conversations are older than 7 days: keeping conversations for 7 days deletes them from disk now, transcripts and recordings. This cannot be undone."
  );
  assert.equal(
    expiringSentence(1, 365),
    "1 conversation is older than a year: keeping conversations for a year deletes it from disk now, transcripts and recordings. This cannot be undone."
  );
});

test("a search says how many messages it found, that none matches, or that it shows the first", () => {
  assert.equal(searchStatus(0, " walrus ", 50), "Nothing said matches “walrus”.");
  assert.equal(searchStatus(1, "whale", 50), "1 message found.");
  assert.equal(searchStatus(7, "whale", 50), "7 messages found.");
  assert.equal(searchStatus(50, "a", 50), "The first 50 messages found; type more words to narrow it.");
});

test("a hit says when its conversation started and who spoke", () => {
  const conversation = { startedUnixMs: Date.UTC(2026, 11, 6, 9, 30) };
  const options = { locale: "en-GB", timeZone: "UTC" };
  assert.equal(hitMeta({ role: "user" }, conversation, options), "6 Dec 2026, 09:30 · You");
  assert.equal(hitMeta({ role: "assistant" }, conversation, options), "6 Dec 2026, 09:30 · Assistant");
  assert.equal(hitMeta({ role: "assistant" }, undefined, options), "Assistant", "a conversation not listed");
  assert.equal(hitMeta({ role: "title" }, conversation, options), "6 Dec 2026, 09:30 · Its name");
});

test("Export asks for what the dialog chose: audio with its channels and format, or a transcript", () => {
  assert.deepEqual(exportRequest("audio", "stereo", "oggOpus"), { kind: "audio", channels: "stereo", format: "oggOpus" });
  assert.deepEqual(exportRequest("captions", "stereo", "wav"), { kind: "captions" });
  assert.deepEqual(exportRequest("markdown", "mixed", "wav"), { kind: "markdown" });
});

test("an export says where it went, and names the turns silent in it", () => {
  assert.equal(exportedSentence({ path: "/home/me/a.wav", leftOut: [] }), "Exported to /home/me/a.wav");
  assert.equal(
    exportedSentence({ path: "/home/me/a.wav", leftOut: ["turns/0002-user.wav"] }),
    "Exported to /home/me/a.wav; turns/0002-user.wav could not be read and is silent in it (Open folder to see them)."
  );
  assert.equal(
    exportedSentence({ path: "/a.opus", leftOut: ["x", "y"] }),
    "Exported to /a.opus; 2 turn recordings could not be read and are silent in it (Open folder to see them)."
  );
});

test("Export… opens its dialog, and choosing where writes the chosen kind and says where", async () => {
  const { panel, calls, byId } = historyPage({
    history_list: [PAST],
    history_retention: null,
    history_open: PAST,
    history_export: { path: "/home/me/walkie.md", leftOut: [] },
  });
  await panel.open();
  await panel.openConversation(PAST.id);
  byId("history-export").click();
  const dialog = byId("export-dialog");
  assert.equal(dialog.open, true);
  dialog.returnValue = "export";
  dialog.close();
  await settled();
  assert.deepEqual(calls.at(-1), ["history_export", { id: PAST.id, export: { kind: "markdown" } }]);
  assert.equal(byId("history-notice").textContent, "Exported to /home/me/walkie.md");
});

test("the line under the talk button says what is not saved, and nothing when all of it is", () => {
  assert.equal(savingNote("everything"), "");
  assert.equal(savingNote("transcriptsOnly"), "Saving this conversation's words, not its audio.");
  assert.equal(savingNote("nothing"), "Nothing of this conversation is saved.");
});

test("choosing what to save keeps it with the settings and says it counts from the next conversation", async () => {
  const { panel, calls, byId } = historyPage({
    history_list: [PAST],
    history_retention: null,
    history_saved: "everything",
    history_set_saved: null,
  });
  await panel.open();
  const select = byId("history-saved");
  assert.equal(select.value, "everything");
  select.value = "nothing";
  select.dispatch("change");
  await settled();
  assert.deepEqual(calls.at(-1), ["history_set_saved", { saved: "nothing" }]);
  assert.equal(select.value, "nothing");
  assert.equal(byId("history-notice").textContent, savedChosenSentence("nothing"));
  assert.equal(savedChosenSentence("nothing"), "From the next conversation on, nothing is saved.");
});

test("a choice of what to save that cannot be kept goes back and says why", async () => {
  const { panel, byId } = historyPage({
    history_list: [PAST],
    history_retention: null,
    history_saved: "transcriptsOnly",
    history_set_saved: new Error("what is saved could not be saved: the settings file is read-only"),
  });
  await panel.open();
  const select = byId("history-saved");
  assert.equal(select.value, "transcriptsOnly");
  select.value = "everything";
  select.dispatch("change");
  await settled();
  assert.equal(select.value, "transcriptsOnly", "back to what is kept");
  assert.match(byId("history-error").textContent, /read-only/);
});

test("a damaged conversation says what could not be read; one with no start says its date is unknown", () => {
  assert.equal(damageSentence({ damaged: null }), "");
  assert.equal(
    damageSentence({ damaged: "a line of its journal could not be read; the rest is shown" }),
    "Not all of it could be read: a line of its journal could not be read; the rest is shown."
  );
  assert.equal(
    conversationMeta({ startedUnixMs: -9223372036854775808, durationMs: 0, turnCount: 0 }),
    "Date unknown · 0 turns"
  );
});

test("the list marks a damaged conversation and says why under it", async () => {
  const damaged = { ...PAST, id: "2023-01-01_00-00-00", damaged: "its journal does not begin with a start record" };
  const { panel, byId } = historyPage({ history_list: [PAST, damaged], history_retention: null });
  await panel.open();
  const [whole, marked] = byId("history-list").children.map((item) => item.children[0]);
  assert.equal("damaged" in whole.dataset, false);
  assert.equal("damaged" in marked.dataset, true);
  const why = marked.children.find((child) => child.className === "history-item-damage");
  assert.equal(why.textContent, "Not all of it could be read: its journal does not begin with a start record.");
});
