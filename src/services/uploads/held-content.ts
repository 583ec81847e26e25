import { extendBlob, findContentHeldByScope } from "../../db/blobs";
import type { FileRow } from "../../db/files";
import type { Session } from "../../db/sessions";
import type { Deps } from "../../deps";
import { newId } from "../../ids";
import { sizeMismatch } from "./declared-limits";

/** The original bytes a sender names: what a dedup hit must match. */
export interface NamedContent {
  name: string;
  size: number;
  sha256: string;
  contentType: string;
}

/**
 * The file a dedup hit makes, over content the session's owner scope already holds (verified,
 * in a live file), or null when the scope holds no such content. Content held only outside
 * the scope is never found, so the answer tells nothing about other scopes. The blob is
 * pushed out to outlive the new file before it exists; only a blob still live at that moment
 * is a hit (otherwise the sweep may be deleting it). Throws `sizeMismatch()` when the scope
 * holds this SHA-256 with another size.
 */
export async function heldContentFile(
  deps: Deps,
  session: Session,
  content: NamedContent,
  now: number,
): Promise<FileRow | null> {
  const expiresAt = now + deps.config.fileTtlSeconds * 1000;
  const found = await findContentHeldByScope(deps.db, session.scope, content.sha256, now);
  if (found && found.size !== content.size) throw sizeMismatch();
  if (!found || !(await extendBlob(deps.db, found.sha256, expiresAt, now))) return null;
  return {
    id: newId("fil"),
    sessionId: session.id,
    ...content,
    encoding: found.encoding,
    storedKey: found.storedKey,
    verified: true,
    deduped: true,
    createdAt: now,
    expiresAt,
    origin: "sandbox",
  };
}
