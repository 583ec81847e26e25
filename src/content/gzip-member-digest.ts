import { createHash } from "node:crypto";
import { bytesToHex } from "../encoding";
import { InflateError, memberLength } from "./gzip-inflate";
import type { MemberTable } from "./gzip-members";

/**
 * Verifying gzip stored as members: one read of the stored bytes, each member piped natively
 * into one digest of the original bytes. `DecompressionStream("gzip")` refuses bytes after the
 * end of a member ("Trailing bytes after end of compressed data"), so each member gets its
 * own, fed exactly its stored bytes in small pieces (each piece inflates at most about 1032
 * times its size, and the stream inflates a whole write at once): that also checks each member
 * ends at its stored boundary.
 */

/**
 * Stored bytes read once, cut into consecutive spans: each `take(n)` is a stream of exactly the
 * next `n` bytes (`Infinity`: to the end), pulled only as its reader asks. `onBytes` sees each
 * stored chunk once, as it is read.
 */
class StoredCursor {
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
