import { createHash } from "node:crypto";
import { mkdir, readFile, readdir, rename, rm, stat, writeFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { cacheDir } from "./sent-cache.js";
import { tempPath } from "./temp-files.js";

/** A saved upload older than this is not resumed (the store aborts unfinished ones after a day). */
export const STATE_MAX_AGE_MS = 2 * 86_400_000;

/** What names a saved upload: the relay, and the file as it was (path, size, mtime). */
export interface UploadKey {
  relayUrl: string;
  /** Absolute. */
  path: string;
  size: number;
  mtimeMs: number;
}

/** A multipart upload in progress, saved so that a later `send` of the same bytes resumes it. */
export interface SavedUpload extends UploadKey {
  sha256: string;
  encoding: "identity" | "gzip";
  storedSize: number;
  storedSha256: string;
  partSize: number;
  uploadId: string;
  /** ISO 8601. */
  createdAt: string;
}

/**
 * Multipart uploads in progress, one small JSON file each in `<cache>/airlock/uploads/`, named
 * by a hash of their key. Written atomically before any part goes up and removed once the upload
 * is complete, so a run killed at any moment leaves what the next one needs. Only a help: a
 * directory that cannot be read or written means no resume, never a failed send.
 */
export class UploadStates {
  private constructor(readonly dir: string) {}

  static at(env: Record<string, string | undefined> = process.env): UploadStates {
    return new UploadStates(join(cacheDir(env), "uploads"));
  }

  /** The key of `path` as it is now. */
  static key(relayUrl: string, path: string, size: number, mtimeMs: number): UploadKey {
    return { relayUrl, path: resolve(path), size, mtimeMs };
  }

  /** The state file for a key. */
  fileFor(key: UploadKey): string {
    const id = JSON.stringify([key.relayUrl, key.path, key.size, key.mtimeMs]);
    return join(this.dir, `${createHash("sha256").update(id).digest("hex").slice(0, 32)}.json`);
  }

  /** The saved upload for `key`, unless there is none, it is unreadable or it is too old. */
  async load(key: UploadKey, now = Date.now()): Promise<SavedUpload | undefined> {
    const file = this.fileFor(key);
    let saved: SavedUpload;
    try {
      saved = JSON.parse(await readFile(file, "utf8")) as SavedUpload;
    } catch {
      return undefined;
    }
    const age = now - Date.parse(String(saved?.createdAt));
    const sameKey =
      saved?.relayUrl === key.relayUrl &&
      saved.path === key.path &&
      saved.size === key.size &&
      saved.mtimeMs === key.mtimeMs &&
      typeof saved.uploadId === "string";
    if (sameKey && age >= 0 && age < STATE_MAX_AGE_MS) return saved;
    await this.remove(key);
    return undefined;
  }

  /** Saves an upload atomically (temp file, rename; mode 0600); also clears out stale ones. */
  async save(upload: SavedUpload): Promise<void> {
    try {
      await mkdir(this.dir, { recursive: true, mode: 0o700 });
      const temp = tempPath(this.dir, ".state-", ".json");
      await writeFile(temp, JSON.stringify(upload), { mode: 0o600 });
      await rename(temp, this.fileFor(upload));
    } catch {
      return; // no resume, that is all
    }
    await this.sweep(Date.now());
  }

  /** Forgets the upload saved for `key`, if any. */
  async remove(key: UploadKey): Promise<void> {
    await rm(this.fileFor(key), { force: true }).catch(() => {});
  }

  /** Removes state files (and temp files a killed run left) older than the age limit. */
  private async sweep(now: number): Promise<void> {
    const names = await readdir(this.dir).catch(() => [] as string[]);
    for (const name of names) {
      if (!name.endsWith(".json")) continue;
      const path = join(this.dir, name);
      const info = await stat(path).catch(() => undefined);
      if (info && now - info.mtimeMs > STATE_MAX_AGE_MS)
        await rm(path, { force: true }).catch(() => {});
    }
  }
}
