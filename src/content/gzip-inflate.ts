import { createGunzip } from "node:zlib";
import type { ByteRange } from "../storage/blob-store";

/**
 * Inflating gzip for reads without letting stored bytes decide the cost (verification, which
 * reads every byte anyway, is in `gzip-member-digest.ts`). Reads inflate lazily with
 * `node:zlib`, whose stream inflates only as its output is read: workerd's
 * `DecompressionStream` is eager (one write of 256 KB of deflated zeros inflates all 256 MiB
 * before a byte is read). A reader that stops has inflated about what it returned, and each
 * read is cut off at the inflated length it expects.
 */

/** Why an inflating reader gave up: not gzip, not the declared lengths, or past its cap. */
export class InflateError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "InflateError";
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
