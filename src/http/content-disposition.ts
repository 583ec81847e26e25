import { cleanFileName } from "../names";

/**
 * `Content-Disposition: attachment` with an ASCII fallback `filename` and the exact name
 * in `filename*` (RFC 6266 §4.3, RFC 8187). Names never reach the header raw, so quotes,
 * CR/LF and other controls cannot inject headers or parameters. The name goes through the
 * shared name rule first (rows stored before the rule included), so it is at most 255
 * bytes of UTF-8 and the header stays under about 1 KB even percent-encoded.
 */
export function contentDisposition(
  name: string,
  disposition: "attachment" | "inline" = "attachment",
): string {
  const clean = cleanFileName(name, "download");
  const fallback = clean.replace(/[^\x20-\x7e]|["\\%]/g, "_");
  return `${disposition}; filename="${fallback}"; filename*=UTF-8''${encodeRfc8187(clean)}`;
}

function encodeRfc8187(value: string): string {
  return encodeURIComponent(value).replace(
    /['()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );
}
