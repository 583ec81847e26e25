import { FileAccess } from "./file-access.js";
import { segment, type CallOptions, type FetchLike } from "./http.js";
import type {
  AckedItem,
  DeliverOptions,
  DeliveryRecord,
  FileRecord,
  InboxRecord,
  SessionListFilesOptions,
} from "./types.js";

/** Options for `new AirlockSession(...)`. */
export interface AirlockSessionOptions {
  /** The relay's base URL. */
  url: string;
  /** The session token (`AIRLOCK_TOKEN` in the sandbox). */
  token: string;
  /** Replaces the global `fetch`. */
  fetch?: FetchLike;
  /** Retries for GETs after a network error, 429 or 5xx. Default 2; `0` for none. */
  retries?: number;
}

/** Where an upload link (`airlock request`) stands: `GET` or `DELETE /v1/requests/:id`. */
export interface UploadRequestState {
  requestId: string;
  status: "open" | "received" | "expired" | "cancelled";
  name: string | null;
  maxBytes: number;
  expiresAt: string;
  fileId?: string;
  receivedAt?: string;
}

/**
 * A sandbox session's client: what the shim does, for host code that acts for a session.
 * Every call sends the session token.
 */
export class AirlockSession extends FileAccess {
  constructor(options: AirlockSessionOptions) {
    if (!options?.token) throw new TypeError("Airlock: AirlockSession needs a token");
    super(options, () => options.token);
  }

  /** The session's inbox: files people and the operator sent it, oldest first, ready to download. */
  async inbox(options: CallOptions = {}): Promise<InboxRecord[]> {
    const answer = await this.transport.json<{ items: InboxRecord[] }>({
      method: "GET",
      path: "/v1/inbox",
      token: this.credential(),
      signal: options.signal,
    });
    return answer.items;
  }

  /** Takes an item out of the inbox (after its file is safely stored). Acking twice is fine. */
  async ack(itemId: string, options: CallOptions = {}): Promise<AckedItem> {
    return this.transport.json<AckedItem>({
      method: "POST",
      path: `/v1/inbox/${segment(itemId)}/ack`,
      token: this.credential(),
      signal: options.signal,
    });
  }

  /** The session's own files, newest first; only one origin's with `{ origin }`. */
  async listFiles(options: SessionListFilesOptions = {}): Promise<FileRecord[]> {
    return this.listFilesWith(undefined, options);
  }

  /**
   * Takes an upload link back (`DELETE /v1/requests/:id`): it stops working at once and the
   * upload under way through it is given up, its room in the quota free again. Answers the
   * request's state (`status: "cancelled"`); cancelling twice answers the same. Refusals:
   * `404 not_found`, `409 upload_already_completed` (a file already came through it).
   */
  async cancelUploadRequest(
    requestId: string,
    options: CallOptions = {},
  ): Promise<UploadRequestState> {
    return this.transport.json<UploadRequestState>({
      method: "DELETE",
      path: `/v1/requests/${segment(requestId)}`,
      token: this.credential(),
      signal: options.signal,
    });
  }

  /**
   * Sends one of the session's files to a chat bound to the session. Refusals:
   * `403 destination_not_allowed`, `400 platform_not_configured`, `502 delivery_failed`,
   * `409 delivery_in_progress`. Never retried by the SDK.
   */
  async deliver(fileId: string, options: DeliverOptions): Promise<DeliveryRecord> {
    const { signal, idempotencyKey, to, caption } = options;
    return this.transport.json<DeliveryRecord>({
      method: "POST",
      path: `/v1/files/${segment(fileId)}/deliveries`,
      token: this.credential(),
      json: caption === undefined ? { to } : { to, caption },
      headers: idempotencyKey === undefined ? {} : { "idempotency-key": idempotencyKey },
      signal,
    });
  }
}
