import { spawn } from "node:child_process";
import { createHash, randomFillSync } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdtemp, readFile, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFaultProxy, type FaultProxy } from "../fixtures/fault-proxy";
import { startStrictS3, type StrictS3 } from "../fixtures/s3/strict-s3";
import { startRelay, type RunningRelay } from "../support/relay";
import { s3Vars } from "../support/s3-vars";
import { sharedRelay } from "../support/shared-relay";
import { SHIM, collectRun, failureLine, prepareShim, relayEnv, runShim } from "./run-shim";

/**
 * `airlock get` of a file over the ranged-download threshold (lowered by its knobs so that a
 * 6 MiB file splits into 1 or 2 MiB ranges) against the real relay: on r2 the relay serves each
 * range, on s3 each goes to the store by the relay's redirect. Bytes equal by SHA-256; a killed
 * run resumes with only the ranges it lacked; a corrupted range fails in one line leaving
 * nothing; a capped share link is charged each byte once.
 */

const MiB = 1024 * 1024;
const SIZE = 6 * MiB;
const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");
const RANGED = (chunk: number) => ({
  AIRLOCK_PARALLEL_THRESHOLD: String(MiB),
  AIRLOCK_DOWNLOAD_CHUNK: String(chunk),
  AIRLOCK_DOWNLOAD_STREAMS: "4",
});

interface Sent {
  fileId: string;
  url: string;
  sha256: string;
}

/** Sends `bytes` as big.bin from `dir` through the relay at `url`; waits until verified. */
async function sendFile(url: string, token: string, dir: string, bytes: Buffer): Promise<Sent> {
  await writeFile(join(dir, "big.bin"), bytes);
  const result = await runShim(["send", "big.bin", "--wait", "--json"], {
    cwd: dir,
    env: relayEnv(url, token),
    timeoutMs: 120_000,
  });
  expect(result.stderr, result.stderr).toBe("");
  return JSON.parse(result.stdout.trim()) as Sent;
}

/** The files a get left in `dir` (a part file or its list of ranges would show here). */
const leftIn = async (dir: string) => (await readdir(dir)).sort();

