/**
 * What the shim's small POSIX tar (pax interchange format) writer (tar-writer.ts) and reader
 * (tar-reader.ts) share. The format: ustar headers, with a pax extended header (`x`) before any
 * entry whose name or link target does not fit ustar (longer than 100 bytes, or not ASCII) or
 * whose size exceeds ustar's 8 GiB. The reader also takes GNU long names (`L`, `K`) and
 * base-256 numbers, as GNU tar writes them.
 */

export const BLOCK = 512;

/** Entry types as the shim writes and extracts them. */
export type EntryType = "file" | "directory" | "symlink" | "hardlink" | "other";

/** One tar header's worth of metadata. */
export interface TarHeader {
  /** The path inside the archive, `/`-separated; directories without a trailing slash. */
  name: string;
  type: EntryType;
  /** Permission bits (and setuid/setgid/sticky). */
  mode: number;
  /** Seconds since the epoch. */
  mtime: number;
  /** Bytes of content that follow the header (0 for anything but regular files, as written). */
  size: number;
  /** The target of a symlink or hard link. */
  linkname: string;
}

/** Zeros up to the next block boundary after `size` bytes. */
export function padding(size: number): Buffer {
  return Buffer.alloc((BLOCK - (size % BLOCK)) % BLOCK);
}

/** The error for an archive that is not tar, or is damaged. */
export class TarFormatError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "TarFormatError";
  }
}
