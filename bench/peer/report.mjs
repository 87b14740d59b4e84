// Times every client's turns and prints the peer benchmark's tables: for each commit the
// provider received during a client's run (its trace), the first loud window the detector
// heard after it (detect.mjs) gives commit → first audible sample; the provider's trace also
// says when the reply's first packet left, so the client's part is told from the provider's.
// A reply's dropouts are the silences of 5–195 ms inside it (the voice has none, so each is
// audio that came late to the sink); a longer one is counted apart, as a pause in the audio the
// provider echoed (a pre-roll the microphone's gate kept silent). Then what each client's
// processes cost (drive.mjs, benches/app.rs --peer) beside the floors (floor.mjs, the bare
// WebKitGTK window), and the ratios the issue asks for.
//
// The codec's floor (crates/dsp/examples/codec_floor.rs: Opus encode and decode, CPU ms per second
// of audio) is charged for what each client's turns carried: the held seconds encoded, the
// reply's seconds heard at the sink decoded.
//
//   node report.mjs --trace DIR --loud FILE --load-before L --load-after L --floor FLOOR.json
//                   --codec CODEC.json RESULT.json...
//
// Exits 1, loudly, when a client did not complete all its turns or a reply went unheard.

import { readFileSync } from "node:fs";
import { join } from "node:path";

const argv = process.argv.slice(2);
const option = (name) => argv[argv.indexOf(`--${name}`) + 1];
const floorFile = option("floor");
const codecFile = option("codec");
const results = argv
  .filter((arg) => arg.endsWith(".json") && arg !== floorFile && arg !== codecFile)
  .map((file) => JSON.parse(readFileSync(file, "utf8")));
const floor = JSON.parse(readFileSync(floorFile, "utf8"));
const codec = JSON.parse(readFileSync(codecFile, "utf8"));
/** libopus's cheapest effort (the floor of any Opus client) and the engine's. */
const cheapestOpus = codec.byComplexity.find(({ complexity }) => complexity === 0);
const enginesOpus = codec.byComplexity.find(({ complexity }) => complexity !== 0);
const lines = (file) => readFileSync(file, "utf8").split("\n").filter(Boolean);
const trace = (file) => lines(join(option("trace"), file)).map((line) => JSON.parse(line));
const loud = lines(option("loud")).map((line) => {
  const [unixMs, window] = line.split(" ").map(Number);
  return { unixMs, window };
});
/** A silence this long inside a reply is the sent audio's own (a pause the provider echoed),
 * not a dropout; a shorter one is audio that came late to the sink. A reply ends at the next
 * commit: the user's next turn is silent at the sink until its own reply. */
const longSilenceWindows = 40;
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
  let longSilences = 0;
  // The 5 ms windows from each reply's first loud one to its last: what the client decoded.
  let replyWindows = 0;
  const heard = received.map((at, index) => {
    const until = received[index + 1] ?? result.endedUnixMs;
    const windows = loud.filter(({ unixMs }) => unixMs >= at && unixMs < until);
    for (let next = 1; next < windows.length; next += 1) {
      const missing = windows[next].window - windows[next - 1].window - 1;
      if (missing >= longSilenceWindows) {
        longSilences += 1;
      } else if (missing > 0) {
        dropouts += 1;
        droppedWindows += missing;
      }
    }
    if (windows.length > 0) replyWindows += windows.at(-1).window - windows[0].window + 1;
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
  const heldSeconds = (result.turns * result.heldMs) / 1000;
  const replySeconds = replyWindows / 200;
  /** Opus at `effort` for these turns, per second of them. */
  const opusMsPerS = (effort) => (effort.encodeMsPerS * heldSeconds + effort.decodeMsPerS * replySeconds) / seconds;
  return {
    result,
    seconds,
    latencies,
    provider,
    client,
    dropouts,
    droppedWindows,
    longSilences,
    cpuMsPerS: result.cpuMs / seconds,
    cheapestOpusMsPerS: opusMsPerS(cheapestOpus),
    enginesOpusMsPerS: opusMsPerS(enginesOpus),
    heldSeconds,
    replySeconds,
  };
});

