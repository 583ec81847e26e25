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
import { describe } from "./relay-api";
import { shimSend } from "./shim";

/** A dedup re-send next to what it should cost: hashing the file plus two requests. */
export interface Dedup {
  resend: Row;
  sha256sum: Row;
  nodeHash: Row;
  probe: Row;
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
  const label = `${file.kind}, re-send`;
  return {
    resend: summarize(file, label, "airlock send (dedup hit)", resend),
    sha256sum: summarize(file, label, "sha256sum", hashes),
    nodeHash: summarize(file, label, "node crypto sha256 (fresh process)", nodeHashes),
    probe: summarize(file, label, "one POST /v1/uploads (curl)", probes),
  };
}
