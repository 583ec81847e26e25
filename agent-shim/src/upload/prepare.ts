import { closeSync, createWriteStream, fstatSync, openSync, readSync } from "node:fs";
import { stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { gzipSync } from "node:zlib";
import { DigestStream } from "./digest.js";
import { hashWhole } from "./hash-pass.js";
import { CliError, fsError } from "../cli/errors.js";
import {
  MemberLog,
  SpanPool,
  fileSpans,
  gzipMembers,
  memberSpanFor,
  type MemberTable,
} from "./gzip-members.js";
import { WORKERS_AFTER_MEMBERS } from "./gzip-workers.js";
import { digestFilePartsAside } from "./part-digests-aside.js";
import { PartDigestStream } from "./part-digests.js";
import { sniff, type Sniffed } from "./sniff.js";
import { releaseTemp, tempPath } from "./temp-files.js";

/** How much of the start of a file is kept to sniff its type and try gzip on. */
export const SAMPLE_BYTES = 64 * 1024;
/** Files smaller than this are sent as they are: gzip cannot save a round trip's worth. */
export const MIN_GZIP_BYTES = 1024;
/** gzip must shrink the sample by at least this fraction to be worth a second pass. */
export const MIN_GZIP_SAVING = 0.1;
/**
 * The chunk a full pass reads at a time: hashing a chunk twice (whole file and part) while it
 * is still in the CPU's cache, and 16× fewer trips through the streams than Node's 64 KiB.
 */
export const PASS_CHUNK_BYTES = 1024 * 1024;

/** The start of a file, what it looks like, and the size and mtime it had then. */
export interface Sample extends Sniffed {
  /** The first `SAMPLE_BYTES` (or fewer) bytes. */
  sample: Buffer;
  size: number;
  mtimeMs: number;
  /** With size and mtime, what tells a file unchanged since it was last sent (`SentCache`). */
  ctimeMs: number;
  ino: number;
}

/** What a full pass over a file learns. */
export interface Hashed {
  size: number;
  sha256: string;
  /** The SHA-256 of each part, when the pass was asked for them. */
  partSha256?: string[];
}

/** The bytes to upload: the file itself (identity) or a gzipped temp copy. */
export interface StoredBytes {
  encoding: "identity" | "gzip";
  path: string;
  storedSize: number;
  storedSha256: string;
  /**
   * The SHA-256 of each part of the stored bytes, cut at `partSizeFor(size)`, when they were
   * taken on the way (bytes that may go up in parts).
   */
  partSha256?: string[];
  /** gzip written as independent members: their table, to declare. */
  members?: MemberTable;
  /** Removes the temp copy, if there is one. */
  dispose(): Promise<void>;
}

/**
 * The start of a file, to sniff its type and try gzip on before any full pass; a file of at
 * most `wholeUpTo` bytes is read whole (`whole`), in the same single open. Synchronous: a
 * few system calls, which cost less here than a trip each through libuv's thread pool.
 */
export function readSample(path: string, wholeUpTo = 0): Sample & { whole?: Buffer } {
  let fd: number;
  try {
    fd = openSync(path, "r");
  } catch (err) {
    throw fsError("read", path, err);
  }
  try {
    const { size, mtimeMs, ctimeMs, ino } = fstatSync(fd);
    const readWhole = size <= wholeUpTo;
    // One byte more than the size when reading whole: a file that grew shows it.
    const buffer = Buffer.alloc(readWhole ? size + 1 : Math.min(SAMPLE_BYTES, size));
    const read = buffer.subarray(0, readFully(fd, buffer));
    const sample = read.subarray(0, SAMPLE_BYTES);
    const whole = readWhole ? read : undefined;
    return { sample, size, mtimeMs, ctimeMs, ino, ...sniff(sample, size > sample.length), whole };
  } catch (err) {
    throw fsError("read", path, err);
  } finally {
    closeSync(fd);
  }
}

/** Reads from the start of `fd` until `buffer` is full or the file ends; the bytes read. */
function readFully(fd: number, buffer: Buffer): number {
  let filled = 0;
  while (filled < buffer.length) {
    const n = readSync(fd, buffer, filled, buffer.length - filled, filled);
    if (n === 0) break;
    filled += n;
  }
  return filled;
}

/**
 * Pass 1: SHA-256 and size of the whole file, in flat memory; given `partSize`, the SHA-256 of
 * each part as well (a file sent as it is, large enough to go up in parts), on another thread.
 */
export async function hashFile(path: string, partSize?: number): Promise<Hashed> {
  const parts = partSize === undefined ? undefined : digestFilePartsAside(path, partSize);
  let hashed: Hashed;
  try {
    hashed = await hashWhole(path, PASS_CHUNK_BYTES);
  } catch (err) {
    parts?.stop();
    throw err;
  }
  if (parts) hashed.partSha256 = await parts.digests;
  return hashed;
}

/** gzip only where it pays: big enough, not compressed already, and the sample shrinks enough. */
export function gzipPays(
  { size, sample, compressed }: Pick<Sample, "size" | "sample" | "compressed">,
  level: number,
): boolean {
  if (size < MIN_GZIP_BYTES || compressed) return false;
  const gzipped = gzipSync(sample, { level }).length;
  return gzipped <= sample.length * (1 - MIN_GZIP_SAVING);
}

/** The identity encoding: upload the file as it is. */
export function identity(path: string, file: Hashed): StoredBytes {
  return {
    encoding: "identity",
    path,
    storedSize: file.size,
    storedSha256: file.sha256,
    partSha256: file.partSha256,
    dispose: async () => {},
  };
}

/**
 * Pass 2: gzips the file into a temp file in the OS temp directory as independent members
 * (`gzipMembers`, on every core for a large file), hashing the gzip output (what storage will
 * verify) and noting the member table. It runs alongside pass 1 (off the main thread) and is
 * abandoned through `signal` on a dedup hit. A file that changes between the passes
 * is caught by the relay, which checks what the gzip inflates to. Given `partSize`, it takes
 * the part digests of the gzip output too (the part size comes from the original size, so the
 * boundaries are known while the output grows).
 */
export async function gzipToTemp(
  path: string,
  level: number,
  signal: AbortSignal,
  partSize?: number,
): Promise<StoredBytes> {
  const temp = tempPath(tmpdir(), "airlock-", ".gz");
  const stored = new DigestStream();
  const parts = partSize === undefined ? undefined : new PartDigestStream(partSize);
  try {
    const { size } = await stat(path).catch((err: unknown) => {
      throw fsError("read", path, err);
    });
    const span = memberSpanFor(size);
    const log = new MemberLog(span);
    const out = createWriteStream(temp, { flags: "wx", mode: 0o600 });
    const knownLarge = size > WORKERS_AFTER_MEMBERS * span;
    const pool = new SpanPool(span);
    const members = gzipMembers(fileSpans(path, pool), pool, level, log, knownLarge);
    // One member at a time between here and the disk: memory stays flat.
    const gzip = Readable.from(members, { objectMode: false, highWaterMark: 1 });
    const written = parts
      ? pipeline(gzip, stored, parts, out, { signal })
      : pipeline(gzip, stored, out, { signal });
    await written.catch((err: unknown) => {
      throw err instanceof CliError || signal.aborted ? err : fsError("write temp file", temp, err);
    });
    return {
      encoding: "gzip",
      path: temp,
      storedSize: stored.bytes,
      storedSha256: stored.hex(),
      partSha256: parts?.parts.finish(),
      members: log.table(),
      dispose: () => releaseTemp(temp),
    };
  } catch (err) {
    await releaseTemp(temp);
    throw err;
  }
}

/** The error for a file that changed between the passes over it. */
export function changedWhileSending(path: string): CliError {
  return new CliError(`${path} changed while it was being sent; send it again once it is complete`);
}
