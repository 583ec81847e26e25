/** Session rows: who may upload, to which destinations, how many bytes, until when. */
export interface Session {
  id: string;
  destinations: string[];
  quotaBytes: number;
  createdAt: number;
  expiresAt: number;
  revokedAt: number | null;
}

interface SessionRow {
  id: string;
  destinations: string;
  quota_bytes: number;
  created_at: number;
  expires_at: number;
  revoked_at: number | null;
}

export async function insertSession(
  db: D1Database,
  session: Omit<Session, "revokedAt">,
): Promise<void> {
  await db
    .prepare(
      "INSERT INTO sessions (id, destinations, quota_bytes, created_at, expires_at) VALUES (?, ?, ?, ?, ?)",
    )
    .bind(
      session.id,
      JSON.stringify(session.destinations),
      session.quotaBytes,
      session.createdAt,
      session.expiresAt,
    )
    .run();
}

export async function findSession(db: D1Database, id: string): Promise<Session | null> {
  const row = await db.prepare("SELECT * FROM sessions WHERE id = ?").bind(id).first<SessionRow>();
  if (!row) return null;
  return {
    id: row.id,
    destinations: JSON.parse(row.destinations) as string[],
    quotaBytes: row.quota_bytes,
    createdAt: row.created_at,
    expiresAt: row.expires_at,
    revokedAt: row.revoked_at,
  };
}

/** Marks a session revoked; returns false when there is no such session. */
export async function revokeSession(db: D1Database, id: string, now: number): Promise<boolean> {
  const result = await db
    .prepare("UPDATE sessions SET revoked_at = COALESCE(revoked_at, ?) WHERE id = ?")
    .bind(now, id)
    .run();
  return result.meta.changes > 0;
}

/**
 * Bytes a session holds: its live files plus uploads still pending, whose bytes may
 * land at any moment until their URL expires.
 */
export function sessionUsageSql(): string {
  return `(SELECT COALESCE(SUM(size), 0) FROM files WHERE session_id = ?1 AND deleted_at IS NULL AND expires_at > ?2)
        + (SELECT COALESCE(SUM(size), 0) FROM uploads WHERE session_id = ?1 AND status = 'pending' AND expires_at > ?2)`;
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
