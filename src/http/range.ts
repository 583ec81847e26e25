import type { ByteRange } from "../storage/blob-store";

/**
 * Parses a `Range` header against a representation of `size` bytes (RFC 9110 §14.2).
 * Returns undefined for no range (or one we serve whole, like multiple ranges, which
 * RFC 9110 allows us to ignore), the range, or "unsatisfiable".
 */
export function parseRange(
  header: string | undefined,
  size: number,
): ByteRange | "unsatisfiable" | undefined {
  if (!header) return undefined;
  const match = /^bytes=\s*(\d*)\s*-\s*(\d*)\s*$/i.exec(header.trim());
  if (!match) return undefined;
  const [, first = "", last = ""] = match;
  if (first === "" && last === "") return undefined;
  if (first === "") {
    // Suffix range: the last N bytes.
    const suffix = Number(last);
    if (suffix === 0 || size === 0) return "unsatisfiable";
    const length = Math.min(suffix, size);
    return { offset: size - length, length };
  }
  const offset = Number(first);
  if (offset >= size) return "unsatisfiable";
  const end = last === "" ? size - 1 : Math.min(Number(last), size - 1);
  if (end < offset) return undefined;
  return { offset, length: end - offset + 1 };
}
