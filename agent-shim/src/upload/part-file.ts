import { createHash, type Hash } from "node:crypto";
import { createReadStream } from "node:fs";
import { readFile, rm, stat, truncate, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { errorCode, fsError } from "../cli/errors.js";
import { releaseTemp, tempPath } from "./temp-files.js";

/** The most bytes of a file's name a part file's name keeps (the rest of it adds 36). */
const MAX_NAME_BYTES = 200;

/**
 * A download's bytes so far, in a file next to where they go, with their running SHA-256. When
 * the file's SHA-256 is known up front it is `.<name>.<sha256 first 16 hex>.airlock-part`, which
 * outlives a killed process so the next run resumes from it (guarded by a `.lock` holding the pid,
 * so two runs never append to the same one); otherwise a random temp file, for this run only.
 */
export class PartFile {
  /** Bytes hashed so far; after `sync`, the bytes on disk. */
  bytes = 0;
  private hash: Hash = createHash("sha256");

  private constructor(
    readonly path: string,
    private readonly lock: string | undefined,
  ) {}

  /** The resumable part file for `name` in `dir`, or a random temp file when it is taken. */
  static async open(dir: string, name?: string, sha256?: string): Promise<PartFile> {
    if (name !== undefined && sha256 !== undefined) {
      const path = join(dir, `.${shorten(name)}.${sha256.slice(0, 16)}.airlock-part`);
      if (await takeLock(`${path}.lock`)) return new PartFile(path, `${path}.lock`);
    }
    return new PartFile(tempPath(dir, ".airlock-", ".part"), undefined);
  }

  /**
   * Makes the running hash match the bytes on disk: kept when their count agrees (nothing was lost
   * in flight), otherwise recomputed by reading the file (a part left by an earlier run, or
   * chunks hashed that never reached the disk).
   */
  async sync(): Promise<void> {
    const size = await stat(this.path).then(
      (s) => s.size,
      (err: unknown) => {
        if (errorCode(err) === "ENOENT") return 0;
        throw fsError("read", this.path, err);
      },
    );
    if (size === this.bytes) return;
    this.hash = createHash("sha256");
    this.bytes = 0;
    try {
      for await (const chunk of createReadStream(this.path) as AsyncIterable<Buffer>) {
        this.hash.update(chunk);
        this.bytes += chunk.length;
      }
    } catch (err) {
      throw fsError("read", this.path, err);
    }
  }

  /** Throws the bytes away, to start from zero. */
  async reset(): Promise<void> {
    await truncate(this.path, 0).catch((err: unknown) => {
      if (errorCode(err) !== "ENOENT") throw fsError("write", this.path, err);
    });
    this.hash = createHash("sha256");
    this.bytes = 0;
  }

  /**
   * Hashes and counts a chunk about to be appended, throwing `tooMany()` (before counting it)
   * when it would make more than `total` bytes in all.
   */
  take(chunk: Buffer, total: number | undefined, tooMany: () => Error): void {
    if (total !== undefined && this.bytes + chunk.length > total) throw tooMany();
    this.bytes += chunk.length;
    this.hash.update(chunk);
  }

  /** The hex SHA-256 of the bytes so far (the running hash stays usable). */
  sha256(): string {
    return this.hash.copy().digest("hex");
  }

  /** Removes the part file (if it is still there) and its lock. */
  async remove(): Promise<void> {
    await releaseTemp(this.path);
    await this.unlock();
  }

  /** Lets another run have the part file (once it has its name, or is gone). */
  async unlock(): Promise<void> {
    if (this.lock !== undefined) await rm(this.lock, { force: true });
  }
}

/** Claims a lock file for this process, taking over one whose process is gone. */
async function takeLock(path: string): Promise<boolean> {
  for (let tries = 0; tries < 2; tries++) {
    try {
      await writeFile(path, String(process.pid), { flag: "wx" });
      return true;
    } catch (err) {
      if (errorCode(err) !== "EEXIST") return false;
      const pid = Number(await readFile(path, "utf8").catch(() => ""));
      // An empty lock may be one another run has created but not yet written its pid into.
      if (!(pid > 0) && !(await isOld(path))) return false;
      if (isAlive(pid)) return false;
      await rm(path, { force: true }).catch(() => undefined);
    }
  }
  return false;
}

/** A lock file left long enough that no run can still be about to write into it. */
async function isOld(path: string): Promise<boolean> {
  const info = await stat(path).catch(() => undefined);
  return info === undefined || Date.now() - info.mtimeMs > 60_000;
}

function isAlive(pid: number): boolean {
  // This process holds no lock between downloads: one naming it was left by an earlier process.
  if (!Number.isInteger(pid) || pid <= 0 || pid === process.pid) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return errorCode(err) === "EPERM";
  }
}

/** `name` cut to at most MAX_NAME_BYTES of UTF-8, on a character boundary. */
function shorten(name: string): string {
  let kept = "";
  for (const char of name) {
    if (Buffer.byteLength(kept + char) > MAX_NAME_BYTES) break;
    kept += char;
  }
  return kept;
}
