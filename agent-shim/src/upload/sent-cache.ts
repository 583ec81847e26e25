import { mkdir, readFile, rename, writeFile } from "node:fs/promises";
import { homedir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { tempPath } from "./temp-files.js";

/** The shim's cache directory: `$XDG_CACHE_HOME/airlock`, else `~/.cache/airlock`. */
export function cacheDir(env: Record<string, string | undefined> = process.env): string {
  const base = env.XDG_CACHE_HOME || join(env.HOME || homedir(), ".cache");
  return join(base, "airlock");
}

/** Entries kept; the oldest go first. */
const MAX_ENTRIES = 1000;

interface Entry {
  size: number;
  mtimeMs: number;
  sha256: string;
}

/**
 * The files this user sent before, by path, size and mtime. A re-send of one is probably a
 * dedup hit, so `send` then hashes and asks the relay before it spends a core on gzip; any
 * other file gets gzip started alongside its hash. Only a hint: a file is always hashed, and
 * a cache that cannot be read or written is simply empty.
 */
export class SentCache {
  private constructor(
    private readonly path: string,
    private readonly entries: Map<string, Entry>,
  ) {}

  static async load(env: Record<string, string | undefined> = process.env): Promise<SentCache> {
    const path = join(cacheDir(env), "sent.json");
    try {
      const saved = JSON.parse(await readFile(path, "utf8")) as Record<string, Entry>;
      return new SentCache(path, new Map(Object.entries(saved)));
    } catch {
      return new SentCache(path, new Map());
    }
  }

  /** True when this exact file (same size and mtime) was sent before. */
  has(file: string, size: number, mtimeMs: number): boolean {
    const entry = this.entries.get(resolve(file));
    return entry !== undefined && entry.size === size && entry.mtimeMs === mtimeMs;
  }

  record(file: string, entry: Entry): void {
    const key = resolve(file);
    this.entries.delete(key);
    this.entries.set(key, entry);
    for (const oldest of this.entries.keys()) {
      if (this.entries.size <= MAX_ENTRIES) break;
      this.entries.delete(oldest);
    }
  }

  /** Writes the cache atomically (temp file, then rename); failures are ignored. */
  async save(): Promise<void> {
    try {
      await mkdir(dirname(this.path), { recursive: true, mode: 0o700 });
      const temp = tempPath(dirname(this.path), ".sent-", ".json");
      await writeFile(temp, JSON.stringify(Object.fromEntries(this.entries)), { mode: 0o600 });
      await rename(temp, this.path);
    } catch {
      // a hint only
    }
  }
}
