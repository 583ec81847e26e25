/** A share link minted with limits: its own expiry and an optional download cap. */
export interface LinkRow {
  id: string;
  fileId: string;
  createdAt: number;
  expiresAt: number;
  maxDownloads: number | null;
  /** Bytes of the file sent through this link so far (see `reserveLinkBytes`). */
  bytesServed: number;
}

interface LinkDbRow {
  id: string;
  file_id: string;
  created_at: number;
  expires_at: number;
  max_downloads: number | null;
  bytes_served: number;
}

function toLink(row: LinkDbRow): LinkRow {
  return {
    id: row.id,
    fileId: row.file_id,
    createdAt: row.created_at,
    expiresAt: row.expires_at,
    maxDownloads: row.max_downloads,
    bytesServed: row.bytes_served,
  };
}

export async function insertLink(db: D1Database, link: LinkRow): Promise<void> {
  await db
    .prepare(
      `INSERT INTO links (id, file_id, created_at, expires_at, max_downloads, bytes_served)
       VALUES (?, ?, ?, ?, ?, ?)`,
    )
    .bind(link.id, link.fileId, link.createdAt, link.expiresAt, link.maxDownloads, link.bytesServed)
    .run();
}

export async function findLink(db: D1Database, id: string): Promise<LinkRow | null> {
  const row = await db
    .prepare(
      "SELECT id, file_id, created_at, expires_at, max_downloads, bytes_served FROM links WHERE id = ?",
    )
    .bind(id)
    .first<LinkDbRow>();
  return row ? toLink(row) : null;
}

/**
 * Reserves `bytes` of a capped link's budget (`max_downloads × unit`) while, after them,
 * `keep` bytes still fit: the check and the increment are one statement, so concurrent
 * requests can never overdraw. Returns false when they do not fit (or the link is gone).
 */
export async function reserveLinkBytes(
  db: D1Database,
  id: string,
  unit: number,
  bytes: number,
  keep = 0,
): Promise<boolean> {
  const row = await db
    .prepare(
      `UPDATE links SET bytes_served = bytes_served + ?2
       WHERE id = ?1 AND max_downloads IS NOT NULL
         AND bytes_served + ?2 + ?3 <= max_downloads * ?4
       RETURNING bytes_served`,
    )
    .bind(id, bytes, keep, unit)
    .first<{ bytes_served: number }>();
  return row !== null;
}

/**
 * Gives back what a transfer cut short reserved but never sent (`unsent`), and up to
 * `inFlight` of what it sent, within the link's lifetime allowance `allowance` for bytes
 * that may have been lost in flight.
 */
export async function refundLinkBytes(
  db: D1Database,
  id: string,
  unsent: number,
  inFlight: number,
  allowance: number,
): Promise<void> {
  await db
    .prepare(
      `UPDATE links SET
         bytes_served = MAX(0, bytes_served - ?2 - MAX(0, MIN(?3, ?4 - bytes_forgiven))),
         bytes_forgiven = bytes_forgiven + MAX(0, MIN(?3, ?4 - bytes_forgiven))
       WHERE id = ?1`,
    )
    .bind(id, unsent, inFlight, allowance)
    .run();
}

/** Removes link rows that expired before `before`; their tokens fail on expiry anyway. */
export async function deleteExpiredLinks(db: D1Database, before: number): Promise<number> {
  const result = await db.prepare("DELETE FROM links WHERE expires_at <= ?").bind(before).run();
  return result.meta.changes;
}
