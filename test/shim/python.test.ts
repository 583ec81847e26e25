// The Python shim (agent-shim/airlock.py) beyond the contract suite: installed with the README's
// line in an image with only Python, and run under every python3 found (3.8 when installed),
// against the run's shared relay. Its extraction, word for word the Node shim's, is in
// python-extract.test.ts.
import { spawnSync } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { mkdtemp, readFile, stat, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { type RunningRelay } from "../support/relay";
import { seedInbox } from "../support/seed-inbox";
import { sharedRelay } from "../support/shared-relay";
import { pythonAndNode } from "./python-drivers";
import { relayEnv } from "./run-shim";
import { processEnv, pythonOnlyPath, runDriver, which, type ShimDriver } from "./shims";
import { buildTree, listTree, systemTar } from "./tar-trees";

const root = fileURLToPath(new URL("../..", import.meta.url));
const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");

const shims = pythonAndNode("airlock-python-");

describe("the Python shim in an image with only Python", () => {
  let relay: RunningRelay;

  beforeAll(async () => {
    relay = sharedRelay();
  }, 120_000);
  afterAll(async () => {
    await relay?.stop();
  });

  it("has neither node nor curl on its PATH", () => {
    const check = spawnSync(
      "python3",
      ["-c", "import shutil; print(shutil.which('node'), shutil.which('curl'))"],
      { env: processEnv({ PATH: shims.python.path }), encoding: "utf8" },
    );
    expect(check.stdout).toBe("None None\n");
  });

  it("installs with the README's line (python3 and chmod only) and runs", async () => {
    const readme = await readFile(join(root, "README.md"), "utf8");
    const line = /^python3 -c .*shim\/airlock\.py.*$/m.exec(readme)?.[0];
    expect(line).toBeDefined();
    // The exact line, with only its destination moved out of the system's bin directory.
    expect(line!.split("/usr/local/bin/airlock")).toHaveLength(3);
    const home = await mkdtemp(join(shims.scratch, "install-"));
    const target = join(home, "airlock");
    const bin = await pythonOnlyPath(home);
    for (const tool of ["sh", "chmod", "env"]) await symlink(which(tool)!, join(bin, tool));
    const install = spawnSync("sh", ["-c", line!.split("/usr/local/bin/airlock").join(target)], {
      env: processEnv({ PATH: bin, HOME: home, AIRLOCK_URL: relay.url }),
      encoding: "utf8",
    });
    expect(install.stderr).toBe("");
    expect(install.status).toBe(0);
    expect((await stat(target)).mode & 0o111).toBe(0o111);
    const served = await (await fetch(`${relay.url}/shim/airlock.py`)).text();
    expect(await readFile(target, "utf8")).toBe(served);

    const { version } = JSON.parse(await readFile(join(root, "package.json"), "utf8")) as {
      version: string;
    };
    const session = await relay.mintSession();
    const env = processEnv({
      PATH: bin,
      HOME: home,
      AIRLOCK_URL: relay.url,
      AIRLOCK_TOKEN: session.token,
    });
    const shown = spawnSync(target, ["--version"], { env, encoding: "utf8" });
    expect(shown).toMatchObject({ status: 0, stdout: `${version}\n`, stderr: "" });
    const bytes = randomBytes(100_000);
    await writeFile(join(home, "x.bin"), bytes);
    const sent = spawnSync(target, ["send", "x.bin"], { env, cwd: home, encoding: "utf8" });
    expect(sent.stderr).toBe("");
    expect(sent.status).toBe(0);
    const got = await fetch(sent.stdout.trim());
    expect(sha256(Buffer.from(await got.arrayBuffer()))).toBe(sha256(bytes));
  }, 120_000);

  it("is served with its content type and the shim version header", async () => {
    const response = await fetch(`${relay.url}/shim/airlock.py`);
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("text/x-python; charset=utf-8");
    expect(response.headers.get("x-airlock-shim-version")).toMatch(/^\d+\.\d+\.\d+/);
    expect((await response.text()).startsWith("#!/usr/bin/env python3\n")).toBe(true);
  });
});

/** The real binary behind a python on PATH, or undefined when there is none that runs. */
function runnable(name: string): string | undefined {
  const path = which(name);
  if (path === undefined) return undefined;
  const probe = spawnSync(path, ["-c", "import sys; print(sys.executable)"], { encoding: "utf8" });
  return probe.status === 0 ? probe.stdout.trim() : undefined;
}

/** python3, and python3.8 (the oldest supported) where it is installed. */
const PYTHONS = ["python3", "python3.8"].filter((name) => runnable(name) !== undefined);

describe.each(PYTHONS)("the Python shim under %s", (interpreter) => {
  // The run's shared relay, a session of each case's own.
  let relay: RunningRelay;
  let session: { sessionId: string; token: string };
  let driver: ShimDriver;
  let work: string;

  beforeAll(async () => {
    relay = sharedRelay();
    const bin = await mkdtemp(join(shims.scratch, "bin-"));
    await symlink(runnable(interpreter)!, join(bin, "python3"));
    driver = { ...shims.python, path: bin };
  });
  beforeEach(async () => {
    session = await relay.mintSession();
    work = await mkdtemp(join(shims.scratch, "work-"));
  });

  const airlock = (args: string[], extra: Record<string, string> = {}) =>
    runDriver(driver, args, {
      env: { ...relayEnv(relay.url, session.token), ...extra },
      cwd: work,
      home: work,
    });

  /** A file's bytes as the relay serves them to the session. */
  const content = async (fileId: string) => {
    const response = await fetch(`${relay.url}/v1/files/${fileId}/content`, {
      headers: { authorization: `Bearer ${session.token}` },
    });
    expect(response.status).toBe(200);
    return Buffer.from(await response.arrayBuffer());
  };

  it("sends text gzipped, a directory as a .tar.gz, and pulls both back", async () => {
    const text = Buffer.from("all work and no play\n".repeat(20_000));
    await writeFile(join(work, "text.txt"), text);
    const tree = await buildTree(work, "proj", true);
    const sent = await airlock(["send", "--json", "text.txt", tree]);
    expect(sent.stderr).toBe("");
    expect(sent.code).toBe(0);
    type Sent = { uploadedBytes: number; fileId: string; size: number; files?: number };
    const [file, dir] = sent.stdout
      .trimEnd()
      .split("\n")
      .map((line) => JSON.parse(line) as Sent);
    // The text went up gzipped; the archive, gzipped already, as it is.
    expect(file!.uploadedBytes).toBeLessThan(text.length / 10);
    expect(dir!.files).toBe(6);
    expect(dir!.uploadedBytes).toBe(dir!.size);
    expect(sha256(await content(file!.fileId))).toBe(sha256(text));

    await seedInbox(relay, session.sessionId, "proj.tar.gz", await content(dir!.fileId));
    const out = join(work, "inbox");
    const pulled = await airlock(["pull", "--extract"], { AIRLOCK_INBOX_DIR: out });
    expect(pulled.stderr).toBe("");
    expect(pulled.stdout).toMatch(
      /^\[User uploaded: proj\.tar\.gz \(.+\), extracted to .+\/proj\/\]\n$/,
    );
    expect(await listTree(join(out, "proj"))).toEqual(await listTree(tree));
  });

  it("extracts an archive made by GNU tar, symlinks and long names included", async () => {
    const src = await mkdtemp(join(work, "src-"));
    const tree = await buildTree(src, "proj", true);
    systemTar(["-czf", join(work, "proj.tar.gz"), "-C", src, "proj"]);
    await seedInbox(
      relay,
      session.sessionId,
      "proj.tar.gz",
      await readFile(join(work, "proj.tar.gz")),
    );
    const result = await airlock(["pull", "--extract", "--dir", join(work, "in")]);
    expect(result.stderr).toBe("");
    expect(await listTree(join(work, "in", "proj"))).toEqual(await listTree(tree));
  });
});
