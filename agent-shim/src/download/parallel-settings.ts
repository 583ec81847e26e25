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
  /**
   * Whether the streams are opened only when the first range shows they pay (see `splitPays`);
   * false when AIRLOCK_DOWNLOAD_STREAMS names a number: then they all start at once.
   */
  adaptive: boolean;
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
    adaptive: !env.AIRLOCK_DOWNLOAD_STREAMS?.trim(),
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

/** How long the first range is watched before deciding whether more streams pay. */
export const PROBE = { bytes: 4 * 1024 * 1024, ms: 300 };
/**
 * A stream already this fast is left alone: on loopback, or a link near the host, one stream
 * goes as fast as the two ends can move bytes, and every extra range costs a request (on s3 two)
 * and a read-back for the in-order hash. Parallel streams pay where one TCP stream is held back
 * by latency and loss (by the Mathis bound, 2-3 MB/s at 80 ms and 0.01 % loss).
 */
export const SPLIT_BELOW_BYTES_PER_SECOND = 16 * 1024 * 1024;
/** Nor is a download that one stream finishes within this long: a request costs a round trip. */
export const SPLIT_AFTER_SECONDS = 1;

/**
 * Whether to open more streams, from the first range: `bytes` arrived in the `ms` after its
 * first chunk, `remaining` bytes of the file not yet arrived.
 */
export function splitPays(bytes: number, ms: number, remaining: number): boolean {
  const rate = (bytes * 1000) / Math.max(ms, 1);
  return rate < SPLIT_BELOW_BYTES_PER_SECOND && remaining / rate > SPLIT_AFTER_SECONDS;
}
