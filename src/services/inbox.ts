import {
  findInboxItem,
  insertInboxItem,
  listInbox,
  markInboxFailed,
  markInboxReady,
  startFetchAttempt,
  type InboxItem,
} from "../db/inbox";
import { findFile, findFiles, type FileRow } from "../db/files";
import { findSessionForDestination } from "../db/sessions";
import type { Deps } from "../deps";
import { logEvent } from "../log";
import { newId } from "../ids";
import { parseDestination, type Platform } from "../platforms";
import type { InboundAttachment, WebhookEvent } from "../platforms/platform";
import { AttachmentRefusedError } from "../platforms/streams";
import type { InboxRecord } from "../wire-types";
import { toFileRecord } from "./file-record";
import { ingest } from "./ingest";
import { mediaType } from "./validation";

/** How often the relay tries to fetch an attachment before it leaves it failed. */
const MAX_FETCH_ATTEMPTS = 5;
/** A fetch still marked in progress after this long is assumed lost and tried again. */
const STALE_FETCH_MS = 2 * 60_000;

/** What the relay stores about an attachment until it is fetched. */
interface PendingAttachment {
  platform: Platform["name"];
  ref: InboundAttachment["ref"];
  size: number | null;
  contentType?: string;
}

export type { InboxRecord } from "../wire-types";

/**
 * Puts a verified webhook's attachments in the inbox of the newest live session bound to
 * the chat, and fetches them in the background: the platform gets its answer at once.
 * Each attachment is recorded before its fetch, so a failed fetch is retried, never lost.
 */
export async function receiveAttachments(
  deps: Deps,
  platform: Platform,
  event: WebhookEvent,
): Promise<void> {
  if (!event.chat) return;
  const target = parseDestination(event.chat)?.target;
  if (target && event.refused.length > 0) {
    const text = event.refused.map((r) => `Could not take ${r.name}: ${r.reason}.`).join("\n");
    deps.waitUntil(
      platform
        .sendText(target, text)
        .catch((error) => logFailure("refusal_reply_failed", event.chat, error)),
    );
  }
  if (event.attachments.length === 0) return;
  const sessionId = await findSessionForDestination(deps.db, event.chat, deps.now());
  if (!sessionId) {
    logEvent(
      "attachment_without_session",
      { chat: event.chat, attachments: event.attachments.length },
      "warn",
    );
    return;
  }
  for (const [index, attachment] of event.attachments.entries()) {
    const pending: PendingAttachment = {
      platform: platform.name,
      ref: attachment.ref,
      size: attachment.size,
      contentType: attachment.contentType,
    };
    const id = newId("inb");
    const inserted = await insertInboxItem(deps.db, {
      id,
      sessionId,
      source: event.chat,
      name: attachment.name,
      status: "fetching",
      attachment: JSON.stringify(pending),
      fileId: null,
      eventKey: event.eventKey ? `${event.eventKey}:${index}` : null,
      createdAt: deps.now(),
    });
    if (inserted) deps.waitUntil(fetchIntoInbox(deps, id));
  }
}

/** Fetches one attachment into storage, with retries; records the failure if all fail. */
export async function fetchIntoInbox(deps: Deps, itemId: string, attempts = 3): Promise<void> {
  for (let attempt = 1; attempt <= attempts; attempt++) {
    const item = await findInboxItem(deps.db, itemId);
    if (!item?.attachment || (item.status !== "fetching" && item.status !== "failed")) return;
    if (item.attempts >= MAX_FETCH_ATTEMPTS || !(await startFetchAttempt(deps.db, itemId))) return;
    try {
      const pending = JSON.parse(item.attachment) as PendingAttachment;
      const platform = deps.platforms[pending.platform];
      if (!platform) throw new Error(`${pending.platform} is no longer configured`);
      const { body, size } = await platform.fetchAttachment(pending.ref);
      const contentType =
        mediaType.safeParse(pending.contentType).data ?? "application/octet-stream";
      const file = await ingest(deps, {
        sessionId: item.sessionId,
        name: item.name,
        contentType,
        body,
        size,
      });
      await markInboxReady(deps.db, itemId, file.id);
      logEvent("attachment_fetched", {
        itemId,
        chat: item.source,
        fileId: file.id,
        size: file.size,
        attempt,
      });
      return;
    } catch (error) {
      const hopeless = error instanceof AttachmentRefusedError;
      await markInboxFailed(
        deps.db,
        itemId,
        String(error).slice(0, 500),
        hopeless ? MAX_FETCH_ATTEMPTS : 0,
      );
      logFailure("attachment_fetch_failed", item.source, error, { itemId, attempt });
      if (hopeless) return;
      if (attempt < attempts)
        await new Promise((resolve) => setTimeout(resolve, 250 * 4 ** (attempt - 1)));
    }
  }
}

/** The session's ready items, oldest first; failed or stalled fetches are retried meanwhile. */
export async function listReadyInbox(
  deps: Deps,
  sessionId: string,
  origin: string,
): Promise<InboxRecord[]> {
  const open = await listInbox(deps.db, sessionId, ["fetching", "failed", "ready"]);
  for (const item of open) {
    const stale = item.status === "fetching" && deps.now() - item.createdAt > STALE_FETCH_MS;
    if ((item.status === "failed" || stale) && item.attempts < MAX_FETCH_ATTEMPTS) {
      deps.waitUntil(fetchIntoInbox(deps, item.id, 1));
    }
  }
  const ready = open.filter((item) => item.status === "ready");
  // One query for all the files, not one per item.
  const files = await findFiles(
    deps.db,
    ready.flatMap((item) => (item.fileId ? [item.fileId] : [])),
  );
  const records: InboxRecord[] = [];
  for (const item of ready) {
    const record = await toInboxRecord(deps, item, origin, files.get(item.fileId ?? ""));
    if (record) records.push(record);
  }
  return records;
}

/** The API form of a ready item; `file` when the caller has already read it. */
export async function toInboxRecord(
  deps: Deps,
  item: InboxItem,
  origin: string,
  known?: FileRow,
): Promise<InboxRecord | null> {
  const file = known ?? (item.fileId ? await findFile(deps.db, item.fileId) : null);
  if (!file || file.expiresAt <= deps.now()) return null;
  return {
    itemId: item.id,
    source: item.source,
    name: file.name,
    size: file.size,
    sha256: file.sha256,
    contentType: file.contentType,
    createdAt: new Date(item.createdAt).toISOString(),
    file: await toFileRecord(deps, file, origin),
  };
}

function logFailure(
  event: string,
  chat: string | undefined,
  error: unknown,
  extra: object = {},
): void {
  logEvent(event, { chat, error: String(error), ...extra }, "error");
}

/** The operator's seed: bytes stored and placed in the session's inbox, ready at once. */
export async function seedInbox(
  deps: Deps,
  sessionId: string,
  input: { name: string; size: number; contentType: string; body: ReadableStream<Uint8Array> },
  origin: string,
): Promise<InboxRecord> {
  const file = await ingest(deps, { sessionId, ...input });
  const id = newId("inb");
  await insertInboxItem(deps.db, {
    id,
    sessionId,
    source: "operator",
    name: input.name,
    status: "ready",
    attachment: null,
    fileId: file.id,
    eventKey: null,
    createdAt: deps.now(),
  });
  const item = await findInboxItem(deps.db, id);
  const record = item && (await toInboxRecord(deps, item, origin));
  if (!record) throw new Error("seeded inbox item vanished");
  return record;
}
