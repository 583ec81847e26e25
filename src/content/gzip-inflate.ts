import { createHash } from "node:crypto";
import { createGunzip } from "node:zlib";
import { bytesToHex } from "../encoding";
import type { ByteRange } from "../storage/blob-store";
import type { MemberTable } from "./gzip-members";

/**
 * Inflating gzip without letting stored bytes decide the cost. Two engines, for two jobs:
 *
 * - Reads (`inflateRange`) inflate lazily with `node:zlib`, whose stream inflates only as its
 *   output is read (workerd's `DecompressionStream` is eager: one write of 256 KB of deflated
 *   zeros inflates all 256 MiB before a byte is read). A reader that stops has inflated about
 *   what it returned, and each read is cut off at the inflated length it expects.
 * - Verification (`digestMembers`) reads every byte anyway and pipes each member natively
 *   into one digest. `DecompressionStream("gzip")` refuses bytes after the end of a member
 *   ("Trailing bytes after end of compressed data"), so each member gets its own, fed exactly
 *   its stored bytes in small pieces (each piece inflates at most about 1032 times its size):
 *   that also checks each member ends at its stored boundary.
 */

/** Why an inflating reader gave up: not gzip, not the declared lengths, or past its cap. */
export class InflateError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "InflateError";
  }
}

/**
 * Stored bytes read once, cut into consecutive spans: each `take(n)` is a stream of exactly the
 * next `n` bytes (`Infinity`: to the end), pulled only as its reader asks. `onBytes` sees each
 * stored chunk once, as it is read.
 */
export class StoredCursor {
  private leftover: Uint8Array | null = null;
  private readonly reader: ReadableStreamDefaultReader<Uint8Array>;

  constructor(
    stored: ReadableStream<Uint8Array>,
    /** Most bytes one `take` stream passes on at a time. */
    private readonly piece: number,
    private readonly onBytes?: (chunk: Uint8Array) => void,
  ) {
    this.reader = stored.getReader();
  }

  /** The next chunk of stored bytes, or null at their end. */
  private async next(): Promise<Uint8Array | null> {
    if (this.leftover) {
      const chunk = this.leftover;
      this.leftover = null;
      return chunk;
    }
    for (;;) {
      const { done, value } = await this.reader.read();
      if (done) return null;
      if (value.byteLength === 0) continue;
      this.onBytes?.(value);
      return value;
    }
  }

  take(size: number): ReadableStream<Uint8Array> {
    let remaining = size;
    return new ReadableStream<Uint8Array>(
      {
        pull: async (controller) => {
          if (remaining === 0) return controller.close();
          let chunk = await this.next();
          if (!chunk) {
            if (remaining === Infinity) return controller.close();
            return controller.error(new InflateError("the stored bytes end inside a member"));
          }
          const take = Math.min(remaining, this.piece);
          if (chunk.byteLength > take) {
            this.leftover = chunk.subarray(take);
            chunk = chunk.subarray(0, take);
          }
          remaining -= chunk.byteLength;
          controller.enqueue(chunk);
          if (remaining === 0) controller.close();
        },
      },
      { highWaterMark: 0 },
    );
  }

  /** True when no stored bytes are left. */
  async atEnd(): Promise<boolean> {
    return (await this.next()) === null;
  }

  cancel(): void {
    this.reader.cancel().catch(() => {});
  }
}

/** Member i's inflated length in a file of `size` bytes at `span`. */
export function memberLength(size: number, span: number, index: number): number {
  return Math.max(0, Math.min(span, size - index * span));
}

/** Stored offset of each member, and the end: `offsets[i]` = sum of `storedSizes[0..i-1]`. */
export function memberOffsets(storedSizes: readonly number[]): number[] {
  const offsets = [0];
  for (const size of storedSizes) offsets.push(offsets[offsets.length - 1]! + size);
  return offsets;
}

/** Inflated bytes a lazy inflater hands out at a time. */
const OUTPUT_CHUNK = 64 * 1024;
/** Inflated bytes after which a lazy inflater lets other requests run (a long read is fair). */
const YIELD_EVERY = 1024 * 1024;

/**
 * The bytes `stored` (gzip, one member or several) inflate to, inflated only as the returned
 * stream is read: stored bytes are fed as the inflater asks for them (`write` reports a full
 * buffer, and the inflater drains it only as its output is read). Errors when they are not
 * gzip or end inside a member.
 */
export function gunzipLazily(stored: ReadableStream<Uint8Array>): ReadableStream<Uint8Array> {
  const gunzip = createGunzip({ chunkSize: OUTPUT_CHUNK });
  gunzip.on("error", () => {}); // the output's reader gets the error
  const input = stored.getReader();
  const feed = async () => {
    for (;;) {
      const { done, value } = await input.read();
      if (gunzip.destroyed) return;
      if (done) return void gunzip.end();
      if (!gunzip.write(value)) {
        await new Promise<void>((resolve) => {
          gunzip.once("drain", resolve);
          gunzip.once("close", resolve);
        });
      }
    }
  };
  feed().catch((error: unknown) => gunzip.destroy(error as Error));
  const output = gunzip[Symbol.asyncIterator]() as AsyncIterator<Uint8Array>;
  let sinceYield = 0;
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        if (sinceYield >= YIELD_EVERY) {
          sinceYield = 0;
          await new Promise((resolve) => setTimeout(resolve, 0));
        }
        const { done, value } = await output.next();
        if (done) return controller.close();
        sinceYield += value.byteLength;
        controller.enqueue(value);
      },
      cancel() {
        gunzip.destroy();
        input.cancel().catch(() => {});
      },
    },
    { highWaterMark: 0 },
  );
}

