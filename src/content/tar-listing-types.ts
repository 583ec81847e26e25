import type { EntryType } from "./tar-header";

/** One entry of a tar archive, as the share page lists it. */
export interface TarEntry {
  name: string;
  size: number;
  type: EntryType;
  linkTarget?: string;
}

/** The entries read, and why reading stopped before the end, if it did. */
export interface TarListing {
  entries: TarEntry[];
  stopped?: "entries" | "bytes" | "corrupt";
}
