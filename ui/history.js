// The history panel: past conversations listed newest first; one opened is read with the same
// AG-UI renderer as the live transcript (one MESSAGES_SNAPSHOT) and each message with a saved
// WAV gets an <audio> control, its file served by Tauri's asset protocol from the data folder.
// "Continue this conversation" hangs up the call under way and goes on with the opened one in
// a new call; the panel then closes and the main transcript shows its messages, then the new.
//
// Why the WAVs are fetched into blob: URLs rather than given to <audio> as asset: URLs: WebKitGTK
// hands a media element's URL to GStreamer, which has no source for an app's own URI scheme
// (WebKit bug 146351; "No URI handler implemented for asset"), while fetch() goes through the
// scheme handler like any request. The bytes still come only from the asset protocol, whose
// scope is the conversations folder; the blob URLs are revoked when the conversation is closed.
//
// Everything the panel shows comes from Rust (history_* commands in src-tauri/history.rs); it
// keeps no copy of its own beyond what is on screen, and after a deletion or a retention change
// it asks again rather than mending its list.
//
// The exported helpers are pure (tests in ui/tests/history.test.js); createHistoryPanel wires
// them to the DOM in ui/index.html.

import { COMMANDS } from "./ipc.js";
import { describeError } from "./status.js";

/** Retention choices offered, in days (`null`: forever). */
export const RETENTION_DAYS = Object.freeze([null, 7, 30, 90, 365]);

const SECOND_MS = 1000;
const MINUTE_MS = 60 * SECOND_MS;
const HOUR_MS = 60 * MINUTE_MS;

/**
 * A duration as people read it: "42 s", "3 min 05 s", "1 h 02 min".
 * @param {number} durationMs
 */
export function formatDurationMs(durationMs) {
  const ms = Math.max(0, Math.round(durationMs));
  if (ms < MINUTE_MS) return `${Math.round(ms / SECOND_MS)} s`;
  if (ms < HOUR_MS) {
    const minutes = Math.floor(ms / MINUTE_MS);
    const seconds = Math.floor((ms % MINUTE_MS) / SECOND_MS);
    return `${minutes} min ${String(seconds).padStart(2, "0")} s`;
  }
  const hours = Math.floor(ms / HOUR_MS);
  const minutes = Math.floor((ms % HOUR_MS) / MINUTE_MS);
  return `${hours} h ${String(minutes).padStart(2, "0")} min`;
}

/**
 * When a conversation started, in the reader's locale and time zone.
 * @param {number} startedUnixMs
 * @param {{ locale?: string, timeZone?: string }} [options]
 */
export function formatStarted(startedUnixMs, options = {}) {
  return new Date(startedUnixMs).toLocaleString(options.locale, {
    dateStyle: "medium",
    timeStyle: "short",
    timeZone: options.timeZone,
  });
}

/** The line under a conversation's title: when, how long, how many turns. */
export function conversationMeta(conversation, options = {}) {
  const turns = conversation.turnCount === 1 ? "1 turn" : `${conversation.turnCount} turns`;
  // A journal that cannot be read says no start (Rust sends the earliest time there is).
  const started = new Date(conversation.startedUnixMs);
  if (!Number.isFinite(started.getTime()) || conversation.startedUnixMs < 0) {
    return ["Date unknown", turns].join(" · ");
  }
  return [
    formatStarted(conversation.startedUnixMs, options),
    formatDurationMs(conversation.durationMs),
    turns,
  ].join(" · ");
}

/** What a damaged conversation's line says of it, in one sentence ("" when it is whole). */
export function damageSentence(conversation) {
  const damaged = (conversation.damaged ?? "").trim();
  if (damaged === "") return "";
  return `Not all of it could be read: ${damaged}.`;
}

/** A conversation's title: its first words, or a plain statement that nothing was said. */
export function conversationTitle(conversation) {
  const title = (conversation.title ?? "").trim();
  return title === "" ? "Nothing said" : title;
}

/**
 * What a search says under its field: how many messages it found, or that none matches.
 * @param {number} count
 * @param {string} typed
 * @param {number} limit the most hits a search returns
 */
