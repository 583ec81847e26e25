/** How a call is tried again: how often, and how long to wait in between. */
export interface RetryPolicy {
  attempts: number;
  baseDelayMs: number;
  /** Longest wait, also for one the failure asks for (`askedMs`). */
  maxDelayMs: number;
  /** How many times longer each wait is than the one before; 2 unless set. */
  growth?: number;
  /** Each wait is a random part of its backoff (full jitter) unless this is false. */
  jitter?: boolean;
}

/**
 * Runs `call` (told its attempt number, from 1) until it succeeds, fails in a way `retryable`
 * refuses, or has used `policy.attempts`; waits between attempts with exponential backoff, or
 * as long as the failure asks (`askedMs`) when that is longer. A failure asking for more than
 * `policy.maxDelayMs` is final. `onRetry` hears each failure that is tried again.
 */
export async function withRetry<T>(
  call: (attempt: number) => Promise<T>,
  policy: RetryPolicy,
  retryable: (error: unknown) => boolean,
  options: {
    askedMs?: (error: unknown) => number;
    onRetry?: (error: unknown, attempt: number) => void;
  } = {},
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await call(attempt);
    } catch (error) {
      if (attempt >= policy.attempts || !retryable(error)) throw error;
      const asked = options.askedMs?.(error) ?? 0;
      if (asked > policy.maxDelayMs) throw error;
      options.onRetry?.(error, attempt);
      await new Promise((resolve) =>
        setTimeout(resolve, Math.max(asked, backoff(policy, attempt))),
      );
    }
  }
}

/** The wait after failed attempt `attempt`: grows from `baseDelayMs`, capped at `maxDelayMs`. */
function backoff(policy: RetryPolicy, attempt: number): number {
  const grown = policy.baseDelayMs * (policy.growth ?? 2) ** (attempt - 1);
  const capped = Math.min(policy.maxDelayMs, grown);
  return policy.jitter === false ? capped : capped * Math.random();
}
