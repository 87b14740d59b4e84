// Wires the page to the Rust shell: controls call commands, Rust answers with events.
import { createPushToTalk, isTalkKey } from "./push-to-talk.js";
import { STATUS_EVENT, renderStatus } from "./status.js";
import { createTranscript } from "./transcript.js";
import { LEVEL_EVENT, renderLevel } from "./meters.js";
import { createHistoryPanel } from "./history.js";

const TRANSCRIPT_EVENT = "walkie://transcript";

const { invoke, convertFileSrc } = window.__TAURI__.core;
const { listen } = window.__TAURI__.event;

const statusLine = document.getElementById("status");
const pttButton = document.getElementById("ptt");
const settings = document.getElementById("settings");

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

document.getElementById("connect").addEventListener("click", () => {
  invoke("connect").catch(reportFailure);
});
document.getElementById("open-settings").addEventListener("click", () => settings.showModal());
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
