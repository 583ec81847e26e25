import { bytesToBase64Url, bytesToHex } from "../encoding";

/**
 * Upload-link tokens: 256 random bits in base64url (43 characters). The relay keeps only
 * their SHA-256, so the token is the whole credential and a database read grants nothing;
 * a lookup by that digest reveals nothing about other tokens (no comparison to time).
 */
const TOKEN_SHAPE = /^[A-Za-z0-9_-]{43}$/;

/** A fresh link token and the digest the relay stores for it. */
export async function newUploadLinkToken(): Promise<{ token: string; sha256: string }> {
  const token = bytesToBase64Url(crypto.getRandomValues(new Uint8Array(32)));
  return { token, sha256: await uploadLinkDigest(token) };
}

/** The digest to look a token up by, or null when it cannot be a token the relay made. */
export async function uploadLinkDigestOf(token: string): Promise<string | null> {
  return TOKEN_SHAPE.test(token) ? uploadLinkDigest(token) : null;
}

async function uploadLinkDigest(token: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(token));
  return bytesToHex(digest);
}
