import type { Config } from "./config";
import type { BlobStore } from "./storage";

/** What the relay's logic needs, passed in so it can run without HTTP or a real clock. */
export interface Deps {
  config: Config;
  db: D1Database;
  store: BlobStore;
  now: () => number;
}
