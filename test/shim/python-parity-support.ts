import { createHash } from "node:crypto";
import { mkdtemp } from "node:fs/promises";
import { join } from "node:path";
import { beforeAll, expect } from "vitest";
import type { SendResult } from "../../agent-shim/src/upload/send-result";
import { relaySuite, type RelaySuite } from "../support/relay-suite";
import { relayEnv, type ShimResult } from "./run-shim";
import { sentLine } from "./sent-line";
import { runDriver, shimDrivers, type ShimDriver } from "./shims";

/** Shared set-up of the Python shim parity suites (test/shim/python-parity-*.test.ts). */

export const MiB = 1024 * 1024;
export const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");
export const secondsUntil = (iso: string) => (Date.parse(iso) - Date.now()) / 1000;

/** The suite on the shared relay, and the two shims compared (live bindings, set by `useParitySuite`). */
export let suite: RelaySuite;
export let node: ShimDriver;
export let python: ShimDriver;

/** Registers the suite's set-up: the shared relay, a scratch directory, the shim drivers. */
export function useParitySuite(dirPrefix: string): void {
  suite = relaySuite({}, dirPrefix);
  beforeAll(async () => {
    const drivers = await shimDrivers(suite.dir);
    node = drivers.find((d) => d.name === "node")!;
    python = drivers.find((d) => d.name === "python")!;
  });
}

/** A fresh session (its own dedup scope and inbox) and a work directory that is also HOME. */
/** The multipart threshold the shims are given here, for a case in parts of a few tens of MiB. */
export const THRESHOLD = 24 * 1024 * 1024;

export async function session() {
  const { token } = await suite.relay.mintSession();
  const cwd = await mkdtemp(join(suite.dir, "work-"));
  return { token, cwd, env: relayEnv(suite.relay.url, token) };
}

export type Session = Awaited<ReturnType<typeof session>>;

/** Runs a shim in `at`, with `input` piped to its standard input when given. */
export function run(
  driver: ShimDriver,
  args: string[],
  at: Session,
  input?: Buffer,
): Promise<ShimResult> {
  return runDriver(driver, args, {
    env: at.env,
    cwd: at.cwd,
    home: at.cwd,
    input,
    timeoutMs: 240_000,
  });
}

/** The bytes a share link serves. */
export async function download(url: string): Promise<Buffer> {
  const response = await fetch(url);
  expect(response.status).toBe(200);
  return Buffer.from(await response.arrayBuffer());
}

/** `send - --name <name> --json` by both shims, each in a session of its own. */
export async function sendStdinBoth(bytes: Buffer, name: string, extra: string[] = []) {
  const sent: SendResult[] = [];
  for (const driver of [node, python]) {
    const result = await run(
      driver,
      ["send", "-", "--name", name, "--json", ...extra],
      await session(),
      bytes,
    );
    sent.push(sentLine(result));
  }
  const [fromNode, fromPython] = sent as [SendResult, SendResult];
  expect(Object.keys(fromPython)).toEqual(Object.keys(fromNode));
  return { fromNode, fromPython };
}
