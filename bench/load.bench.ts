/**
 * `npm run bench:load`: the relay under load on loopback (wrangler dev, local D1 and R2).
 *
 * 1. 100 sandboxes, each with its own session token, cache dir and temp dir, each running one
 *    `airlock send <20 small files> --json`, `LOAD_CONCURRENCY` (default all 100) at once.
 * 2. 10 sandboxes each sending one `LOAD_BIG_MIB` MiB file (256 by default), all at once.
 *
 * Reports files/s, p50/p99 send times, and the relay's peak RSS (wrangler + workerd: the sum over
 * its process group, sampled every 250 ms). Every send must succeed, every reported SHA-256 and
 * size must match what was written, and what the relay serves back (`GET /v1/files/:id/content`)
 * must hash the same for one small file per sandbox and every large one; otherwise it exits 1.
 *
 * The relay runs from a copy of the checkout taken at the start (bench/large-snapshot-relay.ts):
 * `wrangler dev` reloads its Worker whenever a file under its src/ is written and answers `503`
 * to every request in flight then, so a run from the working checkout would meet every edit made
 * there meanwhile. The report counts those writes (seconds with any) all the same.
 */
import { createHash, randomBytes, randomInt } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { startSnapshotRelay } from "./large-snapshot-relay";
import { countReloads, sampleRss } from "./load/monitors";
import { errors, fail, fmt, percentile } from "./load/report";
import {
  checkResults,
  newSandbox,
  pool,
  send,
  writeRandom,
  type Sandbox,
  type Sent,
  MiB,
} from "./load/sandbox";
import { checkServed, rereadCount } from "./load/served";
import { Meter } from "./measure";
import { assertShimBuilt, installedShim } from "./shim";

const SANDBOXES = 100;
const FILES_EACH = 20;
const SMALL_MIN = 1024;
const SMALL_MAX = 256 * 1024;
const BIG_SANDBOXES = 10;
const BIG_MIB = positive("LOAD_BIG_MIB", 256);
const CONCURRENCY = positive("LOAD_CONCURRENCY", SANDBOXES);

function positive(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value <= 0) throw new Error(`${name} must be a positive integer`);
  return value;
}

