// Share-link downloads, `npm run bench:download` (`BENCH_DOWNLOAD_MIB=128,512` for other sizes;
// default 128). On s3 (strict S3 on loopback): the share link with its redirect (`curl -L`) and a
// direct presigned GET of the same object (`curl -o`, the ranged-download target's baseline); on
// r2 (the local binding, through the Worker): `curl -o` of the share link. `airlock get <shareUrl>`
// runs as installed (the extensionless `airlock`) in one stream (`AIRLOCK_DOWNLOAD_STREAMS=1`),
// with its defaults (one stream until the first range shows more pay), and with all four streams
// at once (`AIRLOCK_DOWNLOAD_STREAMS=4`). Every case is timed the same way, spawn to exit (curl's
// start-up counts as the shim's does), runs alternate, each case's median is reported, and every
// download is checked byte-exact by SHA-256. Target: the default get ≤ 1.05× the baseline. The
// Python shim's get runs beside it, in one stream and in 4 ranges, against the same curl.
import { execFile } from "node:child_process";
import { createHash, randomFillSync } from "node:crypto";
import { createReadStream } from "node:fs";
import { mkdtemp, open, rm } from "node:fs/promises";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { startStrictS3 } from "../test/fixtures/s3/strict-s3";
import { startRelay, type RunningRelay } from "../test/support/relay";
import { s3Vars } from "../test/support/s3-vars";
import { declareUpload, describe } from "./relay-api";
import { installedShim } from "./shim";

const MiB = 1024 * 1024;
/** Sizes in MiB, 128 unless `BENCH_DOWNLOAD_MIB` (comma-separated) says otherwise. */
const SIZES = (process.env.BENCH_DOWNLOAD_MIB ?? "128").split(",").map((n) => Number(n) * MiB);
const RUNS = Number(process.env.BENCH_DOWNLOAD_RUNS ?? 3);
/** Backends, both unless `BENCH_DOWNLOAD_BACKENDS` (comma-separated) says otherwise. */
const BACKENDS = (process.env.BENCH_DOWNLOAD_BACKENDS ?? "s3,r2").split(",") as Array<"s3" | "r2">;
const TARGET = 1.05;
const run = promisify(execFile);
/** The Python shim as `npm run build:shim` joins it (it fetches 4 ranges at once by default). */
const PYTHON_SHIM = fileURLToPath(new URL("../agent-shim/airlock.py", import.meta.url));
const PYTHON_CASES = ["one stream", "4 streams at once"] as const;

async function fileSha256(path: string): Promise<string> {
  const hash = createHash("sha256");
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest("hex");
}

/** Seconds from spawn to exit of `command`, which writes the file to `out`; checks the bytes. */
async function seconds(
  command: string,
  args: string[],
  out: string,
  sha256: string,
  env: Record<string, string> = {},
): Promise<number> {
  const started = performance.now();
  await run(command, args, { timeout: 600_000, env: { ...process.env, ...env } });
  const took = (performance.now() - started) / 1000;
  const got = await fileSha256(out);
  if (got !== sha256) throw new Error(`${command}: bytes differ: ${got} != ${sha256}`);
  await rm(out, { force: true });
  return took;
}

/** The shim's settings per case; AIRLOCK_* from the bench's own environment are left out. */
const SHIM_CASES = {
  "one stream": { AIRLOCK_DOWNLOAD_STREAMS: "1" },
  default: {},
  "4 streams at once": { AIRLOCK_DOWNLOAD_STREAMS: "4" },
} satisfies Record<string, Record<string, string>>;
type ShimCase = keyof typeof SHIM_CASES;
const shimEnvFor = (name: ShimCase): Record<string, string> => {
  const env: Record<string, string> = {};
  for (const key of Object.keys(process.env)) if (key.startsWith("AIRLOCK_")) env[key] = "";
  return { ...env, ...SHIM_CASES[name] };
};

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
  // Under load `wrangler dev` has answered a 503 ("Your worker restarted mid-request"): ask again.
  let answer: Response;
  let text: string;
  for (let tries = 1; ; tries++) {
    answer = await fetch(`${relay.url}/v1/uploads/${encodeURIComponent(uploadId)}/complete`, {
      method: "POST",
      headers: { authorization: `Bearer ${session.token}` },
    });
    text = await answer.text();
    if (answer.status !== 503 || tries === 3) break;
    await new Promise((resolve) => setTimeout(resolve, 2000));
  }
  if (answer.status !== 201) throw new Error(`complete: ${answer.status} ${text}`);
  const file = JSON.parse(text) as { url: string; status: string };
  if (file.status !== "verified") throw new Error(`the file is ${file.status}, not verified`);
  return file;
}

