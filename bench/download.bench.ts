// A 256 MiB share-link download, `npm run bench:download` (`BENCH_DOWNLOAD_MIB=<n>` for another
// size). On s3 (strict S3 on loopback): the share link with its redirect (`curl -L`) against a
// direct presigned GET of the same object; on r2 (the local binding, through the Worker): the
// share link, set against the s3 direct GET of the same run. Runs alternate, each case's median
// is reported, every download is checked byte-exact by SHA-256. `airlock get <shareUrl>` runs on
// both backends in one stream (`AIRLOCK_DOWNLOAD_STREAMS=1`) and in ranges (the default settings,
// or `BENCH_DOWNLOAD_STREAMS` / `BENCH_DOWNLOAD_CHUNK`), each set against `curl -o` of the same link
// in the same run (the ranged-download target: ≤ 1.05×). The Python shim's `get` runs beside it,
// both ways, against the same curl.
import { execFile } from "node:child_process";
import { createHash, randomFillSync } from "node:crypto";
import { createReadStream } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { startStrictS3 } from "../test/fixtures/s3/strict-s3";
import { startRelay, type RunningRelay } from "../test/support/relay";
import { s3Vars } from "../test/support/s3-vars";
import { declareUpload, describe } from "./relay-api";
import { SHIM } from "./shim";

/** 256 MiB unless `BENCH_DOWNLOAD_MIB` says otherwise. */
const SIZE = Number(process.env.BENCH_DOWNLOAD_MIB ?? 256) * 1024 * 1024;
const RUNS = 3;
const run = promisify(execFile);
/** The Python shim as `npm run build:shim` joins it. */
const PYTHON_SHIM = fileURLToPath(new URL("../agent-shim/airlock.py", import.meta.url));
/** How each shim is started: the Node bundle, or the Python shim under python3. */
const SHIMS = { node: [process.execPath, SHIM], python: ["python3", PYTHON_SHIM] } as const;

async function fileSha256(path: string): Promise<string> {
  const hash = createHash("sha256");
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest("hex");
}

/** Seconds curl took to fetch `url` (following redirects) into `out`; checks the bytes. */
async function curlSeconds(url: string, out: string, sha256: string): Promise<number> {
  const { stdout } = await run("curl", ["-sSfL", "-o", out, "-w", "%{time_total}", url], {
    timeout: 600_000,
  });
  const got = await fileSha256(out);
  if (got !== sha256) throw new Error(`bytes differ: ${got} != ${sha256}`);
  await rm(out, { force: true });
  return Number(stdout);
}

/** Seconds `airlock get <url>` took (wall clock, process start included); checks the bytes. */
async function shimSeconds(
  url: string,
  out: string,
  sha256: string,
  env: Record<string, string>,
  shim: keyof typeof SHIMS = "node",
): Promise<number> {
  const [program, ...lead] = SHIMS[shim];
  const started = performance.now();
  await run(program, [...lead, "get", url, "-o", out], {
    timeout: 600_000,
    env: { ...process.env, ...env },
  });
  const seconds = (performance.now() - started) / 1000;
  const got = await fileSha256(out);
  if (got !== sha256) throw new Error(`bytes differ: ${got} != ${sha256}`);
  await rm(out, { force: true });
  return seconds;
}

/** The ranged settings the bench runs with: the shim's defaults unless BENCH_DOWNLOAD_* say. */
const RANGED: Record<string, string> = {
  AIRLOCK_PARALLEL_THRESHOLD: "1048576",
  ...(process.env.BENCH_DOWNLOAD_STREAMS
    ? { AIRLOCK_DOWNLOAD_STREAMS: process.env.BENCH_DOWNLOAD_STREAMS }
    : {}),
  ...(process.env.BENCH_DOWNLOAD_CHUNK
    ? { AIRLOCK_DOWNLOAD_CHUNK: process.env.BENCH_DOWNLOAD_CHUNK }
    : {}),
};
const ONE_STREAM = { AIRLOCK_DOWNLOAD_STREAMS: "1" };

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/**
 * Stores the file through a session: declared, sent in one signed PUT (`curl -T`) and completed.
 * One PUT of the file as it is is verified by the store's checksum on the way in, so the file is
 * verified when `complete` answers: nothing is read back afterwards to land in the timings (a
 * send in parts is read back whole on the relay's queue, and under `wrangler dev` a Worker reload
 * drops that queue's message). How a file goes up is the send benches' business.
 */
