import { blobValues, heldFileOfBlob, heldFilesJoin, NEWEST_HELD_FILE, type Blob } from "./blobs";
import {
  FILE_COLUMNS,
  isIdempotencyKeyTaken,
  setIdempotencyKeyStatement,
  type FileRow,
} from "./files";
import {
  SESSION_SCOPE_SQL,
  sessionOfRow,
  sessionUsageSql,
  type Session,
  type SessionRow,
} from "./sessions";
import { memberColumns, type Upload } from "./uploads";

/**
 * The D1 side of a one-request upload (`POST /v1/single-uploads`) in two batches, each one
 * round trip and one transaction: `declareSingleUpload` before the body is read (the
 * caller's session row, then a dedup hit within the owner scope, or a pending upload holding
 * its bytes in the quota), and once the relay has stored and hashed the bytes, the upload
 * completed with its file and its blob (`upsertBlobOfUploadStatement`).
 */

/** What a one-request declaration came to. */
type Outcome =
  /** A file over content the scope holds (the blob was pushed out to outlive it). */
  | { kind: "deduped"; file: FileRow }
  /** The pending upload is recorded; its bytes count against the quota. */
  | { kind: "upload" }
  /** The scope holds this SHA-256 with another size: nothing was recorded. */
  | { kind: "size_mismatch" }
  /**
   * Nothing was recorded: over the quota, the upload was not allowed, or the session may not
   * declare this at all (its row tells why).
   */
  | { kind: "refused"; held: boolean };

/**
 * The outcome with the caller's session row as the batch read it (null: no such session);
 * or `key_taken`: a dedup hit, but the session gave a file this `Idempotency-Key` already,
 * and nothing was recorded. Only a live session's file can meet the key.
 */
export type SingleDeclaration = (Outcome & { session: Session | null }) | { kind: "key_taken" };

/**
 * Bound to every declaration statement: ?1 session id, ?2 now, ?3 sha256, ?4 size, ?5 the
 * relay's largest file; each statement's own values follow from ?6. The session's scope and
 * quota are read from its row in the same transaction.
 */
const sessionRow = "FROM sessions WHERE id = ?1";
const callerScope = `(SELECT ${SESSION_SCOPE_SQL} ${sessionRow})`;
/**
 * Nothing is written unless the session is live (as `checkLive` in src/auth/live-session.ts
 * asks) and the size is within the relay's and the session's limits (`checkDeclaredSize`),
 * which the caller checks, in that order, on the row the batch returns.
 */
const callerMayDeclare = `EXISTS (SELECT 1 ${sessionRow} AND revoked_at IS NULL AND expires_at > ?2
                                    AND ?4 <= quota_bytes AND ?4 <= ?5)`;
const scopeFilesHold = `EXISTS (SELECT 1 FROM files f WHERE ${heldFileOfBlob(callerScope, "?2")})`;
/** A live blob of the content, which the scope holds in a live, verified file (`findContentHeldByScope`). */
const heldBlob = `b.sha256 = ?3 AND b.expires_at > ?2 AND ${scopeFilesHold}`;
const fitsQuota = `${sessionUsageSql()} + ?4 <= (SELECT quota_bytes ${sessionRow})`;

/**
 * Declares a one-request upload in one round trip, exactly as `declareUpload` decides, and
 * reads the caller's session row in the same transaction: nothing is written for a session
 * that is not live, or a size over its quota or `maxFileBytes`. The content held by the
 * caller's owner scope (a hash alone is never a key) with the declared size is a dedup hit,
 * its blob extended and the file inserted within the quota; content it does not hold becomes
 * `upload`, inserted pending within the quota, when `upload` is given. The statements'
 * conditions exclude each other, so at most one row is inserted. With an `idempotencyKey`
 * the dedup file carries it; one the session gave a file already undoes the whole batch
 * (`key_taken`).
 */
export async function declareSingleUpload(
  db: D1Database,
  declared: {
    sessionId: string;
    maxFileBytes: number;
    /** The file a dedup hit becomes; its `storedKey` and `encoding` are the held file's. */
    dedupFile: FileRow;
    /** Null when the declaration may only be a dedup hit (it broke a rule of new uploads). */
    upload: Upload | null;
    idempotencyKey: string | undefined;
    now: number;
  },
): Promise<SingleDeclaration> {
  const { sessionId, maxFileBytes, dedupFile: file, upload, idempotencyKey, now } = declared;
  const common = [sessionId, now, file.sha256, file.size, maxFileBytes];
  const session = db.prepare(`SELECT * ${sessionRow}`).bind(sessionId);
  const held = db
    .prepare(`SELECT b.size FROM blobs b WHERE ${heldBlob}`)
    .bind(...common.slice(0, 3));
  const extend = db
    .prepare(
      `UPDATE blobs AS b SET expires_at = MAX(b.expires_at, ?6)
       WHERE ${heldBlob} AND b.size = ?4 AND ${callerMayDeclare}`,
    )
    .bind(...common, file.expiresAt);
  const insertFile = db
    .prepare(
      `INSERT INTO files (${FILE_COLUMNS})
       SELECT ?6, ?1, ?7, ?4, ?3, ?8, f.encoding, f.stored_key, 1, 1, ?2, ?9, ${callerScope}, ?10
       FROM blobs b ${heldFilesJoin(callerScope, "?2")}
       WHERE b.sha256 = ?3 AND b.expires_at > ?2 AND b.size = ?4
         AND ${callerMayDeclare} AND ${fitsQuota}
       ${NEWEST_HELD_FILE}
       RETURNING encoding, stored_key`,
    )
    .bind(...common, file.id, file.name, file.contentType, file.expiresAt, file.origin);
  const statements = [session, held, extend, insertFile];
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
  const [sessionResult, heldResult, , inserted] = results;
  const uploadResult = upload ? results[4] : undefined;
  const row = (sessionResult?.results as SessionRow[] | undefined)?.[0];
  const answer = { session: row ? sessionOfRow(row) : null };

  const stored = (inserted?.results as { encoding: FileRow["encoding"]; stored_key: string }[])[0];
  if (stored) {
    return {
      ...answer,
      kind: "deduped",
      file: { ...file, encoding: stored.encoding, storedKey: stored.stored_key },
    };
  }
  if (uploadResult?.meta.changes === 1) return { ...answer, kind: "upload" };
  const blob = (heldResult?.results as { size: number }[] | undefined)?.[0];
  if (blob && blob.size !== file.size) return { ...answer, kind: "size_mismatch" };
  return { ...answer, kind: "refused", held: blob !== undefined };
}

/**
 * Records the pending upload only while the scope does not hold the content, within the
 * quota, for a session that may declare it.
 */
function insertUploadUnlessHeld(
  db: D1Database,
  common: unknown[],
  upload: Upload,
): D1PreparedStatement {
  return db
    .prepare(
      `INSERT INTO uploads (id, session_id, name, size, sha256, content_type, encoding, stored_key,
                            stored_size, stored_sha256, status, created_at, expires_at,
                            member_span, member_sizes)
       SELECT ?6, ?1, ?7, ?4, ?3, ?8, ?9, ?10, ?11, ?12, 'pending', ?2, ?13, ?14, ?15
       WHERE NOT EXISTS (SELECT 1 FROM blobs b WHERE ${heldBlob})
         AND ${callerMayDeclare} AND ${fitsQuota}`,
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
      ...memberColumns(upload),
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
