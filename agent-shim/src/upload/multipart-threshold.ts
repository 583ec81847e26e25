import { MIN_PART_BYTES, MULTIPART_THRESHOLD_BYTES } from "../../../src/part-plan.js";

/** Environment variable that lowers (or raises) the size above which a send goes in parts. */
export const MULTIPART_THRESHOLD_VAR = "AIRLOCK_MULTIPART_THRESHOLD";

/**
 * Stored bytes above which a send goes up in parts: 64 MiB, or `AIRLOCK_MULTIPART_THRESHOLD`
 * (bytes, at least one smallest part, so a multipart upload always has two parts or more). The
 * relay takes either form at any size; a lower threshold lets a slow link resume sooner.
 */
export function multipartThreshold(): number {
  const raw = process.env[MULTIPART_THRESHOLD_VAR]?.trim();
  if (!raw || !/^\d+$/.test(raw)) return MULTIPART_THRESHOLD_BYTES;
  return Math.max(MIN_PART_BYTES, Number(raw));
}
