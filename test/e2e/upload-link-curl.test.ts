import { spawn } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { mkdtemp, readFile, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startStrictS3, type StrictS3 } from "../fixtures/s3/strict-s3";
import { prepareShim, relayEnv, runShim } from "../shim/run-shim";
import { POSIX_SHIM, processEnv, PYTHON_SHIM, required } from "../shim/shims";
import { collectRun } from "../shim/run-shim";
import { startRelay, type RunningRelay } from "../support/relay";
import { s3Vars } from "../support/s3-vars";
import { sharedRelay } from "../support/shared-relay";

const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");

/** Runs curl as a person would in `cwd`: its exit code and what it printed. */
function curl(args: string[], cwd: string, stdin?: Uint8Array) {
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
    const child = spawn("curl", ["-sS", ...args], { cwd, stdio: ["pipe", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(stdin ? Buffer.from(stdin) : undefined);
  });
}

/**
 * What a newcomer does with an upload link from a terminal, on both backends: runs the command
 * `airlock request` (Node, Python and POSIX shims) and the upload page show, with real curl against
 * `wrangler dev`. The file keeps its name (curl's trailing-slash form and an explicit name,
 * hostile names cleaned), the request's hint is the fallback, the bytes arrive intact, every
 * answer ends with a newline, and a refused upload makes curl exit non-zero with the reason.
 */
describe.each(["r2", "s3"] as const)("upload links from curl (wrangler dev, %s)", (backend) => {
  let s3: StrictS3 | undefined;
  let relay: RunningRelay;
  let dir: string;

  beforeAll(async () => {
    prepareShim();
    if (backend === "r2") relay = sharedRelay();
    else {
      s3 = await startStrictS3();
      relay = await startRelay({ storage: "s3", vars: s3Vars(s3) });
    }
    dir = await mkdtemp(join(tmpdir(), `airlock-link-curl-${backend}-`));
  }, 120_000);
  afterAll(async () => {
    await relay?.stop();
    await s3?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("runs the shown command: the name is kept, the hint is the fallback, refusals exit 22", async () => {
    const { token } = await relay.mintSession();
    const env = relayEnv(relay.url, token);

    // The command as `airlock request` shows it, the link alone on stdout.
    const asked = await runShim(["request", "--name", "quarterly data"], { env });
    expect(asked.code, asked.stderr).toBe(0);
    const link = asked.stdout.trim();
    expect(asked.stdout).toBe(`${link}\n`);
    expect(asked.stderrLines).toEqual([
      `from a terminal: curl --fail-with-body -T <file> ${link}/`,
    ]);
    // The Python shim shows the same command; the page shows it too.
    const python = spawn("python3", [PYTHON_SHIM, "request"], {
      env: processEnv({ PATH: process.env.PATH, ...env }),
      stdio: ["ignore", "pipe", "pipe"],
    });
    const fromPython = await collectRun(python);
    expect(fromPython.code, fromPython.stderr).toBe(0);
    const pythonLink = fromPython.stdout.trim();
    expect(fromPython.stderrLines).toEqual([
      `from a terminal: curl --fail-with-body -T <file> ${pythonLink}/`,
    ]);
    const page = await (await fetch(link)).text();
    expect(page).toContain(
      `<pre id="curl-command">curl --fail-with-body -T &lt;file&gt; ${link}/</pre>`,
    );

    // 1. The shown command, `<file>` replaced: curl puts the file's name after the slash.
    const report = randomBytes(300_000);
    await writeFile(join(dir, "report.csv"), report);
    const shown = asked.stderrLines[0]!.replace("from a terminal: ", "").split(" ");
    const sent = await curl(
      shown.slice(1).map((a) => (a === "<file>" ? "report.csv" : a)),
      dir,
    );
    expect(sent.code, sent.stderr).toBe(0);
    expect(sent.stdout.endsWith("}\n")).toBe(true);
    expect(JSON.parse(sent.stdout)).toEqual({
      name: "report.csv",
      size: report.byteLength,
      sha256: sha256(report),
    });

    // 2. A name given in the path, and a hostile one, cleaned by the name rule.
    const named = randomBytes(1000);
    await writeFile(join(dir, "local.bin"), named);
    const renamed = await curl(
      ["--fail-with-body", "-T", "local.bin", `${pythonLink}/my%20report%20(v2).csv`],
      dir,
    );
    expect(renamed.code, renamed.stderr).toBe(0);
    expect(JSON.parse(renamed.stdout)).toMatchObject({ name: "my report (v2).csv" });
    // The POSIX shim's request (dash): the same two lines.
    const posix = spawn(required("dash"), [POSIX_SHIM, "request", "--max-bytes", "1M"], {
      env: processEnv({ PATH: process.env.PATH, ...env }),
      stdio: ["ignore", "pipe", "pipe"],
    });
    const fromPosix = await collectRun(posix);
    expect(fromPosix.code, fromPosix.stderr).toBe(0);
    const hostileLink = fromPosix.stdout.trim();
    expect(fromPosix.stdout).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/u\/[A-Za-z0-9_-]{43}\n$/);
    expect(fromPosix.stderrLines).toEqual([
      `from a terminal: curl --fail-with-body -T <file> ${hostileLink}/`,
    ]);
    const hostile = await curl(
      [
        "--fail-with-body",
        "-T",
        "local.bin",
        `${hostileLink}/..%2F..%2Fetc%2Fpass%E2%80%AEwd%0A.txt`,
      ],
      dir,
    );
    expect(hostile.code, hostile.stderr).toBe(0);
    expect(JSON.parse(hostile.stdout)).toMatchObject({ name: "passwd.txt" });

    // 3. No name (`curl -T -` reads stdin): the request's hint.
    const hinted = await runShim(["request", "--name", "quarterly data"], { env });
    const piped = await curl(["--fail-with-body", "-T", "-", hinted.stdout.trim()], dir, named);
    expect(piped.code, piped.stderr).toBe(0);
    expect(JSON.parse(piped.stdout)).toMatchObject({ name: "quarterly data" });

    // 4. Over the link's --max-bytes: curl exits 22 and prints the relay's reason, one line.
    const small = await runShim(["request", "--max-bytes", "1K"], { env });
    const big = randomBytes(2048);
    await writeFile(join(dir, "big.bin"), big);
    const refused = await curl(
      ["--fail-with-body", "-T", "big.bin", `${small.stdout.trim()}/`],
      dir,
    );
    expect(refused.code).toBe(22);
    expect(refused.stdout).toBe(
      `${JSON.stringify({
        error: {
          code: "payload_too_large",
          message: "the file is 2048 bytes; this upload link takes at most 1024 bytes",
        },
      })}\n`,
    );
    // A used link refuses again, also ending with a newline.
    const again = await curl(["--fail-with-body", "-T", "report.csv", `${link}/`], dir);
    expect(again.code).toBe(22);
    expect(JSON.parse(again.stdout)).toMatchObject({ error: { code: "link_exhausted" } });
    expect(again.stdout.endsWith("\n")).toBe(true);

    // What arrived, byte for byte, and nothing of the refused upload.
    const into = join(dir, `pulled-${backend}`);
    const pulled = await runShim(["pull", "--dir", into], { env });
    expect(pulled.code, pulled.stderr).toBe(0);
    const names = (await readdir(into)).sort();
    expect(names).toEqual(["my report (v2).csv", "passwd.txt", "quarterly data", "report.csv"]);
    expect(sha256(await readFile(join(into, "report.csv")))).toBe(sha256(report));
    for (const name of names.slice(0, 3))
      expect(sha256(await readFile(join(into, name)))).toBe(sha256(named));
  }, 120_000);
});
