import { blobValues, type Blob } from "./blobs";
import {
  FILE_COLUMNS,
  isIdempotencyKeyTaken,
  setIdempotencyKeyStatement,
  type FileRow,
} from "./files";
import { SESSION_SCOPE_SQL, sessionUsageSql } from "./sessions";
import type { Upload } from "./uploads";

/**
 * The D1 side of a one-request upload (`POST /v1/single-uploads`) in two batches, each one
 * round trip and one transaction: `declareSingleUpload` before the body is read (a dedup hit
 * within the owner scope, or a pending upload holding its bytes in the quota), and once the
 * relay has stored and hashed the bytes, the upload completed with its file and its blob
 * (`upsertBlobOfUploadStatement`).
 */

/** What a one-request declaration came to. */
export type SingleDeclaration =
  /** A file over content the scope holds (the blob was pushed out to outlive it). */
  | { kind: "deduped"; file: FileRow }
  /** The pending upload is recorded; its bytes count against the quota. */
  | { kind: "upload" }
  /** The scope holds this SHA-256 with another size: nothing was recorded. */
  | { kind: "size_mismatch" }
  /** Over the quota (or the upload was not allowed): nothing was recorded. */
  | { kind: "refused"; held: boolean }
  /** A dedup hit, but the session gave a file this `Idempotency-Key` already: nothing was recorded. */
  | { kind: "key_taken" };

/**
 * Bound to every declaration statement: ?1 session id, ?2 now, ?3 scope, ?4 sha256, ?5 size,
 * ?6 quota; each statement's own values follow from ?7.
 */
const scopeFilesHold = `EXISTS (SELECT 1 FROM files f WHERE f.scope = ?3 AND f.sha256 = ?4
                          AND f.verified = 1 AND f.deleted_at IS NULL AND f.expires_at > ?2)`;
/** A live blob of the content, which the scope holds in a live, verified file (`findBlobHeldByScope`). */
const heldBlob = `b.sha256 = ?4 AND b.expires_at > ?2 AND ${scopeFilesHold}`;
const fitsQuota = `${sessionUsageSql()} + ?5 <= ?6`;

/**
 * Declares a one-request upload in one round trip, exactly as `declareUpload` decides: the
 * content held by the caller's owner scope (a hash alone is never a key) with the declared
 * size is a dedup hit, its blob extended and the file inserted within the quota; content it
 * does not hold becomes `upload`, inserted pending within the quota, when `upload` is given.
 * The statements' conditions exclude each other, so at most one row is inserted. With an
 * `idempotencyKey` the dedup file carries it; one the session gave a file already undoes
 * the whole batch (`key_taken`).
 */
export async function declareSingleUpload(
  db: D1Database,
  declared: {
    session: { id: string; scope: string; quotaBytes: number };
    /** The file a dedup hit becomes; its `storedKey` and `encoding` are the blob's. */
    dedupFile: FileRow;
    /** Null when the declaration may only be a dedup hit (it broke a rule of new uploads). */
    upload: Upload | null;
    idempotencyKey: string | undefined;
    now: number;
  },
): Promise<SingleDeclaration> {
  const { session, dedupFile: file, upload, idempotencyKey, now } = declared;
  const common = [session.id, now, session.scope, file.sha256, file.size, session.quotaBytes];
  const held = db
    .prepare(`SELECT b.size FROM blobs b WHERE ${heldBlob}`)
    .bind(...common.slice(0, 4));
  const extend = db
    .prepare(
      `UPDATE blobs AS b SET expires_at = MAX(b.expires_at, ?7)
       WHERE ${heldBlob} AND b.size = ?5`,
    )
    .bind(...common, file.expiresAt);
  const insertFile = db
    .prepare(
      `INSERT INTO files (${FILE_COLUMNS})
       SELECT ?7, ?1, ?8, ?5, ?4, ?9, b.encoding, b.stored_key, 1, 1, ?2, ?10,
              (SELECT ${SESSION_SCOPE_SQL} FROM sessions WHERE id = ?1)
       FROM blobs b WHERE ${heldBlob} AND b.size = ?5 AND ${fitsQuota}
       RETURNING encoding, stored_key`,
    )
    .bind(...common, file.id, file.name, file.contentType, file.expiresAt);
  const statements = [held, extend, insertFile];
  if (upload) statements.push(insertUploadUnlessHeld(db, common, upload));
  if (idempotencyKey !== undefined) {
    statements.push(setIdempotencyKeyStatement(db, file.id, idempotencyKey));
  }
  let results: D1Result[];
  try {
    results = await db.batch(statements);
  } catch (error) {
    if (isIdempotencyKeyTaken(error)) return { kind: "key_taken" };
    throw error;
  }
  const [heldResult, , inserted] = results;
  const uploadResult = upload ? results[3] : undefined;

  const stored = (inserted?.results as { encoding: FileRow["encoding"]; stored_key: string }[])[0];
  if (stored) {
    return {
      kind: "deduped",
      file: { ...file, encoding: stored.encoding, storedKey: stored.stored_key },
    };
  }
  if (uploadResult?.meta.changes === 1) return { kind: "upload" };
  const blob = (heldResult?.results as { size: number }[] | undefined)?.[0];
  if (blob && blob.size !== file.size) return { kind: "size_mismatch" };
  return { kind: "refused", held: blob !== undefined };
}

/** Records the pending upload only while the scope does not hold the content, within the quota. */
function insertUploadUnlessHeld(
  db: D1Database,
  common: unknown[],
  upload: Upload,
): D1PreparedStatement {
  return db
    .prepare(
      `INSERT INTO uploads (id, session_id, name, size, sha256, content_type, encoding, stored_key,
                            stored_size, stored_sha256, status, created_at, expires_at)
       SELECT ?7, ?1, ?8, ?5, ?4, ?9, ?10, ?11, ?12, ?13, 'pending', ?2, ?14
       WHERE NOT EXISTS (SELECT 1 FROM blobs b WHERE ${heldBlob}) AND ${fitsQuota}`,
    )
    .bind(
      ...common,
      upload.id,
      upload.name,
      upload.contentType,
      upload.encoding,
      upload.storedKey,
      upload.storedSize,
      upload.storedSha256,
      upload.expiresAt,
    );
}

/**
 * Records the content's blob (or pushes an existing one's expiry out) only once its upload
 * was completed with `fileId`: batched after `completeUploadStatement` and
 * `insertFileOfUploadStatement`, it lands with them or not at all.
 */
export function upsertBlobOfUploadStatement(
  db: D1Database,
  blob: Blob,
  uploadId: string,
  fileId: string,
): D1PreparedStatement {
  return db
    .prepare(
      `INSERT INTO blobs (sha256, size, encoding, stored_key, stored_size, stored_sha256, created_at, expires_at)
       SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8
       WHERE EXISTS (SELECT 1 FROM uploads WHERE id = ?9 AND file_id = ?10)
       ON CONFLICT (sha256) DO UPDATE SET expires_at = MAX(blobs.expires_at, excluded.expires_at)`,
    )
    .bind(...blobValues(blob), uploadId, fileId);
}