async function store(relay: RunningRelay, path: string): Promise<{ url: string; status: string }> {
  const minted = await relay.mintSession();
  const session = { url: relay.url, token: minted.token };
  const { uploadId, put } = await declareUpload(
    session,
    await describe(path, "application/octet-stream"),
  );
  const headers = Object.entries(put.headers).flatMap(([name, value]) => [
    "-H",
    `${name}: ${value}`,
  ]);
  await run(
    "curl",
    ["-sSf", "-o", "/dev/null", "-X", put.method, "-T", path, "-H", "Expect:", ...headers, put.url],
    {
      timeout: 600_000,
    },
  );
  // `complete` is retried as the shims retry it: under load `wrangler dev` has answered it
  // 503 "Your worker restarted mid-request" (seen at 128 MiB on r2, load ~20).
  let answer: Response | undefined;
  for (let tries = 1; ; tries++) {
    answer = await fetch(`${relay.url}/v1/uploads/${encodeURIComponent(uploadId)}/complete`, {
      method: "POST",
      headers: { authorization: `Bearer ${session.token}` },
    });
    if (answer.status !== 503 || tries === 3) break;
    console.error(`complete: 503 ${await answer.text()}; again`);
  }
  const text = await answer.text();
  if (answer.status !== 201) throw new Error(`complete: ${answer.status} ${text}`);
  const file = JSON.parse(text) as { url: string; status: string };
  if (file.status !== "verified") throw new Error(`the file is ${file.status}, not verified`);
  return file;
}

const loadBefore = loadavg()[0]!;
const dir = await mkdtemp(join(tmpdir(), "airlock-download-bench-"));
const bytes = randomFillSync(Buffer.alloc(SIZE));
const sha256 = createHash("sha256").update(bytes).digest("hex");
await writeFile(join(dir, "big.bin"), bytes);
const out = join(dir, "out.bin");
const times = {
  redirect: [] as number[],
  direct: [] as number[],
  r2: [] as number[],
  s3One: [] as number[],
  s3Ranged: [] as number[],
  r2One: [] as number[],
  r2Ranged: [] as number[],
  s3PyOne: [] as number[],
  s3PyRanged: [] as number[],
  r2PyOne: [] as number[],
  r2PyRanged: [] as number[],
};
let failed = false;
try {
  const s3 = await startStrictS3();
  const relay = await startRelay({ storage: "s3", vars: s3Vars(s3) });
  try {
    const { url, status } = await store(relay, join(dir, "big.bin"));
    console.error(`s3: sent, ${status}`);
    for (let i = 0; i < RUNS; i++) {
      times.redirect.push(await curlSeconds(url, out, sha256));
      const answer = await fetch(url, { redirect: "manual" });
      const location = answer.headers.get("location");
      if (answer.status !== 307 || !location) throw new Error(`no redirect: ${answer.status}`);
      times.direct.push(await curlSeconds(location, out, sha256));
      times.s3One.push(await shimSeconds(url, out, sha256, ONE_STREAM));
      times.s3Ranged.push(await shimSeconds(url, out, sha256, RANGED));
      times.s3PyOne.push(await shimSeconds(url, out, sha256, ONE_STREAM, "python"));
      times.s3PyRanged.push(await shimSeconds(url, out, sha256, RANGED, "python"));
    }
  } finally {
    await relay.stop();
    await s3.stop();
  }
  const r2 = await startRelay({ storage: "r2" });
  try {
    const { url, status } = await store(r2, join(dir, "big.bin"));
    console.error(`r2: sent, ${status}`);
    for (let i = 0; i < RUNS; i++) {
      times.r2.push(await curlSeconds(url, out, sha256));
      times.r2One.push(await shimSeconds(url, out, sha256, ONE_STREAM));
      times.r2Ranged.push(await shimSeconds(url, out, sha256, RANGED));
      times.r2PyOne.push(await shimSeconds(url, out, sha256, ONE_STREAM, "python"));
      times.r2PyRanged.push(await shimSeconds(url, out, sha256, RANGED, "python"));
    }
  } finally {
    await r2.stop();
  }
} catch (error) {
  failed = true;
  console.error(error);
} finally {
  await rm(dir, { recursive: true, force: true });
}

