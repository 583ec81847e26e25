import type { Config } from "./config";
import type { Platforms } from "./platforms";
import type { PlatformRetryPolicy } from "./platforms/retry";
import type { VerifyQueue } from "./verify-job";
import type { BlobStore } from "./storage";

/** What the relay's logic needs, passed in so it can run without HTTP or a real clock. */
export interface Deps {
  config: Config;
  db: D1Database;
  store: BlobStore;
  now: () => number;
  platforms: Platforms;
  platformRetry?: PlatformRetryPolicy;
  /** Checks pending uploads' content in the background, surviving restarts (a Queue). */
  verifyQueue: VerifyQueue;
  /** Keeps background work (attachment fetches) alive after the response is sent. */
  waitUntil: (work: Promise<unknown>) => void;
}
