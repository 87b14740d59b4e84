// Wires the page to the Rust shell: controls call commands, Rust answers with events.
import { createPushToTalk, isCancelKey, isTalkKey } from "./push-to-talk.js";
import { COMMANDS, EVENTS } from "./ipc.js";
import {
  connectAction,
  failureStatus,
  renderBanner,
  renderStatus,
  statusView,
  talkControl,
} from "./status.js";
import { createTranscript } from "./transcript.js";
import { createRegions, createUpdates, setText } from "./updates.js";
import { renderLevel, ringLevel } from "./meters.js";
import { createSettingsDialog } from "./settings.js";
import { createHistoryPanel, savingNote } from "./history.js";
import { DISMISSED_KEY, showDemoCard, usesTheDemo } from "./first-run.js";
import { createCompose } from "./compose.js";
import { createSpending } from "./spending.js";
import { createApprovals } from "./approvals.js";
import { connectionShown, renderHealth } from "./health.js";
import { createPageState } from "./page.js";

const { invoke, convertFileSrc } = window.__TAURI__.core;
const { listen } = window.__TAURI__.event;

const statusLine = document.getElementById("status");
const connectionBadge = document.getElementById("connection");
const pttButton = document.getElementById("ptt");
/** What Rust last said and how the user talks: every view below renders from it. */
const page = createPageState();
const handsFree = document.getElementById("hands-free");
const settingsDialog = createSettingsDialog(document.getElementById("settings"), invoke, {
  onSaved: (settings) => showTalkMode(settings),
  listen,
});

function reportFailure(error) {
  showStatus(failureStatus(error));
}

const newMessages = document.getElementById("new-messages");
const transcript = createTranscript(document.getElementById("transcript"), { pill: newMessages });
newMessages.addEventListener("click", () => transcript.scrollToNewest());
const meters = {
  input: document.getElementById("input-level"),
  output: document.getElementById("output-level"),
};
const spending = createSpending(document.querySelector("#spending"), document.querySelector(".spending-slot"));
// What the app sends while a conversation goes on is shown in paced batches, each region of
// the page in a frame of its own (updates.js); anything that marks or reads the transcript
// first shows what waits (showWaiting).
const regions = createRegions();
const readingsToShow = new Map();
const transcriptToApply = [];
const updates = createUpdates((batch) => {
  for (const status of batch.statuses) showStatus(status);
  if (batch.levels.size > 0) {
    for (const [direction, reading] of batch.levels) readingsToShow.set(direction, reading);
    if (batch.levels.has("input")) page.setMicReading(batch.levels.get("input"));
    regions.show("meters", showLevels);
  }
  if (batch.transcript.length > 0) {
    transcriptToApply.push(...batch.transcript);
    regions.show("transcript", () => transcript.applyAll(transcriptToApply.splice(0), reportFailure));
  }
  if (batch.spending) {
    const report = batch.spending;
    regions.show("spending", () => spending.show(report));
  }
});
function showWaiting() {
  updates.flush();
  regions.flush();
}

const compose = createCompose(document.getElementById("compose"), {
  send: (text, pictures) => invoke(COMMANDS.sendMessage, { text, pictures }),
  attach: async (file) =>
    invoke(COMMANDS.attachPicture, new Uint8Array(await file.arrayBuffer()), {
      headers: { "walkie-picture-name": encodeURIComponent(file.name ?? "") },
    }),
  detach: (id) => invoke(COMMANDS.detachPicture, { id }),
  screenshotTargets: () => invoke(COMMANDS.screenshotTargets),
  screenshot: (target) => invoke(COMMANDS.attachScreenshot, { target }),
  state: () => page.get().status.state,
});
listen(EVENTS.pictureDropped, (event) => compose.dropped(event.payload));
const approvals = createApprovals(document.getElementById("approvals"), {
  decide: (callId, allowed) => invoke(COMMANDS.toolDecision, { callId, allowed }),
  report: (error) => reportFailure(error),
});
listen(EVENTS.toolApproval, (event) => approvals.show(event.payload));
listen(EVENTS.toolApprovalClosed, (event) => approvals.close(event.payload));

const talk = createPushToTalk((pressed) => {
  pttButton.setAttribute("aria-pressed", String(pressed));
  invoke(COMMANDS.pushToTalk, { pressed }).catch(reportFailure);
});

