// The round-trip bench's recorder and critical path (bench/tcp-recorder.ts, critical-path.ts)
// on real sockets: a node:http server behind the recording proxy, requests made in a row on one
// kept-alive connection and at once on connections of their own.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { criticalPath } from "../../bench/critical-path";
import { startRecordingProxy, type RecordingProxy } from "../../bench/tcp-recorder";

const MiB = 1024 * 1024;
let server: http.Server;
let proxy: RecordingProxy;

/** Answers after 20 ms with `?bytes=` bytes, having read the whole request body. */
beforeAll(async () => {
  server = http.createServer((request, response) => {
    request.resume();
    request.on("end", () => {
      const bytes = Number(new URL(request.url!, "http://x").searchParams.get("bytes") ?? 0);
      setTimeout(() => response.end(Buffer.alloc(bytes)), 20);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  proxy = await startRecordingProxy("relay", `http://127.0.0.1:${port}`);
});
afterAll(async () => {
  await proxy.stop();
  await new Promise((resolve) => server.close(resolve));
});

function request(path: string, agent: http.Agent | false, body = Buffer.alloc(0)) {
  return new Promise<void>((resolve, reject) => {
    const req = http.request(`${proxy.url}${path}`, { method: "POST", agent }, (response) => {
      response.resume();
      response.on("end", resolve);
    });
    req.on("error", reject);
    req.end(body);
  });
}

async function measure(run: () => Promise<unknown>) {
  proxy.clear();
  await run();
  return criticalPath(proxy.exchanges(), () => "client");
}

describe("round trips on the critical path, as the recording proxy sees them", () => {
  it("counts requests in a row on one connection as one handshake and one turn each", async () => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const path = await measure(async () => {
      for (let i = 0; i < 3; i++) await request(`/a?bytes=${1000 + i}`, agent);
    });
    agent.destroy();
    expect(path.trips).toEqual({ client: { connects: 1, exchanges: 3 } });
    expect(path.bytes.client?.streams).toHaveLength(1);
    expect(path.bytes.client?.down).toBeGreaterThan(3003);
  });

  it("counts requests made at once on their own connections as one turn, their bytes as parallel streams", async () => {
    const path = await measure(() =>
      Promise.all([0, 1, 2].map(() => request(`/b?bytes=${2 * MiB}`, false, Buffer.alloc(MiB)))),
    );
    expect(path.trips).toEqual({ client: { connects: 1, exchanges: 1 } });
    expect(path.bytes.client?.streams).toHaveLength(3);
    expect(path.bytes.client?.up).toBeGreaterThanOrEqual(3 * MiB);
    expect(path.bytes.client?.down).toBeGreaterThanOrEqual(6 * MiB);
    expect(path.bytes.client?.parallel).toBe(3);
  });
});
