import { createHash, randomBytes } from "node:crypto";
import { mkdir, readdir } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, expect } from "vitest";
import { AirlockClient, AirlockError } from "../../sdk/src/node";
import { rejectionOf } from "../support/rejection";
import { relaySuite, type RelaySuite } from "../support/relay-suite";
import { installStandIns } from "./stand-in-cli";

type StandIns = Awaited<ReturnType<typeof installStandIns>>;

/** What the exec-transport test files share: a session on the run's relay, and small helpers. */
export const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");
export const MiB = 1024 * 1024;

/** A test file's relay suite and a session of its own, ready once its `beforeAll` has run. */
export interface ExecFixture {
  suite: RelaySuite;
  airlock: AirlockClient;
  sessionId: string;
  /** Seeds `bytes` into the session; returns the file id. */
  seeded(bytes: Uint8Array, name: string): Promise<string>;
  sessionFileCount(): Promise<number>;
}

/** Registers the file's `beforeAll`: the relay suite, an operator client and a session. */
export function execFixture(dirPrefix: string, quotaBytes: number): ExecFixture {
  const fixture = {
    suite: relaySuite({}, dirPrefix),
    async seeded(bytes: Uint8Array, name: string): Promise<string> {
      return (await fixture.airlock.seedInbox(fixture.sessionId, bytes, { name })).file.fileId;
    },
    async sessionFileCount(): Promise<number> {
      return (await fixture.airlock.listFiles({ sessionId: fixture.sessionId })).length;
    },
  } as ExecFixture;
  beforeAll(async () => {
    const { relay } = fixture.suite;
    fixture.airlock = new AirlockClient({ url: relay.url, adminToken: relay.adminToken });
    ({ sessionId: fixture.sessionId } = await fixture.airlock.createSession({ quotaBytes }));
  });
  return fixture;
}

/** A new directory under `parent`. */
export async function mkdtemp(parent: string, prefix: string): Promise<string> {
  const dir = join(parent, `${prefix}${randomBytes(4).toString("hex")}`);
  await mkdir(dir, { recursive: true });
  return dir;
}

/** Files in `dir` other than `keep`: temp files left behind would show here. */
export async function leftovers(dir: string, keep: string[] = []): Promise<string[]> {
  return (await readdir(dir)).filter((name) => !keep.includes(name));
}

/** The stand-in docker and kubectl, first on PATH for the file's tests. */
export function standInsFirst(fx: ExecFixture): { ins: StandIns } {
  const stand = {} as { ins: StandIns };
  const savedPath = process.env.PATH;
  beforeAll(async () => {
    const bin = join(fx.suite.dir, "stand-in-bin");
    stand.ins = await installStandIns(bin);
    process.env.PATH = `${bin}:${savedPath ?? ""}`;
  });
  afterAll(() => {
    process.env.PATH = savedPath;
  });
  return stand;
}

/** A refusal's code and message (and that it is an AirlockError with no HTTP status). */
export async function refusal(
  promise: Promise<unknown>,
): Promise<{ code: string; message: string }> {
  const error = await rejectionOf<AirlockError>(promise);
  expect(error).toBeInstanceOf(AirlockError);
  expect(error.status).toBe(0);
  return { code: error.code, message: error.message };
}
