import { createHash, randomBytes } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect } from "vitest";
import type { FaultProxy } from "../fixtures/fault-proxy";
import { prepareShim, runShim, type ShimResult } from "../shim/run-shim";
import type { RunningRelay } from "../support/relay";

/** Shared helpers of the fault-injection suites (test/e2e/faults-*.test.ts). */

/** The shim's socket idle timeout (agent-shim/src/transport/http.ts, IDLE_TIMEOUT_MS): too long to wait out here. */
export const SHIM_IDLE_TIMEOUT_MS = 60_000;
/** Above the 1 MiB a send takes in one request through the relay, so it goes by PUT. */
export const FILE_BYTES = 1536 * 1024;
/** The strict S3's body idle timeout here (S3's own is about 20 s). */
export const S3_IDLE_TIMEOUT_MS = 3_000;

export interface SendJson {
  fileId: string;
  name: string;
  size: number;
  sha256: string;
  url: string;
  deduped: boolean;
  uploadedBytes: number;
}

export interface Listed {
  fileId: string;
  name: string;
  size: number;
  sha256: string;
  url: string;
}

export const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");

/** The suite's work directory (a live binding: set by `useWorkDir`'s `beforeAll`). */
export let work: string;
let fileCount = 0;

/** A fresh file of random bytes (gzip never pays, so it is stored as is). */
export async function randomFile(bytes = FILE_BYTES): Promise<{ path: string; data: Buffer }> {
  const data = randomBytes(bytes);
  const path = join(work, `file-${++fileCount}.bin`);
  await writeFile(path, data);
  return { path, data };
}

/** `airlock send --json <path>` as a sandbox runs it, retrying fast. */
export function send(
  url: string,
  token: string,
  path: string,
  env: Record<string, string> = {},
): Promise<ShimResult> {
  return runShim(["send", "--json", path], {
    env: {
      AIRLOCK_URL: url,
      AIRLOCK_TOKEN: token,
      AIRLOCK_RETRY_BASE_MS: "10",
      XDG_CACHE_HOME: join(work, "cache"),
      ...env,
    },
  });
}

export function sent(result: ShimResult): SendJson {
  expect(result.stderr, result.stderr).not.toMatch(/^airlock: /m);
  expect(result.code, result.stderr).toBe(0);
  return JSON.parse(result.stdout.trim()) as SendJson;
}

export async function download(url: string): Promise<Buffer> {
  const response = await fetch(url);
  expect(response.status, url).toBe(200);
  return Buffer.from(await response.arrayBuffer());
}

/** The file's share URL serves exactly `data`. */
export async function expectServed(result: SendJson, data: Buffer): Promise<void> {
  expect(result.sha256).toBe(sha256(data));
  expect(result.size).toBe(data.length);
  const body = await download(result.url);
  expect(body.length).toBe(data.length);
  expect(sha256(body)).toBe(sha256(data));
}

export async function listFiles(relay: RunningRelay, sessionId: string): Promise<Listed[]> {
  const response = await fetch(`${relay.url}/v1/files?sessionId=${sessionId}`, {
    headers: { authorization: `Bearer ${relay.adminToken}` },
  });
  expect(response.status).toBe(200);
  return ((await response.json()) as { files: Listed[] }).files;
}

/** Nothing corrupt is ever served: every file listed downloads with the SHA-256 it declares. */
export async function expectNothingCorrupt(
  relay: RunningRelay,
  sessionId: string,
): Promise<Listed[]> {
  const files = await listFiles(relay, sessionId);
  for (const file of files) {
    const body = await download(file.url);
    expect({ name: file.name, size: body.length, sha256: sha256(body) }).toEqual({
      name: file.name,
      size: file.size,
      sha256: file.sha256,
    });
  }
  return files;
}

export function faultsApplied(proxy: FaultProxy, from: number) {
  return proxy.requests
    .slice(from)
    .filter((r) => r.fault !== null)
    .map((r) => `${r.method} ${r.fault} ${r.status}`);
}

/** Registers the suite's `beforeAll`/`afterAll`: the shim built, a fresh work directory. */
export function useWorkDir(): void {
  beforeAll(async () => {
    prepareShim();
    work = await mkdtemp(join(tmpdir(), "airlock-faults-"));
  });
  afterAll(() => rm(work, { recursive: true, force: true }));
}