const connectButton = document.getElementById("connect");
const banner = document.getElementById("banner");
// How the user talks (from the settings) and the conversation's state (from Rust): together
// they say what the big control and its hint read.
function showTalkControl() {
  showTalkLabel();
  showHint();
}
// Each of these says whether it changed anything.
function showTalkLabel() {
  const { status, talkMode } = page.get();
  const control = talkControl(status.state, talkMode);
  pttButton.disabled = control.disabled && !talk.pressed;
  return setText(pttButton.querySelector(".ptt-label"), control.label);
}
function showHint() {
  const { status, talkMode } = page.get();
  const hint = talkControl(status.state, talkMode).hint;
  const line = document.getElementById("ptt-hint");
  if (line.textContent === hint) return false;
  line.replaceChildren(...withKeys(hint));
  return true;
}
// "Space" and "Esc" are keys: shown as such.
function withKeys(text) {
  return text
    .split(/(Space|Esc)/)
    .map((part) => (part === "Space" || part === "Esc" ? Object.assign(document.createElement("kbd"), { textContent: part }) : part));
}
// The empty transcript says what the talk control's hint says, unless the first-run card is there.
function showPlaceholder() {
  const { status, talkMode } = page.get();
  const placeholder = document.querySelector("#transcript > .empty:not(.first-run)");
  const text = `${talkControl(status.state, talkMode).hint}. Both sides of the conversation appear here.`;
  if (!placeholder || placeholder.textContent === text) return false;
  placeholder.replaceChildren(...withKeys(text));
  return true;
}
// The Connect button follows the status: Cancel while a call is being placed.
// A problem's sentence and its one action go to the banner under the header.
let statusesShown = 0;
function showStatus(status) {
  if (!page.showStatus(status)) return;
  // Whether the control takes a press is not left for a later frame.
  pttButton.disabled = talkControl(status.state, page.get().talkMode).disabled && !talk.pressed;
  // What came before the status is shown before it (the paced transcript and readings), and
  // the status line last: what it says, the rest of the page already shows.
  updates.flush();
  regions.show("talk control", () => {
    const labelChanged = showTalkLabel();
    const ringChanged = showMicRing();
    return labelChanged || ringChanged;
  });
  regions.show("hint", showHint);
  regions.show("placeholder", showPlaceholder);
  // Each status is shown, however soon the next one comes (a reconnect's attempts).
  statusesShown += 1;
  regions.show(`status ${statusesShown}`, () => showHeader(status));
}
function showHeader(status) {
  renderStatus(statusLine, status);
  showHealthBadge();
  renderBanner(banner, status);
  const action = connectAction(status);
  setText(connectButton, action.label);
  connectButton.title = action.title;
}
// The badge shows while a call is up and its health was said; it is drawn when health comes.
function showHealthBadge() {
  const { health, status } = page.get();
  connectionBadge.hidden = !(health && connectionShown(status.state));
}
// While listening, a ring around the talk control follows the microphone's level. Readings
// come only when the level moves, so a press shows the last one at once.
function showMicRing() {
  const { micReading } = page.get();
  const ring = (page.listening() && micReading ? ringLevel(micReading) : 0).toFixed(2);
  if (pttButton.style.getPropertyValue("--mic-level") === ring) return false;
  pttButton.style.setProperty("--mic-level", ring);
  return true;
}
banner.querySelector("[data-action=copy-details]").addEventListener("click", (event) => {
  const button = event.currentTarget;
  const details = banner.querySelector("[data-role=details-text]").textContent;
  invoke(COMMANDS.copyText, { text: details })
    .then(() => {
      button.textContent = "Copied";
    })
    .catch(reportFailure);
});
banner.querySelector("[data-role=action]").addEventListener("click", () => {
  const command = statusView(page.get().status).banner?.action.command;
  if (command === "open_settings") settingsDialog.open();
  else if (command === "dismiss") banner.hidden = true;
  else invoke(COMMANDS.connect).catch(reportFailure);
});
// What a conversation changes in the window comes in batches, in the order the app made it
// (src-tauri/window_updates.rs); each update goes to its own pace here.
await listen(EVENTS.updates, (event) => {
  for (const { kind, payload } of event.payload) updates.push(kind, payload);
});
// Statuses emitted before this page listened (the app connects while the page loads).
const latest = await invoke(COMMANDS.status);
if (latest) showStatus(latest);
function showLevels() {
  for (const reading of readingsToShow.values()) renderLevel(meters, reading);
  readingsToShow.clear();
  showMicRing();
}
// What the conversation under way saves, said where a conversation is started when it is not
// everything (History chooses it for the next conversation).
const savingNoteLine = document.querySelector("#saving-note");
const showSaving = (saved) => {
  savingNoteLine.textContent = savingNote(saved);
  savingNoteLine.hidden = savingNoteLine.textContent === "";
};
await listen(EVENTS.saving, (event) => showSaving(event.payload));
invoke(COMMANDS.savingInForce).then(showSaving, reportFailure);
await listen(EVENTS.connectionHealth, (event) => {
  page.setHealth(event.payload);
  renderHealth(connectionBadge, event.payload);
  showHealthBadge();
});


