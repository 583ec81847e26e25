import {
  findInboxItem,
  insertInboxItem,
  listInbox,
  markInboxFailed,
  markInboxReady,
  startFetchAttempt,
  type InboxItem,
} from "../../db/inbox";
import { findFile, findFiles, type FileRow } from "../../db/files";
import { findSessionForDestination } from "../../db/sessions";
import type { Deps } from "../../deps";
import { AppError, type ErrorCode } from "../../errors";
import { logEvent } from "../../log";
import { cleanFileName } from "../../names";
import { newId } from "../../ids";
import { parseDestination, type Platform } from "../../platforms";
import type { InboundAttachment, Refusal, WebhookEvent } from "../../platforms/platform";
import { AttachmentRefusedError } from "../../platforms/streams";
import { withPlatformRetry, type PlatformRetryPolicy } from "../../platforms/retry";
import type { InboxRecord } from "../../wire-types";
import { toFileRecord } from "../file-record";
import { ingest, roomFor } from "./ingest";
import { mediaType } from "../validation";

/** Refusals worth telling the person who sent the file. */
const TOO_BIG = new Set<ErrorCode>(["file_too_large", "quota_exceeded"]);
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

export type { InboxRecord } from "../../wire-types";

/**
 * Puts a verified webhook's attachments in the inbox of the newest live session bound to
 * the chat, and fetches them in the background: the platform gets its answer at once.
 * Each attachment is recorded before its fetch, so a failed fetch is retried, never lost.
 * One that the platform says is over `MAX_FILE_BYTES` or the session's quota is recorded
 * failed and never fetched. Returns the refusals; they are posted to the chat unless the
 * platform answers in the webhook's response (`event.respond`).
 */
export async function receiveAttachments(
  deps: Deps,
  platform: Platform,
  event: WebhookEvent,
): Promise<Refusal[]> {
  const chat = event.chat;
  if (!chat) return [];
  const refused: Refusal[] = [...event.refused];
  if (event.attachments.length > 0) {
    const sessionId = await findSessionForDestination(deps.db, chat, deps.now());
    if (sessionId) refused.push(...(await admit(deps, platform, event, chat, sessionId)));
    else
      logEvent(
        "attachment_without_session",
        { chat, attachments: event.attachments.length },
        "warn",
      );
  }
  if (refused.length > 0 && !event.respond) replyInChat(deps, chat, refused);
  return refused;
}

/**
 * Records each attachment in the session's inbox and starts its fetch, or records it
 * failed when its size is known to be too big; returns those refused.
 */
async function admit(
  deps: Deps,
  platform: Platform,
  event: WebhookEvent,
  chat: string,
  sessionId: string,
): Promise<Refusal[]> {
  const refused: Refusal[] = [];
  for (const [index, attachment] of event.attachments.entries()) {
    const { refusal } =
      attachment.size === null
        ? { refusal: null }
        : await roomFor(deps, sessionId, attachment.size);
    const pending: PendingAttachment = {
      platform: platform.name,
      ref: attachment.ref,
      size: attachment.size,
      contentType: attachment.contentType,
    };
    const id = newId("inb");
    const name = cleanFileName(attachment.name, "file");
    const inserted = await insertInboxItem(deps.db, {
      id,
      sessionId,
      source: chat,
      name,
      status: refusal ? "failed" : "fetching",
      attachment: JSON.stringify(pending),
      fileId: null,
      eventKey: attachment.key ?? (event.eventKey ? `${event.eventKey}:${index}` : null),
      createdAt: deps.now(),
      ...(refusal ? { error: refusal.message, attempts: MAX_FETCH_ATTEMPTS } : {}),
    });
    if (!inserted) {
      // A redelivered event: handled the first time.
      logEvent("attachment_duplicate", { chat, eventKey: event.eventKey ?? null, index });
      continue;
    }
    if (refusal) {
      refused.push({ name, reason: refusal.message });
      logEvent("attachment_refused", { itemId: id, chat, code: refusal.code }, "warn");
    } else {
      deps.waitUntil(fetchIntoInbox(deps, id));
    }
  }
  return refused;
}

