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
 * `airlock get` with the default streams (AIRLOCK_DOWNLOAD_STREAMS unset): the first range
 * alone, then either the rest as one more range (a fast stream, as on loopback) or the rest cut
 * into ranges on more streams (a first range slowed to 1 MiB/s by the proxy in front of the
 * relay). Bytes equal by SHA-256, ranges never overlapping, nothing left beside the file.
 */

const MiB = 1024 * 1024;
const SIZE = 6 * MiB;
const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");
/** Ranged from 1 MiB, in 1 MiB ranges; the number of streams left to the shim. */
const SMALL_RANGES = {
  AIRLOCK_PARALLEL_THRESHOLD: String(MiB),
  AIRLOCK_DOWNLOAD_CHUNK: String(MiB),
};

describe("adaptive ranged get", () => {
  let relay: RunningRelay;
  let proxy: FaultProxy;
  let dir: string;
  let bytes: Buffer;
  let fileId: string;
  let token: string;

  beforeAll(async () => {
    prepareShim();
    relay = sharedRelay();
    proxy = await startFaultProxy({ target: relay.url });
    dir = await mkdtemp(join(tmpdir(), "airlock-adaptive-get-"));
    bytes = randomFillSync(Buffer.alloc(SIZE));
    token = (await relay.mintSession()).token;
    await writeFile(join(dir, "big.bin"), bytes);
    const sent = await runShim(["send", "big.bin", "--wait", "--json"], {
      cwd: dir,
      env: relayEnv(relay.url, token),
      timeoutMs: 120_000,
    });
    expect(sent.stderr, sent.stderr).toBe("");
    fileId = (JSON.parse(sent.stdout.trim()) as { fileId: string }).fileId;
  }, 120_000);

  afterAll(async () => {
    await proxy?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  /** Gets the file into a new directory; the ranges its content GETs asked for, in order. */
  async function get(): Promise<string[]> {
    const out = await mkdtemp(join(dir, "out-"));
    const before = proxy.requests.length;
    const got = await runShim(["get", fileId], {
      cwd: out,
      env: { ...relayEnv(proxy.url, token), ...SMALL_RANGES },
    });
    expect(got.stderr, got.stderr).toBe("");
    expect(sha256(await readFile(join(out, "big.bin")))).toBe(sha256(bytes));
    expect(await readdir(out)).toEqual(["big.bin"]);
    return proxy.requests
      .slice(before)
      .filter((r) => r.method === "GET" && r.path.endsWith("/content"))
      .map((r) => r.range ?? "none")
      .sort((a, b) => Number(/\d+/.exec(a)?.[0]) - Number(/\d+/.exec(b)?.[0]));
  }

  it("keeps a fast stream alone: the first range, then the rest as one", async () => {
    expect(await get()).toEqual([`bytes=0-${MiB - 1}`, `bytes=${MiB}-${SIZE - 1}`]);
  });

  it("cuts the rest into ranges on more streams when the first range is slow", async () => {
    proxy.inject({
      method: "GET",
      path: /\/content$/,
      fault: { kind: "slow-response", bytesPerSecond: MiB },
      times: 1,
    });
    expect(await get()).toEqual(
      Array.from({ length: 6 }, (_, i) => `bytes=${i * MiB}-${(i + 1) * MiB - 1}`),
    );
  }, 30_000);
});
