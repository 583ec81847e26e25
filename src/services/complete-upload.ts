import { upsertBlob } from "../db/blobs";
import { findFile, insertFileOfUploadStatement, type FileRow } from "../db/files";
import type { Session } from "../db/sessions";
import { finishUploadStatement, findUpload, type Upload } from "../db/uploads";
import type { Deps } from "../deps";
import { AppError } from "../errors";
import { newId } from "../ids";
import { toFileRecord, type FileRecord } from "./file-record";
import { rejectUpload } from "./reject-upload";
import { blobOf, verifyGzipUpload } from "./verify-upload";

/**
 * Registers an upload's file once the store holds its bytes. The store already
 * guaranteed they hash to `storedSha256` (the key is derived from it and every PUT is
 * checksum-signed), so an identity upload is verified content at once. A gzip upload's
 * original size and SHA-256 are checked by inflating it in the background: its file is
 * usable by its owner meanwhile, but it becomes a dedup target only once verified, and
 * is deleted if the check fails. Completing twice returns the same file.
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
  const verified = upload.encoding === "identity";
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
  else deps.waitUntil(verifyGzipUpload(deps, upload, file));
  return toFileRecord(deps, file, origin);
}

async function existingFile(deps: Deps, upload: Upload, origin: string): Promise<FileRecord> {
  const file = upload.fileId ? await findFile(deps.db, upload.fileId) : null;
  if (!file) throw new AppError("file_not_found", "the file of this upload was deleted");
  return toFileRecord(deps, file, origin);
}
