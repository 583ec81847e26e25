import { createHash, randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { expect } from "vitest";
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

/** For `beforeAll`: the shared relay, an operator client on it and a fresh temp directory. */
export async function openSdkSuite(): Promise<{
  relay: RunningRelay;
  airlock: AirlockClient;
  dir: string;
}> {
  prepareShim();
  const relay = sharedRelay();
  const airlock = new AirlockClient({ url: relay.url, adminToken: relay.adminToken });
  const dir = await mkdtemp(join(tmpdir(), "airlock-sdk-"));
  return { relay, airlock, dir };
}

/** For `afterAll`: what `openSdkSuite` opened. */
export async function closeSdkSuite(relay: RunningRelay | undefined, dir: string | undefined) {
  await relay?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
}

/** `airlock send --json` in a sandbox with `token`: one record per file. */
export async function shimSendTo(url: string, token: string, ...paths: string[]) {
  const sent = await runShim(["send", ...paths, "--json"], {
    env: { AIRLOCK_URL: url, AIRLOCK_TOKEN: token },
  });
  expect(sent.stderr).toBe("");
  expect(sent.code).toBe(0);
  return sent.stdout
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line) as { fileId: string; sha256: string; size: number });
}
