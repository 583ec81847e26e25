import { sign as signJwt, verify as verifyJwt } from "hono/jwt";
import { bytesToBase64Url } from "../encoding";
import { AppError } from "../errors";
import { deriveSecret } from "./hmac";

/** What a session token carries; the D1 row stays authoritative for revocation and quota. */
export interface SessionClaims {
  sessionId: string;
  expiresAtMs: number;
}

const TOKEN_TYPE = "airlock-session";

async function jwtSecret(signingKey: string): Promise<string> {
  return bytesToBase64Url(await deriveSecret(signingKey, "session-token"));
}

/** Mints an HS256 JWT for a session. */
export async function createSessionToken(
  signingKey: string,
  claims: SessionClaims,
): Promise<string> {
  const payload = {
    sub: claims.sessionId,
    typ: TOKEN_TYPE,
    iat: Math.floor(Date.now() / 1000),
    exp: Math.floor(claims.expiresAtMs / 1000),
  };
  return signJwt(payload, await jwtSecret(signingKey), "HS256");
}

/** Returns the session a token names, or throws `invalid_token`. */
export async function verifySessionToken(signingKey: string, token: string): Promise<string> {
  try {
    const payload = await verifyJwt(token, await jwtSecret(signingKey), "HS256");
    if (payload.typ !== TOKEN_TYPE || typeof payload.sub !== "string")
      throw new Error("wrong type");
    return payload.sub;
  } catch {
    throw new AppError("invalid_token");
  }
}
