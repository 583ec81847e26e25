import { access, copyFile, mkdir } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Measured, Meter } from "./measure";
import type { Session } from "./relay-api";

/** The built shim, as `npm run build:shim` (the `prebench` script) leaves it. */
export const SHIM = fileURLToPath(new URL("../dist/airlock.mjs", import.meta.url));
/** The Python shim, as `npm run build:shim` joins it. */
export const PYTHON_SHIM = fileURLToPath(new URL("../agent-shim/airlock.py", import.meta.url));

/** What `airlock send --json` prints for one file (the fields the benchmark reads). */
export interface SendJson {
  fileId: string;
  size: number;
  sha256: string;
  deduped: boolean;
  uploadedBytes: number;
  /** For a directory: sent as one `<dir>.tar.gz` holding `files` regular files. */
  archive?: true;
  files?: number;
}

export interface ShimSend extends Measured {
  result: SendJson;
}

export async function assertShimBuilt(): Promise<void> {
  await access(SHIM).catch(() => {
    throw new Error(`${SHIM} is missing: run \`node scripts/build-shim.mjs\` first`);
  });
}

/**
 * The shim's environment: this session, temp files in `tmpDir`, the shim's own defaults unless
 * `extra` says otherwise (no AIRLOCK_* leaks in from the benchmark's environment).
 */
export function shimEnv(
  session: Session,
  tmpDir: string,
  extra: Record<string, string> = {},
): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const name of Object.keys(env)) if (name.startsWith("AIRLOCK_")) delete env[name];
  return {
    ...env,
    AIRLOCK_URL: session.url,
    AIRLOCK_TOKEN: session.token,
    TMPDIR: tmpDir,
    ...extra,
  };
}

const installed = new Map<string, Promise<string>>();

/**
 * The shim as the README installs it, once per `tmpDir`: the bundle copied to a file named
 * `airlock` (no extension, which Node runs as CommonJS, not through its ES module loader).
 */
export function installedShim(tmpDir: string): Promise<string> {
  let path = installed.get(tmpDir);
  if (!path) {
    const bin = join(tmpDir, "bin");
    path = mkdir(bin, { recursive: true })
      .then(() => copyFile(SHIM, join(bin, "airlock")))
      .then(() => join(bin, "airlock"));
    installed.set(tmpDir, path);
  }
  return path;
}

/**
 * `airlock send <path> --json` as an agent runs it (the shim as installed, under this Node),
 * timed from spawn to exit. Its temp files go to `tmpDir`; `gzipLevel` sets
 * `AIRLOCK_GZIP_LEVEL` (the shim's default otherwise).
 */
export async function shimSend(
  meter: Meter,
  session: Session,
  path: string,
  options: { tmpDir: string; gzipLevel?: number; env?: Record<string, string> },
): Promise<ShimSend> {
  const env = shimEnv(session, options.tmpDir, options.env);
  if (options.gzipLevel !== undefined) env.AIRLOCK_GZIP_LEVEL = String(options.gzipLevel);
  const shim = await installedShim(options.tmpDir);
  const run = await meter.run(process.execPath, [shim, "send", path, "--json"], { env });
  const result = JSON.parse(run.stdout.trim().split("\n").pop()!) as SendJson;
  return { ...run, result };
}
