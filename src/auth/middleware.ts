import { createMiddleware } from "hono/factory";
import { timingSafeEqual } from "hono/utils/buffer";
import type { AppEnv, Caller } from "../app-env";
import { findSession, type Session } from "../db/sessions";
import type { Deps } from "../deps";
import { AppError } from "../errors";
import { verifySessionToken } from "./session-token";

type Role = Caller["kind"];

/**
 * Authenticates `Authorization: Bearer <token>` as the operator (the admin token,
 * compared in constant time) or a live session, and admits only `roles`.
 */
export function requireCaller(...roles: Role[]) {
  return createMiddleware<AppEnv>(async (c, next) => {
    const caller = await authenticate(c.var.deps, c.req.header("authorization"));
    if (!roles.includes(caller.kind)) {
      throw new AppError(
        "forbidden",
        caller.kind === "session"
          ? "this route is for the operator"
          : "this route is for sandboxes",
      );
    }
    c.set("caller", caller);
    await next();
  });
}

async function authenticate(deps: Deps, header: string | undefined): Promise<Caller> {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header ?? "");
  if (!match?.[1]) throw new AppError("unauthorized");
  const token = match[1];
  if (await timingSafeEqual(token, deps.config.adminToken)) return { kind: "operator" };
  const sessionId = await verifySessionToken(deps.config.signingKey, token);
  return { kind: "session", session: await liveSession(deps, sessionId) };
}

async function liveSession(deps: Deps, sessionId: string): Promise<Session> {
  const session = await findSession(deps.db, sessionId);
  if (!session) throw new AppError("invalid_token");
  if (session.revokedAt !== null) throw new AppError("session_revoked");
  if (session.expiresAt <= deps.now()) throw new AppError("invalid_token", "session has expired");
  return session;
}

/** The session of a caller admitted by `requireCaller("session")`. */
export function sessionOf(caller: Caller): Session {
  if (caller.kind !== "session") throw new AppError("forbidden", "this route is for sandboxes");
  return caller.session;
}
