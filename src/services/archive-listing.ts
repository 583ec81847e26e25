import { findArchiveListing, insertArchiveListing } from "../db/archive-listings";
import type { FileRow } from "../db/files";
import type { Deps } from "../deps";
import { logEvent } from "../log";
import { sniffMime, SNIFF_BYTES } from "../content/magic-bytes";
import { openOriginal, readHead } from "./original-bytes";
import { listTar, TAR_LIMITS } from "./tar-listing";

/**
 * Gzip input is handed to the inflater in pieces this small, so no single step can inflate
 * more than about a megabyte (deflate's best ratio is about 1:1032), whatever the archive.
 */
const INFLATE_PIECE = 1024;

/**
 * Lists a tar or tar.gz file (recognised by its magic bytes, not its name) once and keeps
 * the listing in D1 for the share page, which never reads the archive itself. Reading is
 * bounded (`TAR_LIMITS`: entries and inflated bytes; the original bytes read are capped
 * too), so a gzip bomb costs a few milliseconds like any other archive. A no-op for other
 * files and for content already listed (files with the same stored bytes share a listing).
 */
export async function recordArchiveListing(deps: Deps, file: FileRow): Promise<void> {
  if (file.size === 0) return;
  if (await findArchiveListing(deps.db, file.storedKey)) return;
  const mime = await sniffMime(await readHead(deps.store, file, SNIFF_BYTES));
  if (mime !== "application/gzip" && mime !== "application/x-tar") return;
  const started = Date.now();
  const length = Math.min(file.size, TAR_LIMITS.bytes + 64 * 1024);
  const body = await openOriginal(deps.store, file, { offset: 0, length });
  if (!body) return;
  const tar =
    mime === "application/gzip"
      ? body.pipeThrough(inPieces(INFLATE_PIECE)).pipeThrough(new DecompressionStream("gzip"))
      : body;
  const listing = await listTar(tar);
  await insertArchiveListing(deps.db, {
    storedKey: file.storedKey,
    listing,
    createdAt: deps.now(),
  });
  logEvent("archive_listed", {
    fileId: file.id,
    entries: listing?.entries.length ?? null,
    stopped: listing?.stopped ?? null,
    durationMs: Date.now() - started,
  });
}

/** Re-chunks a byte stream into pieces of at most `size` bytes. */
function inPieces(size: number): TransformStream<Uint8Array, Uint8Array> {
  return new TransformStream({
    transform(chunk, controller) {
      for (let offset = 0; offset < chunk.byteLength; offset += size)
        controller.enqueue(chunk.subarray(offset, offset + size));
    },
  });
}
