import { expect } from "vitest";
import { readConfig } from "../../src/config";
import { findUpload } from "../../src/db/uploads";
import { MultipartUploadGoneError } from "../../src/storage/blob-store";
import { createBlobStore, deferredUploadKey } from "../../src/storage";
import type { PartDigest } from "../../src/services/uploads/signed-parts";
import type { Backend } from "./backends";
import type { RelayClient } from "./relay-client";
import { partBytes, putBytes, type MultipartAnswer } from "./send";

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

/**
 * Asks for the signed PUTs of a deferred upload's `parts` and PUTs each its bytes of `stored`
 * (cut by `partSize`), expecting every step to succeed.
 */
export async function putSignedParts(
  client: RelayClient,
  token: string,
  uploadId: string,
  parts: PartDigest[],
  stored: Uint8Array,
  partSize: number,
): Promise<void> {
  const path = `/v1/uploads/${uploadId}/parts`;
  const signed = await client.call("POST", path, { token, json: { parts } });
  expect(signed.status).toBe(200);
  const { parts: puts } = (await signed.json()) as Pick<MultipartAnswer, "parts">;
  for (const { partNumber, put } of puts) {
    const put200 = await putBytes(client, put, partBytes(stored, partSize, partNumber));
    expect(put200.status, await put200.clone().text()).toBe(200);
  }
}
