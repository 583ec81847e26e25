import { integerVar } from "../cli/config.js";

/** Streams a large download uses at once, unless `AIRLOCK_DOWNLOAD_STREAMS` says otherwise. */
export const DEFAULT_DOWNLOAD_STREAMS = 4;
/** Files of at least this many bytes download in ranges, unless `AIRLOCK_PARALLEL_THRESHOLD` says otherwise. */
export const DEFAULT_PARALLEL_THRESHOLD = 16 * 1024 * 1024;
/**
 * Bytes per range unless `AIRLOCK_DOWNLOAD_CHUNK` says: two ranges per stream, from 4 to
 * 32 MiB. Each range costs a request (on s3 two: the relay's redirect, then the store), so
 * ranges are few; ranges that land ahead of the hash are read back at the end, so they are
 * not huge. On loopback 8 MiB ranges of 128 MiB (16 requests) ran slower than one stream,
 * 32 MiB ones (4) no slower.
 */
export function defaultChunk(size: number, streams: number): number {
  const MiB = 1024 * 1024;
  return Math.min(32 * MiB, Math.max(4 * MiB, Math.ceil(size / (2 * streams))));
}
/** The smallest range a knob may ask for (tests use it to run the ranged path on small files). */
const MIN_CHUNK = 64 * 1024;

type Env = Record<string, string | undefined>;

/** How a large download is split: streams at once, the size from which it splits, range size. */
export interface ParallelSettings {
  streams: number;
  threshold: number;
  /** Bytes per range; undefined: `defaultChunk` of the file's size. */
  chunk: number | undefined;
}

/**
 * Reads `AIRLOCK_DOWNLOAD_STREAMS` (1-16; 1 turns ranged downloads off),
 * `AIRLOCK_PARALLEL_THRESHOLD` and `AIRLOCK_DOWNLOAD_CHUNK` (bytes) over the defaults.
 */
export function parallelSettings(env: Env = process.env): ParallelSettings {
  return {
    streams: integerVar(env, "AIRLOCK_DOWNLOAD_STREAMS", DEFAULT_DOWNLOAD_STREAMS, 1, 16),
    threshold: integerVar(
      env,
      "AIRLOCK_PARALLEL_THRESHOLD",
      DEFAULT_PARALLEL_THRESHOLD,
      1,
      2 ** 50,
    ),
    chunk: env.AIRLOCK_DOWNLOAD_CHUNK?.trim()
      ? integerVar(env, "AIRLOCK_DOWNLOAD_CHUNK", MIN_CHUNK, MIN_CHUNK, 2 ** 40)
      : undefined,
  };
}

/** Whether a file of `size` bytes (unknown: undefined) may download in ranges. */
export function mayRange(settings: ParallelSettings, size: number | undefined): boolean {
  return settings.streams > 1 && (size === undefined || size >= settings.threshold);
}