describe("ranged get on s3: each range straight from the store", () => {
  let s3: StrictS3;
  let proxy: FaultProxy;
  let relay: RunningRelay;
  let dir: string;

  beforeAll(async () => {
    prepareShim();
    s3 = await startStrictS3();
    proxy = await startFaultProxy({ target: s3.endpoint, host: "preserve" });
    relay = await startRelay({ storage: "s3", vars: s3Vars(s3, proxy.url) });
    dir = await mkdtemp(join(tmpdir(), "airlock-ranged-s3-"));
  }, 120_000);

  afterAll(async () => {
    await relay?.stop();
    await proxy?.stop();
    await s3?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("gets the bytes exactly, one store GET per range", async () => {
    const bytes = randomFillSync(Buffer.alloc(SIZE));
    const session = await relay.mintSession();
    const sent = await sendFile(relay.url, session.token, dir, bytes);
    const out = await mkdtemp(join(dir, "out-"));
    const before = proxy.requests.length;
    const env = { ...relayEnv(relay.url, session.token), ...RANGED(MiB) };
    const got = await runShim(["get", sent.fileId], { cwd: out, env });
    expect(got.stderr, got.stderr).toBe("");
    expect(got.stdout.trim()).toBe("big.bin");
    expect(sha256(await readFile(join(out, "big.bin")))).toBe(sha256(bytes));
    expect(await leftIn(out)).toEqual(["big.bin"]);
    const ranges = proxy.requests
      .slice(before)
      .filter((r) => r.method === "GET" && r.presigned && r.range !== null)
      .map((r) => r.range)
      .sort((a, b) => Number(/\d+/.exec(a!)![0]) - Number(/\d+/.exec(b!)![0]));
    expect(ranges).toEqual(
      Array.from({ length: 6 }, (_, i) => `bytes=${i * MiB}-${(i + 1) * MiB - 1}`),
    );
  });
});

describe("ranged get on r2: the relay serves each range", () => {
  let relay: RunningRelay;
  let proxy: FaultProxy;
  let dir: string;
  let bytes: Buffer;
  let sent: Sent;
  let token: string;

  beforeAll(async () => {
    prepareShim();
    relay = sharedRelay();
    proxy = await startFaultProxy({ target: relay.url });
    dir = await mkdtemp(join(tmpdir(), "airlock-ranged-r2-"));
    bytes = randomFillSync(Buffer.alloc(SIZE));
    token = (await relay.mintSession()).token;
    sent = await sendFile(relay.url, token, dir, bytes);
  }, 120_000);

  afterAll(async () => {
    await proxy?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const contentGets = (from: number) =>
    proxy.requests.slice(from).filter((r) => r.method === "GET" && r.path.endsWith("/content"));

  it("resumes a killed run with only the ranges it lacked", async () => {
    const out = await mkdtemp(join(dir, "resume-"));
    const env = { ...relayEnv(proxy.url, token), ...RANGED(MiB) };
    // The first range stalls; the other five land and are recorded, then the run is killed.
    proxy.inject({
      method: "GET",
      path: /\/content$/,
      fault: { kind: "stall", ms: 60_000 },
      times: 1,
    });
    const childEnv: Record<string, string | undefined> = {
      PATH: process.env.PATH,
      HOME: tmpdir(),
      ...env,
    };
    const child = spawn(process.execPath, [SHIM, "get", sent.fileId], {
      cwd: out,
      env: childEnv as NodeJS.ProcessEnv,
      stdio: ["ignore", "pipe", "pipe"],
    });
    const ended = collectRun(child);
    const part = `.big.bin.${sent.sha256.slice(0, 16)}.airlock-part`;
    const recorded = async () =>
      (await readFile(join(out, `${part}.ranges`), "utf8").catch(() => "")).split("\n").length - 1;
    for (let i = 0; i < 300 && (await recorded()) < 5; i++) await sleep(100);
    expect(await recorded()).toBe(5);
    child.kill("SIGKILL");
    await ended;
    proxy.clearFaults();

    const before = proxy.requests.length;
    const again = await runShim(["get", sent.fileId], { cwd: out, env });
    expect(again.stderr, again.stderr).toBe("");
    expect(sha256(await readFile(join(out, "big.bin")))).toBe(sha256(bytes));
    expect(contentGets(before).map((r) => r.range)).toEqual([`bytes=0-${MiB - 1}`]);
    expect(await leftIn(out)).toEqual(["big.bin"]);
  }, 60_000);

  it("fails in one line on a corrupted range, leaving nothing", async () => {
    const out = await mkdtemp(join(dir, "corrupt-"));
    const env = { ...relayEnv(proxy.url, token), ...RANGED(2 * MiB) };
    proxy.inject({
      method: "GET",
      path: /\/content$/,
      fault: { kind: "corrupt-response", atByte: 1000 },
      times: 1,
    });
    const got = await runShim(["get", sent.fileId], { cwd: out, env });
    expect(got.code).toBe(1);
    expect(failureLine(got)).toBe(
      "airlock: the download of big.bin is corrupt: its SHA-256 does not match the expected SHA-256",
    );
    expect(await leftIn(out)).toEqual([]);
  });

  it("charges a capped share link each byte once", async () => {
    const out = await mkdtemp(join(dir, "link-"));
    const minted = await runShim(["link", sent.fileId, "--max-downloads", "1", "--json"], {
      env: relayEnv(relay.url, token),
    });
    expect(minted.stderr, minted.stderr).toBe("");
    const link = (JSON.parse(minted.stdout) as { url: string }).url;
    const proxied = link.replace(new URL(link).origin, proxy.url);
    const before = proxy.requests.length;
    const got = await runShim(["get", proxied], { cwd: out, env: RANGED(MiB) });
    expect(got.stderr, got.stderr).toBe("");
    expect(sha256(await readFile(join(out, "big.bin")))).toBe(sha256(bytes));
    const ranged = proxy.requests.slice(before).filter((r) => r.method === "GET" && r.range);
    expect(ranged).toHaveLength(6);
    // Six ranges of one MiB were one download's worth: the link has nothing left.
    const answer = await fetch(link, { method: "GET" });
    expect(answer.status).toBe(410);
    expect(((await answer.json()) as { error: { code: string } }).error.code).toBe(
      "link_exhausted",
    );
    expect(existsSync(join(out, `.big.bin.${sent.sha256.slice(0, 16)}.airlock-part`))).toBe(false);
  });
});
