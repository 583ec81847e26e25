import { parseSize } from "../../../src/services/human-size.js";
import { UsageError } from "../cli/errors.js";

/**
 * What an extraction may write at most, in bytes of regular-file content, unless `--max-bytes`
 * says otherwise: a bound on a gzip bomb that any real archive sent through a chat stays under.
 */
export const DEFAULT_MAX_EXTRACT_BYTES = 10 * 1024 ** 3;

/**
 * `--max-bytes <n>`: a whole number of bytes, optionally with a unit K, M, G or T (powers of
 * 1024, the one unit rule: `parseSize`); the default when absent.
 */
export function maxExtractBytes(option: string | undefined, usage: string): number {
  if (option === undefined) return DEFAULT_MAX_EXTRACT_BYTES;
  const value = parseSize(option);
  if (value === null) {
    throw new UsageError(
      `--max-bytes needs a positive number of bytes (e.g. 500M, 20G), not ${JSON.stringify(option)}; usage: ${usage}`,
    );
  }
  return value;
}

/**
 * How many entries (files, directories, links) an extraction creates at most, unless
 * `--max-entries` says otherwise: a bound on an archive of tiny entries, each a few hundred
 * bytes compressed, that would fill the disk's inodes or take minutes to create.
 */
export const DEFAULT_MAX_EXTRACT_ENTRIES = 100_000;

/** What one extraction may write: bytes of regular-file content and entries. */
export interface ExtractLimits {
  bytes: number;
  entries: number;
}

/** `--max-bytes` and `--max-entries` of `get` and `pull`, with their defaults. */
export function extractLimits(
  values: { "max-bytes"?: string; "max-entries"?: string },
  usage: string,
): ExtractLimits {
  const option = values["max-entries"];
  const entries = option === undefined ? DEFAULT_MAX_EXTRACT_ENTRIES : Number(option.trim());
  if (
    option !== undefined &&
    (!/^\d+$/.test(option.trim()) || !Number.isSafeInteger(entries) || entries <= 0)
  ) {
    throw new UsageError(
      `--max-entries needs a positive whole number (e.g. 500000), not ${JSON.stringify(option)}; usage: ${usage}`,
    );
  }
  return { bytes: maxExtractBytes(values["max-bytes"], usage), entries };
}
