// The POSIX fallback shim (agent-shim/airlock.sh), as the relay serves it at GET /shim/airlock.sh,
// run under dash and busybox sh against the real relay (`wrangler dev`).
import { spawn, spawnSync } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { mkdir, mkdtemp, readFile, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../support/free-port";
import type { RunningRelay } from "../support/relay";
import { seedInbox } from "../support/seed-inbox";
import { sharedRelay } from "../support/shared-relay";
import { busyboxOnlyPath, required } from "./shims";

const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");

interface Shell {
  name: string;
  argv: string[];
  /** PATH for the script (only busybox applets and curl for the busybox-only run). */
  path?: string;
}

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** dash and busybox sh with the system's tools, then busybox sh with busybox's tools and curl. */
const SHELLS = ["dash", "busybox sh", "busybox sh + busybox applets"] as const;

let relay: RunningRelay;
let root: string;
let script: string;
const shells: Shell[] = [];

beforeAll(async () => {
  const dash = required("dash");
  const busybox = required("busybox");
  required("curl");
  root = await mkdtemp(join(tmpdir(), "airlock-posix-shim-"));
  const bin = await busyboxOnlyPath(root, busybox, required("curl"));
  shells.push(
    { name: SHELLS[0], argv: [dash] },
    { name: SHELLS[1], argv: [busybox, "sh"] },
    { name: SHELLS[2], argv: [busybox, "sh"], path: bin },
  );

  relay = sharedRelay();
  const response = await fetch(`${relay.url}/shim/airlock.sh`);
  expect(response.status).toBe(200);
  expect(response.headers.get("content-type")).toMatch(/^text\/x-shellscript/);
  const source = await response.text();
  expect(source.startsWith("#!/bin/sh\n")).toBe(true);
  script = join(root, "airlock.sh");
  await writeFile(script, source, { mode: 0o755 });
});

afterAll(async () => {
  await relay?.stop();
  if (root) await rm(root, { recursive: true, force: true });
});

function run(shell: Shell, args: string[], env: Record<string, string>, cwd = root): Promise<Run> {
  // Nothing leaks in from the test runner.
  const childEnv: Record<string, string | undefined> = {
    PATH: shell.path ?? process.env.PATH ?? "",
    HOME: root,
    TMPDIR: root,
    ...env,
  };
  return new Promise((resolve, reject) => {
    const child = spawn(shell.argv[0]!, [...shell.argv.slice(1), script, ...args], {
      cwd,
      env: childEnv as NodeJS.ProcessEnv,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    child.once("error", reject);
    child.once("close", (code) => resolve({ code, stdout, stderr }));
  });
}

/** A failure: non-zero exit, nothing on stdout, exactly one `airlock: ...` line on stderr. */
function expectFailure(result: Run, code: number, pattern: RegExp): void {
  expect(result.stdout).toBe("");
  expect(result.stderr).toMatch(/^airlock: [^\n]+\n$/);
  expect(result.stderr).toMatch(pattern);
  expect(result.code).toBe(code);
}

async function seed(sessionId: string, name: string, bytes: Uint8Array): Promise<void> {
  await seedInbox(relay, sessionId, name, bytes);
}

async function files(token: string): Promise<{ name: string; sha256: string; deduped: boolean }[]> {
  const response = await fetch(`${relay.url}/v1/files`, {
    headers: { authorization: `Bearer ${token}` },
  });
  expect(response.status).toBe(200);
  return (
    (await response.json()) as { files: { name: string; sha256: string; deduped: boolean }[] }
  ).files;
}

async function download(url: string): Promise<Buffer> {
  const response = await fetch(url);
  expect(response.status).toBe(200);
  return Buffer.from(await response.arrayBuffer());
}

describe("served script", () => {
  it("is POSIX sh: dash and busybox parse it", () => {
    for (const argv of [
      [required("dash"), "-n"],
      [required("busybox"), "sh", "-n"],
    ]) {
      const check = spawnSync(argv[0]!, [...argv.slice(1), script], { encoding: "utf8" });
      expect(check.stderr).toBe("");
      expect(check.status).toBe(0);
    }
  });
});

describe.each(SHELLS.map((name, index) => ({ name, index })))(
  "airlock.sh under $name",
  ({ index }) => {
    let shell: Shell;
    let env: Record<string, string>;
    let sessionId: string;
    let work: string;

    beforeAll(async () => {
      shell = shells[index]!;
      const session = await relay.mintSession();
      sessionId = session.sessionId;
      env = { AIRLOCK_URL: relay.url, AIRLOCK_TOKEN: session.token };
      work = await mkdtemp(join(root, "work-"));
    });

    const airlock = (args: string[], extra: Record<string, string> = {}) =>
      run(shell, args, { ...env, ...extra }, work);

    it("prints --version and --help; usage errors exit 2", async () => {
      const version = await airlock(["--version"]);
      expect(version).toEqual({ code: 0, stdout: "0.1.0\n", stderr: "" });
      const help = await airlock(["--help"]);
      expect(help.code).toBe(0);
      expect(help.stdout).toContain("airlock send [--json] <file>");
      expect(help.stdout).toContain("(default: $AIRLOCK_INBOX_DIR when it is set, else");
      expectFailure(await airlock([]), 2, /command/);
      expectFailure(await airlock(["frobnicate"]), 2, /unknown command: frobnicate/);
      expectFailure(await airlock(["send"]), 2, /send needs a file/);
      expectFailure(await airlock(["pull", "--dir"]), 2, /--dir needs a directory/);
      expectFailure(await airlock(["pull"], { AIRLOCK_URL: "" }), 2, /AIRLOCK_URL is not set/);
    });

    it("sends binary bytes byte-exact, and a re-send is a dedup hit", async () => {
      const bytes = randomBytes(1024 * 1024 + 7);
      const path = join(work, "blob.bin");
      await writeFile(path, bytes);

      const first = await airlock(["send", path]);
      expect(first.stderr).toBe("");
      expect(first.code).toBe(0);
      expect(first.stdout).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/d\/\S+\n$/);
      expect(sha256(await download(first.stdout.trim()))).toBe(sha256(bytes));

      const again = await airlock(["send", "blob.bin"]);
      expect(again.stderr).toBe("");
      expect(again.code).toBe(0);
      expect(sha256(await download(again.stdout.trim()))).toBe(sha256(bytes));
      const records = (await files(env.AIRLOCK_TOKEN!)).filter((f) => f.sha256 === sha256(bytes));
      expect(records.map((f) => f.deduped).sort()).toEqual([false, true]);
    });

    it("sends a file whose name has spaces and UTF-8", async () => {
      const name = `résumé final ${index} 📄.txt`;
      const bytes = Buffer.from(`hello from ${shell.name}\n`.repeat(100));
      await writeFile(join(work, name), bytes);
      const result = await airlock(["send", `./${name}`]);
      expect(result.stderr).toBe("");
      expect(result.code).toBe(0);
      const response = await fetch(result.stdout.trim());
      expect(response.headers.get("content-disposition")).toContain(
        `filename*=UTF-8''${encodeURIComponent(name)}`,
      );
      expect(sha256(Buffer.from(await response.arrayBuffer()))).toBe(sha256(bytes));
      expect((await files(env.AIRLOCK_TOKEN!)).map((f) => f.name)).toContain(name);
    });

    it("refuses a name it would have to escape, a missing file, a bad token, a relay down", async () => {
      await writeFile(join(work, 'say "hi".txt'), "hi");
      expectFailure(await airlock(["send", 'say "hi".txt']), 1, /quote, a backslash or a control/);
      expectFailure(await airlock(["send", "nope.bin"]), 1, /^airlock: no such file: nope\.bin\n$/);
      expectFailure(await airlock(["send", work]), 1, /is a directory/);

      await writeFile(join(work, "small.txt"), "small");
      const badToken = await airlock(["send", "small.txt"], { AIRLOCK_TOKEN: "not-a-token" });
      expectFailure(badToken, 1, /invalid_token/);
      expectFailure(
        await airlock(["pull", "--dir", work], { AIRLOCK_TOKEN: "x" }),
        1,
        /invalid_token/,
      );

      const down = `http://127.0.0.1:${await freePort()}`;
      const unreachable = await airlock(["send", "small.txt"], {
        AIRLOCK_URL: down,
        AIRLOCK_RETRIES: "2",
      });
      expectFailure(unreachable, 1, /relay unreachable at http:\/\/127\.0\.0\.1:\d+ .*2 attempt/);
    });

    it("pulls the inbox byte-exact, once, never overwriting", async () => {
      const dir = join(work, "uploads");
      await mkdir(dir);
      await writeFile(join(dir, "notes.txt"), "already here");
      const report = randomBytes(42_000);
      const notes = Buffer.from("remember the milk\n".repeat(20));
      await seed(sessionId, "report.bin", report);
      await seed(sessionId, "notes.txt", notes);

      const first = await airlock(["pull", "--dir", dir]);
      expect(first.stderr).toBe("");
      expect(first.code).toBe(0);
      expect(first.stdout).toBe(
        `[User uploaded: report.bin (41 KiB) at ${join(dir, "report.bin")}]\n` +
          `[User uploaded: notes.txt (360 B) at ${join(dir, "notes (1).txt")}]\n`,
      );
      expect(sha256(await readFile(join(dir, "report.bin")))).toBe(sha256(report));
      expect(sha256(await readFile(join(dir, "notes (1).txt")))).toBe(sha256(notes));
      expect(await readFile(join(dir, "notes.txt"), "utf8")).toBe("already here");
      expect((await readdir(dir)).sort()).toEqual(["notes (1).txt", "notes.txt", "report.bin"]);

      const second = await airlock(["pull", "--dir", dir]);
      expect(second).toEqual({ code: 0, stdout: "", stderr: "nothing new in the inbox\n" });
    });

    it("pulls a UTF-8 name and creates a missing --dir", async () => {
      // A session of its own: what an earlier test left in the shared inbox would be pulled too.
      const own = await relay.mintSession();
      const ownEnv = { AIRLOCK_TOKEN: own.token };
      const dir = join(work, "new", "dir");
      const bytes = randomBytes(1000);
      await seed(own.sessionId, "données été.csv", bytes);
      const result = await airlock(["pull", `--dir=${dir}`], ownEnv);
      expect(result.stderr).toBe("");
      expect(result.stdout).toBe(
        `[User uploaded: données été.csv (1000 B) at ${join(dir, "données été.csv")}]\n`,
      );
      expect(result.code).toBe(0);
      expect(sha256(await readFile(join(dir, "données été.csv")))).toBe(sha256(bytes));

      // A bidi override (the name would read as "evilexe.txt") is dropped, as the Node shim does.
      await seed(own.sessionId, "evil\u202etxt.exe", bytes);
      const bidi = await airlock(["pull", `--dir=${dir}`], ownEnv);
      expect(bidi.stdout).toBe(
        `[User uploaded: eviltxt.exe (1000 B) at ${join(dir, "eviltxt.exe")}]\n`,
      );
      expect(bidi.code).toBe(0);
    });
  },
);
