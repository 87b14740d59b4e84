// What one update of Walkie's page costs, by kind of update and window size (issue 43).
//
// Plays a replay of the events Walkie's window was sent (run.sh writes one to
// target/bench-peer/window-events.json) to Walkie's page alone (examples/page_floor.rs), once for
// each kind of event alone, once with none and once with all of them, in each window size, and
// reads the page's process tree's CPU (/proc, as proc.mjs does for the peer bench) between the
// window's `replaying` and `replayed`. An event's cost is what a kind's replay took over the
// replay with no events, divided by its events (the batches of updates the app sent): the web
// process's (WebKit's layout, style and paint, the page's script) and the window's process's
// (receiving the events, drawing the frames) apart; an update's, the web process's divided by
// the updates the events carried.
//
//   node bench/peer/page_cost.mjs REPLAY.json [--sizes 480x720,1600x1000] [--kinds all,none,…]
//        [--pages NAME=DIR,…] [--seconds S] [--rounds N] [--batch app|as-recorded] [--json OUT.json]
//
// --pages measures each version of the page in DIR (e.g. `before=../old/ui,after=ui`) in the
// same run, interleaved, rather than the ui/ built into the page floor; the page named
// `listening` (always measured) is the floor under any page: it listens to the same events and
// shows nothing, so its cost per event is what delivering an event to the page costs. --seconds
// plays only the replay's first S seconds (quicker, noisier); --rounds repeats every variant N
// times, interleaved, and keeps the median; --batch app sends the updates batched as the app now
// does (a recording from before the app sent batches has one update an event). Needs xvfb-run
// and a release build of the page floor: cargo build --release --example page_floor (run.sh
// builds it).

import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { cpuMsByPid, cpuMsByProcessSince, treeOf } from "./proc.mjs";

const repo = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const target = process.env.CARGO_TARGET_DIR ?? join(repo, "target");
const pageFloor = join(target, "release", "examples", "page_floor");

/** Each kind of update: the updates (`{ kind, payload }` of a `walkie://updates` batch) it is made of. */
const KINDS = {
  "level/input": (update) => update.kind === "level" && update.payload?.direction === "input",
  "level/output": (update) => update.kind === "level" && update.payload?.direction === "output",
  status: (update) => update.kind === "status",
  transcript: (update) => update.kind === "transcript",
  spending: (update) => update.kind === "spending",
  all: () => true,
  none: () => false,
};

const UPDATES = "walkie://updates";
/** The events a recording from before the app sent batches holds, by the kind of their update. */
const OLD_EVENTS = { "walkie://status": "status", "walkie://level": "level", "walkie://transcript": "transcript", "walkie://spending": "spending" };

/**
 * The replay's events as batches of updates: a recording made before the app sent batches has
 * each update as an event of its own, sent as a batch of one.
 */
function asBatches(replay) {
  const events = replay.events.map(([atMs, name, payload]) =>
    OLD_EVENTS[name] ? [atMs, UPDATES, [{ kind: OLD_EVENTS[name], payload }]] : [atMs, name, payload],
  );
  return { ...replay, events };
}

/**
 * The replay's updates sent as the app sends them (src-tauri/window_updates.rs): a batch is due
 * `pacedMs` after its first update, or `statusMs` after a status if that is sooner.
 */
function batchedAsTheAppDoes(replay, pacedMs = 100, statusMs = 10) {
  const events = [];
  let pending = [];
  let dueMs = null;
  const send = () => {
    events.push([dueMs, UPDATES, pending]);
    [pending, dueMs] = [[], null];
  };
  for (const [atMs, name, batch] of replay.events) {
    if (name !== UPDATES) continue;
    for (const update of batch) {
      if (dueMs !== null && atMs >= dueMs) send();
      const due = atMs + (update.kind === "status" ? statusMs : pacedMs);
      dueMs = dueMs === null ? due : Math.min(dueMs, due);
      pending.push(update);
    }
  }
  if (dueMs !== null) send();
  return { ...replay, events };
}

