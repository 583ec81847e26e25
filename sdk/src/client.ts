/**
 * The operator's client ({@link AirlockClient}) and the sandbox session's
 * ({@link AirlockSession}). Each sends exactly one credential, fixed when it is made.
 */
import {
  isReadableStream,
  segment,
  Transport,
  type CallOptions,
  type FetchLike,
  type SizedBody,
} from "./http.js";
import type {
  AckedItem,
  BytesInput,
  CreateSessionOptions,
  DeliverOptions,
  DeliveryRecord,
  DownloadOptions,
  FileRecord,
  InboxRecord,
  ListFilesOptions,
  RevokedSession,
  SeedOptions,
  SessionGrant,
  StreamSeedOptions,
} from "./types.js";

/** Options for `new AirlockClient(...)`. */
export interface AirlockClientOptions {
  /** The relay's base URL, e.g. `https://airlock.example.com`. */
  url: string;
  /** The operator's `AIRLOCK_ADMIN_TOKEN`: needed for every {@link AirlockClient} method. */
  adminToken?: string;
  /** A session token: the default for {@link AirlockClient.asSession}. Never sent by the operator's calls. */
  token?: string;
  /** Replaces the global `fetch` (see {@link FetchLike}). */
  fetch?: FetchLike;
  /** Retries for GETs after a network error, 429 or 5xx. Default 2; `0` for none. */
  retries?: number;
}

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

/** What both clients can do with the files they may see. */
abstract class FileAccess {
  /** @internal */
  protected readonly transport: Transport;

  protected constructor(
    options: { url: string; fetch?: FetchLike | undefined; retries?: number | undefined },
    /** The one credential this client sends. */
    protected readonly credential: () => string,
  ) {
    this.transport = new Transport({
      url: options.url,
      ...(options.fetch ? { fetch: options.fetch } : {}),
      ...(options.retries !== undefined ? { retries: options.retries } : {}),
    });
  }

  /** The relay's base URL, without a trailing slash. */
  get url(): string {
    return this.transport.baseUrl;
  }

  /** One file's record, with a fresh share link (`url`). `404 file_not_found` if not visible. */
  async getFile(fileId: string, options: CallOptions = {}): Promise<FileRecord> {
    return this.transport.json<FileRecord>({
      method: "GET",
      path: `/v1/files/${segment(fileId)}`,
      token: this.credential(),
      signal: options.signal,
    });
  }

  /**
   * The file's original bytes, as a streaming `Response` (read `.body`, or `.arrayBuffer()`
   * for small files). Its `Content-Length` is the file's size and its `ETag` the quoted SHA-256.
   */
  async download(fileId: string, options: DownloadOptions = {}): Promise<Response> {
    const headers: Record<string, string> = { accept: "*/*" };
    if (options.range) {
      const { start, end } = options.range;
      headers.range = `bytes=${start}-${end ?? ""}`;
    }
    return this.transport.send({
      method: "GET",
      path: `/v1/files/${segment(fileId)}/content`,
      token: this.credential(),
      headers,
      signal: options.signal,
    });
  }

  /** Every delivery of the file to a chat, delivered and failed. */
  async listDeliveries(fileId: string, options: CallOptions = {}): Promise<DeliveryRecord[]> {
    const answer = await this.transport.json<{ deliveries: DeliveryRecord[] }>({
      method: "GET",
      path: `/v1/files/${segment(fileId)}/deliveries`,
      token: this.credential(),
      signal: options.signal,
    });
    return answer.deliveries;
  }

  /** @internal */
  protected async listFilesWith(
    sessionId: string | undefined,
    options: CallOptions,
  ): Promise<FileRecord[]> {
    const answer = await this.transport.json<{ files: FileRecord[] }>({
      method: "GET",
      path: "/v1/files",
      token: this.credential(),
      query: { sessionId },
      signal: options.signal,
    });
    return answer.files;
  }
}

/**
 * The operator's client: mints and revokes sessions, seeds their inboxes, and reads every
 * session's files and deliveries. Every call sends the `adminToken`. For what only a
 * sandbox may do (its inbox, deliveries to chats) use {@link AirlockClient.asSession}.
 *
 * In Node, import from the `/node` entry for file-path helpers
 * (`seedInbox(sessionId, "/path")`, `downloadToFile`).
 */
export class AirlockClient extends FileAccess {
  /** Kept private (`#`), so tokens do not show when the client is logged or serialised. */
  readonly #options: AirlockClientOptions;

  constructor(options: AirlockClientOptions) {
    super(options, () => {
      if (!options.adminToken)
        throw new TypeError(
          "Airlock: this is an operator call and the client has no adminToken; " +
            "for a session's calls use client.asSession(token)",
        );
      return options.adminToken;
    });
    this.#options = { ...options };
  }

