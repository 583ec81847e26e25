import { rehomeBlob, upsertBlob, type Blob } from "../db/blobs";
import { deleteFile, findFileIncludingDeleted, markFileVerified, type FileRow } from "../db/files";
import { findUpload, type Upload } from "../db/uploads";
import type { Deps } from "../deps";
import { logEvent } from "../log";
import { blobLifecycleDays } from "../storage/lifecycle-rules";
import { recordArchiveListing } from "./archive-listing";
import { storedBytesMatch } from "./original-bytes";
import { deleteObjectIfUnused, rejectUpload } from "./reject-upload";

/**
 * The verify queue's message: a file whose content waits to be checked (with the upload that
 * made it), or, without `uploadId`, a verified file that may be an archive to list once.
 */
export interface VerifyJob {
  fileId: string;
  uploadId?: string;
}

/** Where verification jobs go: the `VERIFY_QUEUE` Cloudflare Queue. */
export interface VerifyQueue {
  send(job: VerifyJob): Promise<unknown>;
}

export type VerifyOutcome = "verified" | "rejected" | "listed" | "nothing_to_do";

/**
 * The verify queue's consumer: checks a pending file's bytes once, then lists it if it is
 * an archive (the share page shows only that stored listing). Idempotent, so a message
 * delivered twice, or re-sent by the sweep after a lost one, does no harm. Throws when the
 * store could not be read; the queue then retries the message.
 */
export async function runVerifyJob(deps: Deps, job: VerifyJob): Promise<VerifyOutcome> {
  const [upload, file] = await Promise.all([
    job.uploadId ? findUpload(deps.db, job.uploadId) : null,
    findFileIncludingDeleted(deps.db, job.fileId),
  ]);
  if (!file || file.deletedAt != null) return "nothing_to_do";
  if (file.verified) {
    await recordArchiveListing(deps, file);
    return "listed";
  }
  if (!upload || upload.fileId !== file.id || upload.status !== "completed") return "nothing_to_do";
  return (await verifyUploadContent(deps, upload, file)) ? "verified" : "rejected";
}

/** Whether a verified file should be listed (on the queue): it says it is a tar or tar.gz. */
export function mayBeArchive(file: Pick<FileRow, "name" | "contentType">): boolean {
  return (
    /\.(tar|tgz|tar\.gz)$/i.test(file.name) ||
    /^application\/(gzip|x-gzip|x-tar|x-gtar)\b/i.test(file.contentType)
  );
}

/**
 * Reads a completed upload back and checks what the store could not: the stored bytes of
 * a multipart upload (stores verify parts, not the whole) and the original size and
 * SHA-256 of a gzip upload. Only then is the content recorded as a blob and the file
 * verified — until then it is nobody's dedup target and its hash is shown nowhere — so an
 * upload that lied about its hash is never handed to anyone else; a lie deletes the file
 * and its bytes. Throws when the store could not be read.
 */
export async function verifyUploadContent(
  deps: Deps,
  upload: Upload,
  file: FileRow,
): Promise<boolean> {
  const started = Date.now();
  if (await storedBytesMatch(deps.store, upload, upload.multipart !== null)) {
    await recordArchiveListing(deps, await adoptVerifiedContent(deps, upload, file));
    logEvent("upload_verified", {
      uploadId: upload.id,
      fileId: file.id,
      size: upload.size,
      storedSize: upload.storedSize,
      durationMs: Date.now() - started,
    });
    return true;
  }
  await deleteFile(deps.db, file.id, deps.now());
  await rejectUpload(deps, upload);
  logEvent(
    "upload_content_mismatch",
    { uploadId: upload.id, fileId: file.id, size: upload.size },
    "warn",
  );
  return false;
}

/**
 * Makes an upload's verified bytes its file's content. Equal content is stored once: when
 * a blob of it exists already (any scope's) whose object will outlive the file, the file
 * moves onto that blob and the upload's own object goes; otherwise the upload's object
 * becomes the blob.
 */
export async function adoptVerifiedContent(
  deps: Deps,
  upload: Upload,
  file: FileRow,
): Promise<FileRow> {
  const mine = blobOf(upload, file);
  let blob = await upsertBlob(deps.db, mine);
  if (blob.storedKey !== upload.storedKey && !(await outlives(deps, blob, file.expiresAt)))
    blob = await rehomeBlob(deps.db, mine);
  await markFileVerified(deps.db, file.id, blob);
  if (blob.storedKey !== upload.storedKey) await deleteObjectIfUnused(deps, upload);
  return { ...file, verified: true, storedKey: blob.storedKey, encoding: blob.encoding };
}

/** True when a blob's object is there and the bucket's age rule keeps it past `until`. */
async function outlives(deps: Deps, blob: Blob, until: number): Promise<boolean> {
  const lifecycleEnd = blob.createdAt + blobLifecycleDays(deps.config.fileTtlSeconds) * 86_400_000;
  return lifecycleEnd > until && (await deps.store.head(blob.storedKey)) !== null;
}

/** The verified-content record of an upload's bytes. */
export function blobOf(upload: Upload, file: FileRow) {
  return {
    sha256: upload.sha256,
    size: upload.size,
    encoding: upload.encoding,
    storedKey: upload.storedKey,
    storedSize: upload.storedSize,
    storedSha256: upload.storedSha256,
    createdAt: file.createdAt,
    expiresAt: file.expiresAt,
  };
}
