/** Verified content, keyed by the SHA-256 of the original bytes. */
export interface Blob {
  sha256: string;
  size: number;
  encoding: "identity" | "gzip";
  storedKey: string;
  storedSize: number;
  storedSha256: string;
  createdAt: number;
  expiresAt: number;
}

interface BlobRow {
  sha256: string;
  size: number;
  encoding: "identity" | "gzip";
  stored_key: string;
  stored_size: number;
  stored_sha256: string;
  created_at: number;
  expires_at: number;
}

function toBlob(row: BlobRow): Blob {
  return {
    sha256: row.sha256,
    size: row.size,
    encoding: row.encoding,
    storedKey: row.stored_key,
    storedSize: row.stored_size,
    storedSha256: row.stored_sha256,
    createdAt: row.created_at,
    expiresAt: row.expires_at,
  };
}

/**
 * The verified blob for `sha256` that outlives `now`, or null. Only for content the relay
 * itself holds and hashed (an attachment it fetched): never to answer a client's claim.
 */
export async function findLiveBlob(
  db: D1Database,
  sha256: string,
  now: number,
): Promise<Blob | null> {
  const row = await db
    .prepare("SELECT * FROM blobs WHERE sha256 = ? AND expires_at > ?")
    .bind(sha256, now)
    .first<BlobRow>();
  return row ? toBlob(row) : null;
}

/**
 * Joined to `blobs b`: the owner scope's live, verified files `f` of the blob's content,
 * newest first once `NEWEST_HELD_FILE` closes the statement. A dedup hit takes the form
 * (encoding, object) of that newest file, never the blob's: another scope's upload of the same
 * content may re-home the blob onto its own copy in another encoding, and no answer of this
 * scope may change with it. `scope` and `now` are SQL (a parameter or a subquery).
 */
export function heldFilesJoin(scope: string, now: string): string {
  return `JOIN files f ON ${heldFileOfBlob(scope, now)}`;
}

/** Of files `f` and blobs `b`: `f` is a live, verified file of the blob's content held by `scope`. */
export function heldFileOfBlob(scope: string, now: string): string {
  return `f.sha256 = b.sha256 AND f.scope = ${scope} AND f.verified = 1
          AND f.deleted_at IS NULL AND f.expires_at > ${now}`;
}

export const NEWEST_HELD_FILE = "ORDER BY f.expires_at DESC, f.id LIMIT 1";

/** Content an owner scope holds: its size, and where and how the scope's own copy is stored. */
export interface HeldContent {
  sha256: string;
  size: number;
  encoding: Blob["encoding"];
  storedKey: string;
}

/**
 * The content `sha256` when its verified blob outlives `now` and the owner scope `scope`
 * holds a live, verified file of it, in the form of the scope's newest such file
 * (`heldFilesJoin`). A hash alone unlocks nothing: content outside the caller's scope is never
 * found here, so a declare cannot tell it exists.
 */
export async function findContentHeldByScope(
  db: D1Database,
  scope: string,
  sha256: string,
  now: number,
): Promise<HeldContent | null> {
  const row = await db
    .prepare(
      `SELECT b.sha256, b.size, f.encoding, f.stored_key FROM blobs b ${heldFilesJoin("?1", "?3")}
       WHERE b.sha256 = ?2 AND b.expires_at > ?3 ${NEWEST_HELD_FILE}`,
    )
    .bind(scope, sha256, now)
    .first<{ sha256: string; size: number; encoding: Blob["encoding"]; stored_key: string }>();
  if (!row) return null;
  return { sha256: row.sha256, size: row.size, encoding: row.encoding, storedKey: row.stored_key };
}

/** A blob's columns in table order, for `?1` … `?8`. */
export function blobValues(blob: Blob): unknown[] {
  return [
    blob.sha256,
    blob.size,
    blob.encoding,
    blob.storedKey,
    blob.storedSize,
    blob.storedSha256,
    blob.createdAt,
    blob.expiresAt,
  ];
}

