import { upsertBlob } from "../db/blobs";
import { deleteFile, markFileVerified, type FileRow } from "../db/files";
import type { Upload } from "../db/uploads";
import type { Deps } from "../deps";
import { logEvent } from "../log";
import { storedBytesMatch } from "./original-bytes";
import { rejectUpload } from "./reject-upload";

/**
 * Reads a completed upload back and checks what the store could not: the stored bytes of
 * a multipart upload (stores verify parts, not the whole) and the original size and
 * SHA-256 of a gzip upload. Only then is the content recorded as a blob — the one thing
 * dedup ever matches — so an upload that lied about its hash is never handed to anyone
 * else; a lie deletes the file and its bytes.
 */
export async function verifyUploadContent(
  deps: Deps,
  upload: Upload,
  file: FileRow,
): Promise<boolean> {
  if (await storedBytesMatch(deps.store, upload, upload.multipart !== null)) {
    await upsertBlob(deps.db, blobOf(upload, file));
    await markFileVerified(deps.db, file.id);
    logEvent("upload_verified", {
      uploadId: upload.id,
      fileId: file.id,
      size: upload.size,
      storedSize: upload.storedSize,
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
