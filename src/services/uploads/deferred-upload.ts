import { z } from "zod";
import { insertFileOfUploadStatement } from "../../db/files";
import type { Session } from "../../db/sessions";
import {
  completeUploadStatement,
  findUpload,
  insertUploadWithinQuota,
  setUploadHashes,
  type Upload,
} from "../../db/uploads";
import type { Deps } from "../../deps";
import { AppError } from "../../errors";
import { newId } from "../../ids";
import { partSizeFor } from "../../part-plan";
import { deferredUploadKey } from "../../storage";
import type { MultipartAnswer, PartUpload } from "../../wire-types";
import { toFileRecord, type FileRecord } from "../file-record";
import { byteCount, fileName, mediaType, sha256Hex } from "../validation";
import { checkDeclaredSize, quotaExceeded, storedBytesRefusal } from "./declared-limits";
import { heldContentFile } from "./held-content";
import {
  missingParts,
  multipartAnswer,
  multipartTarget,
  type MultipartUpload,
} from "./multipart-upload";
import { rejectUpload } from "./reject-upload";
import { checkPartNumbers, partDigests, signPartDigests } from "./signed-parts";

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
    encoding: z.literal("identity").optional(),
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

/** `POST /v1/uploads/:id/parts`: the parts to sign, each with the SHA-256 of its bytes. */
export const partsBody = z.object({ parts: partDigests }).strict();

/** `POST /v1/uploads/:id/complete`'s optional body: the whole file's SHA-256. */
export const completeBody = z.object({ sha256: sha256Hex.optional() }).strict();

/** An upload declared without its hashes: they are empty until `complete` sets them. */
export function isDeferred(upload: Upload): upload is MultipartUpload {
  return upload.multipart !== null && upload.multipart.partSha256.length === 0;
}

/**
 * Records an upload of `size` bytes whose hashes are not known yet, within the quota, and
 * starts its multipart upload on its own key (`deferredUploadKey`; verified content moves
 * onto its content key once read back, as for every multipart upload). No dedup lookup:
 * without a hash there is nothing to look up; a hit is found at `complete`.
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
  const declared = { size: body.size, encoding: "identity" as const, storedSize: body.size };
  const refusal = storedBytesRefusal(deps, declared, partSize);
  if (refusal) throw refusal;
  if (body.parts) checkPartNumbers(body.parts, body.size, partSize);
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
    encoding: "identity",
    storedKey,
    storedSize: body.size,
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
  parts: { partNumber: number; sha256: string }[],
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
 * The first step of completing a deferred upload: its SHA-256, given now. When the owner
 * scope already holds that content (the same rule a declare follows, so nothing about other
 * scopes shows), the upload becomes a dedup hit and its parts are dropped: the answer is the
 * file. Otherwise the hashes are recorded (once: a later complete must give the same) and
 * the upload, now like any multipart upload, is returned to be assembled and verified.
 */
export async function settleDeferredHash(
  deps: Deps,
  session: Session,
  upload: MultipartUpload,
  sha256: string | undefined,
  origin: string,
): Promise<{ upload: Upload } | { file: FileRecord }> {
  if (sha256 === undefined) {
    if (upload.sha256 !== "") return { upload };
    throw new AppError(
      "invalid_request",
      "this upload was declared without its sha256: complete must carry it ({ sha256 })",
    );
  }
  if (upload.sha256 !== "" && upload.sha256 !== sha256) throw hashChanged();
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
  if (upload.sha256 === "" && !(await setUploadHashes(deps.db, upload.id, sha256, sha256))) {
    const now = await findUpload(deps.db, upload.id);
    if (now && now.sha256 !== sha256) throw hashChanged();
  }
  return { upload: { ...upload, sha256, storedSha256: sha256 } };
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
