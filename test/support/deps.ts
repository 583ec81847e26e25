import { readConfig } from "../../src/config";
import type { Deps } from "../../src/deps";
import type { Bindings } from "../../src/env";
import { createPlatforms } from "../../src/platforms";
import type { VerifyJob } from "../../src/verify-job";
import type { BlobStore } from "../../src/storage";

/**
 * The relay's deps on a test's D1 and store, with a clock the test sets; no background work
 * (verify jobs are collected in `queued`, for a test to run or inspect).
 */
export function depsAt(
  env: Bindings,
  store: BlobStore,
  now: number,
  queued: VerifyJob[] = [],
): Deps {
  const config = readConfig(env);
  return {
    verifyQueue: {
      async send(job) {
        queued.push(job);
      },
    },
    config,
    db: env.DB,
    store,
    now: () => now,
    platforms: createPlatforms(config),
    waitUntil: () => {},
  };
}
