// Prints the peer benchmark's table from the clients' results (drive.mjs's JSON).
//
//   node report.mjs RESULT.json... LOAD_BEFORE LOAD_AFTER

import { readFileSync } from "node:fs";

const files = process.argv.slice(2).filter((arg) => arg.endsWith(".json"));
const [loadBefore, loadAfter] = process.argv.slice(2).filter((arg) => !arg.endsWith(".json"));

/** The `fraction` quantile of `values` (nearest rank). */
function quantile(values, fraction) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(fraction * sorted.length) - 1)];
}

const rows = files.map((file) => JSON.parse(readFileSync(file, "utf8")));
console.log(`load average before ${loadBefore}, after ${loadAfter} (2 shared cores)`);
console.log(
  "| client | turns heard | commit → first audible sample at the sink, p50 / p95 (min–max) | of it the provider's (commit in → first packet out), p50 | the client's, p50 / p95 |",
);
console.log("|---|---|---|---|---|");
for (const row of rows) {
  const heard = row.commitToAudibleMs.filter((latency) => latency !== null);
  const provider = row.replySentUnixMs.map((sent, index) => sent - row.commitReceivedUnixMs[index]);
  const client = row.commitToAudibleMs
    .map((latency, index) => (latency === null ? null : latency - provider[index]))
    .filter((latency) => latency !== null);
  const ms = (value) => `${value.toFixed(1)} ms`;
  console.log(
    `| ${row.client} ${row.version} | ${heard.length}/${row.turns} | ${ms(quantile(heard, 0.5))} / ${ms(quantile(heard, 0.95))} ` +
      `(${ms(Math.min(...heard))}–${ms(Math.max(...heard))}) | ${ms(quantile(provider, 0.5))} | ` +
      `${ms(quantile(client, 0.5))} / ${ms(quantile(client, 0.95))} |`,
  );
}
