import { nodeHash, probeRequest, sha256sum } from "./baselines";
import { freshShimSend } from "./cases";
import {
  contentType,
  remeasureOn503,
  summarize,
  type Context,
  type Row,
  type Sample,
} from "./context";
import type { BenchFile } from "./corpus";
import { describe, waitUntilVerified } from "./relay-api";
import { shimSend } from "./shim";

/**
 * A dedup re-send next to what it should cost: hashing the file plus two requests; and a
 * send of content held only in another owner scope next to a send of fresh content (it
 * must cost one upload: a hash held elsewhere unlocks nothing).
 */
export interface Dedup {
  resend: Row;
  sha256sum: Row;
  nodeHash: Row;
  probe: Row;
  otherScope: Row;
  fresh: Row;
}

/** Sends `file` once, then re-sends the same bytes `runs` times (each must be a dedup hit). */
export async function dedupResend(ctx: Context, file: BenchFile, runs: number): Promise<Dedup> {
  ctx.log(`${file.kind} ${file.size} B: first send, then ${runs} dedup re-sends`);
  // Re-sends must find this content: wait for its read-back rather than restart the relay.
  await freshShimSend(ctx, file, undefined, true);
  const original = await describe(file.path, contentType(file.kind));
  const resend: Sample[] = [];
  const hashes: Sample[] = [];
  const nodeHashes: Sample[] = [];
  const probes: Sample[] = [];
  for (let i = 0; i < runs; i++) {
    const run = await shimSend(ctx.meter, ctx.session, file.path, { tmpDir: ctx.tmpDir });
    if (!run.result.deduped) throw new Error(`re-send of ${file.path} was not deduped`);
    resend.push({ ...run, bytesSent: run.result.uploadedBytes });
    hashes.push({ ...(await sha256sum(ctx.meter, file.path)), bytesSent: NaN });
    nodeHashes.push({ ...(await nodeHash(ctx.meter, file.path)), bytesSent: NaN });
    const probe = () => probeRequest(ctx.meter, ctx.session, original);
    probes.push({ ...(await remeasureOn503(ctx, "dedup probe", probe)), bytesSent: NaN });
  }
  const otherScope: Sample[] = [];
  for (let i = 0; i < runs; i++) {
    const session = await ctx.newScope();
    const run = await shimSend(ctx.meter, session, file.path, { tmpDir: ctx.tmpDir });
    if (run.result.deduped || run.result.uploadedBytes === 0)
      throw new Error(`a send from another scope of ${file.path} was deduped`);
    otherScope.push({ ...run, bytesSent: run.result.uploadedBytes });
    const sent = { name: "settle.bin", size: file.size, sha256: original.sha256 };
    await waitUntilVerified(session, { ...sent, contentType: "application/octet-stream" });
  }
  const fresh: Sample[] = [];
  for (let i = 0; i < runs; i++) fresh.push(await freshShimSend(ctx, file));
  const label = `${file.kind}, re-send`;
  return {
    resend: summarize(file, label, "airlock send (dedup hit)", resend),
    sha256sum: summarize(file, label, "sha256sum", hashes),
    nodeHash: summarize(file, label, "node crypto sha256 (fresh process)", nodeHashes),
    probe: summarize(file, label, "one POST /v1/uploads (curl)", probes),
    otherScope: summarize(file, label, "airlock send (held only in another scope)", otherScope),
    fresh: summarize(file, label, "airlock send (fresh content)", fresh),
  };
}
