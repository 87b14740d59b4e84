// The CPU floor of the peer benchmark: what moving the same audio both ways costs with nothing
// else, `pacat` playing the voice to the speaker sink while `parec` records the microphone sink,
// both at 48 kHz mono with a 20 ms buffer (a call's), for SECONDS. Prints one JSON object.
//
//   node floor.mjs VOICE.wav SECONDS

import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { cpuMsByPid, cpuMsByProcessSince, pssKib } from "./proc.mjs";

const [voicePath, secondsText] = process.argv.slice(2);
const seconds = Number(secondsText);
if (!voicePath || !(seconds > 0)) {
  console.error("usage: node floor.mjs VOICE.wav SECONDS");
  process.exit(2);
}
// The WAV's samples: voice.py writes a plain 44-byte header.
const voice = readFileSync(voicePath).subarray(44);
const format = ["--format=s16le", "--rate=48000", "--channels=1", "--raw", "--latency-msec=20"];
const player = spawn("pacat", ["--playback", "--device=spk", ...format], { stdio: ["pipe", "ignore", "inherit"] });
const recorder = spawn("parec", ["--device=mic.monitor", ...format], { stdio: ["ignore", "ignore", "inherit"] });
// The voice over and over, as fast as pacat takes it (it paces itself to the sink).
let stopped = false;
const feed = () => {
  while (!stopped && player.stdin.write(voice));
};
player.stdin.on("drain", feed);
player.stdin.on("error", () => {});
feed();

const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const pids = [player.pid, recorder.pid];
await pause(1000);
const before = cpuMsByPid(pids);
const startedMs = performance.now();
await pause(seconds * 1000);
const usedMs = Object.values(cpuMsByProcessSince(before, pids)).reduce((sum, ms) => sum + ms, 0);
const elapsedMs = performance.now() - startedMs;
const pss = pssKib(pids);
stopped = true;
player.kill();
recorder.kill();
console.log(
  JSON.stringify({ floor: "pacat+parec", seconds: elapsedMs / 1000, cpuMs: usedMs, cpuMsPerS: usedMs / (elapsedMs / 1000), pssKib: pss }),
);
