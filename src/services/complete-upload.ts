import { upsertBlob } from "../db/blobs";
import { findFile, insertFileOfUploadStatement, type FileRow } from "../db/files";
import type { Session } from "../db/sessions";
import { extendPendingUpload, finishUploadStatement, findUpload, type Upload } from "../db/uploads";
import type { Deps } from "../deps";
import { AppError } from "../errors";
import { newId } from "../ids";
import type { UploadState } from "../wire-types";
import { singlePutAnswer } from "./declare-upload";
import { toFileRecord, type FileRecord } from "./file-record";
import { assembleParts, isMultipart, resumeMultipart } from "./multipart-upload";
import { rejectUpload } from "./reject-upload";
import { blobOf, verifyUploadContent } from "./verify-upload";

/**
 * Registers an upload's file once the store holds its bytes. For a single PUT the store
 * already guaranteed they hash to `storedSha256` (the key is derived from it and every PUT
 * is checksum-signed), so an identity upload is verified content at once. A multipart
 * upload is first assembled from its parts (each verified on its way in); stores do not
 * verify the whole, so the relay reads it back. That check, and a gzip upload's original
 * size and SHA-256, run in the background: the file is usable by its owner meanwhile, but
 * it becomes a dedup target only once verified, and is deleted if the check fails.
 * Completing twice returns the same file.
 */
export async function completeUpload(
  deps: Deps,
  session: Session,
  uploadId: string,
  origin: string,
): Promise<FileRecord> {
  const { db, store } = deps;
  const upload = await findUpload(db, uploadId);
  if (!upload || upload.sessionId !== session.id) throw new AppError("upload_not_found");
  if (upload.status === "completed") return existingFile(deps, upload, origin);
  if (upload.status === "rejected") throw new AppError("upload_rejected");
  if (isMultipart(upload)) await assembleParts(deps, upload);

  const head = await store.head(upload.storedKey);
  if (!head) {
    throw new AppError(
      "upload_not_uploaded",
      "nothing was uploaded for this upload yet: PUT the bytes first",
    );
  }
  if (head.size !== upload.storedSize) {
    await rejectUpload(deps, upload);
    throw new AppError("content_mismatch", "stored size differs from the declared storedSize");
  }

  const now = deps.now();
  const verified = upload.encoding === "identity" && !isMultipart(upload);
  const file: FileRow = {
    id: newId("fil"),
    sessionId: session.id,
    name: upload.name,
    size: upload.size,
    sha256: upload.sha256,
    contentType: upload.contentType,
    encoding: upload.encoding,
    storedKey: upload.storedKey,
    verified,
    deduped: false,
    createdAt: now,
    expiresAt: now + deps.config.fileTtlSeconds * 1000,
  };
  // One transaction: the file exists only if this request moved the upload out of pending.
  await db.batch([
    finishUploadStatement(db, upload.id, "completed", file.id),
    insertFileOfUploadStatement(db, file, upload.id),
  ]);
  const completed = await findUpload(db, upload.id);
  if (completed?.fileId !== file.id) return existingFile(deps, completed ?? upload, origin);
  if (verified) await upsertBlob(db, blobOf(upload, file));
  else deps.waitUntil(verifyUploadContent(deps, upload, file));
  return toFileRecord(deps, file, origin);
}

/** `GET /v1/uploads/:id`: where an upload stands, with fresh URLs for what is still missing. */
export async function uploadState(
  deps: Deps,
  session: Session,
  uploadId: string,
  origin: string,
): Promise<UploadState> {
  const upload = await findUpload(deps.db, uploadId);
  if (!upload || upload.sessionId !== session.id) throw new AppError("upload_not_found");
  if (upload.status === "completed") {
    return { status: "completed", uploadId, file: await existingFile(deps, upload, origin) };
  }
  if (upload.status === "rejected") throw new AppError("upload_rejected");
  if (isMultipart(upload)) return resumeMultipart(deps, upload, origin);
  const expiresAt = deps.now() + deps.config.uploadUrlTtlSeconds * 1000;
  await extendPendingUpload(deps.db, upload.id, expiresAt);
  return singlePutAnswer(
    deps,
    { ...upload, expiresAt: Math.max(expiresAt, upload.expiresAt) },
    origin,
  );
}

async function existingFile(deps: Deps, upload: Upload, origin: string): Promise<FileRecord> {
  const file = upload.fileId ? await findFile(deps.db, upload.fileId) : null;
  if (!file) throw new AppError("file_not_found", "the file of this upload was deleted");
  return toFileRecord(deps, file, origin);
}
