import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startFaultProxy, type FaultProxy, type FaultRule } from "../fixtures/fault-proxy";
import { startStrictS3, type StrictS3 } from "../fixtures/s3/strict-s3";
import { failureLine } from "../shim/run-shim";
import { startRelay, type RunningRelay } from "../support/relay";
import { s3Vars } from "../support/s3-vars";
import {
  expectNothingCorrupt,
  expectServed,
  FILE_BYTES,
  faultsApplied,
  listFiles,
  randomFile,
  S3_IDLE_TIMEOUT_MS,
  send,
  sent,
  sha256,
  SHIM_IDLE_TIMEOUT_MS,
  useWorkDir,
} from "./faults-support";

useWorkDir();

describe("S3 backend: relay → fault proxy → strict S3, shim PUTs through the same proxy", () => {
  let s3: StrictS3;
  let proxy: FaultProxy;
  let relay: RunningRelay;
  let session: { sessionId: string; token: string };

  beforeAll(async () => {
    // S3 answers 400 RequestTimeout to a body idle for about 20 s; 3 s keeps that case short.
    s3 = await startStrictS3({ idleTimeoutMs: S3_IDLE_TIMEOUT_MS });
    // The relay signs for S3_ENDPOINT's host: the proxy keeps that Host, so the strict S3
    // (which verifies the signature over the Host it receives) accepts what it forwards.
    proxy = await startFaultProxy({ target: s3.endpoint, host: "preserve" });
    relay = await startRelay({
      storage: "s3",
      vars: s3Vars(s3, proxy.url),
    });
  });
  afterAll(async () => {
    await relay?.stop();
    await proxy?.stop();
    await s3?.stop();
  });
  afterEach(async () => {
    expect(proxy.pendingFaults(), "every scripted fault was hit").toEqual([]);
    proxy.clearFaults();
    if (session) await expectNothingCorrupt(relay, session.sessionId);
  });

  // The shim's PUTs go to an upload's own key (`blobs/<xx>/<sha256>.<uploadId>`); the relay's
  // own copies onto content keys, made on the verify queue after an earlier test's upload,
  // must neither take a scripted fault nor count among the shim's PUTs.
  const uploadKeyPath = () => new RegExp(`^/${s3.bucket}/blobs/[0-9a-f]{2}/[0-9a-f]{64}\\.upl_`);
  const isShimPut = (r: { method: string; path: string }) =>
    r.method === "PUT" && uploadKeyPath().test(r.path);

  const putRule = (fault: FaultRule["fault"], times: number): FaultRule => ({
    method: "PUT",
    path: uploadKeyPath(),
    fault,
    times,
  });

  it("presigned PUTs point at the proxy and pass the strict S3's SigV4 check", async () => {
    session = await relay.mintSession();
    const { path, data } = await randomFile();
    const from = proxy.requests.length;
    const result = sent(await send(relay.url, session.token, path));
    await expectServed(result, data);
    const seen = proxy.requests.slice(from).map((r) => `${r.method} ${r.status}`);
    expect(seen).toEqual(expect.arrayContaining(["PUT 200", "HEAD 200", "GET 200"]));
    expect(s3.requests.filter((r) => r.rejected)).toEqual([]);
  });

  it("a PUT answered 503 twice is retried and the file is byte-exact", async () => {
    session = await relay.mintSession();
    const { path, data } = await randomFile();
    proxy.inject(putRule({ kind: "status", status: 503 }, 2));
    const from = proxy.requests.length;
    const result = sent(await send(relay.url, session.token, path));
    await expectServed(result, data);
    expect(faultsApplied(proxy, from)).toEqual(["PUT status 503", "PUT status 503"]);
    expect(proxy.requests.slice(from).filter(isShimPut).length).toBe(3);
  });

  it("a PUT whose connection is reset mid-body is retried and the file is byte-exact", async () => {
    session = await relay.mintSession();
    const { path, data } = await randomFile();
    proxy.inject(putRule({ kind: "reset-request", afterBytes: 100_000 }, 1));
    const from = proxy.requests.length;
    const result = sent(await send(relay.url, session.token, path));
    await expectServed(result, data);
    expect(faultsApplied(proxy, from)).toEqual(["PUT reset-request 0"]);
    const puts = proxy.requests.slice(from).filter(isShimPut);
    expect(puts[0]!.requestBytes).toBeGreaterThanOrEqual(100_000);
    expect(puts[0]!.requestBytes).toBeLessThan(FILE_BYTES);
    expect(puts.map((r) => r.status)).toEqual([0, 200]);
  });

  /** Sends a file while the store answers the relay's HEAD at complete 500 `times` times. */
  async function sendThroughFailingHeads(times: number) {
    session = await relay.mintSession();
    const { path, data } = await randomFile();
    // A pass-through proxy in front of the relay, only to see what the relay answered.
    const api = await startFaultProxy({ target: relay.url, host: "preserve" });
    try {
      proxy.inject({ method: "HEAD", fault: { kind: "status", status: 500 }, times });
      const from = proxy.requests.length;
      const result = sent(await send(api.url, session.token, path));
      await expectServed(result, data);
      expect(faultsApplied(proxy, from)).toEqual(Array(times).fill("HEAD status 500"));
      expect((await listFiles(relay, session.sessionId)).length).toBe(1);
      const heads = proxy.requests.slice(from).filter((r) => r.method === "HEAD");
      const completes = api.requests.filter((r) => r.path.endsWith("/complete"));
      return { heads: heads.map((r) => r.status), completes: completes.map((r) => r.status) };
    } finally {
      await api.stop();
    }
  }

  it("the relay's HEAD at complete failing once is sent again by the relay", async () => {
    expect(await sendThroughFailingHeads(1)).toEqual({ heads: [500, 200], completes: [201] });
  });

  it("the relay's HEAD failing past its own retries gives a 5xx the shim retries", async () => {
    expect(await sendThroughFailingHeads(3)).toEqual({
      heads: [500, 500, 500, 200],
      completes: [500, 201],
    });
  });

  it("a store that keeps failing ends in one error line after the last retry, nothing kept", async () => {
    session = await relay.mintSession();
    const { path, data } = await randomFile();
    proxy.inject(putRule({ kind: "status", status: 503 }, Infinity));
    const from = proxy.requests.length;
    const result = await send(relay.url, session.token, path, { AIRLOCK_RETRIES: "3" });
    expect(result.code).toBe(1);
    expect(result.stdout).toBe("");
    const line = failureLine(result);
    expect(line).toMatch(/storage error during upload of file-\d+\.bin: SlowDown/);
    expect(line).toMatch(/after 3 attempts/);
    expect(line).not.toMatch(/X-Amz-Signature|x-amz-signature/i);
    expect(proxy.requests.slice(from).filter(isShimPut).length).toBe(3);
    proxy.clearFaults();
    expect(await listFiles(relay, session.sessionId)).toEqual([]);
    expect(await s3.listKeys(`blobs/${sha256(data).slice(0, 2)}/${sha256(data)}`)).toEqual([]);
  });

  it(`a PUT stalled for 2 s (well inside the shim's ${SHIM_IDLE_TIMEOUT_MS / 1000} s idle timeout) completes`, async () => {
    session = await relay.mintSession();
    const { path, data } = await randomFile();
    proxy.inject(putRule({ kind: "stall", ms: 2_000 }, 1));
    const started = Date.now();
    const result = sent(await send(relay.url, session.token, path));
    expect(Date.now() - started).toBeGreaterThanOrEqual(2_000);
    await expectServed(result, data);
  });

  it("a PUT stalled mid-body for 2 s completes", async () => {
    session = await relay.mintSession();
    const { path, data } = await randomFile();
    proxy.inject(putRule({ kind: "stall", ms: 2_000, afterBytes: 64 * 1024 }, 1));
    const result = sent(await send(relay.url, session.token, path));
    await expectServed(result, data);
  });

  // S3 answers a body idle past its timeout (~20 s on AWS) with 400 RequestTimeout, a
  // transient error the AWS SDKs retry; so does the shim.
  it("a PUT stalled mid-body past the store's idle timeout (400 RequestTimeout) is retried", async () => {
    session = await relay.mintSession();
    const { path, data } = await randomFile();
    proxy.inject(
      putRule({ kind: "stall", ms: S3_IDLE_TIMEOUT_MS + 1_000, afterBytes: 64 * 1024 }, 1),
    );
    const from = proxy.requests.length;
    const result = sent(await send(relay.url, session.token, path));
    await expectServed(result, data);
    const puts = proxy.requests.slice(from).filter(isShimPut);
    expect(puts.map((r) => `${r.fault} ${r.status}`)).toEqual(["stall 400", "null 200"]);
  });

  it("a store GET cut mid-body never reaches a downloader as a complete file", async () => {
    session = await relay.mintSession();
    const { path, data } = await randomFile();
    const result = sent(await send(relay.url, session.token, path));
    // The download's GET, not the verify queue's read of the new file's first bytes.
    proxy.inject({
      method: "GET",
      path: `/${s3.bucket}/blobs/`,
      presigned: true,
      fault: { kind: "reset-response", afterBytes: 100_000 },
      times: 1,
    });
    const from = proxy.requests.length;
    let outcome: { status: number; length: number; sha256: string } | { error: string };
    try {
      const response = await fetch(result.url);
      const body = Buffer.from(await response.arrayBuffer());
      outcome = { status: response.status, length: body.length, sha256: sha256(body) };
    } catch (error) {
      outcome = { error: String((error as Error).cause ?? error) };
    }
    expect(faultsApplied(proxy, from)).toEqual(["GET reset-response 200"]);
    // The relay had sent 200 and Content-Length before the store failed: the download must
    // fail as a transfer (a short body against its Content-Length), never end as a whole file.
    if ("status" in outcome && outcome.status === 200) {
      expect(outcome).toEqual({ status: 200, length: data.length, sha256: sha256(data) });
    }
    // undici names the cut by how the connection ended: closed under it ("other side closed",
    // "terminated"), or ended at the close it asked for short of the length.
    expect(outcome).toEqual({
      error: expect.stringMatching(/closed|terminated|reset|length does not match content-length/i),
    });
    await expectServed(result, data);
  });
});
