import type { IncomingHttpHeaders } from "node:http";

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

/** The most a file name may take on common file systems, in bytes of UTF-8. */
const MAX_NAME_BYTES = 255;
/** A longer tail after the last dot is not treated as an extension worth keeping. */
const MAX_EXTENSION_BYTES = 32;

/**
 * C0 and C1 control characters (NUL, newlines and DEL among them), the Unicode line and paragraph
 * separators, and the bidirectional overrides that can make a name read as something else.
 */
const INVISIBLE = /[\u0000-\u001f\u007f-\u009f\u200e\u200f\u2028-\u202e\u2066-\u2069]/g;

/**
 * A name that is safe to create in a directory: the last path component only (`/` and `\` both
 * separate), without control characters (NUL and newlines included) or bidi overrides, never
 * `.`, `..` or empty (`fallback` then), at most 255 bytes. Dotfiles stay dotfiles.
 */
export function safeFileName(name: string, fallback: string): string {
  const parts = name.replace(INVISIBLE, "").split(/[/\\]/);
  const last =
    parts
      .map((part) => part.trim())
      .filter((part) => part !== "")
      .pop() ?? "";
  return last === "." || last === ".." || last === "" ? fallback : numberedFileName(last, 0);
}

/**
 * `name` for 0, else `name (n)` with the number before the extension (`report (2).pdf`), cut to
 * 255 bytes by shortening the part before the extension. `name` must be safe already.
 */
export function numberedFileName(name: string, n: number): string {
  const dot = name.lastIndexOf(".");
  const hasExtension = dot > 0 && Buffer.byteLength(name.slice(dot)) <= MAX_EXTENSION_BYTES;
  const stem = hasExtension ? name.slice(0, dot) : name;
  const tail = (n > 0 ? ` (${n})` : "") + (hasExtension ? name.slice(dot) : "");
  return truncateUtf8(stem, MAX_NAME_BYTES - Buffer.byteLength(tail)) + tail;
}

/** The longest prefix of `text` within `maxBytes` of UTF-8, never splitting a character. */
function truncateUtf8(text: string, maxBytes: number): string {
  if (Buffer.byteLength(text) <= maxBytes) return text;
  let out = "";
  let bytes = 0;
  for (const char of text) {
    bytes += Buffer.byteLength(char);
    if (bytes > maxBytes) break;
    out += char;
  }
  return out;
}
