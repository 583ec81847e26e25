import { readConfig } from "../../src/config";
import type { Deps } from "../../src/deps";
import type { Bindings } from "../../src/env";
import { createPlatforms } from "../../src/platforms";
import type { BlobStore } from "../../src/storage";

/** The relay's deps on a test's D1 and store, with a clock the test sets; no background work. */
export function depsAt(env: Bindings, store: BlobStore, now: number): Deps {
  const config = readConfig(env);
  return {
    config,
    db: env.DB,
    store,
    now: () => now,
    platforms: createPlatforms(config),
    waitUntil: () => {},
  };
}
