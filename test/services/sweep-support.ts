import { readConfig } from "../../src/config";
import { createBlobStore } from "../../src/storage";
import type { Backend } from "../support/backends";
import { depsAt as depsAtClock } from "../support/deps";
import { RelayClient } from "../support/relay-client";

/** Shared set-up of the sweep suites (sweep-blobs, sweep-upload-links). */

export const DAY = 86_400_000;

/** A client, the config, the file TTL (ms), the store and clocked deps on one backend. */
export function sweepContext(backend: Backend) {
  const client = new RelayClient(backend.env);
  const config = readConfig(backend.env);
  const ttl = config.fileTtlSeconds * 1000;
  const store = createBlobStore(config, backend.env);

  const depsAt = (now: number) => depsAtClock(backend.env, store, now);

  async function blobRow(sha256: string) {
    return backend.env.DB.prepare("SELECT expires_at, stored_key FROM blobs WHERE sha256 = ?")
      .bind(sha256)
      .first<{ expires_at: number; stored_key: string }>();
  }

  /** The one stored copy of a verified file's content (on s3, moved to its content key). */
  async function storedKeyOf(sha256: string): Promise<string> {
    const row = await blobRow(sha256);
    if (!row) throw new Error(`no blob for ${sha256}`);
    return row.stored_key;
  }

  return { client, config, ttl, store, depsAt, blobRow, storedKeyOf };
}
