import { execFileSync, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, symlink } from "node:fs/promises";
import { delimiter, join } from "node:path";
import { Readable } from "node:stream";
import { fileURLToPath } from "node:url";
import { collectRun, SHIM, type ShimResult } from "./run-shim";

// How the contract suite runs each of the three shims: the Node bundle, the Python shim (with
// neither node nor curl on its PATH) and the POSIX sh shim under dash.

const root = fileURLToPath(new URL("../..", import.meta.url));

/** The Python shim as it is in the repository (the relay serves it with its version set). */
export const PYTHON_SHIM = join(root, "agent-shim/airlock.py");
/** The POSIX fallback. */
export const POSIX_SHIM = join(root, "agent-shim/airlock.sh");

/** What the contract checks and some shim may not do. */
export type Feature = "json" | "gzip" | "directories" | "get" | "extract" | "ls" | "multipart";

export interface ShimDriver {
  name: "node" | "python" | "posix";
  /** The program and its leading arguments; the shim's own arguments follow. */
  argv: string[];
  /** PATH for the run. */
  path: string;
  /** What this shim does not do, with how it says so. */
  unsupported: Partial<Record<Feature, string>>;
}

/** Where a program is on the test runner's PATH, or undefined. */
export function which(program: string): string | undefined {
  for (const dir of (process.env.PATH ?? "").split(delimiter)) {
    const path = join(dir, program);
    if (dir && existsSync(path)) return path;
  }
  return undefined;
}

/** Required, never skipped: `npm test` installs the Debian tools (scripts/ensure-test-tools.mjs). */
export function required(program: string): string {
  const path = which(program);
  if (!path) throw new Error(`${program} is not installed; the shim tests need it`);
  return path;
}

/**
 * The real python3 binary (not a version manager's wrapper script, which needs a shell and
 * more on PATH): what `sys.executable` names.
 */
export function python3Binary(python = required("python3")): string {
  return execFileSync(python, ["-c", "import sys; print(sys.executable)"], {
    encoding: "utf8",
  }).trim();
}

/**
 * A directory holding only a `python3` link: the PATH of a Python-only image, with no node,
 * no curl and no other tool.
 */
export async function pythonOnlyPath(dir: string, python = python3Binary()): Promise<string> {
  const bin = join(dir, "python-only-bin");
  await mkdir(bin, { recursive: true });
  if (!existsSync(join(bin, "python3"))) await symlink(python, join(bin, "python3"));
  return bin;
}

/** The tools the POSIX shim uses beside sh and curl, each a busybox applet in a busybox image. */
const POSIX_SHIM_APPLETS = [
  "awk",
  "cat",
  "chmod",
  "mkdir",
  "mktemp",
  "mv",
  "od",
  "rm",
  "sed",
  "sha256sum",
  "tr",
  "wc",
];

/**
 * A directory holding busybox's applets and curl, nothing else: the PATH of an image with
 * busybox and curl only.
 */
export async function busyboxOnlyPath(dir: string, busybox: string, curl: string): Promise<string> {
  const bin = join(dir, "busybox-bin");
  await mkdir(bin, { recursive: true });
  for (const applet of POSIX_SHIM_APPLETS) {
    if (!existsSync(join(bin, applet))) await symlink(busybox, join(bin, applet));
  }
  if (!existsSync(join(bin, "curl"))) await symlink(curl, join(bin, "curl"));
  return bin;
}

/** The three shims; `scratch` is a directory the Python-only PATH is made in. */
export async function shimDrivers(scratch: string): Promise<ShimDriver[]> {
  const systemPath = process.env.PATH ?? "/usr/bin:/bin";
  return [
    { name: "node", argv: [process.execPath, SHIM], path: systemPath, unsupported: {} },
    {
      name: "python",
      argv: ["python3", PYTHON_SHIM],
      path: await pythonOnlyPath(scratch),
      unsupported: {},
    },
    {
      name: "posix",
      argv: [required("dash"), POSIX_SHIM],
      path: systemPath,
      unsupported: {
        json: "pulls without --json; no ls",
        gzip: "sends every file as it is",
        directories: "sends single files only",
        get: "has no get",
        extract: "has no --extract",
        ls: "has no ls",
        multipart: "sends every file in one PUT",
      },
    },
  ];
}

export interface DriverRun {
  env: Record<string, string>;
  cwd: string;
  /** HOME (and so the cache with upload states) and TMPDIR of the run. */
  home: string;
  timeoutMs?: number;
  /** Piped to the shim's standard input (none when not given). */
  input?: Buffer;
}

/** An environment for a child process: exactly these variables (the relay's typed ones aside). */
export function processEnv(vars: Record<string, string | undefined>): NodeJS.ProcessEnv {
  return vars as NodeJS.ProcessEnv;
}

/** Runs one shim with exactly `env` (plus PATH, HOME and TMPDIR) and collects what it did. */
export function runDriver(driver: ShimDriver, args: string[], run: DriverRun): Promise<ShimResult> {
  const env = processEnv({ PATH: driver.path, HOME: run.home, TMPDIR: run.home, ...run.env });
  const [program, ...lead] = driver.argv;
  const child = spawn(program!, [...lead, ...args], {
    cwd: run.cwd,
    env,
    stdio: [run.input === undefined ? "ignore" : "pipe", "pipe", "pipe"],
    timeout: run.timeoutMs ?? 120_000,
  });
  if (child.stdin) {
    child.stdin.on("error", () => {}); // a shim that refuses stops reading
    Readable.from([run.input!]).pipe(child.stdin);
  }
  return collectRun(child as Parameters<typeof collectRun>[0]);
}
