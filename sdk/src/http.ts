/**
 * The SDK's one way to talk to the relay: web `fetch`, bearer auth, JSON in and out,
 * relay errors as {@link AirlockError}, retries for idempotent GETs. No Node or Workers
 * APIs beyond what both provide.
 */
import { AirlockError, errorFromResponse } from "./errors.js";

/**
 * The `fetch` the SDK calls: the global one by default. Inject another to add logging,
 * a proxy, or to call a relay in the same process (`(url, init) => app.fetch(new Request(url, init), env, ctx)`).
 */
export type FetchLike = (url: string, init: RequestInit) => Promise<Response>;

/** How to reach the relay. */
export interface TransportOptions {
  /** The relay's base URL, e.g. `https://airlock.example.com` (a path prefix is kept). */
  url: string;
  /** Replaces the global `fetch`. */
  fetch?: FetchLike;
  /**
   * How many times a GET is retried after a network error, 429 or 5xx (with exponential
   * backoff and jitter, honouring `Retry-After`). Default 2; `0` turns retries off.
   * Requests that change anything are never retried.
   */
  retries?: number;
}

/** Per-call options every method takes. */
export interface CallOptions {
  /** Aborts the call; the promise then rejects with the signal's reason. */
  signal?: AbortSignal;
}

/** A request body of known length (the relay needs `Content-Length`). */
export interface SizedBody {
  data: Uint8Array | ArrayBuffer | Blob | ReadableStream<Uint8Array>;
  size: number;
  contentType: string;
}

/** One request to the relay. */
export interface Call {
  method: "GET" | "POST" | "DELETE";
  /** Path under the base URL, starting with `/`, segments already encoded. */
  path: string;
  token: string;
  query?: Record<string, string | undefined>;
  json?: unknown;
  body?: SizedBody;
  headers?: Record<string, string>;
  signal?: AbortSignal | undefined;
}

/** Redirects a GET follows at most (an s3 relay sends a download to the store: one). */
const MAX_REDIRECTS = 3;
const REDIRECTS = new Set([301, 302, 303, 307, 308]);

const MAX_BACKOFF_MS = 5_000;
const MAX_RETRY_AFTER_MS = 30_000;

/** Workers' `FixedLengthStream`, when running there: it gives a streamed body its length. */
type FixedLengthStreamClass = new (length: number) => TransformStream<Uint8Array, Uint8Array>;

/** Sends {@link Call}s to one relay. */
export class Transport {
  readonly baseUrl: string;
  readonly retries: number;
  private readonly fetchImpl: FetchLike;

  constructor(options: TransportOptions) {
    let base: URL;
    try {
      base = new URL(options.url);
    } catch {
      throw new TypeError(`Airlock: url is not a valid URL: ${String(options.url)}`);
    }
    if (base.protocol !== "https:" && base.protocol !== "http:")
      throw new TypeError(`Airlock: url must be http(s), not ${base.protocol}`);
    this.baseUrl = `${base.origin}${base.pathname.replace(/\/+$/, "")}`;
    const retries = options.retries ?? 2;
    if (!Number.isInteger(retries) || retries < 0)
      throw new TypeError("Airlock: retries must be a whole number ≥ 0");
    this.retries = retries;
    this.fetchImpl = options.fetch ?? ((url, init) => globalThis.fetch(url, init));
  }

  /** Sends `call` and returns its 2xx response, unread; anything else throws. */
  async send(call: Call): Promise<Response> {
    const url = this.urlOf(call);
    const what = `${call.method} ${call.path}`;
    const retryable = call.method === "GET" && !call.body && call.json === undefined;
    for (let attempt = 0; ; attempt++) {
      let response: Response;
      try {
        response =
          call.method === "GET"
            ? await this.getFollowing(url, call)
            : await this.fetchImpl(url, requestInit(call));
      } catch (error) {
        if (call.signal?.aborted) throw call.signal.reason;
        const failure = networkError(what, error);
        if (!retryable || attempt >= this.retries) throw failure;
        await sleep(backoffMs(attempt), call.signal);
        continue;
      }
      if (response.ok) return response;
      if (retryable && attempt < this.retries && isTransient(response.status)) {
        const delay = retryAfterMs(response) ?? backoffMs(attempt);
        await response.body?.cancel().catch(() => undefined);
        await sleep(delay, call.signal);
        continue;
      }
      throw await errorFromResponse(response, what);
    }
  }

  /** Sends `call` and parses its JSON answer. */
  async json<T>(call: Call): Promise<T> {
    const response = await this.send(call);
    const text = await response.text();
    try {
      return JSON.parse(text) as T;
    } catch (cause) {
      throw new AirlockError({
        status: response.status,
        code: "invalid_response",
        message: `${call.method} ${call.path}: the answer is not JSON`,
        cause,
      });
    }
  }

