import { createHash, randomFillSync } from "node:crypto";
import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AirlockClient, AirlockSession, type FetchLike } from "../../sdk/src/node";
import { startFaultProxy, type FaultProxy, type ProxiedRequest } from "../fixtures/fault-proxy";
import { startStrictS3, type StrictS3 } from "../fixtures/s3/strict-s3";
import { prepareShim, relayEnv, runShim } from "../shim/run-shim";
import { runDriver, shimDrivers, type ShimDriver } from "../shim/shims";
import { startRelay, type RunningRelay } from "../support/relay";
import { s3Vars } from "../support/s3-vars";
import { SNIFF_BYTES } from "../../src/content/magic-bytes";

const MiB = 1024 * 1024;
const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

/**
 * On the s3 backend an authenticated download (`GET /v1/files/:id/content`: `airlock get`,
 * `airlock pull`, the SDK) answers 307 to a short-lived presigned GET of the store, and every
 * client fetches it without the relay's token. The shims reach the relay through a proxy that
 * records its answers, and the store sits behind another: together they show the relay sent a
 * redirect and the store sent the bytes.
 */
describe("GET /v1/files/:id/content on s3 (wrangler dev, strict S3)", () => {
  let s3: StrictS3;
  let store: FaultProxy;
  let relay: RunningRelay;
  let front: FaultProxy;
  let operator: AirlockClient;
  let dir: string;
  let drivers: ShimDriver[];
  const bytes = randomFillSync(Buffer.alloc(3 * MiB));
  let token: string;
  let fileId: string;
  const contentPath = () => `/v1/files/${fileId}/content`;

  beforeAll(async () => {
    prepareShim();
    s3 = await startStrictS3();
    // The relay signs for the proxy's address, so the store URLs it hands out go through it.
    store = await startFaultProxy({ target: s3.endpoint, host: "preserve" });
    relay = await startRelay({ storage: "s3", vars: s3Vars(s3, store.url) });
    front = await startFaultProxy({ target: relay.url, host: "preserve" });
    operator = new AirlockClient({ url: relay.url, adminToken: relay.adminToken });
    dir = await mkdtemp(join(tmpdir(), "airlock-content-redirect-"));
    drivers = await shimDrivers(dir);
    await writeFile(join(dir, "big.bin"), bytes);
    ({ token } = await relay.mintSession());
    const beforeSend = store.requests.length;
    const sent = await runShim(["send", "big.bin", "--wait", "--json"], {
      cwd: dir,
      env: relayEnv(relay.url, token),
      timeoutMs: 120_000,
    });
    expect(sent.stderr, sent.stderr).toBe("");
    expect(sent.code).toBe(0);
    const record = JSON.parse(sent.stdout.trim()) as { fileId: string; status: string };
    expect(record.status).toBe("verified");
    fileId = record.fileId;
    await settled(beforeSend);
  }, 180_000);

  afterAll(async () => {
    await front?.stop();
    await relay?.stop();
    await store?.stop();
    await s3?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  /**
   * Waits for the verify queue to settle a file stored since `since`: its last store read is
   * the sniff of the file's head (src/services/sharing/archive-listing.ts), in the relay's own request.
   * Until then that read could land in a later test's watch.
   */
  async function settled(since: number): Promise<void> {
    const sniff = `bytes=0-${SNIFF_BYTES - 1}`;
    const deadline = Date.now() + 60_000;
    while (
      !store.requests
        .slice(since)
        .some((r) => r.method === "GET" && !r.presigned && r.range === sniff && r.status === 206)
    ) {
      if (Date.now() > deadline) throw new Error("the verify queue never settled the file");
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  /** What the relay (through `front`) and the store answered while `run` ran. */
  async function watched<T>(run: () => Promise<T>) {
    const [relayBefore, storeBefore] = [front.requests.length, store.requests.length];
    const result = await run();
    const relayAnswers = front.requests.slice(relayBefore);
    const objectGets = store.requests
      .slice(storeBefore)
      .filter((r) => r.method === "GET" && r.path.startsWith(`/${s3.bucket}/blobs/`));
    return { result, relayAnswers, objectGets };
  }

  /** The relay answered each content GET with a redirect (no bytes), and the store sent them. */
  function expectStoreServed(
    relayAnswers: ProxiedRequest[],
    objectGets: ProxiedRequest[],
    status: 200 | 206 = 200,
  ) {
    const content = relayAnswers.filter((r) => r.method === "GET" && r.path.endsWith("/content"));
    expect(content.length).toBeGreaterThan(0);
    expect(content.map((r) => r.status)).toEqual(content.map(() => 307));
    expect(objectGets.map((r) => r.status)).toContain(status);
  }

  it("answers a session's GET with 307 to a presigned store URL without the token, valid at most 60 s", async () => {
    const { result: answer, objectGets } = await watched(() =>
      fetch(`${relay.url}${contentPath()}`, { headers: bearer(token), redirect: "manual" }),
    );
    expect(answer.status).toBe(307);
    expect(await answer.arrayBuffer()).toHaveProperty("byteLength", 0);
    expect(objectGets).toEqual([]); // Nothing was read to answer it.
    expect(answer.headers.get("etag")).toBe(`"${sha256(bytes)}"`);
    expect(answer.headers.get("cache-control")).toBe("no-store");
    const disposition = `attachment; filename="big.bin"; filename*=UTF-8''big.bin`;
    expect(answer.headers.get("content-disposition")).toBe(disposition);
    const location = new URL(answer.headers.get("location")!);
    expect(location.origin).toBe(store.url);
    expect(location.href).not.toContain(token);
    const expires = Number(location.searchParams.get("X-Amz-Expires"));
    expect(expires).toBeGreaterThan(0);
    expect(expires).toBeLessThanOrEqual(60);

    const stored = await fetch(location);
    expect(stored.status).toBe(200);
    expect(stored.headers.get("content-disposition")).toBe(disposition);
    expect(sha256(new Uint8Array(await stored.arrayBuffer()))).toBe(sha256(bytes));

    // Why clients must drop the bearer: the store refuses a presigned URL that carries one.
    const both = await fetch(location, { headers: bearer(token) });
    expect(both.status).toBe(400);
    const refusal = await both.text();
    expect(refusal).toContain("<Code>InvalidArgument</Code>");
    expect(refusal).toContain("Only one auth mechanism allowed");
  });

  it("signs a Range into the redirect (unless If-Range names another version): the store serves that slice", async () => {
    const answer = await fetch(`${relay.url}${contentPath()}`, {
      headers: { ...bearer(token), range: "bytes=1000-1999" },
      redirect: "manual",
    });
    expect(answer.status).toBe(307);
    const location = new URL(answer.headers.get("location")!);
    expect(location.searchParams.get("X-Amz-SignedHeaders")).toBe("host;range");
    const slice = await fetch(location, {
      headers: { range: "bytes=1000-1999" },
    });
    expect(slice.status).toBe(206);
    expect(Buffer.from(await slice.arrayBuffer())).toEqual(bytes.subarray(1000, 2000));

    // A resume's If-Range is the relay's to judge: another version's tag gets the whole file.
    const stale = await fetch(`${relay.url}${contentPath()}`, {
      headers: { ...bearer(token), range: "bytes=1000-", "if-range": `"${"0".repeat(64)}"` },
      redirect: "manual",
    });
    expect(stale.status).toBe(307);
    const staleLocation = new URL(stale.headers.get("location")!);
    expect(staleLocation.searchParams.get("X-Amz-SignedHeaders")).toBe("host");
    const whole = await fetch(staleLocation);
    expect(whole.status).toBe(200);
    expect(sha256(new Uint8Array(await whole.arrayBuffer()))).toBe(sha256(bytes));
  });

  it("keeps HEAD on the relay", async () => {
    const head = await fetch(`${relay.url}${contentPath()}`, {
      method: "HEAD",
      headers: bearer(token),
      redirect: "manual",
    });
    expect(head.status).toBe(200);
    expect(head.headers.get("location")).toBeNull();
    expect(head.headers.get("content-length")).toBe(String(bytes.byteLength));
  });

  it("answers another session's bearer 404 file_not_found, with no redirect", async () => {
    const other = await relay.mintSession();
    const { result: answer, objectGets } = await watched(() =>
      fetch(`${relay.url}${contentPath()}`, { headers: bearer(other.token), redirect: "manual" }),
    );
    expect(answer.status).toBe(404);
    expect(answer.headers.get("location")).toBeNull();
    expect(await answer.json()).toEqual({
      error: { code: "file_not_found", message: "no such file" },
    });
    expect(objectGets).toEqual([]);
  });

  for (const name of ["node", "python"] as const) {
    it(`airlock get <fileId> (${name} shim) gets the exact bytes from the store`, async () => {
      const driver = drivers.find((d) => d.name === name)!;
      const out = await mkdtemp(join(dir, `get-${name}-`));
      const { result, relayAnswers, objectGets } = await watched(() =>
        runDriver(driver, ["get", fileId], {
          env: relayEnv(front.url, token),
          cwd: out,
          home: out,
        }),
      );
      expect(result.stderr, result.stderr).toBe("");
      expect(result.code).toBe(0);
      expect(sha256(await readFile(join(out, "big.bin")))).toBe(sha256(bytes));
      expectStoreServed(relayAnswers, objectGets);
    });
  }

  it("airlock get resumes a part file with Range and If-Range through the redirect", async () => {
    const out = await mkdtemp(join(dir, "resume-"));
    // What a run killed after 1 MiB leaves behind (see the shim's PartFile).
    const part = `.big.bin.${sha256(bytes).slice(0, 16)}.airlock-part`;
    await writeFile(join(out, part), bytes.subarray(0, MiB));
    const { result, relayAnswers, objectGets } = await watched(() =>
      runShim(["get", fileId], { cwd: out, env: relayEnv(front.url, token) }),
    );
    expect(result.stderr, result.stderr).toBe("");
    expect(result.code).toBe(0);
    expect(sha256(await readFile(join(out, "big.bin")))).toBe(sha256(bytes));
    expect(await readdir(out)).toEqual(["big.bin"]);
    expectStoreServed(relayAnswers, objectGets, 206);
    // The relay honoured the If-Range and signed the Range in: the store sent only the rest. A
    // retry (a connection cut on a busy machine) may ask again, but only for what is missing.
    const gets = objectGets.map(({ status, range, presigned }) => ({ status, range, presigned }));
    expect(gets[0], JSON.stringify(gets)).toEqual({
      status: 206,
      range: `bytes=${MiB}-`,
      presigned: true,
    });
    for (const { status, range } of gets) {
      const from = Number(/^bytes=(\d+)-$/.exec(range ?? "")?.[1] ?? -1);
      expect(status === 206 && from >= MiB, JSON.stringify(gets)).toBe(true);
    }
  });

  for (const name of ["node", "python", "posix"] as const) {
    it(`airlock pull (${name} shim) gets the exact bytes from the store`, async () => {
      const driver = drivers.find((d) => d.name === name)!;
      const session = await relay.mintSession();
      const seeded = randomFillSync(Buffer.alloc(3 * MiB));
      await operator.seedInbox(session.sessionId, seeded, { name: "seeded.bin" });
      const out = await mkdtemp(join(dir, `pull-${name}-`));
      const { result, relayAnswers, objectGets } = await watched(() =>
        runDriver(driver, ["pull", "--dir", out], {
          env: relayEnv(front.url, session.token),
          cwd: out,
          home: out,
        }),
      );
      expect(result.stderr, result.stderr).toBe("");
      expect(result.code).toBe(0);
      expect((await readdir(out)).filter((entry) => !entry.startsWith("."))).toEqual([
        "seeded.bin",
      ]);
      expect(sha256(await readFile(join(out, "seeded.bin")))).toBe(sha256(seeded));
      expectStoreServed(relayAnswers, objectGets);
    });
  }

  it("the SDK downloads from the store, sending the token to the relay only", async () => {
    const calls: Array<{ origin: string; authorization: string | null; status: number }> = [];
    const recording: FetchLike = async (url, init) => {
      const response = await fetch(url, init);
      const authorization = new Headers(init.headers).get("authorization");
      calls.push({ origin: new URL(url).origin, authorization, status: response.status });
      return response;
    };
    const sandbox = new AirlockSession({ url: relay.url, token, fetch: recording });

    const response = await sandbox.download(fileId);
    expect(response.status).toBe(200);
    // The relay's ETag (the verified SHA-256), not the store's.
    expect(response.headers.get("etag")).toBe(`"${sha256(bytes)}"`);
    expect(sha256(new Uint8Array(await response.arrayBuffer()))).toBe(sha256(bytes));
    expect(calls).toEqual([
      { origin: relay.url, authorization: `Bearer ${token}`, status: 307 },
      { origin: store.url, authorization: null, status: 200 },
    ]);

    const ranged = await sandbox.download(fileId, { range: { start: 5, end: 9 } });
    expect(ranged.status).toBe(206);
    expect(Buffer.from(await ranged.arrayBuffer())).toEqual(bytes.subarray(5, 10));

    const out = await mkdtemp(join(dir, "sdk-"));
    const { objectGets } = await watched(() =>
      sandbox.downloadToFile(fileId, join(out, "big.bin")),
    );
    expect(sha256(await readFile(join(out, "big.bin")))).toBe(sha256(bytes));
    expect(objectGets.map((r) => r.status)).toEqual([200]);
  });
});
