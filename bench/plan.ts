import { gzipBreakdown } from "./breakdown";
import { compareTools, gzipLevels } from "./cases";
import type { Context, Row } from "./context";
import { createFile, type BenchFile, type Kind } from "./corpus";
import { dedupResend, type Dedup } from "./dedup";
import { compareDirectory } from "./directory";
import { MiB, describeRow } from "./format";
import { partsInFlight, resumeAfterKill, type Resume } from "./multipart";
import { createTree } from "./tree";

/** Everything one benchmark run measured. */
export interface Results {
  rows: Row[];
  gzipRows: Row[];
  stepRows: Row[];
  dedups: Dedup[];
  /** `airlock send <dir>` vs `tar czf` + `curl -T`, and the baseline's two steps. */
  dirRows: Row[];
  /** A large random send at each AIRLOCK_UPLOAD_CONCURRENCY. */
  partRows: Row[];
  /** The same send killed half-way, then run again. */
  resume?: Resume;
}

const KINDS: Kind[] = ["random", "text"];

/**
 * The whole plan: each kind at each size (shim, curl, base64 over exec); at the largest of those
 * sizes also the dedup re-send, and for text the gzip levels and the step-by-step breakdown; then
 * (full mode) 1 GiB of each kind for peak RSS, and for random 1 GiB (256 MiB with --quick) the
 * parts in flight and a send killed half-way then resumed; last, a directory of small files
 * (10,000, or 1,000 with --quick). `runs` runs per case, interleaved; base64 over exec runs once at 128 MiB and not
 * at 1 GiB.
 */
export async function measureAll(ctx: Context, quick: boolean): Promise<Results> {
  const runs = quick ? 1 : 3;
  const sizes = quick ? [1 * MiB, 16 * MiB] : [1 * MiB, 16 * MiB, 128 * MiB];
  const results: Results = {
    rows: [],
    gzipRows: [],
    stepRows: [],
    dedups: [],
    dirRows: [],
    partRows: [],
  };
  // Each result is logged as it comes, so that a failing run still shows what it measured.
  const record = (into: Row[], measured: Row[]) => {
    for (const row of measured) ctx.log(`= ${describeRow(row)}`);
    into.push(...measured);
  };

  for (const kind of KINDS) {
    for (const size of sizes) {
      await withFile(ctx, kind, size, async (file) => {
        record(results.rows, await compareTools(ctx, file, runs, size >= 128 * MiB ? 1 : runs));
        if (size !== sizes.at(-1)) return;
        const dedup = await dedupResend(ctx, file, runs);
        record([], [dedup.resend, dedup.sha256sum, dedup.nodeHash, dedup.probe]);
        record([], [dedup.otherScope, dedup.fresh]);
        results.dedups.push(dedup);
        if (kind !== "text") return;
        record(results.gzipRows, await gzipLevels(ctx, file, [1, 3, 6], runs));
        record(results.stepRows, await gzipBreakdown(ctx, file, runs));
      });
    }
  }
  for (const kind of KINDS) {
    if (quick && kind === "text") continue;
    await withFile(ctx, kind, quick ? 256 * MiB : 1024 * MiB, async (file) => {
      if (!quick) record(results.rows, await compareTools(ctx, file, 1, 0));
      if (kind !== "random") return;
      record(results.partRows, await partsInFlight(ctx, file));
      results.resume = await resumeAfterKill(ctx, file);
    });
  }
  const files = quick ? 1_000 : 10_000;
  ctx.log(`generating a directory of ${files} small files`);
  const tree = await createTree(ctx.tmpDir, `tree-${files}`, files);
  try {
    record(results.dirRows, await compareDirectory(ctx, tree, runs));
  } finally {
    await tree.remove();
  }
  return results;
}

/** Generates a file, uses it and always deletes it (1 GiB files must not outlive a failure). */
async function withFile(
  ctx: Context,
  kind: Kind,
  size: number,
  use: (file: BenchFile) => Promise<void>,
): Promise<void> {
  ctx.log(`generating ${kind} ${size / MiB} MiB`);
  const file = await createFile(ctx.tmpDir, kind, size);
  try {
    await use(file);
  } finally {
    await file.remove();
  }
}
