import { createHash } from "node:crypto";
import type { FileHandle } from "node:fs/promises";
import { CliError, fsError } from "../cli/errors.js";
import type { PartUpload } from "../transport/relay-client.js";
import { partLength } from "../../../src/part-plan.js";
import { PASS_CHUNK_BYTES, changedWhileSending } from "./prepare.js";

/** An open file cut into parts of `partSize`; `size` bytes in all, sent as `name`. */
export interface PartSource {
  handle: FileHandle;
  path: string;
  name: string;
  size: number;
  partSize: number;
}

/** The SHA-256 of part `n` (1-based) of the file, read from disk. */
export async function hashPart({ handle, path, size, partSize }: PartSource, n: number) {
  const hash = createHash("sha256");
  const start = (n - 1) * partSize;
  const length = partLength(size, partSize, n);
  const chunk = Buffer.allocUnsafe(Math.min(PASS_CHUNK_BYTES, length));
  for (let done = 0; done < length;) {
    const want = Math.min(chunk.length, length - done);
    const { bytesRead } = await handle.read(chunk, 0, want, start + done).catch((err: unknown) => {
      throw fsError("read", path, err);
    });
    if (bytesRead === 0) throw changedWhileSending(path);
    hash.update(chunk.subarray(0, bytesRead));
    done += bytesRead;
  }
  return hash.digest("hex");
}

interface Slot {
  url: Promise<PartUpload>;
  resolve(part: PartUpload): void;
  reject(error: unknown): void;
}

/**
 * Signed PUTs for the parts `missing` lists (in that order), got ahead of need: parts are hashed
 * in order on this thread, up to `ahead` past the last one asked for, and their digests signed in
 * batches (`POST /v1/uploads/:id/parts`), so that a part's URL is usually there before a PUT slot
 * frees up for it. A batch goes once it holds `ahead` digests, or at once when a PUT waits on one
 * of them. Parts the declare already signed are given in `known`.
 */
export class PartSigner {
  private readonly slots: Slot[];
  private readonly sha256: string[];
  /** Indexes of `missing` hashed but not yet sent for signing. */
  private pending: number[] = [];
  /** How many of `missing` have been asked for (`urlFor`); the hashing stays `ahead` of it. */
  private asked = 0;
  private hashed = 0;
  private wake: (() => void) | undefined;
  private stopped = false;

  constructor(
    private readonly source: PartSource,
    private readonly missing: number[],
    private readonly sign: (
      parts: { partNumber: number; sha256: string }[],
    ) => Promise<PartUpload[]>,
    private readonly ahead: number,
    partSha256: string[],
    known: PartUpload[] = [],
  ) {
    this.sha256 = partSha256;
    this.slots = missing.map(() => {
      const slot = {} as Slot;
      slot.url = new Promise<PartUpload>((resolve, reject) => {
        slot.resolve = resolve;
        slot.reject = reject;
      });
      slot.url.catch(() => undefined); // awaited by its PUT, if that comes
      return slot;
    });
    const byNumber = new Map(known.map((part) => [part.partNumber, part]));
    while (this.hashed < missing.length && byNumber.has(missing[this.hashed]!)) {
      const partNumber = missing[this.hashed]!;
      if (!this.sha256[partNumber - 1]) break; // signed for a digest we do not hold: sign again
      this.slots[this.hashed]!.resolve(byNumber.get(partNumber)!);
      this.hashed++;
    }
    void this.run();
  }

  /** The signed PUT of `missing[index]`; asking moves the hashing window on. */
  urlFor(index: number): Promise<PartUpload> {
    this.asked = Math.max(this.asked, index + 1);
    this.wake?.();
    if (this.pending.includes(index)) this.flush();
    return this.slots[index]!.url;
  }

  /** Stops hashing ahead (the upload ended, or failed). */
  stop(): void {
    this.stopped = true;
    this.wake?.();
  }

  private async run(): Promise<void> {
    try {
      // Hashing ahead waits a turn of the event loop: the PUTs of parts already signed (part 1,
      // signed by the declare) are under way first, their reads not queued behind these.
      await new Promise<void>((resolve) => setImmediate(resolve));
      while (!this.stopped && this.hashed < this.missing.length) {
        if (this.hashed >= this.asked + this.ahead) {
          await new Promise<void>((resolve) => (this.wake = resolve));
          this.wake = undefined;
          continue;
        }
        const index = this.hashed;
        const partNumber = this.missing[index]!;
        this.sha256[partNumber - 1] ||= await hashPart(this.source, partNumber);
        this.hashed++;
        this.pending.push(index);
        const waitedOn = index < this.asked;
        if (waitedOn || this.pending.length >= this.ahead) this.flush();
      }
      if (!this.stopped) this.flush();
    } catch (error) {
      this.fail(error);
    }
  }

  /** Sends the hashed parts for signing, in one request. */
  private flush(): void {
    const indexes = this.pending;
    if (indexes.length === 0) return;
    this.pending = [];
    const parts = indexes.map((i) => ({
      partNumber: this.missing[i]!,
      sha256: this.sha256[this.missing[i]! - 1]!,
    }));
    this.sign(parts).then(
      (signed) => {
        const byNumber = new Map(signed.map((part) => [part.partNumber, part]));
        for (const i of indexes) {
          const part = byNumber.get(this.missing[i]!);
          if (part) this.slots[i]!.resolve(part);
          else this.slots[i]!.reject(unexpected(this.source.name));
        }
      },
      (error: unknown) => {
        for (const i of indexes) this.slots[i]!.reject(error);
      },
    );
  }

  private fail(error: unknown): void {
    for (let i = this.hashed; i < this.slots.length; i++) this.slots[i]!.reject(error);
    for (const i of this.pending) this.slots[i]!.reject(error);
    this.pending = [];
  }
}

function unexpected(name: string): CliError {
  return new CliError(`relay gave an unexpected answer to the upload of ${name}`);
}
