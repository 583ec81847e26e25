import { z } from "zod";
import { newUploadLinkToken, uploadLinkDigestOf } from "../../auth/upload-link-token";
import { findFileIncludingDeleted, type FileRow } from "../../db/files";
import { insertInboxItem } from "../../db/inbox";
import { findSession, type Session } from "../../db/sessions";
import {
  findUploadRequest,
  findUploadRequestByFile,
  findUploadRequestByToken,
  insertUploadRequest,
  markRequestReceived,
  releaseRequestFile,
  type UploadRequest,
} from "../../db/upload-requests";
import type { Deps } from "../../deps";
import { AppError } from "../../errors";
import { newId } from "../../ids";
import { logEvent } from "../../log";
import { byteCount, fileName } from "../validation";

export const createRequestBody = z
  .object({
    /** The file name suggested to the person (and the name a bare PUT's file gets). */
    name: fileName.optional(),
    maxBytes: byteCount.min(1, "must be at least 1").optional(),
    ttlSeconds: z
      .number()
      .int("must be a whole number")
      .positive("must be positive")
      .max(Number.MAX_SAFE_INTEGER)
      .optional(),
  })
  .strict();

/** The answer to `POST /v1/requests`. */
export interface CreatedRequest {
  requestId: string;
  url: string;
  name: string | null;
  maxBytes: number;
  expiresAt: string;
}

/** The answer to `GET /v1/requests/:id`. */
export interface RequestState {
  requestId: string;
  status: "open" | "received" | "expired" | "cancelled";
  name: string | null;
  maxBytes: number;
  expiresAt: string;
  fileId?: string;
  receivedAt?: string;
}

/**
 * Mints an upload link for `session`: single use, taking at most `maxBytes` (at most
 * `MAX_FILE_BYTES`, the default), working for `ttlSeconds` (`LINK_TTL_SECONDS` by default)
 * but never past the session's own expiry. The token is returned once, in the URL.
 */
export async function createUploadRequest(
  deps: Deps,
  session: Session,
  body: z.infer<typeof createRequestBody>,
  origin: string,
): Promise<CreatedRequest> {
  const { config } = deps;
  const maxBytes = body.maxBytes ?? config.maxFileBytes;
  if (maxBytes > config.maxFileBytes) {
    throw new AppError(
      "invalid_request",
      `maxBytes: must be at most ${config.maxFileBytes} (MAX_FILE_BYTES, the largest file this relay takes)`,
    );
  }
  const now = deps.now();
  const ttlMs = (body.ttlSeconds ?? config.linkTtlSeconds) * 1000;
  const expiresAt = Math.min(now + ttlMs, session.expiresAt);
  const { token, sha256 } = await newUploadLinkToken();
  const id = newId("req");
  const name = body.name ?? null;
  await insertUploadRequest(deps.db, {
    id,
    sessionId: session.id,
    name,
    maxBytes,
    createdAt: now,
    expiresAt,
    tokenSha256: sha256,
  });
  logEvent("upload_request_created", { requestId: id, sessionId: session.id, maxBytes });
  return {
    requestId: id,
    url: `${origin}/u/${token}`,
    name,
    maxBytes,
    expiresAt: new Date(expiresAt).toISOString(),
  };
}

/** `GET /v1/requests/:id` for the session that made the request (any other: not found). */
export async function uploadRequestState(
  deps: Deps,
  session: Session,
  requestId: string,
): Promise<RequestState> {
  const found = await findUploadRequest(deps.db, requestId);
  if (!found || found.sessionId !== session.id) {
    throw new AppError("not_found", "no such upload request");
  }
  const request = await settleRequest(deps, found);
  const status =
    request.receivedAt !== null
      ? "received"
      : request.cancelledAt !== null
        ? "cancelled"
        : request.fileId === null && request.expiresAt <= deps.now()
          ? "expired"
          : "open";
  return {
    requestId: request.id,
    status,
    name: request.name,
    maxBytes: request.maxBytes,
    expiresAt: new Date(request.expiresAt).toISOString(),
    ...(status === "received" && request.fileId ? { fileId: request.fileId } : {}),
    ...(request.receivedAt !== null
      ? { receivedAt: new Date(request.receivedAt).toISOString() }
      : {}),
  };
}

