/** Session rows: who may upload, to which destinations, how many bytes, until when. */
export interface Session {
  id: string;
  destinations: string[];
  quotaBytes: number;
  /** The operator's name for the end user this session works for, if it gave one. */
  owner: string | null;
  /** Whose content a declare may dedup against: `owner:<owner>`, or the session's own id. */
  scope: string;
  createdAt: number;
  expiresAt: number;
  revokedAt: number | null;
}

/** A `sessions` row as D1 returns it (`SELECT *`). */
export interface SessionRow {
  id: string;
  destinations: string;
  quota_bytes: number;
  owner: string | null;
  created_at: number;
  expires_at: number;
  revoked_at: number | null;
}

/** The dedup scope of a session minted with (or without) an owner. */
export function scopeOf(sessionId: string, owner: string | null): string {
  return owner === null ? sessionId : `owner:${owner}`;
}

/** `scopeOf` in SQL, over a `sessions` row. */
export const SESSION_SCOPE_SQL = "COALESCE('owner:' || owner, id)";

export async function insertSession(
  db: D1Database,
  session: Omit<Session, "revokedAt" | "scope">,
): Promise<void> {
  await db
    .prepare(
      `INSERT INTO sessions (id, destinations, quota_bytes, owner, created_at, expires_at)
       VALUES (?, ?, ?, ?, ?, ?)`,
    )
    .bind(
      session.id,
      JSON.stringify(session.destinations),
      session.quotaBytes,
      session.owner,
      session.createdAt,
      session.expiresAt,
    )
    .run();
}

export async function findSession(db: D1Database, id: string): Promise<Session | null> {
  const row = await db.prepare("SELECT * FROM sessions WHERE id = ?").bind(id).first<SessionRow>();
  return row ? sessionOfRow(row) : null;
}

export function sessionOfRow(row: SessionRow): Session {
  return {
    id: row.id,
    destinations: JSON.parse(row.destinations) as string[],
    quotaBytes: row.quota_bytes,
    owner: row.owner,
    scope: scopeOf(row.id, row.owner),
    createdAt: row.created_at,
    expiresAt: row.expires_at,
    revokedAt: row.revoked_at,
  };
}

/**
 * Marks a session revoked and returns when it was revoked: now, or the first revocation's
 * time for a session revoked before (revoking again changes nothing). Null: no such session.
 */
export async function revokeSession(
  db: D1Database,
  id: string,
  now: number,
): Promise<number | null> {
  const row = await db
    .prepare(
      "UPDATE sessions SET revoked_at = COALESCE(revoked_at, ?) WHERE id = ? RETURNING revoked_at",
    )
    .bind(now, id)
    .first<{ revoked_at: number }>();
  return row?.revoked_at ?? null;
}

/**
 * Bytes a session holds: its live files plus its own uploads still pending, whose bytes may
 * land at any moment until their URL expires. Uploads through an upload link are left out
 * while pending: a stranger's promised bytes never make the sandbox's own sends fail (they
 * count once they have arrived; see `src/db/link-uploads.ts`).
 */
export function sessionUsageSql(): string {
  return `(SELECT COALESCE(SUM(size), 0) FROM files WHERE session_id = ?1 AND deleted_at IS NULL AND expires_at > ?2)
        + (SELECT COALESCE(SUM(size), 0) FROM uploads WHERE session_id = ?1 AND status = 'pending' AND expires_at > ?2 AND request_id IS NULL)`;
}

/** Bytes the session holds now (see `sessionUsageSql`). */
export async function sessionUsage(
  db: D1Database,
  sessionId: string,
  now: number,
): Promise<number> {
  const row = await db
    .prepare(`SELECT ${sessionUsageSql()} AS used`)
    .bind(sessionId, now)
    .first<{ used: number }>();
  return row?.used ?? 0;
}

/** The newest live session bound to `destination`: where a chat's attachments go. */
export async function findSessionForDestination(
  db: D1Database,
  destination: string,
  now: number,
): Promise<string | null> {
  const row = await db
    .prepare(
      `SELECT s.id FROM sessions s, json_each(s.destinations) d
       WHERE d.value = ? AND s.revoked_at IS NULL AND s.expires_at > ?
       ORDER BY s.created_at DESC, s.id DESC LIMIT 1`,
    )
    .bind(destination, now)
    .first<{ id: string }>();
  return row?.id ?? null;
}
