import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll } from "vitest";
import { prepareShim } from "./run-shim";

/**
 * A temp directory for the shim tests of the calling file or `describe`: made in `beforeAll`
 * once the shim is ready (`prepareShim`), removed in `afterAll`. The getter gives its path
 * while the tests run.
 */
export function shimScratchDir(prefix: string): () => string {
  let dir: string | undefined;
  beforeAll(async () => {
    prepareShim();
    dir = await mkdtemp(join(tmpdir(), prefix));
  });
  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });
  return () => {
    if (!dir) throw new Error(`the ${prefix} scratch directory is made in beforeAll`);
    return dir;
  };
}
