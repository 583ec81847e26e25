/**
 * The relay as it stands when a bench starts, run by `wrangler dev` from a copy of the files it
 * is built from. `wrangler dev` reloads its Worker whenever a file under the watched `src/` is
 * written (wrangler.toml's custom build watches that directory), and answers `503` to every
 * request in flight then; a long bench run from the working checkout meets every edit, format
 * and `npm run build:shim` made there meanwhile. Run from a copy, it measures one build of the
 * relay, and nothing written to the checkout reloads it.
 */
import { spawn, spawnSync } from "node:child_process";
import { cp, mkdtemp, rm, symlink } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { TEST_ADMIN_TOKEN, freePort, stopGroup, waitForHealth } from "../test/support/relay";

const root = fileURLToPath(new URL("..", import.meta.url));
/** What `wrangler dev` builds the Worker from and configures it with. */
const BUILT_FROM = ["src", "migrations", "wrangler.toml", "package.json", "tsconfig.json"];
const SIGNING_KEY = "bench-signing-key-0123456789abcdef0123";

export interface SnapshotRelay {
  url: string;
  /** The process group of wrangler and its workerd (for measurements). */
  processGroup: number;
  /** The last 64 KiB of what wrangler and the Worker logged. */
  output(): string;
  mintSession(body?: object): Promise<{ token: string }>;
  stop(): Promise<void>;
}

export async function startSnapshotRelay(
  vars: Record<string, string> = {},
): Promise<SnapshotRelay> {
  const dir = await mkdtemp(join(tmpdir(), "airlock-relay-snapshot-"));
  for (const name of BUILT_FROM) await cp(join(root, name), join(dir, name), { recursive: true });
  await symlink(join(root, "node_modules"), join(dir, "node_modules"));
  const wrangler = join(dir, "node_modules/wrangler/bin/wrangler.js");
  const state = join(dir, ".state");
  const env = {
    ...process.env,
    CLOUDFLARE_CF_FETCH_ENABLED: "false",
    WRANGLER_SEND_METRICS: "false",
    NO_COLOR: "1",
  };
  const migrate = spawnSync(
    process.execPath,
    [wrangler, "d1", "migrations", "apply", "DB", "--local", "--persist-to", state],
    { cwd: dir, env, encoding: "utf8" },
  );
  if (migrate.status !== 0) {
    await rm(dir, { recursive: true, force: true });
    throw new Error(`migrations failed: ${migrate.stderr || migrate.stdout}`);
  }
  const port = await freePort();
  const allVars = {
    AIRLOCK_ADMIN_TOKEN: TEST_ADMIN_TOKEN,
    AIRLOCK_SIGNING_KEY: SIGNING_KEY,
    STORAGE: "r2",
    ...vars,
  };
  const args = [wrangler, "dev", "--ip", "127.0.0.1", "--port", String(port)];
  args.push("--persist-to", state, "--inspector-port", String(await freePort()));
  args.push("--show-interactive-dev-session=false");
  for (const [key, value] of Object.entries(allVars)) args.push("--var", `${key}:${value}`);
  let output = "";
  const keep = (chunk: Buffer) => (output = (output + chunk.toString()).slice(-64 * 1024));
  // Its own process group: stopping the group also stops workerd, which holds the port.
  const child = spawn(process.execPath, args, {
    cwd: dir,
    env,
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
  });
  child.stdout.on("data", keep);
  child.stderr.on("data", keep);
  const url = `http://127.0.0.1:${port}`;
  const stop = async () => {
    await stopGroup(child);
    await rm(dir, { recursive: true, force: true });
  };
  try {
    await waitForHealth(url, child, () => output);
  } catch (error) {
    await stop();
    throw error;
  }
  return {
    url,
    processGroup: child.pid ?? 0,
    output: () => output,
    async mintSession(body = {}) {
      const response = await fetch(`${url}/v1/sessions`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${TEST_ADMIN_TOKEN}`,
          "content-type": "application/json",
        },
        body: JSON.stringify(body),
      });
      if (response.status !== 201)
        throw new Error(`mint failed: ${response.status} ${await response.text()}`);
      return (await response.json()) as { token: string };
    },
    stop,
  };
}
