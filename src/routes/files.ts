import { Hono } from "hono";
import type { AppEnv } from "../app-env";
import { requireCaller, sessionOf } from "../auth/middleware";
import { listDeliveries } from "../db/deliveries";
import { deleteFile, listFiles } from "../db/files";
import { AppError } from "../errors";
import { fileResponse, STORE_URL_TTL_MS } from "../http/file-response";
import { idempotencyKeyOf } from "../services/idempotency-key";
import { readJson } from "../http/json-body";
import { deliverBody, deliverFile, toDeliveryRecord } from "../services/delivery/deliver";
import { isFileOrigin, FILE_ORIGINS } from "../services/file-origin";
import { toFileRecord } from "../services/file-record";
import { visibleFile } from "../services/sharing/visible-file";
import { createLinkBody, createShareLink } from "../services/sharing/share-links";

/** Sandboxes see their own files; the operator sees every session's. */
export const files = new Hono<AppEnv>()
  .use(requireCaller("session", "operator"))
  .get("/", async (c) => {
    const { deps, caller } = c.var;
    const sessionId =
      caller.kind === "session" ? caller.session.id : (c.req.query("sessionId") ?? null);
    const wanted = c.req.query("origin");
    if (wanted !== undefined && !isFileOrigin(wanted)) {
      throw new AppError(
        "invalid_request",
        `origin must be one of ${FILE_ORIGINS.join(", ")}; got ${JSON.stringify(wanted.slice(0, 64))}`,
      );
    }
    const rows = await listFiles(deps.db, sessionId, deps.now(), 1000, wanted ?? null);
    const origin = new URL(c.req.url).origin;
    return c.json({
      files: await Promise.all(rows.map((file) => toFileRecord(deps, file, origin))),
    });
  })
  .get("/:id", async (c) => {
    const file = await visibleFile(c.var.deps, c.var.caller, c.req.param("id"));
    return c.json(await toFileRecord(c.var.deps, file, new URL(c.req.url).origin));
  })
  .delete("/:id", async (c) => {
    const { deps } = c.var;
    const file = await visibleFile(deps, c.var.caller, c.req.param("id"));
    const deletedAt = await deleteFile(deps.db, file.id, deps.now());
    // Another request deleted it between the read and the update.
    if (deletedAt === null) throw new AppError("file_not_found");
    return c.json({ fileId: file.id, deletedAt: new Date(deletedAt).toISOString() });
  })
  .post("/:id/links", async (c) => {
    const { deps } = c.var;
    const file = await visibleFile(deps, c.var.caller, c.req.param("id"));
    const body = await readJson(c, createLinkBody);
    return c.json(await createShareLink(deps, file, body, new URL(c.req.url).origin), 201);
  })
  .get("/:id/content", async (c) => {
    const { deps } = c.var;
    const file = await visibleFile(deps, c.var.caller, c.req.param("id"));
    // On a store clients can read directly, a GET answers 307 to a short-lived presigned URL
    // (see `fileResponse`): the bytes never pass through the Worker.
    return fileResponse(deps.store, file, c.req.raw, {
      storeRedirect: { expiresAt: Math.min(deps.now() + STORE_URL_TTL_MS, file.expiresAt) },
    });
  })
  .post("/:id/deliveries", async (c) => {
    const { deps, caller } = c.var;
    const file = await visibleFile(deps, caller, c.req.param("id"));
    const body = await readJson(c, deliverBody);
    const key = idempotencyKeyOf(c.req.header("idempotency-key"));
    const origin = new URL(c.req.url).origin;
    return c.json(await deliverFile(deps, sessionOf(caller), file, body, key, origin), 201);
  })
  .get("/:id/deliveries", async (c) => {
    const file = await visibleFile(c.var.deps, c.var.caller, c.req.param("id"));
    const deliveries = await listDeliveries(c.var.deps.db, file.id);
    return c.json({ deliveries: deliveries.map(toDeliveryRecord) });
  });