/** What `inflateRange` reads: gzip whose first inflated byte is original byte `start`. */
export interface InflatePlan {
  /** The original offset the stored bytes given start at (a member's first byte). */
  start: number;
  /** What they must inflate to at most (the members' spans; an untabled file's size): the cap. */
  inflatedLength: number;
  /** The original bytes to pass on; the reader stops once it has passed them. */
  range: ByteRange;
}

/**
 * The original bytes of `plan.range` from gzip `stored`, inflated lazily as the returned stream
 * is read, and no further than the range's end. Stored bytes that are not gzip, or inflate past
 * `plan.inflatedLength` (the cap) or short of the range, error the stream; `onStop` hears why.
 */
export function inflateRange(
  stored: ReadableStream<Uint8Array>,
  plan: InflatePlan,
  onStop: (reason: string) => void,
): ReadableStream<Uint8Array> {
  const inflated = gunzipLazily(stored).getReader();
  const end = plan.range.offset + plan.range.length;
  let position = plan.start;
  const fail = (controller: ReadableStreamDefaultController<Uint8Array>, reason: string) => {
    inflated.cancel().catch(() => {});
    onStop(reason);
    controller.error(new InflateError(reason));
  };
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        for (;;) {
          if (position >= end) {
            inflated.cancel().catch(() => {});
            return controller.close();
          }
          let read: ReadableStreamReadResult<Uint8Array>;
          try {
            read = await inflated.read();
          } catch (error) {
            return fail(controller, `the stored bytes are not gzip (${String(error)})`);
          }
          if (read.done) {
            return fail(controller, `the stored bytes inflate short of byte ${end}`);
          }
          const chunk = read.value;
          const chunkStart = position;
          position += chunk.byteLength;
          if (position - plan.start > plan.inflatedLength) {
            return fail(controller, `inflating past ${plan.inflatedLength} bytes: cut off`);
          }
          const from = Math.max(0, plan.range.offset - chunkStart);
          const to = Math.min(chunk.byteLength, end - chunkStart);
          if (to > from) return controller.enqueue(chunk.subarray(from, to));
        }
      },
      cancel() {
        inflated.cancel().catch(() => {});
      },
    },
    { highWaterMark: 0 },
  );
}

/** Stored bytes fed to a verifying inflater at a time: one piece inflates to at most ~16 MiB. */
const VERIFY_PIECE = 16 * 1024;

/** The digests a full read of tabled stored bytes yields. */
export interface MembersDigest {
  /** SHA-256 of the original bytes. */
  sha256Hex: string;
  /** SHA-256 and length of the stored bytes as read. */
  storedSha256Hex: string;
  storedSize: number;
}

/**
 * Reads all of `stored` once, inflating each member of `table` on its own into one digest of
 * the original bytes (piped natively; each member cut off at its span by a
 * `FixedLengthStream`), and hashing the stored bytes on the way. Throws `InflateError` (or the
 * stream's error) when a member is not one gzip member of exactly its stored size inflating to
 * exactly its span (the last to the remainder), or bytes follow the last member.
 */
export async function digestMembers(
  stored: ReadableStream<Uint8Array>,
  table: MemberTable,
  size: number,
): Promise<MembersDigest> {
  const storedHash = createHash("sha256");
  let storedSize = 0;
  const cursor = new StoredCursor(stored, VERIFY_PIECE, (chunk) => {
    storedHash.update(chunk);
    storedSize += chunk.byteLength;
  });
  const digest = new crypto.DigestStream("SHA-256");
  const hashed = digest.digest;
  hashed.catch(() => {}); // a failed pipe rejects it too; the pipe's error is what counts
  try {
    for (const [index, memberSize] of table.storedSizes.entries()) {
      const exact = new FixedLengthStream(memberLength(size, table.span, index));
      const gunzip = new DecompressionStream("gzip");
      // Piped by hand, not `pipeThrough`: every pipe's failure is then awaited here.
      await Promise.all([
        feedMember(cursor.take(memberSize), gunzip.writable),
        gunzip.readable.pipeTo(exact.writable),
        exact.readable.pipeTo(digest, { preventClose: true }),
      ]);
    }
    if (!(await cursor.atEnd())) throw new InflateError("bytes follow the last member");
  } catch (error) {
    cursor.cancel();
    throw error;
  }
  await digest.getWriter().close();
  return {
    sha256Hex: bytesToHex(await hashed),
    storedSha256Hex: storedHash.digest("hex"),
    storedSize,
  };
}

/** Writes `member` into `sink` and closes it; every promise of the writer is awaited or caught. */
async function feedMember(
  member: ReadableStream<Uint8Array>,
  sink: WritableStream<Uint8Array>,
): Promise<void> {
  const writer = sink.getWriter();
  writer.closed.catch(() => {}); // its failure is the write's or close's, thrown below
  const reader = member.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      await writer.write(value);
    }
    await writer.close();
  } catch (error) {
    await writer.abort(error).catch(() => {});
    await reader.cancel().catch(() => {});
    throw error;
  }
}
