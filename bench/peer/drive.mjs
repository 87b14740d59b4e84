// The browser side of the peer benchmark: Chromium (the system's, in an Xvfb display, driven by
// playwright-core) runs client.html against the local provider for N push-to-talk turns; a
// detector records the virtual speaker (the PulseAudio sink's monitor) and finds, for every
// commit the provider received, the first audible sample of the reply that followed.
//
//   node drive.mjs --base URL --token T --trace DIR --mic WAV [--turns 20] [--held-ms 1500]
//                  [--chromium /usr/bin/chromium] [--sink spk]
//
// Prints one JSON object: the turns' commit → first audible sample latencies (ms), with when
// each commit was sent and received and when the provider sent the reply's first packet (its
// trace's replies.jsonl), and what the run was.

import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { chromium } from "playwright-core";

const args = Object.fromEntries(
  process.argv
    .slice(2)
    .join(" ")
    .split(/\s*--/)
    .filter(Boolean)
    .map((pair) => {
      const [name, ...value] = pair.split(/\s+/);
      return [name, value.join(" ")];
    }),
);
const turns = Number(args.turns ?? 20);
const heldMs = Number(args["held-ms"] ?? 1500);
const sink = args.sink ?? "spk";
for (const needed of ["base", "token", "trace", "mic"]) {
  if (!args[needed]) {
    console.error(`drive.mjs: --${needed} is needed`);
    process.exit(2);
  }
}

/** The wall clock, to the tenth of a millisecond (the provider's trace is in Unix ms). */
const nowUnixMs = () => performance.timeOrigin + performance.now();

/** Records `sink`'s monitor and keeps the start of every 5 ms window louder than -50 dBFS. */
function startDetector() {
  const rateHz = 48000;
  const windowSamples = rateHz / 200;
  const threshold = 32768 * 10 ** (-50 / 20);
  const loudAtUnixMs = [];
  let pending = Buffer.alloc(0);
  const parec = spawn(
    "parec",
    ["-d", `${sink}.monitor`, "--raw", "--format=s16le", `--rate=${rateHz}`, "--channels=1", "--latency-msec=10"],
    { stdio: ["ignore", "pipe", "inherit"] },
  );
  parec.stdout.on("data", (chunk) => {
    // The newest sample was captured about now; each earlier one 1/48 ms before it.
    const arrivedUnixMs = nowUnixMs();
    pending = Buffer.concat([pending, chunk]);
    const samples = Math.floor(pending.length / 2);
    const windows = Math.floor(samples / windowSamples);
    for (let window = 0; window < windows; window += 1) {
      let sumSquares = 0;
      for (let i = 0; i < windowSamples; i += 1) {
        const sample = pending.readInt16LE(2 * (window * windowSamples + i));
        sumSquares += sample * sample;
      }
      if (Math.sqrt(sumSquares / windowSamples) >= threshold) {
        const samplesAfter = samples - window * windowSamples;
        loudAtUnixMs.push(arrivedUnixMs - (samplesAfter * 1000) / rateHz);
      }
    }
    pending = pending.subarray(windows * windowSamples * 2);
  });
  return { loudAtUnixMs, stop: () => parec.kill() };
}

/** The lines of one of the provider's trace files. */
function traceLines(traceDir, file) {
  return readFileSync(join(traceDir, file), "utf8")
    .split("\n")
    .filter(Boolean)
    .map((line) => JSON.parse(line));
}

/** The commits the provider received between two times, in order (Unix ms). */
function commitsReceived(traceDir, fromUnixMs, toUnixMs) {
  return traceLines(traceDir, "client-events.jsonl")
    .filter((line) => line.received_at_unix_ms >= fromUnixMs && line.received_at_unix_ms <= toUnixMs)
    .filter((line) => JSON.parse(line.text).type === "input_audio_buffer.commit")
    .map((line) => line.received_at_unix_ms);
}

/** When the provider sent each reply's first audio packet between two times (Unix ms). */
function repliesSent(traceDir, fromUnixMs, toUnixMs) {
  return traceLines(traceDir, "replies.jsonl")
    .map((line) => line.first_audio_sent_at_unix_ms)
    .filter((at) => at >= fromUnixMs && at <= toUnixMs);
}

const detector = startDetector();
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
  detector.stop();
}
const endedUnixMs = nowUnixMs();
const received = commitsReceived(args.trace, Math.floor(startedUnixMs), Math.ceil(endedUnixMs));
const replied = repliesSent(args.trace, Math.floor(startedUnixMs), Math.ceil(endedUnixMs));
if (received.length !== turns || replied.length !== turns) {
  console.error(
    `drive.mjs: the provider received ${received.length} commits and sent ${replied.length} replies, not ${turns}`,
  );
  process.exit(1);
}
const latenciesMs = received.map((at, index) => {
  const until = received[index + 1] ?? Infinity;
  const audible = detector.loudAtUnixMs.find((loud) => loud >= at && loud < until);
  return audible === undefined ? null : audible - at;
});
const missing = latenciesMs.filter((latency) => latency === null).length;
console.log(
  JSON.stringify({
    client: "chromium",
    version,
    turns,
    heldMs,
    commitReceivedUnixMs: received,
    commitSentUnixMs: sent,
    replySentUnixMs: replied,
    commitToAudibleMs: latenciesMs,
    unheard: missing,
  }),
);
process.exit(missing === 0 ? 0 : 1);
