/** An upload link: a session asking a person for one file (`airlock request`). */
export interface UploadRequest {
  id: string;
  sessionId: string;
  name: string | null;
  maxBytes: number;
  createdAt: number;
  expiresAt: number;
  /** The upload holding the link right now (a newer start replaces it until a file arrives). */
  uploadId: string | null;
  /** The file that used the link up; it reaches the inbox once verified (`receivedAt`). */
  fileId: string | null;
  receivedAt: number | null;
  /** When the sandbox cancelled the link (`DELETE /v1/requests/:id`); null while it stands. */
  cancelledAt: number | null;
}

interface UploadRequestRow {
  id: string;
  session_id: string;
  name: string | null;
  max_bytes: number;
  created_at: number;
  expires_at: number;
  upload_id: string | null;
  file_id: string | null;
  received_at: number | null;
  cancelled_at: number | null;
}

function toRequest(row: UploadRequestRow): UploadRequest {
  return {
    id: row.id,
    sessionId: row.session_id,
    name: row.name,
    maxBytes: row.max_bytes,
    createdAt: row.created_at,
    expiresAt: row.expires_at,
    uploadId: row.upload_id,
    fileId: row.file_id,
    receivedAt: row.received_at,
    cancelledAt: row.cancelled_at,
  };
}

export async function insertUploadRequest(
  db: D1Database,
  request: Pick<
    UploadRequest,
    "id" | "sessionId" | "name" | "maxBytes" | "createdAt" | "expiresAt"
  > & { tokenSha256: string },
): Promise<void> {
  await db
    .prepare(
      `INSERT INTO upload_requests (id, session_id, token_sha256, name, max_bytes, created_at, expires_at)
       VALUES (?, ?, ?, ?, ?, ?, ?)`,
    )
    .bind(
      request.id,
      request.sessionId,
      request.tokenSha256,
      request.name,
      request.maxBytes,
      request.createdAt,
      request.expiresAt,
    )
    .run();
}

export async function findUploadRequest(db: D1Database, id: string): Promise<UploadRequest | null> {
  const row = await db
    .prepare("SELECT * FROM upload_requests WHERE id = ?")
    .bind(id)
    .first<UploadRequestRow>();
  return row ? toRequest(row) : null;
}

/** The request a link's token names, looked up by the token's SHA-256. */
export async function findUploadRequestByToken(
  db: D1Database,
  tokenSha256: string,
): Promise<UploadRequest | null> {
  const row = await db
    .prepare("SELECT * FROM upload_requests WHERE token_sha256 = ?")
    .bind(tokenSha256)
    .first<UploadRequestRow>();
  return row ? toRequest(row) : null;
}

/** The request a file used up, if it came through an upload link. */
export async function findUploadRequestByFile(
  db: D1Database,
  fileId: string,
): Promise<UploadRequest | null> {
  const row = await db
    .prepare("SELECT * FROM upload_requests WHERE file_id = ?")
    .bind(fileId)
    .first<UploadRequestRow>();
  return row ? toRequest(row) : null;
}

/**
 * Makes `uploadId` the link's upload, replacing `previous` (null: none yet), while no file
 * has used the link up and it has not expired. One conditional statement: of two starts that
 * race, one wins. Returns false when the link was taken or changed meanwhile.
 */
export async function claimUploadRequest(
  db: D1Database,
  id: string,
  uploadId: string,
  previous: string | null,
  now: number,
): Promise<boolean> {
  const result = await db
    .prepare(
      `UPDATE upload_requests SET upload_id = ?1
       WHERE id = ?2 AND file_id IS NULL AND expires_at > ?3 AND upload_id IS ?4
         AND cancelled_at IS NULL`,
    )
    .bind(uploadId, id, now, previous)
    .run();
  return result.meta.changes > 0;
}

/**
 * Records the file that used the link up, only if `uploadId` still holds it and no file did
 * yet. Returns false when another upload took the link meanwhile.
 */
