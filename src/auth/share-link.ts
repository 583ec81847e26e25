import { AppError } from "../errors";
import { sign, verify } from "./hmac";

/**
 * Share tokens: `<fileId>.<expiry, unix seconds>.<HMAC>`. Unguessable through the HMAC,
 * self-expiring, and checked without a database read.
 */
export async function createShareToken(
  signingKey: string,
  fileId: string,
  expiresAtMs: number,
): Promise<string> {
  const exp = Math.floor(expiresAtMs / 1000);
  const signature = await sign(signingKey, "share-link", `${fileId}.${exp}`);
  return `${fileId}.${exp}.${signature}`;
}

/** Returns the file a token grants, or throws `invalid_link` / `link_expired`. */
export async function verifyShareToken(
  signingKey: string,
  token: string,
  nowMs: number,
): Promise<string> {
  const match = /^(fil_[A-Za-z0-9_-]{22})\.(\d{1,12})\.([A-Za-z0-9_-]{43})$/.exec(token);
  if (!match) throw new AppError("invalid_link");
  const [, fileId, exp, signature] = match as unknown as [string, string, string, string];
  if (!(await verify(signingKey, "share-link", `${fileId}.${exp}`, signature))) {
    throw new AppError("invalid_link");
  }
  if (Number(exp) * 1000 <= nowMs) throw new AppError("link_expired");
  return fileId;
}
