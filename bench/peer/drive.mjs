// The browser side of the peer benchmark: Chromium (the system's, in an Xvfb display, driven by
// playwright-core) runs client.html against the local provider for N push-to-talk turns.
//
//   node drive.mjs --base URL --token T --mic WAV [--turns 20] [--held-ms 1500]
//                  [--slot-ms 4500] [--chromium /usr/bin/chromium]
//
// Each turn takes at least --slot-ms from its press (benches/app.rs gives Walkie's the same):
// the provider tells the end of a reply when it has sent it, Walkie's window when it has played
// it, so turns paced on either alone last differently, and CPU per second of the turns would
// not compare.
//
// Prints one JSON object: the client, when its turns began and ended, and when each commit was
// sent (Unix ms); what Chromium's processes (every descendant of this one) cost: CPU time over
// the turns and PSS idle (3 s after connecting) and while a reply plays (1 s into the middle
// turn's reply). report.mjs times the turns from the provider's trace and the detector's.

import { parseArgs } from "node:util";
import { chromium } from "playwright-core";
import { cpuMsByPid, cpuMsByProcessSince, pssKib, treeOf } from "./proc.mjs";

const { values: args } = parseArgs({
  options: {
    base: { type: "string" },
    token: { type: "string" },
    mic: { type: "string" },
    turns: { type: "string" },
    "held-ms": { type: "string" },
    "slot-ms": { type: "string" },
    chromium: { type: "string" },
  },
});
const turns = Number(args.turns ?? 20);
const heldMs = Number(args["held-ms"] ?? 1500);
const slotMs = Number(args["slot-ms"] ?? heldMs + 3000);
for (const needed of ["base", "token", "mic"]) {
  if (!args[needed]) {
    console.error(`drive.mjs: --${needed} is needed`);
    process.exit(2);
  }
}

/** The wall clock, to the tenth of a millisecond (the provider's trace is in Unix ms). */
const nowUnixMs = () => performance.timeOrigin + performance.now();

const browser = await chromium.launch({
  executablePath: args.chromium ?? "/usr/bin/chromium",
  // Headless Chromium plays no sound: it runs headed, in the X display run.sh gives it (Xvfb).
  headless: false,
  args: [
    "--use-fake-ui-for-media-stream",
    "--use-fake-device-for-media-stream",
    `--use-file-for-fake-audio-capture=${args.mic}`,
    "--autoplay-policy=no-user-gesture-required",
    // The local provider's calls endpoint sends no CORS headers: the page is trusted here.
    "--disable-web-security",
  ],
});
const version = browser.version();
/** Chromium's processes: everything this driver started. */
const chromiumTree = () => treeOf(process.pid).filter((pid) => pid !== process.pid);
const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
let startedUnixMs;
let endedUnixMs;
let cpuMsByProcess;
let receivingBefore;
let receivingAfter;
let pssIdleKib;
let pssTalkingKib;
const sent = [];
try {
  const page = await browser.newPage();
  page.on("console", (message) => console.error(`page: ${message.text()}`));
  await page.goto(new URL("client.html", import.meta.url).href);
  await page.evaluate(([base, token]) => window.peer.connect(base, token), [args.base, args.token]);
  await pause(3000);
  pssIdleKib = pssKib(chromiumTree());
  const cpuBefore = cpuMsByPid(chromiumTree());
  receivingBefore = await page.evaluate(() => window.peer.receiving());
  startedUnixMs = nowUnixMs();
  for (let turn = 0; turn < turns; turn += 1) {
    const turnStarted = Date.now();
    const done = page.evaluate((held) => window.peer.turn(held), heldMs);
    if (turn === Math.floor(turns / 2)) {
      await pause(heldMs + 1000);
      pssTalkingKib = pssKib(chromiumTree());
    }
    sent.push((await done).commitSentUnixMs);
    await pause(Math.max(0, turnStarted + slotMs - Date.now()));
  }
  endedUnixMs = nowUnixMs();
  receivingAfter = await page.evaluate(() => window.peer.receiving());
  const after = chromiumTree();
  cpuMsByProcess = cpuMsByProcessSince(cpuBefore, after);
  if (after.length !== cpuBefore.size) {
    console.error(`drive.mjs: Chromium had ${cpuBefore.size} processes before the turns, ${after.length} after`);
  }
} finally {
  await browser.close();
}
console.log(
  JSON.stringify({
    client: "Chromium",
    version,
    turns,
    heldMs,
    startedUnixMs,
    endedUnixMs,
    commitSentUnixMs: sent,
    cpuMs: Object.values(cpuMsByProcess).reduce((sum, ms) => sum + ms, 0),
    cpuMsByProcess,
    pssIdleKib,
    pssTalkingKib,
    // Over the turns: the jitter buffer's mean delay, and what it concealed (audible: not
    // counting the silence it plays once the reply has ended).
    jitterBufferDelayMs:
      (1000 * (receivingAfter.jitterBufferDelay - receivingBefore.jitterBufferDelay)) /
      (receivingAfter.jitterBufferEmittedCount - receivingBefore.jitterBufferEmittedCount),
    concealedAudibleSamples:
      receivingAfter.concealedSamples -
      receivingAfter.silentConcealedSamples -
      (receivingBefore.concealedSamples - receivingBefore.silentConcealedSamples),
    concealmentEvents: receivingAfter.concealmentEvents - receivingBefore.concealmentEvents,
  }),
);