pttButton.addEventListener("pointerdown", (event) => {
  if (event.button !== 0 || pttButton.disabled) return;
  pttButton.setPointerCapture(event.pointerId);
  talk.press("pointer");
});
pttButton.addEventListener("pointerup", () => talk.release("pointer"));
pttButton.addEventListener("pointercancel", () => talk.release("pointer"));

document.addEventListener("keydown", (event) => {
  // Escape takes a recording back before it is sent.
  if (isCancelKey(event) && page.listening()) {
    event.preventDefault();
    invoke(COMMANDS.cancelPress).catch(reportFailure);
    return;
  }
  if (!isTalkKey(event)) return;
  event.preventDefault(); // Space must not also "click" the focused button
  // With no call the control is off: a press would only replace the reason on screen.
  if (!event.repeat && !pttButton.disabled) talk.press("key");
});
document.addEventListener("keyup", (event) => {
  if (!isTalkKey(event)) return;
  event.preventDefault();
  talk.release("key");
});
window.addEventListener("blur", () => talk.releaseAll());

// Copy one message (its button) or the whole transcript, through Rust's clipboard.
function copy(text, what) {
  invoke(COMMANDS.copyText, { text })
    // The same state, and the same Cancel while a call is being placed.
    .then(() => {
      const shown = page.get().status;
      showStatus({ state: shown.state, cancellable: shown.cancellable, detail: `Copied ${what}.` });
    })
    .catch(reportFailure);
}
// Messages in the live transcript and in an opened past conversation alike.
document.addEventListener("click", (event) => {
  const button = event.target.closest?.("[data-action=copy-message]");
  if (!button) return;
  const text = button.closest(".message")?.querySelector(".message-text")?.textContent ?? "";
  copy(text.trim(), "the message");
});
document.getElementById("copy-transcript").addEventListener("click", () => {
  showWaiting();
  copy(transcript.plainText(), "the transcript");
});

// How the talk control behaves follows the settings: hold or toggle, or hands-free.
function showTalkMode(settings) {
  handsFree.checked = settings.handsFree;
  page.setTalkMode(settings);
  showTalkControl();
  showPlaceholder();
}
// A switch flipped with the mouse gives the focus back: Space is the talk key, and on a
// focused checkbox it would flip the switch again. Flipped from the keyboard (a click with
// no pointer, detail 0), it keeps the focus for whoever is moving through the page.
handsFree.addEventListener("click", (event) => {
  if (event.detail > 0) handsFree.blur();
});
handsFree.addEventListener("change", async () => {
  try {
    // This one setting alone: the dialog's other fields are neither read nor saved again.
    const saved = await invoke(COMMANDS.setTurnMode, { handsFree: handsFree.checked });
    showTalkMode(saved.settings);
  } catch (error) {
    handsFree.checked = !handsFree.checked;
    reportFailure(error);
  }
});
// localStorage may be unavailable (a private profile): the card then shows at every start.
function demoCardDismissed() {
  try {
    return localStorage.getItem(DISMISSED_KEY) === "yes";
  } catch {
    return false;
  }
}
invoke(COMMANDS.getSettings)
  .then((view) => {
    showTalkMode(view.settings);
    const placeholder = document.querySelector("#transcript > .empty");
    if (placeholder && usesTheDemo(view) && !demoCardDismissed()) {
      showDemoCard(placeholder, {
        addKey: () => settingsDialog.open({ focus: "apiKey" }),
        keepDemo: () => {
          showTalkControl();
          showPlaceholder();
          try {
            localStorage.setItem(DISMISSED_KEY, "yes");
          } catch {
            // Not remembered: the card comes back at the next start.
          }
        },
      });
    }
  })
  .catch(reportFailure);

connectButton.addEventListener("click", () => {
  invoke(connectAction(page.get().status).command).catch(reportFailure);
});
document.getElementById("open-settings").addEventListener("click", () => settingsDialog.open());
const history = createHistoryPanel({
  document,
  invoke,
  // A saved WAV, read through the asset protocol (scoped to the conversations folder) into a
  // blob: URL that <audio> can play; see ui/history.js for why not the asset: URL itself.
  loadAudio: async (path) => {
    const response = await fetch(convertFileSrc(path));
    if (!response.ok) throw new Error(`the recording could not be read (HTTP ${response.status})`);
    return URL.createObjectURL(await response.blob());
  },
  releaseAudio: (url) => URL.revokeObjectURL(url),
  createTranscript,
  // A conversation deleted there is no longer readable here either.
  onDeleted: (conversation) => {
    showWaiting();
    if (conversation.threadId) transcript.forgetThread(conversation.threadId);
  },
});
document.getElementById("open-history").addEventListener("click", () => history.open());

// Every listener is in place: tests (and anything else driving the page) may start now.
document.documentElement.dataset.ready = "true";
