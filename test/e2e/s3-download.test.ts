import { execFile } from "node:child_process";
import { createHash, randomFillSync } from "node:crypto";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SendResult } from "../../agent-shim/src/upload/send-result";
import { startFaultProxy, type FaultProxy } from "../fixtures/fault-proxy";
import { startStrictS3, type StrictS3 } from "../fixtures/s3/strict-s3";
import { prepareShim, relayEnv, runShim } from "../shim/run-shim";
import { PYTHON_SHIM } from "../shim/shims";
import { startRelay, type RunningRelay } from "../support/relay";
import { s3Vars } from "../support/s3-vars";

const MiB = 1024 * 1024;
const SIZE = 24 * MiB;
const run = promisify(execFile);
const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");

/**
 * On the s3 backend a share-link download answers 307 to a presigned GET of the store: the
 * bytes go store → client, and both `airlock get` and `curl -L` get them byte-exact.
 */
describe("share-link downloads through the store redirect (wrangler dev, s3)", () => {
  let s3: StrictS3;
  let proxy: FaultProxy;
  let relay: RunningRelay;
  let dir: string;
  let bytes: Buffer;
  let sent: SendResult & { status: "pending" | "verified" };

  beforeAll(async () => {
    prepareShim();
    s3 = await startStrictS3();
    // The relay signs for the proxy's address, so the store URLs it hands out go through it.
    proxy = await startFaultProxy({ target: s3.endpoint, host: "preserve" });
    relay = await startRelay({ storage: "s3", vars: s3Vars(s3, proxy.url) });
    dir = await mkdtemp(join(tmpdir(), "airlock-s3-download-"));
    bytes = randomFillSync(Buffer.alloc(SIZE));
    await writeFile(join(dir, "big.bin"), bytes);
    const session = await relay.mintSession();
    const result = await runShim(["send", "big.bin", "--wait", "--json"], {
      cwd: dir,
      env: relayEnv(relay.url, session.token),
      timeoutMs: 480_000,
    });
    expect(result.stderr, result.stderr).toBe("");
    expect(result.code).toBe(0);
    sent = JSON.parse(result.stdout.trim()) as typeof sent;
    expect(sent.status).toBe("verified");
  }, 600_000);

  afterAll(async () => {
    await relay?.stop();
    await proxy?.stop();
    await s3?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const storeGets = () =>
    proxy.requests.filter((r) => r.method === "GET" && r.path.startsWith(`/${s3.bucket}/`));

  it("redirects to the store with the file's name", async () => {
    const answer = await fetch(sent.url, { redirect: "manual" });
    expect(answer.status).toBe(307);
    expect(answer.headers.get("etag")).toBe(`"${sent.sha256}"`);
    const location = new URL(answer.headers.get("location")!);
    expect(location.origin).toBe(proxy.url);
    expect(location.searchParams.get("response-content-disposition")).toContain("big.bin");
  });

  it("airlock get <shareUrl> comes back byte-exact", async () => {
    const before = storeGets().length;
    const out = await mkdtemp(join(dir, "get-"));
    // One stream (ranged downloads are test/shim/parallel-get.test.ts's): one whole store GET.
    const env = { AIRLOCK_DOWNLOAD_STREAMS: "1" };
    const got = await runShim(["get", sent.url], { cwd: out, env, timeoutMs: 300_000 });
    expect(got.stderr, got.stderr).toBe("");
    expect(got.code).toBe(0);
    expect(sha256(await readFile(join(out, "big.bin")))).toBe(sha256(bytes));
    // The bytes came from the store (the relay's queue may read it too, with a Range).
    expect(
      storeGets()
        .slice(before)
        .some((r) => r.status === 200),
    ).toBe(true);
  }, 320_000);

  it("the Python shim's get follows the redirect and comes back byte-exact", async () => {
    const out = await mkdtemp(join(dir, "get-py-"));
    const got = await promisify(execFile)("python3", [PYTHON_SHIM, "get", sent.url], {
      cwd: out,
      maxBuffer: 1024 * 1024,
    });
    expect(got.stderr).toBe("");
    expect(sha256(await readFile(join(out, "big.bin")))).toBe(sha256(bytes));
  }, 320_000);

  it("airlock get resumes a cut download with a Range through a fresh redirect", async () => {
    const before = storeGets().length;
    // The shim's GET of a store URL, not one of the relay's own reads: the verify queue, which
    // may still be settling the file after it was verified, reads its first bytes to tell an
    // archive (a fresh-clone CI run's cut met that read, and the shim's download went whole).
    proxy.inject({
      method: "GET",
      path: `/${s3.bucket}/`,
      presigned: true,
      fault: { kind: "reset-response", afterBytes: 8 * MiB },
      times: 1,
    });
    const out = await mkdtemp(join(dir, "resume-"));
    const got = await runShim(["get", sent.url], {
      cwd: out,
      env: { AIRLOCK_RETRIES: "3", AIRLOCK_RETRY_BASE_MS: "10", AIRLOCK_DOWNLOAD_STREAMS: "1" },
      timeoutMs: 300_000,
    });
    expect(got.stderr, got.stderr).toBe("");
    expect(got.code).toBe(0);
    expect(sha256(await readFile(join(out, "big.bin")))).toBe(sha256(bytes));
    const gets = storeGets().slice(before);
    const cut = gets.findIndex((r) => r.fault === "reset-response");
    expect(cut).toBeGreaterThanOrEqual(0);
    // The resume re-asked the share link, whose redirect signed the Range: the store sent a 206
    // of the rest. It starts where the bytes the shim had taken stop: all 8 MiB sent before the
    // cut but what the response still held when it broke (its buffer and a socket read or two).
    const after = gets.slice(cut + 1).filter((r) => r.presigned);
    expect(
      after.map((r) => r.status),
      JSON.stringify(gets),
    ).toEqual([206]);
    const from = Number(/^bytes=(\d+)-$/.exec(after[0]!.range ?? "")?.[1]);
    expect(from).toBeGreaterThanOrEqual(8 * MiB - 256 * 1024);
    expect(from).toBeLessThanOrEqual(8 * MiB);
  }, 320_000);

  it("curl -L comes back byte-exact, whole and as a range", async () => {
    const file = join(dir, "curl.bin");
    await run("curl", ["-sSfL", "-o", file, sent.url], { timeout: 300_000 });
    expect(sha256(await readFile(file))).toBe(sha256(bytes));
    const slice = join(dir, "slice.bin");
    await run("curl", ["-sSfL", "-r", `${SIZE - MiB - 5}-`, "-o", slice, sent.url], {
      timeout: 300_000,
    });
    expect(sha256(await readFile(slice))).toBe(sha256(bytes.subarray(SIZE - MiB - 5)));
  }, 620_000);
});
