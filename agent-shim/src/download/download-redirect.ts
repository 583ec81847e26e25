import type { IncomingMessage } from "node:http";
import { CliError } from "../cli/errors.js";
import { request } from "../transport/http.js";

/** Redirects a download follows at most (the relay sends one, to the store). */
const MAX_REDIRECTS = 3;
const REDIRECTS = new Set([301, 302, 303, 307, 308]);

/**
 * GETs `url`, following redirects (a share link on an S3 relay answers 307 to a short-lived
 * store URL). Node's http module follows none by itself. To another origin only the `Range`
 * goes along: credentials stay with the relay, and `If-Range` is the relay's to judge (the
 * store's ETag is not the SHA-256). The final response carries the redirect's ETag (the
 * relay's verified SHA-256) in place of the store's, or none when the relay sent none. With
 * `direct`, a plain body may be taken off the socket (see `socketBody`): only for `drain`.
 */
export async function getFollowing(
  url: string,
  headers: Record<string, string>,
  direct = false,
): Promise<IncomingMessage> {
  let current = new URL(url);
  let sent = headers;
  let etag: string | undefined;
  for (let hops = 0; ; hops++) {
    const res = await request({ method: "GET", url: current.href, headers: sent, direct });
    const location = res.headers.location;
    if (!REDIRECTS.has(res.statusCode ?? 0) || location === undefined) {
      if (hops > 0) {
        if (etag === undefined) delete res.headers.etag;
        else res.headers.etag = etag;
      }
      return res;
    }
    res.resume();
    if (hops === MAX_REDIRECTS)
      throw new CliError(`${url} redirected more than ${MAX_REDIRECTS} times`);
    const next = new URL(location, current);
    if (next.protocol !== "https:" && next.protocol !== "http:") {
      throw new CliError(`${current.origin} redirected to a ${next.protocol} URL; not followed`);
    }
    if (hops === 0) etag = res.headers.etag;
    if (next.origin !== current.origin) sent = crossOrigin(sent);
    current = next;
  }
}

function crossOrigin(headers: Record<string, string>): Record<string, string> {
  const kept: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (name.toLowerCase() === "range") kept[name] = value;
  }
  return kept;
}
