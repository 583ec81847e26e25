// `airlock pull --wait [--timeout <duration>]` against the real relay (`wrangler dev`), for the
// Node and the Python shim. A recording proxy sits in front of the relay, so a test knows the
// shim has already found the inbox empty before it seeds a file through the operator route.
import { spawn, type ChildProcess } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdtemp, readFile, readdir } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { humanSize } from "../../src/services/human-size";
import { relaySuite } from "../support/relay-suite";
import { startFlakyProxy, type FlakyProxy } from "./flaky-proxy";
import { collectRun, failureLine, relayEnv, type ShimResult } from "./run-shim";
import { processEnv, runDriver, shimDrivers, type ShimDriver } from "./shims";

const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");
const USAGE =
  "airlock pull [--dir <dir>] [--wait] [--timeout <duration>] [--extract] [--max-bytes <n>] [--max-entries <n>] [--readonly] [--json]";

const suite = relaySuite({}, "airlock-pull-wait-");
let proxy: FlakyProxy;
let drivers: ShimDriver[];

beforeAll(async () => {
  proxy = await startFlakyProxy(suite.relay.url, () => undefined);
  drivers = await shimDrivers(suite.dir);
}, 60_000);

afterAll(async () => {
  await proxy?.stop();
});

/** Resolves once the proxy has seen `count` more inbox listings than `before`. */
async function inboxListings(before: number, count: number): Promise<void> {
  const seen = () => proxy.log.filter((entry) => entry.request === "GET /v1/inbox").length;
  const deadline = Date.now() + 60_000;
  while (seen() < before + count) {
    if (Date.now() > deadline) throw new Error("the shim never listed the inbox");
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

const listingsSoFar = () => proxy.log.filter((entry) => entry.request === "GET /v1/inbox").length;

describe.each(["node", "python"] as const)("the %s shim's pull --wait", (name) => {
  let driver: ShimDriver;
  let token: string;
  let sessionId: string;
  let work: string;

  const running = new Set<ChildProcess>();

  beforeAll(async () => {
    driver = drivers.find((d) => d.name === name)!;
    work = await mkdtemp(join(suite.dir, `${name}-`));
  });
  // A session per test, and no waiting shim outlives its test: a failed test leaves nothing
  // in an inbox, and nothing listing one, for the next.
  beforeEach(async () => {
    const session = await suite.relay.mintSession();
    token = session.token;
    sessionId = session.sessionId;
  });
  afterEach(() => {
    for (const child of running) child.kill("SIGKILL");
    running.clear();
  });

  const env = () => relayEnv(proxy.url, token);
  const airlock = (args: string[]) =>
    runDriver(driver, args, { env: env(), cwd: work, home: work });
  /** Starts the shim without waiting for it, to act while it runs. */
  const start = (args: string[]) => {
    const [program, ...lead] = driver.argv;
    const child = spawn(program!, [...lead, ...args], {
      cwd: work,
      env: processEnv({ PATH: driver.path, HOME: work, TMPDIR: work, ...env() }),
      stdio: ["ignore", "pipe", "pipe"],
      timeout: 120_000,
    });
    running.add(child);
    return { child, done: collectRun(child) };
  };
  const seed = async (seedName: string, bytes: Uint8Array) => {
    const url = `${suite.relay.url}/v1/sessions/${sessionId}/inbox?name=${encodeURIComponent(seedName)}`;
    const response = await fetch(url, {
      method: "POST",
      headers: {
        authorization: `Bearer ${suite.relay.adminToken}`,
        "content-length": String(bytes.length),
      },
      body: bytes,
    });
    expect(response.status, await response.clone().text()).toBe(201);
  };

  it("blocks on an empty inbox and pulls the file seeded while it waits", async () => {
    const dir = join(work, "waited");
    const before = listingsSoFar();
    const run = start(["pull", "--wait", "--dir", dir]);
    // Two empty listings: it found nothing and kept asking.
    await inboxListings(before, 2);
    expect(existsSync(dir)).toBe(false);
    const bytes = randomBytes(30_000);
    await seed("late.bin", bytes);
    const result: ShimResult = await run.done;
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    expect(result.stdout).toBe(
      `[User uploaded: late.bin (${humanSize(bytes.length)}) at ${join(dir, "late.bin")}]\n`,
    );
    expect(sha256(await readFile(join(dir, "late.bin")))).toBe(sha256(bytes));
    // Acknowledged: the inbox is empty again.
    const again = await suite.api(token, "GET", "/v1/inbox");
    expect(again.body.items).toEqual([]);
  });

  it("pulls at once, without waiting, what is already there", async () => {
    const dir = join(work, "ready");
    const bytes = randomBytes(1000);
    await seed("ready.txt", bytes);
    const before = listingsSoFar();
    const result = await airlock(["pull", "--wait", "--timeout", "1h", "--dir", dir]);
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    expect(result.stdout).toBe(
      `[User uploaded: ready.txt (1000 B) at ${join(dir, "ready.txt")}]\n`,
    );
    expect(listingsSoFar() - before).toBe(1);
  });

  it("gives up after --timeout with one line and exit 3, nothing written", async () => {
    const dir = join(work, "timed-out");
    const before = listingsSoFar();
    const result = await airlock(["pull", "--wait", "--timeout", "2s", "--dir", dir]);
    expect(result.stdout).toBe("");
    expect(failureLine(result)).toBe("airlock: nothing arrived in the inbox within 2s");
    expect(result.code).toBe(3);
    expect(existsSync(dir)).toBe(false);
    // It asked more than once, and once more at the end.
    expect(listingsSoFar() - before).toBeGreaterThanOrEqual(2);
  });

  it("says so on stderr and exits 0 at once without --wait", async () => {
    const dir = join(work, "empty");
    const before = listingsSoFar();
    const result = await airlock(["pull", "--dir", dir]);
    expect(result).toMatchObject({ code: 0, stdout: "", stderr: "nothing new in the inbox\n" });
    expect(listingsSoFar() - before).toBe(1);
    expect(existsSync(dir)).toBe(false);
  });

  it("exits on Ctrl-C while waiting with one line, exit 130", async () => {
    const before = listingsSoFar();
    const run = start(["pull", "--wait", "--dir", join(work, "interrupted")]);
    await inboxListings(before, 1);
    run.child.kill("SIGINT");
    const result = await run.done;
    expect(result.stdout).toBe("");
    expect(failureLine(result)).toBe("airlock: interrupted (SIGINT)");
    expect(result.code).toBe(130);
  });

  it.each([
    [["--timeout", "5s"], `airlock: --timeout needs --wait; usage: ${USAGE}`],
    [
      ["--wait", "--timeout", "soon"],
      `airlock: --timeout soon is not a duration such as 90s, 10m, 24h or 7d; usage: ${USAGE}`,
    ],
    [
      ["--wait", "--timeout", "0"],
      `airlock: --timeout must be longer than 0 seconds; usage: ${USAGE}`,
    ],
  ])("refuses pull %j with a usage line and exit 2, asking nothing", async (args, line) => {
    const before = proxy.log.length;
    const result = await airlock(["pull", ...args]);
    expect(result.stdout).toBe("");
    expect(failureLine(result)).toBe(line);
    expect(result.code).toBe(2);
    expect(proxy.log.length).toBe(before);
    expect(await readdir(work)).not.toContain("uploads");
  });
});
