import { gzipSync } from "node:zlib";
import { MemberCompressor } from "./gzip-workers.js";

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
    members.push(gzipSync(original.subarray(start, start + MEMBER_SPAN), { level }));
  }
  return members;
}

/**
 * Cuts a byte stream into `span`-sized buffers (the last may be shorter; no bytes at all make
 * one empty span), each its own fresh memory, so that it can be handed to another thread.
 */
export async function* spansOf(
  source: AsyncIterable<Buffer>,
  span: number,
): AsyncGenerator<Buffer> {
  let current = Buffer.allocUnsafeSlow(span);
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
        current = Buffer.allocUnsafeSlow(span);
        filled = 0;
      }
    }
  }
  if (filled > 0 || !yielded) yield current.subarray(0, filled);
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
 * The gzip members of a byte stream, in order, compressed on every core where the stream is
 * long enough to pay for the threads (`MemberCompressor`), noting each member's stored length
 * in `log`. `knownLarge` starts the threads at once (a file whose size says so); otherwise they
 * start once the stream has shown itself long enough (standard input).
 */
export async function* gzipMembers(
  source: AsyncIterable<Buffer>,
  level: number,
  log: MemberLog,
  knownLarge: boolean,
): AsyncGenerator<Buffer> {
  const compressor = new MemberCompressor(level, knownLarge);
  try {
    const members = inOrder(
      spansOf(source, log.span),
      (span) => compressor.gzip(span),
      compressor.inFlight,
    );
    for await (const member of members) {
      log.storedSizes.push(member.length);
      yield member;
    }
  } finally {
    compressor.close();
  }
}
