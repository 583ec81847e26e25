import type { FileRow } from "../db/files";
import { AppError } from "../errors";
import type { BlobStore } from "../storage";
import { contentGone, openOriginal, UNTABLED_INFLATE_BUDGET } from "../services/original-bytes";
import { withKnownLength } from "../content/known-length";
import { contentDisposition } from "./content-disposition";
import { parseRange } from "./range";
import type { ByteBudget } from "../services/sharing/link-budget";
import { untilJoined } from "../services/uploads/queued-join";

export { STORE_URL_TTL_MS } from "../storage/blob-store";

/** How to serve a file other than as a plain attachment of its declared type. */
export interface FileResponseOptions {
  /**
   * `inline` with the type read from the file's magic bytes, for previews of types a
   * browser shows but never runs (raster images, PDF, audio, video). Callers decide that.
   */
  inline?: { contentType: string };
  budget?: ByteBudget;
  /**
   * Answer a GET with a redirect to a presigned URL of the store, valid until `expiresAt`,
   * when the store offers one and holds the file as it is (identity, not gzip). Bytes then
   * never pass through the Worker; the budget counts them at the redirect. A Range under a
   * budget is served by the relay (see `PLAIN_RANGE`).
   */
  storeRedirect?: { expiresAt: number };
}

/**
 * The original bytes of a file as an HTTP response: streamed, with validators and
 * single-range support. Served as an attachment with `nosniff` and a sandboxing CSP,
 * so uploaded HTML or SVG never runs in the relay's origin. A pending file (its SHA-256
 * not verified yet) has no ETag: its hash is only what the uploader claimed.
 */
export async function fileResponse(
  store: BlobStore,
  file: FileRow,
  request: Request,
  options: FileResponseOptions = {},
): Promise<Response> {
  const { budget } = options;
  const headers = new Headers({
    "content-type": options.inline?.contentType ?? sendableType(file.contentType),
    "content-disposition": contentDisposition(file.name, options.inline ? "inline" : "attachment"),
    "accept-ranges": rangesServed(file) ? "bytes" : "none",
    // The bytes go out exactly as stored: no on-the-fly compression by Cloudflare's
    // front line (or Miniflare, which mimics it), which would drop Content-Length and Range.
    "cache-control": "private, max-age=0, must-revalidate, no-transform",
    "content-encoding": "identity",
    "x-content-type-options": "nosniff",
    "content-security-policy": "default-src 'none'; sandbox",
    "last-modified": new Date(file.createdAt).toUTCString(),
  });
  const etag = etagOf(file);
  if (etag) headers.set("etag", etag);
  if (etagMatches(request, file)) {
    await budget?.check(0);
    return new Response(null, { status: 304, headers });
  }

  const range = requestedRange(request, file);
  if (range === "unsatisfiable") {
    await budget?.check(0);
    headers.set("content-range", `bytes */${file.size}`);
    const error = new AppError("range_not_satisfiable");
    headers.set("content-type", "application/json");
    return new Response(JSON.stringify({ error: { code: error.code, message: error.message } }), {
      status: 416,
      headers,
    });
  }
  const length = range ? range.length : file.size;
  headers.set("content-length", String(length));
  if (range)
    headers.set(
      "content-range",
      `bytes ${range.offset}-${range.offset + range.length - 1}/${file.size}`,
    );
  const status = range ? 206 : 200;
  if (request.method === "HEAD") {
    await budget?.check(length);
    return new Response(null, { status, headers });
  }

  await untilJoined(store, file);
  if (
    options.storeRedirect &&
    store.createDownloadUrl &&
    file.encoding === "identity" &&
    length > 0 &&
    (!range || (!budget && PLAIN_RANGE.test(request.headers.get("range") ?? "")))
  )
    return redirectToStore(store.createDownloadUrl.bind(store), file, request, {
      headers,
      budget,
      length,
      ranged: range !== undefined,
      expiresAt: options.storeRedirect.expiresAt,
    });

  await budget?.take(length);
  let body: ReadableStream<Uint8Array> | null = null;
  try {
    body = length === 0 ? null : await openOriginal(store, file, range);
    if (length > 0 && !body) throw contentGone();
  } catch (error) {
    budget?.endedEarly(0, length);
    throw error;
  }
  if (!body) return new Response(null, { status, headers });
  const metered = budget
    ? meter(body, length, request.signal, (sent) => budget.endedEarly(sent, length))
    : body;
  return new Response(withKnownLength(metered, length), { status, headers });
}

/**
 * The Range forms the store reads exactly as `parseRange` does. Any other spelling (spaces,
 * case) stays on the relay: a store reading it differently might send more than was counted.
 * A metered Range stays on the relay whatever its form: the client may add an `If-Range` at
 * the store (it is not signed), and a store that honours it (S3 does) then ignores the Range
 * and sends the whole object. Only a whole-file URL is safe to count at the redirect.
 */
