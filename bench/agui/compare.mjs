// Runs walkie-agui's criterion benchmark and the official AG-UI 1.0 verifier (@ag-ui/client
// 1.0.0 under node) on the same 1 M events, in memory and from JSON text, and prints both
// throughputs, their ratios and the machine's load.
//
//   cd bench/agui && npm ci && node compare.mjs            # runs cargo bench, then node
//   node compare.mjs --skip-cargo                          # reuse the last cargo bench run
//
// The criterion bench writes the events it measures as JSON lines (AGUI_BENCH_EVENTS_OUT), the
// very text its decoding bench reads, and its estimates (target/…/criterion); this script reads
// both, so the two sides see identical events. The official side runs the client's own consumer
// stages, transformChunks → verifyEvents, exactly as AbstractAgent.runAgent chains them: on the
// parsed objects (in memory), and on the text lines with JSON.parse ahead of them (from text,
// as Walkie's push_json is timed). Its reducer (defaultApplyEvents) clones the history on
// every event, which makes it quadratic, so it is timed on a 10 000-event prefix for information
// only; the ratio compares Walkie's verify + assemble against the official verify alone, which
// favours the official side.

import { spawnSync } from "node:child_process";
import { loadavg } from "node:os";
import { readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { count, from, lastValueFrom, map } from "rxjs";
import { AbstractAgent, defaultApplyEvents, transformChunks, verifyEvents } from "@ag-ui/client";

const here = dirname(fileURLToPath(import.meta.url));
const repo = resolve(here, "../..");
const targetDir = process.env.CARGO_TARGET_DIR ? resolve(process.env.CARGO_TARGET_DIR) : join(repo, "target/agui");
const eventsPath = join(targetDir, "agui-bench-events.jsonl");
const OFFICIAL_RUNS = 5;
const APPLY_PREFIX_EVENTS = 10_000;

const loadBefore = loadavg();
if (!process.argv.includes("--skip-cargo")) {
  const cargo = spawnSync("cargo", ["bench", "-p", "walkie-agui", "--bench", "verify_assemble"], {
    cwd: repo,
    stdio: "inherit",
    env: { ...process.env, CARGO_TARGET_DIR: targetDir, AGUI_BENCH_EVENTS_OUT: eventsPath },
  });
  if (cargo.status !== 0) {
    console.error(`cargo bench failed (exit ${cargo.status})`);
    process.exit(1);
  }
}

function criterionMeanNs(benchName) {
  const path = join(targetDir, "criterion", "agui", benchName, "new", "estimates.json");
  try {
    return JSON.parse(readFileSync(path, "utf8")).mean.point_estimate;
  } catch {
    return undefined;
  }
}

const lines = readFileSync(eventsPath, "utf8").split("\n");
const events = lines.map((line) => JSON.parse(line));
const eventCount = events.length;

async function officialVerifyMs(input, parse = false) {
  const started = performance.now();
  const parsed = parse ? from(input).pipe(map((line) => JSON.parse(line))) : from(input);
  const seen = await lastValueFrom(parsed.pipe(transformChunks(), verifyEvents(), count()));
  const elapsed = performance.now() - started;
  if (seen !== input.length) throw new Error(`official verifier passed ${seen} of ${input.length} events`);
  return elapsed;
}

class BenchAgent extends AbstractAgent {
  run() {
    throw new Error("not used: events are fed directly");
  }
}

async function officialApplyMs(input) {
  const runInput = { threadId: "t", runId: "r", messages: [], tools: [], context: [], state: {}, forwardedProps: {} };
  const started = performance.now();
  const stream = from(input).pipe(transformChunks(), verifyEvents());
  await lastValueFrom(defaultApplyEvents(runInput, stream, new BenchAgent(), []).pipe(count()));
  return performance.now() - started;
}

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const perSecond = (eventsDone, ms) => (eventsDone / ms) * 1000;
const millions = (rate) => `${(rate / 1e6).toFixed(2)} M events/s`;

await officialVerifyMs(events); // warm-up: JIT
const verifyTimes = [];
for (let run = 0; run < OFFICIAL_RUNS; run += 1) verifyTimes.push(await officialVerifyMs(events));
const officialRate = perSecond(eventCount, median(verifyTimes));

await officialVerifyMs(lines, true);
const fromTextTimes = [];
for (let run = 0; run < OFFICIAL_RUNS; run += 1) fromTextTimes.push(await officialVerifyMs(lines, true));
const officialFromTextRate = perSecond(eventCount, median(fromTextTimes));

const prefix = events.slice(0, APPLY_PREFIX_EVENTS);
await officialApplyMs(prefix);
const applyRate = perSecond(prefix.length, await officialApplyMs(prefix));

const rows = [
  ["walkie-agui verify+assemble (consumer)", "verify_assemble_1m"],
  ["walkie-agui verify+assemble (strict)", "verify_assemble_strict_1m"],
  ["walkie-agui decode JSON+verify+assemble", "decode_verify_assemble_1m"],
].map(([label, bench]) => {
  const ns = criterionMeanNs(bench);
  return { label, rate: ns === undefined ? undefined : perSecond(eventCount, ns / 1e6) };
});

const agui = JSON.parse(readFileSync(join(here, "node_modules/@ag-ui/client/package.json"), "utf8"));
console.log(`\nAG-UI verifier comparison: ${eventCount} events, node ${process.version}, @ag-ui/client ${agui.version}`);
for (const { label, rate } of rows) {
  console.log(`  ${label.padEnd(44)} ${rate === undefined ? "(not measured)" : millions(rate)}`);
}
console.log(`  ${"official transformChunks+verifyEvents".padEnd(44)} ${millions(officialRate)} (median of ${OFFICIAL_RUNS})`);
console.log(`  ${"official JSON.parse+transformChunks+verify".padEnd(44)} ${millions(officialFromTextRate)} (median of ${OFFICIAL_RUNS})`);
console.log(`  ${`official +defaultApplyEvents (${APPLY_PREFIX_EVENTS} prefix)`.padEnd(44)} ${millions(applyRate)}`);
const consumer = rows[0].rate;
if (consumer !== undefined) {
  console.log(`  ratio in memory, walkie verify+assemble / official verify: ${(consumer / officialRate).toFixed(1)}x (goal >= 10x)`);
}
const fromText = rows[2].rate;
if (fromText !== undefined) {
  console.log(
    `  ratio from text, walkie decode+verify+assemble / official JSON.parse+verify: ${(fromText / officialFromTextRate).toFixed(1)}x (goal >= 3x)`,
  );
}
const loadAfter = loadavg();
const loads = (load) => load.map((value) => value.toFixed(2)).join(" ");
console.log(`  machine load (1, 5, 15 min): ${loads(loadBefore)} before, ${loads(loadAfter)} after`);
