import { sniffMime } from "../content/magic-bytes";

export { SNIFF_BYTES } from "../content/magic-bytes";

/** The media kinds platforms upload differently. */
export type MediaKind = "photo" | "video" | "audio" | "document";

/** Photos the chat apps render inline; other images go as documents. */
const PHOTO_TYPES = new Set(["image/jpeg", "image/png", "image/gif", "image/webp"]);
const VIDEO_TYPES = new Set(["video/mp4", "video/quicktime", "video/webm"]);

/**
 * The MIME type and media kind read from a file's first bytes (magic numbers), never
 * from its name: a `.jpg` that is really a zip is a document.
 */
export async function sniffMediaKind(
  head: Uint8Array,
): Promise<{ mime: string | null; kind: MediaKind }> {
  const mime = await sniffMime(head);
  if (mime && PHOTO_TYPES.has(mime)) return { mime, kind: "photo" };
  if (mime && VIDEO_TYPES.has(mime)) return { mime, kind: "video" };
  if (mime?.startsWith("audio/")) return { mime, kind: "audio" };
  return { mime, kind: "document" };
}
