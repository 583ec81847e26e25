import type { FileRow } from "../../db/files";
import { inflateRange } from "../../content/gzip-inflate";
import { zipStream } from "../../content/zip-writer";
import { logEvent } from "../../log";
import type { BlobStore } from "../../storage";
import type { ByteRange } from "../../storage/blob-store";
import { contentGone, openOriginal } from "../original-bytes";
import type { ArchiveOffer, OfferedEntry } from "./archive-offer";
import type { ByteBudget } from "./link-budget";

/** Inflated bytes one read of the lazy inflater may run past what was asked (its chunk). */
const INFLATE_OVERSHOOT = 64 * 1024;

/**
 * Tar bytes `range` of an archive: read at the offset from a plain tar (`openOriginal` fetches
 * and inflates only what the range needs), or inflated from the first byte of a `.tar.gz` and
 * capped at the range's end, so a gzip bomb costs no more than the bytes asked for.
 */
async function openTar(
  store: BlobStore,
  file: FileRow,
  offer: ArchiveOffer,
  range: ByteRange,
): Promise<ReadableStream<Uint8Array>> {
  const original = await openOriginal(store, file, offer.gzip ? undefined : range);
  if (!original) throw contentGone();
  if (!offer.gzip) return original;
  const end = range.offset + range.length;
  const onStop = (reason: string) =>
    logEvent("inflate_stopped", { storedKey: file.storedKey, reason }, "warn");
  return inflateRange(
    original,
    { start: 0, inflatedLength: end + INFLATE_OVERSHOOT, range },
    onStop,
  );
}

/** One file of the archive, its exact bytes. */
export function openEntry(
  store: BlobStore,
  file: FileRow,
  offer: ArchiveOffer,
  entry: OfferedEntry,
): Promise<ReadableStream<Uint8Array>> {
  return openTar(store, file, offer, { offset: entry.offset, length: entry.size });
}

/**
 * The offered entries as a zip (`zipStream`), cut from one pass over the tar up to the last
 * offered byte: what lies between entries (headers, entries not offered) is read and dropped.
 * The tar is opened when the zip's first file needs it, so a request cut short early reads
 * nothing.
 */
export function openZip(
  store: BlobStore,
  file: FileRow,
  offer: ArchiveOffer,
): ReadableStream<Uint8Array> {
  let cursor: TarCursor | null = null;
  const zip = zipStream(
    offer.entries,
    async (_, index) => {
      cursor ??= new TarCursor(
        (await openTar(store, file, offer, { offset: 0, length: offer.tarEnd })).getReader(),
      );
      const entry = offer.entries[index]!;
      return cursor.slice(entry.offset, entry.size);
    },
    { modified: new Date(file.createdAt) },
  );
  // The zip writer finishes one entry's stream before asking for the next; the tar is let go
  // when the zip ends or is cancelled.
  const reader = zip.getReader();
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        try {
          const { done, value } = await reader.read();
          if (done) {
            cursor?.close();
            return controller.close();
          }
          controller.enqueue(value);
        } catch (error) {
          cursor?.close();
          controller.error(error);
        }
      },
      async cancel(reason) {
        cursor?.close();
        await reader.cancel(reason).catch(() => {});
      },
    },
    { highWaterMark: 0 },
  );
}

/** Sequential slices of one tar stream, each starting at or after the previous one's end. */
class TarCursor {
  private position = 0;
  private held: Uint8Array = new Uint8Array(0);

  constructor(private readonly reader: ReadableStreamDefaultReader<Uint8Array>) {}

  /** Exactly `length` bytes from `offset`, as a stream pulled chunk by chunk. */
  slice(offset: number, length: number): ReadableStream<Uint8Array> {
    let left = length;
    return new ReadableStream<Uint8Array>(
      {
        pull: async (controller) => {
          if (left === 0) return controller.close();
          const chunk = await this.next(offset + (length - left));
          const take = chunk.subarray(0, Math.min(chunk.byteLength, left));
          this.held = chunk.subarray(take.byteLength);
          this.position += take.byteLength;
          left -= take.byteLength;
          controller.enqueue(take);
        },
      },
      { highWaterMark: 0 },
    );
  }

  /** The bytes from `at` on that are at hand (reading, and dropping what lies before `at`). */
  private async next(at: number): Promise<Uint8Array> {
    for (;;) {
      if (this.position < at && this.held.byteLength > 0) {
        const drop = Math.min(this.held.byteLength, at - this.position);
        this.held = this.held.subarray(drop);
        this.position += drop;
      }
      if (this.position === at && this.held.byteLength > 0) return this.held;
      if (this.position > at) throw new Error(`the tar was read past ${at}`);
      const { done, value } = await this.reader.read();
      if (done) throw new Error(`the tar ends before byte ${at}`);
      this.held = value;
    }
  }

  close(): void {
    this.reader.cancel().catch(() => {});
  }
}

/**
 * A link's budget seen through an archive answer. Every form of the archive counts against the
 * link in proportion to the whole: the whole `.zip` is one download (the file's size in the
 * link's bytes), an entry its share of the zip, a transfer cut short what it sent of that. So a
 * one-download link gives the zip once, whatever the zip's length next to the stored `.tar.gz`.
 */
export function archiveBudget(budget: ByteBudget, unit: number, whole: number): ByteBudget {
  const cost = (bytes: number) => (bytes === 0 ? 0 : Math.ceil((bytes * unit) / whole));
  return {
    check: (length) => budget.check(cost(length)),
    take: (length) => budget.take(cost(length)),
    endedEarly: (sent, length) => budget.endedEarly(cost(sent), cost(length)),
  };
}