export function searchStatus(count, typed, limit) {
  if (count === 0) return `Nothing said matches “${typed.trim()}”.`;
  if (count >= limit) return `The first ${count} messages found; type more words to narrow it.`;
  return `${count} message${count === 1 ? "" : "s"} found.`;
}

/**
 * The line above a hit: when its conversation started and who spoke.
 * @param {{ role: string }} hit
 * @param {{ startedUnixMs: number } | undefined} conversation its listing, when known
 * @param {{ locale?: string, timeZone?: string }} [options]
 */
export function hitMeta(hit, conversation, options = {}) {
  const names = { user: "You", assistant: "Assistant", title: "Its name" };
  const who = names[hit.role] ?? hit.role;
  return conversation ? `${formatStarted(conversation.startedUnixMs, options)} · ${who}` : who;
}

/** The most hits one search shows (src-tauri/history.rs MAX_SEARCH_HITS). */
export const MAX_SEARCH_HITS = 50;

/**
 * The replies the user talked over, by message id, marked as the live window marks them.
 * @param {Array<{assistantMessageId: string, interrupted: boolean}>} turns
 */
export function interruptedReplies(turns) {
  return turns.filter((turn) => turn.interrupted).map((turn) => turn.assistantMessageId);
}

/**
 * The recordings the user took back before they were sent, by message id, marked as the
 * live window marks them.
 * @param {Array<{userMessageId: string, cancelled: boolean}>} turns
 */
export function cancelledRecordings(turns) {
  return turns.filter((turn) => turn.cancelled).map((turn) => turn.userMessageId);
}

/**
 * Which WAV plays for which message: the opened conversation's turns by message id.
 * @param {Array<{turn: number, userMessageId: string, assistantMessageId: string,
 *   userAudio: ?{path: string, durationMs: number},
 *   assistantAudio: ?{path: string, durationMs: number}}>} turns
 * @returns {Map<string, {path: string, durationMs: number, label: string}>}
 */
export function audioByMessage(turns) {
  const audio = new Map();
  for (const turn of turns) {
    if (turn.userAudio) {
      audio.set(turn.userMessageId, {
        ...turn.userAudio,
        label: `Play what you said in turn ${turn.turn}`,
      });
    }
    if (turn.assistantAudio) {
      audio.set(turn.assistantMessageId, {
        ...turn.assistantAudio,
        label: `Play Walkie's reply in turn ${turn.turn}`,
      });
    }
  }
  return audio;
}

/**
 * A player's clock: "0:07", "12:03"; "–:––" while the length is not known.
 * @param {number} seconds
 */
export function formatClock(seconds) {
  if (!Number.isFinite(seconds) || seconds < 0) return "–:––";
  const whole = Math.floor(seconds);
  return `${Math.floor(whole / 60)}:${String(whole % 60).padStart(2, "0")}`;
}

/** The `<select>` value of a retention as Rust writes it (`null`: forever, else its days). */
export function retentionToValue(retention) {
  return Number.isInteger(retention) && retention > 0 ? String(retention) : "forever";
}

/**
 * Whether the opened conversation can be continued, and what the Continue button says if not:
 * the one being recorded goes on already.
 * @param {{ current: boolean }} conversation
 * @returns {{ disabled: boolean, title: string }}
 */
export function continueState(conversation) {
  return conversation.current
    ? { disabled: true, title: "This is the conversation going on now: just keep talking" }
    : { disabled: false, title: "Hang up the call under way and go on with this conversation" };
}

/** The retention of a `<select>` value, as Rust reads it (`null`: forever, else whole days); throws on anything else. */
export function retentionFromValue(value) {
  if (value === "forever") return null;
  const days = Number(value);
  if (!Number.isInteger(days) || days < 1) throw new RangeError(`not a retention: ${value}`);
  return days;
}

/**
 * What choosing a shorter retention deletes, said before it does.
 * @param {number} count conversations older than the retention
 * @param {number} days the retention chosen
 */
export function expiringSentence(count, days) {
  const conversations = count === 1 ? "1 conversation is" : `${count} conversations are`;
  return `${conversations} older than ${retentionLabel(days).replace(/^for /, "")}: keeping conversations ${retentionLabel(days)} deletes ${count === 1 ? "it" : "them"} from disk now, transcripts and recordings. This cannot be undone.`;
}

