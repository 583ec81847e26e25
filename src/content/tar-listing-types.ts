import type { EntryType } from "./tar-header";

/** One entry of a tar archive, as the share page lists it. */
export interface TarEntry {
  name: string;
  size: number;
  type: EntryType;
  linkTarget?: string;
  /** A file's first content byte in the tar stream (listings made since zip downloads). */
  offset?: number;
}

/** The entries read, and why reading stopped before the end, if it did. */
export interface TarListing {
  entries: TarEntry[];
  stopped?: "entries" | "bytes" | "corrupt";
}
