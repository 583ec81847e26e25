/**
 * `airlock send <dir>` against what one would do by hand: `tar czf` the directory, then `curl -T`
 * the archive to a presigned PUT. The relay's upload URL is signed for an exact Content-Length
 * and x-amz-checksum-sha256, declared in advance, so `tar czf - dir | curl -T -` (bytes of
 * unknown length) cannot be sent to it: the archive is written first, hashed and declared
 * (untimed), then PUT. Timed: the `tar czf` process and the `curl -T` process, spawn to exit
 * each, summed. Not timed: hashing the archive, `POST /v1/uploads`, `POST …/complete`.
 */
import { rm } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { curlTo } from "./baselines";
import { remeasureOn503, summarize, type Context, type Row, type Sample } from "./context";
import { complete, declareUpload, describe } from "./relay-api";
import { shimSend } from "./shim";
import type { BenchTree } from "./tree";

export const DIR_SHIM = "airlock send dir/";
export const DIR_BASELINE = "tar czf + curl -T (timed sum)";

interface Baseline {
  tar: Sample;
  curl: Sample;
  total: Sample;
}

/** The case label of a tree's rows: `dir, 10000 files`. */
export const treeLabel = (tree: BenchTree) => `dir, ${tree.files.toLocaleString("en-US")} files`;

/** Shim vs tar + curl on fresh variants of the tree, runs interleaved. */
export async function compareDirectory(
  ctx: Context,
  tree: BenchTree,
  runs: number,
): Promise<Row[]> {
  const shim: Sample[] = [];
  const baseline: Baseline[] = [];
  for (let i = 0; i < runs; i++) {
    ctx.log(`${treeLabel(tree)}, run ${i + 1}/${runs}: shim`);
    shim.push(await freshShimSendDir(ctx, tree));
    ctx.log(`${treeLabel(tree)}, run ${i + 1}/${runs}: tar czf + curl -T`);
    baseline.push(await remeasureOn503(ctx, "tar + curl", () => tarThenCurl(ctx, tree)));
  }
  const label = treeLabel(tree);
  return [
    summarize(tree, label, DIR_SHIM, shim),
    summarize(
      tree,
      label,
      DIR_BASELINE,
      baseline.map((b) => b.total),
    ),
    summarize(
      tree,
      `${label}, by steps`,
      "tar czf (GNU tar, gzip -6)",
      baseline.map((b) => b.tar),
    ),
    summarize(
      tree,
      `${label}, by steps`,
      "curl -T of the .tar.gz",
      baseline.map((b) => b.curl),
    ),
  ];
}

async function freshShimSendDir(ctx: Context, tree: BenchTree): Promise<Sample> {
  await tree.fresh();
  const run = await shimSend(ctx.meter, ctx.session, tree.path, { tmpDir: ctx.tmpDir });
  const { result } = run;
  if (result.deduped || !result.archive || result.files !== tree.files) {
    throw new Error(`shim send of ${tree.path} was not a fresh archive upload: ${run.stdout}`);
  }
  return { wallMs: run.wallMs, rssMiB: run.rssMiB, bytesSent: result.uploadedBytes };
}

/** `tar czf` (timed), hash + declare (untimed), `curl -T` (timed), complete (untimed). */
async function tarThenCurl(ctx: Context, tree: BenchTree): Promise<Baseline> {
  await tree.fresh();
  const archive = join(ctx.tmpDir, `${basename(tree.path)}.tar.gz`);
  try {
    // -C parent name: entries are `name/...`, as the shim names them.
    const tar = await ctx.meter.run("tar", [
      "czf",
      archive,
      "-C",
      dirname(tree.path),
      basename(tree.path),
    ]);
    const file = await describe(archive, "application/gzip");
    const { uploadId, put } = await declareUpload(ctx.session, file);
    const curl = await curlTo(ctx.meter, put, archive);
    await complete(ctx.session, uploadId, (m) => ctx.warn(`untimed complete after curl: ${m}`));
    return {
      tar: { wallMs: tar.wallMs, rssMiB: tar.rssMiB, bytesSent: NaN },
      curl: { wallMs: curl.wallMs, rssMiB: curl.rssMiB, bytesSent: file.size },
      total: {
        wallMs: tar.wallMs + curl.wallMs,
        rssMiB: Math.max(tar.rssMiB, curl.rssMiB),
        bytesSent: file.size,
      },
    };
  } finally {
    await rm(archive, { force: true });
  }
}