if (!failed) {
  const direct = median(times.direct);
  const rangedLabel = `(${RANGED.AIRLOCK_DOWNLOAD_STREAMS ?? "default"} streams, ${RANGED.AIRLOCK_DOWNLOAD_CHUNK ?? "default"} chunk)`;
  const against = (name: string, xs: number[], curl: number[]) =>
    `| ${name} | ${xs.map((x) => x.toFixed(2)).join(", ")} | ${median(xs).toFixed(2)} | ${(median(xs) / median(curl)).toFixed(2)}× |`;
  const row = (name: string, xs: number[]) =>
    `| ${name} | ${xs.map((x) => x.toFixed(2)).join(", ")} | ${median(xs).toFixed(2)} | ${(median(xs) / direct).toFixed(2)}× |`;
  console.log(
    [
      `${SIZE / 1024 / 1024} MiB share-link download (${RUNS} runs each, bytes checked by SHA-256); load average ${loadBefore.toFixed(1)} before, ${loadavg()[0]!.toFixed(1)} after`,
      "",
      "| case | runs (s) | median (s) | vs s3 direct GET |",
      "| --- | --- | --- | --- |",
      row("s3 direct presigned GET (curl)", times.direct),
      row("s3 share link → 307 → store (curl -L)", times.redirect),
      row("r2 share link through the Worker (curl)", times.r2),
      "",
      "| airlock get of the share link | runs (s) | median (s) | vs curl of the same link |",
      "| --- | --- | --- | --- |",
      against("s3, one stream", times.s3One, times.redirect),
      against(`s3, ranges ${rangedLabel}`, times.s3Ranged, times.redirect),
      against("r2, one stream", times.r2One, times.r2),
      against(`r2, ranges ${rangedLabel}`, times.r2Ranged, times.r2),
      against("Python shim: s3, one stream", times.s3PyOne, times.redirect),
      against(`Python shim: s3, ranges ${rangedLabel}`, times.s3PyRanged, times.redirect),
      against("Python shim: r2, one stream", times.r2PyOne, times.r2),
      against(`Python shim: r2, ranges ${rangedLabel}`, times.r2PyRanged, times.r2),
    ].join("\n"),
  );
  for (const [backend, ranged, curl] of [
    ["s3", times.s3Ranged, times.redirect],
    ["r2", times.r2Ranged, times.r2],
    ["Python shim: s3", times.s3PyRanged, times.redirect],
    ["Python shim: r2", times.r2PyRanged, times.r2],
  ] as const) {
    const ranges = median(ranged) / median(curl);
    if (ranges > 1.05) {
      console.error(`${backend} ranged get ${ranges.toFixed(2)}× curl is over the 1.05× target`);
      process.exitCode = 1;
    }
  }
  const ratio = median(times.redirect) / direct;
  if (ratio > 1.2) {
    console.error(`s3 redirect ratio ${ratio.toFixed(2)}× is over the 1.2× target`);
    process.exitCode = 1;
  }
} else {
  process.exitCode = 1;
}
