import { Hono } from "hono";
import { requireSessionToken, type SessionTokenEnv } from "../auth/middleware";
import { logEvent, since } from "../log";
import { singleUpload } from "../services/uploads/single-upload";

/**
 * A small file in one request: the declaration in the query, the stored bytes as the body
 * (docs/api.md, "One-request uploads"). The session's row is read with the declaration.
 */
export const singleUploads = new Hono<SessionTokenEnv>()
  .use(requireSessionToken())
  .post("/", async (c) => {
    const started = Date.now();
    const { sessionId } = c.var;
    const file = await singleUpload(
      c.var.deps,
      sessionId,
      {
        query: c.req.query(),
        contentLength: c.req.header("content-length"),
        body: c.req.raw.body,
        idempotencyKey: c.req.header("idempotency-key"),
      },
      new URL(c.req.url).origin,
    );
    logEvent("single_upload", {
      sessionId,
      fileId: file.fileId,
      outcome: file.deduped ? "deduped" : "stored",
      size: file.size,
      storedSize: Number(c.req.header("content-length")),
      durationMs: since(started),
    });
    return c.json(file, 201);
  });
