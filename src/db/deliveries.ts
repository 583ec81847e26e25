/** One attempt to deliver a file to a chat, and how it ended. */
export interface Delivery {
  id: string;
  sessionId: string;
  fileId: string;
  destination: string;
  mode: "native" | "link";
  method: string;
  status: "sending" | "delivered" | "failed";
  platformMessageId: string | null;
  error: string | null;
  idempotencyKey: string | null;
  /** Bytes of the file sent to the platform: 0 for a link or a re-send by the platform's handle. */
  uploadedBytes: number;
  createdAt: number;
  finishedAt: number | null;
}

interface DeliveryRow {
  id: string;
  session_id: string;
  file_id: string;
  destination: string;
  mode: Delivery["mode"];
  method: string;
  status: Delivery["status"];
  platform_message_id: string | null;
  error: string | null;
  idempotency_key: string | null;
  uploaded_bytes: number | null;
  created_at: number;
  finished_at: number | null;
}

function toDelivery(row: DeliveryRow): Delivery {
  return {
    id: row.id,
    sessionId: row.session_id,
    fileId: row.file_id,
    destination: row.destination,
    mode: row.mode,
    method: row.method,
    status: row.status,
    platformMessageId: row.platform_message_id,
    error: row.error,
    idempotencyKey: row.idempotency_key,
    uploadedBytes: row.uploaded_bytes ?? 0,
    createdAt: row.created_at,
    finishedAt: row.finished_at,
  };
}

/**
 * Records a delivery as sending. With an idempotency key the session already used,
 * nothing is inserted and the earlier delivery is returned instead — unless that one
 * failed and was of the same file to the same destination, in which case it is claimed
 * again for a new attempt. (The caller refuses an earlier delivery of another file or to
 * another destination.)
 */
export async function claimDelivery(
  db: D1Database,
  delivery: Delivery,
): Promise<{ claimed: boolean; delivery: Delivery }> {
  const result = await db
    .prepare(
      `INSERT INTO deliveries (id, session_id, file_id, destination, mode, method, status, idempotency_key, created_at)
       VALUES (?, ?, ?, ?, ?, ?, 'sending', ?, ?)
       ON CONFLICT (session_id, idempotency_key) DO NOTHING`,
    )
    .bind(
      delivery.id,
      delivery.sessionId,
      delivery.fileId,
      delivery.destination,
      delivery.mode,
      delivery.method,
      delivery.idempotencyKey,
      delivery.createdAt,
    )
    .run();
  if (result.meta.changes > 0) return { claimed: true, delivery };
  const retried = await db
    .prepare(
      `UPDATE deliveries SET status = 'sending', error = NULL, mode = ?, method = ?, uploaded_bytes = 0, finished_at = NULL
       WHERE session_id = ? AND idempotency_key = ? AND status = 'failed' AND file_id = ? AND destination = ?
       RETURNING *`,
    )
    .bind(
      delivery.mode,
      delivery.method,
      delivery.sessionId,
      delivery.idempotencyKey,
      delivery.fileId,
      delivery.destination,
    )
    .first<DeliveryRow>();
  if (retried) return { claimed: true, delivery: toDelivery(retried) };
  const earlier = await db
    .prepare("SELECT * FROM deliveries WHERE session_id = ? AND idempotency_key = ?")
    .bind(delivery.sessionId, delivery.idempotencyKey)
    .first<DeliveryRow>();
  if (!earlier) throw new Error("idempotency conflict without an earlier delivery");
  return { claimed: false, delivery: toDelivery(earlier) };
}

export async function finishDelivery(
  db: D1Database,
  id: string,
  outcome: {
    status: "delivered" | "failed";
    /** The platform method that succeeded (e.g. `sendDocument`), replacing the planned kind. */
    method?: string;
    platformMessageId?: string;
    error?: string;
    /** Bytes of the file sent to the platform in this attempt. */
    uploadedBytes?: number;
  },
  now: number,
): Promise<void> {
  await db
    .prepare(
      `UPDATE deliveries SET status = ?, method = COALESCE(?, method), platform_message_id = ?, error = ?,
       uploaded_bytes = ?, finished_at = ? WHERE id = ?`,
    )
    .bind(
      outcome.status,
      outcome.method ?? null,
      outcome.platformMessageId ?? null,
      outcome.error ?? null,
      outcome.uploadedBytes ?? 0,
      now,
      id,
    )
    .run();
}

export async function findDelivery(db: D1Database, id: string): Promise<Delivery | null> {
  const row = await db
    .prepare("SELECT * FROM deliveries WHERE id = ?")
    .bind(id)
    .first<DeliveryRow>();
  return row ? toDelivery(row) : null;
}

export async function listDeliveries(db: D1Database, fileId: string): Promise<Delivery[]> {
  const { results } = await db
    .prepare("SELECT * FROM deliveries WHERE file_id = ? ORDER BY created_at")
    .bind(fileId)
    .all<DeliveryRow>();
  return results.map(toDelivery);
}
