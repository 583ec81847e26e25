/**
 * Where a gzip send's time goes, step by step, done by hand the way the shim does it: gzip the
 * file (level 1, node's zlib, as the shim) into a temp file, PUT those bytes with curl, then
 * complete, which registers the file (the relay inflates and hashes gzip after answering).
 */
import { createHash } from "node:crypto";
import { createReadStream, createWriteStream } from "node:fs";
import { rm } from "node:fs/promises";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { Transform } from "node:stream";
import { pipeline } from "node:stream/promises";
import { createGzip } from "node:zlib";
import { curlTo } from "./baselines";
import {
  contentType,
  remeasureOn503,
  summarize,
  type Context,
  type Row,
  type Sample,
} from "./context";
import type { BenchFile } from "./corpus";
import { complete, declareUpload, describe } from "./relay-api";

interface Steps {
  gzip: Sample;
  put: Sample;
  complete: Sample;
}

export async function gzipBreakdown(ctx: Context, file: BenchFile, runs: number): Promise<Row[]> {
  const steps: Steps[] = [];
  for (let i = 0; i < runs; i++) {
    ctx.log(`${file.kind} ${file.size} B, step by step, run ${i + 1}/${runs}`);
    steps.push(await remeasureOn503(ctx, "gzip step-by-step upload", () => stepByStep(ctx, file)));
  }
  const label = `${file.kind}, by steps`;
  return [
    summarize(
      file,
      label,
      "gzip -1 to a temp file (node zlib, in-process)",
      steps.map((s) => s.gzip),
    ),
    summarize(
      file,
      label,
      "curl -T of the gzip bytes",
      steps.map((s) => s.put),
    ),
    summarize(
      file,
      label,
      "POST complete (gzip check runs after the answer)",
      steps.map((s) => s.complete),
    ),
  ];
}

async function stepByStep(ctx: Context, file: BenchFile): Promise<Steps> {
  await file.fresh();
  const original = await describe(file.path, contentType(file.kind));
  const temp = join(ctx.tmpDir, "breakdown.gz");
  try {
    const started = performance.now();
    const hash = createHash("sha256");
    let storedSize = 0;
    const tap = new Transform({
      transform(chunk: Buffer, _encoding, callback) {
        hash.update(chunk);
        storedSize += chunk.length;
        callback(null, chunk);
      },
    });
    await pipeline(
      createReadStream(file.path),
      createGzip({ level: 1 }),
      tap,
      createWriteStream(temp),
    );
    const gzipMs = performance.now() - started;
    const stored = { encoding: "gzip" as const, storedSize, storedSha256: hash.digest("hex") };
    const { uploadId, put } = await declareUpload(ctx.session, original, stored);
    const putRun = await curlTo(ctx.meter, put, temp);
    const completeStarted = performance.now();
    await complete(ctx.session, uploadId);
    const completeMs = performance.now() - completeStarted;
    return {
      gzip: { wallMs: gzipMs, rssMiB: NaN, bytesSent: NaN },
      put: { wallMs: putRun.wallMs, rssMiB: putRun.rssMiB, bytesSent: storedSize },
      complete: { wallMs: completeMs, rssMiB: NaN, bytesSent: NaN },
    };
  } finally {
    await rm(temp, { force: true });
  }
}
