import { extendBlob, findLiveBlob, upsertBlob } from "../db/blobs";
import { insertFileStatement, type FileRow } from "../db/files";
import type { Deps } from "../deps";
import { newId } from "../ids";
import { blobKey } from "../storage";
import { passThroughDigest } from "./stream-digest";

export interface IngestInput {
  sessionId: string;
  name: string;
  contentType: string;
  body: ReadableStream<Uint8Array>;
  size: number;
}

/**
 * Stores bytes the relay receives itself (chat attachments, operator seeds) as a
 * content-addressed blob. The hash is computed while the bytes stream into a staging
 * object; the content is then written under its content key with the store verifying
 * that hash, or — when the content is already held — the staged copy is simply dropped.
 */
export async function ingest(deps: Deps, input: IngestInput): Promise<FileRow> {
  const { db, store } = deps;
  const staging = `staging/${newId("fil")}`;
  const hashing = passThroughDigest();
  try {
    await store.put(staging, input.body.pipeThrough(hashing.transform), { size: input.size });
    const { size, sha256Hex } = await hashing.result;
    if (size !== input.size) throw new Error(`received ${size} bytes, expected ${input.size}`);

    const now = deps.now();
    const expiresAt = now + deps.config.fileTtlSeconds * 1000;
    const found = await findLiveBlob(db, sha256Hex, now);
    // Only a blob still live when its expiry is pushed out is a hit (see extendBlob).
    const existing = found && (await extendBlob(db, sha256Hex, expiresAt, now)) ? found : null;
    let blob = existing;
    if (!blob) {
      const key = blobKey(sha256Hex);
      const staged = await store.get(staging);
      if (!staged) throw new Error("staged object vanished");
      await store.put(key, staged.body, { size, sha256Hex });
      blob = await upsertBlob(db, {
        sha256: sha256Hex,
        size,
        encoding: "identity",
        storedKey: key,
        storedSize: size,
        storedSha256: sha256Hex,
        createdAt: now,
        expiresAt,
      });
    }
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
      deduped: existing !== null,
      createdAt: now,
      expiresAt,
    };
    await insertFileStatement(db, file).run();
    return file;
  } finally {
    await store.delete(staging);
  }
}
