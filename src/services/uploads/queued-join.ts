import { deleteFile, type FileRow } from "../../db/files";
import type { Upload } from "../../db/uploads";
import type { Deps } from "../../deps";
import { AppError } from "../../errors";
import { logEvent } from "../../log";
import type { BlobStore } from "../../storage";
import {
  assembleParts,
  isMultipart,
  multipartTarget,
  type MultipartUpload,
} from "./multipart-upload";
import { rejectUpload } from "./reject-upload";

/**
 * Bytes up to which `complete` reads a pending upload back itself rather than leaving it to
 * the verify queue: a small gzip file is verified by the time its sender prints its link, at
 * the cost of a few milliseconds in that request. Both the stored and the declared original
 * size must fit: a few MiB of gzip can inflate to GiBs, and that costs the queue, not a request.
 */
export const INLINE_VERIFY_MAX_BYTES = 4 * 1024 * 1024;

/** Whether `complete` checks the upload's bytes itself (a small one) rather than the queue. */
export function verifiesInRequest(upload: Upload): boolean {
  return upload.storedSize <= INLINE_VERIFY_MAX_BYTES && upload.size <= INLINE_VERIFY_MAX_BYTES;
}

/**
 * Whether the verify queue, not `complete`, joins the upload's parts: a multipart upload the
 * queue reads back anyway. A store takes seconds to join a GiB of parts (S3 answers
 * CompleteMultipartUpload only once it is done), which the sender would otherwise wait for;
 * `complete` checks that every part is stored (each verified against its signed checksum on
 * its way in) and answers with the file pending. Reads of it wait for the join (`untilJoined`).
 */
export function joinsOnQueue(upload: Upload): upload is MultipartUpload {
  return isMultipart(upload) && !verifiesInRequest(upload);
}

/**
 * On the queue: joins the parts of a completed upload that `complete` left to it (a no-op once
 * joined). False when the store no longer holds every part: the file is deleted and the upload
 * given up. Throws when the store failed (the queue retries).
 */
export async function joinQueuedParts(
  deps: Deps,
  upload: MultipartUpload,
  file: FileRow,
): Promise<boolean> {
  try {
    await assembleParts(deps, upload);
    return true;
  } catch (error) {
    if (!(error instanceof AppError)) throw error;
    await deleteFile(deps.db, file.id, deps.now());
    // `upload_expired`: the store no longer had the upload, which was given up already.
    if (error.code !== "upload_expired") {
      await rejectUpload(deps, upload);
      await deps.store.abortMultipartUpload(multipartTarget(upload));
    }
    logEvent(
      "upload_join_failed",
      { uploadId: upload.id, fileId: file.id, code: error.code, reason: error.message },
      "warn",
    );
    return false;
  }
}

/**
 * Pauses between looks at a pending file's object while the queue joins its parts: about 25 s
 * in all, longer than a store takes to join a few GiB once the queue has the message.
 */
const JOIN_WAITS_MS = [50, 100, 200, 400, 800, ...Array<number>(23).fill(1000)];

/**
 * Waits while the queue joins a pending file's parts, so that a read right after `complete`
 * gets the bytes rather than a 404. A verified file, or a pending one whose object is there,
 * costs nothing or one HEAD; past the wait, `file_assembling` (503) asks the reader to come back.
 */
export async function untilJoined(
  store: BlobStore,
  file: Pick<FileRow, "verified" | "storedKey">,
  waitsMs: readonly number[] = JOIN_WAITS_MS,
): Promise<void> {
  if (file.verified) return;
  for (const wait of [...waitsMs, 0]) {
    if (await store.head(file.storedKey)) return;
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
  }
  throw new AppError("file_assembling");
}
