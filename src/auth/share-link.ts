import { base64UrlToBytes, bytesToBase64Url } from "../encoding";
import { AppError } from "../errors";
import { sign, verify } from "./hmac";

/**
 * Share tokens: `<fileId>.<expiry, unix seconds>.<HMAC>`, or, for a link minted with
 * limits (`POST /v1/files/:id/links`), `<fileId>.<expiry>.<linkId>.<HMAC>` where the HMAC
 * also covers the link id. Unguessable through the HMAC, self-expiring, and checked
 * without a database read (a link id then names the row that counts its downloads).
 */
export async function createShareToken(
  signingKey: string,
  fileId: string,
  expiresAtMs: number,
  linkId?: string,
): Promise<string> {
  const exp = Math.floor(expiresAtMs / 1000);
  const message = linkId ? `${fileId}.${exp}.${linkId}` : `${fileId}.${exp}`;
  const signature = await sign(signingKey, "share-link", message);
  return `${message}.${signature}`;
}

/** What a verified share token grants. */
export interface ShareGrant {
  fileId: string;
  /** The token's own expiry, unix ms. */
  expiresAt: number;
  /** The `links` row that carries this link's limits, when it has one. */
  linkId?: string;
}

/** Returns what a token grants, or throws `invalid_link` / `link_expired`. */
export async function verifyShareToken(
  signingKey: string,
  token: string,
  nowMs: number,
): Promise<ShareGrant> {
  const match =
    /^(fil_[A-Za-z0-9_-]{22})\.(\d{1,12})(?:\.(lnk_[A-Za-z0-9_-]{22}))?\.([A-Za-z0-9_-]{43})$/.exec(
      token,
    );
  if (!match) throw new AppError("invalid_link");
  const [, fileId, exp, linkId, signature] = match as unknown as [
    string,
    string,
    string,
    string | undefined,
    string,
  ];
  const message = linkId ? `${fileId}.${exp}.${linkId}` : `${fileId}.${exp}`;
  // 43 base64url characters carry 258 bits for the 256 of the HMAC: the last one has four
  // spellings that decode alike. Only the one the relay writes is the link.
  if (
    !isCanonicalBase64Url(signature) ||
    !(await verify(signingKey, "share-link", message, signature))
  ) {
    throw new AppError("invalid_link");
  }
  const expiresAt = Number(exp) * 1000;
  if (expiresAt <= nowMs) throw new AppError("link_expired");
  return linkId ? { fileId, expiresAt, linkId } : { fileId, expiresAt };
}

/** True when `text` is exactly how its bytes encode (no stray low bits in the last character). */
export function isCanonicalBase64Url(text: string): boolean {
  try {
    return bytesToBase64Url(base64UrlToBytes(text)) === text;
  } catch {
    return false;
  }
}
