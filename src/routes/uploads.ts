import { z } from "zod";
import { Hono } from "hono";
import type { AppEnv } from "../app-env";
import { requireCaller, sessionOf } from "../auth/middleware";
import { readJson } from "../http/json-body";
import { invalidRequest } from "../services/validation";
import { logEvent, since } from "../log";
import { completeUpload, uploadState } from "../services/uploads/complete-upload";
import { declareUpload, declareUploadBody } from "../services/uploads/declare-upload";
import {
  asksHashAtComplete,
  declareDeferred,
  deferredDeclareBody,
  signDeferredParts,
} from "../services/uploads/deferred-upload";
import { completeBody } from "../services/uploads/deferred-gzip";
import { partsBody } from "../services/uploads/signed-parts";

/** Sandbox routes: declare an upload, see where it stands (to resume it), complete it. */
export const uploads = new Hono<AppEnv>()
  .use(requireCaller("session"))
  .post("/", async (c) => {
    const started = Date.now();
    const raw: unknown = await readJson(c, z.unknown());
    const deferred = asksHashAtComplete(raw);
    const body = parseBody(deferred ? deferredDeclareBody : declareUploadBody, raw);
    const session = sessionOf(c.var.caller);
    const origin = new URL(c.req.url).origin;
    const result =
      "sha256" in body
        ? await declareUpload(c.var.deps, session, body, origin)
        : await declareDeferred(c.var.deps, session, body, origin);
    logEvent("upload_declared", {
      sessionId: session.id,
      outcome: result.status,
      uploadId: result.status === "upload" ? result.uploadId : undefined,
      fileId: result.status === "deduped" ? result.file.fileId : undefined,
      size: body.size,
      storedSize: "storedSize" in body ? body.storedSize : undefined,
      encoding: body.encoding,
      hashAtComplete: deferred,
      signedParts: "parts" in body ? body.parts?.length : undefined,
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
  .post("/:id/parts", async (c) => {
    const { parts } = await readJson(c, partsBody);
    const session = sessionOf(c.var.caller);
    const origin = new URL(c.req.url).origin;
    return c.json(await signDeferredParts(c.var.deps, session, c.req.param("id"), parts, origin));
  })
  .post("/:id/complete", async (c) => {
    const started = Date.now();
    const body = await readJson(c, completeBody);
    const session = sessionOf(c.var.caller);
    const uploadId = c.req.param("id");
    const origin = new URL(c.req.url).origin;
    const file = await completeUpload(c.var.deps, session, uploadId, origin, "sandbox", body);
    logEvent("upload_completed", {
      sessionId: session.id,
      uploadId,
      fileId: file.fileId,
      size: file.size,
      durationMs: since(started),
    });
    return c.json(file, 201);
  });

/** `raw` checked against `schema`, refused as every JSON body is (`readJson`). */
function parseBody<T extends z.ZodType>(schema: T, raw: unknown): z.infer<T> {
  const result = schema.safeParse(raw);
  if (!result.success) throw invalidRequest(result.error, "invalid body");
  return result.data;
}
