import { fileTypeFromBuffer } from "file-type/core";

/** Bytes file-type needs to recognise every format it knows. */
export const SNIFF_BYTES = 4100;

/**
 * The MIME type a file's first bytes (magic numbers) say it has, or null: never the name
 * or the declared type, which the uploader chose.
 */
export async function sniffMime(head: Uint8Array): Promise<string | null> {
  return (await fileTypeFromBuffer(head.subarray(0, SNIFF_BYTES)))?.mime ?? null;
}