function parseArgs(argv) {
  const [replayPath, ...rest] = argv;
  if (!replayPath) {
    throw new Error("usage: page_cost.mjs REPLAY.json [--sizes 480x720,1600x1000] [--kinds …] [--seconds S] [--rounds N] [--json OUT]");
  }
  const options = { replayPath, sizes: ["480x720", "1600x1000"], kinds: Object.keys(KINDS), pages: [["built in", null]], seconds: null, rounds: 1, json: null, batch: false };
  for (let at = 0; at < rest.length; at += 2) {
    const [flag, value] = [rest[at], rest[at + 1]];
    if (value === undefined) throw new Error(`${flag} needs a value`);
    if (flag === "--sizes") options.sizes = value.split(",");
    else if (flag === "--kinds") options.kinds = value.split(",");
    else if (flag === "--pages") options.pages = value.split(",").map((page) => { const at = page.indexOf("="); if (at < 1) throw new Error(`a page is NAME=DIR, not ${page}`); return [page.slice(0, at), page.slice(at + 1)]; });
    else if (flag === "--seconds") options.seconds = Number(value);
    else if (flag === "--rounds") options.rounds = Number(value);
    else if (flag === "--json") options.json = value;
    else if (flag === "--batch") {
      if (value !== "app" && value !== "as-recorded") throw new Error(`--batch is app or as-recorded, not ${value}`);
      options.batch = value === "app";
    }
    else throw new Error(`unknown option ${flag}`);
  }
  for (const kind of options.kinds) if (!KINDS[kind]) throw new Error(`unknown kind ${kind}: one of ${Object.keys(KINDS).join(", ")}`);
  if (!options.kinds.includes("none")) options.kinds.push("none");
  for (const size of options.sizes) if (!/^\d+x\d+$/.test(size)) throw new Error(`a size is WIDTHxHEIGHT, not ${size}`);
  return options;
}

/** The replay cut to its first `seconds` (all of it without), with the updates of one kind only. */
function variant(replay, kind, seconds) {
  const durationMs = seconds ? Math.min(replay.durationMs, seconds * 1000) : replay.durationMs;
  const events = replay.events
    .filter(([atMs, name]) => atMs < durationMs && name === UPDATES)
    .map(([atMs, name, batch]) => [atMs, name, batch.filter(KINDS[kind])])
    .filter(([, , batch]) => batch.length > 0);
  const updates = events.reduce((sum, [, , batch]) => sum + batch.length, 0);
  return { durationMs, events, updates };
}

/** Runs the page floor on `replayFile` in a window of `size`; its tree's CPU by process name over the replay. */
async function replayCpu(replayFile, size, uiDir, home) {
  const window = spawn(
    "xvfb-run",
    ["-a", "-s", "-screen 0 1920x1200x24", pageFloor, "--replay", replayFile, "--size", size, ...(uiDir ? ["--ui", uiDir] : [])],
    { env: { ...process.env, HOME: home, XDG_DATA_HOME: join(home, "data"), XDG_CACHE_HOME: join(home, "cache") }, stdio: ["ignore", "pipe", "ignore"], detached: true },
  );
  const lines = createInterface({ input: window.stdout })[Symbol.asyncIterator]();
  const says = async (wanted) => {
    for (;;) {
      const { value, done } = await lines.next();
      if (done) throw new Error(`the page floor ended without saying ${wanted}`);
      if (value === wanted) return;
    }
  };
  try {
    await says("replaying");
    const pids = treeOf(window.pid);
    const before = cpuMsByPid(pids);
    await says("replayed");
    const byName = cpuMsByProcessSince(before, pids);
    for (const name of ["xvfb-run", "Xvfb", "sh"]) delete byName[name];
    return byName;
  } finally {
    try {
      process.kill(-window.pid, "SIGTERM");
    } catch {
      // Ended already.
    }
    await new Promise((resolve) => (window.exitCode !== null ? resolve() : window.once("exit", resolve)));
  }
}

