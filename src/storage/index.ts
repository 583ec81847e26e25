import { createRelayPartUrl, createRelayUploadUrl } from "../auth/upload-url";
import { UploadPartLedger } from "../db/upload-parts";
import type { Config } from "../config";
import type { Bindings } from "../env";
import type { BlobStore } from "./blob-store";
import { R2BlobStore } from "./r2";
import { S3BlobStore } from "./s3";

export type { BlobStore } from "./blob-store";

/** Chooses the store named by `STORAGE`; the rest of the relay sees only `BlobStore`. */
export function createBlobStore(config: Config, env: Bindings): BlobStore {
  if (config.storage === "s3" && config.s3) return new S3BlobStore(config.s3);
  const signer = {
    upload: (origin: string, uploadId: string, expiresAt: number) =>
      createRelayUploadUrl(config.signingKey, origin, uploadId, expiresAt),
    part: (origin: string, uploadId: string, partNumber: number, expiresAt: number) =>
      createRelayPartUrl(config.signingKey, origin, uploadId, partNumber, expiresAt),
  };
  return new R2BlobStore(env.BUCKET, signer, new UploadPartLedger(env.DB));
}

/** Object keys are derived from the SHA-256 of the stored bytes, which the store verifies. */
export function blobKey(storedSha256: string): string {
  return `blobs/${storedSha256.slice(0, 2)}/${storedSha256}`;
}

/**
 * Where an upload's bytes land: a key of its own (same `blobs/` lifecycle), never the
 * content key another upload may already hold. So completing an upload proves that this
 * upload stored the bytes (a hash someone else's bytes answer to unlocks nothing), and a
 * multipart upload, whose parts the store verified but not the whole, counts as content
 * only once the relay has read it back. Equal content is still stored once: a verified
 * upload whose content already has a blob moves its file onto that blob and is deleted.
 */
export function uploadKey(storedSha256: string, uploadId: string): string {
  return `${blobKey(storedSha256)}.${uploadId}`;
}

/**
 * Where the bytes of an upload declared without its hashes land (same `blobs/` lifecycle):
 * a key of its own that names no content, until the relay has read it back.
 */
export function deferredUploadKey(uploadId: string): string {
  return `blobs/deferred/${uploadId}`;
}
