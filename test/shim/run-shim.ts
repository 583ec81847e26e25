import { execFileSync, spawn, type ChildProcessByStdio } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Readable } from "node:stream";

const root = fileURLToPath(new URL("../..", import.meta.url));

/** The built bundle every shim test runs, exactly as a sandbox would. */
export const SHIM = join(root, "dist/airlock.mjs");

/** A Node.js binary the bundle must work under. */
export interface Runtime {
  name: string;
  node: string;
}

/** Node 20 (this process), Node 18 (the oldest supported) and Node 24, from test/runtimes. */
export const RUNTIMES: Runtime[] = [
  { name: `node ${process.versions.node} (this process)`, node: process.execPath },
  { name: "node 18", node: join(root, "test/runtimes/node_modules/node18/bin/node") },
  { name: "node 24", node: join(root, "test/runtimes/node_modules/node24/bin/node") },
];

/**
 * Builds the bundle if it is missing (`npm test` builds it first) and installs the extra runtimes
 * if they are missing. Call from `beforeAll`.
 */
export function prepareShim(): void {
  if (!existsSync(SHIM))
    for (const script of ["build-shim.mjs", "build-page-script.mjs"])
      execFileSync(process.execPath, [join(root, "scripts", script)], { stdio: "inherit" });
  execFileSync(process.execPath, [join(root, "scripts/ensure-test-runtimes.mjs")], {
    stdio: "inherit",
  });
}

/** How one run of the shim ended. */
export interface ShimResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stdoutBytes: Buffer;
  stderr: string;
  /** stderr split into lines, without the final newline's empty string. */
  stderrLines: string[];
}

export interface RunOptions {
  node?: string;
  /** The whole environment besides PATH and HOME: nothing leaks in from the test runner. */
  env?: Record<string, string>;
  cwd?: string;
  /** Run as this user (tests run as root, which reads any file regardless of its mode). */
  uid?: number;
  gid?: number;
  timeoutMs?: number;
}

/** Runs `node dist/airlock.mjs ...args` and collects its exit code, stdout and stderr. */
export function runShim(args: string[], options: RunOptions = {}): Promise<ShimResult> {
  const env: Record<string, string | undefined> = {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    HOME: process.env.HOME ?? "/tmp",
    ...options.env,
  };
  const child = spawn(options.node ?? process.execPath, [SHIM, ...args], {
    cwd: options.cwd ?? root,
    // The relay's generated types declare its vars on ProcessEnv; the shim needs none of them.
    env: env as NodeJS.ProcessEnv,
    uid: options.uid,
    gid: options.gid,
    stdio: ["ignore", "pipe", "pipe"],
    timeout: options.timeoutMs ?? 60_000,
  });
  return collectRun(child);
}

/** Collects a shim process's exit code, stdout and stderr once it has closed. */
export function collectRun(
  child: ChildProcessByStdio<null, Readable, Readable>,
): Promise<ShimResult> {
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  child.stdout.on("data", (chunk: Buffer) => out.push(chunk));
  child.stderr.on("data", (chunk: Buffer) => err.push(chunk));
  return new Promise((resolve, reject) => {
    child.once("error", reject);
    child.once("close", (code, signal) => {
      const stdoutBytes = Buffer.concat(out);
      const stderr = Buffer.concat(err).toString("utf8");
      resolve({
        code,
        signal,
        stdout: stdoutBytes.toString("utf8"),
        stdoutBytes,
        stderr,
        stderrLines: stderr === "" ? [] : stderr.replace(/\n$/, "").split("\n"),
      });
    });
  });
}

/** The checks every failing run must pass: one `airlock: ` line, no stack frames. */
export function failureLine(result: ShimResult): string {
  const problems: string[] = [];
  if (result.stderrLines.length !== 1)
    problems.push(`expected 1 stderr line, got ${result.stderrLines.length}`);
  if (/^\s+at /m.test(result.stderr)) problems.push("stderr has a stack trace");
  if (!result.stderr.startsWith("airlock: "))
    problems.push('stderr does not start with "airlock: "');
  if (problems.length > 0) throw new Error(`${problems.join("; ")}:\n${result.stderr}`);
  return result.stderrLines[0]!;
}

/** A shim run's environment against a relay: its URL and token, retries fast and few. */
export function relayEnv(url: string, token: string, retries = 3): Record<string, string> {
  return {
    AIRLOCK_URL: url,
    AIRLOCK_TOKEN: token,
    AIRLOCK_RETRIES: String(retries),
    AIRLOCK_RETRY_BASE_MS: "10",
  };
}
