import { UsageError } from "./errors.js";

/** Attempts per request (the first try included) unless `AIRLOCK_RETRIES` says otherwise. */
export const DEFAULT_ATTEMPTS = 5;
/** First backoff ceiling in ms, doubled per retry, unless `AIRLOCK_RETRY_BASE_MS` says otherwise. */
export const DEFAULT_RETRY_BASE_MS = 250;
/** The largest backoff ceiling in ms. */
export const RETRY_CAP_MS = 8_000;
/** Where `airlock pull` writes unless `--dir` says otherwise. */
/** gzip level: 1 keeps compression well ahead of typical upload speeds. */
export const GZIP_LEVEL = 1;
/**
 * Parts of a multipart upload in flight at most, unless `AIRLOCK_UPLOAD_CONCURRENCY` says
 * otherwise; unset, they open only once the first part shows a slow link (`uploadAdaptive`).
 */
export const DEFAULT_UPLOAD_CONCURRENCY = 4;

type Env = Record<string, string | undefined>;

/** Where the relay is and how the shim authenticates to it. */
export interface RelayConfig {
  /** Base URL without a trailing slash. */
  url: string;
  token: string;
}

/** How hard to retry a failed request. */
export interface RetryPolicy {
  attempts: number;
  baseMs: number;
  capMs: number;
}

/** Reads `AIRLOCK_URL` and `AIRLOCK_TOKEN`; either missing or malformed is a usage error. */
export function relayConfig(env: Env = process.env): RelayConfig {
  const raw = env.AIRLOCK_URL?.trim();
  if (!raw) {
    throw new UsageError("AIRLOCK_URL is not set; set it to the relay's base URL");
  }
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new UsageError(`AIRLOCK_URL is not a valid URL: ${raw}`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new UsageError(`AIRLOCK_URL must be an http(s) URL: ${raw}`);
  }
  const token = env.AIRLOCK_TOKEN?.trim();
  if (!token) {
    throw new UsageError("AIRLOCK_TOKEN is not set; set it to this sandbox's session token");
  }
  return { url: raw.replace(/\/+$/, ""), token };
}

/** Reads `AIRLOCK_RETRIES` and `AIRLOCK_RETRY_BASE_MS` over the defaults. */
export function retryPolicy(env: Env = process.env): RetryPolicy {
  return {
    attempts: integerVar(env, "AIRLOCK_RETRIES", DEFAULT_ATTEMPTS, 1, 100),
    baseMs: integerVar(env, "AIRLOCK_RETRY_BASE_MS", DEFAULT_RETRY_BASE_MS, 0, 60_000),
    capMs: RETRY_CAP_MS,
  };
}

/** Reads `AIRLOCK_GZIP_LEVEL` (benchmarks compare levels) over `GZIP_LEVEL`. */
export function gzipLevel(env: Env = process.env): number {
  return integerVar(env, "AIRLOCK_GZIP_LEVEL", GZIP_LEVEL, 1, 9);
}

/** Reads `AIRLOCK_UPLOAD_CONCURRENCY` (parts in flight at once) over the default. */
export function uploadConcurrency(env: Env = process.env): number {
  return integerVar(env, "AIRLOCK_UPLOAD_CONCURRENCY", DEFAULT_UPLOAD_CONCURRENCY, 1, 16);
}

/**
 * Whether an upload sends one part's bytes at a time and streams more parts at once only when
 * the first runs slow (the downloads' rule, `splitPays`): yes unless `AIRLOCK_UPLOAD_CONCURRENCY`
 * is set, when that many go at once from the start.
 */
export function uploadAdaptive(env: Env = process.env): boolean {
  return !env.AIRLOCK_UPLOAD_CONCURRENCY?.trim();
}

/** Reads an integer setting from `min` to `max`; anything else is a usage error. */
export function integerVar(
  env: Env,
  name: string,
  fallback: number,
  min: number,
  max: number,
): number {
  const raw = env[name]?.trim();
  if (!raw) return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new UsageError(`${name} must be an integer from ${min} to ${max}, not ${raw}`);
  }
  return value;
}
