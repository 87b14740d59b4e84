// Times every client's turns and prints the peer benchmark's tables: for each commit the
// provider received during a client's run (its trace), the first loud window the detector
// heard after it (detect.mjs) gives commit → first audible sample; the provider's trace also
// says when the reply's first packet left, so the client's part is told from the provider's.
// A reply's dropouts are the silences of 5–195 ms inside it (the voice has none, so each is
// audio that came late to the sink); a longer silence ends the reply. Then what each client's
// processes cost (drive.mjs, benches/app.rs --peer) beside the floors (floor.mjs, the bare
// WebKitGTK window), and the ratios the issue asks for.
//
//   node report.mjs --trace DIR --loud FILE --load-before L --load-after L --floor FLOOR.json
//                   RESULT.json...
//
// Exits 1, loudly, when a client did not complete all its turns or a reply went unheard.

import { readFileSync } from "node:fs";
import { join } from "node:path";

const argv = process.argv.slice(2);
const option = (name) => argv[argv.indexOf(`--${name}`) + 1];
const floorFile = option("floor");
const results = argv
  .filter((arg) => arg.endsWith(".json") && arg !== floorFile)
  .map((file) => JSON.parse(readFileSync(file, "utf8")));
const floor = JSON.parse(readFileSync(floorFile, "utf8"));
const lines = (file) => readFileSync(file, "utf8").split("\n").filter(Boolean);
const trace = (file) => lines(join(option("trace"), file)).map((line) => JSON.parse(line));
const loud = lines(option("loud")).map((line) => {
  const [unixMs, window] = line.split(" ").map(Number);
  return { unixMs, window };
});
/** A silence this long ends a reply; a shorter one inside it is a dropout. */
const replyEndsAfterWindows = 40;
const commits = trace("client-events.jsonl")
  .filter((line) => JSON.parse(line.text).type === "input_audio_buffer.commit")
  .map((line) => line.received_at_unix_ms);
const replies = trace("replies.jsonl").map((line) => line.first_audio_sent_at_unix_ms);

/** The `fraction` quantile of `values` (nearest rank). */
function quantile(values, fraction) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(fraction * sorted.length) - 1))];
}
const ms = (value) => (value === undefined ? "—" : `${value.toFixed(1)} ms`);

let failed = false;
const rows = results.map((result) => {
  const within = (at) => at >= Math.floor(result.startedUnixMs) && at <= Math.ceil(result.endedUnixMs);
  const received = commits.filter(within);
  const sent = replies.filter(within);
  if (received.length !== result.turns || sent.length !== result.turns) {
    console.error(
      `report.mjs: ${result.client} made ${received.length} commits and got ${sent.length} replies, not ${result.turns}`,
    );
    failed = true;
  }
  let dropouts = 0;
  let droppedWindows = 0;
  const heard = received.map((at, index) => {
    const until = received[index + 1] ?? result.endedUnixMs;
    const windows = loud.filter(({ unixMs }) => unixMs >= at && unixMs < until);
    for (let next = 1; next < windows.length; next += 1) {
      const missing = windows[next].window - windows[next - 1].window - 1;
      if (missing >= replyEndsAfterWindows) break;
      if (missing > 0) {
        dropouts += 1;
        droppedWindows += missing;
      }
    }
    return windows.length === 0 ? null : windows[0].unixMs - at;
  });
  const unheard = heard.filter((latency) => latency === null).length;
  if (unheard > 0) {
    console.error(`report.mjs: ${unheard} of ${result.client}'s replies were never heard at the sink`);
    failed = true;
  }
  const latencies = heard.filter((latency) => latency !== null);
  const provider = sent.map((at, index) => at - received[index]);
  const client = heard.map((latency, index) => latency - provider[index]).filter((latency) => !Number.isNaN(latency));
  const seconds = (result.endedUnixMs - result.startedUnixMs) / 1000;
  return { result, seconds, latencies, provider, client, dropouts, droppedWindows, cpuMsPerS: result.cpuMs / seconds };
});

