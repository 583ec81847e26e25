import { z } from "zod";
import { deleteFile } from "../../db/files";
import { insertUploadWithinQuota, findUpload, type Upload } from "../../db/uploads";
import {
  claimUploadRequest,
  findUploadRequest,
  recordRequestFile,
  type UploadRequest,
} from "../../db/upload-requests";
import type { Deps } from "../../deps";
import { AppError } from "../../errors";
import { newId } from "../../ids";
import { logEvent } from "../../log";
import { cleanFileName } from "../../names";
import { MAX_PARTS, partCount, partSizeFor } from "../../part-plan";
import { uploadKey } from "../../storage";
import { completeUpload } from "../uploads/complete-upload";
import { isMultipart, multipartTarget, type MultipartUpload } from "../uploads/multipart-upload";
import { receivePart, type IncomingPut } from "../uploads/receive-upload";
import { rejectUpload } from "../uploads/reject-upload";
import { forwardPart } from "./forward";
import { countAsSessions, linkLeaseUntil, missingLinkParts, renewLinkLease } from "./lease";
import { checkLinkLimit, linkLimit } from "./room";
import { abandonClaim } from "./claim";
import {
  linkUsed,
  openLink,
  openLinkForUpload,
  settleRequest,
  type OpenLink,
} from "./upload-requests";
import { byteCount, mediaType, sha256Hex } from "../validation";

/**
 * The upload page's start: the picked file's name (cleaned, never refused), size and type,
 * the SHA-256 of the whole file and of each `partSizeFor(size)` part, all computed in the
 * browser. The relay checks every part as it arrives and the whole file once assembled.
 */
export const startBody = z
  .object({
    name: z.string().max(4096),
    size: byteCount,
    contentType: z.string().max(200).optional(),
    sha256: sha256Hex,
    partSha256: z.array(sha256Hex).min(1).max(MAX_PARTS),
  })
  .strict();

/** Where a browser upload through a link stands. */
export type LinkUploadState =
  | {
      status: "uploading";
      uploadId: string;
      partSize: number;
      partCount: number;
      /** Part numbers the relay does not hold yet. */
      missing: number[];
      /** Until when the upload holds its room in the quota: each part renews it, reads do not. */
      leaseExpiresAt: string;
    }
  | { status: "verifying"; uploadId: string; name: string; size: number }
  | { status: "received"; uploadId: string; name: string; size: number; sha256: string };

/**
 * Starts the browser's multipart upload through a link, within the link's limit (`linkLimit`:
 * its `maxBytes`, `MAX_FILE_BYTES`, what the session's quota has left). The room is held
 * against other links for a lease (`LINK_UPLOAD_LEASE_SECONDS`) that each part renews, never
 * against the sandbox's own sends; it counts for the sandbox once complete.
 * The new upload takes the link over from any earlier unfinished one (a reload, another
 * browser), which is given up. Nothing is deduplicated: the bytes always travel.
 */
export async function startLinkUpload(
  deps: Deps,
  token: string,
  body: z.infer<typeof startBody>,
): Promise<LinkUploadState> {
  const { config, db, store } = deps;
  const link = await openLink(deps, token);
  const { request, session } = link;
  checkSize(deps, request, body.size);
  checkLinkLimit(await linkLimit(deps, link), body.size);
  const partSize = partSizeFor(body.size);
  const count = partCount(body.size, partSize);
  if (body.partSha256.length !== count) {
    throw new AppError(
      "invalid_request",
      `partSha256 must list ${count} digests: one per ${partSize}-byte part of the ${body.size} bytes`,
    );
  }
  const relayLimit = config.relayUploadMaxBytes;
  if (relayLimit !== undefined && Math.min(partSize, body.size) > relayLimit) {
    throw new AppError(
      "file_too_large",
      `a ${partSize}-byte part is over the ${relayLimit}-byte limit of one request through this relay`,
    );
  }

  const now = deps.now();
  const id = newId("upl");
  const key = uploadKey(body.sha256, id);
  const upload: MultipartUpload = {
    id,
    sessionId: session.id,
    name: cleanFileName(body.name, request.name ?? "upload"),
    size: body.size,
    sha256: body.sha256,
    contentType: mediaType.safeParse(body.contentType).data ?? "application/octet-stream",
    encoding: "identity",
    storedKey: key,
    storedSize: body.size,
    storedSha256: body.sha256,
    status: "pending",
    createdAt: now,
    expiresAt: linkLeaseUntil(deps, now),
    fileId: null,
    multipart: {
      partSize,
      partSha256: body.partSha256,
      storeUploadId: await store.createMultipartUpload(key),
    },
  };
  if (!(await insertUploadWithinQuota(db, upload, session.quotaBytes, request.id))) {
    await store.abortMultipartUpload(multipartTarget(upload));
    // Another link's upload (or the sandbox) took the room meanwhile.
    checkLinkLimit(await linkLimit(deps, link), body.size);
    throw new AppError(
      "quota_exceeded",
      `${body.size} more bytes would exceed the session's byte quota`,
    );
  }
  if (!(await claimUploadRequest(db, request.id, id, request.uploadId, now))) {
    await abandonClaim(deps, id);
    throw new AppError("link_exhausted", "another upload has just taken this link");
  }
  if (request.uploadId) await abandonClaim(deps, request.uploadId);
  logEvent("upload_link_started", {
    requestId: request.id,
    uploadId: id,
    size: body.size,
    parts: count,
  });
  return linkUploadState(deps, token, id);
}

