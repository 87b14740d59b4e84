import { test } from "node:test";
import assert from "node:assert/strict";
import {
  connectAction,
  describeError,
  failureStatus,
  renderBanner,
  renderStatus,
  statusView,
  talkControl,
} from "../status.js";

/** A status as Rust sends it for a sentence that opens with a headline. */
const problem = (state, headline, reason, more = {}) => ({
  state,
  detail: `${headline}: ${reason}`,
  headline,
  reason,
  ...more,
});

/** The few DOM calls renderStatus makes: spans created and put in, their text read back. */
const statusElement = () => {
  const element = {
    dataset: {},
    title: "",
    children: [],
    ownerDocument: { createElement: () => ({ textContent: "", className: "" }) },
    replaceChildren(...children) {
      element.children = children;
    },
    get textContent() {
      return element.children.map((child) => child.textContent).join("");
    },
    /** What a sighted user reads: the spans not hidden. */
    get shownText() {
      return element.children
        .filter((child) => child.className !== "visually-hidden")
        .map((child) => child.textContent)
        .join("");
    },
  };
  return element;
};

test("the status line shows the event's sentence and state", () => {
  const line = statusElement();
  renderStatus(line, { state: "connecting", detail: "Connecting…" });
  assert.equal(line.textContent, "Connecting…");
  assert.equal(line.shownText, "Connecting…");
  assert.equal(line.dataset.state, "connecting");
});

test("a new state that reads the same is not written again, and its state and details still change", () => {
  const line = statusElement();
  renderStatus(line, { state: "ready", detail: "Ready. Hold the button to talk." });
  const written = line.children;
  renderStatus(line, { state: "speaking", detail: "Ready. Hold the button to talk." });
  assert.equal(line.children, written, "the same spans stay in place");
  assert.equal(line.dataset.state, "speaking");
  renderStatus(line, { state: "thinking", detail: "Thinking…" });
  assert.notEqual(line.children, written);
  assert.equal(line.textContent, "Thinking…");
  assert.equal(line.title, "Thinking…");
});

test("a state this page does not know still shows its text, marked unknown", () => {
  const line = statusElement();
  renderStatus(line, { state: "teleporting", detail: "Beaming up" });
  assert.equal(line.textContent, "Beaming up");
  assert.equal(line.dataset.state, "unknown");
});

test("a command's error object shows its message, never [object Object]", () => {
  assert.equal(describeError({ message: "the conversation has stopped", field: null }), "the conversation has stopped");
  assert.equal(failureStatus({ message: "no key" }).detail, "Something went wrong: no key");
  assert.equal(failureStatus({ message: "no key" }).state, "error");
});

test("an error that is a string or an Error shows its words", () => {
  assert.equal(describeError("the shortcut is taken"), "the shortcut is taken");
  assert.equal(describeError(new Error("boom")), "boom");
});

test("an error without a message still says something readable", () => {
  assert.equal(describeError({ code: 7 }), '{"code":7}');
  assert.equal(describeError(undefined), "an unknown error");
  assert.equal(describeError(null), "an unknown error");
  assert.notEqual(describeError({}), "[object Object]");
});

test("the Connect button reads Cancel and stops the call while the status says one is being placed", () => {
  const cancel = { label: "Cancel", title: "Stop placing the call", command: "cancel_reconnect" };
  assert.deepEqual(connectAction({ state: "reconnecting", cancellable: true }), cancel);
  assert.deepEqual(connectAction({ state: "connecting", cancellable: true }), cancel, "a first attempt");
  // Setting up a session already connected, or waiting out a provider's Retry-After.
  assert.equal(connectAction({ state: "connecting", cancellable: false }).label, "Connect");
  for (const state of ["error", "not_connected", "connecting", "reconnecting", undefined]) {
    assert.equal(connectAction({ state }).command, "connect", `in ${state}`);
    assert.equal(connectAction({ state }).label, "Connect");
  }
  assert.equal(connectAction(undefined).label, "Connect", "before any status");
  for (const state of ["ready", "listening", "thinking", "speaking"]) {
    assert.equal(connectAction({ state, cancellable: false }).command, "connect", `in ${state}`);
    assert.equal(connectAction({ state }).label, "New conversation", "during a call it says what it does");
  }
});

test("a problem shows its headline on the line and its sentence in the banner, with its action", () => {
  const status = problem("error", "Not connected", "127.0.0.1 refused the API key: add a valid key in Settings.", {
    action: "open_settings",
  });
  const line = statusElement();
  renderStatus(line, status);
  assert.equal(line.shownText, "Not connected");
  assert.equal(line.textContent, status.detail, "a screen reader hears the whole status");
  assert.equal(line.title, status.detail);
  assert.deepEqual(statusView(status).banner, {
    text: "127.0.0.1 refused the API key: add a valid key in Settings.",
    action: { label: "Open Settings", command: "open_settings" },
    details: null,
  });
  const retry = statusView({ ...status, action: "try_again" }).banner.action;
  assert.deepEqual(retry, { label: "Try again", command: "connect" });
  assert.equal(
    statusView({ state: "error", detail: "Something went wrong: boom" }).banner.action.label,
    "Try again",
    "a problem without an action can still be retried",
  );
});

