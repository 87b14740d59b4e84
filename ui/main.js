// Wires the page to the Rust shell: controls call commands, Rust answers with events.
import { createPushToTalk, isTalkKey } from "./push-to-talk.js";
import { STATUS_EVENT, renderStatus } from "./status.js";
import { createTranscript } from "./transcript.js";
import { LEVEL_EVENT, renderLevel } from "./meters.js";
import { createSettingsDialog } from "./settings.js";
import { createHistoryPanel } from "./history.js";

const TRANSCRIPT_EVENT = "walkie://transcript";
const INTERRUPTED_EVENT = "walkie://interrupted";

const { invoke, convertFileSrc } = window.__TAURI__.core;
const { listen } = window.__TAURI__.event;

const statusLine = document.getElementById("status");
const pttButton = document.getElementById("ptt");
const handsFree = document.getElementById("hands-free");
const settingsDialog = createSettingsDialog(document.getElementById("settings"), invoke, {
  onSaved: (settings) => showTalkMode(settings),
});

function reportFailure(error) {
  renderStatus(statusLine, { state: "error", detail: `Something went wrong: ${error}` });
}

const transcript = createTranscript(document.getElementById("transcript"));
const meters = {
  input: document.getElementById("input-level"),
  output: document.getElementById("output-level"),
};

await listen(STATUS_EVENT, (event) => renderStatus(statusLine, event.payload));
// Statuses emitted before this page listened (the app connects while the page loads).
const latest = await invoke("status");
if (latest) renderStatus(statusLine, latest);
await listen(LEVEL_EVENT, (event) => renderLevel(meters, event.payload));
await listen(INTERRUPTED_EVENT, (event) => transcript.markInterrupted(event.payload));
await listen(TRANSCRIPT_EVENT, (event) => {
  try {
    transcript.apply(event.payload);
  } catch (error) {
    reportFailure(error);
  }
});

const talk = createPushToTalk((pressed) => {
  pttButton.setAttribute("aria-pressed", String(pressed));
  invoke("push_to_talk", { pressed }).catch(reportFailure);
});

pttButton.addEventListener("pointerdown", (event) => {
  if (event.button !== 0) return;
  pttButton.setPointerCapture(event.pointerId);
  talk.press("pointer");
});
pttButton.addEventListener("pointerup", () => talk.release("pointer"));
pttButton.addEventListener("pointercancel", () => talk.release("pointer"));

document.addEventListener("keydown", (event) => {
  if (!isTalkKey(event)) return;
  event.preventDefault(); // Space must not also "click" the focused button
  if (!event.repeat) talk.press("key");
});
document.addEventListener("keyup", (event) => {
  if (!isTalkKey(event)) return;
  event.preventDefault();
  talk.release("key");
});
window.addEventListener("blur", () => talk.releaseAll());

// Copy one message (its button) or the whole transcript, through Rust's clipboard.
function copy(text, what) {
  invoke("copy_text", { text })
    .then(() => renderStatus(statusLine, { state: statusLine.dataset.state, detail: `Copied ${what}.` }))
    .catch(reportFailure);
}
// Messages in the live transcript and in an opened past conversation alike.
document.addEventListener("click", (event) => {
  const button = event.target.closest?.("[data-action=copy-message]");
  if (!button) return;
  const text = button.closest(".message")?.querySelector(".message-text")?.textContent ?? "";
  copy(text.trim(), "the message");
});
document.getElementById("copy-transcript").addEventListener("click", () =>
  copy(transcript.plainText(), "the transcript"),
);

// How the talk control behaves follows the settings: hold or toggle, or hands-free.
function showTalkMode(settings) {
  handsFree.checked = settings.handsFree;
  const label = pttButton.querySelector(".ptt-label");
  const hint = document.getElementById("ptt-hint");
  if (settings.handsFree) {
    label.textContent = "Press to interrupt";
    hint.textContent = "Hands-free: just talk; Walkie answers when you pause";
  } else if (settings.pressMode === "toggle") {
    label.textContent = "Click to talk";
    hint.textContent = "Press Space or click once to talk, again to send";
  } else {
    label.textContent = "Hold to talk";
    hint.replaceChildren("Hold ", Object.assign(document.createElement("kbd"), { textContent: "Space" }), " or press and hold the button");
  }
}
// A switch flipped with the mouse gives the focus back: Space is the talk key, and on a
// focused checkbox it would flip the switch again. Flipped from the keyboard (a click with
// no pointer, detail 0), it keeps the focus for whoever is moving through the page.
handsFree.addEventListener("click", (event) => {
  if (event.detail > 0) handsFree.blur();
});
handsFree.addEventListener("change", async () => {
  try {
    const view = await invoke("get_settings");
    const saved = await invoke("save_settings", { settings: { ...view.settings, handsFree: handsFree.checked } });
    showTalkMode(saved.settings);
  } catch (error) {
    handsFree.checked = !handsFree.checked;
    reportFailure(error?.message ?? error);
  }
});
invoke("get_settings")
  .then((view) => showTalkMode(view.settings))
  .catch((error) => reportFailure(error?.message ?? error));

document.getElementById("connect").addEventListener("click", () => {
  invoke("connect").catch(reportFailure);
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
});
document.getElementById("open-history").addEventListener("click", () => history.open());

// Every listener is in place: tests (and anything else driving the page) may start now.
document.documentElement.dataset.ready = "true";
