// `npm start` as a newcomer meets it: a second start on a taken port, and closing the terminal
// that runs it. Runs in a fresh copy of the project (its own .dev.vars and .wrangler state),
// with npm itself and, for the terminal, a real pty from util-linux `script`.
import { spawn, type ChildProcess } from "node:child_process";
import { cp, mkdtemp, readdir, readFile, rm, symlink } from "node:fs/promises";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort, portIsFree } from "../support/free-port";

const checkout = fileURLToPath(new URL("../..", import.meta.url));
let project: string;
const started: ChildProcess[] = [];

/** What a fresh clone would not have, or what this test does not need. */
const LEFT_OUT = new Set([
  ".git",
  "node_modules",
  ".wrangler",
  ".dev.vars",
  "dist",
  "test",
  "test-artifacts",
  ".cache",
]);

beforeAll(async () => {
  project = await mkdtemp(join(tmpdir(), "airlock-start-"));
  // src/ with the shim bundle prestart (here: the node project's pretest) generated into it.
  for (const entry of await readdir(checkout)) {
    if (LEFT_OUT.has(entry)) continue;
    await cp(join(checkout, entry), join(project, entry), { recursive: true });
  }
  await symlink(join(checkout, "node_modules"), join(project, "node_modules"));
});

afterAll(async () => {
  // Only what this file started: the relays' process groups (wrangler and its workerd), found
  // by the `--port` they were given.
  for (const pid of await pidsServing(ports)) {
    try {
      process.kill(-pid, "SIGKILL");
    } catch {
      // gone meanwhile
    }
  }
  for (const child of started) child.kill("SIGKILL");
  await rm(project, { recursive: true, force: true });
});

const ports: number[] = [];
async function newPort(): Promise<number> {
  const port = await freePort();
  ports.push(port);
  return port;
}

/** Processes whose command line carries `--port <port>` for one of `portList` (wrangler dev). */
async function pidsServing(portList: number[]): Promise<number[]> {
  const pids: number[] = [];
  for (const name of await readdir("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    const args = await readFile(`/proc/${name}/cmdline`, "utf8").catch(() => "");
    const argv = args.split("\0");
    const at = argv.indexOf("--port");
    if (at >= 0 && portList.includes(Number(argv[at + 1])) && argv.some((a) => a === "dev"))
      pids.push(Number(name));
  }
  return pids;
}

function listen(port: number): Promise<Server | undefined> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once("error", () => resolve(undefined));
    server.listen({ host: "127.0.0.1", port, exclusive: true }, () => resolve(server));
  });
}

/** Waits for `check`; `what` is read at the time out, so it can show what happened meanwhile. */
async function until(
  what: string | (() => string),
  ms: number,
  check: () => Promise<boolean>,
): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) {
      throw new Error(`timed out waiting until ${typeof what === "string" ? what : what()}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

const npmEnv = (port: number) => ({ ...process.env, PORT: String(port), NO_COLOR: "1" });

describe("npm start", () => {
  it("on a taken port says so in one line naming PORT=, with no stack trace", async () => {
    const port = await newPort();
    const holder = await listen(port);
    expect(holder).toBeDefined();
    try {
      // --ignore-scripts: prestart's shim build is the node project's pretest, done already.
      const child = spawn("npm", ["start", "--ignore-scripts"], {
        cwd: project,
        env: npmEnv(port),
        stdio: ["ignore", "pipe", "pipe"],
      });
      started.push(child);
      let stdout = "";
      let stderr = "";
      child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
      child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
      const code = await new Promise((resolve) => child.on("close", resolve));

      expect(code).toBe(1);
      const line =
        /^airlock: port (\d+) is taken \(another npm start\?\); run PORT=(\d+) npm start\n$/;
      expect(stderr).toMatch(line);
      const [, named, suggested] = line.exec(stderr) ?? [];
      expect(Number(named)).toBe(port);
      expect(Number(suggested)).toBeGreaterThan(port);
      expect(await portIsFree(Number(suggested))).toBe(true);
      // Nothing of the relay ran: no welcome text, no workerd, no .dev.vars written.
      expect(stdout).not.toMatch(/Airlock relay starting|kj::Exception|--port/);
      expect(await readdir(project)).not.toContain(".dev.vars");
    } finally {
      await new Promise((resolve) => holder?.close(resolve));
    }
  });

  it("stops the relay and frees its port when its terminal is closed", async () => {
    const port = await newPort();
    // A real terminal: `script` runs `npm start` on a new pty as that session's leader;
    // SIGKILL to `script` closes the pty's master, as closing a terminal window does.
    const terminal = spawn("script", ["-qfec", "npm start --ignore-scripts", "/dev/null"], {
      cwd: project,
      env: npmEnv(port),
      stdio: ["pipe", "pipe", "pipe"],
    });
    started.push(terminal);
    let screen = "";
    terminal.stdout.on("data", (chunk: Buffer) => (screen += chunk.toString()));
    terminal.stderr.on("data", (chunk: Buffer) => (screen += chunk.toString()));

    // PORT is honoured: the relay answers there.
    await until(
      () => `the relay answers on ${port}; the terminal showed:\n${screen}`,
      90_000,
      async () => {
        const health = await fetch(`http://127.0.0.1:${port}/health`, {
          signal: AbortSignal.timeout(5_000),
        }).catch(() => undefined);
        return health !== undefined;
      },
    );
    expect(screen).toContain(`Airlock relay starting on http://127.0.0.1:${port}`);
    expect(await pidsServing([port])).not.toEqual([]);

    terminal.kill("SIGKILL");
    await until(`port ${port} is free again`, 20_000, () => portIsFree(port));
    await until("no wrangler dev is left for that port", 10_000, async () => {
      return (await pidsServing([port])).length === 0;
    });
  }, 120_000);
});
