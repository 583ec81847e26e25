import { findArchiveListing } from "../../db/archive-listings";
import type { FileRow } from "../../db/files";
import type { Deps } from "../../deps";
import { sniffMime, SNIFF_BYTES } from "../../content/magic-bytes";
import type { TarListing } from "../../content/tar-listing-types";
import { zipLength, type ZipEntry } from "../../content/zip-writer";
import { fileNameProblem } from "../../names";
import { readHead, UNTABLED_INFLATE_BUDGET } from "../original-bytes";

/**
 * What a share page offers of an archive beyond the archive itself: its entries one at a time
 * and the whole as a `.zip`, both cut from the stored archive by the relay as they stream.
 *
 * Only what the stored listing vouches for is offered: a listing read to its end (not stopped
 * at its bounds), made since listings record where each file's bytes start. Entries are the
 * regular files and directories whose paths are relative and clean, component by component,
 * under the one name rule (`fileNameProblem`): no `..`, no absolute path, no `\`, no control or
 * bidi characters. Symlinks, hard links, devices and FIFOs, and names that fail the rule, are
 * never offered (they stay in the page's listing, written out); a repeated path is offered once,
 * and nothing under a path already offered as a file.
 *
 * Cost follows what is served: a tar read at an offset (stored as it is, or gzip with a member
 * table) serves an entry by its own bytes; a `.tar.gz` (or an untabled gzip-stored tar) is
 * inflated from its first byte, so only entries that start within `UNTABLED_INFLATE_BUDGET` are
 * offered alone. The zip reads the tar once up to its last offered byte, and is offered only
 * while what it reads and skips (headers, entries not offered) stays within that budget too.
 */
export interface ArchiveOffer {
  /** The archive's own compression: a `.tar.gz` (gzip inside the file), or a plain tar. */
  gzip: boolean;
  /** The entries the zip holds, in archive order. */
  entries: OfferedEntry[];
  /** Listing indexes that can be downloaded on their own. */
  single: Set<number>;
  /** Whether the whole is offered as a zip. */
  zip: boolean;
  /** The zip's exact length: what an answer's share of the whole is measured against. */
  zipLength: number;
  /** Tar bytes the zip reads: up to the last offered file's end. */
  tarEnd: number;
}

/** An entry as the zip and a single download name it, with where its bytes are in the tar. */
export interface OfferedEntry extends ZipEntry {
  /** Its index in the stored listing (the page's `?entry=` links). */
  index: number;
  /** A file's first content byte in the tar stream (0 for a directory). */
  offset: number;
}

/** A file's offer, from its stored listing and its first bytes; null for anything else. */
export async function findArchiveOffer(deps: Deps, file: FileRow): Promise<ArchiveOffer | null> {
  const stored = await findArchiveListing(deps.db, file.storedKey);
  if (!stored?.listing) return null;
  const mime = await sniffMime(await readHead(deps.store, file, SNIFF_BYTES));
  if (mime !== "application/gzip" && mime !== "application/x-tar") return null;
  return archiveOffer(stored.listing, file, mime === "application/gzip");
}

/** The offer for a complete listing, or null when nothing can be offered. */
export function archiveOffer(
  listing: TarListing,
  file: Pick<FileRow, "encoding" | "members">,
  gzip: boolean,
): ArchiveOffer | null {
  if (listing.stopped) return null;
  const entries: OfferedEntry[] = [];
  const seen = new Set<string>();
  const files = new Set<string>();
  let tarEnd = 0;
  let served = 0;
  for (const [index, entry] of listing.entries.entries()) {
    if (entry.type !== "file" && entry.type !== "directory") continue;
    if (entry.type === "file" && entry.offset === undefined) return null;
    const path = cleanEntryPath(entry.name);
    // A repeated path, or one under a file offered before (`a`, then `a/b`), is not offered.
    if (!path || seen.has(path) || ancestors(path).some((dir) => files.has(dir))) continue;
    seen.add(path);
    const directory = entry.type === "directory";
    if (!directory) files.add(path);
    const offset = entry.offset ?? 0;
    const size = directory ? 0 : entry.size;
    entries.push({ index, name: path, size, directory, offset });
    if (!directory) {
      tarEnd = Math.max(tarEnd, offset + size);
      served += size;
    }
  }
  if (entries.length === 0) return null;
  const seekable = !gzip && (file.encoding === "identity" || !!file.members);
  const single = new Set(
    entries
      .filter((e) => !e.directory && (seekable || e.offset <= UNTABLED_INFLATE_BUDGET))
      .map((e) => e.index),
  );
  const zip = tarEnd - served <= UNTABLED_INFLATE_BUDGET;
  return { gzip, entries, single, zip, zipLength: zipLength(entries), tarEnd };
}

/**
 * An entry's path as a zip may hold it: `./` and empty components dropped, every other
 * component a clean name. Null for an absolute path or any component the name rule would
 * change (`..`, `\`, control or bidi characters, white space at an end, dots only).
 */
export function cleanEntryPath(name: string): string | null {
  if (name.startsWith("/")) return null;
  const parts = name.split("/").filter((part) => part !== "" && part !== ".");
  if (parts.length === 0 || parts.some((part) => fileNameProblem(part) !== null)) return null;
  return parts.join("/");
}

/** `a/b/c` → `a`, `a/b`. */
function ancestors(path: string): string[] {
  const parts = path.split("/");
  return parts.slice(1).map((_, i) => parts.slice(0, i + 1).join("/"));
}

/** `site.tar.gz` → `site.zip`: the name the zip is offered under. */
export function zipName(archiveName: string): string {
  const stem = archiveName.replace(/\.(tar\.gz|tgz|tar|gz)$/i, "");
  return `${stem || "archive"}.zip`;
}
