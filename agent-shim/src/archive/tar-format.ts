/**
 * What the shim's small POSIX tar (pax interchange format) writer (tar-writer.ts) and reader
 * (tar-reader.ts) share. The format: ustar headers, with a pax extended header (`x`) before any
 * entry whose name or link target does not fit ustar (longer than 100 bytes, or not ASCII) or
 * whose size exceeds ustar's 8 GiB. The reader also takes GNU long names (`L`, `K`) and
 * base-256 numbers, as GNU tar writes them. Headers are parsed by the relay's own parser, which
 * lists archives for the share page.
 */
import { paddingLength } from "../../../src/content/tar-header.js";

export {
  BLOCK,
  TarFormatError,
  type EntryType,
  type ReadEntry,
  type TarHeader,
} from "../../../src/content/tar-header.js";

/** Zeros up to the next block boundary after `size` bytes. */
export function padding(size: number): Buffer {
  return Buffer.alloc(paddingLength(size));
}
