import { open } from "node:fs/promises";
import { gzipSync } from "node:zlib";
import { fsError } from "../cli/errors.js";
import { MemberCompressor } from "./gzip-workers.js";
import { GZIP_MEMBER_OPTIONS } from "./gzip-one-trip.js";
import { youngGc } from "./young-gc.js";

/**
 * gzip as independent members: the original bytes are cut into spans of a fixed size and each
 * span is gzipped on its own into a complete gzip stream, the members concatenated (still one
 * valid multi-member `.gz` for every reader). The member table (the span and each member's
 * stored length) goes with the declaration, so that the relay can inflate only the members a
 * read touches. Independent members also compress in parallel (`MemberCompressor`).
 */

/** Original bytes per member: what the shims use wherever the table allows it. */
export const MEMBER_SPAN = 1024 * 1024;
/** The largest span the member table allows. */
export const MAX_MEMBER_SPAN = 4 * MEMBER_SPAN;
/** The most members a member table may list. */
export const MAX_MEMBERS = 10_000;

/** The member table of a gzip upload (`members` in the declaration). */
export interface MemberTable {
  /** Original bytes per member (the last covers the remainder). */
  span: number;
  /** The stored (gzip) length of each member, in order. */
  storedSizes: number[];
}

/**
 * The span for a file of `size` bytes: 1 MiB, or just enough more for the table to stay
 * within `MAX_MEMBERS` (a file over 9.7 GiB), at most `MAX_MEMBER_SPAN` (past about 39 GiB
 * the members are written but not declared: the table could not list them).
 */
export function memberSpanFor(size: number): number {
  return Math.min(MAX_MEMBER_SPAN, Math.max(MEMBER_SPAN, Math.ceil(size / MAX_MEMBERS)));
}

/** The table to declare for members of `span` with these stored sizes; undefined past the limit. */
export function declarableTable(span: number, storedSizes: number[]): MemberTable | undefined {
  return storedSizes.length <= MAX_MEMBERS ? { span, storedSizes } : undefined;
}

/** Small bytes held whole, gzipped as members in one synchronous call each: the stored bytes. */
export function gzipMembersSync(original: Buffer, level: number): Buffer[] {
  const members: Buffer[] = [];
  for (let start = 0; start < original.length || members.length === 0; start += MEMBER_SPAN) {
    members.push(
      gzipSync(original.subarray(start, start + MEMBER_SPAN), { ...GZIP_MEMBER_OPTIONS, level }),
    );
  }
  return members;
}

/**
 * Span-sized buffers, reused once their member is made: a send allocates a few, not one per
 * MiB of its file (garbage that piles up as resident memory faster than the GC returns it).
 */
export class SpanPool {
  private readonly free: Buffer[] = [];

  constructor(
    readonly span: number,
    private readonly keep = 8,
  ) {}

  take(): Buffer {
    return this.free.pop() ?? Buffer.allocUnsafeSlow(this.span);
  }

  /** Gives back a span (a short last one is left to the GC). */
  give(buffer: Buffer): void {
    if (buffer.length === this.span && this.free.length < this.keep) this.free.push(buffer);
  }
}

/**
 * Cuts a byte stream into span-sized buffers from `pool` (the last may be shorter; no bytes
 * at all make one empty span).
 */
export async function* spansOf(
  source: AsyncIterable<Buffer>,
  pool: SpanPool,
): AsyncGenerator<Buffer> {
  const { span } = pool;
  let current = pool.take();
  let filled = 0;
  let yielded = false;
  for await (const chunk of source) {
    for (let offset = 0; offset < chunk.length;) {
      const take = Math.min(span - filled, chunk.length - offset);
      chunk.copy(current, filled, offset, offset + take);
      filled += take;
      offset += take;
      if (filled === span) {
        yield current;
        yielded = true;
        current = pool.take();
        filled = 0;
      }
    }
  }
  if (filled > 0 || !yielded) yield current.subarray(0, filled);
}

/** A file's spans, read straight into buffers from `pool` (a 0-byte file makes one empty span). */
export async function* fileSpans(path: string, pool: SpanPool): AsyncGenerator<Buffer> {
  const handle = await open(path, "r").catch((err: unknown) => {
    throw fsError("read", path, err);
  });
  try {
    for (let position = 0; ;) {
      const buffer = pool.take();
      let filled = 0;
      while (filled < buffer.length) {
        const length = buffer.length - filled;
        const { bytesRead } = await handle
          .read(buffer, filled, length, position + filled)
          .catch((err: unknown) => {
            throw fsError("read", path, err);
          });
        if (bytesRead === 0) break;
        filled += bytesRead;
      }
      if (filled === buffer.length) {
        position += filled;
        yield buffer;
        continue;
      }
      if (filled > 0 || position === 0) yield buffer.subarray(0, filled);
      return;
    }
  } finally {
    await handle.close();
  }
}

/**
 * The work of `items`, in their order, with at most `limit` of them under way at once (memory
 * stays flat however many there are). A failure surfaces when its turn comes.
 */
export async function* inOrder<T, R>(
  items: AsyncIterable<T>,
  work: (item: T) => Promise<R>,
  limit: number,
): AsyncGenerator<R> {
  const pending: Promise<R>[] = [];
  for await (const item of items) {
    const done = work(item);
    done.catch(() => {}); // awaited in its turn; not an unhandled rejection meanwhile
    pending.push(done);
    if (pending.length >= limit) yield await (pending.shift() as Promise<R>);
  }
  while (pending.length > 0) yield await (pending.shift() as Promise<R>);
}

/** Members between young-generation GCs (`youngGc`): the buffers a send turns over meanwhile. */
const GC_EVERY_MEMBERS = 16;

/** Members written so far, and the table they make. */
export class MemberLog {
  readonly storedSizes: number[] = [];

  constructor(readonly span: number) {}

  /** The table to declare, once every member has been written. */
  table(): MemberTable | undefined {
    return declarableTable(this.span, this.storedSizes);
  }
}

/**
 * The gzip members of `spans` (buffers from `pool`), in order, compressed on every core where the stream is
 * long enough to pay for the threads (`MemberCompressor`), noting each member's stored length
 * in `log`. `knownLarge` starts the threads at once (a file whose size says so); otherwise they
 * start once the stream has shown itself long enough (standard input).
 */
export async function* gzipMembers(
  spans: AsyncIterable<Buffer>,
  pool: SpanPool,
  level: number,
  log: MemberLog,
  knownLarge: boolean,
): AsyncGenerator<Buffer> {
  const compressor = new MemberCompressor(level, knownLarge);
  const gzip = async (span: Buffer) => {
    const member = await compressor.gzip(span);
    pool.give(span); // Only once made: a worker lost on the way may need it again.
    return member;
  };
  try {
    const members = inOrder(spans, gzip, compressor.inFlight);
    for await (const member of members) {
      log.storedSizes.push(member.length);
      yield member;
      if (log.storedSizes.length % GC_EVERY_MEMBERS === 0) youngGc();
    }
  } finally {
    compressor.close();
  }
}
