/**
 * `Content-Disposition: attachment` with an ASCII fallback `filename` and the exact name
 * in `filename*` (RFC 6266 §4.3, RFC 8187). Names never reach the header raw, so quotes,
 * CR/LF and other controls cannot inject headers or parameters.
 */
export function contentDisposition(
  name: string,
  disposition: "attachment" | "inline" = "attachment",
): string {
  const fallback = name.replace(/[^\x20-\x7e]|["\\%]/g, "_") || "download";
  return `${disposition}; filename="${fallback}"; filename*=UTF-8''${encodeRfc8187(name)}`;
}

function encodeRfc8187(value: string): string {
  return encodeURIComponent(value).replace(
    /['()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );
}
