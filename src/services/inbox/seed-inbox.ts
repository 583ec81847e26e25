import { findInboxItem, insertInboxItem } from "../../db/inbox";
import type { Deps } from "../../deps";
import { newId } from "../../ids";
import { cleanFileName } from "../../names";
import type { InboxRecord } from "../../wire-types";
import { ingest } from "./ingest";
import { toInboxRecord } from "./inbox";

/**
 * The operator's seed: bytes stored and placed in the session's inbox, ready at once. The
 * name is cleaned by the one name rule; the bytes count against the session's quota like
 * any other file (`413 quota_exceeded` before a byte is read, nothing stored).
 */
export async function seedInbox(
  deps: Deps,
  sessionId: string,
  input: { name: string; size: number; contentType: string; body: ReadableStream<Uint8Array> },
  origin: string,
): Promise<InboxRecord> {
  const name = cleanFileName(input.name, "file");
  const file = await ingest(deps, { sessionId, ...input, name, origin: "seed" });
  const id = newId("inb");
  await insertInboxItem(deps.db, {
    id,
    sessionId,
    source: "operator",
    name,
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
