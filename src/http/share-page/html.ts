import { html, raw } from "hono/html";
import { bytesToBase64 } from "../../encoding";
import { PAGE_CSS as CSS } from "../page-style";

/**
 * Markup made with Hono's `html` tag: text interpolated into it is escaped, nested `html`
 * fragments are not. The pages' templates carry `prettier-ignore`: prettier would re-indent
 * them and so change the markup sent.
 */
export type Html = ReturnType<typeof html>;

/** Fragments one to a line, as `Array.join("\n")` puts strings. */
export function lines(fragments: Html[]): Html[] {
  // prettier-ignore
  return fragments.map((fragment, i) => (i === 0 ? fragment : html`\n${fragment}`));
}

let styleHash: Promise<string> | undefined;

/** The CSP source for the page's one inline stylesheet: a hash, so no nonce and no 'unsafe-inline'. */
function styleSource(): Promise<string> {
  styleHash ??= crypto.subtle
    .digest("SHA-256", new TextEncoder().encode(CSS))
    .then((digest) => `'sha256-${bytesToBase64(new Uint8Array(digest))}'`);
  return styleHash;
}

/**
 * A complete HTML page with the relay's strict headers: no script runs at all (the CSP
 * has no script source), only same-origin media, nothing can frame it.
 */
export async function htmlPage(status: number, title: string, body: Html): Promise<Response> {
  const csp = [
    "default-src 'none'",
    "img-src 'self'",
    "media-src 'self'",
    "frame-src 'self'",
    "object-src 'none'",
    `style-src ${await styleSource()}`,
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join("; ");
  // prettier-ignore
  const page = await html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex, nofollow">
<title>${title}</title>
<style>${raw(CSS)}</style>
</head>
<body>
<main>
${body}
</main>
<footer>Shared through Airlock. Links expire; download what you want to keep.</footer>
</body>
</html>
`;
  return new Response(page.toString(), {
    status,
    headers: {
      "content-type": "text/html; charset=utf-8",
      "content-security-policy": csp,
      "x-content-type-options": "nosniff",
      "referrer-policy": "no-referrer",
      "x-frame-options": "DENY",
      "cache-control": "private, no-store",
      vary: "Accept",
    },
  });
}
