import type { FileRow } from "../db/files";
import { AppError } from "../errors";
import type { BlobStore } from "../storage";
import { openOriginal } from "../services/original-bytes";
import { withKnownLength } from "../storage/known-length";
import { contentDisposition } from "./content-disposition";
import { parseRange } from "./range";

/** How to serve a file other than as an attachment of its declared type. */
export interface FileResponseOptions {
  /**
   * `inline` with the type read from the file's magic bytes, for previews of types a
   * browser shows but never runs (raster images, PDF, audio, video). Callers decide that.
   */
  inline?: { contentType: string };
}

/**
 * The original bytes of a file as an HTTP response: streamed, with validators and
 * single-range support. Served as an attachment with `nosniff` and a sandboxing CSP,
 * so uploaded HTML or SVG never runs in the relay's origin.
 */
export async function fileResponse(
  store: BlobStore,
  file: FileRow,
  request: Request,
  options: FileResponseOptions = {},
): Promise<Response> {
  const etag = `"${file.sha256}"`;
  const headers = new Headers({
    "content-type": options.inline?.contentType ?? file.contentType,
    "content-disposition": contentDisposition(file.name, options.inline ? "inline" : "attachment"),
    etag,
    "accept-ranges": "bytes",
    // The bytes go out exactly as stored: no on-the-fly compression by Cloudflare's
    // front line (or Miniflare, which mimics it), which would drop Content-Length and Range.
    "cache-control": "private, max-age=0, must-revalidate, no-transform",
    "content-encoding": "identity",
    "x-content-type-options": "nosniff",
    "content-security-policy": "default-src 'none'; sandbox",
    "last-modified": new Date(file.createdAt).toUTCString(),
  });
  if (etagMatches(request, file)) return new Response(null, { status: 304, headers });

  const range = requestedRange(request, file);
  if (range === "unsatisfiable") {
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
  if (request.method === "HEAD") return new Response(null, { status, headers });

  const body = length === 0 ? null : await openOriginal(store, file, range);
  if (length > 0 && !body)
    throw new AppError("file_not_found", "the file's content is no longer stored");
  return new Response(body ? withKnownLength(body, length) : null, { status, headers });
}

/** Whether `If-None-Match` names the file's ETag (or `*`): the client already has it. */
export function etagMatches(request: Request, file: FileRow): boolean {
  const header = request.headers.get("if-none-match");
  if (!header) return false;
  const etag = `"${file.sha256}"`;
  return (
    header.trim() === "*" ||
    header.split(",").some((tag) => tag.trim().replace(/^W\//, "") === etag)
  );
}

/** The `Range` a request asks for, unless an `If-Range` names another version (RFC 9110 §13.1.5). */
export function requestedRange(request: Request, file: FileRow): ReturnType<typeof parseRange> {
  const ifRange = request.headers.get("if-range");
  if (ifRange !== null && ifRange !== `"${file.sha256}"`) return undefined;
  return parseRange(request.headers.get("range") ?? undefined, file.size);
}
