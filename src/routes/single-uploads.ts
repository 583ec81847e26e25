import { Hono } from "hono";
import type { AppEnv } from "../app-env";
import { requireCaller, sessionOf } from "../auth/middleware";
import { idempotencyKeyOf } from "../http/idempotency-key";
import { logEvent, since } from "../log";
import { invalidRequest, singleUpload, singleUploadQuery } from "../services/single-upload";

/**
 * A small file in one request: the declaration in the query, the stored bytes as the body
 * (docs/api.md, "One-request uploads").
 */
export const singleUploads = new Hono<AppEnv>()
  .use(requireCaller("session"))
  .post("/", async (c) => {
    const started = Date.now();
    const parsed = singleUploadQuery.safeParse(c.req.query());
    if (!parsed.success) throw invalidRequest(parsed.error);
    const idempotencyKey = idempotencyKeyOf(c.req.header("idempotency-key"));
    const session = sessionOf(c.var.caller);
    const file = await singleUpload(
      c.var.deps,
      session,
      {
        query: parsed.data,
        contentLength: c.req.header("content-length"),
        body: c.req.raw.body,
        idempotencyKey,
      },
      new URL(c.req.url).origin,
    );
    logEvent("single_upload", {
      sessionId: session.id,
      fileId: file.fileId,
      outcome: file.deduped ? "deduped" : "stored",
      size: file.size,
      storedSize: Number(c.req.header("content-length")),
      durationMs: since(started),
    });
    return c.json(file, 201);
  });
