import { memberColumns } from "./uploads";
import type { MemberTable } from "../content/gzip-members";

/**
 * Records the hashes and stored form of an upload declared without them, once: only while it
 * is pending and its hash is still empty. False when another completion recorded them first.
 * For identity the stored form is the original's; for gzip sent from its first byte it is
 * what `complete` gave (stored size, stored SHA-256, member table), checked by the read-back.
 */
export async function setDeferredHashes(
  db: D1Database,
  id: string,
  sha256: string,
  stored: { storedSize: number; storedSha256: string; members: MemberTable | null },
): Promise<boolean> {
  const result = await db
    .prepare(
      `UPDATE uploads SET sha256 = ?, stored_size = ?, stored_sha256 = ?, member_span = ?, member_sizes = ?
       WHERE id = ? AND status = 'pending' AND sha256 = ''`,
    )
    .bind(sha256, stored.storedSize, stored.storedSha256, ...memberColumns(stored), id)
    .run();
  return result.meta.changes > 0;
}