test("a problem is split where Rust says, never at a colon the page finds", () => {
  const whole = { state: "error", detail: "The audio engine could not start: no device answered.", action: "try_again" };
  assert.equal(statusView(whole).headline, whole.detail, "no headline field: one piece");
  assert.equal(statusView(whole).banner.text, whole.detail);
  const view = statusView(problem("error", "Not connected", "no API key for OpenAI: add one in Settings.", { action: "open_settings" }));
  assert.equal(view.headline, "Not connected");
  assert.equal(view.banner.text, "No API key for OpenAI: add one in Settings.");
  const failure = statusView(failureStatus(new Error("the conversation has stopped")));
  assert.equal(failure.headline, "Something went wrong");
  assert.equal(failure.banner.text, "The conversation has stopped");
});

test("a status that is no problem has no banner and shows whole", () => {
  const line = statusElement();
  renderStatus(line, { state: "ready", detail: "Ready (OpenAI): hold Space or the button to talk." });
  assert.equal(line.shownText, "Ready (OpenAI): hold Space or the button to talk.");
  assert.equal(statusView({ state: "listening", detail: "Listening… release to send." }).banner, null);
  const banner = { hidden: false, querySelector: () => ({ dataset: {} }) };
  renderBanner(banner, { state: "ready", detail: "Ready." });
  assert.equal(banner.hidden, true);
});

/** A banner element whose parts are found by their data-role or data-action. */
function bannerElement() {
  const part = () => ({ textContent: "", dataset: {}, hidden: true, open: false });
  const parts = {
    text: part(),
    action: part(),
    details: part(),
    "details-text": part(),
    "copy-details": part(),
  };
  parts.details.querySelector = (css) => parts[css.match(/=([a-z-]+)\]/)[1]];
  return {
    hidden: true,
    dataset: {},
    parts,
    querySelector: (css) => parts[css.match(/=([a-z-]+)\]/)[1]],
  };
}

test("the banner shows the sentence and one button", () => {
  const banner = bannerElement();
  const { parts } = banner;
  renderBanner(banner, problem("error", "Not connected", "the provider is down. Press Connect to try again.", { action: "try_again" }));
  assert.equal(banner.hidden, false);
  assert.equal(parts.text.textContent, "The provider is down. Press Connect to try again.");
  assert.equal(parts.action.textContent, "Try again");
  assert.equal(parts.action.dataset.command, "connect");
  assert.equal(parts.details.hidden, true, "no details to show");
});

test("a problem's technical account sits behind Details, closed, with a fresh Copy button", () => {
  const banner = bannerElement();
  const { parts } = banner;
  parts.details.open = true;
  parts["copy-details"].textContent = "Copied";
  const details = "TLS failed during the SDP exchange: invalid peer certificate: UnknownIssuer";
  renderBanner(banner, {
    state: "error",
    detail: "Not connected: could not connect to 127.0.0.1. The secure connection failed.",
    action: "open_settings",
    details,
  });
  assert.equal(parts.details.hidden, false);
  assert.equal(parts.details.open, false, "closed until asked for");
  assert.equal(parts["details-text"].textContent, details);
  assert.equal(parts["copy-details"].textContent, "Copy details");
  renderBanner(banner, { state: "error", detail: "Not connected: the call dropped.", action: "try_again" });
  assert.equal(parts.details.hidden, true, "the next problem has none");
});

test("the talk control says what a press does in each mode and state", () => {
  const hold = { handsFree: false, pressMode: "hold" };
  const toggle = { handsFree: false, pressMode: "toggle" };
  const handsFree = { handsFree: true, pressMode: "hold" };
  assert.equal(talkControl("ready", hold).label, "Hold to talk");
  assert.equal(talkControl("listening", hold).label, "Listening: release to send");
  assert.equal(talkControl("ready", toggle).label, "Tap to talk");
  assert.equal(talkControl("listening", toggle).label, "Listening: tap to send");
  assert.match(talkControl("listening", toggle).hint, /again to send/);
  assert.doesNotMatch(talkControl("ready", toggle).hint, /release|let go|hold/i);
  assert.equal(talkControl("speaking", toggle).label, "Speaking: tap to stop");
  assert.equal(talkControl("ready", handsFree).label, "Listening");
  assert.doesNotMatch(talkControl("ready", handsFree).label, /interrupt/, "nothing plays yet");
  assert.equal(talkControl("speaking", handsFree).label, "Speaking: tap to stop");
  for (const state of ["error", "not_connected", "connecting", "reconnecting"]) {
    assert.equal(talkControl(state, hold).disabled, true, state);
  }
  assert.equal(talkControl("error", toggle).label, "Not connected");
  assert.equal(talkControl("ready", hold).disabled, false);
});

test("a notice that the call went on is a headline and a banner with OK", () => {
  const view = statusView(
    problem("ready", "Call goes on", "the provider refused a request (invalid_value).", {
      action: "dismiss",
      details: "Invalid value: 'sage2'. (answering response.create walkie_9)",
    }),
  );
  assert.equal(view.headline, "Call goes on");
  assert.deepEqual(view.banner, {
    text: "The provider refused a request (invalid_value).",
    action: { label: "OK", command: "dismiss" },
    details: "Invalid value: 'sage2'. (answering response.create walkie_9)",
  });
});

test("a notice's banner is marked a notice, a problem's a problem", () => {
  const banner = bannerElement();
  renderBanner(banner, { state: "ready", detail: "Call goes on: the provider refused a request (x).", action: "dismiss" });
  assert.equal(banner.hidden, false);
  assert.equal(banner.dataset.kind, "notice");
  assert.equal(banner.parts.action.textContent, "OK");
  renderBanner(banner, { state: "error", detail: "Not connected: the key was refused.", action: "open_settings" });
  assert.equal(banner.dataset.kind, "problem");
});
