import { base64OverExec } from "./base64-exec";
import { curlPut } from "./baselines";
import {
  contentType,
  remeasureOn503,
  summarize,
  type Context,
  type Row,
  type Sample,
} from "./context";
import type { BenchFile } from "./corpus";
import { shimSend, type ShimSend } from "./shim";

/** A shim send of fresh content: it must upload, not dedup. */
export async function freshShimSend(
  ctx: Context,
  file: BenchFile,
  gzipLevel?: number,
  keepRelay = false,
): Promise<Sample> {
  await file.fresh();
  const run = await shimSend(ctx.meter, ctx.session, file.path, { tmpDir: ctx.tmpDir, gzipLevel });
  checkUploaded(run, file);
  await ctx.settle(run.result, { keepRelay });
  return { wallMs: run.wallMs, rssMiB: run.rssMiB, bytesSent: run.result.uploadedBytes };
}

/** shim vs curl vs base64-over-exec on fresh variants of `file`, runs interleaved. */
export async function compareTools(
  ctx: Context,
  file: BenchFile,
  runs: number,
  execRuns: number,
): Promise<Row[]> {
  const shim: Sample[] = [];
  const curl: Sample[] = [];
  const exec: Sample[] = [];
  for (let i = 0; i < runs; i++) {
    ctx.log(`${file.kind} ${file.size} B, run ${i + 1}/${runs}: shim`);
    shim.push(await freshShimSend(ctx, file));
    ctx.log(`${file.kind} ${file.size} B, run ${i + 1}/${runs}: curl`);
    curl.push(
      await remeasureOn503(ctx, "curl", async () => {
        await file.fresh();
        return curlPut(ctx.meter, ctx.session, file.path, contentType(file.kind), ctx.warn);
      }),
    );
    if (i >= execRuns) continue;
    ctx.log(`${file.kind} ${file.size} B, run ${i + 1}/${execRuns}: base64 over exec`);
    await file.fresh();
    const transfer = await base64OverExec(ctx.meter, file.path, ctx.tmpDir);
    ctx.log(`  ${transfer.processes} processes, ${(transfer.wallMs / 1000).toFixed(1)} s`);
    exec.push(transfer);
  }
  const rows = [
    summarize(file, file.kind, "airlock send", shim),
    summarize(file, file.kind, "curl -T (presigned PUT)", curl),
  ];
  if (exec.length > 0) rows.push(summarize(file, file.kind, "base64 over exec", exec));
  return rows;
}

/** The shim at each gzip level, fresh content every time. */
export async function gzipLevels(
  ctx: Context,
  file: BenchFile,
  levels: number[],
  runs: number,
): Promise<Row[]> {
  const samples = new Map<number, Sample[]>(levels.map((level) => [level, []]));
  for (let i = 0; i < runs; i++) {
    for (const level of levels) {
      ctx.log(`${file.kind} ${file.size} B, AIRLOCK_GZIP_LEVEL=${level}, run ${i + 1}/${runs}`);
      samples.get(level)!.push(await freshShimSend(ctx, file, level));
    }
  }
  const label = (level: number) => `${file.kind}, AIRLOCK_GZIP_LEVEL=${level}`;
  return levels.map((level) => summarize(file, label(level), "airlock send", samples.get(level)!));
}

function checkUploaded(run: ShimSend, file: BenchFile): void {
  const { result } = run;
  if (result.deduped || result.size !== file.size) {
    throw new Error(`shim send of ${file.path} was not a fresh upload: ${JSON.stringify(result)}`);
  }
}
