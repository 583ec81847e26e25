import type { Blob } from "../db/blobs";
import type { BlobStore } from "../storage";
import type { ByteRange } from "../storage/blob-store";
import { digestExactly } from "../content/stream-digest";
import { AppError } from "../errors";
import { inflateRange, memberOffsets } from "../content/gzip-inflate";
import { digestMembers } from "../content/gzip-member-digest";
import type { MemberTable } from "../content/gzip-members";
import { logEvent } from "../log";

/**
 * How a blob is kept: enough to turn stored bytes back into the original ones; `members`, the
 * verified member table of gzip stored as independent members (null or absent: untabled).
 */
export type StoredForm = Pick<Blob, "encoding" | "storedKey" | "size"> & {
  members?: MemberTable | null;
};

/**
 * Original bytes an untabled gzip read may inflate beyond what it serves: it inflates from
 * byte 0, so only a range starting within this many bytes is served as a range (`fileResponse`
 * answers any other with the whole file). Tabled files inflate at most the members a range
 * touches, whatever the range.
 */
export const UNTABLED_INFLATE_BUDGET = 8 * 1024 * 1024;

/**
 * Streams the original bytes (or a range of them) of a stored blob. Identity blobs are
 * read straight from the store (ranges included). Gzip blobs are inflated as the stream is
 * read, and no further than the range's end: with a member table, only the stored bytes of
 * the members the range touches are fetched and inflated; an untabled blob is inflated from
 * its first byte, so its ranges must start within `UNTABLED_INFLATE_BUDGET`. Either way each
 * member (an untabled file: the whole) is cut off at its declared inflated length, and a cut
 * is logged (`inflate_stopped`) and errors the stream.
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
  const wanted = range ?? { offset: 0, length: blob.size };
  const onStop = (reason: string) =>
    logEvent("inflate_stopped", { storedKey: blob.storedKey, reason }, "warn");
  const table = blob.members;
  if (!table) {
    if (wanted.offset > UNTABLED_INFLATE_BUDGET) {
      throw new Error(`an untabled gzip read from ${wanted.offset} is over the inflate budget`);
    }
    const object = await store.get(blob.storedKey);
    if (!object) return null;
    const plan = { start: 0, inflatedLength: blob.size, range: wanted };
    return inflateRange(object.body, plan, onStop);
  }
  // Only the members the range touches: their stored bytes, inflated from the first one's start.
  const { span, storedSizes } = table;
  const first = Math.floor(wanted.offset / span);
  const last = Math.max(first, Math.floor((wanted.offset + wanted.length - 1) / span));
  const offsets = memberOffsets(storedSizes);
  const storedRange = { offset: offsets[first]!, length: offsets[last + 1]! - offsets[first]! };
  const object = await store.get(blob.storedKey, storedRange);
  if (!object) return null;
  const start = first * span;
  const plan = {
    start,
    inflatedLength: Math.min(blob.size, (last + 1) * span) - start,
    range: wanted,
  };
  return inflateRange(object.body, plan, onStop);
}

type UploadedForm = StoredForm & { storedSize: number; storedSha256: string; sha256: string };

/**
 * Checks an upload's bytes as the store holds them, in one read: the stored SHA-256 when
 * `checkStored` (a multipart object, which no store verified whole) and, for gzip, the
 * original bytes they inflate to, member by member when the upload declared a member table
 * (each member must inflate to its span and end at its stored size). True only when every
 * digest and length is the declared one; a decompression bomb stops at the declared size (a
 * member at its span). False when the object is gone or its bytes are not the declared ones;
 * throws when the store could not be read (try again).
 */
export async function storedBytesMatch(
  store: BlobStore,
  upload: UploadedForm,
  checkStored: boolean,
): Promise<boolean> {
  if (upload.encoding === "identity") {
    const stored = await storedDigest(store, upload);
    return stored === upload.storedSha256 && stored === upload.sha256;
  }
  const object = await store.get(upload.storedKey);
  if (!object) return false;
  try {
    // One read: the stored digest, each member's boundary and span, the original digest. An
    // untabled upload is one member as long as the stored bytes, inflating to the whole size.
    const table = upload.members ?? { span: upload.size, storedSizes: [Infinity] };
    const digest = await digestMembers(object.body, table, upload.size);
    return (
      digest.sha256Hex === upload.sha256 &&
      (!checkStored ||
        (digest.storedSize === upload.storedSize && digest.storedSha256Hex === upload.storedSha256))
    );
  } catch (error) {
    // Bad gzip (or bad members) fails the same way every time; a read the store broke off
    // does not. A second read that gets through means the former; a store that fails again
    // throws again (retried later).
    await storedDigest(store, upload).catch(() => {
      throw error;
    });
    return false;
  }
}

/** The stored bytes' SHA-256, or null when the object is gone or of another size. */
async function storedDigest(store: BlobStore, upload: UploadedForm): Promise<string | null> {
  const object = await store.get(upload.storedKey);
  if (!object || object.size !== upload.storedSize) return null;
  return (await digestExactly(object.body, upload.storedSize)).sha256Hex;
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
