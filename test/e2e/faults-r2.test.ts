import { randomBytes } from "node:crypto";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startFaultProxy, type FaultProxy } from "../fixtures/fault-proxy";
import { runShim } from "../shim/run-shim";
import { type RunningRelay } from "../support/relay";
import { sharedRelay } from "../support/shared-relay";
import {
  expectNothingCorrupt,
  expectServed,
  FILE_BYTES,
  listFiles,
  randomFile,
  send,
  sent,
  useWorkDir,
  work,
} from "./faults-support";

useWorkDir();

describe("R2 backend: shim → fault proxy → relay (wrangler dev)", () => {
  let relay: RunningRelay;
  let proxy: FaultProxy;
  let session: { sessionId: string; token: string };

  beforeAll(async () => {
    relay = sharedRelay();
    // The relay builds its upload and share URLs from the Host it is asked under: keeping the
    // proxy's Host sends the relay-bound PUTs through the proxy too.
    proxy = await startFaultProxy({ target: relay.url, host: "preserve" });
  });
  afterAll(async () => {
    await proxy?.stop();
    await relay?.stop();
  });
  afterEach(async () => {
    expect(proxy.pendingFaults(), "every scripted fault was hit").toEqual([]);
    proxy.clearFaults();
    if (session) await expectNothingCorrupt(relay, session.sessionId);
  });

  it("503s on the API and on the relay-bound PUT are retried; byte-exact", async () => {
    session = await relay.mintSession();
    const { path, data } = await randomFile();
    proxy.inject({
      method: "POST",
      path: /^\/v1\/uploads$/,
      fault: { kind: "status", status: 503 },
      times: 1,
    });
    proxy.inject({
      method: "PUT",
      path: "/v1/blob-uploads/",
      fault: { kind: "status", status: 503 },
      times: 2,
    });
    proxy.inject({
      method: "POST",
      path: /\/complete$/,
      fault: { kind: "status", status: 503 },
      times: 1,
    });
    const from = proxy.requests.length;
    const result = sent(await send(proxy.url, session.token, path));
    await expectServed(result, data);
    const route = (path: string) => (path.startsWith("/d/") ? "d" : path.split("/")[2]);
    const log = proxy.requests.slice(from).map((r) => `${r.method} ${route(r.path)} ${r.status}`);
    expect(log).toEqual([
      "POST uploads 503",
      "POST uploads 200", // the dedup probe
      "POST uploads 201",
      "PUT blob-uploads 503",
      "PUT blob-uploads 503",
      "PUT blob-uploads 200",
      "POST uploads 503", // complete
      "POST uploads 201",
      "GET d 200", // expectServed, through the proxy the share URL names
    ]);
  });

  it("a relay-bound PUT reset mid-body is retried; byte-exact", async () => {
    session = await relay.mintSession();
    const { path, data } = await randomFile();
    proxy.inject({
      method: "PUT",
      path: "/v1/blob-uploads/",
      fault: { kind: "reset-request", afterBytes: 100_000 },
      times: 1,
    });
    const from = proxy.requests.length;
    const result = sent(await send(proxy.url, session.token, path));
    await expectServed(result, data);
    const puts = proxy.requests.slice(from).filter((r) => r.method === "PUT");
    expect(puts.map((r) => `${r.fault} ${r.status}`)).toEqual(["reset-request 0", "null 200"]);
  });

  it("answers lost on the way back (declare, PUT, complete) are retried to one file", async () => {
    session = await relay.mintSession();
    const { path, data } = await randomFile();
    const lost = { kind: "reset-response", afterBytes: 0 } as const;
    proxy.inject({ method: "POST", path: /^\/v1\/uploads$/, fault: lost, times: 2 });
    proxy.inject({ method: "PUT", path: "/v1/blob-uploads/", fault: lost, times: 1 });
    proxy.inject({ method: "POST", path: /\/complete$/, fault: lost, times: 1 });
    const result = sent(await send(proxy.url, session.token, path));
    await expectServed(result, data);
    const files = await listFiles(relay, session.sessionId);
    expect(files.map((f) => f.fileId)).toEqual([result.fileId]);
  });

  it("a relay-bound PUT stalled mid-body for 2 s completes", async () => {
    session = await relay.mintSession();
    const { path, data } = await randomFile();
    proxy.inject({
      method: "PUT",
      path: "/v1/blob-uploads/",
      fault: { kind: "stall", ms: 2_000, afterBytes: 64 * 1024 },
      times: 1,
    });
    const result = sent(await send(proxy.url, session.token, path));
    await expectServed(result, data);
  });

  it("twenty-four sandboxes sending at once all end byte-exact", async () => {
    const sandboxes = 24;
    const sameContent = 5; // the last five send the same bytes: concurrent dedup
    const shared = randomBytes(FILE_BYTES);
    const sessions = await Promise.all(
      Array.from({ length: sandboxes }, () => relay.mintSession()),
    );
    const files = await Promise.all(
      sessions.map(async (_, i) => {
        const data = i >= sandboxes - sameContent ? shared : randomBytes(FILE_BYTES);
        const path = join(work, `sandbox-${i}.bin`);
        await writeFile(path, data);
        return { path, data };
      }),
    );
    const results = await Promise.all(
      sessions.map((s, i) =>
        runShim(["send", "--json", files[i]!.path], {
          env: {
            AIRLOCK_URL: relay.url,
            AIRLOCK_TOKEN: s.token,
            XDG_CACHE_HOME: join(work, `cache-${i}`),
          },
        }),
      ),
    );
    const failed = results.filter((r) => r.code !== 0).map((r) => r.stderr);
    expect(failed).toEqual([]);
    const records = results.map(sent);
    await Promise.all(records.map((record, i) => expectServed(record, files[i]!.data)));
    for (const s of sessions) {
      const listed = await expectNothingCorrupt(relay, s.sessionId);
      expect(listed.length).toBe(1);
    }
    // Speed is the benchmarks' business (bench:load, fifty and more at once); here only the
    // outcome is asserted. Each sandbox is its own owner scope, so all of them upload.
    expect(records.filter((r) => r.deduped)).toEqual([]);
  }, 240_000);
});
