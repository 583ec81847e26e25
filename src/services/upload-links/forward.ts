import type { Deps } from "../../deps";
import { AppError } from "../../errors";
import { s3ErrorCode } from "../../storage/s3-http";
import { withKnownLength } from "../../content/known-length";
import {
  ContentRejectedError,
  MultipartUploadGoneError,
  type ExpectedPart,
  type MultipartTarget,
} from "../../storage/blob-store";
import { multipartTarget, uploadGone, type MultipartUpload } from "../uploads/multipart-upload";
import { checkedPart, type IncomingPut } from "../uploads/receive-upload";

/** How long the store URL a part is forwarded to lives: the relay uses it at once. */
const FORWARD_URL_TTL_MS = 5 * 60_000;

/**
 * Streams one part of a browser's upload through the relay to a store that takes PUTs directly
 * (S3): a page never talks to the bucket, so the bucket needs no CORS rule. The store checks
 * the part against its signed length and SHA-256, as it does for a shim's parts.
 */
export async function forwardPart(
  deps: Deps,
  upload: MultipartUpload,
  partNumber: number,
  put: IncomingPut,
  origin: string,
): Promise<void> {
  const part = checkedPart(upload, partNumber, put);
  await sendPart(deps, multipartTarget(upload), part, put.body, origin);
}

/**
 * Streams one part into the store through the relay, checked against its length and SHA-256:
 * by the relay as it streams (stores it fronts, R2) or by the store's signed checksum (S3).
 */
export async function sendPart(
  deps: Deps,
  target: MultipartTarget,
  part: ExpectedPart,
  body: ReadableStream<Uint8Array> | Uint8Array | null,
  origin: string,
): Promise<void> {
  const stream =
    body instanceof Uint8Array ? new Blob([body]).stream() : (body ?? new Blob([]).stream());
  const receive = deps.store.receivePart?.bind(deps.store);
  if (receive) {
    try {
      return await receive(target, part, stream);
    } catch (error) {
      if (error instanceof MultipartUploadGoneError) throw uploadGone();
      if (error instanceof ContentRejectedError) {
        throw new AppError(
          error.reason === "checksum" ? "checksum_mismatch" : "length_mismatch",
          error.message,
        );
      }
      throw error;
    }
  }
  const instructions = await deps.store.createPartUploadUrl({
    ...part,
    target,
    expiresAt: deps.now() + FORWARD_URL_TTL_MS,
    relayOrigin: origin,
  });
  const response = await fetch(instructions.url, {
    method: "PUT",
    headers: instructions.headers,
    body: body instanceof Uint8Array ? body : withKnownLength(stream, part.size),
  });
  if (response.ok) {
    await response.body?.cancel();
    return;
  }
  const code = await s3ErrorCode(response);
  if (/BadDigest|Checksum/i.test(code)) {
    throw new AppError("checksum_mismatch", "body SHA-256 differs from the declared checksum");
  }
  if (/IncompleteBody|ContentLength|EntityTooSmall/i.test(code)) {
    throw new AppError("length_mismatch", "body length differs from the declared size");
  }
  if (/NoSuchUpload/i.test(code)) throw uploadGone();
  throw new AppError("storage_unavailable", `the store refused the part: ${code}`);
}
