import type { FileOrigin } from "../services/file-origin";
import type { MemberTable } from "../content/gzip-members";
import { MEMBER_COLUMNS, MEMBER_JOIN, memberTableOfRow } from "./gzip-members";
import { SESSION_SCOPE_SQL, sessionUsageSql } from "./sessions";

/** A file as users see it: a name and a lifetime over stored bytes it knows the place of. */
export interface FileRow {
  id: string;
  sessionId: string;
  name: string;
  size: number;
  sha256: string;
  contentType: string;
  encoding: "identity" | "gzip";
  storedKey: string;
  /** Its original size and SHA-256 are known to be right; until then it is nobody's dedup target. */
  verified: boolean;
  deduped: boolean;
  createdAt: number;
  expiresAt: number;
  /** Set when the file was deleted early (`DELETE /v1/files/:id`); only some reads return such rows. */
  deletedAt?: number | null;
  /** Where it came from: the sandbox, a seed, a chat, an upload link. */
  origin: FileOrigin;
  /**
   * The verified gzip member table of its stored bytes, when they have one: a read then
   * inflates only the members it touches. Filled by single-file reads (`findFileIncludingDeleted`).
   */
  members?: MemberTable | null;
}

interface FileDbRow {
  id: string;
  session_id: string;
  name: string;
  size: number;
  sha256: string;
  content_type: string;
  encoding: "identity" | "gzip";
  stored_key: string;
  verified: number;
  deduped: number;
  created_at: number;
  expires_at: number;
  deleted_at: number | null;
  origin: FileOrigin;
  member_span?: number | null;
  member_sizes?: string | null;
}

function toFile(row: FileDbRow): FileRow {
  return {
    id: row.id,
    sessionId: row.session_id,
    name: row.name,
    size: row.size,
    sha256: row.sha256,
    contentType: row.content_type,
    encoding: row.encoding,
    storedKey: row.stored_key,
    verified: row.verified === 1,
    deduped: row.deduped === 1,
    createdAt: row.created_at,
    expiresAt: row.expires_at,
    deletedAt: row.deleted_at,
    origin: row.origin,
    members: memberTableOfRow(row),
  };
}

/**
 * The `files` columns every insert fills, in the order `values` binds them, then the scope,
 * then the origin.
 */
export const FILE_COLUMNS = `id, session_id, name, size, sha256, content_type, encoding, stored_key, verified, deduped,
                 created_at, expires_at, scope, origin`;

/** A file's dedup scope is its session's, read in the insert itself (bound to the session id). */
const SCOPE_OF_SESSION = `(SELECT ${SESSION_SCOPE_SQL} FROM sessions WHERE id = ?)`;

function values(file: FileRow): unknown[] {
  return [
    file.id,
    file.sessionId,
    file.name,
    file.size,
    file.sha256,
    file.contentType,
    file.encoding,
    file.storedKey,
    file.verified ? 1 : 0,
    file.deduped ? 1 : 0,
    file.createdAt,
    file.expiresAt,
  ];
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
      `INSERT INTO files (${FILE_COLUMNS})
       SELECT ?3, ?1, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13,
              (SELECT ${SESSION_SCOPE_SQL} FROM sessions WHERE id = ?1), ?15
       WHERE ${sessionUsageSql()} + ?5 <= ?14`,
    )
    .bind(file.sessionId, now, ...values(file).filter((_, i) => i !== 1), quotaBytes, file.origin)
    .run();
  return result.meta.changes > 0;
}

/**
 * Inserts the file of an upload only while this request is the one that completed it
 * (the upload row carries the file's id), so completing twice never makes two files.
 */
export function insertFileOfUploadStatement(
  db: D1Database,
  file: FileRow,
  uploadId: string,
): D1PreparedStatement {
  return db
    .prepare(
      `INSERT INTO files (${FILE_COLUMNS})
       SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ${SCOPE_OF_SESSION}, ?
       WHERE EXISTS (SELECT 1 FROM uploads WHERE id = ? AND file_id = ?)`,
    )
    .bind(...values(file), file.sessionId, file.origin, uploadId, file.id);
}

/** A file that was not deleted (it may have expired: callers check `expiresAt`), or null. */
export async function findFile(db: D1Database, id: string): Promise<FileRow | null> {
  const file = await findFileIncludingDeleted(db, id);
  return file?.deletedAt == null ? file : null;
}

/** The files of `ids` that were not deleted, by id (D1 binds at most 100 values per query). */
export async function findFiles(db: D1Database, ids: string[]): Promise<Map<string, FileRow>> {
  const found = new Map<string, FileRow>();
  for (let start = 0; start < ids.length; start += 100) {
    const chunk = ids.slice(start, start + 100);
    const { results } = await db
      .prepare(
        `SELECT * FROM files WHERE id IN (${chunk.map(() => "?").join(", ")}) AND deleted_at IS NULL`,
      )
      .bind(...chunk)
      .all<FileDbRow>();
    for (const row of results) found.set(row.id, toFile(row));
  }
  return found;
}

