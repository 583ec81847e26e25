import { findFile, insertFileOfUploadStatement, type FileRow } from "../../db/files";
import type { Session } from "../../db/sessions";
import { completeUploadStatement, findUpload, type Upload } from "../../db/uploads";
import type { Deps } from "../../deps";
import { AppError } from "../../errors";
import { newId } from "../../ids";
import type { UploadState } from "../../wire-types";
import { singlePutAnswer } from "./declare-upload";
import { toFileRecord, type FileRecord } from "../file-record";
import { assembleParts, checkPartsStored, isMultipart, resumeMultipart } from "./multipart-upload";
import { joinsOnQueue, verifiesInRequest } from "./queued-join";
import { extendUpload } from "./extend-upload";
import { rejectUpload } from "./reject-upload";
import { isDeferred, settleDeferredHash } from "./deferred-upload";
import type { CompleteBody } from "./deferred-gzip";
import { recordVerified, verifyUploadContent } from "./verify-upload";
import type { FileOrigin } from "../file-origin";

/**
 * Registers an upload's file once the store holds its bytes, while its URL is still valid
 * (an expired upload no longer counts against the quota, so it cannot be completed). For
 * a single PUT the store already guaranteed they hash to `storedSha256` (every PUT is
 * checksum-signed, to a key of the upload's own), so an identity upload is verified
 * content at once. A multipart upload's parts were each verified on their way in; a small one
 * is assembled here, a large one on the queue (`joinsOnQueue`: its parts are only checked to be
 * all there). Stores do not verify the whole, so the relay reads it back. That check, and
 * a gzip upload's original size and SHA-256, run here for small files and otherwise on the
 * verify queue: until then the file is `pending` (its owner can use it, its hash is shown
 * nowhere, it is nobody's dedup target), and it is deleted if the check fails.
 * Completing twice returns the same file. An upload declared without its hashes gets its
 * SHA-256 here (`sha256`), and may turn out to be a dedup hit (`settleDeferredHash`).
 */
export async function completeUpload(
  deps: Deps,
  session: Session,
  uploadId: string,
  origin: string,
  fileOrigin: FileOrigin = "sandbox",
  body: CompleteBody = {},
): Promise<FileRecord> {
  const { sha256 } = body;
  const { db } = deps;
  let upload = await findUpload(db, uploadId);
  if (!upload || upload.sessionId !== session.id) throw new AppError("upload_not_found");
  if (upload.status === "completed") return existingFile(deps, upload, origin);
  if (upload.status === "rejected") throw new AppError("upload_rejected");
  // Its bytes stopped counting against the quota when its URL expired: renewing it (GET,
  // within the quota) comes first. It is kept, not deleted, so that a renewal can finish it.
  if (upload.expiresAt <= deps.now()) throw uploadExpired(upload);
  if (isDeferred(upload)) {
    const settled = await settleDeferredHash(deps, session, upload, body, origin);
    if ("file" in settled) return settled.file;
    upload = settled.upload;
    if (upload.status === "completed") return existingFile(deps, upload, origin);
  } else if (sha256 !== undefined && sha256 !== upload.sha256) {
    throw new AppError("content_mismatch", "sha256 differs from the one this upload declared");
  }
  if (joinsOnQueue(upload)) await checkPartsStored(deps, upload);
  else await checkStoredObject(deps, upload);

  const now = deps.now();
  const verified = upload.encoding === "identity" && !isMultipart(upload);
  const file = fileOfUpload(deps, upload, verified, now, fileOrigin);
  // One transaction: the file exists only if this request moved the upload out of pending.
  await db.batch([
    completeUploadStatement(db, upload.id, file.id, now),
    insertFileOfUploadStatement(db, file, upload.id),
  ]);
  const completed = await findUpload(db, upload.id);
  if (completed?.status === "pending") throw uploadExpired(upload); // expired a moment ago
  if (completed?.fileId !== file.id) return existingFile(deps, completed ?? upload, origin);
  // Every completed upload goes on the queue (to settle its stored copy; a large one to be
  // verified first), so the answer costs the same whatever other scopes hold.
  if (verified) await recordVerified(deps, upload, file);
  const record = verified ? file : await verifyInRequest(deps, upload, file);
  await deps.verifyQueue.send({ uploadId: upload.id, fileId: file.id });
  return toFileRecord(deps, record, origin);
}

/**
 * Verifies a small pending upload in this request (a lie answers 422 at once); a large one,
 * or one the store failed to read back just now, stays pending for the verify queue.
 */
async function verifyInRequest(deps: Deps, upload: Upload, file: FileRow): Promise<FileRow> {
  if (!verifiesInRequest(upload)) return file;
  let matched: boolean;
  try {
    matched = await verifyUploadContent(deps, upload, file);
  } catch {
    return file; // the store failed: the queue retries
  }
  if (!matched) {
    throw new AppError(
      "content_mismatch",
      "the stored bytes are not the declared content (size or SHA-256); nothing was kept",
    );
  }
  return { ...file, verified: true };
}

/** The upload's object, assembled first from its parts, must be there at its stored size. */
async function checkStoredObject(deps: Deps, upload: Upload): Promise<void> {
  if (isMultipart(upload)) await assembleParts(deps, upload);
  const head = await deps.store.head(upload.storedKey);
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
}

/** The file a completed upload becomes: on the upload's own object, for `FILE_TTL_SECONDS`. */
export function fileOfUpload(
  deps: Deps,
  upload: Upload,
  verified: boolean,
  now: number,
  origin: FileOrigin = "sandbox",
): FileRow {
  return {
    id: newId("fil"),
    sessionId: upload.sessionId,
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
    origin,
  };
}

function uploadExpired(upload: Upload): AppError {
  return new AppError(
    "upload_expired",
    `upload ${upload.id} expired at ${new Date(upload.expiresAt).toISOString()} before it was ` +
      `completed; renew it within the quota (GET /v1/uploads/${upload.id}) or declare the file again`,
  );
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
  if (isMultipart(upload)) return resumeMultipart(deps, session, upload, origin);
  const expiresAt = deps.now() + deps.config.uploadUrlTtlSeconds * 1000;
  await extendUpload(deps, session, upload, expiresAt);
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
