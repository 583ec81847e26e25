import { createHash, randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, expect } from "vitest";
import { AirlockClient } from "../../sdk/src/node";
import { prepareShim, runShim } from "../shim/run-shim";
import type { RunningRelay } from "../support/relay";
import { sharedRelay } from "../support/shared-relay";

/** Shared set-up of the operator SDK suites (test/e2e/sdk-*.test.ts). */

export const root = fileURLToPath(new URL("../..", import.meta.url));
export const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");
export const MiB = 1024 * 1024;

/** A stream of `size` random bytes in uneven chunks, and their SHA-256 once it has been read. */
export function randomStream(size: number) {
  const hash = createHash("sha256");
  let left = size;
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (left === 0) return controller.close();
      const chunk = randomBytes(Math.min(left, 50_000 + Math.floor(Math.random() * 100_000)));
      left -= chunk.byteLength;
      hash.update(chunk);
      controller.enqueue(new Uint8Array(chunk));
    },
  });
  return { stream, digest: () => hash.digest("hex") };
}

/** The suite's shared relay, operator client and temp directory (live bindings, set by `useSdkSuite`). */
export let relay: RunningRelay;
export let airlock: AirlockClient;
export let dir: string;

/** Registers the suite's `beforeAll`/`afterAll`: the shim built, the shared relay, a temp directory. */
export function useSdkSuite(): void {
  beforeAll(async () => {
    prepareShim();
    relay = sharedRelay();
    airlock = new AirlockClient({ url: relay.url, adminToken: relay.adminToken });
    dir = await mkdtemp(join(tmpdir(), "airlock-sdk-"));
  });
  afterAll(async () => {
    await relay?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });
}

/** `airlock send --json` in a sandbox with `token`: one record per file. */
export async function shimSend(token: string, ...paths: string[]) {
  const sent = await runShim(["send", ...paths, "--json"], {
    env: { AIRLOCK_URL: relay.url, AIRLOCK_TOKEN: token },
  });
  expect(sent.stderr).toBe("");
  expect(sent.code).toBe(0);
  return sent.stdout
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line) as { fileId: string; sha256: string; size: number });
}
