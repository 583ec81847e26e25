import { findUpload } from "../db/uploads";
import type { Deps } from "../deps";
import { hexToBase64 } from "../encoding";
import { AppError } from "../errors";
import { ContentRejectedError } from "../storage/blob-store";

/** The parts of a relay-bound PUT the relay checks before any byte is stored. */
export interface IncomingPut {
  contentLength: string | undefined;
  checksum: string | undefined;
  body: ReadableStream | null;
}

/**
 * Receives a PUT to the relay's own upload URL (stores the relay fronts, like R2) and
 * streams it into the store, which verifies the SHA-256 as it writes.
 */
export async function receiveUpload(deps: Deps, uploadId: string, put: IncomingPut): Promise<void> {
  const receive = deps.store.receiveUpload?.bind(deps.store);
  if (!receive) throw new AppError("not_found", "this relay's store takes uploads directly");
  const upload = await findUpload(deps.db, uploadId);
  if (!upload) throw new AppError("upload_not_found");
  if (upload.status !== "pending")
    throw new AppError("upload_already_completed", `upload is ${upload.status}`);

  if (put.contentLength !== String(upload.storedSize)) {
    throw new AppError("length_mismatch", `Content-Length must be ${upload.storedSize}`);
  }
  if (put.checksum !== hexToBase64(upload.storedSha256)) {
    throw new AppError(
      "checksum_mismatch",
      "x-amz-checksum-sha256 must be the declared storedSha256 in base64",
    );
  }
  const body = put.body ?? new Blob([]).stream();
  try {
    await receive(upload.storedKey, body, {
      size: upload.storedSize,
      sha256Hex: upload.storedSha256,
    });
  } catch (error) {
    if (error instanceof ContentRejectedError) {
      throw new AppError(
        error.reason === "checksum" ? "checksum_mismatch" : "length_mismatch",
        error.message,
      );
    }
    throw error;
  }
}
