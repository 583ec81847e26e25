import { createMiddleware } from "hono/factory";
import { timingSafeEqual } from "hono/utils/buffer";
import type { AppEnv, Caller } from "../app-env";
import type { Session } from "../db/sessions";
import type { Deps } from "../deps";
import { AppError } from "../errors";
import { liveSession } from "./live-session";
import { verifySessionToken } from "./session-token";

type Role = Caller["kind"];

/** Who a bearer token names, by the token alone: a session's row is still to be checked. */
type Bearer = { kind: "operator" } | { kind: "session"; sessionId: string };

/**
 * Authenticates `Authorization: Bearer <token>` as the operator (the admin token,
 * compared in constant time) or a live session, and admits only `roles`.
 */
export function requireCaller(...roles: Role[]) {
  return createMiddleware<AppEnv>(async (c, next) => {
    const caller = await authenticate(c.var.deps, c.req.header("authorization"));
    if (!roles.includes(caller.kind)) throw forbidden(caller.kind);
    c.set("caller", caller);
    await next();
  });
}

/** A sub-app behind `requireSessionToken`: its handlers read the caller's `sessionId`. */
export interface SessionTokenEnv {
  Bindings: AppEnv["Bindings"];
  Variables: AppEnv["Variables"] & { sessionId: string };
}

/**
 * Admits a sandbox's token as `requireCaller("session")` does, answering the operator and a
 * missing or badly signed token alike, but without reading D1: the handler must check the
 * session's row with `checkLive` (src/auth/live-session.ts) before it acts, in the same
 * round trip as its own work, and write nothing for a session that is not live.
 */
export function requireSessionToken() {
  return createMiddleware<SessionTokenEnv>(async (c, next) => {
    const bearer = await identify(c.var.deps, c.req.header("authorization"));
    if (bearer.kind !== "session") throw forbidden(bearer.kind);
    c.set("sessionId", bearer.sessionId);
    await next();
  });
}

async function authenticate(deps: Deps, header: string | undefined): Promise<Caller> {
  const bearer = await identify(deps, header);
  if (bearer.kind === "operator") return bearer;
  return { kind: "session", session: await liveSession(deps, bearer.sessionId) };
}

async function identify(deps: Deps, header: string | undefined): Promise<Bearer> {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header ?? "");
  if (!match?.[1]) throw new AppError("unauthorized");
  const token = match[1];
  if (await timingSafeEqual(token, deps.config.adminToken)) return { kind: "operator" };
  return { kind: "session", sessionId: await verifySessionToken(deps.config.signingKey, token) };
}

function forbidden(kind: Role): AppError {
  return new AppError(
    "forbidden",
    kind === "session" ? "this route is for the operator" : "this route is for sandboxes",
  );
}

/** The session of a caller admitted by `requireCaller("session")`. */
export function sessionOf(caller: Caller): Session {
  if (caller.kind !== "session") throw forbidden(caller.kind);
  return caller.session;
}
