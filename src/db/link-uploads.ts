import { sessionUsageSql } from "./sessions";
import { linkUsageSql } from "./uploads";

/**
 * Uploads through upload links (`uploads.request_id` set). While pending, a link upload holds
 * room only against other links (`linkUsageSql`) and only for its lease: each part that
 * arrives renews it, nothing else does. Once every byte is there, `complete` moves it into
 * the sandbox's own count (`promoteLinkUpload`), if it still fits.
 */

/** Bytes of the session's quota a new upload through one of its links may take now. */
export async function linkRoom(
  db: D1Database,
  sessionId: string,
  quotaBytes: number,
  now: number,
): Promise<number> {
  const row = await db
    .prepare(`SELECT ${linkUsageSql()} AS used`)
    .bind(sessionId, now)
    .first<{ used: number }>();
  return Math.max(0, quotaBytes - (row?.used ?? 0));
}

/**
 * Renews a pending link upload's lease to `leaseUntil` because bytes are arriving. One whose
 * lease already lapsed no longer holds room: it is renewed only if its bytes fit again beside
 * everything else, counted in the same statement. Returns false when they do not.
 */
export async function renewLinkUpload(
  db: D1Database,
  upload: { id: string; sessionId: string; size: number },
  leaseUntil: number,
  quotaBytes: number,
  now: number,
): Promise<boolean> {
  const result = await db
    .prepare(
      `UPDATE uploads SET expires_at = MAX(expires_at, ?3)
       WHERE id = ?4 AND status = 'pending' AND request_id IS NOT NULL
         AND (expires_at > ?2 OR ${linkUsageSql()} + ?5 <= ?6)`,
    )
    .bind(upload.sessionId, now, leaseUntil, upload.id, upload.size, quotaBytes)
    .run();
  return result.meta.changes > 0;
}

/**
 * Counts a link upload whose bytes have all arrived as the session's own (as a pending upload
 * of the sandbox's would count), if it fits beside the sandbox's files and own pending uploads;
 * its lease moves to `leaseUntil` so that `complete` can register it. Returns false when the
 * sandbox filled the quota first. Promoting twice (a retried completion) is a no-op: true.
 */
export async function promoteLinkUpload(
  db: D1Database,
  upload: { id: string; sessionId: string; size: number },
  leaseUntil: number,
  quotaBytes: number,
  now: number,
): Promise<boolean> {
  const result = await db
    .prepare(
      `UPDATE uploads SET request_id = NULL, expires_at = MAX(expires_at, ?3)
       WHERE id = ?4 AND status = 'pending' AND request_id IS NOT NULL
         AND ${sessionUsageSql()} + ?5 <= ?6`,
    )
    .bind(upload.sessionId, now, leaseUntil, upload.id, upload.size, quotaBytes)
    .run();
  if (result.meta.changes > 0) return true;
  const row = await db
    .prepare("SELECT request_id FROM uploads WHERE id = ? AND status = 'pending'")
    .bind(upload.id)
    .first<{ request_id: string | null }>();
  return row !== null && row.request_id === null;
}
