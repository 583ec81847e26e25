import { decodeSizes, encodeSizes, type MemberTable } from "../content/gzip-members";
import { sessionUsageSql } from "./sessions";

/** A declared upload: what a sandbox promised to PUT. */
export interface Upload {
  id: string;
  sessionId: string;
  name: string;
  size: number;
  sha256: string;
  contentType: string;
  encoding: "identity" | "gzip";
  storedKey: string;
  storedSize: number;
  storedSha256: string;
  status: "pending" | "completed" | "rejected";
  createdAt: number;
  expiresAt: number;
  fileId: string | null;
  /** Set when the bytes go up in parts. */
  multipart: MultipartPlan | null;
  /** The gzip member table the declare carried (verified with the hash); absent: untabled. */
  members?: MemberTable | null;
}

/** How a multipart upload is cut, what each part must hash to, and the store's id for it. */
export interface MultipartPlan {
  partSize: number;
  /** Hex SHA-256 of each part, in order. */
  partSha256: string[];
  storeUploadId: string;
}

interface UploadRow {
  id: string;
  session_id: string;
  name: string;
  size: number;
  sha256: string;
  content_type: string;
  encoding: "identity" | "gzip";
  stored_key: string;
  stored_size: number;
  stored_sha256: string;
  status: Upload["status"];
  created_at: number;
  expires_at: number;
  file_id: string | null;
  part_size: number | null;
  part_sha256: string | null;
  store_upload_id: string | null;
  member_span: number | null;
  member_sizes: string | null;
}

function toUpload(row: UploadRow): Upload {
  return {
    id: row.id,
    sessionId: row.session_id,
    name: row.name,
    size: row.size,
    sha256: row.sha256,
    contentType: row.content_type,
    encoding: row.encoding,
    storedKey: row.stored_key,
    storedSize: row.stored_size,
    storedSha256: row.stored_sha256,
    status: row.status,
    createdAt: row.created_at,
    expiresAt: row.expires_at,
    fileId: row.file_id,
    multipart:
      row.part_size !== null && row.part_sha256 !== null && row.store_upload_id !== null
        ? {
            partSize: row.part_size,
            partSha256: row.part_sha256.match(/.{64}/g) ?? [],
            storeUploadId: row.store_upload_id,
          }
        : null,
    members:
      row.member_span !== null && row.member_sizes !== null
        ? { span: row.member_span, storedSizes: decodeSizes(row.member_sizes) }
        : null,
  };
}

/** The member table's two columns (`member_span`, `member_sizes`) as an insert binds them. */
export function memberColumns(upload: Pick<Upload, "members">): [number | null, string | null] {
  const table = upload.members;
  return table ? [table.span, encodeSizes(table.storedSizes)] : [null, null];
}

/**
 * Records a pending upload only if its bytes fit the session's quota, counted in the
 * same statement. Returns false when they do not fit. An upload through an upload link
 * (`requestId`) must fit beside everything the session holds or was promised, links' pending
 * uploads included (`linkUsageSql`), and is then left out of the sandbox's own count.
 */
export async function insertUploadWithinQuota(
  db: D1Database,
  upload: Upload,
  quotaBytes: number,
  requestId: string | null = null,
): Promise<boolean> {
  const usage = requestId === null ? sessionUsageSql() : linkUsageSql();
  const result = await db
    .prepare(
      `INSERT INTO uploads (id, session_id, name, size, sha256, content_type, encoding, stored_key,
                            stored_size, stored_sha256, status, created_at, expires_at,
                            part_size, part_sha256, store_upload_id, request_id,
                            member_span, member_sizes)
       SELECT ?3, ?1, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, 'pending', ?2, ?12, ?14, ?15, ?16, ?17,
              ?18, ?19
       WHERE ${usage} + ?5 <= ?13`,
    )
    .bind(
      upload.sessionId,
      upload.createdAt,
      upload.id,
      upload.name,
      upload.size,
      upload.sha256,
      upload.contentType,
      upload.encoding,
      upload.storedKey,
      upload.storedSize,
      upload.storedSha256,
      upload.expiresAt,
      quotaBytes,
      upload.multipart?.partSize ?? null,
      upload.multipart?.partSha256.join("") ?? null,
      upload.multipart?.storeUploadId ?? null,
      requestId,
      ...memberColumns(upload),
    )
    .run();
  return result.meta.changes > 0;
}

