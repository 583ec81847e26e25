import { base64UrlToBytes, bytesToBase64Url, bytesToHex } from "../encoding";

/**
 * HMAC-SHA256 signatures under keys derived per purpose from AIRLOCK_SIGNING_KEY, so a
 * signature made for one use (an upload URL) never verifies for another (a share link).
 */
export type SigningPurpose =
  "share-link" | "upload-url" | "upload-part-url" | "session-token" | "mcp-upload" | "mcp-download";

const encoder = new TextEncoder();
const keyCache = new Map<string, Promise<CryptoKey>>();

function importKey(raw: Uint8Array): Promise<CryptoKey> {
  return crypto.subtle.importKey("raw", raw, { name: "HMAC", hash: "SHA-256" }, false, [
    "sign",
    "verify",
  ]);
}

/** The derived secret for `purpose`: HMAC(signingKey, "airlock:" + purpose). */
export async function deriveSecret(
  signingKey: string,
  purpose: SigningPurpose,
): Promise<Uint8Array> {
  const root = await importKey(encoder.encode(signingKey));
  const derived = await crypto.subtle.sign("HMAC", root, encoder.encode(`airlock:${purpose}`));
  return new Uint8Array(derived);
}

function purposeKey(signingKey: string, purpose: SigningPurpose): Promise<CryptoKey> {
  const cacheKey = `${purpose}\0${signingKey}`;
  let key = keyCache.get(cacheKey);
  if (!key) {
    key = deriveSecret(signingKey, purpose).then(importKey);
    keyCache.set(cacheKey, key);
  }
  return key;
}

/** Signs `message` for `purpose`; the result is base64url. */
export async function sign(
  signingKey: string,
  purpose: SigningPurpose,
  message: string,
): Promise<string> {
  const key = await purposeKey(signingKey, purpose);
  const signature = await crypto.subtle.sign("HMAC", key, encoder.encode(message));
  return bytesToBase64Url(new Uint8Array(signature));
}

/** Checks a base64url signature in constant time (WebCrypto's verify compares safely). */
export async function verify(
  signingKey: string,
  purpose: SigningPurpose,
  message: string,
  signature: string,
): Promise<boolean> {
  let bytes: Uint8Array;
  try {
    bytes = base64UrlToBytes(signature);
  } catch {
    return false;
  }
  const key = await purposeKey(signingKey, purpose);
  return crypto.subtle.verify("HMAC", key, bytes, encoder.encode(message));
}

/** Hex HMAC-SHA256 under a third party's secret (e.g. Slack's signing secret). */
export async function hmacSha256Hex(secret: string, message: string): Promise<string> {
  const key = await importKey(encoder.encode(secret));
  const signature = await crypto.subtle.sign("HMAC", key, encoder.encode(message));
  return bytesToHex(signature);
}
