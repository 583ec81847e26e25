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
  /** Until when the attempt `sending` it holds it (renewed while it sends); null: lapsed. */
  leaseUntil?: number | null;
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
  lease_until: number | null;
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
    leaseUntil: row.lease_until,
  };
}

/**
 * Records a delivery as sending, held until its `leaseUntil` (`createdAt` is now). With an idempotency key the session
 * already used, nothing is inserted and the earlier delivery is returned instead — unless that
 * one failed, or its attempt stopped renewing its lease (the relay crashed mid-send) before a
 * message id was recorded, and it was of the same file to the same destination: then it is
 * claimed again for a new attempt. (The caller refuses an earlier delivery of another file or
 * to another destination.) A delivery with a message id recorded is never claimed again.
 */
export async function claimDelivery(
  db: D1Database,
  delivery: Delivery,
): Promise<{ claimed: boolean; delivery: Delivery }> {
  const now = delivery.createdAt;
  const leaseUntil = delivery.leaseUntil ?? now;
  const result = await db
    .prepare(
      `INSERT INTO deliveries (id, session_id, file_id, destination, mode, method, status, idempotency_key, created_at, lease_until)
       VALUES (?, ?, ?, ?, ?, ?, 'sending', ?, ?, ?)
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
      leaseUntil,
    )
    .run();
  if (result.meta.changes > 0) return { claimed: true, delivery: { ...delivery, leaseUntil } };
  const retried = await db
    .prepare(
      `UPDATE deliveries SET status = 'sending', error = NULL, mode = ?, method = ?, uploaded_bytes = 0,
         finished_at = NULL, lease_until = ?
       WHERE session_id = ? AND idempotency_key = ? AND file_id = ? AND destination = ?
         AND (status = 'failed' OR (status = 'sending' AND platform_message_id IS NULL
                                    AND COALESCE(lease_until, 0) <= ?))
       RETURNING *`,
    )
    .bind(
      delivery.mode,
      delivery.method,
      leaseUntil,
      delivery.sessionId,
      delivery.idempotencyKey,
      delivery.fileId,
      delivery.destination,
      now,
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

/** Moves a delivery's lease out while its attempt is still sending. */
export async function renewDeliveryLease(
  db: D1Database,
  id: string,
  leaseUntil: number,
): Promise<void> {
  await db
    .prepare(
      "UPDATE deliveries SET lease_until = MAX(COALESCE(lease_until, 0), ?) WHERE id = ? AND status = 'sending'",
    )
    .bind(leaseUntil, id)
    .run();
}

/**
 * Settles deliveries left `sending` by an attempt that stopped renewing its lease before `now`
 * (the relay crashed or was cut off mid-send) as failed, with `reason`, so that the sandbox
 * sees why and may deliver again. One conditional statement per batch; returns their ids.
 */
export async function failStaleDeliveries(
  db: D1Database,
  now: number,
  reason: string,
  limit: number,
): Promise<string[]> {
  const { results } = await db
    .prepare(
      `UPDATE deliveries SET status = 'failed', error = ?2, finished_at = ?1
       WHERE status = 'sending' AND platform_message_id IS NULL AND COALESCE(lease_until, 0) <= ?1
         AND id IN (SELECT id FROM deliveries
                    WHERE status = 'sending' AND platform_message_id IS NULL
                      AND COALESCE(lease_until, 0) <= ?1
                    LIMIT ?3)
       RETURNING id`,
    )
    .bind(now, reason, limit)
    .all<{ id: string }>();
  return results.map((row) => row.id);
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
