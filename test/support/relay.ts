import { spawn, type ChildProcess } from "node:child_process";
import { rm } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { freePort } from "./free-port";
import { freshRelayState, relayLogFile } from "./relay-state";

const checkout = fileURLToPath(new URL("../..", import.meta.url));

export const TEST_ADMIN_TOKEN = "e2e-admin-token";
const TEST_SIGNING_KEY = "e2e-signing-key-0123456789abcdef0123";

export interface RunningRelay {
  url: string;
  /** The process group of wrangler and its workerd (for measurements). */
  processGroup: number;
  adminToken: string;
  /** The last 64 KiB of what wrangler and the Worker logged (to explain a failure). */
  output(): string;
  /** The file holding everything wrangler and the Worker logged. */
  logPath: string;
  mintSession(body?: object): Promise<{ sessionId: string; token: string; expiresAt: string }>;
  /**
   * Kills the relay with SIGKILL at once (no clean shutdown: as a crash would) and starts it
   * again on the same port and local state (D1, R2; the local queue's messages are not kept).
   */
  crashAndRestart(): Promise<void>;
  /** Runs the Cron Trigger's handler now (wrangler dev's `/__scheduled`). */
  runScheduled(): Promise<void>;
  stop(): Promise<void>;
}

export interface RelayOptions {
  storage?: "r2" | "s3";
  /** Extra Worker vars (S3_* for the s3 backend, limits, TTLs). */
  vars?: Record<string, string>;
  /** The copy of the project `wrangler dev` runs from; default this checkout. */
  root?: string;
}

/**
 * Runs the relay as a user would: `wrangler dev` in the real Workers runtime, on its own
 * local R2/D1 state in a temp dir, with the production migrations applied.
 */
export async function startRelay(options: RelayOptions = {}): Promise<RunningRelay> {
  const root = options.root ?? checkout;
  const wranglerBin = join(root, "node_modules/wrangler/bin/wrangler.js");
  const env = {
    ...process.env,
    CLOUDFLARE_CF_FETCH_ENABLED: "false",
    WRANGLER_SEND_METRICS: "false",
    NO_COLOR: "1",
    // No DevTools proxy. wrangler's InspectorProxyWorker turns on the runtime's Network domain and
    // posts every DevTools event to wrangler's Node process as its own HTTP request, and workerd
    // sends a `Network.dataReceived` per 4 KiB of every subrequest body: reading 72 MiB back from
    // S3 made 18,432 of them, and the connections piled up in workerd until "Too many open files".
    // wrangler 4 has no flag for it; this variable (set by VS Code's debug terminal) is what its
    // ProxyController checks (`inspectorEnabled`) before starting that proxy.
    VSCODE_INSPECTOR_OPTIONS: "{}",
  };
  // Each relay its own local R2/D1, migrated (a copy of the run's migrated template).
  const state = await freshRelayState(root, env, root === checkout);

  const vars = {
    AIRLOCK_ADMIN_TOKEN: TEST_ADMIN_TOKEN,
    AIRLOCK_SIGNING_KEY: TEST_SIGNING_KEY,
    STORAGE: options.storage ?? "r2",
    ...options.vars,
  };
  const argsFor = (port: number, inspectorPort: number) => {
    const args = [wranglerBin, "dev", "--ip", "127.0.0.1", "--port", String(port)];
    args.push("--persist-to", state, "--inspector-port", String(inspectorPort));
    args.push("--show-interactive-dev-session=false", "--test-scheduled");
    for (const [key, value] of Object.entries(vars)) args.push("--var", `${key}:${value}`);
    return args;
  };
  // The whole log goes to a file a failing test can name; only the tail is kept in memory.
  const logFile = await relayLogFile();
  let output = "";
  const keep = (chunk: Buffer) => {
    logFile.stream.write(chunk);
    output = (output + chunk.toString()).slice(-64 * 1024);
  };
  let args: string[] = [];
  const launch = () => {
    // Its own process group: stopping the group also stops workerd, which holds the port.
    const started = spawn(process.execPath, args, {
      cwd: root,
      env,
      detached: true,
      stdio: ["ignore", "pipe", "pipe"],
    });
    started.stdout?.on("data", keep);
    started.stderr?.on("data", keep);
    return started;
  };

  let url = "";
  let child!: ChildProcess;
  const stop = async () => {
    await stopGroup(child);
    logFile.stream.end();
    await rm(state, { recursive: true, force: true });
  };
  // A port found free can be taken (by another test's outgoing connection, say) before
  // wrangler binds it: then it starts again on other ports.
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    args = argsFor(port, await freePort());
    url = `http://127.0.0.1:${port}`;
    output = "";
    child = launch();
    try {
      await waitForHealth(url, child, () => output);
      break;
    } catch (error) {
      await stopGroup(child);
      if (attempt < 3 && /address already in use/i.test(output)) continue;
      await stop();
      throw error;
    }
  }
  return {
    url,
    get processGroup() {
      return child.pid ?? 0;
    },
    async crashAndRestart() {
      const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
      process.kill(-child.pid!, "SIGKILL");
      await exited;
      child = launch();
      await waitForHealth(url, child, () => output);
    },
    async runScheduled() {
      const response = await fetch(`${url}/__scheduled?cron=${encodeURIComponent("17 * * * *")}`);
      if (!response.ok) throw new Error(`scheduled run failed: ${response.status}`);
    },
    adminToken: TEST_ADMIN_TOKEN,
    logPath: logFile.path,
    output: () => output,
    mintSession: (body = {}) => mintSessionAt(url, body),
    stop,
  };
}

/** Mints a session on the relay at `url` with the tests' operator token. */
export async function mintSessionAt(
  url: string,
  body: object = {},
): Promise<{ sessionId: string; token: string; expiresAt: string }> {
  const response = await fetch(`${url}/v1/sessions`, {
    method: "POST",
    headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  if (response.status !== 201)
    throw new Error(`mint failed: ${response.status} ${await response.text()}`);
  return (await response.json()) as { sessionId: string; token: string; expiresAt: string };
}

export async function waitForHealth(
  url: string,
  child: ChildProcess,
  output: () => string,
): Promise<void> {
  const deadline = Date.now() + 90_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null)
      throw new Error(`wrangler dev exited (${child.exitCode}):\n${output()}`);
    try {
      // A request caught by a restart can hang; a bounded wait keeps polling instead.
      const response = await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(10_000) });
      if (response.ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  throw new Error(`wrangler dev did not become healthy at ${url}:\n${output()}`);
}

export async function stopGroup(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.pid === undefined) return;
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const kill = (signal: NodeJS.Signals) => {
    try {
      process.kill(-child.pid!, signal);
    } catch {
      // already gone
    }
  };
  kill("SIGTERM");
  const timer = setTimeout(() => kill("SIGKILL"), 5000);
  await exited;
  clearTimeout(timer);
  kill("SIGKILL");
}
