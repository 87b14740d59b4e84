// The browser side of the peer benchmark: Chromium (the system's, in an Xvfb display, driven by
// playwright-core) runs client.html against the local provider for N push-to-talk turns.
//
//   node drive.mjs --base URL --token T --mic WAV [--turns 20] [--held-ms 1500]
//                  [--chromium /usr/bin/chromium]
//
// Prints one JSON object: the client, when its turns began and ended, and when each commit was
// sent (Unix ms). report.mjs times the turns from the provider's trace and the detector's.

import { parseArgs } from "node:util";
import { chromium } from "playwright-core";

const { values: args } = parseArgs({
  options: {
    base: { type: "string" },
    token: { type: "string" },
    mic: { type: "string" },
    turns: { type: "string" },
    "held-ms": { type: "string" },
    chromium: { type: "string" },
  },
});
const turns = Number(args.turns ?? 20);
const heldMs = Number(args["held-ms"] ?? 1500);
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
const startedUnixMs = nowUnixMs();
const sent = [];
try {
  const page = await browser.newPage();
  page.on("console", (message) => console.error(`page: ${message.text()}`));
  await page.goto(new URL("client.html", import.meta.url).href);
  await page.evaluate(([base, token]) => window.peer.connect(base, token), [args.base, args.token]);
  for (let turn = 0; turn < turns; turn += 1) {
    sent.push((await page.evaluate((held) => window.peer.turn(held), heldMs)).commitSentUnixMs);
  }
} finally {
  await browser.close();
}
const endedUnixMs = nowUnixMs();
console.log(
  JSON.stringify({ client: "Chromium", version, turns, startedUnixMs, endedUnixMs, commitSentUnixMs: sent }),
);
