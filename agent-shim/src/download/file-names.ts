import type { IncomingHttpHeaders } from "node:http";
import { cleanFileName, numberedFileName } from "../../../src/names.js";

/** The file name a `Content-Disposition` header gives: `filename*` (RFC 8187) over `filename`. */
export function dispositionFileName(headers: IncomingHttpHeaders): string | undefined {
  const header = headers["content-disposition"];
  if (!header) return undefined;
  const extended = /filename\*\s*=\s*([^']*)'[^']*'([^;]+)/i.exec(header);
  if (extended && /^utf-8$/i.test(extended[1]!.trim())) {
    try {
      return decodeURIComponent(extended[2]!.trim());
    } catch {
      // Malformed percent-encoding: fall back to the plain parameter.
    }
  }
  const quoted = /filename\s*=\s*"((?:[^"\\]|\\.)*)"/i.exec(header);
  if (quoted) return quoted[1]!.replace(/\\(.)/g, "$1");
  return /filename\s*=\s*([^;\s]+)/i.exec(header)?.[1];
}

/**
 * A name that is safe to create in a directory: the shared name rule (last path component,
 * no control, bidi or invisible characters, never empty or dots only, at most 255 bytes).
 */
export function safeFileName(name: string, fallback: string): string {
  return cleanFileName(name, fallback);
}

export { numberedFileName };
