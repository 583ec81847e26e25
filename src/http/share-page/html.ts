import { bytesToBase64 } from "../../encoding";

/** Escapes text for HTML element content and double-quoted attribute values. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c]!);
}

const ESCAPES: Record<string, string> = {
  "&": "&amp;",
  "<": "&lt;",
  ">": "&gt;",
  '"': "&quot;",
  "'": "&#39;",
};

const CSS = `
:root{color-scheme:light dark;--fg:#1b1f24;--muted:#57606a;--bg:#fff;--panel:#f6f8fa;--line:#d0d7de;--accent:#0a5cc2;--on-accent:#fff}
@media (prefers-color-scheme:dark){:root{--fg:#e6edf3;--muted:#9da7b3;--bg:#0d1117;--panel:#161b22;--line:#30363d;--accent:#4493f8;--on-accent:#0d1117}}
*{box-sizing:border-box}
body{margin:0;font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);background:var(--bg)}
main{max-width:60rem;margin:0 auto;padding:1.5rem 1rem 3rem}
h1{font-size:1.5rem;line-height:1.25;margin:0 0 1rem;overflow-wrap:anywhere}
h2{font-size:1.1rem;margin:2rem 0 .75rem}
dl{display:grid;grid-template-columns:max-content 1fr;gap:.25rem 1rem;margin:0 0 1.5rem}
dt{color:var(--muted)}
dd{margin:0;overflow-wrap:anywhere}
a{color:var(--accent)}
.button{display:inline-block;padding:.7rem 1.4rem;border-radius:.5rem;background:var(--accent);color:var(--on-accent);font-weight:600;text-decoration:none}
.button:hover{filter:brightness(1.1)}
a:focus-visible{outline:3px solid var(--accent);outline-offset:3px}
pre{margin:0;padding:1rem;background:var(--panel);border:1px solid var(--line);border-radius:.5rem;font:13px/1.45 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;white-space:pre-wrap;overflow-wrap:anywhere;max-height:75vh;overflow:auto}
img,video{display:block;max-width:100%;height:auto;border:1px solid var(--line);border-radius:.5rem;background:var(--panel)}
audio{width:100%}
iframe{width:100%;height:80vh;border:1px solid var(--line);border-radius:.5rem}
table{border-collapse:collapse;width:100%;font-size:.9rem}
th,td{text-align:left;padding:.3rem .5rem;border-bottom:1px solid var(--line);overflow-wrap:anywhere}
td.num,th.num{text-align:right;white-space:nowrap}
.note{color:var(--muted)}
footer{max-width:60rem;margin:0 auto;padding:0 1rem 2rem;color:var(--muted);font-size:.85rem}
`;

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
 * `title` is plain text; `body` must already be escaped HTML.
 */
export async function htmlPage(status: number, title: string, body: string): Promise<Response> {
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
  const html = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex, nofollow">
<title>${escapeHtml(title)}</title>
<style>${CSS}</style>
</head>
<body>
<main>
${body}
</main>
<footer>Shared through Airlock. Links expire; download what you want to keep.</footer>
</body>
</html>
`;
  return new Response(html, {
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
