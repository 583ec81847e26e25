import { findArchiveListing, insertArchiveListing } from "../../db/archive-listings";
import type { FileRow } from "../../db/files";
import type { Deps } from "../../deps";
import { logEvent } from "../../log";
import { sniffMime, SNIFF_BYTES } from "../../content/magic-bytes";
import { gunzipLazily } from "../../content/gzip-inflate";
import { openOriginal, readHead } from "../original-bytes";
import { listTar, TAR_LIMITS } from "./tar-listing";

/**
 * Lists a tar or tar.gz file (recognised by its magic bytes, not its name) once and keeps
 * the listing in D1 for the share page, which never reads the archive itself. Reading is
 * bounded (`TAR_LIMITS`: entries, and 64 MiB of tar read, i.e. inflated; the original bytes
 * read are capped too) and the tar.gz is inflated lazily, only as the listing reads on, so a
 * gzip bomb stops at that cap (`stopped: "bytes"`, which the share page says) like any other
 * archive. A no-op for other
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
  const tar = mime === "application/gzip" ? gunzipLazily(body) : body;
  const listing = await listTar(tar);
  await insertArchiveListing(deps.db, {
    storedKey: file.storedKey,
    listing,
    createdAt: deps.now(),
  });
  logEvent(
    "archive_listed",
    {
      fileId: file.id,
      entries: listing?.entries.length ?? null,
      stopped: listing?.stopped ?? null,
      durationMs: Date.now() - started,
    },
    listing?.stopped === "bytes" ? "warn" : "info",
  );
}
