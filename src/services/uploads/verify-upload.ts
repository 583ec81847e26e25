import { findLiveBlob, rehomeBlob, upsertBlob, type Blob } from "../../db/blobs";
import {
  deleteFile,
  findFileIncludingDeleted,
  markFileVerified,
  type FileRow,
} from "../../db/files";
import { recordMemberTable } from "../../db/gzip-members";
import { findUpload, type Upload } from "../../db/uploads";
import type { Deps } from "../../deps";
import { logEvent } from "../../log";
import { blobKey } from "../../storage";
import { STORE_URL_TTL_MS } from "../../storage/blob-store";
import { blobRuleEnd } from "../../storage/lifecycle-rules";
import { recordArchiveListing } from "../sharing/archive-listing";
import { storedBytesMatch } from "../original-bytes";
import { deleteObjectIfUnused, rejectUpload } from "./reject-upload";
import type { VerifyJob } from "../../verify-job";
import { settleRequestOfFile } from "../upload-links/upload-requests";
import { multipartTarget } from "./multipart-upload";
import { joinQueuedParts, joinsOnQueue } from "./queued-join";

/** Seconds a moved upload's object is kept: past the life of any store URL that names it. */
const DROP_OBJECT_DELAY_SECONDS = STORE_URL_TTL_MS / 1000 + 30;

export type VerifyOutcome = "verified" | "rejected" | "settled" | "nothing_to_do";

/**
 * The verify queue's consumer: joins a pending file's parts when `complete` left that to it
 * (`joinsOnQueue`), checks its bytes once, then settles a verified
 * one: a file sent through an upload link goes into the asking session's inbox (a rejected
 * one opens its link again), its upload's object gives way to an older copy of the same
 * content (the store keeps one), and an archive is listed for the share page. Settling runs
 * here, never in the request, so no answer's timing tells whether other scopes hold the
 * content. Idempotent, so a message delivered twice, or re-sent by the sweep after a lost
 * one, does no harm. Throws when the store could not be read; the queue then retries it.
 */
export async function runVerifyJob(deps: Deps, job: VerifyJob): Promise<VerifyOutcome> {
  if (job.dropUploadObject) {
    const moved = job.uploadId ? await findUpload(deps.db, job.uploadId) : null;
    if (moved) await deleteObjectIfUnused(deps, moved);
    return "settled";
  }
  const [upload, found] = await Promise.all([
    job.uploadId ? findUpload(deps.db, job.uploadId) : null,
    findFileIncludingDeleted(deps.db, job.fileId),
  ]);
  const ours = upload?.fileId === job.fileId && upload.status === "completed" ? upload : null;
  if (!found || found.deletedAt != null) {
    // Deleted before its parts were joined: they go now rather than with the bucket's rule.
    if (ours && joinsOnQueue(ours)) await deps.store.abortMultipartUpload(multipartTarget(ours));
    return "nothing_to_do";
  }
  let file = found;
  let outcome: VerifyOutcome = "settled";
  if (!file.verified) {
    if (!ours) return "nothing_to_do";
    if (joinsOnQueue(ours) && !(await joinQueuedParts(deps, ours, file))) {
      await settleRequestOfFile(deps, file.id);
      return "rejected";
    }
    if (!(await verifyUploadContent(deps, ours, file))) {
      // A deleted file never used its upload link up: the link takes a file again.
      await settleRequestOfFile(deps, file.id);
      return "rejected";
    }
    file = { ...file, verified: true };
    outcome = "verified";
  }
  // A file that came through an upload link reaches the session's inbox now, polled or not.
  await settleRequestOfFile(deps, file.id);
  if (ours) file = await shareStoredCopy(deps, ours, file);
  await recordArchiveListing(deps, file);
  return outcome;
}

/**
 * Reads a completed upload back and checks what the store could not: the stored bytes of
 * a multipart upload (stores verify parts, not the whole) and the original size and
 * SHA-256 of a gzip upload. Only then is the content recorded as a blob and the file
 * verified — until then it is nobody's dedup target and its hash is shown nowhere — so an
 * upload that lied about its hash is never handed to anyone else; a lie deletes the file
 * and its bytes. Its cost depends on the upload alone. Throws when the store could not be read.
 */
