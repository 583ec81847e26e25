import { decodeSizes, encodeSizes, type MemberTable } from "../content/gzip-members";

/**
 * Verified gzip member tables, one per stored object (`gzip_members`, migration 0011). A key
 * names its stored bytes and a member's end is fixed by those bytes, so a table verified for
 * some bytes holds for every key holding them: it is recorded for each key a file moves onto.
 */

/** Records `table` for the object at `storedKey` (kept when one is there: it is the same). */
export function memberTableStatement(
  db: D1Database,
  storedKey: string,
  table: MemberTable,
  now: number,
): D1PreparedStatement {
  return db
    .prepare(
      `INSERT INTO gzip_members (stored_key, span, stored_sizes, created_at) VALUES (?, ?, ?, ?)
       ON CONFLICT (stored_key) DO NOTHING`,
    )
    .bind(storedKey, table.span, encodeSizes(table.storedSizes), now);
}

/** `memberTableStatement`, run on its own. */
export async function recordMemberTable(
  db: D1Database,
  storedKey: string,
  table: MemberTable,
  now: number,
): Promise<void> {
  await memberTableStatement(db, storedKey, table, now).run();
}

/** The columns a file read joins in (`f` the file, `m` the table), and the join itself. */
export const MEMBER_COLUMNS = "m.span AS member_span, m.stored_sizes AS member_sizes";
export const MEMBER_JOIN = "LEFT JOIN gzip_members m ON m.stored_key = f.stored_key";

/** A joined row's table, or null for an untabled (or identity) file. */
export function memberTableOfRow(row: {
  member_span?: number | null;
  member_sizes?: string | null;
}): MemberTable | null {
  return row.member_span != null && row.member_sizes != null
    ? { span: row.member_span, storedSizes: decodeSizes(row.member_sizes) }
    : null;
}

/** Forgets the tables of objects that were deleted. */
export async function forgetMemberTables(db: D1Database, storedKeys: string[]): Promise<void> {
  if (storedKeys.length === 0) return;
  await db
    .prepare("DELETE FROM gzip_members WHERE stored_key IN (SELECT value FROM json_each(?))")
    .bind(JSON.stringify(storedKeys))
    .run();
}
