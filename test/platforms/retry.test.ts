import { describe, expect, it, vi } from "vitest";
import { PlatformError } from "../../src/platforms/platform";
import { withPlatformRetry, type PlatformRetryPolicy } from "../../src/platforms/retry";

const QUICK: PlatformRetryPolicy = { attempts: 4, baseDelayMs: 1, maxDelayMs: 50 };

/** A call that fails with `failures` in turn, then answers "done"; it records each attempt number. */
function failingWith(...failures: unknown[]) {
  const attempts: number[] = [];
  const call = async (attempt: number) => {
    attempts.push(attempt);
    const failure = failures[attempts.length - 1];
    if (failure !== undefined) throw failure;
    return "done";
  };
  return { call, attempts };
}

describe("withPlatformRetry", () => {
  it("retries 5xx and network failures, telling the call its attempt number", async () => {
    const { call, attempts } = failingWith(
      new PlatformError("telegram", 502, "Bad Gateway"),
      new TypeError("fetch failed"),
    );
    expect(await withPlatformRetry(call, QUICK)).toBe("done");
    expect(attempts).toEqual([1, 2, 3]);
  });

  it("gives up after the policy's attempts, with the last failure", async () => {
    const last = new PlatformError("slack", 503, "unavailable");
    const { call, attempts } = failingWith(
      new PlatformError("slack", 500, "first"),
      new PlatformError("slack", 500, "second"),
      last,
    );
    await expect(withPlatformRetry(call, { ...QUICK, attempts: 3 })).rejects.toBe(last);
    expect(attempts).toEqual([1, 2, 3]);
  });

  it("never retries a refusal, nor a retry_after longer than it waits", async () => {
    const refusal = new PlatformError("telegram", 400, "Bad Request: chat not found");
    const refused = failingWith(refusal);
    await expect(withPlatformRetry(refused.call, QUICK)).rejects.toBe(refusal);
    expect(refused.attempts).toEqual([1]);

    const tooLong = new PlatformError("telegram", 429, "Too Many Requests", 60);
    const limited = failingWith(tooLong);
    await expect(withPlatformRetry(limited.call, QUICK)).rejects.toBe(tooLong);
    expect(limited.attempts).toEqual([1]);
  });

  it("retries exactly what a retryable predicate accepts", async () => {
    class Transient extends Error {}
    const policy = { ...QUICK, retryable: (error: unknown) => error instanceof Transient };
    const flaky = failingWith(new Transient("once"), new Transient("twice"));
    expect(await withPlatformRetry(flaky.call, policy)).toBe("done");
    expect(flaky.attempts).toEqual([1, 2, 3]);

    // A 5xx the predicate does not accept is final, whatever the default would do.
    const final = new PlatformError("discord", 503, "unavailable");
    const refused = failingWith(final);
    await expect(withPlatformRetry(refused.call, policy)).rejects.toBe(final);
    expect(refused.attempts).toEqual([1]);
  });

  it("waits base × growthⁿ between attempts when jitter is off", async () => {
    vi.useFakeTimers();
    try {
      const { call, attempts } = failingWith(new TypeError("network"), new TypeError("network"));
      const policy = {
        attempts: 3,
        baseDelayMs: 250,
        growth: 4,
        jitter: false,
        maxDelayMs: 30_000,
      };
      const result = withPlatformRetry(call, policy);
      await vi.advanceTimersByTimeAsync(249);
      expect(attempts).toEqual([1]);
      await vi.advanceTimersByTimeAsync(1);
      expect(attempts).toEqual([1, 2]);
      await vi.advanceTimersByTimeAsync(999);
      expect(attempts).toEqual([1, 2]);
      await vi.advanceTimersByTimeAsync(1);
      expect(attempts).toEqual([1, 2, 3]);
      expect(await result).toBe("done");
    } finally {
      vi.useRealTimers();
    }
  });
});
