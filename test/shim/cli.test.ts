import { execFileSync, spawn } from "node:child_process";
import { once } from "node:events";
import {
  chmod,
  copyFile,
  link,
  mkdir,
  mkdtemp,
  readFile,
  rm,
  stat,
  writeFile,
} from "node:fs/promises";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { USAGE } from "../../agent-shim/src/cli/help";
import { RUNTIMES, SHIM, failureLine, prepareShim, runShim, type ShimResult } from "./run-shim";

const root = new URL("../..", import.meta.url);

/** Every command and its usage line, as `airlock --help` lists them. */
const COMMAND_PAGES: [string, string][] = [
  ["send", USAGE.send],
  ["get", USAGE.get],
  ["pull", USAGE.pull],
  ["request", USAGE.request],
  ["link", USAGE.link],
  ["rm", USAGE.rm],
  ["ls", USAGE.ls],
  ["tool-schema", USAGE.toolSchema],
];
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

/** `file` in `into`, readable and runnable by every user: a hard link if it is already, else a copy. */
async function shareWithEveryone(file: string, into: string): Promise<string> {
  const shared = join(into, basename(file));
  if (((await stat(file)).mode & 0o005) === 0o005) {
    const linked = await link(file, shared).then(
      () => true,
      () => false,
    );
    if (linked) return shared;
  }
  await copyFile(file, shared);
  await chmod(shared, 0o755);
  return shared;
}

/** Runs the shim in `dir` as `nobody`, from copies nobody can read wherever the clone sits. */
async function runAsNobody(
  node: string,
  args: string[],
  env: Record<string, string>,
): Promise<ShimResult> {
  const bin = await mkdtemp(join(tmpdir(), "airlock-shim-nobody-"));
  try {
    await chmod(bin, 0o755);
    const shim = await shareWithEveryone(SHIM, bin);
    const sharedNode = await shareWithEveryone(node, bin);
    const childEnv: Record<string, string | undefined> = {
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      HOME: dir,
      ...env,
    };
    const child = spawn(sharedNode, [shim, ...args], {
      cwd: dir,
      env: childEnv as NodeJS.ProcessEnv,
      uid: 65534,
      gid: 65534,
      stdio: ["ignore", "pipe", "pipe"],
      timeout: 60_000,
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on("data", (chunk: Buffer) => out.push(chunk));
    child.stderr.on("data", (chunk: Buffer) => err.push(chunk));
    const [code, signal] = (await once(child, "close")) as [number | null, NodeJS.Signals | null];
    const stdoutBytes = Buffer.concat(out);
    const stderr = Buffer.concat(err).toString("utf8");
    return {
      code,
      signal,
      stdout: stdoutBytes.toString("utf8"),
      stdoutBytes,
      stderr,
      stderrLines: stderr === "" ? [] : stderr.replace(/\n$/, "").split("\n"),
    };
  } finally {
    await rm(bin, { recursive: true, force: true });
  }
}

describe.each(RUNTIMES)("airlock under $name", ({ node }) => {
  const run = (args: string[], env: Record<string, string> = closedRelayEnv()) =>
    runShim(args, { node, env, cwd: dir });

  it("prints usage for --help and exits 0", async () => {
    const result = await run(["--help"]);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain("airlock send <path|->...");
    expect(result.stdout).toContain("AIRLOCK_TOKEN");
    expect(result.stderr).toBe("");
  });

  it.each(COMMAND_PAGES)(
    "prints only %s's help for `%s --help` and `-h`, and the whole page lists it",
    async (command, usage) => {
      const result = await run([command, "--help"]);
      expect(result.code).toBe(0);
      expect(result.stderr).toBe("");
      expect(result.stdout.startsWith(`Usage\n  ${usage}\n\n`)).toBe(true);
      expect(result.stdout).toMatch(/\nOptions\n(  .+\n)*  -h, --help  +show this help\n/);
      expect(result.stdout).toMatch(new RegExp(`\\nExample\\n  airlock ${command} .+\\n`));
      // None of the other commands' usage lines: not the whole page.
      for (const [other, otherUsage] of COMMAND_PAGES) {
        if (other !== command) expect(result.stdout).not.toContain(otherUsage);
      }
      expect(result.stdout).not.toContain("AIRLOCK_TOKEN");
      // -h, `airlock help <command>` and --help among other arguments say the same; no relay asked.
      expect((await run([command, "-h"])).stdout).toBe(result.stdout);
      expect((await run(["help", command])).stdout).toBe(result.stdout);
      expect((await run([command, "x", "--help"], {})).stdout).toBe(result.stdout);

      const whole = await run(["--help"]);
      expect(whole.stdout).toContain(`\n  ${usage}\n`);
      expect(whole.stdout.length).toBeGreaterThan(result.stdout.length);
    },
  );

  it("takes --help after -- as a path, not as a request for help", async () => {
    const result = await run(["send", "--", "--help"]);
    expect(result.code).toBe(1);
    expect(failureLine(result)).toBe("airlock: cannot read --help: no such file or directory");
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
    expect(result.stdout).toContain("airlock pull [--dir <dir>] [--wait] [--timeout <duration>]");
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

  // root reads files whatever their mode, so as root the shim runs as `nobody` instead, from
  // copies of the bundle and the Node binary in a world-readable dir: the clone itself may sit
  // where other users cannot enter (e.g. inside a `mktemp -d`).
  it("names an unreadable file", async () => {
    const locked = join(dir, "locked.txt");
    // Each Node version's run makes its own: one left by the run before cannot be opened again
    // (mode 000) by anyone but root.
    await rm(locked, { force: true });
    await writeFile(locked, "secret\n", { mode: 0o000 });
    await chmod(locked, 0o000);
    const asRoot = process.getuid?.() === 0;
    const result = asRoot
      ? await runAsNobody(node, ["send", "locked.txt"], closedRelayEnv())
      : await runShim(["send", "locked.txt"], { node, env: closedRelayEnv(), cwd: dir });
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