/** Explains refused attachments in the chat they came from, in the background. */
function replyInChat(deps: Deps, chat: string, refused: Refusal[]): void {
  const destination = parseDestination(chat);
  const platform = destination && deps.platforms[destination.platform];
  if (!destination || !platform) return;
  const text = refused.map((r) => `Could not take ${r.name}: ${r.reason}.`).join("\n");
  deps.waitUntil(
    platform
      .sendText(destination.target, text)
      .catch((error) => logFailure("refusal_reply_failed", chat, error)),
  );
}

/**
 * A failed fetch, already recorded on the item and logged. The retry sees this wrapper, not
 * the platform's error, so it decides by `final` alone (a `retry_after` is not waited for).
 */
class RecordedFetchFailure extends Error {
  override readonly name = "RecordedFetchFailure";

  constructor(
    readonly final: boolean,
    cause: unknown,
  ) {
    super(String(cause), { cause });
  }
}

/** Waits between one attachment's fetches: no jitter, and never a platform's `retry_after`. */
const FETCH_RETRY: PlatformRetryPolicy = {
  attempts: 3,
  baseDelayMs: 250,
  growth: 4,
  jitter: false,
  maxDelayMs: 30_000,
  retryable: (error) => error instanceof RecordedFetchFailure && !error.final,
};

/**
 * Fetches one attachment into storage, with retries (waits of 250 ms, then 1 s, 4 s, ...).
 * Each failure is recorded on the item; one refused by the relay's limits or the platform's
 * hosts is final. An item left failed is tried again when the sandbox next polls its inbox.
 */
export async function fetchIntoInbox(deps: Deps, itemId: string, attempts = 3): Promise<void> {
  try {
    await withPlatformRetry((attempt) => fetchOnce(deps, itemId, attempt), {
      ...FETCH_RETRY,
      attempts,
    });
  } catch (error) {
    if (!(error instanceof RecordedFetchFailure)) throw error;
  }
}

/**
 * One fetch of an item's attachment, unless it is ready or acked, out of attempts, or
 * taken by another fetch meanwhile. Records a failure and rethrows it.
 */
async function fetchOnce(deps: Deps, itemId: string, attempt: number): Promise<void> {
  const item = await findInboxItem(deps.db, itemId);
  if (!item?.attachment || (item.status !== "fetching" && item.status !== "failed")) return;
  if (item.attempts >= MAX_FETCH_ATTEMPTS || !(await startFetchAttempt(deps.db, itemId))) return;
  const name = cleanFileName(item.name, "file");
  try {
    const file = await ingestAttachment(deps, item.sessionId, item.attachment, name);
    await markInboxReady(deps.db, itemId, file.id);
    logEvent("attachment_fetched", {
      itemId,
      chat: item.source,
      fileId: file.id,
      size: file.size,
      attempt,
    });
  } catch (error) {
    // Refused by the relay's own limits or the platform's hosts: final, never retried.
    const final = error instanceof AttachmentRefusedError || error instanceof AppError;
    const message = error instanceof AppError ? error.message : String(error);
    await markInboxFailed(deps.db, itemId, message.slice(0, 500), final ? MAX_FETCH_ATTEMPTS : 0);
    logFailure("attachment_fetch_failed", item.source, error, { itemId, attempt });
    if (error instanceof AppError && TOO_BIG.has(error.code))
      replyInChat(deps, item.source, [{ name, reason: error.message }]);
    throw new RecordedFetchFailure(final, error);
  }
}

/** Downloads a pending attachment from its platform and stores it as one of the session's files. */
async function ingestAttachment(
  deps: Deps,
  sessionId: string,
  attachment: string,
  name: string,
): Promise<FileRow> {
  const pending = JSON.parse(attachment) as PendingAttachment;
  const platform = deps.platforms[pending.platform];
  if (!platform) throw new Error(`${pending.platform} is no longer configured`);
  if (pending.size !== null) {
    const { refusal } = await roomFor(deps, sessionId, pending.size);
    if (refusal) throw refusal;
  }
  // The download's own length is checked again in ingest, before its body is read.
  const { body, size } = await platform.fetchAttachment(pending.ref);
  const contentType = mediaType.safeParse(pending.contentType).data ?? "application/octet-stream";
  const origin = `chat:${pending.platform}` as const;
  return ingest(deps, { sessionId, name, contentType, body, size, origin }).catch(
    async (error: unknown) => {
      // Stops the download (a refused one was never read; a failed one is locked, and this rejects).
      await body.cancel().catch(() => {});
      throw error;
    },
  );
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
