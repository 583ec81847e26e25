import { spawn } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { createWriteStream } from "node:fs";
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import type { RunningRelay } from "../../test/support/relay";
import type { Session } from "../relay-api";
import { shimEnv, type SendJson } from "../shim";
import { fail } from "./report";

/** A send that takes longer than this is killed and counted as an error. */
const SEND_TIMEOUT_MS = 15 * 60_000;
export const MiB = 1024 * 1024;

export interface Sandbox {
  session: Session;
  dir: string;
  env: NodeJS.ProcessEnv;
}

export interface Sent {
  sandbox: Sandbox;
  path: string;
  size: number;
  sha256: string;
}

export async function newSandbox(
  relay: RunningRelay,
  root: string,
  name: string,
): Promise<Sandbox> {
  const { token } = await relay.mintSession();
  const session = { url: relay.url, token };
  const dir = join(root, name);
  await mkdir(join(dir, "tmp"), { recursive: true });
  await mkdir(join(dir, "cache"), { recursive: true });
  const env = shimEnv(session, join(dir, "tmp"), { XDG_CACHE_HOME: join(dir, "cache") });
  return { session, dir, env };
}

export interface Run {
  code: number | null;
  wallMs: number;
  /** Milliseconds from spawn to each stdout line (the shim prints one JSON line per file). */
  lineAtMs: number[];
  lines: string[];
  stderr: string;
}

/** Runs `node dist/airlock.mjs send <paths> --json`, timing each JSON line as it arrives. */
export function send(shim: string, sandbox: Sandbox, paths: string[]): Promise<Run> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn(process.execPath, [shim, "send", ...paths, "--json"], {
      env: sandbox.env,
      stdio: ["ignore", "pipe", "pipe"],
    });
    const timer = setTimeout(() => child.kill("SIGKILL"), SEND_TIMEOUT_MS);
    const lines: string[] = [];
    const lineAtMs: number[] = [];
    let partial = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => {
      const parts = (partial + chunk.toString()).split("\n");
      partial = parts.pop()!;
      for (const line of parts.filter((l) => l.trim())) {
        lines.push(line);
        lineAtMs.push(performance.now() - started);
      }
    });
    child.stderr.on("data", (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-4096)));
    child.once("error", reject);
    child.once("close", (code) => {
      clearTimeout(timer);
      resolve({ code, wallMs: performance.now() - started, lineAtMs, lines, stderr });
    });
  });
}

/** Checks one send's JSON lines against the files it was given; returns file ids by path. */
export function checkResults(files: Sent[], run: Run, label: string): Map<string, string> {
  const ids = new Map<string, string>();
  if (run.code !== 0) {
    fail(`${label}: exited ${run.code}: ${run.stderr.trim().split("\n").pop() ?? ""}`);
    return ids;
  }
  const results = run.lines.map((line) => JSON.parse(line) as SendJson & { name?: string });
  if (results.length !== files.length) {
    fail(`${label}: ${results.length} results for ${files.length} files`);
    return ids;
  }
  // The shim sends in the order given and prints one line per file.
  files.forEach((file, i) => {
    const result = results[i]!;
    if (result.sha256 !== file.sha256 || result.size !== file.size)
      fail(`${label}: ${file.path} reported ${result.size} B ${result.sha256}`);
    else ids.set(file.path, result.fileId);
  });
  return ids;
}

/** Runs `tasks` with at most `limit` in flight. */
export async function pool<T>(
  items: T[],
  limit: number,
  task: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await task(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}

/** Writes `bytes` of random data to `path` in 8 MiB chunks and returns its SHA-256. */
export async function writeRandom(path: string, bytes: number): Promise<string> {
  const hash = createHash("sha256");
  const out = createWriteStream(path);
  for (let left = bytes; left > 0;) {
    const chunk = randomBytes(Math.min(8 * MiB, left));
    hash.update(chunk);
    left -= chunk.length;
    if (!out.write(chunk)) await new Promise<void>((resolve) => out.once("drain", () => resolve()));
  }
  await new Promise<void>((resolve, reject) => {
    out.once("error", reject);
    out.end(() => resolve());
  });
  return hash.digest("hex");
}
