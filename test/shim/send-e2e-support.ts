import { createHash } from "node:crypto";
import { mkdtemp, readFile, readdir } from "node:fs/promises";
import { join } from "node:path";
import { expect } from "vitest";
import type { SendResult } from "../../agent-shim/src/upload/send-result";
import type { RunOptions, ShimResult } from "./run-shim";

/** Shared helpers of test/shim/send.e2e.test.ts. */

/** One line of `airlock send --json`. */
export type Sent = SendResult;

export const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");

/** Compressible text, like a log file, made unique by `tag` so that it is never a dedup hit. */
export function logText(tag: string, lines: number): string {
  const out = [`run ${tag}`];
  for (let i = 0; i < lines; i++) {
    out.push(
      `2026-11-21T12:00:${String(i % 60).padStart(2, "0")}Z INFO worker[${i % 7}] processed item ${i} in ${i % 97} ms`,
    );
  }
  return out.join("\n") + "\n";
}

/** The shim run in the suite's directory with its session's environment. */
export type Shim = (args: string[], options?: RunOptions) => Promise<ShimResult>;

/** Sends one file and checks the JSON line; returns it. */
export async function sendJsonWith(shim: Shim, path: string, node?: string): Promise<Sent> {
  const result = await shim(["send", path, "--json"], { node });
  expect(result.stderr, result.stderr).toBe("");
  expect(result.code).toBe(0);
  const lines = result.stdout.trim().split("\n");
  expect(lines).toHaveLength(1);
  return JSON.parse(lines[0]!) as Sent;
}

/** Fetches a file back three ways (get by id, get by share URL, plain HTTP) and checks each. */
export async function expectRoundTripWith(
  shim: Shim,
  dir: string,
  sent: Sent,
  bytes: Buffer,
  node?: string,
): Promise<void> {
  const byId = await mkdtemp(join(dir, "by-id-"));
  const got = await shim(["get", sent.fileId], { node, cwd: byId });
  expect(got.stderr, got.stderr).toBe("");
  expect(got.code).toBe(0);
  expect(got.stdout).toBe(`${sent.name}\n`);
  expect(sha256(await readFile(join(byId, sent.name)))).toBe(sha256(bytes));

  const byLink = await mkdtemp(join(dir, "by-link-"));
  const linked = await shim(["get", sent.url], { node, cwd: byLink, env: {} });
  expect(linked.stderr, linked.stderr).toBe("");
  expect(linked.code).toBe(0);
  expect(await readdir(byLink)).toEqual([sent.name]);
  expect(sha256(await readFile(join(byLink, sent.name)))).toBe(sha256(bytes));

  const response = await fetch(sent.url);
  expect(response.status).toBe(200);
  expect(sha256(new Uint8Array(await response.arrayBuffer()))).toBe(sha256(bytes));
}
