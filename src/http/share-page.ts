import { html } from "hono/html";
import type { FileRow } from "../db/files";
import type { Deps } from "../deps";
import type { AppError } from "../errors";
import { humanSize } from "../services/human-size";
import { htmlPage, type Html } from "./share-page/html";
import { loadPreview, type PageLimit } from "./share-page/preview";
import { renderPreview } from "./share-page/render-preview";

export { inlineMime } from "./share-page/preview-kind";

/**
 * A browser navigating to a share link (it accepts HTML) gets the page; any other client,
 * a `?download`, `?inline`, `?entry` or `?zip` link and a Range request get the bytes.
 */
export function wantsPage(request: Request): boolean {
  const url = new URL(request.url);
  if (["download", "inline", "entry", "zip"].some((query) => url.searchParams.has(query)))
    return false;
  if (request.headers.has("range")) return false;
  return acceptsHtml(request);
}

/** Whether the client lists `text/html` (with a non-zero q) in `Accept`. */
export function acceptsHtml(request: Request): boolean {
  return (request.headers.get("accept") ?? "").split(",").some((item) => {
    const [type = "", ...params] = item.split(";").map((part) => part.trim().toLowerCase());
    return type === "text/html" && !params.some((p) => /^q=0(\.0*)?$/.test(p));
  });
}

/** When the link stops working, the clock it is read against, and its download limit. */
export interface LinkTimes {
  expiresAt: number;
  now: number;
  /** Present when the link was minted with `maxDownloads`. */
  limit?: PageLimit;
}

/**
 * The share page: the file's name, size, type and expiry, a download link and a preview.
 * Everything from the file is escaped (Hono's `html`) and no script runs (see `htmlPage`).
 * A pending file (not verified yet) shows no SHA-256: it would only be what the uploader claimed.
 */
export async function sharePage(deps: Deps, file: FileRow, link: LinkTimes): Promise<Response> {
  // prettier-ignore
  const exact = file.size >= 1000 ? html` <span class="note">(${file.size.toLocaleString("en-US")} bytes)</span>` : "";
  const expires = new Date(Math.floor(link.expiresAt / 1000) * 1000)
    .toISOString()
    .replace(".000Z", "Z");
  // prettier-ignore
  const body = html`<h1>${file.name}</h1>
<dl>
<dt>Size</dt><dd>${humanSize(file.size)}${exact}</dd>
<dt>Type</dt><dd>${file.contentType}</dd>
<dt>Link expires</dt><dd><time datetime="${expires}">${expires.replace("T", " ").replace("Z", " UTC")}</time> (${relativeTime(link.expiresAt - link.now)})</dd>
${downloadsRow(link)}${checksumRow(file)}</dl>
<p><a class="button" href="?download=1" download="${file.name}">Download (${humanSize(file.size)})</a></p>
${renderPreview(await loadPreview(deps, file, link.limit), file.name)}`;
  return htmlPage(200, `${file.name} · Airlock`, body);
}

/** "Downloads left: 3 of 5" for a link with a limit (a begun download counts); nothing otherwise. */
function downloadsRow(link: LinkTimes): Html | null {
  if (!link.limit) return null;
  const { max, used } = link.limit.usage;
  // prettier-ignore
  return html`<dt>Downloads left</dt><dd>${max - used} of ${max}</dd>\n`;
}

/** The verified SHA-256, or a note that the file is still being checked. */
function checksumRow(file: FileRow): Html {
  // prettier-ignore
  if (!file.verified)
    return html`<dt>SHA-256</dt><dd class="note">Still being checked: the file's checksum shows once the relay has verified its bytes.</dd>\n`;
  // prettier-ignore
  return html`<dt>SHA-256</dt><dd><code>${file.sha256}</code></dd>\n`;
}

const ERROR_PAGES: Partial<Record<string, { title: string; text: string }>> = {
  link_exhausted: {
    title: "This link has been used up",
    text: "It allowed a set number of downloads, and they have all been made. Ask for a new link.",
  },
  file_deleted: {
    title: "This file was deleted",
    text: "Whoever shared it deleted it. Ask them to send it again.",
  },
  invalid_link: {
    title: "This link is not valid",
    text: "The link is incomplete or was changed. Ask for the link again.",
  },
  link_expired: {
    title: "This link has expired",
    text: "Share links stop working after a while. Ask whoever shared it for a new link.",
  },
  file_expired: {
    title: "This file has expired",
    text: "The file was removed when its time ran out. Ask whoever shared it to send it again.",
  },
  file_not_found: {
    title: "File not found",
    text: "The file behind this link no longer exists.",
  },
};

/** The HTML form of a share link's error, with its status, for browsers. */
export function shareErrorPage(error: AppError): Promise<Response> {
  const page = ERROR_PAGES[error.code] ?? { title: "Something went wrong", text: error.message };
  // prettier-ignore
  return htmlPage(error.status, `${page.title} · Airlock`, html`<h1>${page.title}</h1>\n<p>${page.text}</p>`);
}

/** "in 5 minutes", "in 23 hours", "in 6 days". */
function relativeTime(ms: number): string {
  const format = new Intl.RelativeTimeFormat("en", { numeric: "always" });
  const seconds = Math.round(ms / 1000);
  if (Math.abs(seconds) < 60) return format.format(seconds, "second");
  if (Math.abs(seconds) < 3600) return format.format(Math.round(seconds / 60), "minute");
  if (Math.abs(seconds) < 86400 * 2) return format.format(Math.round(seconds / 3600), "hour");
  return format.format(Math.round(seconds / 86400), "day");
}
