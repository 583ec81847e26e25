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

/** How a file was when it was sent: what tells it unchanged since. */
export interface FileStamp {
  size: number;
  mtimeMs: number;
  ctimeMs: number;
  ino: number;
}

interface Entry extends FileStamp {
  sha256: string;
}

/**
 * The files this user sent before, by path, size, mtime, ctime and inode, with their SHA-256.
 *
 * A file whose stamp is unchanged is re-sent without being hashed: `send` asks the relay for
 * a dedup hit on the recorded SHA-256 and is done (a 1 GiB re-send costs a stat and one
 * request). The stamp can be fooled — content rewritten within the file system's time
 * granularity, or mtime set back on purpose (`touch -r`; ctime still moves then, which is why
 * it is part of the stamp). A stale entry can at worst make the new file a dedup hit on the
 * content sent before, never hand anyone wrong bytes: the relay answers a hit only with
 * content this session's owner scope itself uploaded and the relay verified, and every byte
 * that does travel is verified against its hash by the store or the relay. When the relay
 * has no hit the entry is not trusted further: the file is hashed as any other.
 *
 * A file sent before but changed since still says "probably a dedup hit" (same size and
 * mtime), so `send` hashes and asks before it spends a core on gzip. A cache that cannot be
 * read or written is simply empty.
 */
export class SentCache {
  /** Whether anything was recorded since it was read. */
  private changed = false;

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

  /** The SHA-256 recorded for this file when its stamp is exactly the one recorded with it. */
  sha256Of(file: string, stamp: FileStamp): string | undefined {
    const entry = this.entries.get(resolve(file));
    const same =
      entry !== undefined &&
      entry.size === stamp.size &&
      entry.mtimeMs === stamp.mtimeMs &&
      entry.ctimeMs === stamp.ctimeMs &&
      entry.ino === stamp.ino &&
      typeof entry.sha256 === "string";
    return same ? entry.sha256 : undefined;
  }

  record(file: string, stamp: FileStamp, sha256: string): void {
    const { size, mtimeMs, ctimeMs, ino } = stamp;
    const entry: Entry = { size, mtimeMs, ctimeMs, ino, sha256 };
    const key = resolve(file);
    this.entries.delete(key);
    this.entries.set(key, entry);
    this.changed = true;
    for (const oldest of this.entries.keys()) {
      if (this.entries.size <= MAX_ENTRIES) break;
      this.entries.delete(oldest);
    }
  }

  /** Writes the cache atomically (temp file, then rename) if it changed; failures are ignored. */
  async save(): Promise<void> {
    if (!this.changed) return;
    try {
      await mkdir(dirname(this.path), { recursive: true, mode: 0o700 });
      const temp = tempPath(dirname(this.path), ".sent-", ".json");
      await writeFile(temp, JSON.stringify(Object.fromEntries(this.entries)), { mode: 0o600 });
      await rename(temp, this.path);
      this.changed = false;
    } catch {
      // a hint only
    }
  }
}

/**
 * The sent cache, read at its first use. A file small enough for one request is hashed whole
 * in a millisecond or two, so it is neither looked up nor recorded: sending only such files
 * never reads or writes the cache (up to 1000 entries, a few milliseconds each way).
 */
export class SentCacheOnDemand {
  private loading: Promise<SentCache> | undefined;

  constructor(private readonly env: Record<string, string | undefined> = process.env) {}

  get(): Promise<SentCache> {
    return (this.loading ??= SentCache.load(this.env));
  }

  /** Saves what was recorded, if the cache was ever read. */
  async save(): Promise<void> {
    await (await this.loading)?.save();
  }
}