/**
 * Records a verified blob, or — when one for the same content exists — keeps the
 * existing one and pushes its expiry out to at least `expiresAt`. Returns the blob
 * that is now addressable for this content.
 */
export async function upsertBlob(db: D1Database, blob: Blob): Promise<Blob> {
  const row = await db
    .prepare(
      `INSERT INTO blobs (sha256, size, encoding, stored_key, stored_size, stored_sha256, created_at, expires_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (sha256) DO UPDATE SET expires_at = MAX(blobs.expires_at, excluded.expires_at)
       RETURNING *`,
    )
    .bind(...blobValues(blob))
    .first<BlobRow>();
  if (!row) throw new Error("upsertBlob returned no row");
  return toBlob(row);
}

/**
 * Points a blob at a fresh copy of its bytes (the old object may not outlive the files
 * that will use it). Files on the old key keep it in use until they go.
 */
export async function rehomeBlob(db: D1Database, blob: Blob): Promise<Blob> {
  const row = await db
    .prepare(
      `UPDATE blobs SET encoding = ?3, stored_key = ?4, stored_size = ?5, stored_sha256 = ?6,
         created_at = ?7, expires_at = MAX(expires_at, ?8)
       WHERE sha256 = ?1 RETURNING *`,
    )
    .bind(...blobValues(blob))
    .first<BlobRow>();
  return row ? toBlob(row) : upsertBlob(db, blob);
}

/**
 * Pushes a blob's expiry out so it outlives a new file that uses it — only while the
 * blob is still live at `now`. Returns false when it was not (it expired, or the sweep
 * removed it since it was read): the caller must then treat the content as not held,
 * since the sweep may be deleting its object. D1 runs statements one at a time, so
 * either this extension lands first (and the sweep's conditional delete no longer
 * matches) or the sweep's delete does (and this matches no row).
 */
export async function extendBlob(
  db: D1Database,
  sha256: string,
  expiresAt: number,
  now: number,
): Promise<boolean> {
  const result = await db
    .prepare("UPDATE blobs SET expires_at = MAX(expires_at, ?) WHERE sha256 = ? AND expires_at > ?")
    .bind(expiresAt, sha256, now)
    .run();
  return result.meta.changes > 0;
}

/**
 * Deletes up to `limit` blob rows that expired at or before `now` and that no live file
 * uses, in one statement (so two sweeps never both claim a row, and a dedup hit that
 * extended a blob first keeps it). Returns the object keys of the deleted rows.
 */
export async function deleteExpiredBlobs(
  db: D1Database,
  now: number,
  limit: number,
): Promise<string[]> {
  const unused = `expires_at <= ?1 AND NOT EXISTS (
      SELECT 1 FROM files f WHERE (f.sha256 = blobs.sha256 OR f.stored_key = blobs.stored_key)
        AND f.deleted_at IS NULL AND f.expires_at > ?1)`;
  const { results } = await db
    .prepare(
      `DELETE FROM blobs WHERE ${unused}
         AND sha256 IN (SELECT sha256 FROM blobs WHERE ${unused} LIMIT ?2)
       RETURNING stored_key`,
    )
    .bind(now, limit)
    .all<{ stored_key: string }>();
  return results.map((row) => row.stored_key);
}

/**
 * True when a blob, a live file or another pending upload still uses the object at `key`.
 * A file counts while it is not deleted, and, when `now` is given, not expired either.
 */
export async function isStoredKeyInUse(
  db: D1Database,
  key: string,
  exceptUploadId: string,
  now?: number,
): Promise<boolean> {
  const row = await db
    .prepare(
      `SELECT EXISTS (SELECT 1 FROM blobs WHERE stored_key = ?1)
           OR EXISTS (SELECT 1 FROM files WHERE stored_key = ?1 AND deleted_at IS NULL
                                            AND (?3 IS NULL OR expires_at > ?3))
           OR EXISTS (SELECT 1 FROM uploads WHERE stored_key = ?1 AND status = 'pending' AND id != ?2) AS used`,
    )
    .bind(key, exceptUploadId, now ?? null)
    .first<{ used: number }>();
  return row?.used === 1;
}
