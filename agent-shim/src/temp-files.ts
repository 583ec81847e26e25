import { randomBytes } from "node:crypto";
import { rmSync } from "node:fs";
import { rm } from "node:fs/promises";
import { join } from "node:path";

/** Temp files this process created and has not yet removed or kept. */
const live = new Set<string>();
let handlersInstalled = false;

/**
 * A fresh, unguessable path in `dir` for a temp file, removed on exit, SIGINT and SIGTERM
 * unless `releaseTemp` removed it first.
 */
export function tempPath(dir: string, prefix: string, suffix: string): string {
  installHandlers();
  const path = join(dir, `${prefix}${randomBytes(6).toString("hex")}${suffix}`);
  live.add(path);
  return path;
}

/** Removes a temp file (if it exists) and forgets it. */
export async function releaseTemp(path: string): Promise<void> {
  live.delete(path);
  await rm(path, { force: true });
}

function removeAllNow(): void {
  for (const path of live) {
    try {
      rmSync(path, { force: true });
    } catch {
      // Best effort on the way out: nothing else can be done about it now.
    }
  }
  live.clear();
}

function installHandlers(): void {
  if (handlersInstalled) return;
  handlersInstalled = true;
  process.on("exit", removeAllNow);
  const stop = (signal: NodeJS.Signals, code: number) => () => {
    removeAllNow();
    const clear = process.stderr.isTTY ? "\r\x1b[2K" : "";
    process.stderr.write(`${clear}airlock: interrupted (${signal})\n`);
    process.exit(code);
  };
  process.once("SIGINT", stop("SIGINT", 130));
  process.once("SIGTERM", stop("SIGTERM", 143));
}
