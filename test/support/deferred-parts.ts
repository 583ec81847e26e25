import { expect } from "vitest";
import { readConfig } from "../../src/config";
import { findUpload } from "../../src/db/uploads";
import { MultipartUploadGoneError } from "../../src/storage/blob-store";
import { createBlobStore, deferredUploadKey } from "../../src/storage";
import type { Backend } from "./backends";

/**
 * Checks that nothing of a deferred upload (declared with `hashAtComplete`) is left in the
 * store: no parts (S3: the multipart upload is gone; R2: none recorded) and no object.
 */
export async function expectPartsGone(backend: Backend, uploadId: string): Promise<void> {
  const store = createBlobStore(readConfig(backend.env), backend.env);
  const upload = await findUpload(backend.env.DB, uploadId);
  const storeUploadId = upload?.multipart?.storeUploadId ?? "";
  const key = deferredUploadKey(uploadId);
  const target = { uploadId, storeUploadId, key };
  if (backend.name === "s3") {
    await expect(store.listParts(target)).rejects.toBeInstanceOf(MultipartUploadGoneError);
  } else {
    expect(await store.listParts(target)).toEqual([]);
  }
  expect(await store.head(key)).toBeNull();
}