/** A page that listens to every event Walkie's window is sent, and shows nothing. */
function listeningPage(work) {
  const dir = join(work, "listening");
  mkdirSync(dir);
  writeFileSync(join(dir, "index.html"), '<!doctype html><meta charset="utf-8"><script type="module" src="listen.js"></script><p>Listening</p>\n');
  writeFileSync(
    join(dir, "listen.js"),
    `let received = 0;\nawait window.__TAURI__.event.listen(${JSON.stringify(UPDATES)}, (event) => (received += event.payload.length));\nawait window.__TAURI__.core.invoke("status");\n`,
  );
  return dir;
}

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
};

async function main() {
  const options = parseArgs(process.argv.slice(2));
  const recorded = asBatches(JSON.parse(readFileSync(options.replayPath, "utf8")));
  const replay = options.batch ? batchedAsTheAppDoes(recorded) : recorded;
  const work = mkdtempSync(join(tmpdir(), "walkie-page-cost-"));
  options.pages.push(["listening", listeningPage(work)]);
  const runs = new Map(); // "page size kind" → [{ web, window }]
  try {
    for (let round = 0; round < options.rounds; round++) {
      for (const size of options.sizes) {
        for (const kind of options.kinds) {
          for (const [page, uiDir] of options.pages) {
            const file = join(work, `${kind.replace("/", "-")}.json`);
            writeFileSync(file, JSON.stringify(variant(replay, kind, options.seconds)));
            const home = mkdtempSync(join(work, "home-"));
            const byName = await replayCpu(file, size, uiDir, home);
            rmSync(home, { recursive: true, force: true });
            const web = byName.WebKitWebProces ?? 0;
            const total = Object.values(byName).reduce((sum, ms) => sum + ms, 0);
            const key = `${page} ${size} ${kind}`;
            runs.set(key, [...(runs.get(key) ?? []), { web, window: total - web }]);
            process.stderr.write(`${key}: web ${web.toFixed(0)} ms, window ${(total - web).toFixed(0)} ms\n`);
          }
        }
      }
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }

  const seconds = variant(replay, "none", options.seconds).durationMs / 1000;
  const rows = [];
  for (const [page] of options.pages) for (const size of options.sizes) {
    const base = runs.get(`${page} ${size} none`);
    const baseWeb = median(base.map((run) => run.web));
    const baseWindow = median(base.map((run) => run.window));
    for (const kind of options.kinds) {
      const { events: { length: count }, updates } = variant(replay, kind, options.seconds);
      const web = median(runs.get(`${page} ${size} ${kind}`).map((run) => run.web));
      const window = median(runs.get(`${page} ${size} ${kind}`).map((run) => run.window));
      rows.push({
        page, size, kind, events: count, updates,
        webMsPerS: web / seconds, windowMsPerS: window / seconds,
        webMsPerEvent: count ? (web - baseWeb) / count : null,
        windowMsPerEvent: count ? (window - baseWindow) / count : null,
        webMsPerUpdate: updates ? (web - baseWeb) / updates : null,
      });
    }
  }
  const fixed = (value, digits) => (value === null ? "—" : value.toFixed(digits));
  console.log(`Walkie's page alone replaying ${options.replayPath} (${seconds.toFixed(1)} s, median of ${options.rounds}):\n`);
  console.log("| page | window | kind of update | events | updates | web process, ms/s | window's process, ms/s | web process per event, ms | window's process per event, ms | web process per update, ms |");
  console.log("|---|---|---|---|---|---|---|---|---|---|");
  for (const row of rows) {
    console.log(`| ${row.page} | ${row.size} | ${row.kind} | ${row.events} | ${row.updates} | ${fixed(row.webMsPerS, 1)} | ${fixed(row.windowMsPerS, 1)} | ${fixed(row.webMsPerEvent, 2)} | ${fixed(row.windowMsPerEvent, 2)} | ${fixed(row.webMsPerUpdate, 2)} |`);
  }
  if (options.json) writeFileSync(options.json, JSON.stringify({ replay: options.replayPath, seconds, rounds: options.rounds, rows }, null, 2));
}

main().catch((error) => {
  console.error(error.message);
  process.exit(1);
});