const mib = (kib) => `${(kib / 1024).toFixed(1)} MiB`;
const ratio = (value) => `**${value.toFixed(2)}**`;
console.log(`load average before ${option("load-before")}, after ${option("load-after")}`);
console.log(
  "\n| client | turns heard | commit → first audible sample at the sink, p50 / p95 (min–max) | of it the provider's (commit in → first packet out), p50 | the client's, p50 / p95 | dropouts at the sink (5 ms windows lost) |",
);
console.log("|---|---|---|---|---|---|");
for (const { result, latencies, provider, client, dropouts, droppedWindows } of rows) {
  console.log(
    `| ${result.client} ${result.version} | ${latencies.length}/${result.turns} | ${ms(quantile(latencies, 0.5))} / ` +
      `${ms(quantile(latencies, 0.95))} (${ms(Math.min(...latencies))}–${ms(Math.max(...latencies))}) | ` +
      `${ms(quantile(provider, 0.5))} | ${ms(quantile(client, 0.5))} / ${ms(quantile(client, 0.95))} | ` +
      `${dropouts} (${droppedWindows}) |`,
  );
}
console.log("\n| process tree | CPU per second of the turns | PSS idle | PSS while a reply plays |");
console.log("|---|---|---|---|");
for (const { result, cpuMsPerS } of rows) {
  console.log(
    `| ${result.client} | ${cpuMsPerS.toFixed(1)} ms/s | ${mib(result.pssIdleKib)} | ${mib(result.pssTalkingKib)} |`,
  );
}
const walkie = rows.find((row) => row.result.client === "Walkie");
const browser = rows.find((row) => row.result.client !== "Walkie");
console.log(`| floor: pacat + parec, the same audio both ways | ${floor.cpuMsPerS.toFixed(1)} ms/s | ${mib(floor.pssKib)} | — |`);
if (walkie?.result.bareWebviewPssKib) {
  console.log(`| floor: a bare WebKitGTK window | — | ${mib(walkie.result.bareWebviewPssKib)} | — |`);
}
// Where each tree's CPU went, by process name, largest first.
for (const { result, seconds } of rows) {
  const parts = Object.entries(result.cpuMsByProcess ?? {})
    .sort(([, a], [, b]) => b - a)
    .map(([name, ms]) => `${name} ${(ms / seconds).toFixed(1)}`);
  console.log(`\n${result.client}'s CPU by process, ms/s: ${parts.join(", ")}`);
}
for (const { result } of rows) {
  if (result.jitterBufferDelayMs === undefined) continue;
  console.log(
    `${result.client}'s receiver over the turns (WebRTC stats): jitter-buffer delay ` +
      `${ms(result.jitterBufferDelayMs)} mean; ${result.concealedAudibleSamples} audible samples ` +
      `concealed in ${result.concealmentEvents} concealment events`,
  );
}
const walkieResult = results.find((result) => result.client === "Walkie");
const walkieReplies = walkieResult?.replies;
if (walkieReplies && walkieReplies.length < walkieResult.turns) {
  console.error(`report.mjs: Walkie's log reports ${walkieReplies.length} replies played, not ${walkieResult.turns}`);
  failed = true;
}
if (walkieReplies) {
  const timed = walkieReplies.map((reply) => reply.arrivalToDeviceMs).filter((value) => value !== null);
  const total = (field) => walkieReplies.reduce((sum, reply) => sum + (reply[field] ?? 0), 0);
  const withSilence = walkieReplies.filter((reply) => reply.silenceInsideMs > 0).length;
  console.log(
    `Walkie's speaker over the turns (its engine's reports): ${walkieReplies.length} replies; RTP arrival → ` +
      `first sample handed to the device p50 ${ms(quantile(timed, 0.5))}, p95 ${ms(quantile(timed, 0.95))} ` +
      `(${timed.length} timed); ${ms(total("silenceInsideMs"))} of silence inside ${withSilence} of them; ` +
      `the sound server ran dry ${total("serverUnderflows")} times (${ms(total("serverGapMs"))}); ${total("concealedFrames")} frames concealed`,
  );
}
if (walkie && browser) {
  const p50 = (row) => quantile(row.client, 0.5);
  const bare = walkie.result.bareWebviewPssKib;
  console.log("\n| measure | goal | this run |\n|---|---|---|");
  console.log(`| client-added latency, commit → first audible sample, p50, Walkie ÷ ${browser.result.client} | ≤ 0.5 | ${ratio(p50(walkie) / p50(browser))} |`);
  console.log(`| the same at p95 | — | ${(quantile(walkie.client, 0.95) / quantile(browser.client, 0.95)).toFixed(2)} |`);
  console.log(`| dropouts at the sink over ${walkie.result.turns} turns, Walkie / ${browser.result.client} | 0 | ${walkie.dropouts} / ${browser.dropouts} |`);
  if (walkieReplies && browser.result.jitterBufferDelayMs !== undefined) {
    const timed = walkieReplies.map((reply) => reply.arrivalToDeviceMs).filter((value) => value !== null);
    const silent = walkieReplies.filter((reply) => reply.silenceInsideMs > 0 || reply.serverUnderflows > 0).length;
    console.log(
      `| RTP arrival → device p50, Walkie ÷ ${browser.result.client}'s mean jitter-buffer delay; replies with an underrun inside (Walkie's ring or the sound server ran dry) | ≤ 1; 0 | ` +
        `${ratio(quantile(timed, 0.5) / browser.result.jitterBufferDelayMs)}; ${silent} |`,
    );
  }
  console.log(`| CPU per second, Walkie ÷ ${browser.result.client} | ≤ 0.125 | ${ratio(walkie.cpuMsPerS / browser.cpuMsPerS)} |`);
  console.log(`| CPU per second, Walkie ÷ pacat + parec | ≤ 2 | ${ratio(walkie.cpuMsPerS / floor.cpuMsPerS)} |`);
  console.log(
    `| CPU per second, the pacat + parec floor ÷ ${browser.result.client} (what moving the audio alone costs against the 0.125 goal) | — | ${ratio(floor.cpuMsPerS / browser.cpuMsPerS)} |`,
  );
  console.log(`| PSS idle, Walkie ÷ ${browser.result.client} | ≤ 1 | ${ratio(walkie.result.pssIdleKib / browser.result.pssIdleKib)} |`);
  console.log(`| PSS while a reply plays, Walkie ÷ ${browser.result.client} | ≤ 1 | ${ratio(walkie.result.pssTalkingKib / browser.result.pssTalkingKib)} |`);
  if (bare) {
    console.log(`| PSS idle, Walkie − bare WebKitGTK window | ≤ 25 MiB | **${mib(walkie.result.pssIdleKib - bare)}** |`);
    console.log(`| PSS while a reply plays, Walkie − bare WebKitGTK window | ≤ 40 MiB | **${mib(walkie.result.pssTalkingKib - bare)}** |`);
  }
}
process.exit(failed ? 1 : 0);
