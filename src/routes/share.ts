import { Hono } from "hono";
import type { AppEnv } from "../app-env";
import { verifyShareToken } from "../auth/share-link";
import { findFileIncludingDeleted } from "../db/files";
import { findLink, reserveLinkBytes } from "../db/links";
import { AppError } from "../errors";
import { archivePart, archiveResponse } from "../http/archive-response";
import { fileResponse, STORE_URL_TTL_MS } from "../http/file-response";
import { acceptsHtml, inlineMime, shareErrorPage, sharePage, wantsPage } from "../http/share-page";
import { linkBudget, linkUsage } from "../services/sharing/link-budget";

/**
 * Share links: anyone holding a valid, unexpired link gets the original bytes, or, in a
 * browser, a page about the file with a preview (`?inline=1` serves the previewable
 * types inline) and a download link (`?download=1`). A link minted with `maxDownloads`
 * meters every byte it sends against `maxDownloads × size` (see `services/link-budget`):
 * once that is spent, every request through it — page, HEAD, any Range, preview — is
 * `410 link_exhausted`. On a store clients can read directly (S3), a download of a file
 * stored as it is answers `307` to a short-lived presigned GET (counted at the redirect);
 * the page, HEAD, previews, gzip-stored files and a capped link's ranges stay on the relay.
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
    const capped = link?.maxDownloads != null ? { ...link, maxDownloads: link.maxDownloads } : null;
    const usage = capped ? linkUsage(capped, file) : undefined;
    if (usage?.remaining === 0) throw new AppError("link_exhausted");

    if (wantsPage(request)) {
      const expiresAt = Math.min(grant.expiresAt, file.expiresAt);
      const limit =
        capped && usage
          ? {
              usage,
              // The page's text sample is bytes of the file too: it counts, and only while
              // one whole download still fits after it.
              // A HEAD of the page sends no sample: it reserves nothing.
              reserve: async (bytes: number) =>
                request.method === "GET" &&
                (await reserveLinkBytes(deps.db, capped.id, usage.unit, bytes, usage.unit)),
            }
          : undefined;
      return await sharePage(deps, file, { expiresAt, now, limit });
    }
    // `?entry=N` and `?zip=1`: one file of an archive, or the whole as a zip.
    const part = archivePart(new URL(request.url));
    if (part)
      return await archiveResponse(
        deps,
        file,
        request,
        part,
        capped ? linkBudget(deps, capped, file, "download") : undefined,
      );
    if (c.req.query("inline") !== undefined) {
      const contentType = await inlineMime(deps.store, file);
      if (contentType)
        return await fileResponse(deps.store, file, request, {
          inline: { contentType },
          budget: capped ? linkBudget(deps, capped, file, "preview") : undefined,
        });
    }
    const response = await fileResponse(deps.store, file, request, {
      budget: capped ? linkBudget(deps, capped, file, "download") : undefined,
      storeRedirect: {
        expiresAt: Math.min(now + STORE_URL_TTL_MS, grant.expiresAt, file.expiresAt),
      },
    });
    // The same URL answers a page to browsers: caches must tell the two apart.
    if (c.req.query("download") === undefined) response.headers.set("vary", "Accept");
    return response;
  } catch (error) {
    if (error instanceof AppError && acceptsHtml(request)) return shareErrorPage(error);
    throw error;
  }
});