/** The `<select>` values of what is saved, as Rust writes them. */
export const SAVED_CHOICES = Object.freeze(["everything", "transcriptsOnly", "nothing"]);

/** What the line under the talk button says of what the conversation under way saves ("" for everything). */
export function savingNote(saved) {
  if (saved === "transcriptsOnly") return "Saving this conversation's words, not its audio.";
  if (saved === "nothing") return "Nothing of this conversation is saved.";
  return "";
}

/** What the panel says once a choice of what to save is kept. */
export function savedChosenSentence(saved) {
  if (saved === "transcriptsOnly") return "From the next conversation on, transcripts are saved without audio.";
  if (saved === "nothing") return "From the next conversation on, nothing is saved.";
  return "From the next conversation on, transcripts and recordings are saved.";
}

/** The words of a retention choice. */
export function retentionLabel(days) {
  if (days === null) return "forever";
  if (days === 365) return "for a year";
  return days === 1 ? "for 1 day" : `for ${days} days`;
}

/** What Export… asks Rust to write, from the export dialog's choices. */
export function exportRequest(kind, channels, format) {
  if (kind === "audio") return { kind: "audio", channels, format };
  if (kind === "captions") return { kind: "captions" };
  return { kind: "markdown" };
}

/** The line after an export: where it went, and which turns' recordings are silent in it. */
export function exportedSentence(exported) {
  const leftOut = exported.leftOut ?? [];
  if (leftOut.length === 0) return `Exported to ${exported.path}`;
  const turns = leftOut.length === 1 ? `${leftOut[0]} could not be read and is` : `${leftOut.length} turn recordings could not be read and are`;
  return `Exported to ${exported.path}; ${turns} silent in it (Open folder to see them).`;
}

/**
 * Wires the history panel.
 * @param {{
 *   document: Document,
 *   invoke: (command: string, args?: object) => Promise<any>,
 *   loadAudio: (path: string) => Promise<string>,
 *   releaseAudio: (url: string) => void,
 *   createTranscript: (container: Element, options?: object) => { apply: (event: object) => void },
 * }} deps
 */
