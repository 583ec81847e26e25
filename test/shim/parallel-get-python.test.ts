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
import { seedInbox } from "../support/seed-inbox";
import { sharedRelay } from "../support/shared-relay";
import { collectRun, failureLine, prepareShim, relayEnv, runShim } from "./run-shim";
import { processEnv, runDriver, shimDrivers, type ShimDriver } from "./shims";

/**
 * The Python shim's `airlock get` of a file over the ranged-download threshold (lowered by its
 * knobs so that a 6 MiB file splits into 1 or 2 MiB ranges), the cases of parallel-get.test.ts:
 * on s3 each range goes to the store by the relay's redirect, on r2 the relay serves it; a run
 * killed by SIGKILL in one shim is resumed by the other with only the ranges it lacked (the same
 * part file and `.ranges` record); a corrupted range fails in one line leaving nothing; a capped
 * share link is charged each byte once; `pull` takes the same path. Files go up with the Node
 * shim (not what is tested).
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
  sha256: string;
}

let scratch: string;
let drivers: ShimDriver[];
const driver = (name: "node" | "python") => drivers.find((d) => d.name === name)!;

beforeAll(async () => {
  prepareShim();
  scratch = await mkdtemp(join(tmpdir(), "airlock-ranged-py-"));
  drivers = await shimDrivers(scratch);
}, 120_000);

afterAll(async () => {
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

/** Sends `bytes` as big.bin through the relay at `url` (Node shim); waits until verified. */
async function sendFile(url: string, token: string, bytes: Buffer): Promise<Sent> {
  const dir = await mkdtemp(join(scratch, "send-"));
  await writeFile(join(dir, "big.bin"), bytes);
  const result = await runShim(["send", "big.bin", "--wait", "--json"], {
    cwd: dir,
    env: relayEnv(url, token),
    timeoutMs: 120_000,
  });
  expect(result.stderr, result.stderr).toBe("");
  return JSON.parse(result.stdout.trim()) as Sent;
}

/** Runs the Python shim in `cwd` with exactly `env`. */
const python = (args: string[], cwd: string, env: Record<string, string>) =>
  runDriver(driver("python"), args, { env, cwd, home: scratch, timeoutMs: 60_000 });

const leftIn = async (dir: string) => (await readdir(dir)).sort();

