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
import { spawn, execFileSync } from "node:child_process";
import { createHash, randomBytes, randomInt } from "node:crypto";
import { createWriteStream, watch } from "node:fs";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { loadavg, tmpdir } from "node:os";
import { get as httpGet } from "node:http";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { performance } from "node:perf_hooks";
import type { RunningRelay } from "../test/support/relay";
import { startSnapshotRelay } from "./large-snapshot-relay";
import { Meter } from "./measure";
import type { Session } from "./relay-api";
import { assertShimBuilt, installedShim, shimEnv, type SendJson } from "./shim";

const SANDBOXES = 100;
const FILES_EACH = 20;
const SMALL_MIN = 1024;
const SMALL_MAX = 256 * 1024;
const BIG_SANDBOXES = 10;
const BIG_MIB = positive("LOAD_BIG_MIB", 256);
const CONCURRENCY = positive("LOAD_CONCURRENCY", SANDBOXES);
/** A send that takes longer than this is killed and counted as an error. */
const SEND_TIMEOUT_MS = 15 * 60_000;
const MiB = 1024 * 1024;

function positive(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value <= 0) throw new Error(`${name} must be a positive integer`);
  return value;
}

interface Sandbox {
  session: Session;
  dir: string;
  env: NodeJS.ProcessEnv;
}

interface Sent {
  sandbox: Sandbox;
  path: string;
  size: number;
  sha256: string;
}

const errors: string[] = [];
const fail = (message: string) => {
  errors.push(message);
  if (errors.length <= 20) console.error(`error: ${message}`);
};

/** Percentile by nearest rank. */
function percentile(values: number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

/** Samples the RSS of every process in the relay's group; `peak()` is the largest sum seen. */
function sampleRss(relay: RunningRelay): { stop(): { peakMiB: number; workerdMiB: number } } {
  let peakKiB = 0;
  let workerdKiB = 0;
  const sample = () => {
    let out = "";
    try {
      out = execFileSync("ps", ["-o", "rss=,comm=", "-g", String(relay.processGroup)], {
        encoding: "utf8",
      });
    } catch {
      return; // the group may be between processes; the next sample counts
    }
    let sum = 0;
    for (const line of out.split("\n")) {
      const [rss, comm] = line.trim().split(/\s+/);
      const kib = Number(rss);
      if (!Number.isFinite(kib)) continue;
      sum += kib;
      if (comm === "workerd") workerdKiB = Math.max(workerdKiB, kib);
    }
    peakKiB = Math.max(peakKiB, sum);
  };
  sample();
  const timer = setInterval(sample, 250);
  return {
    stop() {
      clearInterval(timer);
      sample();
      return { peakMiB: peakKiB / 1024, workerdMiB: workerdKiB / 1024 };
    },
  };
}

/** The checkout's sources, which a `wrangler dev` run from the checkout itself watches. */
const WATCHED = fileURLToPath(new URL("../src", import.meta.url));

/**
 * Counts the seconds in which something under the checkout's src/ was written: each would have
 * reloaded a relay run from the checkout (and answered `503` to its requests in flight).
 */
function countReloads(): { stop(): number } {
  const seconds = new Set<number>();
  const watcher = watch(WATCHED, { recursive: true }, () =>
    seconds.add(Math.floor(Date.now() / 1000)),
  );
  return {
    stop() {
      watcher.close();
      return seconds.size;
    },
  };
}

async function newSandbox(relay: RunningRelay, root: string, name: string): Promise<Sandbox> {
  const { token } = await relay.mintSession();
  const session = { url: relay.url, token };
  const dir = join(root, name);
  await mkdir(join(dir, "tmp"), { recursive: true });
  await mkdir(join(dir, "cache"), { recursive: true });
  const env = shimEnv(session, join(dir, "tmp"), { XDG_CACHE_HOME: join(dir, "cache") });
  return { session, dir, env };
}

interface Run {
  code: number | null;
  wallMs: number;
  /** Milliseconds from spawn to each stdout line (the shim prints one JSON line per file). */
  lineAtMs: number[];
  lines: string[];
  stderr: string;
}

/** Runs `node dist/airlock.mjs send <paths> --json`, timing each JSON line as it arrives. */
function send(sandbox: Sandbox, paths: string[]): Promise<Run> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn(process.execPath, [shim, "send", ...paths, "--json"], {
      env: sandbox.env,
      stdio: ["ignore", "pipe", "pipe"],
    });
    const timer = setTimeout(() => child.kill("SIGKILL"), SEND_TIMEOUT_MS);
    const lines: string[] = [];
    const lineAtMs: number[] = [];
    let partial = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => {
      const parts = (partial + chunk.toString()).split("\n");
      partial = parts.pop()!;
      for (const line of parts.filter((l) => l.trim())) {
        lines.push(line);
        lineAtMs.push(performance.now() - started);
      }
    });
    child.stderr.on("data", (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-4096)));
    child.once("error", reject);
    child.once("close", (code) => {
      clearTimeout(timer);
      resolve({ code, wallMs: performance.now() - started, lineAtMs, lines, stderr });
    });
  });
}