/**
 * What an upload link's new bytes must fit beside: the session's live files and every pending
 * upload, its own and the ones strangers started through its links (`?1` session, `?2` now).
 */
export function linkUsageSql(): string {
  return `(SELECT COALESCE(SUM(size), 0) FROM files WHERE session_id = ?1 AND deleted_at IS NULL AND expires_at > ?2)
        + (SELECT COALESCE(SUM(size), 0) FROM uploads WHERE session_id = ?1 AND status = 'pending' AND expires_at > ?2)`;
}

/**
 * Pushes a pending upload's expiry out (a resumed upload gets fresh URLs). An upload whose
 * URL already expired no longer counts against the quota, so it is extended only if its
 * bytes fit again, counted in the same statement. Returns false when they do not.
 */
export async function extendPendingUpload(
  db: D1Database,
  upload: Pick<Upload, "id" | "sessionId" | "size">,
  expiresAt: number,
  quotaBytes: number,
  now: number,
): Promise<boolean> {
  const result = await db
    .prepare(
      `UPDATE uploads SET expires_at = MAX(expires_at, ?3)
       WHERE id = ?4 AND status = 'pending'
         AND (expires_at > ?2 OR ${sessionUsageSql()} + ?5 <= ?6)`,
    )
    .bind(upload.sessionId, now, expiresAt, upload.id, upload.size, quotaBytes)
    .run();
  return result.meta.changes > 0;
}

export async function findUpload(db: D1Database, id: string): Promise<Upload | null> {
  const row = await db.prepare("SELECT * FROM uploads WHERE id = ?").bind(id).first<UploadRow>();
  return row ? toUpload(row) : null;
}

/**
 * Completes a pending upload whose URL has not expired at `now` (until then its bytes
 * count against the quota; after, they would land uncounted); batched with the file insert.
 */
export function completeUploadStatement(
  db: D1Database,
  id: string,
  fileId: string,
  now: number,
): D1PreparedStatement {
  return db
    .prepare(
      "UPDATE uploads SET status = 'completed', file_id = ? WHERE id = ? AND status = 'pending' AND expires_at > ?",
    )
    .bind(fileId, id, now);
}

/** Refuses an upload, pending or completed; its bytes are then nobody's. */
export async function markUploadRejected(db: D1Database, id: string): Promise<void> {
  await db.prepare("UPDATE uploads SET status = 'rejected' WHERE id = ?").bind(id).run();
}

/**
 * Moves pending uploads whose URL expired at or before `before` to `rejected` (one
 * conditional statement: a concurrent completion or sweep wins or loses cleanly) and
 * returns their object keys, whose objects may hold bytes PUT but never completed.
 */
export async function expireStaleUploads(
  db: D1Database,
  before: number,
  limit: number,
): Promise<StaleUpload[]> {
  const { results } = await db
    .prepare(
      `UPDATE uploads SET status = 'rejected'
       WHERE status = 'pending' AND expires_at <= ?1
         AND id IN (SELECT id FROM uploads WHERE status = 'pending' AND expires_at <= ?1 LIMIT ?2)
       RETURNING id, stored_key, store_upload_id`,
    )
    .bind(before, limit)
    .all<{ id: string; stored_key: string; store_upload_id: string | null }>();
  return results.map((row) => ({
    id: row.id,
    storedKey: row.stored_key,
    storeUploadId: row.store_upload_id,
  }));
}

/** A pending upload the sweep gave up: its object, and its store-side multipart upload if any. */
export interface StaleUpload {
  id: string;
  storedKey: string;
  storeUploadId: string | null;
}
