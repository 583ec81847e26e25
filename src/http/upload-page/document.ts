import { html } from "hono/html";
import { bytesToBase64 } from "../../encoding";
import { PAGE_CSS } from "../page-style";
import { UPLOAD_CSS } from "./style";
import { UPLOAD_SCRIPT } from "./script";

const hashes = new Map<string, Promise<string>>();

/** The CSP source allowing one exact inline script or stylesheet: its SHA-256. */
function hashSource(text: string): Promise<string> {
  let hash = hashes.get(text);
  if (!hash) {
    hash = crypto.subtle
      .digest("SHA-256", new TextEncoder().encode(text))
      .then((digest) => `'sha256-${bytesToBase64(new Uint8Array(digest))}'`);
    hashes.set(text, hash);
  }
  return hash;
}

/**
 * An upload-link page with strict headers: the only script that may run is the upload
 * script (by hash; none at all on error pages), it may talk to this origin only, and
 * nothing can frame the page. `body` comes from hono/html, which escaped everything in it.
 */
export async function uploadDocument(
  status: 200 | 404 | 410,
  title: string,
  body: string,
  withScript: boolean,
): Promise<Response> {
  const styles = `${await hashSource(PAGE_CSS)} ${await hashSource(UPLOAD_CSS)}`;
  const csp = [
    "default-src 'none'",
    `script-src ${withScript ? await hashSource(UPLOAD_SCRIPT) : "'none'"}`,
    `style-src ${styles}`,
    `connect-src ${withScript ? "'self'" : "'none'"}`,
    "img-src 'self'",
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join("; ");
  // A plain template, not hono/html's `html` tag: formatters rewrite tagged HTML, and the
  // CSP hashes must match the inline script and styles byte for byte. The only text from
  // outside, `title`, is escaped here; `body` was escaped by hono/html where it was built.
  const script = withScript ? `<script>${UPLOAD_SCRIPT}</script>\n` : "";
  const page = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex, nofollow">
<title>${String(await html`${title}`)}</title>
<style>${PAGE_CSS}</style>
<style>${UPLOAD_CSS}</style>
</head>
<body>
<main>
${body}
</main>
<footer>Airlock upload link. It takes one file, then stops working.</footer>
${script}</body>
</html>
`;
  return new Response(page, {
    status,
    headers: {
      "content-type": "text/html; charset=utf-8",
      "content-security-policy": csp,
      "x-content-type-options": "nosniff",
      "referrer-policy": "no-referrer",
      "x-frame-options": "DENY",
      "cache-control": "private, no-store",
    },
  });
}
