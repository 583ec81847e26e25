/**
 * Large sends go up in parts (above 64 MiB of stored bytes): how many parts in flight pay, and
 * what a send killed half-way costs when it is run again.
 */
import { spawn } from "node:child_process";
import { mkdtemp, readFile, readdir, rm } from "node:fs/promises";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import type { MultipartAnswer } from "../src/wire-types";
import { curlParts } from "./baselines";
import { remeasureOn503, summarize, type Context, type Row } from "./context";
import type { BenchFile } from "./corpus";
import { SHIM, shimEnv, shimSend } from "./shim";

export const CONCURRENCY_LEVELS = [1, 2, 4, 8];

/** The curl baseline for parts: `curl --parallel` of the part PUTs, this many at once. */
export const CURL_PARTS_IN_FLIGHT = 4;

/**
 * `airlock send` of fresh variants of `file` at each AIRLOCK_UPLOAD_CONCURRENCY, and the same
 * part PUTs by `curl --parallel` (the transport's own cost for parts, without the shim).
 */
export async function partsInFlight(ctx: Context, file: BenchFile): Promise<Row[]> {
  const rows: Row[] = [];
  ctx.log(`${file.kind} ${file.size} bytes, curl --parallel of the parts`);
  await file.fresh();
  const curl = await remeasureOn503(ctx, "curl parts", () =>
    curlParts(ctx.meter, ctx.session, file.path, ctx.tmpDir, CURL_PARTS_IN_FLIGHT, ctx.warn),
  );
  await ctx.settle({ size: file.size, sha256: "" });
  rows.push(
    summarize(
      file,
      `${file.kind}, ${CURL_PARTS_IN_FLIGHT} parts in flight`,
      "curl --parallel (part PUTs)",
      [{ wallMs: curl.wallMs, rssMiB: curl.rssMiB, bytesSent: curl.bytesSent }],
    ),
  );
  for (const level of CONCURRENCY_LEVELS) {
    ctx.log(`${file.kind} ${file.size} bytes, AIRLOCK_UPLOAD_CONCURRENCY=${level}`);
    await file.fresh();
    const run = await shimSend(ctx.meter, ctx.session, file.path, {
      tmpDir: ctx.tmpDir,
      env: { AIRLOCK_UPLOAD_CONCURRENCY: String(level) },
    });
    const sample = { wallMs: run.wallMs, rssMiB: run.rssMiB, bytesSent: run.result.uploadedBytes };
    await ctx.settle(run.result);
    rows.push(
      summarize(
        file,
        `${file.kind}, ${level} part${level === 1 ? "" : "s"} in flight`,
        "airlock send",
        [sample],
      ),
    );
  }
  return rows;
}

/** A send killed once the store holds half the parts, then run again. */
export interface Resume {
  size: number;
  /** An uninterrupted send of a fresh variant, for comparison. */
  fullMs: number;
  /** Spawn to SIGKILL of the first run. */
  killedAfterMs: number;
  /** Spawn to exit of the second run. */
  resumeMs: number;
  partSize: number;
  partCount: number;
  /** Parts the store lacked after the kill, and their bytes. */
  missingParts: number;
  missingBytes: number;
  /** What the second run PUT (its `uploadedBytes`). */
  resentBytes: number;
}

export async function resumeAfterKill(ctx: Context, file: BenchFile): Promise<Resume> {
  ctx.log(`resume: uninterrupted send of ${file.size} bytes`);
  await file.fresh();
  const full = await shimSend(ctx.meter, ctx.session, file.path, { tmpDir: ctx.tmpDir });
  await ctx.settle(full.result);

  await file.fresh();
  const cache = await mkdtemp(join(ctx.tmpDir, "cache-"));
  try {
    const env = shimEnv(ctx.session, ctx.tmpDir, { XDG_CACHE_HOME: cache });
    ctx.log("resume: send killed at 50 %");
    const killed = await sendUntilHalfStored(ctx, file.path, env, cache);
    ctx.log("resume: the same send again");
    const started = performance.now();
    const again = await shimSend(ctx.meter, ctx.session, file.path, {
      tmpDir: ctx.tmpDir,
      env: { XDG_CACHE_HOME: cache },
    });
    const resumeMs = performance.now() - started;
    await ctx.settle(again.result);
    return {
      size: file.size,
      fullMs: full.wallMs,
      killedAfterMs: killed.afterMs,
      resumeMs: Math.min(resumeMs, again.wallMs),
      partSize: killed.state.partSize,
      partCount: killed.state.partCount,
      missingParts: killed.state.parts.length,
      missingBytes: killed.missingBytes,
      resentBytes: again.result.uploadedBytes,
    };
  } finally {
    await rm(cache, { recursive: true, force: true });
  }
}

/** Runs `airlock send` and SIGKILLs it once the relay reports half the parts stored. */
async function sendUntilHalfStored(
  ctx: Context,
  path: string,
  env: NodeJS.ProcessEnv,
  cache: string,
): Promise<{ afterMs: number; state: MultipartAnswer; missingBytes: number }> {
  const started = performance.now();
  const child = spawn(process.execPath, [SHIM, "send", "--json", path], {
    env,
    stdio: ["ignore", "ignore", "pipe"],
  });
  let stderr = "";
  child.stderr.on("data", (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-4000)));
  const closed = new Promise<void>((resolve) => child.once("close", () => resolve()));
  try {
    for (;;) {
      if (child.exitCode !== null) throw new Error(`send ended before half was stored: ${stderr}`);
      const uploadId = await savedUploadId(cache);
      const state = uploadId ? await uploadState(ctx, uploadId) : undefined;
      if (state && state.parts.length <= state.partCount / 2) {
        child.kill("SIGKILL");
        const afterMs = performance.now() - started;
        await closed;
        // Parts in flight at the kill may have landed since the last look.
        const after = await uploadState(ctx, uploadId!);
        const missingBytes = after.parts.reduce(
          (sum, part) => sum + Number(part.put.headers["content-length"]),
          0,
        );
        return { afterMs, state: after, missingBytes };
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  } finally {
    child.kill("SIGKILL");
  }
}

async function savedUploadId(cache: string): Promise<string | undefined> {
  const dir = join(cache, "airlock", "uploads");
  const names = await readdir(dir).catch(() => [] as string[]);
  const name = names.find((n) => n.endsWith(".json"));
  if (!name) return undefined;
  const text = await readFile(join(dir, name), "utf8").catch(() => "");
  try {
    return (JSON.parse(text) as { uploadId?: string }).uploadId;
  } catch {
    return undefined; // caught mid-write
  }
}

async function uploadState(ctx: Context, uploadId: string): Promise<MultipartAnswer> {
  const response = await fetch(`${ctx.session.url}/v1/uploads/${uploadId}`, {
    headers: { authorization: `Bearer ${ctx.session.token}` },
  });
  if (!response.ok) throw new Error(`GET /v1/uploads/${uploadId}: ${response.status}`);
  const state = (await response.json()) as MultipartAnswer;
  if (state.status !== "multipart") throw new Error(`upload is ${state.status}`);
  return state;
}
