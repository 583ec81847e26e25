import { rehomeBlob } from "../../db/blobs";
import { insertFileWithinQuota, type FileRow } from "../../db/files";
import { mayBeArchive } from "../uploads/verify-upload";
import { findSession, sessionUsage } from "../../db/sessions";
import type { Deps } from "../../deps";
import { AppError } from "../../errors";
import { newId } from "../../ids";
import { blobKey } from "../../storage";
import { humanSize } from "../human-size";
import { passThroughDigest } from "../../content/stream-digest";
import type { FileOrigin } from "../file-origin";
import { logEvent } from "../../log";

export interface IngestInput {
  sessionId: string;
  name: string;
  contentType: string;
  body: ReadableStream<Uint8Array>;
  size: number;
  origin: FileOrigin;
}

/**
 * Why `size` more bytes cannot go into the session — over `MAX_FILE_BYTES`
 * (`file_too_large`), over what its quota has left (`quota_exceeded`), or the session is
 * gone — or null when they fit. The message reads well in a chat reply too.
 */
export async function roomFor(
  deps: Deps,
  sessionId: string,
  size: number,
): Promise<{ refusal: AppError | null; quotaBytes: number }> {
  const max = deps.config.maxFileBytes;
  const session = await findSession(deps.db, sessionId);
  if (!session) return { refusal: new AppError("session_not_found"), quotaBytes: 0 };
  const quotaBytes = session.quotaBytes;
  if (size > max) {
    const message = `file is ${humanSize(size)}; the relay takes files up to ${humanSize(max)}`;
    return { refusal: new AppError("file_too_large", message), quotaBytes };
  }
  const left = Math.max(0, quotaBytes - (await sessionUsage(deps.db, sessionId, deps.now())));
  if (size > left) {
    const message = `file is ${humanSize(size)} and the session has ${humanSize(left)} of its byte quota left`;
    return { refusal: new AppError("quota_exceeded", message), quotaBytes };
  }
  return { refusal: null, quotaBytes };
}

/** Passes at most `max` bytes, then errors: a body is never read past its limit. */
function limitTo(max: number): TransformStream<Uint8Array, Uint8Array> {
  let seen = 0;
  return new TransformStream({
    transform(chunk, controller) {
      seen += chunk.byteLength;
      if (seen > max) controller.error(new Error(`received more than the expected ${max} bytes`));
      else controller.enqueue(chunk);
    },
  });
}

/**
 * Stores bytes the relay receives itself (chat attachments, operator seeds) as a
 * content-addressed blob, within `MAX_FILE_BYTES` and the session's quota: both are checked
 * before a byte is read (the caller disposes of a body refused unread), the body is cut off at
 * its size, and the file row goes in only if it still fits the quota (one statement, so
 * concurrent arrivals cannot both squeeze in). The hash is computed while the bytes stream
 * into a staging object; the content is then written under its content key with the store
 * verifying that hash, and the staged copy is dropped.
 */
export async function ingest(deps: Deps, input: IngestInput): Promise<FileRow> {
  const { db, store } = deps;
  const before = await roomFor(deps, input.sessionId, input.size);
  if (before.refusal) throw before.refusal;
  const staging = `staging/${newId("fil")}`;
  const hashing = passThroughDigest();
  try {
    const body = input.body.pipeThrough(limitTo(input.size)).pipeThrough(hashing.transform);
    await store.put(staging, body, { size: input.size });
    const { size, sha256Hex } = await hashing.result;
    if (size !== input.size) throw new Error(`received ${size} bytes, expected ${input.size}`);
    // Checked again before the content is written: the session may have filled meanwhile.
    const after = await roomFor(deps, input.sessionId, size);
    if (after.refusal) throw after.refusal;

    const now = deps.now();
    const expiresAt = now + deps.config.fileTtlSeconds * 1000;
    // Written under its content key whether or not the content is held already (perhaps
    // only by another owner scope): the answer takes as long either way and its record
    // names only the content, so neither tells the caller what else the store holds.
    const key = blobKey(sha256Hex);
    const staged = await store.get(staging);
    if (!staged) throw new Error("staged object vanished");
    await store.put(key, staged.body, { size, sha256Hex });
    const blob = await rehomeBlob(db, {
      sha256: sha256Hex,
      size,
      encoding: "identity",
      storedKey: key,
      storedSize: size,
      storedSha256: sha256Hex,
      createdAt: now,
      expiresAt,
    });
    const file: FileRow = {
      id: newId("fil"),
      sessionId: input.sessionId,
      name: input.name,
      size,
      sha256: sha256Hex,
      contentType: input.contentType,
      encoding: blob.encoding,
      storedKey: blob.storedKey,
      verified: true,
      // The bytes came in whole either way; whether the store already held them (perhaps
      // only for another owner scope) is not the caller's to learn.
      deduped: false,
      createdAt: now,
      expiresAt,
      origin: input.origin,
    };
    if (!(await insertFileWithinQuota(db, file, after.quotaBytes, now))) {
      throw (await roomFor(deps, input.sessionId, size)).refusal ?? new AppError("quota_exceeded");
    }
    if (mayBeArchive(file)) await deps.verifyQueue.send({ fileId: file.id });
    return file;
  } finally {
    // Clean-up only: a staging object left by a failed delete expires by the bucket's
    // `staging/` rule within a day, so it must not turn a stored file into an error.
    await store.delete(staging).catch((error: unknown) => {
      logEvent("staging_delete_failed", { key: staging, error: String(error) }, "warn");
    });
  }
}
