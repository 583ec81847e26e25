import { hashSource, pageDocument } from "../page-document";
import { PAGE_CSS } from "../page-style";
import { UPLOAD_CSS } from "./style";
import { UPLOAD_SCRIPT } from "./script";

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
  return pageDocument({
    status,
    title,
    body,
    footer: "Airlock upload link. It takes one file, then stops working.",
    styles: [PAGE_CSS, UPLOAD_CSS],
    ...(withScript ? { script: UPLOAD_SCRIPT } : {}),
    csp: [
      "default-src 'none'",
      `script-src ${withScript ? await hashSource(UPLOAD_SCRIPT) : "'none'"}`,
      `style-src ${styles}`,
      `connect-src ${withScript ? "'self'" : "'none'"}`,
      "img-src 'self'",
      "object-src 'none'",
      "base-uri 'none'",
      "form-action 'none'",
      "frame-ancestors 'none'",
    ],
  });
}
