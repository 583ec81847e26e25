import { liveSession } from "../auth/live-session";
import { findFile } from "../db/files";
import { ackInboxItem, findInboxItem } from "../db/inbox";
import type { Deps } from "../deps";
import { AppError } from "../errors";
import { fileResponse, requestedRange } from "../http/file-response";
import { logEvent } from "../log";
import { listReadyInbox } from "../services/inbox/inbox";
import { withKnownLength } from "../content/known-length";
import { createDownloadToken, verifyDownloadToken } from "./transfer-tokens";

/**
 * `receive_files` for a model without a disk the relay can write: each inbox item comes with a
 * short-lived URL of its bytes (`curl -o`), and the item leaves the inbox once the relay has
 * sent its last byte through that URL — no separate acknowledgement.
 */

/** One inbox item as `receive_files` lists it. */
export interface InboxDownload {
  itemId: string;
  fileId: string;
  name: string;
  size: number;
  sha256: string;
  contentType: string;
  source: string;
  downloadUrl: string;
  expiresAt: string;
}

/** The session's ready inbox items, oldest first, each with a download URL good for `MCP_DOWNLOAD_TTL_SECONDS`. */
export async function inboxDownloads(
  deps: Deps,
  sessionId: string,
  origin: string,
): Promise<InboxDownload[]> {
  const records = await listReadyInbox(deps, sessionId, origin);
  // Whole seconds, as the token carries them, rounded up: a URL lives at least the TTL.
  const expiresAt = Math.ceil(deps.now() / 1000 + deps.config.mcpDownloadTtlSeconds) * 1000;
  return Promise.all(
    records.map(async (record) => {
      const token = await createDownloadToken(deps.config.signingKey, record.itemId, expiresAt);
      return {
        itemId: record.itemId,
        fileId: record.file.fileId,
        name: record.name,
        size: record.size,
        sha256: record.sha256,
        contentType: record.contentType,
        source: record.source,
        downloadUrl: `${origin}/mcp/downloads/${token}`,
        expiresAt: new Date(expiresAt).toISOString(),
      };
    }),
  );
}

/**
 * The bytes of the inbox item a download URL names (GET or HEAD, with Range support), through
 * the relay even on a store clients could read directly, so that the relay sees the end: when
 * an answer that runs to the file's last byte (the whole file, or a `curl -C -` resume) has
 * been streamed out, the item is acknowledged. Refused for an expired or forged URL, an item
 * another download already finished, a file gone, or a session that has ended.
 */
export async function serveInboxDownload(
  deps: Deps,
  token: string,
  request: Request,
): Promise<Response> {
  const itemId = await verifyDownloadToken(deps.config.signingKey, token, deps.now());
  const item = await findInboxItem(deps.db, itemId);
  if (!item?.fileId || (item.status !== "ready" && item.status !== "acked")) {
    throw new AppError("inbox_item_not_found");
  }
  await liveSession(deps, item.sessionId);
  const file = await findFile(deps.db, item.fileId);
  if (!file || file.sessionId !== item.sessionId) throw new AppError("file_not_found");
  if (file.expiresAt <= deps.now()) throw new AppError("file_expired");

  const response = await fileResponse(deps.store, file, request);
  const range = requestedRange(request, file);
  const reachesEnd =
    range === undefined || (range !== "unsatisfiable" && range.offset + range.length === file.size);
  if (item.status === "acked" || !reachesEnd || request.method !== "GET" || response.status >= 300)
    return response;
  const ack = () =>
    deps.waitUntil(
      ackInboxItem(deps.db, item.id, deps.now()).then(
        () => logEvent("mcp_download_acked", { itemId: item.id, fileId: file.id }),
        (error: unknown) =>
          logEvent("mcp_download_ack_failed", { itemId: item.id, error: String(error) }, "error"),
      ),
    );
  const length = Number(response.headers.get("content-length"));
  if (!response.body) {
    ack();
    return response;
  }
  return new Response(withKnownLength(onEnd(response.body, ack), length), response);
}

/** Passes `body` through and calls `done` once its last chunk has been read (not on cancel). */
function onEnd(body: ReadableStream<Uint8Array>, done: () => void): ReadableStream<Uint8Array> {
  return body.pipeThrough(new TransformStream({ flush: done }));
}
