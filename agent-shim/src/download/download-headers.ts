import type { IncomingMessage } from "node:http";
import type { DownloadSource } from "./download.js";
import { CliError } from "../cli/errors.js";
import { dispositionFileName } from "./file-names.js";
import { readText, request, statusError } from "../transport/http.js";

/** What a HEAD says about a download before its bytes: its SHA-256 (ETag) and name. */
export interface Hint {
  sha256?: string;
  name?: string;
  /** The file's size, from a 200's Content-Length. */
  size?: number;
  /** Whether the answer said `Accept-Ranges: bytes`. */
  ranges?: boolean;
}

/**
 * Asks for a download's ETag and name with a HEAD (a share link says nothing beforehand), so
 * that a part file left by an earlier run can be found. Best effort: anything but a 200 or 206
 * says nothing, and the GET reports the failure properly.
 */
export async function headHint(url: string, headers: Record<string, string>): Promise<Hint> {
  try {
    // On the connections the GET that follows takes its body from (one connection for both).
    const res = await request({ method: "HEAD", url, headers, direct: true });
    res.resume();
    if (res.statusCode !== 200 && res.statusCode !== 206) return {};
    const hint = { sha256: etagSha256(res), name: dispositionFileName(res.headers) };
    if (res.statusCode !== 200) return hint;
    return { ...hint, size: contentLength(res), ranges: res.headers["accept-ranges"] === "bytes" };
  } catch {
    return {};
  }
}

/** The SHA-256 a strong (or weak) `"<64 hex>"` ETag names, lowercased. */
export function etagSha256(res: IncomingMessage): string | undefined {
  const match = /^(?:W\/)?"([0-9a-f]{64})"$/i.exec(res.headers.etag ?? "");
  return match?.[1]?.toLowerCase();
}

/** A 206's `Content-Range: bytes <first>-<last>/<total>`; `total` is undefined for `*`. */
export function contentRange(res: IncomingMessage): { first: number; total?: number } | undefined {
  const match = /^bytes (\d+)-(\d+)\/(\d+|\*)$/.exec(res.headers["content-range"] ?? "");
  if (!match) return undefined;
  const total = match[3] === "*" ? undefined : Number(match[3]);
  return { first: Number(match[1]), total };
}

/** A response's Content-Length, when it has a valid one. */
export function contentLength(res: IncomingMessage): number | undefined {
  const header = res.headers["content-length"];
  const length = header === undefined ? NaN : Number(header);
  return Number.isSafeInteger(length) && length >= 0 ? length : undefined;
}

/** The name a download gets when neither the caller nor the response gives one. */
const UNNAMED = "download";

/** The error for a response that is not the bytes. */
export async function refusal(res: IncomingMessage, source: DownloadSource): Promise<Error> {
  const { service, action } = source.target;
  return statusError(res, await readText(res), `${service} refused ${action}`);
}

/** What the bytes must hash to, the error when they do not, and the file's name. */
export interface Expected {
  sha256: string;
  against: () => CliError;
  name: string;
}

/** Checks a response's ETag against what is known, and says what its bytes must be. */
export function expectedOf(res: IncomingMessage, source: DownloadSource, hint: Hint): Expected {
  const { action, service } = source.target;
  const etag = etagSha256(res);
  const known = source.sha256?.toLowerCase();
  if (etag && known && etag !== known) {
    res.destroy();
    throw new CliError(`the ${action} is corrupt: its ETag does not match the expected SHA-256`);
  }
  const sha256 = etag ?? known ?? hint.sha256;
  if (!sha256) {
    res.destroy();
    throw new CliError(`${service} sent no ETag to verify the ${action} against`);
  }
  const against = () => corrupt(action, etag !== undefined);
  const name = source.name ?? dispositionFileName(res.headers) ?? hint.name ?? UNNAMED;
  return { sha256, against, name };
}

/** What a ranged download expects, known before any bytes from the HEAD's hint. */
export function expectedFromHint(source: DownloadSource, hint: Hint, sha256: string): Expected {
  const byEtag = source.sha256 === undefined;
  const name = source.name ?? hint.name ?? UNNAMED;
  return { sha256, against: () => corrupt(source.target.action, byEtag), name };
}

function corrupt(action: string, byEtag: boolean): CliError {
  const what = byEtag ? "the ETag" : "the expected SHA-256";
  return new CliError(`the ${action} is corrupt: its SHA-256 does not match ${what}`);
}