/** Live files, newest first; all sessions when `sessionId` is null, any origin when `origin` is. */
export async function listFiles(
  db: D1Database,
  sessionId: string | null,
  now: number,
  limit: number,
  origin: FileOrigin | null = null,
): Promise<FileRow[]> {
  // Only the conditions asked for, so the query plan can use files_by_session (_origin).
  const where: string[] = [];
  const binds: unknown[] = [];
  if (sessionId) {
    where.push("session_id = ?");
    binds.push(sessionId);
  }
  if (origin) {
    where.push("origin = ?");
    binds.push(origin);
  }
  where.push("deleted_at IS NULL", "expires_at > ?");
  const statement = db
    .prepare(`SELECT * FROM files WHERE ${where.join(" AND ")} ORDER BY created_at DESC LIMIT ?`)
    .bind(...binds, now, limit);
  const { results } = await statement.all<FileDbRow>();
  return results.map(toFile);
}

/**
 * Marks a pending file verified, pointing it at the stored bytes it now shares (the store
 * keeps one copy of equal content, so a file may move to an older copy of its bytes).
 */
export async function markFileVerified(
  db: D1Database,
  id: string,
  stored: { storedKey: string; encoding: "identity" | "gzip" },
): Promise<void> {
  await db
    .prepare("UPDATE files SET verified = 1, stored_key = ?, encoding = ? WHERE id = ?")
    .bind(stored.storedKey, stored.encoding, id)
    .run();
}

/** Pending files created before `before`, oldest first, with the upload that made each. */
export async function findStalePendingFiles(
  db: D1Database,
  before: number,
  limit: number,
): Promise<{ fileId: string; uploadId: string }[]> {
  const { results } = await db
    .prepare(
      `SELECT f.id AS file_id, u.id AS upload_id FROM files f JOIN uploads u ON u.file_id = f.id
       WHERE f.verified = 0 AND f.deleted_at IS NULL AND f.created_at < ? AND u.status = 'completed'
       ORDER BY f.created_at LIMIT ?`,
    )
    .bind(before, limit)
    .all<{ file_id: string; upload_id: string }>();
  return results.map((row) => ({ fileId: row.file_id, uploadId: row.upload_id }));
}

/**
 * A file row whether or not it was deleted (share links tell a deleted file from a
 * missing one), or null.
 */
export async function findFileIncludingDeleted(
  db: D1Database,
  id: string,
): Promise<FileRow | null> {
  const row = await db
    .prepare(`SELECT f.*, ${MEMBER_COLUMNS} FROM files f ${MEMBER_JOIN} WHERE f.id = ?`)
    .bind(id)
    .first<FileDbRow>();
  return row ? toFile(row) : null;
}

/**
 * Deletes a file early: only the request that flips `deleted_at` gets the time back;
 * a concurrent or repeated delete gets null. The blob stays (other files may use it);
 * the scheduled sweep removes it once no live file does and it has expired.
 */
export async function deleteFile(db: D1Database, id: string, now: number): Promise<number | null> {
  const row = await db
    .prepare(
      "UPDATE files SET deleted_at = ? WHERE id = ? AND deleted_at IS NULL RETURNING deleted_at",
    )
    .bind(now, id)
    .first<{ deleted_at: number }>();
  return row?.deleted_at ?? null;
}

/**
 * Sets a one-request upload's `Idempotency-Key` on the file it made, batched with the insert:
 * a key the session already gave a file breaks the `files_by_idempotency_key` unique index
 * and with it the whole batch (`isIdempotencyKeyTaken`). A no-op when the file was not inserted.
 */
export function setIdempotencyKeyStatement(
  db: D1Database,
  fileId: string,
  key: string,
): D1PreparedStatement {
  return db.prepare("UPDATE files SET idempotency_key = ? WHERE id = ?").bind(key, fileId);
}

/** Whether a batch failed because the session had given a file this `Idempotency-Key` already. */
export function isIdempotencyKeyTaken(error: unknown): boolean {
  return (
    error instanceof Error &&
    error.message.includes("UNIQUE constraint failed: files.session_id, files.idempotency_key")
  );
}

/** The file the session made with this `Idempotency-Key`, deleted or not, or null. */
export async function findFileByIdempotencyKey(
  db: D1Database,
  sessionId: string,
  key: string,
): Promise<FileRow | null> {
  const row = await db
    .prepare("SELECT * FROM files WHERE session_id = ? AND idempotency_key = ?")
    .bind(sessionId, key)
    .first<FileDbRow>();
  return row ? toFile(row) : null;
}
