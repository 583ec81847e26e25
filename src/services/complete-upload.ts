import { upsertBlob } from "../db/blobs";
import { findFile, type FileRow } from "../db/files";
import type { Session } from "../db/sessions";
import { finishUploadStatement, findUpload, type Upload } from "../db/uploads";
import type { Deps } from "../deps";
import { AppError } from "../errors";
import { newId } from "../ids";
import { toFileRecord, type FileRecord } from "./file-record";
import { digestOriginal } from "./original-bytes";
import { deleteObjectIfUnused, rejectUpload } from "./reject-upload";

/**
 * Verifies an upload and registers its file. The store already guaranteed the stored
 * bytes hash to `storedSha256` (the key is derived from it and every PUT is
 * checksum-signed); for gzip the relay inflates the object once and checks the
 * original size and SHA-256 before the content becomes a dedup target.
 * Completing twice returns the same file, so a client may retry safely.
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
  if (!head)
    throw new AppError(
      "upload_not_uploaded",
      "nothing was uploaded for this upload yet: PUT the bytes first",
    );
  if (head.size !== upload.storedSize) {
    await rejectUpload(deps, upload);
    throw new AppError("content_mismatch", "stored size differs from the declared storedSize");
  }
  if (upload.encoding === "gzip" && !upload.verified) {
    const original = await digestOriginal(store, upload);
    if (!original || original.size !== upload.size || original.sha256Hex !== upload.sha256) {
      await rejectUpload(deps, upload);
      throw new AppError(
        "content_mismatch",
        "the uploaded gzip does not inflate to the declared size and sha256",
      );
    }
  }

  const now = deps.now();
  const expiresAt = now + deps.config.fileTtlSeconds * 1000;
  const blob = await upsertBlob(db, {
    sha256: upload.sha256,
    size: upload.size,
    encoding: upload.encoding,
    storedKey: upload.storedKey,
    storedSize: upload.storedSize,
    storedSha256: upload.storedSha256,
    createdAt: now,
    expiresAt,
  });
  const file: FileRow = {
    id: newId("fil"),
    sessionId: session.id,
    name: upload.name,
    size: upload.size,
    sha256: upload.sha256,
    contentType: upload.contentType,
    deduped: false,
    createdAt: now,
    expiresAt,
  };
  // One transaction: the file exists only if this request moved the upload out of pending.
  await db.batch([
    finishUploadStatement(db, upload.id, "completed", file.id),
    db
      .prepare(
        `INSERT INTO files (id, session_id, name, size, sha256, content_type, deduped, created_at, expires_at)
         SELECT ?, ?, ?, ?, ?, ?, 0, ?, ?
         WHERE EXISTS (SELECT 1 FROM uploads WHERE id = ? AND file_id = ?)`,
      )
      .bind(
        file.id,
        file.sessionId,
        file.name,
        file.size,
        file.sha256,
        file.contentType,
        now,
        expiresAt,
        upload.id,
        file.id,
      ),
  ]);
  if (blob.storedKey !== upload.storedKey) await deleteObjectIfUnused(deps, upload);
  const completed = await findUpload(db, upload.id);
  if (!completed) throw new AppError("upload_not_found");
  return existingFile(deps, completed, origin);
}

async function existingFile(deps: Deps, upload: Upload, origin: string): Promise<FileRecord> {
  const file = upload.fileId ? await findFile(deps.db, upload.fileId) : null;
  if (!file) throw new AppError("file_not_found", "the file of this upload was deleted");
  return toFileRecord(deps, file, origin);
}