const PLAIN_RANGE = /^bytes=(\d+-\d*|-\d+)$/;

/**
 * A 307 to a presigned GET of the stored object, answering with the same name and type. The
 * bytes the request asks for are reserved first; when the request has a Range, its exact
 * header is signed into the URL so the store serves that range and no more. Within its few
 * seconds of life the URL could be replayed by whoever holds it: that is why it is short.
 */
async function redirectToStore(
  createDownloadUrl: NonNullable<BlobStore["createDownloadUrl"]>,
  file: FileRow,
  request: Request,
  plan: {
    headers: Headers;
    budget: ByteBudget | undefined;
    length: number;
    ranged: boolean;
    expiresAt: number;
  },
): Promise<Response> {
  const { headers, budget, length } = plan;
  await budget?.take(length);
  let location: string;
  try {
    location = await createDownloadUrl(file.storedKey, {
      expiresAt: plan.expiresAt,
      contentDisposition: headers.get("content-disposition") ?? "attachment",
      contentType: headers.get("content-type") ?? "application/octet-stream",
      range: plan.ranged ? (request.headers.get("range") ?? undefined) : undefined,
    });
  } catch (error) {
    budget?.endedEarly(0, length);
    throw error;
  }
  const redirect = new Headers({
    location,
    "cache-control": "no-store",
    "content-disposition": headers.get("content-disposition") ?? "attachment",
    "x-content-type-options": "nosniff",
  });
  // The verified SHA-256 travels with the redirect: the store's own ETag is not one.
  const etag = headers.get("etag");
  if (etag) redirect.set("etag", etag);
  return new Response(null, { status: 307, headers: redirect });
}

/**
 * The declared type when it can go in a header. A MIME type's quoted parameter may hold any
 * character (a person's upload page or chat client chose it), and one a header cannot carry
 * would fail every download of the file.
 */
function sendableType(contentType: string): string {
  return /^[\x20-\x7e]+$/.test(contentType) ? contentType : "application/octet-stream";
}

/** The file's ETag, or null while its SHA-256 is unverified (a claim, not a validator). */
export function etagOf(file: FileRow): string | null {
  return file.verified ? `"${file.sha256}"` : null;
}

/** Whether `If-None-Match` names the file's ETag (or `*`): the client already has it. */
export function etagMatches(request: Request, file: FileRow): boolean {
  const header = request.headers.get("if-none-match");
  const etag = etagOf(file);
  if (!header || !etag) return false;
  return (
    header.trim() === "*" ||
    header.split(",").some((tag) => tag.trim().replace(/^W\//, "") === etag)
  );
}

/**
 * The `Range` a request asks for, unless an `If-Range` names another version (RFC 9110 §13.1.5)
 * or the range would cost more than it serves: an untabled gzip file is inflated from its
 * first byte, so a range starting past `UNTABLED_INFLATE_BUDGET` is ignored (RFC 9110 §14.2
 * lets a server answer the whole representation) and the whole file streams instead.
 */
export function requestedRange(request: Request, file: FileRow): ReturnType<typeof parseRange> {
  const ifRange = request.headers.get("if-range");
  if (ifRange !== null && ifRange !== etagOf(file)) return undefined;
  const range = parseRange(request.headers.get("range") ?? undefined, file.size);
  if (typeof range === "object" && !rangesServed(file) && range.offset > UNTABLED_INFLATE_BUDGET)
    return undefined;
  return range;
}

/**
 * Whether any range of the file is served as one: not for an untabled gzip file larger than
 * `UNTABLED_INFLATE_BUDGET` (`Accept-Ranges: none`; ranges near its start are still served).
 */
function rangesServed(file: FileRow): boolean {
  return file.encoding !== "gzip" || !!file.members || file.size <= UNTABLED_INFLATE_BUDGET;
}

/**
 * Passes `body` through, pulled only as the response is written, and reports how many
 * bytes went out when it ends before `length` (cancelled by a client that went away, or
 * a store error).
 */
export function meter(
  body: ReadableStream<Uint8Array>,
  length: number,
  clientGone: AbortSignal,
  endedEarly: (sent: number) => void,
): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  let sent = 0;
  let ended = false;
  const end = () => {
    if (ended) return;
    ended = true;
    if (sent < length) endedEarly(sent);
  };
  // The runtime aborts the request's signal when the client disconnects (workerd's
  // `enable_request_signal`); without it, a cancelled body is the only sign.
  clientGone.addEventListener("abort", () => {
    end();
    reader.cancel().catch(() => {});
  });
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        try {
          const { done, value } = await reader.read();
          if (done) {
            end();
            controller.close();
            return;
          }
          sent += value.byteLength;
          controller.enqueue(value);
        } catch (error) {
          end();
          controller.error(error);
        }
      },
      async cancel(reason) {
        end();
        await reader.cancel(reason).catch(() => {});
      },
    },
    { highWaterMark: 0 },
  );
}
