import { PlatformError } from "./platform";

export interface PlatformRetryPolicy {
  attempts: number;
  baseDelayMs: number;
  /** Longest wait the relay accepts, also for a platform's `retry_after`. */
  maxDelayMs: number;
  /** How many times longer each wait is than the one before; 2 unless set. */
  growth?: number;
  /** Each wait is a random part of its backoff (full jitter) unless this is false. */
  jitter?: boolean;
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
  const retryable = policy.retryable ?? isTransient;
  for (let attempt = 1; ; attempt++) {
    try {
      return await call(attempt);
    } catch (error) {
      if (!retryable(error) || attempt >= policy.attempts) throw error;
      const asked =
        error instanceof PlatformError && error.retryAfterSeconds !== undefined
          ? error.retryAfterSeconds * 1000
          : 0;
      if (asked > policy.maxDelayMs) throw error;
      await new Promise((resolve) =>
        setTimeout(resolve, Math.max(asked, backoff(policy, attempt))),
      );
    }
  }
}

/** The wait after failed attempt `attempt`: grows from `baseDelayMs`, capped at `maxDelayMs`. */
function backoff(policy: PlatformRetryPolicy, attempt: number): number {
  const grown = policy.baseDelayMs * (policy.growth ?? 2) ** (attempt - 1);
  const capped = Math.min(policy.maxDelayMs, grown);
  return policy.jitter === false ? capped : capped * Math.random();
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
