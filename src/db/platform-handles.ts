/** What a platform handle is kept under (see migrations/0007_platform_handles.sql). */
export interface HandleKey {
  platform: string;
  account: string;
  kind: string;
  sha256: string;
  scope: string;
  /** '' when the platform's handle carries no file name. */
  name: string;
}

/** The live handle for this content on this platform, or null. */
export async function findHandle(
  db: D1Database,
  key: HandleKey,
  now: number,
): Promise<string | null> {
  const row = await db
    .prepare(
      `SELECT handle FROM platform_handles
       WHERE platform = ? AND account = ? AND kind = ? AND sha256 = ? AND scope = ? AND name = ?
         AND (expires_at IS NULL OR expires_at > ?)`,
    )
    .bind(key.platform, key.account, key.kind, key.sha256, key.scope, key.name, now)
    .first<{ handle: string }>();
  return row?.handle ?? null;
}

/** Keeps (or replaces) the handle for this content. */
export async function saveHandle(
  db: D1Database,
  key: HandleKey,
  handle: string,
  now: number,
  expiresAt: number | null,
): Promise<void> {
  await db
    .prepare(
      `INSERT INTO platform_handles (platform, account, kind, sha256, scope, name, handle, created_at, expires_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (platform, account, kind, sha256, scope, name)
       DO UPDATE SET handle = excluded.handle, created_at = excluded.created_at, expires_at = excluded.expires_at`,
    )
    .bind(
      key.platform,
      key.account,
      key.kind,
      key.sha256,
      key.scope,
      key.name,
      handle,
      now,
      expiresAt,
    )
    .run();
}

/** Forgets a handle the platform refused, unless another delivery already replaced it. */
export async function dropHandle(db: D1Database, key: HandleKey, handle: string): Promise<void> {
  await db
    .prepare(
      `DELETE FROM platform_handles
       WHERE platform = ? AND account = ? AND kind = ? AND sha256 = ? AND scope = ? AND name = ? AND handle = ?`,
    )
    .bind(key.platform, key.account, key.kind, key.sha256, key.scope, key.name, handle)
    .run();
}
