import { z } from "zod";
import { insertFileOfUploadStatement } from "../../db/files";
import type { Session } from "../../db/sessions";
import {
  completeUploadStatement,
  findUpload,
  insertUploadWithinQuota,
  type Upload,
} from "../../db/uploads";
import type { Deps } from "../../deps";
import { AppError } from "../../errors";
import { newId } from "../../ids";
import { maxStoredSize, partSizeFor } from "../../part-plan";
import { setDeferredHashes } from "../../db/deferred-uploads";
import { deferredUploadKey } from "../../storage";
import type { MultipartAnswer, PartUpload } from "../../wire-types";
import { toFileRecord, type FileRecord } from "../file-record";
import { byteCount, fileName, mediaType } from "../validation";
import { storedFormAtComplete, type CompleteBody } from "./deferred-gzip";
import { checkDeclaredSize, quotaExceeded, storedBytesRefusal } from "./declared-limits";
import { heldContentFile } from "./held-content";
import {
  missingParts,
  multipartAnswer,
  multipartTarget,
  type MultipartUpload,
} from "./multipart-upload";
import { rejectUpload } from "./reject-upload";
import { checkPartNumbers, partDigests, signPartDigests, type PartDigest } from "./signed-parts";

/**
 * `POST /v1/uploads` with `hashAtComplete: true` and no hashes: a large file sent from its
 * first byte. The relay
 * plans the parts from `size`; each part's URL is asked for with that part's SHA-256
 * (`POST /v1/uploads/:id/parts`), and the whole file's SHA-256 comes with `complete`.
 */
export const deferredDeclareBody = z
  .object({
    name: fileName,
    size: byteCount,
    contentType: mediaType.optional(),
    encoding: z.enum(["identity", "gzip"]).optional(),
    hashAtComplete: z.literal(true),
    /** The first parts' digests, when known: their signed PUTs come with the answer. */
    parts: partDigests.optional(),
  })
  .strict();

/** Whether a declare body asks for an upload whose hashes come at `complete`. */
export function asksHashAtComplete(body: unknown): boolean {
  return typeof body === "object" && body !== null && "hashAtComplete" in body;
}

export type DeferredDeclareBody = z.infer<typeof deferredDeclareBody>;

/** An upload declared without its hashes: they are empty until `complete` sets them. */
export function isDeferred(upload: Upload): upload is MultipartUpload {
  return upload.multipart !== null && upload.multipart.partSha256.length === 0;
}

/**
 * Records an upload of `size` bytes whose hashes are not known yet, within the quota, and
 * starts its multipart upload on its own key (`deferredUploadKey`; verified content moves
 * onto its content key once read back, as for every multipart upload). No dedup lookup:
 * without a hash there is nothing to look up; a hit is found at `complete`. A gzip upload
 * holds the largest size gzip can make of the file until `complete` gives its stored size
 * (`deferred-gzip.ts`).
 */
export async function declareDeferred(
  deps: Deps,
  session: Session,
  body: DeferredDeclareBody,
  origin: string,
): Promise<MultipartAnswer> {
  const now = deps.now();
  checkDeclaredSize(deps, session, body.size);
  const partSize = partSizeFor(body.size);
  const encoding = body.encoding ?? "identity";
  const storedSize = encoding === "gzip" ? maxStoredSize(body.size) : body.size;
  const declared = { size: body.size, encoding, storedSize };
  const refusal = storedBytesRefusal(deps, declared, partSize);
  if (refusal) throw refusal;
  if (body.parts && encoding === "gzip") {
    throw new AppError(
      "invalid_request",
      "a gzip upload's parts are signed once compressed (POST /v1/uploads/:id/parts), not at its declare",
    );
  }
  if (body.parts) checkPartNumbers(body.parts, declared.storedSize, partSize);
  const id = newId("upl");
  const storedKey = deferredUploadKey(id);
  const storeUploadId = await deps.store.createMultipartUpload(storedKey);
  const upload: MultipartUpload = {
    id,
    sessionId: session.id,
    name: body.name,
    size: body.size,
    sha256: "",
    contentType: body.contentType ?? "application/octet-stream",
    encoding,
    storedKey,
    storedSize,
    storedSha256: "",
    status: "pending",
    createdAt: now,
    expiresAt: now + deps.config.uploadUrlTtlSeconds * 1000,
    fileId: null,
    multipart: { partSize, partSha256: [], storeUploadId },
    members: null,
  };
  if (!(await insertUploadWithinQuota(deps.db, upload, session.quotaBytes))) {
    await deps.store.abortMultipartUpload(multipartTarget(upload));
    throw quotaExceeded(body.size);
  }
  const answer = await multipartAnswer(deps, upload, missingParts(upload, []), origin);
  if (body.parts) answer.parts = await signPartDigests(deps, upload, body.parts, origin);
  return answer;
}