  /**
   * A client that acts as a sandbox session: same relay, `fetch` and retries, sending
   * `token` (default: the `token` this client was made with).
   */
  asSession(token?: string): AirlockSession {
    return new AirlockSession(this.sessionOptions(token));
  }

  /** @internal */
  protected sessionOptions(token: string | undefined): AirlockSessionOptions {
    const chosen = token ?? this.#options.token;
    if (!chosen) throw new TypeError("Airlock: asSession needs a session token");
    return {
      url: this.#options.url,
      token: chosen,
      ...(this.#options.fetch ? { fetch: this.#options.fetch } : {}),
      ...(this.#options.retries !== undefined ? { retries: this.#options.retries } : {}),
    };
  }

  /** Mints a sandbox session. The answer's `token` is what the sandbox gets as `AIRLOCK_TOKEN`. */
  async createSession(options: CreateSessionOptions = {}): Promise<SessionGrant> {
    const { signal, ...body } = options;
    return this.transport.json<SessionGrant>({
      method: "POST",
      path: "/v1/sessions",
      token: this.credential(),
      json: body,
      signal,
    });
  }

  /** Revokes a session: its token stops working at once (`401 session_revoked`). */
  async revokeSession(sessionId: string, options: CallOptions = {}): Promise<RevokedSession> {
    return this.transport.json<RevokedSession>({
      method: "DELETE",
      path: `/v1/sessions/${segment(sessionId)}`,
      token: this.credential(),
      signal: options.signal,
    });
  }

  /**
   * Puts a file into a session's inbox before (or while) its agent runs; the sandbox gets it
   * with `airlock pull` (`GET /v1/inbox`). The bytes are streamed to the relay, never
   * buffered by the SDK: a `ReadableStream` needs its exact `size` up front.
   */
  seedInbox(sessionId: string, input: BytesInput, options: SeedOptions): Promise<InboxRecord>;
  seedInbox(
    sessionId: string,
    input: ReadableStream<Uint8Array>,
    options: StreamSeedOptions,
  ): Promise<InboxRecord>;
  async seedInbox(
    sessionId: string,
    input: BytesInput | ReadableStream<Uint8Array>,
    options: SeedOptions & { size?: number },
  ): Promise<InboxRecord> {
    if (!options || typeof options.name !== "string" || options.name === "")
      throw new TypeError("Airlock: seedInbox needs options.name");
    return this.transport.json<InboxRecord>({
      method: "POST",
      path: `/v1/sessions/${segment(sessionId)}/inbox`,
      token: this.credential(),
      query: { name: options.name },
      body: sizedBody(input, options),
      signal: options.signal,
    });
  }

  /** Every session's files (newest first, up to 1000), or one session's with `{ sessionId }`. */
  async listFiles(options: ListFilesOptions = {}): Promise<FileRecord[]> {
    return this.listFilesWith(options.sessionId, options);
  }
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

  /** The session's own files, newest first. */
  async listFiles(options: CallOptions = {}): Promise<FileRecord[]> {
    return this.listFilesWith(undefined, options);
  }

  /**
   * Sends one of the session's files to a chat bound to the session. Refusals:
   * `403 destination_not_allowed`, `503 platform_not_configured`, `502 delivery_failed`,
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

/** The body of a seed: its length from the bytes, or from `size` for a stream. */
function sizedBody(
  input: BytesInput | ReadableStream<Uint8Array>,
  options: { contentType?: string; size?: number },
): SizedBody {
  const declared = options.contentType;
  if (isReadableStream(input)) {
    const { size } = options;
    if (typeof size !== "number" || !Number.isSafeInteger(size) || size < 0)
      throw new TypeError("Airlock: a ReadableStream needs options.size, its exact length");
    return { data: input, size, contentType: declared ?? "application/octet-stream" };
  }
  if (ArrayBuffer.isView(input)) {
    const bytes = new Uint8Array(input.buffer, input.byteOffset, input.byteLength);
    return {
      data: bytes,
      size: bytes.byteLength,
      contentType: declared ?? "application/octet-stream",
    };
  }
  if (Object.prototype.toString.call(input) === "[object ArrayBuffer]") {
    const buffer = input as ArrayBuffer;
    return {
      data: buffer,
      size: buffer.byteLength,
      contentType: declared ?? "application/octet-stream",
    };
  }
  if (isBlob(input)) {
    return {
      data: input,
      size: input.size,
      contentType: declared ?? (input.type || "application/octet-stream"),
    };
  }
  throw new TypeError(
    "Airlock: seedInbox takes a Uint8Array, ArrayBuffer, Blob or ReadableStream" +
      " (or, from the /node entry, a file path)",
  );
}

function isBlob(value: unknown): value is Blob {
  return (
    typeof value === "object" &&
    value !== null &&
    typeof (value as Blob).size === "number" &&
    typeof (value as Blob).stream === "function" &&
    typeof (value as Blob).arrayBuffer === "function"
  );
}
