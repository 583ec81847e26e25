import type { FileRow } from "../db/files";
import type { Deps } from "../deps";
import { AppError } from "../errors";
import { withKnownLength } from "../content/known-length";
import { archiveBudget, openEntry, openZip } from "../services/sharing/archive-bytes";
import { findArchiveOffer, zipName } from "../services/sharing/archive-offer";
import type { ByteBudget } from "../services/sharing/link-budget";
import { contentDisposition } from "./content-disposition";
import { meter } from "./file-response";

/** What a share link's archive query asks for: one entry (`?entry=N`) or the zip (`?zip=1`). */
export type ArchivePart = { entry: number } | { zip: true };

/** The archive part a share-link URL asks for, or null when it asks for none. */
export function archivePart(url: URL): ArchivePart | null {
  const entry = url.searchParams.get("entry");
  if (entry !== null) {
    if (!/^\d{1,6}$/.test(entry))
      throw new AppError("invalid_request", "entry: must be an entry's number in the listing");
    return { entry: Number(entry) };
  }
  return url.searchParams.has("zip") ? { zip: true } : null;
}

/**
 * One entry of an archive, or the whole as a `.zip`, cut by the relay from the stored archive
 * as it streams (see `services/sharing/archive-offer` for what is offered and what it costs).
 * Always a whole `200` attachment (`Accept-Ranges: none`) of a length known before the first
 * byte; a capped link is charged for it before it streams, in proportion to the zip
 * (`archiveBudget`), and given back what a transfer cut short never sent.
 */
export async function archiveResponse(
  deps: Deps,
  file: FileRow,
  request: Request,
  part: ArchivePart,
  budget?: ByteBudget,
): Promise<Response> {
  const offer = await findArchiveOffer(deps, file);
  let name: string;
  let length: number;
  let open: () => Promise<ReadableStream<Uint8Array>>;
  if ("entry" in part) {
    const entry = offer?.single.has(part.entry)
      ? offer.entries.find((e) => e.index === part.entry)
      : undefined;
    if (!offer || !entry)
      throw new AppError(
        "file_not_found",
        `the archive has no entry ${part.entry} that can be downloaded on its own`,
      );
    name = entry.name;
    length = entry.size;
    open = () => openEntry(deps.store, file, offer, entry);
  } else {
    if (!offer?.zip)
      throw new AppError("file_not_found", "this file cannot be downloaded as a .zip");
    name = zipName(file.name);
    length = offer.zipLength;
    open = async () => openZip(deps.store, file, offer);
  }
  const headers = new Headers({
    "content-type": "entry" in part ? "application/octet-stream" : "application/zip",
    "content-disposition": contentDisposition(name),
    "content-length": String(length),
    "accept-ranges": "none",
    "cache-control": "private, max-age=0, must-revalidate, no-transform",
    "content-encoding": "identity",
    "x-content-type-options": "nosniff",
    "content-security-policy": "default-src 'none'; sandbox",
  });
  const metered = budget && archiveBudget(budget, Math.max(file.size, 1), offer.zipLength);
  if (request.method === "HEAD") {
    await metered?.check(length);
    return new Response(null, { headers });
  }
  await metered?.take(length);
  let body: ReadableStream<Uint8Array> | null = null;
  try {
    body = length === 0 ? null : await open();
  } catch (error) {
    metered?.endedEarly(0, length);
    throw error;
  }
  if (!body) return new Response(null, { headers });
  const sent = metered
    ? meter(body, length, request.signal, (bytes) => metered.endedEarly(bytes, length))
    : body;
  return new Response(withKnownLength(sent, length), { headers });
}
