import { Hono } from "hono";
import type { AppEnv } from "../app-env";
import { requireCaller, sessionOf } from "../auth/middleware";
import { readJson } from "../http/json-body";
import {
  createRequestBody,
  createUploadRequest,
  uploadRequestState,
} from "../services/upload-links/upload-requests";
import { cancelRequest } from "../services/upload-links/cancel";

/**
 * Sandbox routes: ask a person for a file through an upload link, see whether it came, and
 * cancel the link.
 */
export const requests = new Hono<AppEnv>()
  .use(requireCaller("session"))
  .post("/", async (c) => {
    const body = await readJson(c, createRequestBody);
    const session = sessionOf(c.var.caller);
    const created = await createUploadRequest(c.var.deps, session, body, new URL(c.req.url).origin);
    return c.json(created, 201);
  })
  .get("/:id", async (c) => {
    const session = sessionOf(c.var.caller);
    return c.json(await uploadRequestState(c.var.deps, session, c.req.param("id")));
  })
  .delete("/:id", async (c) => {
    const session = sessionOf(c.var.caller);
    return c.json(await cancelRequest(c.var.deps, session, c.req.param("id")));
  });
