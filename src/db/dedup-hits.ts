/** A dedup hit whose object's age the sweep has not checked yet. */
export interface UncheckedDedupHit {
  id: string;
  storedKey: string;
  size: number;
  /** Null when the file is no longer live (expired or deleted): nothing to keep. */
  liveUntil: number | null;
}

/** Dedup hits not yet checked against the bucket's age rule, oldest first. */
export async function findUncheckedDedupHits(
  db: D1Database,
  now: number,
  limit: number,
): Promise<UncheckedDedupHit[]> {
  const { results } = await db
    .prepare(
      `SELECT id, stored_key, size, deleted_at, expires_at FROM files
       WHERE deduped = 1 AND age_checked = 0 ORDER BY created_at LIMIT ?`,
    )
    .bind(limit)
    .all<{
      id: string;
      stored_key: string;
      size: number;
      deleted_at: number | null;
      expires_at: number;
    }>();
  return results.map((row) => ({
    id: row.id,
    storedKey: row.stored_key,
    size: row.size,
    liveUntil: row.deleted_at === null && row.expires_at > now ? row.expires_at : null,
  }));
}

export async function markDedupHitsChecked(db: D1Database, ids: string[]): Promise<void> {
  await db
    .prepare("UPDATE files SET age_checked = 1 WHERE id IN (SELECT value FROM json_each(?))")
    .bind(JSON.stringify(ids))
    .run();
}
