import { sign, verify } from "../auth/hmac";
import { isCanonicalBase64Url } from "../auth/share-link";
import { base64UrlToBytes, bytesToBase64Url } from "../encoding";
import { AppError } from "../errors";

/**
 * The URLs `/mcp` hands a model for its terminal to use (`curl -T`, `curl -o`): each carries a
 * token signed by the relay, so it is checked without a database read and names exactly what
 * it grants. They are bearer credentials of their own, short-lived, and never the session token.
 */

/** What an upload URL from `create_upload` lets its holder store, once. */
export interface UploadGrant {
  sessionId: string;
  /** The file's name, already checked against the name rule. */
  name: string;
  /** The declared size of the original bytes, when the model gave one. */
  size?: number;
  /** Unix ms; the token carries whole seconds. */
  expiresAt: number;
  /** Random: what makes the URL single-use (see `src/mcp/agent-upload.ts`). */
  nonce: string;
}

/** The wire form of an `UploadGrant`, short keys to keep the URL short. */
interface UploadPayload {
  s: string;
  n: string;
  z?: number;
  e: number;
  k: string;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false });

/** `<payload>.<HMAC>`: the payload is the grant as base64url JSON. */
export async function createUploadToken(signingKey: string, grant: UploadGrant): Promise<string> {
  const payload: UploadPayload = {
    s: grant.sessionId,
    n: grant.name,
    ...(grant.size !== undefined ? { z: grant.size } : {}),
    e: Math.floor(grant.expiresAt / 1000),
    k: grant.nonce,
  };
  const body = bytesToBase64Url(encoder.encode(JSON.stringify(payload)));
  return `${body}.${await sign(signingKey, "mcp-upload", body)}`;
}

/**
 * What an upload token grants: `404 upload_not_found` for one the relay did not sign,
 * `410 upload_expired` once it is past its time.
 */
export async function verifyUploadToken(
  signingKey: string,
  token: string,
  now: number,
): Promise<UploadGrant> {
  const match = /^([A-Za-z0-9_-]{1,2048})\.([A-Za-z0-9_-]{43})$/.exec(token);
  // Only the spelling the relay wrote is the URL (a base64url signature's last character has
  // four that decode alike).
  if (
    !match ||
    !isCanonicalBase64Url(match[2]!) ||
    !(await verify(signingKey, "mcp-upload", match[1]!, match[2]!))
  ) {
    throw new AppError("upload_not_found", "no such upload URL");
  }
  const payload = JSON.parse(decoder.decode(base64UrlToBytes(match[1]!))) as UploadPayload;
  const expiresAt = payload.e * 1000;
  if (expiresAt <= now) {
    throw new AppError("upload_expired", "this upload URL has expired; ask create_upload again");
  }
  return {
    sessionId: payload.s,
    name: payload.n,
    ...(payload.z !== undefined ? { size: payload.z } : {}),
    expiresAt,
    nonce: payload.k,
  };
}

/** A fresh nonce for an upload URL: 128 random bits. */
export function uploadNonce(): string {
  return bytesToBase64Url(crypto.getRandomValues(new Uint8Array(16)));
}

/** `<inbox item id>.<expiry, unix seconds>.<HMAC>`: one item's bytes, until it expires. */
export async function createDownloadToken(
  signingKey: string,
  itemId: string,
  expiresAtMs: number,
): Promise<string> {
  const message = `${itemId}.${Math.floor(expiresAtMs / 1000)}`;
  return `${message}.${await sign(signingKey, "mcp-download", message)}`;
}

/**
 * The inbox item a download token names: `404 not_found` for one the relay did not sign,
 * `410 link_expired` once it is past its time.
 */
export async function verifyDownloadToken(
  signingKey: string,
  token: string,
  now: number,
): Promise<string> {
  const match = /^((inb_[A-Za-z0-9_-]{22})\.(\d{1,12}))\.([A-Za-z0-9_-]{43})$/.exec(token);
  if (
    !match ||
    !isCanonicalBase64Url(match[4]!) ||
    !(await verify(signingKey, "mcp-download", match[1]!, match[4]!))
  ) {
    throw new AppError("not_found", "no such download URL");
  }
  if (Number(match[3]) * 1000 <= now) {
    throw new AppError(
      "link_expired",
      "this download URL has expired; call receive_files again for a fresh one",
    );
  }
  return match[2]!;
}
