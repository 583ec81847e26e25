import { z } from "zod";
import { insertFileWithinQuota } from "../../db/files";
import { sessionUsage, type Session } from "../../db/sessions";
import { insertUploadWithinQuota, type Upload } from "../../db/uploads";
import type { Deps } from "../../deps";
import { AppError } from "../../errors";
import { newId } from "../../ids";
import { memberTableProblem, memberTableSchema } from "../../content/gzip-members";
import { MAX_PARTS, partCount, partSizeFor } from "../../part-plan";
import { uploadKey } from "../../storage";
import type { UploadAnswer } from "../../wire-types";
import { checkDeclaredSize, quotaExceeded, storedBytesRefusal } from "./declared-limits";
import { heldContentFile } from "./held-content";
import { toFileRecord } from "../file-record";
import {
  missingParts,
  multipartAnswer,
  multipartTarget,
  type MultipartUpload,
} from "./multipart-upload";
import { byteCount, fileName, mediaType, sha256Hex } from "../validation";

export const declareUploadBody = z
  .object({
    name: fileName,
    size: byteCount,
    sha256: sha256Hex,
    contentType: mediaType.optional(),
    encoding: z.enum(["identity", "gzip"]).optional(),
    storedSize: byteCount.optional(),
    storedSha256: sha256Hex.optional(),
    /** Asks for a multipart upload: the SHA-256 of each `partSizeFor(size)` part of the stored bytes. */
    partSha256: z.array(sha256Hex).min(1).max(MAX_PARTS).optional(),
    /** The gzip member table (docs/api.md): the stored bytes are independent gzip members. */
    members: memberTableSchema.optional(),
  })
  .strict()
  .refine(
    (b) =>
      [b.encoding, b.storedSize, b.storedSha256].every((v) => v === undefined) ||
      [b.encoding, b.storedSize, b.storedSha256].every((v) => v !== undefined),
    "encoding, storedSize and storedSha256 go together",
  )
  .refine(
    (b) => b.encoding !== "identity" || (b.storedSize === b.size && b.storedSha256 === b.sha256),
    "identity encoding stores the original bytes: storedSize and storedSha256 must equal size and sha256",
  )
  .refine(
    (b) => b.partSha256 === undefined || b.storedSize !== undefined,
    "partSha256 goes with encoding, storedSize and storedSha256",
  )
  .refine((b) => b.members === undefined || b.encoding === "gzip", {
    message: 'members goes only with "encoding": "gzip"',
    path: ["members"],
  })
  .superRefine((b, context) => {
    if (b.members === undefined || b.storedSize === undefined) return;
    const problem = memberTableProblem(b.members, b.size, b.storedSize);
    if (problem)
      context.addIssue({ code: "custom", message: problem, path: ["members", "storedSizes"] });
  });

export type DeclareUploadBody = z.infer<typeof declareUploadBody>;

/**
 * Answers a declared upload: a dedup hit (a file record over content the caller's owner
 * scope already holds, verified, in a live file), "missing" for a probe, or signed
 * instructions to PUT the stored bytes. Content held only outside the scope gets the same
 * answer as content nobody holds: the bytes travel, and the store keeps one copy once they
 * are verified. Size limits and the session quota are checked here, before any byte moves.
 */
export async function declareUpload(
  deps: Deps,
  session: Session,
  body: DeclareUploadBody,
  origin: string,
): Promise<UploadAnswer> {
  const { config, db } = deps;
  const now = deps.now();
  checkDeclaredSize(deps, session, body.size);
  const contentType = body.contentType ?? "application/octet-stream";

  const held = await heldContentFile(
    deps,
    session,
    { name: body.name, size: body.size, sha256: body.sha256, contentType },
    now,
  );
  if (held) {
    if (!(await insertFileWithinQuota(db, held, session.quotaBytes, now)))
      throw quotaExceeded(body.size);
    return { status: "deduped", file: await toFileRecord(deps, held, origin) };
  }

  if (
    body.encoding === undefined ||
    body.storedSize === undefined ||
    body.storedSha256 === undefined
  ) {
    // Checked now so a client does not compress a file only to be refused afterwards.
    if ((await sessionUsage(db, session.id, now)) + body.size > session.quotaBytes)
      throw quotaExceeded(body.size);
    return { status: "missing" };
  }
  const partSize = partSizeFor(body.size);
  const parts = body.partSha256;
  if (parts && parts.length !== partCount(body.storedSize, partSize)) {
    throw new AppError(
      "invalid_request",
      `partSha256 must list ${partCount(body.storedSize, partSize)} digests: one per ` +
        `${partSize}-byte part of the ${body.storedSize} stored bytes`,
    );
  }
  const refusal = storedBytesRefusal(
    deps,
    { size: body.size, encoding: body.encoding, storedSize: body.storedSize },
    parts ? partSize : body.storedSize,
  );
  if (refusal) throw refusal;

  const id = newId("upl");
  const upload: Upload = {
    id,
    sessionId: session.id,
    name: body.name,
    size: body.size,
    sha256: body.sha256,
    contentType,
    encoding: body.encoding,
    storedKey: uploadKey(body.storedSha256, id),
    storedSize: body.storedSize,
    storedSha256: body.storedSha256,
    status: "pending",
    createdAt: now,
    expiresAt: now + config.uploadUrlTtlSeconds * 1000,
    fileId: null,
    multipart: null,
    members: body.members ?? null,
  };
  if (parts) {
    const storeUploadId = await deps.store.createMultipartUpload(upload.storedKey);
    const multipart: MultipartUpload = {
      ...upload,
      multipart: { partSize, partSha256: parts, storeUploadId },
    };
    if (!(await insertUploadWithinQuota(db, multipart, session.quotaBytes))) {
      await deps.store.abortMultipartUpload(multipartTarget(multipart));
      throw quotaExceeded(body.size);
    }
    return multipartAnswer(deps, multipart, missingParts(multipart, []), origin);
  }
  if (!(await insertUploadWithinQuota(db, upload, session.quotaBytes)))
    throw quotaExceeded(body.size);
  return singlePutAnswer(deps, upload, origin);
}

/** The signed PUT of a single-request upload, valid until the upload's expiry. */
export async function singlePutAnswer(
  deps: Deps,
  upload: Upload,
  origin: string,
): Promise<Extract<UploadAnswer, { status: "upload" }>> {
  const put = await deps.store.createUploadUrl({
    key: upload.storedKey,
    uploadId: upload.id,
    size: upload.storedSize,
    sha256Hex: upload.storedSha256,
    contentType: "application/octet-stream",
    expiresAt: upload.expiresAt,
    relayOrigin: origin,
  });
  return {
    status: "upload",
    uploadId: upload.id,
    expiresAt: new Date(upload.expiresAt).toISOString(),
    put,
  };
}
