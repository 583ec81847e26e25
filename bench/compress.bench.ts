/**
 * `npm run build:shim && node scripts/run-ts.mjs bench/compress.bench.ts [options]`: compression
 * on every core (issue 29 §2). Generated text (log lines, compressible as logs and CSV are) sent
 * by `airlock send`, which stores it as gzip members compressed on every core (libuv's pool),
 * against one `curl -T` of the raw bytes to the signed PUT of the same relay; the same send
 * with AIRLOCK_GZIP_THREADS=1 (one member at a time) and with AIRLOCK_GZIP_WORKERS=1 (worker
 * threads instead of libuv's pool); and the Python shim's compression pass
 * (gzip_to_temp) with one thread against its pool.
 *
 * `--size 1024` (MiB), `--runs 1`, `--backend s3|r2` (default s3: the strict S3 server on
 * loopback). Relay and store start afresh before each upload. Prints a markdown table (medians;
 * ratios against `curl -T` of the same run) and the targets: send ≤ 0.5× curl -T, peak RSS ≤ 96 MiB.
 */
import { execFileSync } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { fileURLToPath } from "node:url";
import { curlPut } from "./baselines";
import { createFile, type BenchFile } from "./corpus";
import { formatMs, formatRatio, formatSize, MiB } from "./format";
import { LargeRelay, type Backend } from "./large-relay";
import { median, Meter, type Measured } from "./measure";
import type { Session } from "./relay-api";
import { SHIM, assertShimBuilt, shimEnv, type SendJson } from "./shim";

const PYTHON_SHIM = fileURLToPath(new URL("../agent-shim/airlock.py", import.meta.url));
const SEND_TARGET = 0.5;
const RSS_TARGET_MIB = 96;

interface Series {
  tool: string;
  wallMs: number[];
  rssMiB: number[];
  storedBytes: number[];
}

function options() {
  const { values } = parseArgs({
    options: {
      size: { type: "string", default: "1024" },
      runs: { type: "string", default: "1" },
      backend: { type: "string", default: "s3" },
    },
  });
  const sizeMiB = Number(values.size);
  const runs = Number(values.runs);
  const backend = values.backend as Backend;
  const usage = "usage: compress.bench.ts [--size 1024] [--runs 1] [--backend s3|r2]";
  if (!(Number.isInteger(sizeMiB) && sizeMiB > 0 && Number.isInteger(runs) && runs > 0)) {
    throw new Error(usage);
  }
  if (backend !== "s3" && backend !== "r2") throw new Error(usage);
  return { sizeMiB, runs, backend };
}

/** `airlock send --json` of fresh text: it must go up gzipped, every member of it. */
async function send(
  meter: Meter,
  session: Session,
  file: BenchFile,
  tmpDir: string,
  extra: Record<string, string>,
): Promise<Measured & { storedBytes: number }> {
  const env = shimEnv(session, tmpDir, extra);
  const run = await meter.run(process.execPath, [SHIM, "send", file.path, "--json"], { env });
  const result = JSON.parse(run.stdout.trim().split("\n").pop()!) as SendJson;
  if (result.deduped || result.size !== file.size || !(result.uploadedBytes < file.size / 2)) {
    throw new Error(`not a fresh gzip upload: ${JSON.stringify(result)}`);
  }
  return { ...run, storedBytes: result.uploadedBytes };
}

/** The Python shim's gzip pass over `path` with `threads` (0: its default pool): seconds. */
function pythonGzip(path: string, threads: number): number {
  const script = `
import importlib.util, sys, threading, time
spec = importlib.util.spec_from_file_location("airlock", sys.argv[1])
a = importlib.util.module_from_spec(spec)
spec.loader.exec_module(a)
threads = int(sys.argv[3]) or None
started = time.perf_counter()
stored = a.gzip_to_temp(sys.argv[2], 1, None, threading.Event(), threads)
took = time.perf_counter() - started
stored.dispose()
print(took)
`;
  const out = execFileSync("python3", ["-c", script, PYTHON_SHIM, path, String(threads)], {
    encoding: "utf8",
  });
  return Number(out.trim()) * 1000;
}