/** Refuses a size over the link's `maxBytes` or `MAX_FILE_BYTES`, before any byte moves. */
export function checkSize(deps: Deps, request: UploadRequest, size: number): void {
  if (size > request.maxBytes) {
    throw new AppError(
      "payload_too_large",
      `the file is ${size} bytes; this upload link takes at most ${request.maxBytes} bytes`,
    );
  }
  if (size > deps.config.maxFileBytes) {
    throw new AppError(
      "file_too_large",
      `the file is ${size} bytes; this relay takes at most ${deps.config.maxFileBytes}`,
    );
  }
}

/**
 * Where the link's upload stands: the parts still missing and until when it holds its room
 * (reading this never renews it), or, once completed, whether its file is verified and in the
 * inbox yet.
 */
export async function linkUploadState(
  deps: Deps,
  token: string,
  uploadId: string,
): Promise<LinkUploadState> {
  const { request, upload } = await openLinkUpload(deps, token, uploadId);
  if (upload.status === "completed") {
    const settled = await settleRequest(deps, request);
    if (settled.fileId === null) throw contentRejected();
    const base = { uploadId, name: upload.name, size: upload.size };
    return settled.receivedAt !== null
      ? { status: "received", ...base, sha256: upload.sha256 }
      : { status: "verifying", ...base };
  }
  return {
    status: "uploading",
    uploadId,
    partSize: upload.multipart.partSize,
    partCount: upload.multipart.partSha256.length,
    missing: await missingLinkParts(deps, upload),
    leaseExpiresAt: new Date(upload.expiresAt).toISOString(),
  };
}

/**
 * One part of the link's upload, streamed into the store and checked against the part's
 * SHA-256 on the way (by the relay for R2, by the store's signed checksum for S3).
 */
export async function receiveLinkPart(
  deps: Deps,
  token: string,
  uploadId: string,
  partNumber: number,
  put: IncomingPut,
  origin: string,
): Promise<void> {
  const { session, upload } = await openLinkUpload(deps, token, uploadId);
  if (upload.status !== "pending") throw new AppError("upload_already_completed");
  // Bytes arriving renew the upload's lease (a lapsed one only if its bytes fit again), before
  // and after the part: a stalled part holds the room for one lease at most.
  await renewLinkLease(deps, session, upload);
  if (deps.store.receivePart) await receivePart(deps, uploadId, partNumber, put);
  else await forwardPart(deps, upload, partNumber, put, origin);
  await renewLinkLease(deps, session, upload);
}

/**
 * Assembles the parts and registers the file. A file up to a few MiB is verified in this
 * request and goes straight to the inbox; a larger one is verified on the queue, which puts
 * it in the inbox (a later state call or the agent's request lookup would too, should the
 * queue have verified it before this request recorded it). Completing twice answers the same.
 */
export async function completeLinkUpload(
  deps: Deps,
  token: string,
  uploadId: string,
  origin: string,
): Promise<LinkUploadState> {
  const { request, session, upload } = await openLinkUpload(deps, token, uploadId);
  if (upload.status === "pending") await countAsSessions(deps, session, upload);
  const file = await completeUpload(deps, session, upload.id, origin, "upload-link");
  if (!(await recordRequestFile(deps.db, request.id, uploadId, file.fileId))) {
    // Completed twice (a retry after a lost answer) is fine; a link another upload took over
    // meanwhile keeps that upload's file, and this one goes.
    const current = await findUploadRequest(deps.db, request.id);
    if (current?.fileId !== file.fileId) {
      await deleteFile(deps.db, file.fileId, deps.now());
      await rejectUpload(deps, upload);
      throw linkUsed();
    }
  }
  logEvent("upload_link_completed", {
    requestId: request.id,
    uploadId,
    fileId: file.fileId,
    size: file.size,
  });
  return linkUploadState(deps, token, uploadId);
}

/** The link a token names with the upload `uploadId` under way through it. */
async function openLinkUpload(
  deps: Deps,
  token: string,
  uploadId: string,
): Promise<OpenLink & { upload: MultipartUpload }> {
  const link = await openLinkForUpload(deps, token, uploadId);
  const upload: Upload | null = await findUpload(deps.db, uploadId);
  if (!upload || upload.sessionId !== link.request.sessionId || !isMultipart(upload)) {
    throw new AppError("upload_not_found");
  }
  if (upload.status === "rejected") throw contentRejected();
  return { ...link, upload };
}

function contentRejected(): AppError {
  return new AppError(
    "upload_rejected",
    "the relay could not verify the uploaded bytes; nothing was kept — send the file again",
  );
}
