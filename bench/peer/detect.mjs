// The peer benchmark's detector: records the virtual speaker (a PulseAudio sink's monitor)
// and writes, one per line, the time (Unix ms) each 5 ms window louder than -50 dBFS began and
// the window's number in the recording (consecutive numbers are adjacent windows, so a gap in
// them is sound that stopped), until it is ended (SIGTERM). Every client of a run is timed by
// this one process.
//
//   node detect.mjs OUT [SINK]      (SINK defaults to spk)

import { spawn } from "node:child_process";
import { createWriteStream } from "node:fs";

const [out, sink = "spk"] = process.argv.slice(2);
if (!out) {
  console.error("usage: node detect.mjs OUT [SINK]");
  process.exit(2);
}
const rateHz = 48000;
const windowSamples = rateHz / 200;
const threshold = 32768 * 10 ** (-50 / 20);
const written = createWriteStream(out);
let pending = Buffer.alloc(0);
let windowsBefore = 0;
const parec = spawn(
  "parec",
  ["-d", `${sink}.monitor`, "--raw", "--format=s16le", `--rate=${rateHz}`, "--channels=1", "--latency-msec=10"],
  { stdio: ["ignore", "pipe", "inherit"] },
);
parec.stdout.on("data", (chunk) => {
  // The newest sample was captured about now; each earlier one 1/48 ms before it.
  const arrivedUnixMs = performance.timeOrigin + performance.now();
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
      const beganUnixMs = arrivedUnixMs - (samplesAfter * 1000) / rateHz;
      written.write(`${beganUnixMs.toFixed(2)} ${windowsBefore + window}\n`);
    }
  }
  pending = pending.subarray(windows * windowSamples * 2);
  windowsBefore += windows;
});
// Ready once the recorder runs: run.sh waits for this line before any client starts.
parec.stdout.once("data", () => console.error("detect.mjs: recording"));
process.on("SIGTERM", () => {
  parec.kill();
  written.end(() => process.exit(0));
});