export async function recordRequestFile(
  db: D1Database,
  id: string,
  uploadId: string,
  fileId: string,
): Promise<boolean> {
  const result = await db
    .prepare(
      "UPDATE upload_requests SET file_id = ?1 WHERE id = ?2 AND upload_id = ?3 AND file_id IS NULL",
    )
    .bind(fileId, id, uploadId)
    .run();
  return result.meta.changes > 0;
}

/** Marks the request received (its file verified and in the inbox); the first time counts. */
export async function markRequestReceived(db: D1Database, id: string, now: number): Promise<void> {
  await db
    .prepare(
      "UPDATE upload_requests SET received_at = COALESCE(received_at, ?1) WHERE id = ?2 AND file_id IS NOT NULL",
    )
    .bind(now, id)
    .run();
}

/**
 * Opens the link again after its file failed verification (the relay deleted it): the file
 * never counted, so the link is not used up.
 */
export async function releaseRequestFile(
  db: D1Database,
  id: string,
  fileId: string,
): Promise<void> {
  await db
    .prepare(
      `UPDATE upload_requests SET file_id = NULL, upload_id = NULL
       WHERE id = ?1 AND file_id = ?2 AND received_at IS NULL`,
    )
    .bind(id, fileId)
    .run();
}

/**
 * Requests whose file has been decided but that were never settled: verified (the verify
 * queue ran before the link recorded its file, and nobody has looked since) or deleted.
 */
export async function findUnsettledRequests(
  db: D1Database,
  limit: number,
): Promise<UploadRequest[]> {
  const { results } = await db
    .prepare(
      `SELECT r.* FROM upload_requests r JOIN files f ON f.id = r.file_id
       WHERE r.file_id IS NOT NULL AND r.received_at IS NULL
         AND (f.verified = 1 OR f.deleted_at IS NOT NULL)
       LIMIT ?`,
    )
    .bind(limit)
    .all<UploadRequestRow>();
  return results.map(toRequest);
}

/**
 * Deletes requests whose link expired at or before `before` and that are done with: nothing
 * used them up, or their file was received. One whose file is still being verified stays
 * until it is settled. Returns the deleted requests' last upload (null: none).
 */
export async function deleteExpiredRequests(
  db: D1Database,
  before: number,
  limit: number,
): Promise<{ id: string; uploadId: string | null }[]> {
  const { results } = await db
    .prepare(
      `DELETE FROM upload_requests
       WHERE expires_at <= ?1 AND (file_id IS NULL OR received_at IS NOT NULL)
         AND id IN (SELECT id FROM upload_requests
                    WHERE expires_at <= ?1 AND (file_id IS NULL OR received_at IS NOT NULL)
                    LIMIT ?2)
       RETURNING id, upload_id`,
    )
    .bind(before, limit)
    .all<{ id: string; upload_id: string | null }>();
  return results.map((row) => ({ id: row.id, uploadId: row.upload_id }));
}

/**
 * Cancels a link no file has used up yet, if `uploadId` (null: none) still holds it: it stops
 * working at once (its expiry moves to `now`, so the sweep drops the row a day later) and no
 * upload holds it any more. Returns false when the link changed meanwhile (a new upload took
 * it, or a file used it up): the caller reads it again. Cancelling twice changes nothing.
 */
export async function cancelUploadRequest(
  db: D1Database,
  id: string,
  uploadId: string | null,
  now: number,
): Promise<boolean> {
  const result = await db
    .prepare(
      `UPDATE upload_requests
       SET cancelled_at = COALESCE(cancelled_at, ?1), expires_at = MIN(expires_at, ?1), upload_id = NULL
       WHERE id = ?2 AND file_id IS NULL AND upload_id IS ?3`,
    )
    .bind(now, id, uploadId)
    .run();
  return result.meta.changes > 0;
}
