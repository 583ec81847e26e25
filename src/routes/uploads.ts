import { Hono } from "hono";
import type { AppEnv } from "../app-env";
import { requireCaller, sessionOf } from "../auth/middleware";
import { readJson } from "../http/json-body";
import { completeUpload } from "../services/complete-upload";
import { declareUpload, declareUploadBody } from "../services/declare-upload";

/** Sandbox routes: declare an upload, then complete it once the bytes are stored. */
export const uploads = new Hono<AppEnv>()
  .use(requireCaller("session"))
  .post("/", async (c) => {
    const body = await readJson(c, declareUploadBody);
    const result = await declareUpload(
      c.var.deps,
      sessionOf(c.var.caller),
      body,
      new URL(c.req.url).origin,
    );
    return c.json(result, result.status === "missing" ? 200 : 201);
  })
  .post("/:id/complete", async (c) => {
    const file = await completeUpload(
      c.var.deps,
      sessionOf(c.var.caller),
      c.req.param("id"),
      new URL(c.req.url).origin,
    );
    return c.json(file, 201);
  });
