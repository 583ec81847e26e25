import type { FileRow } from "../../db/files";
import { openOriginal, readHead } from "../../services/original-bytes";
import type { BlobStore } from "../../storage";
import { PREVIEW_BYTES, sniffKind, type InlineKind } from "./preview-kind";
import { listTar, type TarListing } from "./tar-listing";
import { isActiveContent, textSample, type TextSample } from "./text-sample";

/** What the share page shows of a file below its details. */
export type Preview =
  | InlineKind
  | { kind: "text"; sample: TextSample; asSource: boolean }
  | { kind: "archive"; listing: TarListing }
  | { kind: "empty" }
  | { kind: "none" };

/**
 * Chooses and loads a file's preview from its first 64 KiB: media the browser shows
 * itself (by magic bytes), a tar listing, the start of a text file, or nothing.
 */
export async function loadPreview(store: BlobStore, file: FileRow): Promise<Preview> {
  if (file.size === 0) return { kind: "empty" };
  const head = await readHead(store, file, PREVIEW_BYTES);
  // Missing content: the download will say so; the page just has nothing to show.
  if (head.byteLength === 0) return { kind: "none" };
  const sniffed = await sniffKind(head);
  if (sniffed.kind === "archive") {
    const listing = await loadListing(store, file, sniffed.gzip);
    if (listing) return { kind: "archive", listing };
    return { kind: "none" };
  }
  if (sniffed.kind !== "other") return sniffed;
  const sample = textSample(head, file.contentType, file.size > head.byteLength);
  if (!sample) return { kind: "none" };
  return { kind: "text", sample, asSource: isActiveContent(file.name, file.contentType) };
}

async function loadListing(
  store: BlobStore,
  file: FileRow,
  gzip: boolean,
): Promise<TarListing | null> {
  const body = await openOriginal(store, file);
  if (!body) return null;
  return listTar(gzip ? body.pipeThrough(new DecompressionStream("gzip")) : body);
}
