import { AppError } from "../errors";
import { sign, verify } from "./hmac";

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

/** Throws `forbidden` for a bad signature and `upload_expired` for an old URL. */
export async function verifyRelayUploadUrl(
  signingKey: string,
  uploadId: string,
  exp: string | undefined,
  sig: string | undefined,
  nowMs: number,
): Promise<void> {
  if (!exp || !sig || !/^\d{1,12}$/.test(exp))
    throw new AppError("forbidden", "upload URL is not signed");
  if (!(await verify(signingKey, "upload-url", `${uploadId}.${exp}`, sig))) {
    throw new AppError("forbidden", "upload URL signature is invalid");
  }
  if (Number(exp) * 1000 <= nowMs) throw new AppError("upload_expired");
}