  /**
   * GETs `url`, following redirects by hand: an s3 relay answers a download with `307` to a
   * short-lived presigned URL of the store. To another origin only `Range` goes along, never
   * the bearer (it is the relay's; a store refuses a presigned URL that also carries one). The
   * answer keeps the relay's ETag, the verified SHA-256 (the store's is not one), or none. A
   * redirect it does not follow (too many, not http(s)) is the answer, and so an error.
   */
  private async getFollowing(url: string, call: Call): Promise<Response> {
    const init: RequestInit = { ...requestInit(call), redirect: "manual" };
    let current = new URL(url);
    let response = await this.fetchImpl(current.href, init);
    const etag = response.headers.get("etag");
    let hops = 0;
    for (; hops < MAX_REDIRECTS && isRedirect(response); hops++) {
      const next = httpUrl(response.headers.get("location")!, current);
      if (!next) break;
      await response.body?.cancel().catch(() => undefined);
      if (next.origin !== current.origin) init.headers = onlyRange(init.headers);
      current = next;
      response = await this.fetchImpl(current.href, init);
    }
    if (hops === 0 || isRedirect(response)) return response;
    const headers = new Headers(response.headers);
    if (etag === null) headers.delete("etag");
    else headers.set("etag", etag);
    const { status, statusText } = response;
    return new Response(response.body, { status, statusText, headers });
  }

  private urlOf(call: Call): string {
    const query = new URLSearchParams();
    for (const [key, value] of Object.entries(call.query ?? {}))
      if (value !== undefined) query.set(key, value);
    const search = query.toString();
    return `${this.baseUrl}${call.path}${search ? `?${search}` : ""}`;
  }
}

/** Encodes one path segment (an id). */
export function segment(value: string): string {
  if (typeof value !== "string" || value === "")
    throw new TypeError("Airlock: an id must be a non-empty string");
  return encodeURIComponent(value);
}

function requestInit(call: Call): RequestInit {
  const headers: Record<string, string> = {
    accept: "application/json",
    ...call.headers,
    authorization: `Bearer ${call.token}`,
  };
  const init: RequestInit & { duplex?: "half" } = { method: call.method, headers };
  if (call.signal) init.signal = call.signal;
  if (call.json !== undefined) {
    headers["content-type"] = "application/json";
    init.body = JSON.stringify(call.json);
  } else if (call.body) {
    const { data, size, contentType } = call.body;
    headers["content-type"] = contentType;
    headers["content-length"] = String(size);
    if (isReadableStream(data)) {
      const FixedLength = (globalThis as { FixedLengthStream?: FixedLengthStreamClass })
        .FixedLengthStream;
      init.body = (FixedLength ? data.pipeThrough(new FixedLength(size)) : data) as BodyInit;
      // Node's fetch refuses a stream body without it; others ignore it.
      init.duplex = "half";
    } else {
      init.body = data as BodyInit;
    }
  }
  return init;
}

/** A web `ReadableStream` (duck-typed: streams from other realms count too). */
export function isReadableStream(value: unknown): value is ReadableStream<Uint8Array> {
  return (
    typeof value === "object" &&
    value !== null &&
    typeof (value as ReadableStream).getReader === "function" &&
    typeof (value as ReadableStream).pipeThrough === "function"
  );
}

function isRedirect(response: Response): boolean {
  return REDIRECTS.has(response.status) && response.headers.has("location");
}

/** `location` resolved against `base`, when that is an http(s) URL. */
function httpUrl(location: string, base: URL): URL | undefined {
  try {
    const url = new URL(location, base);
    return url.protocol === "https:" || url.protocol === "http:" ? url : undefined;
  } catch {
    return undefined;
  }
}

/** What goes along to another origin: the `Range`, nothing else. */
function onlyRange(headers: HeadersInit | undefined): Record<string, string> {
  const range = new Headers(headers).get("range");
  return range === null ? {} : { range };
}

function networkError(what: string, error: unknown): AirlockError {
  // undici says only "fetch failed"; the reason (ECONNREFUSED, a TLS error…) is its cause.
  const inner = (error as { cause?: unknown } | null)?.cause;
  const reason =
    inner instanceof Error ? inner.message : error instanceof Error ? error.message : String(error);
  return new AirlockError({
    status: 0,
    code: "network_error",
    message: `${what}: request failed: ${reason}`,
    cause: error,
  });
}

function isTransient(status: number): boolean {
  return status === 429 || status >= 500;
}

/** Full jitter over an exponential ceiling: 250 ms, 500 ms, 1 s, … up to 5 s. */
function backoffMs(attempt: number): number {
  return Math.random() * Math.min(MAX_BACKOFF_MS, 250 * 2 ** attempt);
}

function retryAfterMs(response: Response): number | undefined {
  const header = response.headers.get("retry-after");
  if (!header) return undefined;
  const seconds = Number(header);
  const ms = Number.isFinite(seconds) ? seconds * 1000 : Date.parse(header) - Date.now();
  if (!Number.isFinite(ms)) return undefined;
  return Math.min(MAX_RETRY_AFTER_MS, Math.max(0, ms));
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
