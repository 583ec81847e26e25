import { z } from "zod";
import type { Deps } from "../../deps";
import { partCount } from "../../part-plan";
import type { PartUpload } from "../../wire-types";
import { byteCount, sha256Hex } from "../validation";
import { deferredPartLength } from "./deferred-gzip";
import { checkPartNumber } from "./part-number";
import type { MultipartUpload } from "./multipart-upload";

/**
 * Parts to sign, each with the SHA-256 of its bytes and, for gzip whose stored size is not
 * known yet, its length: the body of `POST /v1/uploads/:id/parts`, and what a declare with
 * `hashAtComplete` may carry for its first parts (docs/api.md).
 */
export const partDigests = z
  .array(
    z
      .object({ partNumber: z.number().int(), sha256: sha256Hex, size: byteCount.optional() })
      .strict(),
  )
  .min(1)
  .max(100);

/** `POST /v1/uploads/:id/parts`. */
export const partsBody = z.object({ parts: partDigests }).strict();

export type PartDigest = z.infer<typeof partDigests>[number];

/** Refuses part numbers outside 1..count for an upload of `storedSize` bytes cut at `partSize`. */
export function checkPartNumbers(parts: PartDigest[], storedSize: number, partSize: number): void {
  const count = partCount(storedSize, partSize);
  for (const { partNumber } of parts) checkPartNumber(partNumber, count);
}

/** Signed PUTs for `parts` of a deferred upload, each bound to the digest its sender gave. */
export async function signPartDigests(
  deps: Deps,
  upload: MultipartUpload,
  parts: PartDigest[],
  origin: string,
): Promise<PartUpload[]> {
  const { storeUploadId } = upload.multipart;
  // Every length first: a bad part refuses the request before anything is signed.
  const lengths = parts.map(({ partNumber, size }) => deferredPartLength(upload, partNumber, size));
  const target = { uploadId: upload.id, storeUploadId, key: upload.storedKey };
  return Promise.all(
    parts.map(async ({ partNumber, sha256 }, index) => ({
      partNumber,
      put: await deps.store.createPartUploadUrl({
        target,
        partNumber,
        size: lengths[index]!,
        sha256Hex: sha256,
        expiresAt: upload.expiresAt,
        relayOrigin: origin,
      }),
    })),
  );
}
