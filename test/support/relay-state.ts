import { spawnSync } from "node:child_process";
import { createWriteStream, type WriteStream } from "node:fs";
import { cp, mkdir, mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

/**
 * Where a prepared local state lives (D1 with the production migrations applied), shared by
 * every relay a test run starts: the node project's global set-up makes it once and names it
 * here, so each `wrangler dev` starts from a copy instead of running `wrangler d1 migrations
 * apply` (a whole wrangler process) of its own.
 */
export const STATE_TEMPLATE_VAR = "AIRLOCK_TEST_STATE_TEMPLATE";

let ownTemplate: Promise<string> | undefined;

/** A fresh state directory for one relay: a copy of the migrated template. */
export async function freshRelayState(
  root: string,
  env: NodeJS.ProcessEnv,
  isThisCheckout: boolean,
): Promise<string> {
  // Another copy of the project (an older build, say) brings its own migrations.
  if (!isThisCheckout) return migrate(root, env);
  const template = process.env[STATE_TEMPLATE_VAR] ?? (await (ownTemplate ??= migrate(root, env)));
  const state = await mkdtemp(join(tmpdir(), "airlock-relay-"));
  await cp(template, state, { recursive: true });
  return state;
}

/** Applies the production migrations to a new local state with wrangler, as `npm start` does. */
export async function migrate(root: string, env: NodeJS.ProcessEnv): Promise<string> {
  const state = await mkdtemp(join(tmpdir(), "airlock-state-template-"));
  const wranglerBin = join(root, "node_modules/wrangler/bin/wrangler.js");
  const migrated = spawnSync(
    process.execPath,
    [wranglerBin, "d1", "migrations", "apply", "DB", "--local", "--persist-to", state],
    { cwd: root, env, encoding: "utf8" },
  );
  if (migrated.status !== 0)
    throw new Error(`migrations failed: ${migrated.stderr || migrated.stdout}`);
  return state;
}

const logDir = fileURLToPath(new URL("../../test-artifacts/relay-logs/", import.meta.url));
let logCount = 0;

/**
 * A file for one relay's whole log (wrangler's and the Worker's output): a passing run prints
 * none of it, and a failing test names the file (see `RunningRelay.logPath`).
 */
export async function relayLogFile(): Promise<{ path: string; stream: WriteStream }> {
  await mkdir(logDir, { recursive: true });
  const path = join(logDir, `relay-${process.pid}-${++logCount}-${Date.now()}.log`);
  return { path, stream: createWriteStream(path) };
}
