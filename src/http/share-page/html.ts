import { html } from "hono/html";
import { hashSource, pageDocument } from "../page-document";
import { PAGE_CSS } from "../page-style";

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

/**
 * A complete HTML page with the relay's strict headers: no script runs at all (the CSP
 * has no script source), only same-origin media, nothing can frame it.
 */
export async function htmlPage(status: number, title: string, body: Html): Promise<Response> {
  return pageDocument({
    status,
    title,
    body: String(await body),
    footer: "Shared through Airlock. Links expire; download what you want to keep.",
    styles: [PAGE_CSS],
    csp: [
      "default-src 'none'",
      "img-src 'self'",
      "media-src 'self'",
      "frame-src 'self'",
      "object-src 'none'",
      `style-src ${await hashSource(PAGE_CSS)}`,
      "base-uri 'none'",
      "form-action 'none'",
      "frame-ancestors 'none'",
    ],
    headers: { vary: "Accept" },
  });
}