await assertShimBuilt();
const loadAtStart = loadavg()[0]!;
const root = await mkdtemp(join(tmpdir(), "airlock-load-bench-"));
// The shim as built now, installed as the README installs it: a rebuild in the checkout during
// the run does not change it.
const shim = await installedShim(root);
const relay = await startSnapshotRelay();
const rows: string[] = [];
try {
  // Warm the relay (the Worker compiles and D1/R2 open on the first requests).
  const warm = await newSandbox(relay, root, "warm");
  const warmPath = join(warm.dir, "warm.bin");
  await writeFile(warmPath, randomBytes(4096));
  await send(shim, warm, [warmPath]);

  // Phase 1: small files.
  const small: { sandbox: Sandbox; files: Sent[] }[] = [];
  for (let s = 0; s < SANDBOXES; s++) {
    const sandbox = await newSandbox(relay, root, `small-${s}`);
    const files: Sent[] = [];
    for (let f = 0; f < FILES_EACH; f++) {
      const bytes = randomBytes(randomInt(SMALL_MIN, SMALL_MAX + 1));
      const path = join(sandbox.dir, `report-${f}.bin`);
      await writeFile(path, bytes);
      files.push({ sandbox, path, size: bytes.length, sha256: sha256(bytes) });
    }
    small.push({ sandbox, files });
  }
  const smallBytes = small.flatMap((s) => s.files).reduce((sum, f) => sum + f.size, 0);
  let rss = sampleRss(relay);
  let reloads = countReloads();
  const perFile: number[] = [];
  const perProcess: number[] = [];
  const smallSamples: { file: Sent; fileId: string }[] = [];
  const smallStarted = performance.now();
  await pool(small, CONCURRENCY, async ({ sandbox, files }) => {
    const run = await send(
      shim,
      sandbox,
      files.map((f) => f.path),
    );
    perProcess.push(run.wallMs);
    run.lineAtMs.forEach((at, i) => perFile.push(at - (i === 0 ? 0 : run.lineAtMs[i - 1]!)));
    const ids = checkResults(files, run, `small sandbox ${sandbox.dir}`);
    const pick = files[randomInt(files.length)]!;
    const fileId = ids.get(pick.path);
    if (fileId) smallSamples.push({ file: pick, fileId });
  });
  const smallWallMs = performance.now() - smallStarted;
  const smallRss = rss.stop();
  const smallReloads = reloads.stop();
  const smallExact = await checkServed(smallSamples);
  const smallFiles = SANDBOXES * FILES_EACH;
  rows.push(
    `| ${SANDBOXES} × ${FILES_EACH} small files (1–256 KiB, ${(smallBytes / MiB).toFixed(0)} MiB in all), ${Math.min(CONCURRENCY, SANDBOXES)} processes at once | ` +
      `${fmt(smallWallMs)} | ${(smallFiles / (smallWallMs / 1000)).toFixed(1)} files/s | ` +
      `per file ${fmt(percentile(perFile, 50))} / ${fmt(percentile(perFile, 99))}; per process (20 files) ${fmt(percentile(perProcess, 50))} / ${fmt(percentile(perProcess, 99))} | ` +
      `${smallRss.peakMiB.toFixed(0)} (workerd ${smallRss.workerdMiB.toFixed(0)}) | ${smallExact}/${smallSamples.length} of ${SANDBOXES} sampled | ${smallReloads} |`,
  );
  console.error(rows.at(-1));

  // Phase 2: large files, all at once.
  const big: Sent[] = [];
  for (let s = 0; s < BIG_SANDBOXES; s++) {
    const sandbox = await newSandbox(relay, root, `big-${s}`);
    const path = join(sandbox.dir, `dataset-${s}.bin`);
    big.push({
      sandbox,
      path,
      size: BIG_MIB * MiB,
      sha256: await writeRandom(path, BIG_MIB * MiB),
    });
  }
  const meter = new Meter(root);
  rss = sampleRss(relay);
  reloads = countReloads();
  const bigTimes: number[] = [];
  const shimRssMiB: number[] = [];
  const bigSamples: { file: Sent; fileId: string }[] = [];
  const bigStarted = performance.now();
  await Promise.all(
    big.map(async (file) => {
      const label = `big sandbox ${file.sandbox.dir}`;
      try {
        const run = await meter.run(process.execPath, [shim, "send", file.path, "--json"], {
          env: file.sandbox.env,
        });
        bigTimes.push(run.wallMs);
        shimRssMiB.push(run.rssMiB);
        const lines = run.stdout.split("\n").filter((line) => line.trim());
        const lineAtMs = lines.map(() => run.wallMs);
        const ids = checkResults([file], { ...run, code: 0, lines, lineAtMs }, label);
        const fileId = ids.get(file.path);
        if (fileId) bigSamples.push({ file, fileId });
      } catch (error) {
        fail(`${label}: ${String(error).slice(0, 300)}`);
      }
    }),
  );
  const bigWallMs = performance.now() - bigStarted;
  const bigRss = rss.stop();
  const bigReloads = reloads.stop();
  const bigExact = await checkServed(bigSamples);
  rows.push(
    `| ${BIG_SANDBOXES} × ${BIG_MIB} MiB (random), all at once | ${fmt(bigWallMs)} | ` +
      `${(BIG_SANDBOXES / (bigWallMs / 1000)).toFixed(2)} files/s, ${((BIG_SANDBOXES * BIG_MIB) / (bigWallMs / 1000)).toFixed(0)} MiB/s | ` +
      `${fmt(percentile(bigTimes, 50))} / ${fmt(percentile(bigTimes, 99))} | ` +
      `${bigRss.peakMiB.toFixed(0)} (workerd ${bigRss.workerdMiB.toFixed(0)}); each shim ≤ ${Math.max(...shimRssMiB).toFixed(0)} | ${bigExact}/${bigSamples.length} of ${BIG_SANDBOXES} | ${bigReloads} |`,
  );

  console.log(
    [
      `Load on loopback (wrangler dev from a snapshot of the checkout, local D1/R2), ${new Date().toISOString()}, load average ${loadAtStart.toFixed(1)} at the start, ${loadavg()[0]!.toFixed(1)} at the end`,
      "",
      "| case | wall | throughput | send time p50 / p99 | relay peak RSS MiB (group sum; largest workerd) | served bytes exact (SHA-256) | writes to the checkout's src/ (would-be reloads) |",
      "| --- | --- | --- | --- | --- | --- | --- |",
      ...rows,
      "",
      `errors: ${errors.length}; served-byte reads cut short and read again: ${rereadCount()}`,
    ].join("\n"),
  );
  if (errors.length > 0) {
    // What wrangler said about failed requests (a reload, an overloaded runtime) explains them.
    const said = relay
      .output()
      .split("\n")
      .filter((line) => /\b(503|restart|reloading|error)\b/i.test(line))
      .slice(-10);
    if (said.length > 0) console.error(`relay output:\n${said.join("\n")}`);
    process.exitCode = 1;
  }
} catch (error) {
  console.error(error);
  process.exitCode = 1;
} finally {
  await relay.stop();
  await rm(root, { recursive: true, force: true });
}

function sha256(bytes: Uint8Array): string {
  return createHash("sha256").update(bytes).digest("hex");
}
