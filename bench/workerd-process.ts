// The relay's runtime processes under `wrangler dev`, read from /proc: which pids are workerd,
// their resident memory and peak, and the CPU time they used.
import { execFileSync } from "node:child_process";
import { readFile, writeFile } from "node:fs/promises";

/** The workerd processes in wrangler's process group (the ones running the Worker). */
export function workerdPids(processGroup: number): number[] {
  const out = execFileSync("ps", ["-o", "pid=,comm=", "-g", String(processGroup)], {
    encoding: "utf8",
  });
  return out
    .split("\n")
    .map((line) => line.trim().split(/\s+/))
    .filter(([, comm]) => comm === "workerd")
    .map(([pid]) => Number(pid));
}

/** A memory field of /proc/<pid>/status, in KiB. */
export async function statusKiB(pid: number, field: "VmRSS" | "VmHWM"): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, "utf8");
  return Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1] ?? 0);
}

/** Resets a process's peak RSS (VmHWM) to its current RSS. */
export async function resetPeak(pid: number): Promise<void> {
  await writeFile(`/proc/${pid}/clear_refs`, "5");
}

/** User + system CPU time a process has used so far, in milliseconds (clock ticks of 10 ms). */
export async function cpuMs(pid: number): Promise<number> {
  const stat = await readFile(`/proc/${pid}/stat`, "utf8");
  // Fields after the command name (which may hold spaces) start at the last ")".
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  const ticks = Number(fields[11]) + Number(fields[12]); // utime, stime (fields 14, 15)
  return ticks * 10;
}
