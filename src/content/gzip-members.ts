import { z } from "zod";

/**
 * The gzip member table (docs/api.md, "The gzip member table"): a gzip upload stored as
 * independent members, member i covering original bytes [i*span, min((i+1)*span, size)),
 * concatenated in order. `storedSizes[i]` is member i's gzip length; they sum to the stored
 * size. A reader fetches and inflates only the members a range touches.
 */
export interface MemberTable {
  /** Original bytes per member (the last may cover fewer). */
  span: number;
  /** The stored (gzip) length of each member, in order. */
  storedSizes: number[];
}

const MiB = 1024 * 1024;
/** The span's bounds: 1 MiB (what the shims use) to 4 MiB. */
export const MIN_MEMBER_SPAN = MiB;
export const MAX_MEMBER_SPAN = 4 * MiB;
/** Most members one table may list. */
export const MAX_MEMBERS = 10_000;

/** A table as a declare's JSON carries it; its fit to the file is `memberTableProblem`'s. */
export const memberTableSchema = z
  .object({
    span: z
      .number()
      .int("must be a whole number")
      .min(MIN_MEMBER_SPAN, `must be at least ${MIN_MEMBER_SPAN}`)
      .max(MAX_MEMBER_SPAN, `must be at most ${MAX_MEMBER_SPAN}`),
    storedSizes: z
      .array(z.number().int("must be a whole number").positive("must be positive"))
      .min(1, "must list at least one member")
      .max(MAX_MEMBERS, `must list at most ${MAX_MEMBERS} members`),
  })
  .strict();

/** Members a file of `size` original bytes has at `span`: at least one. */
export function memberCount(size: number, span: number): number {
  return Math.max(1, Math.ceil(size / span));
}

/**
 * Why a table's `storedSizes` cannot describe a file of `size` original bytes stored as `storedSize` gzip
 * bytes, or null when it can: one member per span, their sizes summing to the stored size.
 */
export function memberTableProblem(
  table: MemberTable,
  size: number,
  storedSize: number,
): string | null {
  const count = memberCount(size, table.span);
  if (table.storedSizes.length !== count) {
    return (
      `must list ${count} sizes: one per ${table.span}-byte span of ` + `the ${size} original bytes`
    );
  }
  const sum = table.storedSizes.reduce((total, n) => total + n, 0);
  if (sum !== storedSize) {
    return `add up to ${sum}, not to storedSize (${storedSize})`;
  }
  return null;
}

/** A table's sizes as the database keeps them (comma-separated decimals). */
export function encodeSizes(sizes: readonly number[]): string {
  return sizes.join(",");
}

/** The inverse of `encodeSizes`. */
export function decodeSizes(text: string): number[] {
  return text.split(",").map(Number);
}
