import { deleteEndedChatIdWindows } from "../../db/chat-id-answers";
import { forgetMemberTables } from "../../db/gzip-members";
import { deleteExpiredBlobs, isStoredKeyInUse } from "../../db/blobs";
import { deleteExpiredLinks } from "../../db/links";
import {
  findUncheckedDedupHits,
  markDedupHitsChecked,
  type UncheckedDedupHit,
} from "../../db/dedup-hits";
import { findStalePendingFiles } from "../../db/files";
import { expireStaleUploads } from "../../db/uploads";
import type { Deps } from "../../deps";
import { blobRuleEnd } from "../../storage/lifecycle-rules";
import { CHAT_ID_LIMIT } from "../chat-id";
import { failLapsedDeliveries } from "../delivery/lease";
import { sweepUploadRequests, type RequestSweepResult } from "../upload-links/sweep";

const HOUR = 3_600_000;

/**
 * How long after its URL expired a pending upload is given up.  A multipart upload
 * can be resumed (and its expiry pushed out) for most of a day, so the sweep waits a day
 * (the same day the bucket's multipart rule uses) before treating it as abandoned.
 */
export const STALE_UPLOAD_GRACE_MS = 24 * HOUR;

/** Rows handled per step per run; the next run (hourly) continues where this one stopped. */
export const SWEEP_BATCH = 500;

/**
 * Bytes written again per run at most (on R2 each object streams out of the bucket and back
 * through the Worker); the dedup hits left over wait for the next run.
 */
export const REWRITE_BYTES_PER_RUN = 10 * 1024 ** 3;
/** An object is written again when the rule would delete it less than this after its last use. */
export const AGE_RULE_MARGIN_MS = 24 * HOUR;

export interface SweepResult extends RequestSweepResult {
  /** Blob rows removed: expired, and no live file uses them. */
  blobsDeleted: number;
  /** Pending uploads given up (`rejected`). */
  uploadsExpired: number;
  /** Objects deleted from the store (keys nothing in D1 uses any more). */
  objectsDeleted: number;
  /** Expired `links` rows removed. */
  linksDeleted: number;
  /** Pending files whose verification was queued again. */
  verificationsResent: number;
  /** Objects written again so that the bucket's age rule keeps them for their files. */
  objectsRewritten: number;
  /** Deliveries left `sending` by an attempt cut off mid-send, now failed with the reason. */
  deliveriesFailed: number;
  /** `/airlock` answer counts whose window had ended (they limited nothing any more). */
  chatIdAnswersDeleted: number;
}

/**
 * The scheduled sweep. Files need no marking: every read checks `expires_at` and
 * `deleted_at`. It removes blob rows whose expiry passed and that no live file uses,
 * gives up pending uploads a day past their URL's expiry (aborting their multipart
 * uploads at the store), deletes the objects of both
 * unless a blob, a live file or a pending upload still uses the key, drops expired
 * link rows and upload-link requests a day past their expiry (giving up the upload such a
 * link still held), re-sends the verification of files left pending, and writes again
 * the objects of dedup hits that the bucket's age rule would delete while a live file still
 * uses them (the rule counts from the object's last write, which a dedup hit is not),
 * fails deliveries whose attempt stopped renewing its lease (cut off by a crash), and drops
 * the `/airlock` answer count of each chat whose window has ended.
 *
 * Idempotent and safe to run twice at once: every D1 change is one conditional
 * statement (`DELETE … WHERE expired AND unused … RETURNING`), so a row is claimed by at
 * most one run, and deleting a missing object is not an error. The object is deleted
 * only after its row is gone and a fresh check finds the key unused; a dedup hit cannot
 * land on it any more (`extendBlob` only extends a live row).
 */
export async function sweep(deps: Deps, batch = SWEEP_BATCH): Promise<SweepResult> {
  const { db, store } = deps;
  const now = deps.now();
  const blobKeys = await deleteExpiredBlobs(db, now, batch);
  const staleUploads = await expireStaleUploads(db, now - STALE_UPLOAD_GRACE_MS, batch);
  for (const upload of staleUploads) {
    if (upload.storeUploadId === null) continue;
    const target = {
      uploadId: upload.id,
      storeUploadId: upload.storeUploadId,
      key: upload.storedKey,
    };
    await store.abortMultipartUpload(target);
  }
  let objectsDeleted = 0;
  for (const key of new Set([...blobKeys, ...staleUploads.map((u) => u.storedKey)])) {
    if (await isStoredKeyInUse(db, key, "", now)) continue;
    await store.delete(key);
    await forgetMemberTables(db, [key]);
    objectsDeleted += 1;
  }
  const linksDeleted = await deleteExpiredLinks(db, now);
  const requests = await sweepUploadRequests(deps, batch);
  const deliveriesFailed = await failLapsedDeliveries(deps, batch);
  const chatIdAnswersDeleted = await deleteEndedChatIdWindows(
    db,
    now - CHAT_ID_LIMIT.windowMs,
    batch,
  );
  // A file still pending this long lost its verify message (a local queue restarted, or
  // retries ran out into the dead-letter queue): send it again.
  const resendBefore = now - deps.config.verifyResendAfterSeconds * 1000;
  const stalePending = await findStalePendingFiles(db, resendBefore, batch);
  for (const job of stalePending) await deps.verifyQueue.send(job);
  const objectsRewritten = await rewriteAgingObjects(deps, now);
  return {
    verificationsResent: stalePending.length,
    objectsRewritten,
    blobsDeleted: blobKeys.length,
    uploadsExpired: staleUploads.length,
    objectsDeleted,
    linksDeleted,
    deliveriesFailed,
    chatIdAnswersDeleted,
    ...requests,
  };
}

/**
 * A blob deduplicated again and again outlives the bucket's `blobs/` rule, which counts from
 * the object's last write: each dedup hit's object is checked once (one HEAD) and, when the rule
 * would delete it less than a day after a live file using it expires, written again, same bytes.
 */
async function rewriteAgingObjects(deps: Deps, now: number): Promise<number> {
  const byKey = new Map<string, UncheckedDedupHit[]>();
  for (const hit of await findUncheckedDedupHits(deps.db, now, SWEEP_BATCH)) {
    const hits = byKey.get(hit.storedKey);
    if (hits) hits.push(hit);
    else byKey.set(hit.storedKey, [hit]);
  }
  const checked: string[] = [];
  let rewritten = 0;
  let budget = REWRITE_BYTES_PER_RUN;
  try {
    for (const [key, hits] of byKey) {
      const until = Math.max(0, ...hits.map((hit) => hit.liveUntil ?? 0));
      const size = Math.max(...hits.map((hit) => hit.size));
      if (until > 0 && size > budget && rewritten > 0) break;
      if (until > 0 && (await agesOutBefore(deps, key, until + AGE_RULE_MARGIN_MS))) {
        if (await deps.store.rewrite(key)) rewritten += 1;
        budget -= size;
      }
      checked.push(...hits.map((hit) => hit.id));
    }
  } finally {
    // One write for the run; hits left unmarked (a store error, the budget) wait for the next.
    if (checked.length > 0) await markDedupHitsChecked(deps.db, checked);
  }
  return rewritten;
}

/** Whether the bucket's rule would delete the object at `key` before `time` (false: no object). */
async function agesOutBefore(deps: Deps, key: string, time: number): Promise<boolean> {
  const writtenAt = await deps.store.writtenAt(key);
  return writtenAt !== null && blobRuleEnd(writtenAt, deps.config.fileTtlSeconds) <= time;
}
