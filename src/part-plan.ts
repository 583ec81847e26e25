/**
 * How a large upload is cut into parts. Shared by the relay and the shim (no imports), so
 * both compute the same part size from the same declared numbers.
 */

const MiB = 1024 * 1024;

/** Smallest part: above S3's 5 MiB floor, and few enough requests per GiB (128). */
export const MIN_PART_BYTES = 8 * MiB;
/** S3's and R2's limit on the parts of one upload. */
export const MAX_PARTS = 10_000;
/** Stored bytes above this go up in parts (the shim's choice; the relay accepts either). */
export const MULTIPART_THRESHOLD_BYTES = 64 * MiB;

/** gzip never grows data by more than a few bytes per 16 KiB block; a generous bound. */
export function maxStoredSize(size: number): number {
  return size + Math.ceil(size / 1000) + 1024;
}

/**
 * The part size for a file of `size` original bytes: at least 8 MiB, whole MiB, and large
 * enough that even the largest gzip of the file fits in 10,000 parts. It depends on the
 * original size only, so part digests can be taken while gzip output is still growing.
 */
export function partSizeFor(size: number): number {
  return Math.max(MIN_PART_BYTES, Math.ceil(maxStoredSize(size) / MAX_PARTS / MiB) * MiB);
}

/** Number of parts `storedSize` bytes take at `partSize` (the last one may be shorter). */
export function partCount(storedSize: number, partSize: number): number {
  return Math.max(1, Math.ceil(storedSize / partSize));
}

/** Length of part `partNumber` (1-based). */
export function partLength(storedSize: number, partSize: number, partNumber: number): number {
  return Math.min(partSize, storedSize - (partNumber - 1) * partSize);
}
