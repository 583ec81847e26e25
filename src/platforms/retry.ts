import { type RetryPolicy, withRetry } from "../retry";
import { PlatformError } from "./platform";

export interface PlatformRetryPolicy extends RetryPolicy {
  /** Which failures are worth another attempt; 429, 5xx and network failures unless set. */
  retryable?: (error: unknown) => boolean;
}

export const DEFAULT_PLATFORM_RETRY: PlatformRetryPolicy = {
  attempts: 4,
  baseDelayMs: 500,
  maxDelayMs: 30_000,
};

/**
 * Runs a platform call (told its attempt number, from 1), retrying 429 (after the
 * platform's `retry_after`), 5xx and network failures with exponential backoff and jitter,
 * or whatever `policy.retryable` accepts. A refusal (4xx) is final; so is a `retry_after`
 * longer than `policy.maxDelayMs`.
 */
export async function withPlatformRetry<T>(
  call: (attempt: number) => Promise<T>,
  policy: PlatformRetryPolicy = DEFAULT_PLATFORM_RETRY,
): Promise<T> {
  return withRetry(call, policy, policy.retryable ?? isTransient, { askedMs: retryAfterMs });
}

function retryAfterMs(error: unknown): number {
  return error instanceof PlatformError && error.retryAfterSeconds !== undefined
    ? error.retryAfterSeconds * 1000
    : 0;
}

function isTransient(error: unknown): boolean {
  return error instanceof PlatformError ? error.retryable : isNetworkError(error);
}

/** fetch rejects with a TypeError (or a runtime network error) when no answer came. */
function isNetworkError(error: unknown): boolean {
  return (
    error instanceof TypeError ||
    (error instanceof Error && /network|connect|reset|timed? ?out|socket/i.test(error.message))
  );
}
