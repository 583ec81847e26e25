import { Hono } from "hono";
import type { AppEnv } from "../app-env";
import { verifyShareToken } from "../auth/share-link";
import { findFile } from "../db/files";
import { AppError } from "../errors";
import { fileResponse } from "../http/file-response";

/** Share links: anyone holding a valid, unexpired link gets the original bytes. */
export const share = new Hono<AppEnv>().get("/:token", async (c) => {
  const { deps } = c.var;
  const fileId = await verifyShareToken(deps.config.signingKey, c.req.param("token"), deps.now());
  const file = await findFile(deps.db, fileId);
  if (!file) throw new AppError("file_not_found");
  if (file.expiresAt <= deps.now()) throw new AppError("file_expired");
  return fileResponse(deps.store, file, c.req.raw);
});
