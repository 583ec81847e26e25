import { findSession, type Session } from "../db/sessions";
import type { Deps } from "../deps";
import { AppError } from "../errors";

/**
 * The session a validly signed token names, if its row lets it act at `now`; otherwise the
 * refusal every session route answers with: unknown, revoked, or expired.
 */
export function checkLive(session: Session | null, now: number): Session {
  if (!session) throw new AppError("invalid_token");
  if (session.revokedAt !== null) throw new AppError("session_revoked");
  if (session.expiresAt <= now) throw new AppError("invalid_token", "session has expired");
  return session;
}

/** `checkLive` over the session's row, read on its own. */
export async function liveSession(deps: Deps, sessionId: string): Promise<Session> {
  return checkLive(await findSession(deps.db, sessionId), deps.now());
}
