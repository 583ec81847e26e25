import * as http from "node:http";
import { finished, type Readable } from "node:stream";
import {
  CliError,
  NetworkError,
  RefusalError,
  RetryableStatusError,
  errorCode,
} from "../cli/errors.js";
import { cancelSignal } from "../cli/tool-call.js";
import { USER_AGENT } from "../cli/version.js";
import { earlyAgent, https } from "./early-connect.js";
import { adoptBody, socketBodyAgent } from "./socket-body.js";

/** A socket idle this long (no bytes either way) is given up as timed out. */
const IDLE_TIMEOUT_MS = 60_000;
/**
 * The most response header bytes taken (Node's default is 16 KiB). Above Node's default so
 * that a long Content-Disposition still parses; an answer over it fails that request alone.
 */
export const MAX_HEADER_BYTES = 256 * 1024;
/** The most of an error body the shim reads to explain a refusal. */
const MAX_TEXT_BYTES = 64 * 1024;
/**
 * The most of a relay's JSON answer the shim reads: a multipart declaration of a large file
 * on s3 carries a signed URL per part (about 700 bytes each, 90 KB for 1 GiB).
 */
export const MAX_JSON_BYTES = 16 * 1024 * 1024;

/** One HTTP request. `body` is a buffer, or a stream whose length is in the headers. */
export interface HttpRequest {
  method: string;
  url: string;
  headers?: Record<string, string>;
  body?: Buffer | Readable;
  /** Aborting it drops the request (and its response), rejecting with a `NetworkError`. */
  signal?: AbortSignal;
  /**
   * Over plain http, a plain body of the answer may be taken straight off the socket: read it
   * with `socketBody(res)` (see `adoptBody`), not as a stream.
   */
  direct?: boolean;
}

/**
 * Sends a request over node:http/https (not fetch, so that Content-Length and streaming stay in
 * our hands) and resolves with the response once its head arrives. Connection failures reject with
 * a `NetworkError`; a failing body stream rejects with its own error.
 */
export function request(req: HttpRequest): Promise<http.IncomingMessage> {
  const url = new URL(req.url);
  const client = url.protocol === "https:" ? https() : http;
  const headers = { "user-agent": USER_AGENT, ...req.headers };
  return new Promise((resolve, reject) => {
    // Under an MCP tool call, its cancel may cut the request off (or refuse to start it).
    const signal = cancelSignal(req.method, req.signal);
    let settled = false;
    const settle = (fn: () => void) => {
      if (!settled) {
        settled = true;
        fn();
      }
    };
    const direct = req.direct === true && client === http;
    const out = client.request(url, {
      method: req.method,
      headers,
      timeout: IDLE_TIMEOUT_MS,
      signal,
      maxHeaderSize: MAX_HEADER_BYTES,
      agent: direct ? socketBodyAgent() : earlyAgent(url),
    });
    out.on("timeout", () =>
      out.destroy(Object.assign(new Error("timed out"), { code: "ETIMEDOUT" })),
    );
    out.on("error", (err) => settle(() => reject(requestError(err, url))));
    // The idle timeout keeps watching the socket while the caller reads the response.
    out.on("response", (res) => {
      if (direct) adoptBody(res, out); // Now, before node:http reads any of the body.
      settle(() => resolve(res));
    });

    const body = req.body;
    if (body === undefined || Buffer.isBuffer(body)) {
      out.end(body);
      return;
    }
    // The body's own failure (a file changed or unreadable) wins over the socket error it causes.
    body.on("error", (err) => {
      settle(() => reject(err));
      out.destroy();
    });
    out.on("error", () => body.destroy());
    body.pipe(out);
  });
}

/**
 * A request's failure: an answer whose headers are too large is that answer's fault, not the
 * connection's (no retry, and no sign that the server is unreachable); anything else is a
 * `NetworkError`.
 */
function requestError(err: unknown, url: URL): Error {
  if (errorCode(err) === "HPE_HEADER_OVERFLOW") {
    return new CliError(
      `${url.origin} answered with headers over ${MAX_HEADER_BYTES / 1024} KiB; not read`,
    );
  }
  return new NetworkError(err);
}

/**
 * Reads a (small) response body as text, keeping at most the first `maxBytes` (64 KiB). Read
 * through events, not an async iterator, which costs a start-up send a few milliseconds.
 */
export function readText(res: http.IncomingMessage, maxBytes = MAX_TEXT_BYTES): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let kept = 0;
    res.on("data", (chunk: Buffer) => {
      if (kept < maxBytes) {
        chunks.push(chunk);
        kept += chunk.length;
      }
    });
    finished(res, (err) => {
      if (err) reject(new NetworkError(err));
      else resolve(Buffer.concat(chunks).subarray(0, maxBytes).toString("utf8"));
    });
  });
}

/** The code and message of an error body: the relay's `{ error: { code, message } }` or S3's XML. */
interface ErrorBody {
  code?: string;
  message?: string;
}

/** Reads the relay's `{ error: { code, message } }` or S3's XML `<Code>`/`<Message>`. */
function parseErrorBody(text: string): ErrorBody {
  try {
    const parsed = JSON.parse(text) as { error?: { code?: unknown; message?: unknown } };
    const { code, message } = parsed.error ?? {};
    if (typeof code === "string") {
      return typeof message === "string" ? { code, message } : { code };
    }
  } catch {
    // Not JSON: try S3's XML below.
  }
  const code = /<Code>([^<]*)<\/Code>/.exec(text)?.[1];
  const message = /<Message>([^<]*)<\/Message>/.exec(text)?.[1];
  return code ? { code, message } : {};
}

/** Explains an error response in one phrase: `code: message`, the code alone, or the bare status. */
function describe(status: number, { code, message }: ErrorBody): string {
  if (code) return message ? `${code}: ${message}` : code;
  return `HTTP ${status} ${http.STATUS_CODES[status] ?? ""}`.trim();
}

/**
 * The error for a response that is not a success: a `RetryableStatusError` when `retryable` says
 * so (by default for 429 and 5xx), else a `RefusalError` whose message is `<refused>: <detail>`.
 */
export function statusError(
  res: http.IncomingMessage,
  text: string,
  refused: string,
  retryable: (status: number, code: string | undefined) => boolean = isRetryableStatus,
): Error {
  const status = res.statusCode ?? 0;
  const body = parseErrorBody(text);
  const detail = describe(status, body);
  if (retryable(status, body.code)) {
    return new RetryableStatusError(status, detail, retryAfterMs(res));
  }
  return new RefusalError(`${refused}: ${detail}`, status, detail, body);
}

/** The delay a `Retry-After` header asks for, when it gives seconds. */
export function retryAfterMs(res: http.IncomingMessage): number | undefined {
  const header = res.headers["retry-after"];
  const seconds = header === undefined ? NaN : Number(header);
  return Number.isFinite(seconds) && seconds >= 0 ? seconds * 1000 : undefined;
}

/** Whether a status is worth another try: rate-limited or a server-side failure. */
export function isRetryableStatus(status: number): boolean {
  return status === 429 || status >= 500;
}
