import { spawn } from "node:child_process";
import { readFile, rm } from "node:fs/promises";
import { join } from "node:path";
import { performance } from "node:perf_hooks";

/** One measured process: wall time from spawn to exit, and its peak RSS per GNU time. */
export interface Measured {
  wallMs: number;
  /** Peak resident set size in MiB (GNU time's %M, the largest of the process and its children). */
  rssMiB: number;
  stdout: string;
  stderr: string;
}

export interface RunOptions {
  env?: NodeJS.ProcessEnv;
  cwd?: string;
}

/** Runs commands under `/usr/bin/time -f %M`, keeping time's report out of the command's stderr. */
export class Meter {
  private count = 0;

  constructor(private readonly dir: string) {}

  async run(command: string, args: string[], options: RunOptions = {}): Promise<Measured> {
    const report = join(this.dir, `time-${++this.count}.txt`);
    const started = performance.now();
    const { code, stdout, stderr } = await exec(
      "/usr/bin/time",
      ["-f", "%M", "-o", report, command, ...args],
      options,
    );
    const wallMs = performance.now() - started;
    const rssKiB = Number(
      (await readFile(report, "utf8").catch(() => "")).trim().split("\n").pop(),
    );
    await rm(report, { force: true });
    if (code !== 0) {
      const shown = [command, ...args].map((a) => (a.length > 80 ? `${a.slice(0, 80)}…` : a));
      throw new Error(`${shown.join(" ")} exited ${code}: ${stderr.trim() || stdout.trim()}`);
    }
    return { wallMs, rssMiB: rssKiB / 1024, stdout, stderr };
  }
}

interface Exited {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Spawns a process and collects its (small) output. */
export function exec(command: string, args: string[], options: RunOptions = {}): Promise<Exited> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      env: options.env ?? process.env,
      cwd: options.cwd,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    child.once("error", reject);
    child.once("close", (code) => resolve({ code, stdout, stderr }));
  });
}

/** The median of some numbers (the mean of the middle two for an even count). */
export function median(values: number[]): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** The run whose wall time is the median (the upper middle for an even count). */
export function medianRun<T extends { wallMs: number }>(runs: T[]): T {
  const sorted = [...runs].sort((a, b) => a.wallMs - b.wallMs);
  const run = sorted[sorted.length >> 1];
  if (!run) throw new Error("no runs to take the median of");
  return run;
}
