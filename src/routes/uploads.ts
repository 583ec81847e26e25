import { Hono } from "hono";
import type { AppEnv } from "../app-env";
import { requireCaller, sessionOf } from "../auth/middleware";
import { readJson } from "../http/json-body";
import { logEvent, since } from "../log";
import { completeUpload, uploadState } from "../services/uploads/complete-upload";
import { declareUpload, declareUploadBody } from "../services/uploads/declare-upload";

/** Sandbox routes: declare an upload, see where it stands (to resume it), complete it. */
export const uploads = new Hono<AppEnv>()
  .use(requireCaller("session"))
  .post("/", async (c) => {
    const started = Date.now();
    const body = await readJson(c, declareUploadBody);
    const session = sessionOf(c.var.caller);
    const result = await declareUpload(c.var.deps, session, body, new URL(c.req.url).origin);
    logEvent("upload_declared", {
      sessionId: session.id,
      outcome: result.status,
      uploadId: result.status === "upload" ? result.uploadId : undefined,
      fileId: result.status === "deduped" ? result.file.fileId : undefined,
      size: body.size,
      storedSize: body.storedSize,
      encoding: body.encoding,
      durationMs: since(started),
    });
    return c.json(result, result.status === "missing" ? 200 : 201);
  })
  .get("/:id", async (c) => {
    const session = sessionOf(c.var.caller);
    const state = await uploadState(
      c.var.deps,
      session,
      c.req.param("id"),
      new URL(c.req.url).origin,
    );
    return c.json(state);
  })
  .post("/:id/complete", async (c) => {
    const started = Date.now();
    const session = sessionOf(c.var.caller);
    const uploadId = c.req.param("id");
    const file = await completeUpload(c.var.deps, session, uploadId, new URL(c.req.url).origin);
    logEvent("upload_completed", {
      sessionId: session.id,
      uploadId,
      fileId: file.fileId,
      size: file.size,
      durationMs: since(started),
    });
    return c.json(file, 201);
  });
