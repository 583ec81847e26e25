import { sessionUsageSql } from "./sessions";

/** A file as users see it: a name and a lifetime over a verified blob. */
export interface FileRow {
  id: string;
  sessionId: string;
  name: string;
  size: number;
  sha256: string;
  contentType: string;
  deduped: boolean;
  createdAt: number;
  expiresAt: number;
}

interface FileDbRow {
  id: string;
  session_id: string;
  name: string;
  size: number;
  sha256: string;
  content_type: string;
  deduped: number;
  created_at: number;
  expires_at: number;
}

function toFile(row: FileDbRow): FileRow {
  return {
    id: row.id,
    sessionId: row.session_id,
    name: row.name,
    size: row.size,
    sha256: row.sha256,
    contentType: row.content_type,
    deduped: row.deduped === 1,
    createdAt: row.created_at,
    expiresAt: row.expires_at,
  };
}

/**
 * Inserts a file only if it fits the session's quota (counted in the same statement,
 * so concurrent requests cannot both squeeze in). Returns false when it does not fit.
 */
export async function insertFileWithinQuota(
  db: D1Database,
  file: FileRow,
  quotaBytes: number,
  now: number,
): Promise<boolean> {
  const result = await db
    .prepare(
      `INSERT INTO files (id, session_id, name, size, sha256, content_type, deduped, created_at, expires_at)
       SELECT ?3, ?1, ?4, ?5, ?6, ?7, ?8, ?9, ?10
       WHERE ${sessionUsageSql()} + ?5 <= ?11`,
    )
    .bind(
      file.sessionId,
      now,
      file.id,
      file.name,
      file.size,
      file.sha256,
      file.contentType,
      file.deduped ? 1 : 0,
      file.createdAt,
      file.expiresAt,
      quotaBytes,
    )
    .run();
  return result.meta.changes > 0;
}

/** Inserts a file whose bytes were already reserved by a pending upload. */
export function insertFileStatement(db: D1Database, file: FileRow): D1PreparedStatement {
  return db
    .prepare(
      `INSERT INTO files (id, session_id, name, size, sha256, content_type, deduped, created_at, expires_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    )
    .bind(
      file.id,
      file.sessionId,
      file.name,
      file.size,
      file.sha256,
      file.contentType,
      file.deduped ? 1 : 0,
      file.createdAt,
      file.expiresAt,
    );
}

/** A file that was not deleted (it may have expired: callers check `expiresAt`), or null. */
export async function findFile(db: D1Database, id: string): Promise<FileRow | null> {
  const row = await db
    .prepare("SELECT * FROM files WHERE id = ? AND deleted_at IS NULL")
    .bind(id)
    .first<FileDbRow>();
  return row ? toFile(row) : null;
}

/** Live files, newest first; all sessions when `sessionId` is null. */
export async function listFiles(
  db: D1Database,
  sessionId: string | null,
  now: number,
  limit: number,
): Promise<FileRow[]> {
  const statement = sessionId
    ? db
        .prepare(
          `SELECT * FROM files WHERE session_id = ? AND deleted_at IS NULL AND expires_at > ?
           ORDER BY created_at DESC LIMIT ?`,
        )
        .bind(sessionId, now, limit)
    : db
        .prepare(
          `SELECT * FROM files WHERE deleted_at IS NULL AND expires_at > ? ORDER BY created_at DESC LIMIT ?`,
        )
        .bind(now, limit);
  const { results } = await statement.all<FileDbRow>();
  return results.map(toFile);
}
