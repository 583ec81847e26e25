import { deleteFile } from "../../db/files";
import { claimUploadRequest, findUploadRequest, recordRequestFile } from "../../db/upload-requests";
import type { Deps } from "../../deps";
import { AppError } from "../../errors";
import { newId } from "../../ids";
import { logEvent } from "../../log";
import { cleanFileName } from "../../names";
import { ingest } from "../inbox/ingest";
import { checkSize } from "./browser";
import { abandonClaim } from "./claim";
import { stageUnsized } from "./staging";
import { checkLinkLimit, linkLimit } from "./room";
import { linkCancelled, linkUsed, openLink, settleRequest } from "./upload-requests";
import { mediaType } from "../validation";

/** A plain PUT to a link (`curl -T file <url>`). */
export interface LinkPut {
  /** The Content-Length header; absent for a chunked body. */
  contentLength: string | undefined;
  contentType: string | undefined;
  /** The name in the link's path or `?name=`; otherwise the request's hint, otherwise "upload". */
  name: string | undefined;
  body: ReadableStream<Uint8Array> | null;
}

/** The answer to a PUT: what was stored, hashed by the relay as it arrived. */
export interface LinkPutResult {
  name: string;
  size: number;
  sha256: string;
}

/**
 * Stores a plain PUT's body as the link's file, hashed by the relay on the way in, and puts
 * it in the session's inbox. The link's limit is the smallest of its `maxBytes`, the relay's
 * limit and what the session's quota has left (`linkLimit`): a Content-Length over it is
 * refused before the body is read; a chunked body is cut off as soon as it runs past it, and
 * nothing of it stays stored. The quota is checked again once the bytes are in (`ingest`).
 */
export async function putToLink(deps: Deps, token: string, put: LinkPut): Promise<LinkPutResult> {
  const link = await openLink(deps, token);
  const { request } = link;
  const limit = await linkLimit(deps, link);
  let size: number | undefined;
  if (put.contentLength !== undefined) {
    if (!/^\d{1,16}$/.test(put.contentLength)) {
      throw new AppError("invalid_request", "Content-Length must be a number of bytes");
    }
    size = Number(put.contentLength);
    checkSize(deps, request, size);
    checkLinkLimit(limit, size);
  }
  const claim = newId("put");
  if (!(await claimUploadRequest(deps.db, request.id, claim, request.uploadId, deps.now()))) {
    throw new AppError("link_exhausted", "another upload has just taken this link");
  }
  if (request.uploadId) await abandonClaim(deps, request.uploadId);

  const name = cleanFileName(put.name ?? request.name ?? "upload", "upload");
  const contentType = mediaType.safeParse(put.contentType).data ?? "application/octet-stream";
  const body = put.body ?? new Blob([]).stream();
  const input = { sessionId: request.sessionId, name, contentType, origin: "upload-link" as const };
  const file =
    size !== undefined
      ? await ingest(deps, { ...input, body, size })
      : await stageUnsized(
          deps,
          body,
          limit.bytes,
          (staged) => ingest(deps, { ...input, ...staged }),
          limit.refusal,
          { requestId: request.id },
        );

  if (!(await recordRequestFile(deps.db, request.id, claim, file.id))) {
    await deleteFile(deps.db, file.id, deps.now());
    const now = await findUploadRequest(deps.db, request.id);
    throw now?.cancelledAt != null ? linkCancelled() : linkUsed();
  }
  await settleRequest(deps, { ...request, uploadId: claim, fileId: file.id });
  logEvent("upload_link_put", { requestId: request.id, fileId: file.id, size: file.size });
  return { name: file.name, size: file.size, sha256: file.sha256 };
}
