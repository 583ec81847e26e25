import { deleteExpiredRequests, findUnsettledRequests } from "../../db/upload-requests";
import type { Deps } from "../../deps";
import { abandonClaim } from "./claim";
import { settleRequest } from "./upload-requests";

/**
 * How long after its link expired an upload request is kept. An upload begun before the link
 * expired may still finish after it, but not past this: the bucket aborts an incomplete
 * multipart upload a day after it started (src/storage/lifecycle-rules.ts).
 */
export const EXPIRED_REQUEST_GRACE_MS = 24 * 3_600_000;

export interface RequestSweepResult {
  /** Requests whose file was decided but never settled: now in the inbox, or open again. */
  requestsSettled: number;
  /** Request rows removed, a day past their link's expiry. */
  requestsDeleted: number;
}

/**
 * The sweep's part for upload links. It settles requests the verify queue could not (it
 * verified the file before the link recorded it, and nobody has looked since), then deletes
 * requests a day past their link's expiry that are done with (received, or never used up:
 * one whose file is still being verified stays) and gives up the unfinished upload such a
 * link still held, aborting its multipart upload so the parts sent so far go too. A plain
 * PUT's staging object is removed by the request that made it, or else by the bucket's
 * `staging/` rule: nothing in D1 names it.
 */
export async function sweepUploadRequests(deps: Deps, batch: number): Promise<RequestSweepResult> {
  const unsettled = await findUnsettledRequests(deps.db, batch);
  for (const request of unsettled) await settleRequest(deps, request);
  const deleted = await deleteExpiredRequests(
    deps.db,
    deps.now() - EXPIRED_REQUEST_GRACE_MS,
    batch,
  );
  for (const { uploadId } of deleted) {
    if (uploadId !== null) await abandonClaim(deps, uploadId);
  }
  return { requestsSettled: unsettled.length, requestsDeleted: deleted.length };
}
