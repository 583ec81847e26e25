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
  };
}

/**
 * Records a pending upload only if its bytes fit the session's quota, counted in the
 * same statement. Returns false when they do not fit.
 */
export async function insertUploadWithinQuota(
  db: D1Database,
  upload: Upload,
  quotaBytes: number,
): Promise<boolean> {
  const result = await db
    .prepare(
      `INSERT INTO uploads (id, session_id, name, size, sha256, content_type, encoding, stored_key,
                            stored_size, stored_sha256, status, created_at, expires_at)
       SELECT ?3, ?1, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, 'pending', ?2, ?12
       WHERE ${sessionUsageSql()} + ?5 <= ?13`,
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
    )
    .run();
  return result.meta.changes > 0;
}

export async function findUpload(db: D1Database, id: string): Promise<Upload | null> {
  const row = await db.prepare("SELECT * FROM uploads WHERE id = ?").bind(id).first<UploadRow>();
  return row ? toUpload(row) : null;
}

/** Moves a pending upload to its final state; the statement is batched with the file insert. */
export function finishUploadStatement(
  db: D1Database,
  id: string,
  status: "completed" | "rejected",
  fileId: string | null,
): D1PreparedStatement {
  return db
    .prepare("UPDATE uploads SET status = ?, file_id = ? WHERE id = ? AND status = 'pending'")
    .bind(status, fileId, id);
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
): Promise<string[]> {
  const { results } = await db
    .prepare(
      `UPDATE uploads SET status = 'rejected'
       WHERE status = 'pending' AND expires_at <= ?1
         AND id IN (SELECT id FROM uploads WHERE status = 'pending' AND expires_at <= ?1 LIMIT ?2)
       RETURNING stored_key`,
    )
    .bind(before, limit)
    .all<{ stored_key: string }>();
  return results.map((row) => row.stored_key);
}
