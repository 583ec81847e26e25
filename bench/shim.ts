import { access } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import type { Measured, Meter } from "./measure";
import type { Session } from "./relay-api";

/** The built shim, as `npm run build:shim` (the `prebench` script) leaves it. */
export const SHIM = fileURLToPath(new URL("../dist/airlock.mjs", import.meta.url));

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

/**
 * `node dist/airlock.mjs send <path> --json` as an agent runs it, timed from spawn to exit. Its
 * temp files go to `tmpDir`; `gzipLevel` sets `AIRLOCK_GZIP_LEVEL` (the shim's default otherwise).
 */
export async function shimSend(
  meter: Meter,
  session: Session,
  path: string,
  options: { tmpDir: string; gzipLevel?: number; env?: Record<string, string> },
): Promise<ShimSend> {
  const env = shimEnv(session, options.tmpDir, options.env);
  if (options.gzipLevel !== undefined) env.AIRLOCK_GZIP_LEVEL = String(options.gzipLevel);
  const run = await meter.run(process.execPath, [SHIM, "send", path, "--json"], { env });
  const result = JSON.parse(run.stdout.trim().split("\n").pop()!) as SendJson;
  return { ...run, result };
}