const mib = (kib) => `${(kib / 1024).toFixed(1)} MiB`;
const ratio = (value) => `**${value.toFixed(2)}**`;
console.log(`load average before ${option("load-before")}, after ${option("load-after")}`);
console.log(
  "\n| client | turns heard | commit → first audible sample at the sink, p50 / p95 (min–max) | of it the provider's (commit in → first packet out), p50 | the client's, p50 / p95 | dropouts at the sink (5 ms windows lost) | silences of 200 ms or more inside replies |",
);
console.log("|---|---|---|---|---|---|---|");
for (const { result, latencies, provider, client, dropouts, droppedWindows, longSilences } of rows) {
  console.log(
    `| ${result.client} ${result.version} | ${latencies.length}/${result.turns} | ${ms(quantile(latencies, 0.5))} / ` +
      `${ms(quantile(latencies, 0.95))} (${ms(Math.min(...latencies))}–${ms(Math.max(...latencies))}) | ` +
      `${ms(quantile(provider, 0.5))} | ${ms(quantile(client, 0.5))} / ${ms(quantile(client, 0.95))} | ` +
      `${dropouts} (${droppedWindows}) | ${longSilences} |`,
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
for (const row of rows) {
  console.log(
    `| floor: Opus for ${row.result.client}'s turns (${row.heldSeconds.toFixed(1)} s encoded, ${row.replySeconds.toFixed(1)} s heard decoded, in ${row.seconds.toFixed(1)} s), complexity 0 / ${enginesOpus.complexity} | ` +
      `${row.cheapestOpusMsPerS.toFixed(1)} / ${row.enginesOpusMsPerS.toFixed(1)} ms/s | — | — |`,
  );
}
if (walkie?.result.bareWebviewPssKib) {
  console.log(`| floor: a bare WebKitGTK window | — | ${mib(walkie.result.bareWebviewPssKib)} | — |`);
}
if (walkie?.result.pageFloorPssKib) {
  const replay = walkie.result.windowReplayCpuMs;
  const cpu = replay === undefined ? "—" : `${(replay / walkie.seconds).toFixed(1)} ms/s (the ${walkie.result.windowEvents} events Walkie's window was sent over its turns, replayed at their times)`;
  console.log(`| floor: Walkie's page in a Tauri window, no app behind it (examples/page_floor.rs) | ${cpu} | ${mib(walkie.result.pageFloorPssKib)} | — |`);
}
// Where Walkie's memory over the bare window is, by what is mapped (its executable, a library,
// anonymous memory), largest difference first.
/** What `more` maps beyond `less`, by mapping, ±0.5 MiB or more, largest difference first. */
function mappingsBeyond(more, less) {
  return [...new Set([...Object.keys(more), ...Object.keys(less)])]
    .map((name) => [name, (more[name] ?? 0) - (less[name] ?? 0)])
    .sort(([, a], [, b]) => b - a)
    .filter(([, kib]) => Math.abs(kib) >= 512)
    .map(([name, kib]) => `${name} ${kib > 0 ? "+" : ""}${mib(kib)}`)
    .join(", ");
}
if (walkie?.result.pssIdleKibByMapping && walkie.result.bareWebviewPssKibByMapping) {
  const { pssIdleKibByMapping: mine, bareWebviewPssKibByMapping: bare, pageFloorPssKibByMapping: page } = walkie.result;
  console.log(`\nWalkie idle − the bare window, PSS by mapping (±0.5 MiB or more): ${mappingsBeyond(mine, bare)}`);
  if (page) {
    console.log(`Of it, Walkie's page in a Tauri window − the bare window: ${mappingsBeyond(page, bare)}`);
    console.log(`And Walkie idle − its page in a Tauri window (Walkie's own part): ${mappingsBeyond(mine, page)}`);
  }
}
// Where each tree's CPU went, by process name, largest first.
const byProcess = (cpuMsByProcess, seconds) =>
  Object.entries(cpuMsByProcess ?? {})
    .sort(([, a], [, b]) => b - a)
    .map(([name, ms]) => `${name} ${(ms / seconds).toFixed(1)}`)
    .join(", ");
for (const { result, seconds } of rows) {
  console.log(`\n${result.client}'s CPU by process, ms/s: ${byProcess(result.cpuMsByProcess, seconds)}`);
}
if (walkie?.result.windowReplayCpuMsByProcess) {
  console.log(`Walkie's page alone replaying its events, ms/s: ${byProcess(walkie.result.windowReplayCpuMsByProcess, walkie.seconds)}`);
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
  const cushions = walkieReplies.map((reply) => reply.cushionMs).filter((value) => typeof value === "number");
  if (cushions.length > 0) {
    console.log(`Walkie's cushion ahead of each reply, in order (ms): ${cushions.join(" ")}`);
  }
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
  // Goals of issue 43; issue 18's (≤ 0.125 × the browser, ≤ 2 × pacat + parec) were below
  // the floors the rows after these measure.
  console.log(`| CPU per second, Walkie ÷ ${browser.result.client} | ≤ 0.5 | ${ratio(walkie.cpuMsPerS / browser.cpuMsPerS)} |`);
  console.log(`| CPU per second, Walkie ÷ pacat + parec | — | ${ratio(walkie.cpuMsPerS / floor.cpuMsPerS)} |`);
  // Per second flatters the client whose turns last longer (more idle between them): the
  // same turns' whole CPU says it plainly.
  console.log(
    `| CPU over the same ${walkie.result.turns} turns (not per second), Walkie ÷ ${browser.result.client} | — | ${ratio(walkie.result.cpuMs / browser.result.cpuMs)} |`,
  );
  console.log(
    `| CPU per second, the pacat + parec floor ÷ ${browser.result.client} (what moving the audio alone costs) | — | ${ratio(floor.cpuMsPerS / browser.cpuMsPerS)} |`,
  );
  console.log(
    `| CPU per second, pacat + parec + the cheapest Opus for ${browser.result.client}'s turns ÷ ${browser.result.client} (moving and coding the audio, nothing else) | — | ${ratio((floor.cpuMsPerS + browser.cheapestOpusMsPerS) / browser.cpuMsPerS)} |`,
  );
  console.log(
    `| CPU per second, Walkie ÷ (pacat + parec + Opus at the engine's complexity for its turns) | — | ${ratio(walkie.cpuMsPerS / (floor.cpuMsPerS + walkie.enginesOpusMsPerS))} |`,
  );
  if (walkie.result.windowReplayCpuMs !== undefined) {
    // Moving and coding the audio, and showing what Walkie's window showed, nothing else: the
    // floor under Walkie's CPU.
    const windowMsPerS = walkie.result.windowReplayCpuMs / walkie.seconds;
    const floorMsPerS = floor.cpuMsPerS + walkie.enginesOpusMsPerS + windowMsPerS;
    console.log(
      `| CPU per second, Walkie ÷ (pacat + parec + Opus at the engine's complexity + Walkie's page alone showing the same events) | ≤ 1.2 | ${ratio(walkie.cpuMsPerS / floorMsPerS)} |`,
    );
    console.log(
      `| CPU per second, (pacat + parec + Opus at the engine's complexity + Walkie's page alone showing the same events) ÷ pacat + parec | — | ${ratio(floorMsPerS / floor.cpuMsPerS)} |`,
    );
    console.log(`| CPU per second, Walkie − its page alone showing the same events (Walkie's own part) | — | ${(walkie.cpuMsPerS - windowMsPerS).toFixed(1)} ms/s |`);
  }
  console.log(`| seconds of the ${walkie.result.turns} turns, Walkie / ${browser.result.client} (both drivers give a turn the same time from its press, longer only if its reply has not played by then) | — | ${walkie.seconds.toFixed(1)} / ${browser.seconds.toFixed(1)} |`);
  console.log(`| PSS idle, Walkie ÷ ${browser.result.client} | ≤ 1 | ${ratio(walkie.result.pssIdleKib / browser.result.pssIdleKib)} |`);
  console.log(`| PSS while a reply plays, Walkie ÷ ${browser.result.client} | ≤ 1 | ${ratio(walkie.result.pssTalkingKib / browser.result.pssTalkingKib)} |`);
  if (bare) {
    console.log(`| PSS idle, Walkie − bare WebKitGTK window | ≤ 25 MiB | **${mib(walkie.result.pssIdleKib - bare)}** |`);
    console.log(`| PSS while a reply plays, Walkie − bare WebKitGTK window | ≤ 40 MiB | **${mib(walkie.result.pssTalkingKib - bare)}** |`);
    const page = walkie.result.pageFloorPssKib;
    if (page) {
      // The part of the 25 MiB the product card's stack and the page take before any of
      // Walkie's code runs: above the goal, the goal is below this floor.
      console.log(`| PSS idle, Walkie's page in a Tauri window, no app behind it − bare WebKitGTK window (the floor under the 25 MiB goal) | — | **${mib(page - bare)}** |`);
      console.log(`| PSS idle, Walkie − its page in a Tauri window (Walkie's own part) | — | ${mib(walkie.result.pssIdleKib - page)} |`);
    }
  }
}
process.exit(failed ? 1 : 0);
