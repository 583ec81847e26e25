/** A share link minted with limits: its own expiry and an optional download cap. */
export interface LinkRow {
  id: string;
  fileId: string;
  createdAt: number;
  expiresAt: number;
  maxDownloads: number | null;
  downloads: number;
}

interface LinkDbRow {
  id: string;
  file_id: string;
  created_at: number;
  expires_at: number;
  max_downloads: number | null;
  downloads: number;
}

function toLink(row: LinkDbRow): LinkRow {
  return {
    id: row.id,
    fileId: row.file_id,
    createdAt: row.created_at,
    expiresAt: row.expires_at,
    maxDownloads: row.max_downloads,
    downloads: row.downloads,
  };
}

export async function insertLink(db: D1Database, link: LinkRow): Promise<void> {
  await db
    .prepare(
      `INSERT INTO links (id, file_id, created_at, expires_at, max_downloads, downloads)
       VALUES (?, ?, ?, ?, ?, ?)`,
    )
    .bind(link.id, link.fileId, link.createdAt, link.expiresAt, link.maxDownloads, link.downloads)
    .run();
}

export async function findLink(db: D1Database, id: string): Promise<LinkRow | null> {
  const row = await db.prepare("SELECT * FROM links WHERE id = ?").bind(id).first<LinkDbRow>();
  return row ? toLink(row) : null;
}

/**
 * Counts one download, only while the link is under its cap: the check and the increment
 * are one statement, so concurrent downloads can never exceed `max_downloads`.
 * Returns the new count, or null when the link is exhausted (or gone).
 */
export async function countDownload(db: D1Database, id: string): Promise<number | null> {
  const row = await db
    .prepare(
      `UPDATE links SET downloads = downloads + 1
       WHERE id = ? AND (max_downloads IS NULL OR downloads < max_downloads)
       RETURNING downloads`,
    )
    .bind(id)
    .first<{ downloads: number }>();
  return row?.downloads ?? null;
}

/** Removes link rows that expired before `before`; their tokens fail on expiry anyway. */
export async function deleteExpiredLinks(db: D1Database, before: number): Promise<number> {
  const result = await db.prepare("DELETE FROM links WHERE expires_at <= ?").bind(before).run();
  return result.meta.changes;
}
