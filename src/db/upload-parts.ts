/** A part a store holds for a multipart upload. */
export interface StoredPart {
  partNumber: number;
  size: number;
  etag: string;
  /** Hex SHA-256 as the store verified it, when the store reports one. */
  sha256Hex?: string;
}

/**
 * The parts of multipart uploads the relay itself streamed into a store that cannot list
 * them (the R2 binding). A row is written only after the part's SHA-256 matched.
 */
export class UploadPartLedger {
  constructor(private readonly db: D1Database) {}

  async record(uploadId: string, part: StoredPart, now: number): Promise<void> {
    await this.db
      .prepare(
        `INSERT INTO upload_parts (upload_id, part_number, size, etag, uploaded_at)
         VALUES (?1, ?2, ?3, ?4, ?5)
         ON CONFLICT (upload_id, part_number) DO UPDATE
           SET size = excluded.size, etag = excluded.etag, uploaded_at = excluded.uploaded_at`,
      )
      .bind(uploadId, part.partNumber, part.size, part.etag, now)
      .run();
  }

  /** Forgets a part whose stored bytes were just replaced by a body that did not match. */
  async forget(uploadId: string, partNumber: number): Promise<void> {
    await this.db
      .prepare("DELETE FROM upload_parts WHERE upload_id = ? AND part_number = ?")
      .bind(uploadId, partNumber)
      .run();
  }

  async list(uploadId: string): Promise<StoredPart[]> {
    const { results } = await this.db
      .prepare(
        "SELECT part_number, size, etag FROM upload_parts WHERE upload_id = ? ORDER BY part_number",
      )
      .bind(uploadId)
      .all<{ part_number: number; size: number; etag: string }>();
    return results.map((row) => ({ partNumber: row.part_number, size: row.size, etag: row.etag }));
  }

  async clear(uploadId: string): Promise<void> {
    await this.db.prepare("DELETE FROM upload_parts WHERE upload_id = ?").bind(uploadId).run();
  }
}