async function main(): Promise<void> {
  const opts = options();
  await assertShimBuilt();
  const log = (message: string) => process.stderr.write(`[compress] ${message}\n`);
  const work = await mkdtemp(join(tmpdir(), "airlock-compress-bench-"));
  const meter = new Meter(work);
  const relay = new LargeRelay(opts.backend);
  const load = { before: loadavg()[0]!, after: NaN };
  const series: Series[] = [
    { tool: "curl -T (raw bytes, one signed PUT)", wallMs: [], rssMiB: [], storedBytes: [] },
    { tool: "airlock send (members on every core)", wallMs: [], rssMiB: [], storedBytes: [] },
    { tool: "airlock send (AIRLOCK_GZIP_THREADS=1)", wallMs: [], rssMiB: [], storedBytes: [] },
    { tool: "airlock send (AIRLOCK_GZIP_WORKERS=1)", wallMs: [], rssMiB: [], storedBytes: [] },
  ];
  const python: { one: number[]; pool: number[] } = { one: [], pool: [] };
  const size = opts.sizeMiB * MiB;
  try {
    log(`writing ${formatSize(size)} of text`);
    const file = await createFile(work, "text", size);
    for (let run = 1; run <= opts.runs; run++) {
      const measure = async (index: number, what: (s: Session) => Promise<Measured>) => {
        log(`run ${run}/${opts.runs}: ${series[index]!.tool}`);
        await file.fresh();
        const result = await what(await relay.fresh());
        series[index]!.wallMs.push(result.wallMs);
        series[index]!.rssMiB.push(result.rssMiB);
        const stored = (result as { storedBytes?: number }).storedBytes ?? size;
        series[index]!.storedBytes.push(stored);
        log(`  ${formatMs(result.wallMs)}, peak RSS ${result.rssMiB.toFixed(0)} MiB`);
      };
      await measure(0, (s) => curlPut(meter, s, file.path, "text/plain", log));
      await measure(1, (s) => send(meter, s, file, work, {}));
      await measure(2, (s) => send(meter, s, file, work, { AIRLOCK_GZIP_THREADS: "1" }));
      await measure(3, (s) => send(meter, s, file, work, { AIRLOCK_GZIP_WORKERS: "1" }));
      await relay.stop();
      log(`run ${run}/${opts.runs}: Python gzip pass, one thread then the pool`);
      python.one.push(pythonGzip(file.path, 1));
      python.pool.push(pythonGzip(file.path, 0));
      log(`  ${formatMs(python.one.at(-1)!)} / ${formatMs(python.pool.at(-1)!)}`);
    }
  } finally {
    await relay.stop();
    await rm(work, { recursive: true, force: true });
    load.after = loadavg()[0]!;
  }
  const floor = median(series[0]!.wallMs);
  const rows = series.map((s) => {
    const wall = median(s.wallMs);
    const stored = `${formatSize(median(s.storedBytes))}`;
    const cells = [s.tool, s.wallMs.map((ms) => (ms / 1000).toFixed(2)).join(", "), formatMs(wall)];
    cells.push(formatRatio(wall / floor), stored, Math.max(...s.rssMiB).toFixed(0));
    return `| ${cells.join(" | ")} |`;
  });
  const sendRatio = median(series[1]!.wallMs) / floor;
  const sendRss = Math.max(...series[1]!.rssMiB);
  const [one, pool] = [median(python.one), median(python.pool)];
  console.log(
    [
      `Compression on every core: ${formatSize(size)} of text, ${opts.backend} backend; ${new Date().toISOString()}; ${cpus().length} cores; ${opts.runs} run(s); load average ${load.before.toFixed(1)} before, ${load.after.toFixed(1)} after`,
      "",
      "| tool | runs (s) | median | × curl -T | bytes sent | peak RSS (MiB) |",
      "| --- | --- | --- | --- | --- | --- |",
      ...rows,
      "",
      `Python shim, gzip pass alone (gzip_to_temp, level 1): one thread ${formatMs(one)}, pool ${formatMs(pool)} (${formatRatio(pool / one)} of one thread)`,
      "",
      `- send on every core: ${formatRatio(sendRatio)} of curl -T (target ≤ ${SEND_TARGET}×): ${sendRatio <= SEND_TARGET ? "met" : "missed"}`,
      `- its peak RSS: ${sendRss.toFixed(0)} MiB (target ≤ ${RSS_TARGET_MIB} MiB): ${sendRss <= RSS_TARGET_MIB ? "met" : "missed"}`,
    ].join("\n"),
  );
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? (error.stack ?? error.message) : error);
  process.exitCode = 1;
});
