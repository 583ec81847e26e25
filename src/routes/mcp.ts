import { Hono } from "hono";
import { createMiddleware } from "hono/factory";
import type { AppEnv } from "../app-env";
import { requireCaller } from "../auth/middleware";
import { AppError } from "../errors";
import { receiveAgentUpload } from "../mcp/agent-upload";
import { serveInboxDownload } from "../mcp/inbox-download";
import { answerMcp } from "../mcp/server";

/**
 * Bearer auth for `/mcp`, answered before any MCP processing: a missing, wrong, expired or
 * revoked token is `401` (with `WWW-Authenticate: Bearer`, RFC 6750 §3); the operator's token
 * is `403`: a model is never handed admin power.
 */
const sessionOnly = [
  createMiddleware<AppEnv>(async (c, next) => {
    await next();
    if (c.res.status === 401) c.res.headers.set("www-authenticate", 'Bearer realm="airlock"');
  }),
  requireCaller("session", "operator"),
  createMiddleware<AppEnv>(async (c, next) => {
    if (c.var.caller.kind !== "session") {
      throw new AppError(
        "forbidden",
        "the operator token is refused on /mcp: use a session token (a model never holds admin power)",
      );
    }
    await next();
  }),
] as const;

/**
 * The MCP endpoint (streamable HTTP, stateless: docs/api.md "MCP") and the URLs its tools hand
 * out, whose own tokens are their credentials: `PUT /mcp/uploads/:token` (`create_upload`) and
 * `GET /mcp/downloads/:token` (`receive_files`).
 */
export const mcp = new Hono<AppEnv>()
  .post("/", ...sessionOnly, async (c) => {
    const { deps, caller } = c.var;
    if (caller.kind !== "session") throw new AppError("forbidden");
    const origin = new URL(c.req.url).origin;
    const context = { deps, session: caller.session, origin, signal: c.req.raw.signal };
    return answerMcp(context, c.req.raw);
  })
  // A stateless server offers no SSE stream to GET and no session to DELETE (MCP 2025-06-18,
  // "Streamable HTTP": 405 for both).
  .on(["GET", "DELETE"], "/", ...sessionOnly, (c) => {
    const message = `${c.req.method} /mcp: this server is stateless and answers POST only`;
    return c.json({ error: { code: "method_not_allowed", message } }, 405, { allow: "POST" });
  })
  .put("/uploads/:token", async (c) => {
    const headers = c.req.raw.headers;
    const file = await receiveAgentUpload(
      c.var.deps,
      c.req.param("token"),
      {
        contentLength: headers.get("content-length") ?? undefined,
        contentEncoding: headers.get("content-encoding") ?? undefined,
        contentType: headers.get("content-type") ?? undefined,
        body: c.req.raw.body,
      },
      new URL(c.req.url).origin,
    );
    return c.json(file, 201);
  })
  .get("/downloads/:token", (c) => serveInboxDownload(c.var.deps, c.req.param("token"), c.req.raw));
