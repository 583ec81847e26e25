/**
 * `node scripts/run-ts.mjs bench/startup-ab.bench.ts --baseline <bundle> [--runs <n>]`: the
 * start-up of two shim bundles side by side, in one run against one relay (wrangler dev, local
 * R2): this checkout's dist/airlock.mjs and a baseline (a build of another commit, e.g. main's),
 * interleaved run by run so that both meet the same load. Two cases: `airlock --version` (start
 * and exit, no network) and `airlock send` of a fresh 16 KiB file (the one-request path). Prints
 * a markdown table of wall-time medians, 25th percentiles and fastest runs (on a shared machine
 * the fastest is the least disturbed) and the mean CPU time (less swayed by other load), with
 * each bundle's size.
 */
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { copyFile, mkdir, mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { parseArgs } from "node:util";
import { processEnv } from "../test/shim/shims";
import { startRelay } from "../test/support/relay";
import { formatMs } from "./format";
import { SHIM, assertShimBuilt } from "./shim";

const USAGE =
  "usage: node scripts/run-ts.mjs bench/startup-ab.bench.ts --baseline <bundle> [--runs <n>]";

/** One run: wall time spawn to exit, and CPU time (user + system, GNU time's 10 ms ticks). */
interface Run {
  wallMs: number;
  cpuMs: number;
}

/** Runs node with `args` under /usr/bin/time; fails on a non-zero exit. */
function timed(args: string[], env: NodeJS.ProcessEnv, report: string): Promise<Run> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const time = ["-f", "%U %S", "-o", report, process.execPath, ...args];
    const child = spawn("/usr/bin/time", time, { env, stdio: ["ignore", "ignore", "pipe"] });
    let stderr = "";
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    child.once("error", reject);
    child.once("exit", (code) => {
      const wallMs = performance.now() - started;
      if (code !== 0) return reject(new Error(`${args.join(" ")} exited ${code}: ${stderr}`));
      readFile(report, "utf8").then((text) => {
        const [user, system] = text.trim().split("\n").pop()!.split(" ").map(Number);
        resolve({ wallMs, cpuMs: (user! + system!) * 1000 });
      }, reject);
    });
  });
}

/** The `p`-quantile (0.5: the median), nearest rank. */
function quantile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { baseline: { type: "string" }, runs: { type: "string" } },
  });
  if (!values.baseline) throw new Error(USAGE);
  const runs = Number(values.runs ?? "15");
  await assertShimBuilt();
  const work = await mkdtemp(join(tmpdir(), "airlock-startup-ab-"));
  const relay = await startRelay();
  try {
    // Both installed as the README installs the shim: a file named `airlock`.
    const bundles = { baseline: values.baseline, "this checkout": SHIM };
    const installed: Record<string, string> = {};
    for (const [name, path] of Object.entries(bundles)) {
      const bin = join(work, name.replace(/\W/g, "-"));
      await mkdir(bin);
      installed[name] = join(bin, "airlock");
      await copyFile(path, installed[name]);
    }
    const { token } = await relay.mintSession();
    const env = processEnv({ PATH: process.env.PATH, HOME: work, TMPDIR: work });
    const sendEnv = { ...env, AIRLOCK_URL: relay.url, AIRLOCK_TOKEN: token };
    const times: Record<string, { version: Run[]; send: Run[] }> = {};
    const report = join(work, "time.txt");
    for (const name of Object.keys(installed)) times[name] = { version: [], send: [] };
    // Warm the relay and the file cache before anything is timed.
    for (const shim of Object.values(installed)) {
      const file = join(work, `warm-${Math.random()}.bin`);
      await writeFile(file, randomBytes(16 * 1024));
      await timed([shim, "send", file, "--json"], sendEnv, report);
    }
    for (let i = 0; i < runs; i++) {
      // Alternate which bundle goes first, so neither always meets the other's leftovers.
      const order = i % 2 ? Object.keys(installed).reverse() : Object.keys(installed);
      for (const name of order) {
        const shim = installed[name]!;
        times[name]!.version.push(await timed([shim, "--version"], env, report));
        const file = join(work, `send-${i}-${name.replace(/\W/g, "-")}.bin`);
        await writeFile(file, randomBytes(16 * 1024));
        times[name]!.send.push(await timed([shim, "send", file, "--json"], sendEnv, report));
      }
    }
    const lines = [
      `| bundle | size | --version median | p25 | fastest | CPU mean | send 16 KiB median | p25 | fastest | CPU mean |`,
      `| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |`,
    ];
    for (const [name, path] of Object.entries(bundles)) {
      const { version, send } = times[name]!;
      const kib = ((await stat(path)).size / 1024).toFixed(1);
      const cells = (runs: Run[]) => {
        const wall = runs.map((run) => run.wallMs);
        const cpu = runs.reduce((sum, run) => sum + run.cpuMs, 0) / runs.length;
        return [...[0.5, 0.25, 0].map((p) => formatMs(quantile(wall, p))), `${cpu.toFixed(1)} ms`];
      };
      lines.push(`| ${name} | ${kib} KiB | ${[...cells(version), ...cells(send)].join(" | ")} |`);
    }
    process.stdout.write(`${lines.join("\n")}\n\n${runs} runs each, interleaved.\n`);
  } finally {
    await relay.stop();
    await rm(work, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
