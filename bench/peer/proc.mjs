// What a process tree costs, read from /proc the same way for every client of the peer
// benchmark (benches/app.rs reads Walkie's the same way in Rust): CPU time as the kernel
// counts it (utime + stime of each process) and proportional set size (smaps_rollup's Pss, so
// a library shared by the tree counts once).

import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";

const ticksPerSecond = Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim());

/** `/proc/PID/stat`'s fields after the command name (field 3 onward), or null once it exited. */
function statFields(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  } catch {
    return null;
  }
}

/** `root` and every process descended from it, as they are now. */
export function treeOf(root) {
  const children = new Map();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const fields = statFields(entry);
    if (!fields) continue;
    const parent = Number(fields[1]);
    children.set(parent, [...(children.get(parent) ?? []), Number(entry)]);
  }
  const tree = [];
  const waiting = [root];
  while (waiting.length > 0) {
    const pid = waiting.pop();
    tree.push(pid);
    waiting.push(...(children.get(pid) ?? []));
  }
  return tree;
}

/** CPU time used so far by each of `pids` that still runs, in milliseconds. */
export function cpuMsByPid(pids) {
  const used = new Map();
  for (const pid of pids) {
    const fields = statFields(pid);
    // utime and stime are fields 14 and 15 of stat: 11 and 12 after the name.
    if (fields) used.set(pid, ((Number(fields[11]) + Number(fields[12])) * 1000) / ticksPerSecond);
  }
  return used;
}

/**
 * CPU time `pids` used since `before` (a `cpuMsByPid`), in milliseconds, summed by process name
 * (`/proc/PID/comm`) so a report can say which part of the tree used it. A process started
 * since counts whole; one that ended since is missed (its time is not readable any more).
 */
export function cpuMsByProcessSince(before, pids) {
  const byName = {};
  for (const [pid, ms] of cpuMsByPid(pids)) {
    let name;
    try {
      name = readFileSync(`/proc/${pid}/comm`, "utf8").trim();
    } catch {
      name = `pid ${pid}`;
    }
    byName[name] = (byName[name] ?? 0) + ms - (before.get(pid) ?? 0);
  }
  return byName;
}

/** Proportional set size of `pids` together, in KiB. */
export function pssKib(pids) {
  let kib = 0;
  for (const pid of pids) {
    try {
      const rollup = readFileSync(`/proc/${pid}/smaps_rollup`, "utf8");
      kib += Number(/^Pss:\s+(\d+) kB/m.exec(rollup)?.[1] ?? 0);
    } catch {
      // Exited since the tree was read.
    }
  }
  return kib;
}
