import { createRelayUploadUrl } from "../auth/upload-url";
import type { Config } from "../config";
import type { Bindings } from "../env";
import type { BlobStore } from "./blob-store";
import { R2BlobStore } from "./r2";
import { S3BlobStore } from "./s3";

export type { BlobStore } from "./blob-store";

/** Chooses the store named by `STORAGE`; the rest of the relay sees only `BlobStore`. */
export function createBlobStore(config: Config, env: Bindings): BlobStore {
  if (config.storage === "s3" && config.s3) return new S3BlobStore(config.s3);
  return new R2BlobStore(env.BUCKET, (origin, uploadId, expiresAt) =>
    createRelayUploadUrl(config.signingKey, origin, uploadId, expiresAt),
  );
}

/** Object keys are derived from the SHA-256 of the stored bytes, which the store verifies. */
export function blobKey(storedSha256: string): string {
  return `blobs/${storedSha256.slice(0, 2)}/${storedSha256}`;
}
