/** A file waiting for a sandbox: an attachment from a chat, or one the operator seeded. */
export interface InboxItem {
  id: string;
  sessionId: string;
  source: string;
  name: string;
  status: "fetching" | "ready" | "failed" | "acked";
  attachment: string | null;
  fileId: string | null;
  attempts: number;
  error: string | null;
  eventKey: string | null;
  createdAt: number;
  ackedAt: number | null;
}

interface InboxRow {
  id: string;
  session_id: string;
  source: string;
  name: string;
  status: InboxItem["status"];
  attachment: string | null;
  file_id: string | null;
  attempts: number;
  error: string | null;
  event_key: string | null;
  created_at: number;
  acked_at: number | null;
}

function toItem(row: InboxRow): InboxItem {
  return {
    id: row.id,
    sessionId: row.session_id,
    source: row.source,
    name: row.name,
    status: row.status,
    attachment: row.attachment,
    fileId: row.file_id,
    attempts: row.attempts,
    error: row.error,
    eventKey: row.event_key,
    createdAt: row.created_at,
    ackedAt: row.acked_at,
  };
}

/**
 * Adds an item; returns false when an item for the same platform event already exists.
 * An item refused on arrival is added `failed` with its `error` and `attempts` used up.
 */
export async function insertInboxItem(
  db: D1Database,
  item: Pick<
    InboxItem,
    | "id"
    | "sessionId"
    | "source"
    | "name"
    | "status"
    | "attachment"
    | "fileId"
    | "eventKey"
    | "createdAt"
  > &
    Partial<Pick<InboxItem, "error" | "attempts">>,
): Promise<boolean> {
  const result = await db
    .prepare(
      `INSERT INTO inbox (id, session_id, source, name, status, attachment, file_id, event_key, created_at, error, attempts)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (event_key) DO NOTHING`,
    )
    .bind(
      item.id,
      item.sessionId,
      item.source,
      item.name,
      item.status,
      item.attachment,
      item.fileId,
      item.eventKey,
      item.createdAt,
      item.error ?? null,
      item.attempts ?? 0,
    )
    .run();
  return result.meta.changes > 0;
}

export async function findInboxItem(db: D1Database, id: string): Promise<InboxItem | null> {
  const row = await db.prepare("SELECT * FROM inbox WHERE id = ?").bind(id).first<InboxRow>();
  return row ? toItem(row) : null;
}

/** Items of a session in the given states, oldest first. */
export async function listInbox(
  db: D1Database,
  sessionId: string,
  statuses: InboxItem["status"][],
): Promise<InboxItem[]> {
  const placeholders = statuses.map(() => "?").join(", ");
  const { results } = await db
    .prepare(
      `SELECT * FROM inbox WHERE session_id = ? AND status IN (${placeholders}) ORDER BY created_at, id`,
    )
    .bind(sessionId, ...statuses)
    .all<InboxRow>();
  return results.map(toItem);
}

/** Counts a fetch attempt; false when another worker already finished the item. */
export async function startFetchAttempt(db: D1Database, id: string): Promise<boolean> {
  const result = await db
    .prepare(
      "UPDATE inbox SET attempts = attempts + 1 WHERE id = ? AND status IN ('fetching', 'failed')",
    )
    .bind(id)
    .run();
  return result.meta.changes > 0;
}

export async function markInboxReady(db: D1Database, id: string, fileId: string): Promise<void> {
  await db
    .prepare(
      "UPDATE inbox SET status = 'ready', file_id = ?, error = NULL WHERE id = ? AND status IN ('fetching', 'failed')",
    )
    .bind(fileId, id)
    .run();
}

/** Records a failed fetch; `minAttempts` lets a hopeless one count as out of retries. */
export async function markInboxFailed(
  db: D1Database,
  id: string,
  error: string,
  minAttempts = 0,
): Promise<void> {
  await db
    .prepare(
      `UPDATE inbox SET status = 'failed', error = ?, attempts = MAX(attempts, ?)
       WHERE id = ? AND status IN ('fetching', 'failed')`,
    )
    .bind(error, minAttempts, id)
    .run();
}

export async function ackInboxItem(db: D1Database, id: string, now: number): Promise<void> {
  await db
    .prepare(
      "UPDATE inbox SET status = 'acked', acked_at = COALESCE(acked_at, ?) WHERE id = ? AND status IN ('ready', 'acked')",
    )
    .bind(now, id)
    .run();
}
