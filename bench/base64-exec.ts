/**
 * The baseline the field uses today to move a file through an exec channel: base64 in 64 KiB
 * chunks, each appended to the far side by its own `sh -c` process with the chunk as an argument,
 * then decoded there with `base64 -d`. Here the "far side" is a local directory, so this is a
 * lower bound: a real `docker exec` / sandbox exec round trip costs far more than a local spawn.
 */
import { spawnSync } from "node:child_process";
import { closeSync, openSync, readSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import type { Measured, Meter } from "./measure";

/** Raw bytes per chunk: 48 KiB encode to exactly 64 KiB of base64 (under the 128 KiB argv limit). */
const RAW_CHUNK = 48 * 1024;
/** The entry point recognises this first argument and runs `transferByExec` in a child process. */
export const CHILD_FLAG = "--base64-exec-child";

export interface ExecTransfer extends Measured {
  /** Base64 bytes passed through exec. */
  bytesSent: number;
  processes: number;
}

/**
 * Runs the transfer in a child node process (this same bundle, re-entered with `CHILD_FLAG`) under
 * GNU time, so it gets its own wall time and peak RSS like the other tools.
 */
export async function base64OverExec(
  meter: Meter,
  src: string,
  dir: string,
): Promise<ExecTransfer> {
  const script = process.argv[1];
  if (!script) throw new Error("cannot find the benchmark's own script to re-enter");
  const run = await meter.run(process.execPath, [script, CHILD_FLAG, src, dir]);
  const { bytesSent, processes } = JSON.parse(run.stdout.trim().split("\n").pop()!) as {
    bytesSent: number;
    processes: number;
  };
  return { ...run, bytesSent, processes };
}

/** The child side: chunk, encode, one `sh -c` append per chunk, decode, check, clean up. */
export function transferByExec(src: string, dir: string): void {
  const encoded = join(dir, "exec-out.b64");
  const decoded = join(dir, "exec-out.bin");
  const buffer = Buffer.alloc(RAW_CHUNK);
  const fd = openSync(src, "r");
  let bytesSent = 0;
  let processes = 0;
  try {
    for (let n; (n = readSync(fd, buffer, 0, RAW_CHUNK, null)) > 0;) {
      const chunk = buffer.subarray(0, n).toString("base64");
      sh('printf %s "$1" >> "$2"', chunk, encoded);
      bytesSent += chunk.length;
      processes++;
    }
    sh('base64 -d "$1" > "$2"', encoded, decoded);
    processes++;
    if (statSync(decoded).size !== statSync(src).size) throw new Error("decoded size differs");
  } finally {
    closeSync(fd);
    rmSync(encoded, { force: true });
    rmSync(decoded, { force: true });
  }
  process.stdout.write(`${JSON.stringify({ bytesSent, processes })}\n`);
}

function sh(script: string, ...args: string[]): void {
  const result = spawnSync("sh", ["-c", script, "sh", ...args], {
    stdio: ["ignore", "ignore", "pipe"],
  });
  if (result.status !== 0) {
    throw new Error(`sh -c '${script}' failed (${result.status}): ${result.stderr?.toString()}`);
  }
}
