import { gzip } from "node:zlib";

/**
 * What every member is gzipped with beside its level: zlib's largest hash table (memLevel 9,
 * 128 KiB more memory per member under way than the default 8) takes about 8% less CPU time
 * at level 1 on text for the same size of output.
 */
export const GZIP_MEMBER_OPTIONS = { memLevel: 9 } as const;

/** Output room is rounded up to this (and the first member of a run gets its span's bound). */
const ROOM_STEP = 16 * 1024;

/**
 * The most a span of `length` bytes can gzip to: zlib's conservative deflateBound (the one it
 * gives for a memLevel other than 8), rounded up, plus the gzip wrapper. Output room this large
 * takes any member in one piece (1 MiB of random bytes makes 1 MiB + 1.2 KiB at level 1).
 */
export function memberBound(length: number): number {
  return length + (length >> 3) + (length >> 6) + 64;
}

/**
 * Node's asynchronous `zlib.gzip` runs deflate on libuv's pool, but comes back to the main
 * thread each time its output buffer (`chunkSize`, 16 KiB by default) is full, and only then
 * queues the next stretch: a 1 MiB span of text that gzips to 200 KiB makes a dozen round
 * trips, each waiting for the main thread (busy hashing, writing and sending) before the pool
 * thread may go on. This gives each member output room for all of it in one trip: the span's
 * bound for the first member, then a quarter more than the last member needed (members of one
 * file compress alike), so a member holds little more memory than its own length. A member
 * larger than its room is still whole and correct; it only takes a second trip.
 */
export class OneTripGzip {
  private room: number | undefined;

  constructor(private readonly level: number) {}

  gzip(span: Buffer): Promise<Buffer> {
    const bound = memberBound(span.length);
    const chunkSize = Math.max(ROOM_STEP, Math.min(bound, this.room ?? bound));
    return new Promise((resolve, reject) => {
      gzip(span, { ...GZIP_MEMBER_OPTIONS, level: this.level, chunkSize }, (err, member) => {
        if (err) return reject(err);
        const wanted = member.length + (member.length >> 2);
        this.room = Math.ceil(wanted / ROOM_STEP) * ROOM_STEP;
        resolve(member);
      });
    });
  }
}
