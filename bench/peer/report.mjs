// Times every client's turns and prints the peer benchmark's table: for each commit the
// provider received during a client's run (its trace), the first loud window the detector
// heard after it (detect.mjs) gives commit → first audible sample; the provider's trace also
// says when the reply's first packet left, so the client's part is told from the provider's.
//
//   node report.mjs --trace DIR --loud FILE --load-before L --load-after L RESULT.json...
//
// Exits 1, loudly, when a client did not complete all its turns or a reply went unheard.

import { readFileSync } from "node:fs";
import { join } from "node:path";

const argv = process.argv.slice(2);
const option = (name) => argv[argv.indexOf(`--${name}`) + 1];
const results = argv.filter((arg) => arg.endsWith(".json")).map((file) => JSON.parse(readFileSync(file, "utf8")));
const lines = (file) => readFileSync(file, "utf8").split("\n").filter(Boolean);
const trace = (file) => lines(join(option("trace"), file)).map((line) => JSON.parse(line));
const loud = lines(option("loud")).map(Number);
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
  const heard = received.map((at, index) => {
    const until = received[index + 1] ?? result.endedUnixMs;
    const first = loud.find((time) => time >= at && time < until);
    return first === undefined ? null : first - at;
  });
  const unheard = heard.filter((latency) => latency === null).length;
  if (unheard > 0) {
    console.error(`report.mjs: ${unheard} of ${result.client}'s replies were never heard at the sink`);
    failed = true;
  }
  const latencies = heard.filter((latency) => latency !== null);
  const provider = sent.map((at, index) => at - received[index]);
  const client = heard.map((latency, index) => latency - provider[index]).filter((latency) => !Number.isNaN(latency));
  return { result, latencies, provider, client };
});

console.log(`load average before ${option("load-before")}, after ${option("load-after")}`);
console.log(
  "| client | turns heard | commit → first audible sample at the sink, p50 / p95 (min–max) | of it the provider's (commit in → first packet out), p50 | the client's, p50 / p95 |",
);
console.log("|---|---|---|---|---|");
for (const { result, latencies, provider, client } of rows) {
  console.log(
    `| ${result.client} ${result.version} | ${latencies.length}/${result.turns} | ${ms(quantile(latencies, 0.5))} / ` +
      `${ms(quantile(latencies, 0.95))} (${ms(Math.min(...latencies))}–${ms(Math.max(...latencies))}) | ` +
      `${ms(quantile(provider, 0.5))} | ${ms(quantile(client, 0.5))} / ${ms(quantile(client, 0.95))} |`,
  );
}
if (rows.length === 2) {
  const [first, second] = rows.map((row) => quantile(row.client, 0.5));
  console.log(
    `\nthe client's part, p50: ${rows[1].result.client} = ${(second / first).toFixed(2)} × ${rows[0].result.client}`,
  );
}
process.exit(failed ? 1 : 0);
