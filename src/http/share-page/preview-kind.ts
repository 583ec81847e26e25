import type { FileRow } from "../../db/files";
import type { BlobStore } from "../../storage";
import { SNIFF_BYTES, sniffMime } from "../../content/magic-bytes";
import { readHead } from "../../services/original-bytes";

/** How much of a file the page reads to choose and render its preview. */
export const PREVIEW_BYTES = 64 * 1024;

/** Raster formats browsers decode as images and never run: the only images shown inline. */
const RASTER_IMAGES = new Set(["image/png", "image/apng", "image/jpeg", "image/gif", "image/webp"]);

/** What a file's first bytes say the browser may show inline, and with which type. */
export type InlineKind =
  | { kind: "image"; mime: string }
  | { kind: "pdf"; mime: "application/pdf" }
  | { kind: "video"; mime: string }
  | { kind: "audio"; mime: string };

/** What the file's magic bytes say it is, as far as previews care. */
export type SniffedKind = InlineKind | { kind: "archive"; gzip: boolean } | { kind: "other" };

/**
 * Classifies a file by its magic bytes, never by its declared type or name, which the
 * uploader chose: a "photo.png" that is really HTML is never served inline.
 */
export async function sniffKind(head: Uint8Array): Promise<SniffedKind> {
  const mime = await sniffMime(head);
  if (!mime) return { kind: "other" };
  if (RASTER_IMAGES.has(mime)) return { kind: "image", mime };
  if (mime === "application/pdf") return { kind: "pdf", mime };
  if (mime.startsWith("video/")) return { kind: "video", mime };
  if (mime.startsWith("audio/")) return { kind: "audio", mime };
  if (mime === "application/gzip") return { kind: "archive", gzip: true };
  if (mime === "application/x-tar") return { kind: "archive", gzip: false };
  return { kind: "other" };
}

/** The type to serve a file with for `?inline=1`, or null when it must stay an attachment. */
export async function inlineMime(store: BlobStore, file: FileRow): Promise<string | null> {
  const sniffed = await sniffKind(await readHead(store, file, SNIFF_BYTES));
  return sniffed.kind === "image" ||
    sniffed.kind === "pdf" ||
    sniffed.kind === "video" ||
    sniffed.kind === "audio"
    ? sniffed.mime
    : null;
}
