import type { TarEntry, TarListing } from "../content/tar-listing-types";

/** A stored archive listing; `listing` is null when the bytes turned out not to be a tar. */
export interface StoredListing {
  storedKey: string;
  listing: TarListing | null;
  createdAt: number;
}

interface ListingDbRow {
  stored_key: string;
  entries: string | null;
  stopped: TarListing["stopped"] | null;
  created_at: number;
}

/** Records the listing of the object at `storedKey`; a listing already there stays. */
export async function insertArchiveListing(db: D1Database, row: StoredListing): Promise<void> {
  await db
    .prepare(
      `INSERT INTO archive_listings (stored_key, entries, stopped, created_at)
       VALUES (?, ?, ?, ?) ON CONFLICT (stored_key) DO NOTHING`,
    )
    .bind(
      row.storedKey,
      row.listing ? JSON.stringify(row.listing.entries) : null,
      row.listing?.stopped ?? null,
      row.createdAt,
    )
    .run();
}

export async function findArchiveListing(
  db: D1Database,
  storedKey: string,
): Promise<StoredListing | null> {
  const row = await db
    .prepare("SELECT * FROM archive_listings WHERE stored_key = ?")
    .bind(storedKey)
    .first<ListingDbRow>();
  if (!row) return null;
  const entries = row.entries === null ? null : (JSON.parse(row.entries) as TarEntry[]);
  return {
    storedKey: row.stored_key,
    listing: entries ? { entries, ...(row.stopped ? { stopped: row.stopped } : {}) } : null,
    createdAt: row.created_at,
  };
}
