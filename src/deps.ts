import type { Config } from "./config";
import type { Platforms } from "./platforms";
import type { PlatformRetryPolicy } from "./platforms/retry";
import type { BlobStore } from "./storage";

/** What the relay's logic needs, passed in so it can run without HTTP or a real clock. */
export interface Deps {
  config: Config;
  db: D1Database;
  store: BlobStore;
  now: () => number;
  platforms: Platforms;
  platformRetry?: PlatformRetryPolicy;
  /** Keeps background work (attachment fetches) alive after the response is sent. */
  waitUntil: (work: Promise<unknown>) => void;
}
