import { html } from "hono/html";
import { bytesToBase64 } from "../encoding";

const hashes = new Map<string, Promise<string>>();

/** The CSP source allowing one exact inline script or stylesheet: its SHA-256. */
export function hashSource(text: string): Promise<string> {
  let hash = hashes.get(text);
  if (!hash) {
    hash = crypto.subtle
      .digest("SHA-256", new TextEncoder().encode(text))
      .then((digest) => `'sha256-${bytesToBase64(new Uint8Array(digest))}'`);
    hashes.set(text, hash);
  }
  return hash;
}

export interface PageDocument {
  status: number;
  /** Plain text: escaped here. */
  title: string;
  /** Already escaped markup (built with hono/html). */
  body: string;
  footer: string;
  /** Inline stylesheets, each allowed by its hash in `csp`. */
  styles: string[];
  /** The one inline script, if any, allowed by its hash in `csp`. */
  script?: string;
  /** The Content-Security-Policy directives. */
  csp: string[];
  headers?: Record<string, string>;
}

/**
 * A complete relay page with strict headers (the caller's CSP, no framing, no sniffing, no
 * referrer, no caching). A plain template, not hono/html's `html` tag: formatters rewrite
 * tagged HTML, and the CSP hashes must match the inline script and styles byte for byte.
 */
export async function pageDocument(page: PageDocument): Promise<Response> {
  const styles = page.styles.map((css) => `<style>${css}</style>\n`).join("");
  const script = page.script === undefined ? "" : `<script>${page.script}</script>\n`;
  const text = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex, nofollow">
<title>${String(await html`${page.title}`)}</title>
${styles}</head>
<body>
<main>
${page.body}
</main>
<footer>${page.footer}</footer>
${script}</body>
</html>
`;
  return new Response(text, {
    status: page.status,
    headers: {
      "content-type": "text/html; charset=utf-8",
      "content-security-policy": page.csp.join("; "),
      "x-content-type-options": "nosniff",
      "referrer-policy": "no-referrer",
      "x-frame-options": "DENY",
      "cache-control": "private, no-store",
      ...page.headers,
    },
  });
}