describe("the Python shim's ranged get on s3: each range straight from the store", () => {
  let s3: StrictS3;
  let proxy: FaultProxy;
  let relay: RunningRelay;

  beforeAll(async () => {
    s3 = await startStrictS3();
    proxy = await startFaultProxy({ target: s3.endpoint, host: "preserve" });
    relay = await startRelay({ storage: "s3", vars: s3Vars(s3, proxy.url) });
  }, 120_000);

  afterAll(async () => {
    await relay?.stop();
    await proxy?.stop();
    await s3?.stop();
  });

  it("gets the bytes exactly, one store GET per range", async () => {
    const bytes = randomFillSync(Buffer.alloc(SIZE));
    const { token } = await relay.mintSession();
    const sent = await sendFile(relay.url, token, bytes);
    const out = await mkdtemp(join(scratch, "out-"));
    const before = proxy.requests.length;
    const got = await python(["get", sent.fileId], out, {
      ...relayEnv(relay.url, token),
      ...RANGED(MiB),
    });
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

describe("the Python shim's ranged get on r2: the relay serves each range", () => {
  let relay: RunningRelay;
  let proxy: FaultProxy;
  let bytes: Buffer;
  let sent: Sent;
  let token: string;

  beforeAll(async () => {
    relay = sharedRelay();
    proxy = await startFaultProxy({ target: relay.url });
    bytes = randomFillSync(Buffer.alloc(SIZE));
    token = (await relay.mintSession()).token;
    sent = await sendFile(relay.url, token, bytes);
  }, 120_000);

  afterAll(async () => {
    await proxy?.stop();
  });

  const contentGets = (from: number) =>
    proxy.requests.slice(from).filter((r) => r.method === "GET" && r.path.endsWith("/content"));

  it.each([
    ["python", "node"],
    ["node", "python"],
  ] as const)(
    "a run of the %s shim killed mid-way is resumed by the %s shim with only the range it lacked",
    async (killed, resumer) => {
      const out = await mkdtemp(join(scratch, `resume-${killed}-`));
      const env = { ...relayEnv(proxy.url, token), ...RANGED(MiB) };
      // The first range stalls; the other five land and are recorded, then the run is killed.
      proxy.inject({
        method: "GET",
        path: /\/content$/,
        fault: { kind: "stall", ms: 60_000 },
        times: 1,
      });
      const [program, ...lead] = driver(killed).argv;
      const child = spawn(program!, [...lead, "get", sent.fileId], {
        cwd: out,
        env: processEnv({ PATH: driver(killed).path, HOME: scratch, ...env }),
        stdio: ["ignore", "pipe", "pipe"],
      });
      const ended = collectRun(child);
      const part = `.big.bin.${sent.sha256.slice(0, 16)}.airlock-part`;
      const recorded = async () =>
        (await readFile(join(out, `${part}.ranges`), "utf8").catch(() => "")).split("\n").length -
        1;
      for (let i = 0; i < 300 && (await recorded()) < 5; i++) await sleep(100);
      expect(await recorded()).toBe(5);
      child.kill("SIGKILL");
      await ended;
      proxy.clearFaults();
      // The stalled range is whichever reached the proxy first (threads race): the one not recorded.
      const held = (await readFile(join(out, `${part}.ranges`), "utf8")).split("\n");
      const lacking = Array.from({ length: 6 }, (_, i) => i).filter(
        (i) => !held.includes(`${i * MiB} ${(i + 1) * MiB}`),
      );
      expect(lacking).toHaveLength(1);
      const missing = `bytes=${lacking[0]! * MiB}-${(lacking[0]! + 1) * MiB - 1}`;

      const before = proxy.requests.length;
      const again = await runDriver(driver(resumer), ["get", sent.fileId], {
        env,
        cwd: out,
        home: scratch,
      });
      expect(again.stderr, again.stderr).toBe("");
      expect(sha256(await readFile(join(out, "big.bin")))).toBe(sha256(bytes));
      expect(contentGets(before).map((r) => r.range)).toEqual([missing]);
      expect(await leftIn(out)).toEqual(["big.bin"]);
    },
    60_000,
  );

  it("fails in one line on a corrupted range, leaving nothing", async () => {
    const out = await mkdtemp(join(scratch, "corrupt-"));
    proxy.inject({
      method: "GET",
      path: /\/content$/,
      fault: { kind: "corrupt-response", atByte: 1000 },
      times: 1,
    });
    const got = await python(["get", sent.fileId], out, {
      ...relayEnv(proxy.url, token),
      ...RANGED(2 * MiB),
    });
    expect(got.code).toBe(1);
    expect(failureLine(got)).toBe(
      "airlock: the download of big.bin is corrupt: its SHA-256 does not match the expected SHA-256",
    );
    expect(await leftIn(out)).toEqual([]);
  });

  it("pulls a large inbox file in ranges", async () => {
    const out = await mkdtemp(join(scratch, "pull-"));
    const session = await relay.mintSession();
    await seedInbox(relay, session.sessionId, "inbox.bin", bytes);
    const before = proxy.requests.length;
    const pulled = await python(["pull", "--dir", out], out, {
      ...relayEnv(proxy.url, session.token),
      ...RANGED(MiB),
    });
    expect(pulled.stderr, pulled.stderr).toBe("");
    expect(pulled.stdout).toBe(
      `[User uploaded: inbox.bin (6.0 MiB) at ${join(out, "inbox.bin")}]\n`,
    );
    expect(sha256(await readFile(join(out, "inbox.bin")))).toBe(sha256(bytes));
    expect(contentGets(before).filter((r) => r.range)).toHaveLength(6);
    expect(await leftIn(out)).toEqual(["inbox.bin"]);
  });

  it("charges a capped share link each byte once", async () => {
    const out = await mkdtemp(join(scratch, "link-"));
    const minted = await runShim(["link", sent.fileId, "--max-downloads", "1", "--json"], {
      env: relayEnv(relay.url, token),
    });
    expect(minted.stderr, minted.stderr).toBe("");
    const link = (JSON.parse(minted.stdout) as { url: string }).url;
    const proxied = link.replace(new URL(link).origin, proxy.url);
    const before = proxy.requests.length;
    const got = await python(["get", proxied], out, RANGED(MiB));
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
