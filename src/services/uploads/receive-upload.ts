import { findUpload } from "../../db/uploads";
import type { Deps } from "../../deps";
import { base64ToHex, hexToBase64 } from "../../encoding";
import { AppError } from "../../errors";
import { partLength } from "../../part-plan";
import { deferredPartLength, storedSizeUnknown } from "./deferred-gzip";
import { checkPartNumber } from "./part-number";
import { ContentRejectedError, MultipartUploadGoneError } from "../../storage/blob-store";
import {
  isMultipart,
  multipartTarget,
  plannedParts,
  uploadGone,
  type MultipartUpload,
} from "./multipart-upload";

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

  if (upload.multipart) throw new AppError("invalid_request", "this upload goes up in parts");
  checkPutHeaders(put, upload.storedSize, upload.storedSha256);
  const body = put.body ?? new Blob([]).stream();
  await rejectingContent(
    receive(upload.storedKey, body, { size: upload.storedSize, sha256Hex: upload.storedSha256 }),
  );
}

/**
 * Receives one part of a multipart upload (stores the relay fronts) and streams it into
 * the store, hashing it on the way: a part is recorded only if it is the declared bytes.
 */
export async function receivePart(
  deps: Deps,
  uploadId: string,
  partNumber: number,
  put: IncomingPut,
): Promise<void> {
  const receive = deps.store.receivePart?.bind(deps.store);
  if (!receive) throw new AppError("not_found", "this relay's store takes uploads directly");
  const upload = await findUpload(deps.db, uploadId);
  if (!upload || !isMultipart(upload)) throw new AppError("upload_not_found");
  if (upload.status !== "pending")
    throw new AppError("upload_already_completed", `upload is ${upload.status}`);
  const part = checkedPart(upload, partNumber, put);
  const body = put.body ?? new Blob([]).stream();
  try {
    await rejectingContent(receive(multipartTarget(upload), part, body));
  } catch (error) {
    throw error instanceof MultipartUploadGoneError ? uploadGone() : error;
  }
}

/**
 * Part `partNumber` of the upload as its PUT must carry it: its length and SHA-256, checked.
 * An upload declared without part digests takes the SHA-256 its PUT carries (the one its URL
 * was asked for with); the store verifies the body against it as it writes.
 */
export function checkedPart(
  upload: MultipartUpload,
  partNumber: number,
  put: IncomingPut,
): { partNumber: number; size: number; sha256Hex: string } {
  const { partSize, partSha256 } = upload.multipart;
  const count = plannedParts(upload);
  const sha256Hex =
    partSha256.length === 0 ? checksumHex(put.checksum) : partSha256[partNumber - 1];
  checkPartNumber(partNumber, count);
  // gzip whose stored size comes at complete: each part is as long as its sender says, within
  // the plan (`deferredPartLength`); the part's digest and the read-back check the rest.
  const sent = Number(put.contentLength);
  const size =
    storedSizeUnknown(upload) && Number.isInteger(sent)
      ? deferredPartLength(upload, partNumber, sent)
      : partLength(upload.storedSize, partSize, partNumber);
  checkPutHeaders(put, size, sha256Hex ?? "");
  return { partNumber, size, sha256Hex: sha256Hex ?? "" };
}

/** The hex of a base64 `x-amz-checksum-sha256`, or undefined when it is not one. */
function checksumHex(checksum: string | undefined): string | undefined {
  if (checksum === undefined || !/^[A-Za-z0-9+/]{43}=$/.test(checksum)) return undefined;
  return base64ToHex(checksum);
}

/** The checks every relay-bound PUT passes before a byte is stored. */
export function checkPutHeaders(put: IncomingPut, size: number, sha256Hex: string): void {
  if (put.contentLength !== String(size)) {
    throw new AppError("length_mismatch", `Content-Length must be ${size}`);
  }
  if (put.checksum !== hexToBase64(sha256Hex)) {
    throw new AppError(
      "checksum_mismatch",
      "x-amz-checksum-sha256 must be the declared SHA-256 in base64",
    );
  }
}

/** A store's refusal of a body becomes the matching 400. */
async function rejectingContent(write: Promise<void>): Promise<void> {
  try {
    await write;
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
