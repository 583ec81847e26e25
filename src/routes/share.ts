import { Hono } from "hono";
import type { AppEnv } from "../app-env";
import { verifyShareToken } from "../auth/share-link";
import { findFile } from "../db/files";
import { AppError } from "../errors";
import { fileResponse } from "../http/file-response";
import { acceptsHtml, inlineMime, shareErrorPage, sharePage, wantsPage } from "../http/share-page";

/**
 * Share links: anyone holding a valid, unexpired link gets the original bytes, or, in a
 * browser, a page about the file with a preview (`?inline=1` serves the previewable
 * types inline) and a download link (`?download=1`).
 */
export const share = new Hono<AppEnv>().get("/:token", async (c) => {
  const { deps } = c.var;
  const request = c.req.raw;
  try {
    const token = c.req.param("token");
    const fileId = await verifyShareToken(deps.config.signingKey, token, deps.now());
    const file = await findFile(deps.db, fileId);
    if (!file) throw new AppError("file_not_found");
    if (file.expiresAt <= deps.now()) throw new AppError("file_expired");
    if (wantsPage(request)) {
      // The token was just verified, so its expiry field is the link's.
      const linkExpiresAt = Math.min(Number(token.split(".")[1]) * 1000, file.expiresAt);
      return await sharePage(deps.store, file, { expiresAt: linkExpiresAt, now: deps.now() });
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