/** Signed PUTs for parts of a deferred upload, each bound to the SHA-256 its sender gives. */
export async function signDeferredParts(
  deps: Deps,
  session: Session,
  uploadId: string,
  parts: PartDigest[],
  origin: string,
): Promise<{ parts: PartUpload[] }> {
  const upload = await findUpload(deps.db, uploadId);
  if (!upload || upload.sessionId !== session.id) throw new AppError("upload_not_found");
  if (upload.status === "completed") throw new AppError("upload_already_completed");
  if (upload.status === "rejected") throw new AppError("upload_rejected");
  if (!isDeferred(upload)) {
    throw new AppError(
      "invalid_request",
      "parts are signed one by one only for an upload declared without its sha256",
    );
  }
  if (upload.expiresAt <= deps.now()) {
    throw new AppError("upload_expired", `renew it first (GET /v1/uploads/${upload.id})`);
  }
  return { parts: await signPartDigests(deps, upload, parts, origin) };
}

/**
 * The first step of completing a deferred upload: its SHA-256 (and, for gzip, its stored
 * form: `storedFormAtComplete`), given now. When the owner
 * scope already holds that content (the same rule a declare follows, so nothing about other
 * scopes shows), the upload becomes a dedup hit and its parts are dropped: the answer is the
 * file. Otherwise the hashes are recorded (once: a later complete must give the same) and
 * the upload, now like any multipart upload, is returned to be assembled and verified.
 */
export async function settleDeferredHash(
  deps: Deps,
  session: Session,
  upload: MultipartUpload,
  body: CompleteBody,
  origin: string,
): Promise<{ upload: Upload } | { file: FileRecord }> {
  const { sha256 } = body;
  if (sha256 === undefined) {
    if (upload.sha256 !== "") return { upload };
    throw new AppError(
      "invalid_request",
      "this upload was declared without its sha256: complete must carry it ({ sha256 })",
    );
  }
  if (upload.sha256 !== "" && upload.sha256 !== sha256) throw hashChanged();
  const stored =
    upload.sha256 === ""
      ? storedFormAtComplete(upload, body, sha256)
      : {
          storedSize: upload.storedSize,
          storedSha256: upload.storedSha256,
          members: upload.members ?? null,
        };
  const now = deps.now();
  const content = { name: upload.name, size: upload.size, sha256, contentType: upload.contentType };
  let held;
  try {
    held = await heldContentFile(deps, session, content, now);
  } catch (error) {
    await dropParts(deps, upload);
    throw error;
  }
  if (held) {
    await deps.db.batch([
      completeUploadStatement(deps.db, upload.id, held.id, now),
      insertFileOfUploadStatement(deps.db, held, upload.id),
    ]);
    const completed = await findUpload(deps.db, upload.id);
    if (completed?.fileId === held.id) {
      await deps.store.abortMultipartUpload(multipartTarget(upload));
      return { file: await toFileRecord(deps, held, origin) };
    }
    // Another completion got there first, or the upload expired a moment ago: carry on as it.
    return { upload: completed ?? upload };
  }
  if (upload.sha256 === "" && !(await setDeferredHashes(deps.db, upload.id, sha256, stored))) {
    const now = await findUpload(deps.db, upload.id);
    if (now && now.sha256 !== sha256) throw hashChanged();
    if (now) return { upload: now };
  }
  return { upload: { ...upload, sha256, ...stored } };
}

/** Gives a deferred upload up: no file, and its parts dropped from the store. */
async function dropParts(deps: Deps, upload: MultipartUpload): Promise<void> {
  await rejectUpload(deps, upload);
  await deps.store.abortMultipartUpload(multipartTarget(upload));
}

function hashChanged(): AppError {
  return new AppError(
    "content_mismatch",
    "an earlier complete of this upload gave another sha256; declare the file again",
  );
}