/** A link opened by its token: its request and the live session that made it. */
export interface OpenLink {
  request: UploadRequest;
  session: Session;
}

/**
 * The request a link's token names, for a new upload: `404 not_found` for a token the relay
 * never made, `410` once a file used it up, it expired or its session ended (revoked, expired).
 */
export async function openLink(deps: Deps, token: string): Promise<OpenLink> {
  const link = await linkOf(deps, token);
  if (link.request.fileId !== null) throw linkUsed();
  if (link.request.expiresAt <= deps.now()) throw linkExpired();
  return link;
}

/**
 * The request a link's token names, for the upload `uploadId` already under way through it
 * (its parts, its completion, its state): that upload must still hold the link. An upload
 * begun before the link expired may finish after.
 */
export async function openLinkForUpload(
  deps: Deps,
  token: string,
  uploadId: string,
): Promise<OpenLink> {
  const link = await linkOf(deps, token);
  if (link.request.uploadId !== uploadId) {
    if (link.request.fileId !== null) throw linkUsed();
    throw new AppError("upload_not_found", "this upload no longer holds the link; start again");
  }
  return link;
}

async function linkOf(deps: Deps, token: string): Promise<OpenLink> {
  const digest = await uploadLinkDigestOf(token);
  const found = digest ? await findUploadRequestByToken(deps.db, digest) : null;
  if (!found) throw new AppError("not_found", "no such upload link");
  const session = await findSession(deps.db, found.sessionId);
  if (!session || session.revokedAt !== null || session.expiresAt <= deps.now()) {
    throw new AppError(
      "link_expired",
      "this upload link no longer works: the session that asked for the file has ended",
    );
  }
  if (found.cancelledAt !== null) throw linkCancelled();
  return { request: await settleRequest(deps, found), session };
}

/** The refusal of a link the sandbox cancelled. */
export function linkCancelled(): AppError {
  return new AppError("link_expired", "this upload link no longer works: it was cancelled");
}

export function linkUsed(): AppError {
  return new AppError("link_exhausted", "this upload link has already been used");
}

function linkExpired(): AppError {
  return new AppError("link_expired", "this upload link has expired");
}

/**
 * Moves a request's file into the session's inbox once the relay has verified it (a large
 * upload is verified on the queue; until then nobody sees it); opens the link again if the
 * file failed verification and was deleted. Idempotent: the inbox item is keyed by the request.
 */
export async function settleRequest(deps: Deps, request: UploadRequest): Promise<UploadRequest> {
  if (request.fileId === null || request.receivedAt !== null) return request;
  const file = await findFileIncludingDeleted(deps.db, request.fileId);
  if (!file || file.deletedAt != null) {
    await releaseRequestFile(deps.db, request.id, request.fileId);
    logEvent("upload_request_reopened", { requestId: request.id, fileId: request.fileId }, "warn");
    return { ...request, fileId: null, uploadId: null };
  }
  if (!file.verified) return request;
  await putInInbox(deps, request, file);
  const now = deps.now();
  await markRequestReceived(deps.db, request.id, now);
  const settled = await findUploadRequest(deps.db, request.id);
  return settled ?? { ...request, receivedAt: now };
}

/**
 * Settles the upload-link request of a file just verified, if it came through one: the hook
 * for the verify queue's consumer, so the file reaches the inbox even when nobody is polling.
 */
export async function settleRequestOfFile(deps: Deps, fileId: string): Promise<void> {
  const request = await findUploadRequestByFile(deps.db, fileId);
  if (request) await settleRequest(deps, request);
}

async function putInInbox(deps: Deps, request: UploadRequest, file: FileRow): Promise<void> {
  const inserted = await insertInboxItem(deps.db, {
    id: newId("inb"),
    sessionId: request.sessionId,
    source: `upload-link:${request.id}`,
    name: file.name,
    status: "ready",
    attachment: null,
    fileId: file.id,
    eventKey: `upload-request:${request.id}`,
    createdAt: deps.now(),
  });
  if (inserted) {
    logEvent("upload_request_received", {
      requestId: request.id,
      sessionId: request.sessionId,
      fileId: file.id,
      size: file.size,
    });
  }
}
