import { UsageError } from "../cli/errors.js";

/**
 * What an extraction may write at most, in bytes of regular-file content, unless `--max-bytes`
 * says otherwise: a bound on a gzip bomb that any real archive sent through a chat stays under.
 */
export const DEFAULT_MAX_EXTRACT_BYTES = 10 * 1024 ** 3;

const UNITS: Record<string, number> = { "": 1, k: 1024, m: 1024 ** 2, g: 1024 ** 3, t: 1024 ** 4 };

/**
 * `--max-bytes <n>`: a whole number of bytes, optionally with a unit K, M, G or T (powers of
 * 1024; `KiB`, `MB` and the like are read the same); the default when absent.
 */
export function maxExtractBytes(option: string | undefined, usage: string): number {
  if (option === undefined) return DEFAULT_MAX_EXTRACT_BYTES;
  const match = /^(\d+)\s*([kmgt]?)(?:i?b)?$/i.exec(option.trim());
  const value = match ? Number(match[1]) * UNITS[match[2]!.toLowerCase()]! : NaN;
  if (!Number.isSafeInteger(value) || value <= 0) {
    throw new UsageError(
      `--max-bytes needs a positive number of bytes (e.g. 500M, 20G), not ${JSON.stringify(option)}; usage: ${usage}`,
    );
  }
  return value;
}