export async function verifyUploadContent(
  deps: Deps,
  upload: Upload,
  file: FileRow,
): Promise<boolean> {
  const started = Date.now();
  if (await storedBytesMatch(deps.store, upload, upload.multipart !== null)) {
    await recordVerified(deps, upload, file);
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
 * Records an upload's bytes as verified content: its member table (verified with them), the
 * blob (kept as it is when one for this content exists) and the file, still on its upload's
 * own object. One statement each, whatever other scopes hold.
 */
export async function recordVerified(deps: Deps, upload: Upload, file: FileRow): Promise<void> {
  await keepMemberTable(deps, upload, upload.storedKey);
  await upsertBlob(deps.db, blobOf(upload, file));
  await markFileVerified(deps.db, file.id, upload);
}

/**
 * Records the upload's verified member table for an object holding its stored bytes, before
 * any file points there: a file on that key is then never read as untabled.
 */
async function keepMemberTable(deps: Deps, upload: Upload, storedKey: string): Promise<void> {
  if (upload.members) await recordMemberTable(deps.db, storedKey, upload.members, deps.now());
}

/**
 * Equal stored bytes are stored once: when the content's blob is another object of the same
 * bytes (the same encoding) that will outlive the file, the file moves onto it and its
 * upload's own object goes; when that object would not outlive it (or is gone), the blob
 * moves onto the upload's object instead. A blob in another encoding is never moved onto:
 * the file would be served as another scope stored it (a gzip copy inflated on every read,
 * a timer's tell that the content was held elsewhere). On a store whose presigned URLs show
 * keys, see `settleOnContentKey`.
 */
async function shareStoredCopy(deps: Deps, upload: Upload, file: FileRow): Promise<FileRow> {
  if (file.storedKey !== upload.storedKey) return file;
  const blob = await findLiveBlob(deps.db, file.sha256, 0);
  const { copy } = deps.store;
  if (copy) return settleOnContentKey(deps, copy.bind(deps.store), upload, file, blob);
  if (!blob || blob.storedKey === file.storedKey) return file;
  if (!(await outlives(deps, blob, file.expiresAt))) {
    await rehomeBlob(deps.db, blobOf(upload, file));
    return file;
  }
  if (blob.storedSha256 !== upload.storedSha256) return file;
  await keepMemberTable(deps, upload, blob.storedKey);
  await markFileVerified(deps.db, file.id, blob);
  await deleteObjectIfUnused(deps, upload);
  return { ...file, storedKey: blob.storedKey, encoding: blob.encoding };
}

/**
 * Where a presigned URL shows the key (S3), a file may only move onto the key its stored bytes
 * alone name: the blob's object when it is on that very key (same bytes, same encoding) and
 * outlives the file, else a copy of the upload's object made there (made or refreshed, then
 * the blob's). Another scope's upload key in a download's URL would tell the owner that
 * another scope sent this content first, and another encoding would turn its redirect into a
 * relay answer; the content key tells nothing its bytes do not.
 */
async function settleOnContentKey(
  deps: Deps,
  copy: (fromKey: string, toKey: string) => Promise<void>,
  upload: Upload,
  file: FileRow,
  blob: Blob | null,
): Promise<FileRow> {
  const contentKey = blobKey(upload.storedSha256);
  let home = blob;
  if (home?.storedKey !== contentKey || !(await outlives(deps, home, file.expiresAt))) {
    await copy(upload.storedKey, contentKey);
    const fresh = { ...blobOf(upload, file), storedKey: contentKey, createdAt: deps.now() };
    home = await rehomeBlob(deps.db, fresh);
  }
  if (home.storedSha256 === upload.storedSha256)
    await keepMemberTable(deps, upload, home.storedKey);
  await markFileVerified(deps.db, file.id, home);
  // A download redirected a moment ago may still be on its way to the old object.
  await deps.verifyQueue.send(
    { fileId: file.id, uploadId: upload.id, dropUploadObject: true },
    { delaySeconds: DROP_OBJECT_DELAY_SECONDS },
  );
  return { ...file, storedKey: home.storedKey, encoding: home.encoding };
}

/** Whether a verified file should be listed (on the queue): it says it is a tar or tar.gz. */
export function mayBeArchive(file: Pick<FileRow, "name" | "contentType">): boolean {
  return (
    /\.(tar|tgz|tar\.gz)$/i.test(file.name) ||
    /^application\/(gzip|x-gzip|x-tar|x-gtar)\b/i.test(file.contentType)
  );
}

/** True when a blob's object is there and the bucket's age rule keeps it past `until`. */
async function outlives(deps: Deps, blob: Blob, until: number): Promise<boolean> {
  return (
    blobRuleEnd(blob.createdAt, deps.config.fileTtlSeconds) > until &&
    (await deps.store.head(blob.storedKey)) !== null
  );
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
