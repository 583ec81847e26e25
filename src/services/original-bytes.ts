import type { Blob } from "../db/blobs";
import type { BlobStore } from "../storage";
import type { ByteRange } from "../storage/blob-store";
import { digestExactly } from "../content/stream-digest";
import { AppError } from "../errors";

/** How a blob is kept: enough to turn stored bytes back into the original ones. */
export type StoredForm = Pick<Blob, "encoding" | "storedKey" | "size">;

/**
 * Streams the original bytes (or a range of them) of a stored blob. Identity blobs are
 * read straight from the store (ranges included); gzip blobs are inflated on the fly
 * and the range is cut from the inflated stream.
 */
export async function openOriginal(
  store: BlobStore,
  blob: StoredForm,
  range?: ByteRange,
): Promise<ReadableStream<Uint8Array> | null> {
  if (blob.encoding === "identity") {
    const object = await store.get(blob.storedKey, range);
    return object ? object.body : null;
  }
  const object = await store.get(blob.storedKey);
  if (!object) return null;
  const inflated = object.body.pipeThrough(new DecompressionStream("gzip"));
  return range ? inflated.pipeThrough(sliceStream(range)) : inflated;
}

type UploadedForm = StoredForm & { storedSize: number; storedSha256: string; sha256: string };

/**
 * Checks an upload's bytes as the store holds them: the stored SHA-256 when `checkStored`
 * (a multipart object, which no store verified whole) and, for gzip, the original bytes
 * they inflate to. True only when every digest and length is the declared one; a
 * decompression bomb stops at the declared size. False when the object is gone or its
 * bytes are not the declared ones; throws when the store could not be read (try again).
 */
export async function storedBytesMatch(
  store: BlobStore,
  upload: UploadedForm,
  checkStored: boolean,
): Promise<boolean> {
  if (checkStored || upload.encoding === "identity") {
    const stored = await storedDigest(store, upload);
    if (stored !== upload.storedSha256) return false;
    if (upload.encoding === "identity") return stored === upload.sha256;
  }
  const object = await store.get(upload.storedKey);
  if (!object) return false;
  try {
    const inflated = object.body.pipeThrough(new DecompressionStream("gzip"));
    const original = await digestExactly(inflated, upload.size);
    return original.sha256Hex === upload.sha256;
  } catch (error) {
    // Bad gzip fails the same way every time; a read the store broke off does not. Intact
    // stored bytes mean the former; a store that fails again throws again (retried later).
    if ((await storedDigest(store, upload)) === upload.storedSha256) return false;
    throw error;
  }
}

/** The stored bytes' SHA-256, or null when the object is gone or of another size. */
async function storedDigest(store: BlobStore, upload: UploadedForm): Promise<string | null> {
  const object = await store.get(upload.storedKey);
  if (!object || object.size !== upload.storedSize) return null;
  return (await digestExactly(object.body, upload.storedSize)).sha256Hex;
}

/** Passes through only the bytes of `range`, then ends the stream. */
function sliceStream({ offset, length }: ByteRange): TransformStream<Uint8Array, Uint8Array> {
  let position = 0;
  const end = offset + length;
  return new TransformStream({
    transform(chunk, controller) {
      const chunkStart = position;
      position += chunk.byteLength;
      if (position <= offset || chunkStart >= end) {
        if (chunkStart >= end) controller.terminate();
        return;
      }
      controller.enqueue(
        chunk.subarray(
          Math.max(0, offset - chunkStart),
          Math.min(chunk.byteLength, end - chunkStart),
        ),
      );
    },
  });
}

/** A file whose row outlived its stored bytes (a lifecycle rule, an operator's delete). */
export function contentGone(): AppError {
  return new AppError("file_not_found", "the file's content is no longer stored");
}

/** The first `limit` original bytes of a file (fewer when it is shorter). */
export async function readHead(
  store: BlobStore,
  blob: StoredForm,
  limit: number,
): Promise<Uint8Array> {
  const length = Math.min(limit, blob.size);
  if (length === 0) return new Uint8Array(0);
  const body = await openOriginal(store, blob, { offset: 0, length });
  if (!body) return new Uint8Array(0);
  const head = new Uint8Array(length);
  let filled = 0;
  const reader = body.getReader();
  try {
    while (filled < length) {
      const { done, value } = await reader.read();
      if (done) break;
      const take = Math.min(value.byteLength, length - filled);
      head.set(value.subarray(0, take), filled);
      filled += take;
    }
  } finally {
    await reader.cancel().catch(() => {});
  }
  return head.subarray(0, filled);
}
