import { Hono } from "hono";
import type { AppEnv } from "../app-env";
import { verifyShareToken } from "../auth/share-link";
import { findFileIncludingDeleted, type FileRow } from "../db/files";
import { countDownload, findLink } from "../db/links";
import { AppError } from "../errors";
import { etagMatches, fileResponse, requestedRange } from "../http/file-response";
import { acceptsHtml, inlineMime, shareErrorPage, sharePage, wantsPage } from "../http/share-page";

/**
 * Share links: anyone holding a valid, unexpired link gets the original bytes, or, in a
 * browser, a page about the file with a preview (`?inline=1` serves the previewable
 * types inline) and a download link (`?download=1`). A link minted with `maxDownloads`
 * counts its downloads in D1 (see `isCountedDownload`).
 */
export const share = new Hono<AppEnv>().get("/:token", async (c) => {
  const { deps } = c.var;
  const request = c.req.raw;
  try {
    const now = deps.now();
    const grant = await verifyShareToken(deps.config.signingKey, c.req.param("token"), now);
    const file = await findFileIncludingDeleted(deps.db, grant.fileId);
    // A file the relay removed because its bytes were not what was declared was never
    // verified: it stays "not found". One its owner or the operator deleted is "deleted".
    if (!file || (file.deletedAt != null && !file.verified)) throw new AppError("file_not_found");
    if (file.deletedAt != null) throw new AppError("file_deleted");
    if (file.expiresAt <= now) throw new AppError("file_expired");
    const link = grant.linkId ? await findLink(deps.db, grant.linkId) : null;
    // A signed link id without its row (or for another file) was never minted here.
    if (grant.linkId && (!link || link.fileId !== file.id)) throw new AppError("invalid_link");
    const page = wantsPage(request);
    if (link?.maxDownloads != null) {
      if (!page && isCountedDownload(request, file)) {
        if ((await countDownload(deps.db, link.id)) === null) throw new AppError("link_exhausted");
      } else if (link.downloads >= link.maxDownloads && !isContinuation(request, file)) {
        throw new AppError("link_exhausted");
      }
    }
    if (page) {
      const linkExpiresAt = Math.min(grant.expiresAt, file.expiresAt);
      const downloads =
        link?.maxDownloads != null ? { used: link.downloads, max: link.maxDownloads } : undefined;
      return await sharePage(deps.store, file, { expiresAt: linkExpiresAt, now, downloads });
    }
    if (c.req.query("inline") !== undefined) {
      const contentType = await inlineMime(deps.store, file);
      if (contentType)
        return await fileResponse(deps.store, file, request, { inline: { contentType } });
    }
    const response = await fileResponse(deps.store, file, request);
    // The same URL answers a page to browsers: caches must tell the two apart.
    if (c.req.query("download") === undefined) response.headers.set("vary", "Accept");
    return response;
  } catch (error) {
    if (error instanceof AppError && acceptsHtml(request)) return shareErrorPage(error);
    throw error;
  }
});

/**
 * A counted download is a GET that will send the bytes from the start: the whole file
 * (also `?download=1` and `?inline=1`) or a Range starting at byte 0. Not counted: HEAD,
 * the HTML page, a 304 (`If-None-Match` matched), an unsatisfiable Range, and a Range
 * continuation (offset > 0), which resumes a download already counted.
 */
function isCountedDownload(request: Request, file: FileRow): boolean {
  if (request.method !== "GET") return false;
  if (etagMatches(request, file)) return false;
  const range = requestedRange(request, file);
  if (range === "unsatisfiable") return false;
  return range === undefined || range.offset === 0;
}

/**
 * A Range request from offset > 0: served even once the link is exhausted (until it
 * expires), so an interrupted last download can resume.
 */
function isContinuation(request: Request, file: FileRow): boolean {
  const range = requestedRange(request, file);
  return range !== undefined && range !== "unsatisfiable" && range.offset > 0;
}
