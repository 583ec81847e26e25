import { PlatformError } from "./platform";

export interface PlatformRetryPolicy {
  attempts: number;
  baseDelayMs: number;
  /** Longest wait the relay accepts, also for a platform's `retry_after`. */
  maxDelayMs: number;
}

export const DEFAULT_PLATFORM_RETRY: PlatformRetryPolicy = {
  attempts: 4,
  baseDelayMs: 500,
  maxDelayMs: 30_000,
};

/**
 * Runs a platform call, retrying 429 (after the platform's `retry_after`), 5xx and
 * network failures with exponential backoff and jitter. A refusal (4xx) is final.
 */
export async function withPlatformRetry<T>(
  call: () => Promise<T>,
  policy: PlatformRetryPolicy = DEFAULT_PLATFORM_RETRY,
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await call();
    } catch (error) {
      const retryable = error instanceof PlatformError ? error.retryable : isNetworkError(error);
      if (!retryable || attempt >= policy.attempts) throw error;
      const backoff =
        Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** (attempt - 1)) * Math.random();
      const asked =
        error instanceof PlatformError && error.retryAfterSeconds !== undefined
          ? error.retryAfterSeconds * 1000
          : 0;
      if (asked > policy.maxDelayMs) throw error;
      await new Promise((resolve) => setTimeout(resolve, Math.max(asked, backoff)));
    }
  }
}

/** fetch rejects with a TypeError (or a runtime network error) when no answer came. */
function isNetworkError(error: unknown): boolean {
  return (
    error instanceof TypeError ||
    (error instanceof Error && /network|connect|reset|timed? ?out|socket/i.test(error.message))
  );
}
