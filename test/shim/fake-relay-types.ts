import type http from "node:http";
import type { DeliveryRecord, FileRecord, InboxRecord as InboxItem } from "../../src/wire-types";

/** The types of the fake relay (fake-relay.ts), apart so its modules can share them. */

/** One request as the fake relay received it. */
export interface Call {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  /** The body parsed as JSON, when it was JSON. */
  json?: unknown;
}

/** An answer the fake relay gives instead of the normal one. */
export interface Refusal {
  status: number;
  code?: string;
  message?: string;
  headers?: Record<string, string>;
}

/** How `GET /v1/files/:id/content` serves a file. */
export interface ContentOverride {
  /** Bytes to send instead of the file's own. */
  body?: Buffer;
  /** The ETag's SHA-256, or null for no ETag (default: the file's SHA-256). */
  etag?: string | null;
  /** Cut the connection after sending this many bytes. */
  cutAfter?: number;
  /** Answer with an error instead. */
  refuse?: Refusal;
  /** Extra (or replacing) response headers, e.g. a huge Content-Disposition. */
  headers?: Record<string, string>;
}

/**
 * Decides a delivery's answer: a refusal, or a record with the given mode and method (and an
 * error, for a failed attempt recorded under its key, as the relay returns it when asked again).
 * `attempt` counts the requests with this Idempotency-Key before this one.
 */
export type DeliveryRule = (
  to: string,
  attempt: number,
) => Refusal | { mode: "native" | "link"; method: string; error?: string } | undefined;

/** A multipart upload as the fake relay (and its store) holds it. */
export interface FakeMultipartUpload {
  uploadId: string;
  name: string;
  size: number;
  sha256: string;
  contentType: string;
  encoding: string;
  storedSize: number;
  storedSha256: string;
  partSize: number;
  partSha256: string[];
  /** Parts the store holds, by number. */
  held: Map<number, Buffer>;
  /** Set once completed. */
  file?: FileRecord;
}

/** One part PUT as it ended. */
export interface PartPut {
  uploadId: string;
  partNumber: number;
  /** Body bytes received. */
  bytes: number;
  /** The answer's status; 0 when the client went away first (or the part was stalled). */
  status: number;
}

/** What the fake store saw of multipart uploads. */
export interface PartStats {
  /** Body bytes of every part PUT received, whole or cut short, failed or not. */
  bytesReceived: number;
  /** Part PUTs, in the order they ended. */
  puts: PartPut[];
  /** Part PUTs in flight right now, and the most there ever were at once. */
  inFlight: number;
  maxInFlight: number;
}

export interface FakeRelay {
  url: string;
  calls: Call[];
  /** Files by id, with their bytes. */
  files: Map<string, FileRecord & { bytes: Buffer }>;
  /** Items still in the inbox, by id. */
  inbox: Map<string, InboxItem>;
  /** Item ids acknowledged, in order. */
  acked: string[];
  /** Deliveries made, one per Idempotency-Key (or per request without one). */
  deliveries: DeliveryRecord[];
  /** Puts a file in the inbox (served as `content` says, if given); returns the item. */
  addInboxItem(name: string, bytes: Buffer, options?: { content?: ContentOverride }): InboxItem;
  /** Replaces how deliveries are answered (default: native `sendDocument`). */
  setDeliveryRule(rule: DeliveryRule): void;
  /** Runs before each answer, with the request: a test can look at the disk at that moment. */
  onCall(hook: ((call: Call) => void) | undefined): void;
  /** Requests of `METHOD /path` form, in order. */
  routes(): string[];
  /** Multipart uploads by id. */
  multipart: Map<string, FakeMultipartUpload>;
  /** What the store saw of part PUTs. */
  parts: PartStats;
  /** The next `times` PUTs of part `partNumber` (of any upload) are answered `status` (503). */
  failPart(partNumber: number, times: number, status?: number): void;
  /** PUTs of part `partNumber` are read but never answered (until `stalled` is false). */
  stallPart(partNumber: number, stalled?: boolean): void;
  /** Runs after each chunk of a part PUT's body arrives, with `parts.bytesReceived`. */
  onPartBytes(hook: ((total: number) => void) | undefined): void;
  /** Forgets an upload: `GET /v1/uploads/:id` answers 404 upload_not_found. */
  forgetUpload(uploadId: string): void;
  /** Drops a part the store held, as if it had lost it (complete then finds it missing). */
  dropPart(uploadId: string, partNumber: number): void;
  stop(): Promise<void>;
}

/** How the fake relay listens: plain http, or https with this key and certificate. */
export interface FakeRelayOptions {
  tls?: { key: string; cert: string };
}
