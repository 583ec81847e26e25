import { createHash, randomFillSync } from "node:crypto";
import { mkdtemp, readFile, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFaultProxy, type FaultProxy } from "../fixtures/fault-proxy";
import { sharedRelay } from "../support/shared-relay";
import { prepareShim, relayEnv, runShim } from "./run-shim";
import { runDriver, shimDrivers, type ShimDriver } from "./shims";

/**
 * `airlock get <fileId>` (Node and Python shims) of a file over the ranged-download threshold: the file
 * record gives its size and SHA-256, so no HEAD goes before the ranges (a round trip saved);
 * a relay that answers the first range with the whole file is asked again in one stream.
 * Bytes equal by SHA-256, nothing left beside the file.
 */

const MiB = 1024 * 1024;
const digest = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");

describe("ranged get of a file whose size and SHA-256 are known", () => {
  const state = {} as {
    proxy: FaultProxy;
    dir: string;
    token: string;
    fileId: string;
    drivers: ShimDriver[];
  };
  const bytes = randomFillSync(Buffer.alloc(3 * MiB + 5));

  beforeAll(async () => {
    prepareShim();
    const relay = sharedRelay();
    state.proxy = await startFaultProxy({ target: relay.url });
    state.dir = await mkdtemp(join(tmpdir(), "airlock-known-get-"));
    state.drivers = await shimDrivers(state.dir);
    state.token = (await relay.mintSession()).token;
    await writeFile(join(state.dir, "big.bin"), bytes);
    const env = relayEnv(relay.url, state.token);
    const sent = await runShim(["send", "big.bin", "--wait", "--json"], { cwd: state.dir, env });
    expect(sent.stderr, sent.stderr).toBe("");
    state.fileId = (JSON.parse(sent.stdout) as { fileId: string }).fileId;
  }, 120_000);

  afterAll(async () => {
    await state.proxy?.stop();
    if (state.dir) await rm(state.dir, { recursive: true, force: true });
  });

  /** Gets the file in 1 MiB ranges, 4 streams; the method and range of each content request. */
  async function get(shim: "node" | "python"): Promise<string[]> {
    const out = await mkdtemp(join(state.dir, "out-"));
    const from = state.proxy.requests.length;
    const ranged = { AIRLOCK_PARALLEL_THRESHOLD: `${MiB}`, AIRLOCK_DOWNLOAD_CHUNK: `${MiB}` };
    const env = { ...relayEnv(state.proxy.url, state.token), ...ranged };
    const driver = state.drivers.find((d) => d.name === shim)!;
    const got = await runDriver(driver, ["get", state.fileId], { cwd: out, env, home: state.dir });
    expect(got.stderr, got.stderr).toBe("");
    expect(digest(await readFile(join(out, "big.bin")))).toBe(digest(bytes));
    expect(await readdir(out)).toEqual(["big.bin"]);
    const content = state.proxy.requests.slice(from).filter((r) => r.path.endsWith("/content"));
    return content.map((r) => `${r.method} ${r.range ?? "whole"}`);
  }

  for (const shim of ["node", "python"] as const) {
    it(`${shim}: asks no HEAD: the first range goes first`, async () => {
      const asked = await get(shim);
      expect(asked[0]).toBe(`GET bytes=0-${MiB - 1}`);
      expect(asked.filter((line) => line.startsWith("HEAD"))).toEqual([]);
    });

    it(`${shim}: asks again in one stream when the relay answers the first range whole`, async () => {
      const rule = { method: "GET", path: /\/content$/, times: 1 };
      state.proxy.inject({ ...rule, fault: { kind: "drop-range" } });
      expect(await get(shim)).toEqual([`GET bytes=0-${MiB - 1}`, "GET whole"]);
    });
  }
});
