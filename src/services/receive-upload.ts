import { findUpload, markUploadVerified } from "../db/uploads";
import type { Deps } from "../deps";
import { hexToBase64 } from "../encoding";
import { AppError } from "../errors";
import { ContentRejectedError } from "../storage/blob-store";
import { rejectUpload } from "./reject-upload";
import { inflatingDigest, type Digest } from "./stream-digest";

/** The parts of a relay-bound PUT the relay checks before any byte is stored. */
export interface IncomingPut {
  contentLength: string | undefined;
  checksum: string | undefined;
  body: ReadableStream | null;
}

/**
 * Receives a PUT to the relay's own upload URL (stores the relay fronts, like R2) and
 * streams it into the store, which verifies the stored SHA-256 as it writes. A gzip
 * upload is inflated and hashed on the way through, at the pace of the slower side,
 * so its original size and SHA-256 are known to be right before it is ever completed.
 */
export async function receiveUpload(deps: Deps, uploadId: string, put: IncomingPut): Promise<void> {
  const receive = deps.store.receiveUpload?.bind(deps.store);
  if (!receive) throw new AppError("not_found", "this relay's store takes uploads directly");
  const upload = await findUpload(deps.db, uploadId);
  if (!upload) throw new AppError("upload_not_found");
  if (upload.status !== "pending") {
    throw new AppError("upload_already_completed", `upload is ${upload.status}`);
  }
  if (put.contentLength !== String(upload.storedSize)) {
    throw new AppError("length_mismatch", `Content-Length must be ${upload.storedSize}`);
  }
  if (put.checksum !== hexToBase64(upload.storedSha256)) {
    throw new AppError(
      "checksum_mismatch",
      "x-amz-checksum-sha256 must be the declared storedSha256 in base64",
    );
  }

  const verifying = upload.encoding === "gzip" ? inflatingDigest(upload.size) : null;
  const original: Promise<Digest | null> = verifying
    ? verifying.result.catch(() => null)
    : Promise.resolve(null);
  const body = put.body ?? new Blob([]).stream();
  const expected = { size: upload.storedSize, sha256Hex: upload.storedSha256 };
  try {
    await receive(
      upload.storedKey,
      verifying ? body.pipeThrough(verifying.transform) : body,
      expected,
    );
  } catch (error) {
    if (verifying && !(await original)) return refuse(deps, upload);
    if (error instanceof ContentRejectedError) {
      throw new AppError(
        error.reason === "checksum" ? "checksum_mismatch" : "length_mismatch",
        error.message,
      );
    }
    throw error;
  }
  if (verifying) {
    const digest = await original;
    if (!digest || digest.size !== upload.size || digest.sha256Hex !== upload.sha256)
      return refuse(deps, upload);
    await markUploadVerified(deps.db, upload.id);
  }
}

async function refuse(deps: Deps, upload: Parameters<typeof rejectUpload>[1]): Promise<never> {
  await rejectUpload(deps, upload);
  throw new AppError(
    "content_mismatch",
    "the uploaded gzip does not inflate to the declared size and sha256",
  );
}
