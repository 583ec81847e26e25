import { createHash } from "node:crypto";
import type { FileHandle } from "node:fs/promises";

/** A byte range of a file being downloaded in ranges, of which the first `got` are on disk. */
export interface Landing {
  start: number;
  end: number;
  got: number;
}

/** Bytes the hasher reads back at a time. */
const READ_BYTES = 1024 * 1024;

/**
 * The SHA-256 of a file written out of order, in order: bytes that land exactly where the hash
 * has reached are hashed as they are (`landed`); the others are read back (from the page cache,
 * as a rule) once every byte before them is there. Hashing keeps pace with the streams, and
 * memory stays at one buffer. Node-only; the shim and the SDK's Node entry share it.
 */
export class OrderedHash {
  private readonly hash = createHash("sha256");
  /** Bytes hashed so far: the file's first `at`. */
  private at = 0;

  constructor(
    private readonly file: FileHandle,
    private readonly pieces: Landing[],
  ) {}

  /** Bytes `chunk` just written at `position`: hashed now when the hash has reached them. */
  landed(chunk: Buffer, position: number): void {
    if (position !== this.at) return;
    this.hash.update(chunk);
    this.at += chunk.length;
  }

  /**
   * Hashes the whole file, waiting on `progress()` (some piece grew, or a stream failed) for
   * bytes not yet there; undefined once `stopped()`.
   */
  async digest(progress: () => Promise<void>, stopped: () => boolean): Promise<string | undefined> {
    const buffer = Buffer.allocUnsafe(READ_BYTES);
    for (const piece of this.pieces) {
      while (this.at < piece.end) {
        if (stopped()) return undefined;
        const ready = piece.start + piece.got;
        if (this.at >= ready) {
          await progress();
          continue;
        }
        const from = this.at;
        const want = Math.min(ready - from, READ_BYTES);
        const { bytesRead } = await this.file.read(buffer, 0, want, from);
        if (bytesRead === 0) throw new Error(`part file ended at ${from}, before ${ready}`);
        this.hash.update(buffer.subarray(0, bytesRead));
        this.at = from + bytesRead;
      }
    }
    return this.hash.digest("hex");
  }
}
