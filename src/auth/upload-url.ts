import { AppError } from "../errors";
import { sign, verify, type SigningPurpose } from "./hmac";

/** The relay's own upload URLs (R2 backend): `/v1/blob-uploads/<uploadId>?exp=..&sig=..`. */
export async function createRelayUploadUrl(
  signingKey: string,
  origin: string,
  uploadId: string,
  expiresAtMs: number,
): Promise<string> {
  const exp = Math.floor(expiresAtMs / 1000);
  const sig = await sign(signingKey, "upload-url", `${uploadId}.${exp}`);
  return `${origin}/v1/blob-uploads/${uploadId}?exp=${exp}&sig=${sig}`;
}

/** The relay's URL for one part of a multipart upload: `/v1/blob-uploads/<uploadId>/parts/<n>?…`. */
export async function createRelayPartUrl(
  signingKey: string,
  origin: string,
  uploadId: string,
  partNumber: number,
  expiresAtMs: number,
): Promise<string> {
  const exp = Math.floor(expiresAtMs / 1000);
  const sig = await sign(signingKey, "upload-part-url", `${uploadId}.${partNumber}.${exp}`);
  return `${origin}/v1/blob-uploads/${uploadId}/parts/${partNumber}?exp=${exp}&sig=${sig}`;
}

/** Throws `forbidden` for a bad signature and `upload_expired` for an old URL. */
export function verifyRelayUploadUrl(
  signingKey: string,
  uploadId: string,
  exp: string | undefined,
  sig: string | undefined,
  nowMs: number,
): Promise<void> {
  return verifySignedUrl(signingKey, "upload-url", [uploadId], exp, sig, nowMs);
}

/** As `verifyRelayUploadUrl`, for one part's URL. */
export function verifyRelayPartUrl(
  signingKey: string,
  uploadId: string,
  partNumber: string,
  exp: string | undefined,
  sig: string | undefined,
  nowMs: number,
): Promise<void> {
  return verifySignedUrl(signingKey, "upload-part-url", [uploadId, partNumber], exp, sig, nowMs);
}

async function verifySignedUrl(
  signingKey: string,
  purpose: SigningPurpose,
  fields: string[],
  exp: string | undefined,
  sig: string | undefined,
  nowMs: number,
): Promise<void> {
  if (!exp || !sig || !/^\d{1,12}$/.test(exp))
    throw new AppError("forbidden", "upload URL is not signed");
  if (!(await verify(signingKey, purpose, [...fields, exp].join("."), sig))) {
    throw new AppError("forbidden", "upload URL signature is invalid");
  }
  if (Number(exp) * 1000 <= nowMs) throw new AppError("upload_expired");
}