/** A file of `size` random bytes at `path`, written 8 MiB at a time; its SHA-256. */
async function randomFile(path: string, size: number): Promise<string> {
  const hash = createHash("sha256");
  const file = await open(path, "w");
  try {
    for (let at = 0; at < size; at += 8 * MiB) {
      const chunk = randomFillSync(Buffer.alloc(Math.min(8 * MiB, size - at)));
      hash.update(chunk);
      await file.write(chunk);
    }
  } finally {
    await file.close();
  }
  return hash.digest("hex");
}

/** Each case's times, in the order the cases ran. */
type Times = Map<string, number[]>;
const timed = async (times: Times, name: string, measure: () => Promise<number>) => {
  const took = await measure();
  times.set(name, [...(times.get(name) ?? []), took]);
};

/** Times every case on one backend, `RUNS` rounds, cases alternating within a round. */
async function backend(
  relay: RunningRelay,
  path: string,
  sha256: string,
  dir: string,
  storage: "s3" | "r2",
): Promise<Times> {
  const { url, status } = await store(relay, path);
  console.error(`${storage}: sent, ${status}`);
  const shim = await installedShim(dir);
  const out = join(dir, "out.bin");
  const times: Times = new Map();
  for (let i = 0; i < RUNS; i++) {
    if (storage === "s3") {
      const answer = await fetch(url, { redirect: "manual" });
      const location = answer.headers.get("location");
      if (answer.status !== 307 || !location) throw new Error(`no redirect: ${answer.status}`);
      await timed(times, "curl -o, the presigned GET", () =>
        seconds("curl", ["-sSf", "-o", out, location], out, sha256),
      );
      await timed(times, "curl -L -o, the share link", () =>
        seconds("curl", ["-sSfL", "-o", out, url], out, sha256),
      );
    } else {
      await timed(times, "curl -o, the share link", () =>
        seconds("curl", ["-sSf", "-o", out, url], out, sha256),
      );
    }
    for (const name of Object.keys(SHIM_CASES) as ShimCase[]) {
      await timed(times, `airlock get, ${name}`, () =>
        seconds(process.execPath, [shim, "get", url, "-o", out], out, sha256, shimEnvFor(name)),
      );
    }
    for (const name of PYTHON_CASES) {
      await timed(times, `python shim get, ${name}`, () =>
        seconds("python3", [PYTHON_SHIM, "get", url, "-o", out], out, sha256, shimEnvFor(name)),
      );
    }
  }
  return times;
}

/** The table of one size's cases against `baseline` (a case's name). */
function table(title: string, times: Times, baseline: string): string[] {
  const base = median(times.get(baseline)!);
  return [
    title,
    "",
    `| case | runs (s) | median (s) | vs ${baseline} |`,
    "| --- | --- | --- | --- |",
    ...[...times].map(
      ([name, xs]) =>
        `| ${name} | ${xs.map((x) => x.toFixed(2)).join(", ")} | ${median(xs).toFixed(2)} | ${(median(xs) / base).toFixed(2)}× |`,
    ),
    "",
  ];
}

const dir = await mkdtemp(join(tmpdir(), "airlock-download-bench-"));
const lines: string[] = [];
try {
  for (const size of SIZES) {
    const mib = size / MiB;
    const path = join(dir, "big.bin");
    const sha256 = await randomFile(path, size);
    for (const storage of BACKENDS) {
      const loadBefore = loadavg()[0]!;
      const s3 = storage === "s3" ? await startStrictS3() : undefined;
      const relay = await startRelay(s3 ? { storage, vars: s3Vars(s3) } : { storage });
      let times: Times;
      try {
        times = await backend(relay, path, sha256, dir, storage);
      } finally {
        await relay.stop();
        await s3?.stop();
      }
      const baseline = storage === "s3" ? "curl -o, the presigned GET" : "curl -o, the share link";
      const title = `${mib} MiB on ${storage}, ${RUNS} runs each, spawn to exit; 1-min load ${loadBefore.toFixed(1)} before, ${loadavg()[0]!.toFixed(1)} after`;
      lines.push(...table(title, times, baseline));
      console.error(lines.slice(-times.size - 5).join("\n"));
      const ratio = median(times.get("airlock get, default")!) / median(times.get(baseline)!);
      if (ratio > TARGET) {
        console.error(
          `${mib} MiB ${storage}: get ${ratio.toFixed(2)}× ${baseline}, over ${TARGET}×`,
        );
        process.exitCode = 1;
      }
    }
    await rm(path, { force: true });
  }
  console.log(lines.join("\n"));
} catch (error) {
  console.error(error);
  process.exitCode = 1;
} finally {
  await rm(dir, { recursive: true, force: true });
}
