import { createHash, randomFillSync } from "node:crypto";
import { mkdtemp, readFile, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFaultProxy, type FaultProxy } from "../fixtures/fault-proxy";
import type { RunningRelay } from "../support/relay";
import { sharedRelay } from "../support/shared-relay";
import { prepareShim, relayEnv, runShim } from "./run-shim";

/**
 * `airlock get <fileId>` of a file over the ranged-download threshold: the file record gives
 * its size and SHA-256, so no HEAD goes before the bytes (a round trip saved): the ranges ask
 * for themselves. Bytes equal by SHA-256, each range asked for once, nothing left behind.
 */

const MiB = 1024 * 1024;
const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");

describe("ranged get of a file whose size and SHA-256 are known", () => {
  let relay: RunningRelay;
  let proxy: FaultProxy;
  let dir: string;

  beforeAll(async () => {
    prepareShim();
    relay = sharedRelay();
    proxy = await startFaultProxy({ target: relay.url });
    dir = await mkdtemp(join(tmpdir(), "airlock-known-get-"));
  }, 120_000);

  afterAll(async () => {
    await proxy?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("asks no HEAD and gets each range once, byte-exact", async () => {
    const bytes = randomFillSync(Buffer.alloc(3 * MiB + 5));
    const { token } = await relay.mintSession();
    await writeFile(join(dir, "big.bin"), bytes);
    const sent = await runShim(["send", "big.bin", "--wait", "--json"], {
      cwd: dir,
      env: relayEnv(relay.url, token),
      timeoutMs: 120_000,
    });
    expect(sent.stderr, sent.stderr).toBe("");
    const { fileId } = JSON.parse(sent.stdout.trim()) as { fileId: string };
    const out = await mkdtemp(join(dir, "out-"));
    const before = proxy.requests.length;
    const env = {
      ...relayEnv(proxy.url, token),
      AIRLOCK_PARALLEL_THRESHOLD: String(MiB),
      AIRLOCK_DOWNLOAD_CHUNK: String(MiB),
      AIRLOCK_DOWNLOAD_STREAMS: "4",
    };
    const got = await runShim(["get", fileId], { cwd: out, env });
    expect(got.stderr, got.stderr).toBe("");
    expect(sha256(await readFile(join(out, "big.bin")))).toBe(sha256(bytes));
    expect(await readdir(out)).toEqual(["big.bin"]);
    const content = proxy.requests.slice(before).filter((r) => r.path.endsWith("/content"));
    expect(content.map((r) => r.method)).not.toContain("HEAD");
    expect(content.map((r) => r.range).sort()).toEqual([
      `bytes=0-${MiB - 1}`,
      `bytes=${MiB}-${2 * MiB - 1}`,
      `bytes=${2 * MiB}-${3 * MiB - 1}`,
      `bytes=${3 * MiB}-${3 * MiB + 4}`,
    ]);
  });
});
