/**
 * The shapes the SDK takes and returns. The relay's own answers come from the relay's wire
 * types (src/wire-types.ts), so the SDK and the relay cannot drift apart.
 */
import type { FileRecord, InboxRecord } from "../../src/wire-types.js";
import type { CallOptions } from "./http.js";

export type {
  DeliveryRecord,
  FileRecord,
  InboxRecord,
  PutInstructions,
  UploadAnswer,
} from "../../src/wire-types.js";

/** Options for {@link AirlockClient.createSession}; omitted fields take the relay's defaults. */
export interface CreateSessionOptions extends CallOptions {
  /**
   * Chats the session may deliver to and receive attachments from:
   * `telegram:<chatId>`, `discord:<channelId>`, `slack:<channelId>`.
   */
  destinations?: string[];
  /** Byte quota for everything the session uploads (default: the relay's `SESSION_QUOTA_BYTES`). */
  quotaBytes?: number;
  /** Lifetime in seconds (default: the relay's `SESSION_TTL_SECONDS`; at most 30 days). */
  ttlSeconds?: number;
  /**
   * The end user the session works for (printable ASCII, e.g. your user id). Sessions with
   * the same owner share dedup: content one of them holds is not uploaded again by another.
   * Without it, a session dedups only against its own files.
   */
  owner?: string;
}

/** A minted session: hand `token` (with the relay URL) to the sandbox as `AIRLOCK_TOKEN`. */
export interface SessionGrant {
  sessionId: string;
  /** The session's bearer token. A secret: give it to the sandbox only. */
  token: string;
  /** ISO 8601. */
  expiresAt: string;
  destinations: string[];
  quotaBytes: number;
  /** Present when the session was minted with an owner. */
  owner?: string;
}

/** The answer to {@link AirlockClient.revokeSession}. */
export interface RevokedSession {
  sessionId: string;
  /** ISO 8601. */
  revokedAt: string;
}

/** The answer to {@link AirlockSession.ack}. */
export interface AckedItem {
  itemId: string;
  /** ISO 8601. */
  ackedAt: string;
}

/** Bytes the SDK can upload as they are: their length is known. */
export type BytesInput = Uint8Array | ArrayBuffer | Blob;

/** Options for {@link AirlockClient.seedInbox}. */
export interface SeedOptions extends CallOptions {
  /** The file name the sandbox sees (no `/`, `\`, NUL or control characters; ≤ 255 bytes). */
  name: string;
  /** MIME type; default: a `Blob`'s own type, else `application/octet-stream`. */
  contentType?: string;
}

/** Options for seeding from a `ReadableStream`, whose length the relay must be told up front. */
export interface StreamSeedOptions extends SeedOptions {
  /** Exactly how many bytes the stream yields. */
  size: number;
}

/** What a seeded inbox item is: the relay's {@link InboxRecord} (`source: "operator"`). */
export type SeededItem = InboxRecord;

/**
 * Where a file came from: `sandbox` (what the agent sent), `seed` (the operator's seed),
 * `chat:<platform>` (a person's attachment in a chat), `upload-link` (a person's upload
 * through an `airlock request` link).
 */
export type FileOrigin = FileRecord["origin"];

/** Options for listing a session's own files. */
export interface SessionListFilesOptions extends CallOptions {
  /** Only files of this origin, e.g. `"sandbox"`: what the agent made, not its inputs. */
  origin?: FileOrigin;
}

/** Options for listing files as the operator. */
export interface ListFilesOptions extends SessionListFilesOptions {
  /** Only this session's files. */
  sessionId?: string;
}

/** Options for {@link AirlockSession.deliver}. */
export interface DeliverOptions extends CallOptions {
  /** `telegram:<chatId>`, `discord:<channelId>` or `slack:<channelId>`, bound to the session. */
  to: string;
  caption?: string;
  /**
   * Up to 200 characters. Delivering again with the same key (same session) returns the
   * first delivery instead of posting twice: use it when retrying a delivery yourself.
   */
  idempotencyKey?: string;
}

/** Options for {@link AirlockClient.download} / {@link AirlockSession.download}. */
export interface DownloadOptions extends CallOptions {
  /** Only these bytes (inclusive, as in HTTP `Range: bytes=start-end`); the answer is then 206. */
  range?: { start: number; end?: number };
}
