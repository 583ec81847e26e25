/**
 * The operator's client ({@link AirlockClient}) and the sandbox session's
 * ({@link AirlockSession}). Each sends exactly one credential, fixed when it is made.
 */
import { FileAccess } from "./file-access.js";
import { segment, type CallOptions, type FetchLike } from "./http.js";
import { sizedBody } from "./seed-body.js";
import { AirlockSession, type AirlockSessionOptions } from "./session.js";

export { AirlockSession, type AirlockSessionOptions } from "./session.js";
import type {
  BytesInput,
  CreateSessionOptions,
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

  /**
   * Every session's files (newest first, up to 1000), or one session's with `{ sessionId }`;
   * only one origin's with `{ origin }` (`"sandbox"`: what the agent made, not its inputs).
   */
  async listFiles(options: ListFilesOptions = {}): Promise<FileRecord[]> {
    return this.listFilesWith(options.sessionId, options);
  }
}
