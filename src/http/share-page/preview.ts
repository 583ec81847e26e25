import { findArchiveListing } from "../../db/archive-listings";
import type { FileRow } from "../../db/files";
import type { Deps } from "../../deps";
import type { LinkUsage } from "../../services/sharing/link-budget";
import { readHead } from "../../services/original-bytes";
import type { TarListing } from "../../services/sharing/tar-listing";
import { archiveOffer, type ArchiveOffer } from "../../services/sharing/archive-offer";
import { PREVIEW_BYTES, sniffKind, type InlineKind } from "./preview-kind";
import { isActiveContent, textSample, type TextSample } from "./text-sample";

/** What the share page shows of a file below its details. */
export type Preview =
  | InlineKind
  | { kind: "text"; sample: TextSample; asSource: boolean }
  /** `offer`: what can be downloaded of it as single files and as a zip, if anything. */
  | { kind: "archive"; listing: TarListing; offer: ArchiveOffer | null }
  /** An archive whose listing is not stored: not yet (a pending file), or not at all. */
  | { kind: "unlisted"; pending: boolean }
  /** A preview would spend bytes a capped link keeps for its last download. */
  | { kind: "withheld" }
  | { kind: "empty" }
  | { kind: "none" };

/** A link minted with `maxDownloads`: what it has left, and how the page spends from it. */
export interface PageLimit {
  usage: LinkUsage;
  /** Reserves `bytes` for a preview the page embeds, while a whole download still fits. */
  reserve(bytes: number): Promise<boolean>;
}

/**
 * Chooses and loads a file's preview from its first 64 KiB: media the browser shows
 * itself (by magic bytes), an archive's stored listing (never computed here: see
 * `services/archive-listing`), the start of a text file, or nothing.
 *
 * On a capped link a preview is bytes of the file like any other: the text sample is
 * reserved from the link's budget here, and media is only embedded while the budget holds
 * the whole file twice over (the browser's `?inline=1` fetch then counts, and still leaves
 * a download). So on a one-download link the page shows no preview, and the download the
 * person came for is never spent by opening the page.
 */
export async function loadPreview(deps: Deps, file: FileRow, limit?: PageLimit): Promise<Preview> {
  if (file.size === 0) return { kind: "empty" };
  const head = await readHead(deps.store, file, PREVIEW_BYTES);
  // Missing content: the download will say so; the page just has nothing to show.
  if (head.byteLength === 0) return { kind: "none" };
  const sniffed = await sniffKind(head);
  if (sniffed.kind === "archive") {
    const stored = await findArchiveListing(deps.db, file.storedKey);
    if (!stored) return { kind: "unlisted", pending: !file.verified };
    if (!stored.listing) return { kind: "none" };
    const offer = archiveOffer(stored.listing, file, sniffed.gzip);
    return { kind: "archive", listing: stored.listing, offer };
  }
  if (sniffed.kind !== "other") {
    if (limit && limit.usage.remaining < file.size + limit.usage.unit) return { kind: "withheld" };
    return sniffed;
  }
  const sample = textSample(head, file.contentType, file.size > head.byteLength);
  if (!sample) return { kind: "none" };
  if (limit && !(await limit.reserve(sample.bytes))) return { kind: "withheld" };
  return { kind: "text", sample, asSource: isActiveContent(file.name, file.contentType) };
}
