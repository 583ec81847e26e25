// The shim contract suite's shared set-up: one contract, three shims (the Node bundle, the
// Python shim with only python3 on PATH, the POSIX sh shim under dash), split by feature into
// test/shim/contract-*.test.ts, each file looping over every shim against the run's shared relay.
import { createHash } from "node:crypto";
import { mkdtemp } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, expect } from "vitest";
import { relaySuite, type RelaySuite } from "../support/relay-suite";
import { seedInbox } from "../support/seed-inbox";
import { failureLine, relayEnv, type ShimResult } from "./run-shim";
import { runDriver, shimDrivers, type Feature, type ShimDriver } from "./shims";

export const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");
export const MiB = 1024 * 1024;
export const SHIM_NAMES = ["node", "python", "posix"] as const;
export type ShimName = (typeof SHIM_NAMES)[number];

/** An unsupported feature's refusal: nothing on stdout, one line naming what, a failing exit. */
export function expectRefusal(result: ShimResult, what: RegExp): void {
  expect(result.stdout).toBe("");
  expect(failureLine(result)).toMatch(what);
  expect(result.code).not.toBe(0);
}

/** The bytes behind a share URL. */
export async function download(url: string): Promise<Buffer> {
  const response = await fetch(url);
  expect(response.status).toBe(200);
  return Buffer.from(await response.arrayBuffer());
}

/** One contract file's set-up: the shared relay, a temp directory, the three shim drivers. */
export interface ContractSuite {
  suite: RelaySuite;
  driver(name: ShimName): ShimDriver;
  /**
   * Records what a shim printed for a case all must word alike (its one line, a key order);
   * compared once every shim of the file has run (`afterAll`), so the check does not depend on
   * which shim's cases ran first. `withPosix`: the POSIX shim words it alike too.
   */
  sameAsNode(driver: ShimDriver, key: string, line: string, withPosix?: boolean): void;
}

export function contractSuite(dirPrefix: string): ContractSuite {
  const suite = relaySuite({}, dirPrefix);
  let drivers: ShimDriver[] = [];
  beforeAll(async () => {
    drivers = await shimDrivers(suite.dir);
  }, 60_000);

  const printed = new Map<string, Map<string, string>>();
  const posixToo = new Set<string>();
  afterAll(() => {
    for (const [key, byShim] of printed) {
      const node = byShim.get("node");
      for (const [shim, line] of byShim)
        if (node !== undefined && (shim !== "posix" || posixToo.has(key)))
          expect(line, `${shim}: ${key}`).toBe(node);
    }
  });
  return {
    suite,
    driver: (name) => drivers.find((d) => d.name === name)!,
    sameAsNode(driver, key, line, withPosix = false) {
      const byShim = printed.get(key) ?? new Map<string, string>();
      printed.set(key, byShim);
      byShim.set(driver.name, line);
      if (withPosix) posixToo.add(key);
    },
  };
}

/** One shim's session on the shared relay, with its own working and home directories. */
export interface ShimSession {
  readonly driver: ShimDriver;
  readonly token: string;
  readonly sessionId: string;
  readonly work: string;
  readonly home: string;
  airlock(args: string[], extra?: Record<string, string>): Promise<ShimResult>;
  supports(feature: Feature): boolean;
  /** `send --json <path>` that must succeed with one line; its parsed record. */
  sendJson(path: string): Promise<Record<string, unknown>>;
  /** Puts `bytes` in the session's inbox under `name`, as the operator does. */
  seed(name: string, bytes: Uint8Array): Promise<void>;
  /** Acknowledges whatever an earlier case left in the inbox. */
  drainInbox(): Promise<void>;
}

/** Registers a `beforeAll` minting the shim's session; the getters work once it has run. */
export function shimSession(contract: ContractSuite, name: ShimName): ShimSession {
  const { suite } = contract;
  let state: { driver: ShimDriver; token: string; sessionId: string; work: string; home: string };
  beforeAll(async () => {
    const session = await suite.relay.mintSession();
    state = {
      driver: contract.driver(name),
      token: session.token,
      sessionId: session.sessionId,
      work: await mkdtemp(join(suite.dir, `${name}-work-`)),
      home: await mkdtemp(join(suite.dir, `${name}-home-`)),
    };
  });
  const airlock = (args: string[], extra: Record<string, string> = {}) =>
    runDriver(state.driver, args, {
      env: { ...relayEnv(suite.relay.url, state.token), ...extra },
      cwd: state.work,
      home: state.home,
    });
  return {
    get driver() {
      return state.driver;
    },
    get token() {
      return state.token;
    },
    get sessionId() {
      return state.sessionId;
    },
    get work() {
      return state.work;
    },
    get home() {
      return state.home;
    },
    airlock,
    supports: (feature) => state.driver.unsupported[feature] === undefined,
    async sendJson(path) {
      const result = await airlock(["send", "--json", path]);
      expect(result.stderr).toBe("");
      expect(result.code).toBe(0);
      const lines = result.stdout.trimEnd().split("\n");
      expect(lines).toHaveLength(1);
      return JSON.parse(lines[0]!) as Record<string, unknown>;
    },
    async seed(seedName, bytes) {
      await seedInbox(suite.relay, state.sessionId, seedName, bytes);
    },
    async drainInbox() {
      const listed = await suite.api(state.token, "GET", "/v1/inbox");
      for (const item of listed.body.items as { itemId: string }[]) {
        const acked = await suite.api(state.token, "POST", `/v1/inbox/${item.itemId}/ack`);
        expect(acked.status).toBe(200);
      }
    },
  };
}