export function createHistoryPanel({
  document: doc,
  invoke,
  loadAudio,
  releaseAudio,
  createTranscript,
  onDeleted = () => {},
}) {
  const byId = (id) => doc.getElementById(id);
  const dialog = byId("history");
  const list = byId("history-list");
  const empty = byId("history-empty");
  const listView = byId("history-list-view");
  const detail = byId("history-detail");
  const back = byId("history-back");
  const title = byId("history-detail-title");
  const meta = byId("history-detail-meta");
  const transcriptBox = byId("history-transcript");
  const errorLine = byId("history-error");
  const notice = byId("history-notice");
  let retention = byId("history-retention");
  const savedSelect = byId("history-saved");
  /** What is saved, as Rust last kept it: where a choice that could not be kept goes back to. */
  let keptSaved = "everything";
  const deleteButton = byId("history-delete");
  const continueButton = byId("history-continue");
  const confirm = byId("history-confirm");
  const confirmText = byId("history-confirm-text");
  const retentionConfirm = byId("retention-confirm");
  const retentionConfirmText = byId("retention-confirm-text");
  /** The retention in force, as the select shows it: where a change the user keeps from goes back to. */
  let keptValue = "forever";
  /** The conversation open in the detail view. */
  let opened = null;
  const renameForm = byId("history-rename");
  const renameField = byId("history-rename-title");
  const renameButton = byId("history-rename-open");
  const searchField = byId("history-search");
  const searchStatusLine = byId("history-search-status");
  const hitsList = byId("history-hits");
  /** The listing by id, for the date of a hit's conversation. */
  let listed = new Map();
  /** The search under way, and the text typed since it began (searched when it ends). */
  let searching = false;
  let searchAgain = false;
  /** Object URLs of the open conversation's WAVs, released when it closes. */
  let audioUrls = [];

  function showError(error) {
    errorLine.textContent = describeError(error);
    errorLine.hidden = false;
  }

  function clearMessages() {
    errorLine.hidden = true;
    errorLine.textContent = "";
    notice.textContent = "";
  }

  /** Stops and forgets the open conversation's players. */
  function closeDetail() {
    opened = null;
    playingOn = null;
    for (const audio of transcriptBox.querySelectorAll("audio")) audio.pause();
    transcriptBox.replaceChildren();
    for (const url of audioUrls) releaseAudio(url);
    audioUrls = [];
  }

  function showList() {
    closeDetail();
    detail.hidden = true;
    back.hidden = true;
    listView.hidden = false;
  }

  /** The <audio> that "Play from here" is playing: when it ends, the next recording plays. */
  let playingOn = null;

  /** Plays `audio` from its start, alone; `onward` goes on with the recordings after it. */
  function playFrom(audio, onward) {
    for (const other of transcriptBox.querySelectorAll("audio")) {
      if (other !== audio) other.pause();
    }
    playingOn = onward ? audio : null;
    if (onward) audio.currentTime = 0;
    audio.play().catch((error) => {
      playingOn = null;
      showError(`Could not play: ${describeError(error)}`);
    });
  }

  /** The recording after `audio` in the conversation's order, if any. */
  function nextRecording(audio) {
    const all = [...transcriptBox.querySelectorAll(".turn-audio audio")];
    return all[all.indexOf(audio) + 1] ?? null;
  }

  /**
   * A play control for one WAV: a button, a progress bar and the clock, over a hidden <audio>
   * (WebKitGTK's own controls keep spinning for a blob they have fully loaded); and "Play from
   * here", which goes on with every recording after it, in order.
   */
  function createPlayer(wav, conversation) {
    const box = doc.createElement("div");
    box.className = "turn-audio";
    const button = doc.createElement("button");
    button.type = "button";
    button.className = "quiet turn-audio-play";
    button.disabled = true;
    button.setAttribute("aria-label", wav.label);
    button.textContent = "▶";
    const progress = doc.createElement("progress");
    progress.className = "turn-audio-progress";
    progress.max = Math.max(wav.durationMs / 1000, 0.001);
    progress.value = 0;
    progress.setAttribute("aria-hidden", "true");
    const clock = doc.createElement("span");
    clock.className = "turn-audio-time";
    const onward = doc.createElement("button");
    onward.type = "button";
    onward.className = "link turn-audio-onward";
    onward.disabled = true;
    onward.textContent = "Play from here";
    onward.title = "Play this and everything said after it";
    const audio = doc.createElement("audio");
    audio.preload = "auto";
    audio.dataset.durationMs = String(wav.durationMs);
    const showTime = () => {
      const length = Number.isFinite(audio.duration) ? audio.duration : wav.durationMs / 1000;
      clock.textContent = `${formatClock(audio.currentTime)} / ${formatClock(length)}`;
      progress.max = Math.max(length, 0.001);
      progress.value = audio.currentTime;
    };
    const showPlaying = () => {
      const playing = !audio.paused && !audio.ended;
      button.textContent = playing ? "❚❚" : "▶";
      button.setAttribute(
        "aria-label",
        playing ? wav.label.replace(/^Play /, "Pause ") : wav.label,
      );
      box.dataset.state = playing ? "playing" : "paused";
    };
    audio.addEventListener("loadedmetadata", () => {
      button.disabled = false;
      onward.disabled = false;
      showTime();
    });
    audio.addEventListener("timeupdate", showTime);
    audio.addEventListener("play", showPlaying);
    audio.addEventListener("pause", showPlaying);
    audio.addEventListener("ended", () => {
      showPlaying();
      showTime();
      if (playingOn !== audio) return;
      const next = nextRecording(audio);
      if (next) playFrom(next, true);
      else playingOn = null;
    });
    audio.addEventListener("error", () => {
      box.dataset.state = "error";
      clock.textContent = "cannot play";
    });
    button.addEventListener("click", () => {
      if (!audio.paused && !audio.ended) {
        // Pausing stops "Play from here" too.
        playingOn = null;
        audio.pause();
        return;
      }
      // One voice at a time.
      playFrom(audio, false);
    });
    onward.addEventListener("click", () => playFrom(audio, true));
    clock.textContent = `${formatClock(0)} / ${formatClock(wav.durationMs / 1000)}`;
    box.append(button, progress, clock, onward, audio);
    loadAudio(wav.path).then(
      (url) => {
        if (opened !== conversation) return releaseAudio(url);
        audioUrls.push(url);
        audio.src = url;
      },
      (error) => {
        box.dataset.state = "error";
        clock.textContent = "cannot play";
        button.title = String(error);
      },
    );
    return box;
  }

  function listItem(conversation) {
    const item = doc.createElement("li");
    const button = doc.createElement("button");
    button.type = "button";
    button.className = "history-item";
    button.dataset.id = conversation.id;
    const name = doc.createElement("span");
    name.className = "history-item-title";
    name.textContent = conversationTitle(conversation);
    const line = doc.createElement("span");
    line.className = "history-item-meta";
    line.textContent = conversationMeta(conversation);
    button.append(name, line);
    if (conversation.current) {
      const badge = doc.createElement("span");
      badge.className = "history-badge";
      badge.textContent = "Now";
      button.dataset.current = "";
      name.append(" ", badge);
    }
    const damage = damageSentence(conversation);
    if (damage) {
      const badge = doc.createElement("span");
      badge.className = "history-badge history-badge-damaged";
      badge.textContent = "Damaged";
      button.dataset.damaged = "";
      name.append(" ", badge);
      const why = doc.createElement("span");
      why.className = "history-item-damage";
      why.textContent = damage;
      button.append(why);
    }
    button.addEventListener("click", () => openConversation(conversation.id));
    item.append(button);
    return item;
  }

  /** One found message: its conversation's date and speaker, and the words around the match. */
  function hitItem(hit) {
    const item = doc.createElement("li");
    const button = doc.createElement("button");
    button.type = "button";
    button.className = "history-item history-hit";
    button.dataset.id = hit.conversationId;
    button.dataset.messageId = hit.messageId;
    const line = doc.createElement("span");
    line.className = "history-item-meta";
    line.textContent = hitMeta(hit, listed.get(hit.conversationId));
    const text = doc.createElement("span");
    text.className = "history-hit-text";
    for (const part of hit.snippet) {
      if (part.matched) {
        const mark = doc.createElement("mark");
        mark.textContent = part.text;
        text.append(mark);
      } else {
        text.append(doc.createTextNode(part.text));
      }
    }
    button.append(line, text);
    button.addEventListener("click", () => openConversation(hit.conversationId, hit.messageId));
    item.append(button);
    return item;
  }

  /** Searches for what the field holds (a blank field shows the listing again). */
  async function search() {
    if (searching) {
      searchAgain = true;
      return;
    }
    searching = true;
    try {
      do {
        searchAgain = false;
        const typed = searchField.value;
        if (typed.trim() === "") {
          hitsList.replaceChildren();
          hitsList.hidden = true;
          list.hidden = listed.size === 0;
          empty.hidden = listed.size > 0;
          searchStatusLine.textContent = "";
          continue;
        }
        let found;
        try {
          found = await invoke(COMMANDS.historySearch, { query: typed });
        } catch (error) {
          showError(error);
          continue;
        }
        if (searchField.value !== typed) continue;
        if (found.notice) notice.textContent = found.notice;
        hitsList.replaceChildren(...found.hits.map(hitItem));
        hitsList.hidden = found.hits.length === 0;
        list.hidden = true;
        empty.hidden = true;
        searchStatusLine.textContent = searchStatus(found.hits.length, typed, MAX_SEARCH_HITS);
      } while (searchAgain);
    } finally {
      searching = false;
    }
  }

  searchField.addEventListener("input", () => search());

  function closeRename() {
    renameForm.hidden = true;
  }

  renameButton.addEventListener("click", () => {
    if (!opened) return;
    renameField.value = title.textContent;
    renameForm.hidden = false;
    renameField.focus();
    renameField.select();
  });
  byId("history-rename-cancel").addEventListener("click", () => {
    closeRename();
    renameButton.focus();
  });
  renameField.addEventListener("keydown", (event) => {
    if (event.key !== "Escape") return;
    // Escape leaves the naming, not the panel.
    event.preventDefault();
    event.stopPropagation();
    closeRename();
    renameButton.focus();
  });
  renameForm.addEventListener("submit", (event) => {
    event.preventDefault();
    if (!opened) return;
    const id = opened.id;
    act(async () => {
      // On a failure the form stays, with what was typed, and the error says why.
      const saved = await invoke(COMMANDS.historyRename, { id, title: renameField.value });
      if (opened?.id === id) title.textContent = saved;
      closeRename();
      renameButton.focus();
      notice.textContent = `Renamed “${saved}”.`;
      await refreshList();
    });
  });

  async function refreshList() {
    const conversations = await invoke(COMMANDS.historyList);
    listed = new Map(conversations.map((conversation) => [conversation.id, conversation]));
    list.replaceChildren(...conversations.map(listItem));
    empty.hidden = conversations.length > 0;
    list.hidden = conversations.length === 0;
    return conversations;
  }

  async function openConversation(id, messageId = null) {
    clearMessages();
    let conversation;
    try {
      conversation = await invoke(COMMANDS.historyOpen, { id });
    } catch (error) {
      showError(error);
      return;
    }
    closeDetail();
    closeRename();
    opened = conversation;
    title.textContent = conversationTitle(conversation);
    meta.textContent = [conversationMeta(conversation), damageSentence(conversation)]
      .filter((part) => part !== "")
      .join(" ");
    const view = createTranscript(transcriptBox, { follow: false });
    view.apply({ type: "MESSAGES_SNAPSHOT", messages: conversation.messages });
    for (const id of interruptedReplies(conversation.turns)) view.markInterrupted(id);
    for (const id of cancelledRecordings(conversation.turns)) view.markCancelled(id);
    const audio = audioByMessage(conversation.turns);
    for (const article of transcriptBox.querySelectorAll("article.message")) {
      const wav = audio.get(article.dataset.messageId);
      if (!wav) continue;
      article.append(createPlayer(wav, conversation));
    }
    Object.assign(continueButton, continueState(conversation));
    deleteButton.disabled = conversation.current;
    renameButton.disabled = conversation.current;
    renameButton.title = conversation.current ? "This conversation is going on; name it once it has ended" : "";
    deleteButton.title = conversation.current
      ? "This conversation is being recorded; it can be deleted once it has ended"
      : "";
    listView.hidden = true;
    detail.hidden = false;
    back.hidden = false;
    const found = messageId
      ? [...transcriptBox.querySelectorAll("article.message")].find(
          (article) => article.dataset.messageId === messageId,
        )
      : null;
    if (found) {
      // Opened at the message found: shown, marked, and its turn's player a Tab away.
      found.classList.add("found");
      found.tabIndex = -1;
      found.scrollIntoView({ block: "center" });
      found.focus({ preventScroll: true });
    } else {
      back.focus();
    }
  }

  async function open() {
    clearMessages();
    showList();
    try {
      const [, kept, saved] = await Promise.all([
        refreshList(),
        invoke(COMMANDS.historyRetention),
        invoke(COMMANDS.historySaved),
      ]);
      setRetention(kept);
      if (SAVED_CHOICES.includes(saved)) keptSaved = saved;
      savedSelect.value = keptSaved;
      // A search typed before stays: its hits, not the listing, are what the panel shows.
      if (searchField.value.trim() !== "") await search();
    } catch (error) {
      showError(error);
    }
    if (!dialog.open) dialog.showModal();
  }

  function setRetention(kept) {
    const value = retentionToValue(kept);
    if (![...retention.options].some((option) => option.value === value)) {
      const option = doc.createElement("option");
      option.value = value;
      option.textContent = retentionLabel(Number(value));
      retention.append(option);
    }
    retention.value = value;
    keptValue = value;
  }

  async function act(work) {
    clearMessages();
    try {
      await work();
    } catch (error) {
      showError(error);
    }
  }

  byId("history-close").addEventListener("click", () => dialog.close());
  dialog.addEventListener("close", showList);
  back.addEventListener("click", () => act(async () => {
    showList();
    await refreshList();
  }));
  continueButton.addEventListener("click", () => act(async () => {
    if (!opened) return;
    await invoke(COMMANDS.historyContinue, { id: opened.id });
    dialog.close();
  }));
  const exportDialog = byId("export-dialog");
  const exportKinds = [...exportDialog.querySelectorAll("input[name='export-kind']")];
  const audioOptions = byId("export-audio-options");
  const chosenKind = () => exportKinds.find((input) => input.checked)?.value ?? "markdown";
  for (const input of exportKinds) {
    input.addEventListener("change", () => { audioOptions.disabled = chosenKind() !== "audio"; });
  }
  byId("history-export").addEventListener("click", () => {
    if (!opened) return;
    audioOptions.disabled = chosenKind() !== "audio";
    exportDialog.returnValue = "";
    exportDialog.showModal();
  });
  exportDialog.addEventListener("close", () => act(async () => {
    if (exportDialog.returnValue !== "export" || !opened) return;
    const request = exportRequest(chosenKind(), byId("export-channels").value, byId("export-format").value);
    notice.textContent = request.kind === "audio" ? "Choose where to save the audio; it is written once you have." : "";
    const exported = await invoke(COMMANDS.historyExport, { id: opened.id, export: request });
    notice.textContent = exported ? exportedSentence(exported) : "";
  }));
  byId("history-folder").addEventListener("click", () => act(async () => {
    if (opened) await invoke(COMMANDS.historyOpenFolder, { id: opened.id });
  }));
  deleteButton.addEventListener("click", () => {
    if (!opened) return;
    confirmText.textContent = `“${conversationTitle(opened)}” (${conversationMeta(opened)}): its transcript and recordings are removed from disk. This cannot be undone.`;
    confirm.returnValue = "";
    confirm.showModal();
  });
  confirm.addEventListener("close", () => act(async () => {
    if (confirm.returnValue !== "delete" || !opened) return;
    const deleted = opened;
    await invoke(COMMANDS.historyDelete, { id: deleted.id });
    onDeleted(deleted);
    showList();
    await refreshList();
    notice.textContent = "Conversation deleted.";
  }));
  // A shorter retention deletes at once: how many go is said, and asked, first.
  async function chooseRetention(chosen) {
    const deleted = await invoke(COMMANDS.historySetRetention, { retention: chosen });
    setRetention(chosen);
    await refreshList();
    notice.textContent =
      deleted.length === 0
        ? "Nothing to delete."
        : `${deleted.length} older conversation${deleted.length === 1 ? "" : "s"} deleted.`;
  }
  const onRetentionChange = () => act(async () => {
    const chosen = retentionFromValue(retention.value);
    const expiring = await invoke(COMMANDS.historyExpiring, { retention: chosen });
    if (expiring === 0) return chooseRetention(chosen);
    retentionConfirmText.textContent = expiringSentence(expiring, chosen);
    retentionConfirm.returnValue = "";
    retentionConfirm.showModal();
  });
  retention.addEventListener("change", onRetentionChange);
  savedSelect.addEventListener("change", () => act(async () => {
    const chosen = savedSelect.value;
    savedSelect.value = keptSaved;
    await invoke(COMMANDS.historySetSaved, { saved: chosen });
    keptSaved = chosen;
    savedSelect.value = chosen;
    notice.textContent = savedChosenSentence(chosen);
  }));
  // Puts the retention in force back on the select. WebKit fires no change for an option
  // chosen again after a script set its select back, so the user's next choice would do
  // nothing: a fresh copy of the select has no memory of the choice taken back.
  function showKeptRetention() {
    const fresh = retention.cloneNode(true);
    fresh.value = keptValue;
    retention.replaceWith(fresh);
    retention = fresh;
    retention.addEventListener("change", onRetentionChange);
    retention.focus();
  }
  retentionConfirm.addEventListener("close", () => act(async () => {
    retentionConfirmText.textContent = "";
    if (retentionConfirm.returnValue !== "delete") {
      showKeptRetention();
      notice.textContent = "Nothing was deleted.";
      return;
    }
    await chooseRetention(retentionFromValue(retention.value));
  }));

  return { open, openConversation, refreshList };
}