/** Checks one send's JSON lines against the files it was given; returns file ids by path. */
function checkResults(files: Sent[], run: Run, label: string): Map<string, string> {
  const ids = new Map<string, string>();
  if (run.code !== 0) {
    fail(`${label}: exited ${run.code}: ${run.stderr.trim().split("\n").pop() ?? ""}`);
    return ids;
  }
  const results = run.lines.map((line) => JSON.parse(line) as SendJson & { name?: string });
  if (results.length !== files.length) {
    fail(`${label}: ${results.length} results for ${files.length} files`);
    return ids;
  }
  // The shim sends in the order given and prints one line per file.
  files.forEach((file, i) => {
    const result = results[i]!;
    if (result.sha256 !== file.sha256 || result.size !== file.size)
      fail(`${label}: ${file.path} reported ${result.size} B ${result.sha256}`);
    else ids.set(file.path, result.fileId);
  });
  return ids;
}

/** Reads of served bytes cut short (a Worker reload ends a response mid-body) and read again. */
let rereads = 0;
const REREADS_PER_FILE = 5;

/**
 * SHA-256 of what the relay serves the owner for a file, streamed. A read cut short by the
 * connection is read again from the start (`wrangler dev` cannot retry a response it has begun
 * when its Worker reloads); a complete answer with other bytes is never read again. node:http,
 * not fetch: fetch gives up on an answer whose headers take over 5 minutes, and the local runtime
 * may take that long while its queue reads ten large uploads back.
 */
async function servedSha256(sandbox: Sandbox, fileId: string): Promise<string> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await getSha256(`${sandbox.session.url}/v1/files/${fileId}/content`, {
        authorization: `Bearer ${sandbox.session.token}`,
      });
    } catch (error) {
      if (error instanceof RefusedGet || attempt >= REREADS_PER_FILE) throw error;
      rereads++;
      console.error(`GET content ${fileId} cut short (${String(error)}); reading it again`);
    }
  }
}

/** A GET answered with something other than 200: not read again. */
class RefusedGet extends Error {}

function getSha256(url: string, headers: Record<string, string>): Promise<string> {
  return new Promise((resolve, reject) => {
    const request = httpGet(url, { headers }, (response) => {
      if (response.statusCode !== 200) {
        response.resume();
        return reject(new RefusedGet(`GET ${url}: ${response.statusCode}`));
      }
      const hash = createHash("sha256");
      response.on("data", (chunk: Buffer) => hash.update(chunk));
      response.once("error", reject);
      response.once("aborted", () => reject(new Error("connection closed mid-body")));
      response.once("end", () =>
        response.complete ? resolve(hash.digest("hex")) : reject(new Error("body cut short")),
      );
    });
    request.once("error", reject);
  });
}

async function checkServed(samples: { file: Sent; fileId: string }[]): Promise<number> {
  let exact = 0;
  for (const { file, fileId } of samples) {
    try {
      const served = await servedSha256(file.sandbox, fileId);
      if (served === file.sha256) exact++;
      else fail(`${fileId} served ${served}, sent ${file.sha256}`);
    } catch (error) {
      fail(String(error));
    }
  }
  return exact;
}

/** Runs `tasks` with at most `limit` in flight. */
async function pool<T>(items: T[], limit: number, task: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await task(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}

/** Writes `bytes` of random data to `path` in 8 MiB chunks and returns its SHA-256. */
async function writeRandom(path: string, bytes: number): Promise<string> {
  const hash = createHash("sha256");
  const out = createWriteStream(path);
  for (let left = bytes; left > 0;) {
    const chunk = randomBytes(Math.min(8 * MiB, left));
    hash.update(chunk);
    left -= chunk.length;
    if (!out.write(chunk)) await new Promise<void>((resolve) => out.once("drain", () => resolve()));
  }
  await new Promise<void>((resolve, reject) => {
    out.once("error", reject);
    out.end(() => resolve());
  });
  return hash.digest("hex");
}

const fmt = (ms: number) => (ms >= 10_000 ? `${(ms / 1000).toFixed(1)} s` : `${Math.round(ms)} ms`);

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
  await send(warm, [warmPath]);

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
      `errors: ${errors.length}; served-byte reads cut short and read again: ${rereads}`,
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
