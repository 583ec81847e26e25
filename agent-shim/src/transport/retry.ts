import { setTimeout as sleep } from "node:timers/promises";
import type { RetryPolicy } from "../cli/config.js";
import { NetworkError, RetryableStatusError, UnavailableError } from "../cli/errors.js";

/** Network failures that may well succeed on another try. */
const TRANSIENT_CODES = new Set(["ECONNREFUSED", "ECONNRESET", "ETIMEDOUT", "EPIPE", "EAI_AGAIN"]);

/** What a retried operation talks to and does, for the message when it finally fails. */
export interface RetryTarget {
  service: "relay" | "storage";
  /** Where the service is: a base URL or an origin, never a signed URL. */
  url: string;
  /** What was being done, e.g. "upload of report.pdf". */
  action: string;
}

/**
 * Runs `attempt` until it succeeds, retrying transient network errors and `RetryableStatusError`s
 * with exponential backoff and full jitter (longer if the server's `Retry-After` asks so). Other
 * errors end it at once. The final failure becomes a one-line `CliError` naming the target.
 * Aborting `signal` ends it at once, between attempts too, with the signal's reason.
 */
export async function withRetry<T>(
  policy: RetryPolicy,
  target: RetryTarget,
  attempt: () => Promise<T>,
  signal?: AbortSignal,
): Promise<T> {
  for (let tries = 1; ; tries++) {
    if (signal?.aborted) throw signal.reason;
    try {
      return await attempt();
    } catch (err) {
      if (signal?.aborted) throw signal.reason;
      const transient = isTransient(err);
      if (!transient || tries >= policy.attempts) throw giveUp(err, target, transient ? tries : 0);
      // A `Retry-After` can lengthen the backoff, never shorten it: `wrangler dev` answers `503`
      // with `Retry-After: 0` while its Worker reloads, and tries with no wait at all can all
      // land inside that one reload.
      const requested = err instanceof RetryableStatusError ? (err.retryAfterMs ?? 0) : 0;
      const delay = Math.max(requested, backoffMs(policy, tries));
      await sleep(delay, undefined, { signal }).catch(() => {
        throw signal?.reason;
      });
    }
  }
}

/** Full jitter: a uniform delay up to min(cap, base × 2^(retry − 1)). */
export function backoffMs(policy: RetryPolicy, retry: number): number {
  const ceiling = Math.min(policy.capMs, policy.baseMs * 2 ** (retry - 1));
  return Math.floor(Math.random() * ceiling);
}

function isTransient(err: unknown): boolean {
  if (err instanceof RetryableStatusError) return true;
  if (!(err instanceof NetworkError)) return false;
  return err.code !== undefined && TRANSIENT_CODES.has(err.code);
}

function giveUp(err: unknown, target: RetryTarget, tries: number): unknown {
  const after = tries > 0 ? ` (after ${tries} attempt${tries === 1 ? "" : "s"})` : "";
  if (err instanceof NetworkError) {
    return new UnavailableError(
      `cannot reach ${target.service} at ${target.url}: ${err.message}${after}`,
    );
  }
  if (err instanceof RetryableStatusError) {
    return new UnavailableError(
      `${target.service} error during ${target.action}: ${err.message}${after}`,
    );
  }
  return err;
}
