import { execFileSync } from "node:child_process";
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RUNTIMES, failureLine, prepareShim, runShim } from "./run-shim";

const root = new URL("../..", import.meta.url);
const { version } = JSON.parse(await readFile(new URL("package.json", root), "utf8")) as {
  version: string;
};

let dir: string;
/** A relay address where nothing listens. */
let closedUrl: string;
/** A server that records every request and answers 500, to prove nothing was sent. */
let watcher: Server;
let watcherUrl: string;
const seen: string[] = [];

beforeAll(async () => {
  prepareShim();
  dir = await mkdtemp(join(tmpdir(), "airlock-shim-cli-"));
  // Readable by the unprivileged user the permission test runs as.
  await chmod(dir, 0o755);
  await writeFile(join(dir, "hello.txt"), "hello\n");
  await mkdir(join(dir, "folder"));
  execFileSync("mkfifo", [join(dir, "pipe")]);
  closedUrl = await listenAndClose();
  watcher = createServer((req, res) => {
    seen.push(`${req.method} ${req.url}`);
    res.writeHead(500).end();
  });
  await new Promise<void>((resolve) => watcher.listen(0, "127.0.0.1", resolve));
  const address = watcher.address();
  watcherUrl = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
});

afterAll(async () => {
  await new Promise((resolve) => watcher?.close(resolve));
  if (dir) await rm(dir, { recursive: true, force: true });
});

async function listenAndClose(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  await new Promise((resolve) => server.close(resolve));
  return `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
}

const closedRelayEnv = () => ({ AIRLOCK_URL: closedUrl, AIRLOCK_TOKEN: "test-token" });

describe.each(RUNTIMES)("airlock under $name", ({ node }) => {
  const run = (args: string[], env: Record<string, string> = closedRelayEnv()) =>
    runShim(args, { node, env, cwd: dir });

  it("prints usage for --help and exits 0", async () => {
    const result = await run(["--help"]);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain("airlock send <path>...");
    expect(result.stdout).toContain("AIRLOCK_TOKEN");
    expect(result.stderr).toBe("");
  });

  it("prints the package version for --version", async () => {
    const result = await run(["--version"]);
    expect(result.code).toBe(0);
    expect(result.stdout).toBe(`${version}\n`);
  });

  it("rejects an unknown option with one usage line and exit 2", async () => {
    const result = await run(["send", "hello.txt", "--frobnicate"]);
    expect(result.code).toBe(2);
    expect(failureLine(result)).toMatch(
      /^airlock: unknown option '--frobnicate'; usage: airlock send /,
    );
    expect(result.stdout).toBe("");
  });

  it("rejects an unknown command with exit 2", async () => {
    const result = await run(["frobnicate"]);
    expect(result.code).toBe(2);
    expect(failureLine(result)).toMatch(/^airlock: unknown command frobnicate/);
  });

  it("lists pull and --to in --help, without any 'not supported yet'", async () => {
    const result = await run(["--help"]);
    expect(result.stdout).toContain("airlock pull [--dir <dir>] [--json]");
    expect(result.stdout).toContain("--to <platform:id>");
    expect(result.stdout).not.toContain("not supported yet");
  });

  it("names the missing AIRLOCK_URL, and then the missing AIRLOCK_TOKEN, with exit 2", async () => {
    const noUrl = await run(["send", "hello.txt"], { AIRLOCK_TOKEN: "test-token" });
    expect(noUrl.code).toBe(2);
    expect(failureLine(noUrl)).toMatch(/^airlock: AIRLOCK_URL is not set/);
    const noToken = await run(["ls"], { AIRLOCK_URL: closedUrl });
    expect(noToken.code).toBe(2);
    expect(failureLine(noToken)).toMatch(/^airlock: AIRLOCK_TOKEN is not set/);
  });

  it("names a missing file", async () => {
    const result = await run(["send", "hello.txt", "missing.txt"]);
    expect(result.code).toBe(1);
    expect(failureLine(result)).toBe("airlock: cannot read missing.txt: no such file or directory");
  });

  // root reads files whatever their mode, so as root the shim runs as `nobody` instead.
  it("names an unreadable file", async () => {
    const locked = join(dir, "locked.txt");
    await writeFile(locked, "secret\n", { mode: 0o000 });
    await chmod(locked, 0o000);
    const asRoot = process.getuid?.() === 0;
    const result = await runShim(["send", "locked.txt"], {
      node,
      env: closedRelayEnv(),
      cwd: dir,
      ...(asRoot ? { uid: 65534, gid: 65534 } : {}),
    });
    expect(result.code).toBe(1);
    expect(failureLine(result)).toBe("airlock: cannot read locked.txt: permission denied");
  });

  it("refuses a FIFO (neither a regular file nor a directory) with exit 2", async () => {
    const result = await run(["send", "pipe"]);
    expect(result.code).toBe(2);
    expect(failureLine(result)).toBe("airlock: pipe is not a regular file or a directory");
  });

  it("refuses a malformed --to before uploading anything", async () => {
    const before = seen.length;
    const env = { AIRLOCK_URL: watcherUrl, AIRLOCK_TOKEN: "test-token" };
    const result = await run(["send", "hello.txt", "--to", "telegram:12345", "--to", "tg:1"], env);
    expect(result.code).toBe(2);
    expect(failureLine(result)).toMatch(/^airlock: --to tg:1 is not telegram:<chatId>, /);
    expect(seen.slice(before)).toEqual([]);
  });

  it("names an unreachable relay on pull, with exit 1 and nothing written", async () => {
    const env = { ...closedRelayEnv(), AIRLOCK_RETRIES: "1" };
    const result = await run(["pull", "--dir", "pulled"], env);
    expect(result.code).toBe(1);
    expect(failureLine(result)).toBe(
      `airlock: cannot reach relay at ${closedUrl}: connection refused (after 1 attempt)`,
    );
    expect(result.stdout).toBe("");
  });

  it("gives up on a relay that is down after the configured attempts", async () => {
    const env = { ...closedRelayEnv(), AIRLOCK_RETRIES: "2", AIRLOCK_RETRY_BASE_MS: "10" };
    const result = await run(["send", "hello.txt"], env);
    expect(result.code).toBe(1);
    expect(failureLine(result)).toBe(
      `airlock: cannot reach relay at ${closedUrl}: connection refused (after 2 attempts)`,
    );
    expect(result.stdout).toBe("");
  });
});
