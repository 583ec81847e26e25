import { randomBytes } from "node:crypto";
import { rmSync } from "node:fs";
import { link, open, rename, rm } from "node:fs/promises";
import { join } from "node:path";
import { CliError, errorCode, fsError } from "../cli/errors.js";
import { numberedFileName } from "../download/file-names.js";

/** Temp files this process created and has not yet removed or kept. */
const live = new Set<string>();
let handlersInstalled = false;

/**
 * A fresh, unguessable path in `dir` for a temp file (or directory), removed on exit, SIGINT and SIGTERM
 * unless `releaseTemp` removed it first.
 */
export function tempPath(dir: string, prefix: string, suffix: string): string {
  installHandlers();
  const path = join(dir, `${prefix}${randomBytes(6).toString("hex")}${suffix}`);
  live.add(path);
  return path;
}

/** Whether `path` is a temp path this process made (and has not removed or kept). */
export function isTemp(path: string): boolean {
  return live.has(path);
}

/** Removes a temp file or directory (if it exists) and forgets it. */
export async function releaseTemp(path: string): Promise<void> {
  live.delete(path);
  await rm(path, { force: true, recursive: true });
}

/** How many numbered names `keepTemp` tries before giving up. */
const MAX_NUMBERED = 10_000;
/** What `link` fails with where a file system has no hard links. */
const NO_HARD_LINKS = new Set(["EPERM", "ENOTSUP", "EOPNOTSUPP", "ENOSYS", "EXDEV"]);

/**
 * Gives a finished temp file its name in `dir` without ever replacing a file: `name`, or when
 * `numbered` and that is taken, `name (1)`, `name (2)`, ... Each name is claimed atomically (a hard
 * link, or an exclusive create that the rename then replaces), so a concurrent writer can take a
 * name but never clobber one. Returns the path; without `numbered`, a taken name is an error.
 */
export async function keepTemp(
  temp: string,
  dir: string,
  name: string,
  numbered: boolean,
): Promise<string> {
  for (let n = 0; n <= (numbered ? MAX_NUMBERED : 0); n++) {
    const path = join(dir, numberedFileName(name, n));
    try {
      await claim(temp, path);
      return path;
    } catch (err) {
      if (errorCode(err) !== "EEXIST") throw fsError("write", path, err);
      if (!numbered) throw new CliError(`${path} already exists; name it with -o to overwrite it`);
    }
  }
  throw new CliError(`cannot write ${name} in ${dir}: too many files by that name`);
}

async function claim(temp: string, path: string): Promise<void> {
  try {
    await link(temp, path);
  } catch (err) {
    if (!NO_HARD_LINKS.has(errorCode(err) ?? "")) throw err;
    await (await open(path, "wx")).close();
    await rename(temp, path).catch(async (renameError: unknown) => {
      await rm(path, { force: true });
      throw renameError;
    });
  }
  await releaseTemp(temp); // Linked: the temp name goes; renamed: a no-op.
}

function removeAllNow(): void {
  for (const path of live) {
    try {
      rmSync(path, { force: true, recursive: true });
    } catch {
      // Best effort on the way out: nothing else can be done about it now.
    }
  }
  live.clear();
}

/** What a Ctrl-C says instead of "interrupted", while an upload that can be resumed is going. */
let interruptHint: (() => Promise<string>) | undefined;

/**
 * Sets (or, with undefined, clears) the line a SIGINT prints before the process exits 130:
 * how to resume the upload under way. Asked at most `HINT_WAIT_MS`; then the plain line.
 */
export function onInterrupt(hint: (() => Promise<string>) | undefined): void {
  installHandlers();
  interruptHint = hint;
}

const HINT_WAIT_MS = 3000;

function installHandlers(): void {
  if (handlersInstalled) return;
  handlersInstalled = true;
  process.on("exit", removeAllNow);
  const stop = (signal: NodeJS.Signals, code: number) => () => {
    let done = false;
    const finish = (line: string) => {
      if (done) return;
      done = true;
      removeAllNow();
      const clear = process.stderr.isTTY ? "\r\x1b[2K" : "";
      process.stderr.write(`${clear}airlock: ${line}\n`);
      process.exit(code);
    };
    const plain = `interrupted (${signal})`;
    const hint = signal === "SIGINT" ? interruptHint : undefined;
    if (!hint) return finish(plain);
    setTimeout(() => finish(plain), HINT_WAIT_MS).unref();
    hint().then(finish, () => finish(plain));
  };
  process.once("SIGINT", stop("SIGINT", 130));
  process.once("SIGTERM", stop("SIGTERM", 143));
}
