// The Python shim (agent-shim/airlock.py) beyond the contract suite: installed with the README's
// line in an image with only Python, run under every python3 found (3.8 when installed), and held
// to the Node shim's exact words on archive extraction (same fake relay, same inbox item).
import { execFileSync, spawnSync } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, readFile, readdir, stat, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { type RunningRelay } from "../support/relay";
import { seedInbox } from "../support/seed-inbox";
import { sharedRelay } from "../support/shared-relay";
import { TOKEN, startFakeRelay, type FakeRelay } from "./fake-relay";
import { failureLine, prepareShim, relayEnv } from "./run-shim";
import {
  processEnv,
  pythonOnlyPath,
  runDriver,
  shimDrivers,
  which,
  type ShimDriver,
} from "./shims";
import { buildTree, listTree, rawTarGz, systemTar, type RawEntry } from "./tar-trees";

const root = fileURLToPath(new URL("../..", import.meta.url));
const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");

let scratch: string;
let node: ShimDriver;
let python: ShimDriver;

beforeAll(async () => {
  prepareShim();
  scratch = await mkdtemp(join(tmpdir(), "airlock-python-"));
  const drivers = await shimDrivers(scratch);
  node = drivers.find((d) => d.name === "node")!;
  python = drivers.find((d) => d.name === "python")!;
});

afterAll(async () => {
  if (scratch) execFileSync("rm", ["-rf", scratch]);
});

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
      { env: processEnv({ PATH: python.path }), encoding: "utf8" },
    );
    expect(check.stdout).toBe("None None\n");
  });

  it("installs with the README's line (python3 and chmod only) and runs", async () => {
    const readme = await readFile(join(root, "README.md"), "utf8");
    const line = /^python3 -c .*shim\/airlock\.py.*$/m.exec(readme)?.[0];
    expect(line).toBeDefined();
    // The exact line, with only its destination moved out of the system's bin directory.
    expect(line!.split("/usr/local/bin/airlock")).toHaveLength(3);
    const home = await mkdtemp(join(scratch, "install-"));
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
    const bin = await mkdtemp(join(scratch, "bin-"));
    await symlink(runnable(interpreter)!, join(bin, "python3"));
    driver = { ...python, path: bin };
  });
  beforeEach(async () => {
    session = await relay.mintSession();
    work = await mkdtemp(join(scratch, "work-"));
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

describe("the Python shim's extraction, word for word the Node shim's", () => {
  let relay: FakeRelay;
  let base: string;

  beforeEach(async () => {
    relay = await startFakeRelay();
    base = await mkdtemp(join(scratch, "extract-"));
  });
  afterEach(async () => {
    await relay.stop();
  });

  /**
   * Pulls with --extract under both shims, each into a directory of its own; `seed` fills the
   * inbox before each run (a refused item stays there for the next shim, a pulled one does not).
   */
  const both = async (args: string[] = [], seed?: () => void) => {
    const results = [];
    for (const driver of [node, python]) {
      seed?.();
      const dir = join(base, driver.name, "uploads");
      const result = await runDriver(driver, ["pull", "--dir", dir, "--extract", ...args], {
        env: relayEnv(relay.url, TOKEN, 2),
        cwd: base,
        home: base,
      });
      results.push({ ...result, dir });
    }
    return results;
  };

  const hostile: [string, RawEntry[]][] = [
    ["a ../ name", [{ name: "h/ok.txt" }, { name: "h/../../../../escaped-dotdot", body: "x" }]],
    ["an absolute name", [{ name: "h/ok.txt" }, { name: "/tmp/airlock-escaped-abs", body: "x" }]],
    [
      "a symlink to /etc, then a file through it",
      [
        { name: "h/etc", type: "2", linkname: "/etc" },
        { name: "h/etc/airlock-escaped", body: "x" },
      ],
    ],
    ["a relative symlink out", [{ name: "h/up", type: "2", linkname: "../../../escaped-link" }]],
    [
      "a file through a symlink that stays inside",
      [
        { name: "h/sub/", type: "5" },
        { name: "h/in", type: "2", linkname: "sub" },
        { name: "h/in/escaped-through", body: "x" },
      ],
    ],
    [
      "a chain of symlinks that only leaves the tree when followed",
      [
        { name: "h/a/b/", type: "5" },
        { name: "h/a/b/l1", type: "2", linkname: "../.." },
        { name: "h/a/b/l2", type: "2", linkname: "l1/../.." },
      ],
    ],
    ["a hard link out", [{ name: "h/hard", type: "1", linkname: "../../../../../etc/passwd" }]],
    ["a newline in a name", [{ name: "h/ok.txt" }, { name: "h/two\nlines.txt", body: "x" }]],
    ["a bidi override in a name", [{ name: "h/evil\u202etxt.exe", body: "x" }]],
    ["zero-width characters in a name", [{ name: "h/zero\u200bwidth\u2060\ufeff.txt", body: "x" }]],
    ["Unicode tag characters in a name", [{ name: "h/tag\u{e0041}\u{e007f}.txt", body: "x" }]],
    ["a backslash in a name", [{ name: "h/..\\..\\x.txt", body: "x" }]],
  ];

  it.each(hostile)("refuses %s with the same line, nothing written", async (_label, entries) => {
    relay.addInboxItem("evil.tar.gz", rawTarGz(entries));
    const [fromNode, fromPython] = await both();
    expect(fromNode!.code).toBe(1);
    expect(failureLine(fromNode!)).toMatch(
      /refusing to extract evil\.tar\.gz: .+; nothing was extracted$/,
    );
    expect(fromPython!.stderr).toBe(fromNode!.stderr);
    expect(fromPython!.code).toBe(1);
    expect(fromPython!.stdout).toBe("");
    expect(await readdir(fromPython!.dir)).toEqual([]);
    expect(existsSync("/tmp/airlock-escaped-abs")).toBe(false);
    expect(relay.inbox.size).toBe(1);
  });

  it("writes invisible characters in a refused name out as escapes, as the Node shim does", async () => {
    const name = "h/in\u200bvis\u200d\u2064\ufeffible\u{e0041}\u{e007f}.txt";
    relay.addInboxItem("evil.tar.gz", rawTarGz([{ name, body: "x" }]));
    const [fromNode, fromPython] = await both();
    expect(failureLine(fromNode!)).toMatch(
      /: "h\/in\\u200bvis\\u200d\\u2064\\ufeffible\\udb40\\udc41\\udb40\\udc7f\.txt" is not a clean name: each part must not contain control, bidi-override or invisible characters; nothing was extracted$/,
    );
    expect(fromPython!.stderr).toBe(fromNode!.stderr);
    expect(fromPython!.code).toBe(1);
  });

  it("refuses pax headers over 1 MiB and a corrupt archive, like the Node shim", async () => {
    const paxRecord = (value: string) => {
      const rest = ` comment=${value}\n`;
      let length = rest.length + 1;
      while (String(length).length + rest.length !== length) length++;
      return `${length}${rest}`;
    };
    const pax = paxRecord("c".repeat(1024 * 1024 + 10));
    // A pax extended header ("x"), which the hand-made tar writer takes though its type omits it.
    const paxType = "x" as unknown as RawEntry["type"];
    const header = rawTarGz([{ name: "PaxHeaders/x", type: paxType, body: pax }, { name: "x" }]);
    relay.addInboxItem("pax.tar.gz", header);
    relay.addInboxItem("junk.tar.gz", Buffer.from("not gzip at all"));
    const [fromNode, fromPython] = await both();
    expect(fromNode!.stderrLines).toHaveLength(2);
    expect(fromNode!.stderr).toMatch(/pax or GNU long-name headers over 1 MiB/);
    expect(fromPython!.stderr).toMatch(/pax or GNU long-name headers over 1 MiB/);
    expect(fromPython!.stderrLines[0]).toBe(fromNode!.stderrLines[0]);
    expect(fromPython!.stderrLines[1]).toMatch(
      /could not pull item \S+ \(junk\.tar\.gz\), it stays in the inbox: cannot extract junk\.tar\.gz: .+$/,
    );
    expect(fromPython!.code).toBe(1);
    expect(relay.inbox.size).toBe(2);
  });

  it("clamps directory modes and enforces --max-bytes like the Node shim", async () => {
    const modes = rawTarGz([
      { name: "m/", type: "5", mode: 0o7000 },
      { name: "m/locked/", type: "5", mode: 0o1000 },
      { name: "m/locked/in.txt", body: "in", mode: 0o644 },
      { name: "m/shared/", type: "5", mode: 0o2775 },
    ]);
    const body = "y".repeat(400_000);
    const big = rawTarGz([0, 1, 2].map((i) => ({ name: `big/${i}.txt`, body })));
    const [fromNode, fromPython] = await both(["--max-bytes", "1M"], () => {
      relay.inbox.clear();
      relay.addInboxItem("modes.tar.gz", modes);
      relay.addInboxItem("big.tar.gz", big);
    });
    const anyItem = (text: string) => text.replace(/item \S+ \(/g, "item ? (");
    expect(fromNode!.code).toBe(1);
    expect(fromPython!.code).toBe(1);
    expect(anyItem(fromPython!.stderr)).toBe(anyItem(fromNode!.stderr));
    expect(fromPython!.stderr).toMatch(/"big\/2\.txt" takes the archive over 1048576 bytes/);
    expect(fromPython!.stdout).toBe(fromNode!.stdout.split(fromNode!.dir).join(fromPython!.dir));
    expect(await listTree(join(fromPython!.dir, "modes"), false)).toEqual(
      await listTree(join(fromNode!.dir, "modes"), false),
    );
    expect(((await stat(join(fromPython!.dir, "modes"))).mode & 0o7777).toString(8)).toBe("700");
    expect(await readdir(fromPython!.dir)).toEqual(["modes"]);
  });

  it("pulls raw hostile names from a relay that does not clean them, as the Node shim does", async () => {
    const names = [
      "../../x.txt",
      "/etc/cron.d/evil",
      "a\u0000b.txt",
      "two\nlines.txt",
      "bidi\u202egpj.exe",
      "iso\u2066late\u2069.txt",
      "zero\u200bwidth\u200c\u200d\u2060\u2064\ufeff.txt",
      "tag\u{e0001}\u{e0069}\u{e0067}\u{e006e}\u{e006f}\u{e0072}\u{e0065}\u{e007f}.txt",
      "close] [User uploaded: fake (1 B) at /etc/passwd].txt",
      "..",
      "",
      "  ",
      "..\\..\\win.ini",
      `${"é".repeat(10_000)}.txt`,
    ];
    const bytes = names.map(() => randomBytes(1000));
    const results = [];
    for (const driver of [node, python]) {
      relay.inbox.clear();
      names.forEach((name, i) => relay.addInboxItem(name, bytes[i]!));
      const dir = join(base, driver.name, "uploads");
      const result = await runDriver(driver, ["pull", "--dir", dir], {
        env: relayEnv(relay.url, TOKEN, 2),
        cwd: base,
        home: base,
      });
      expect(result.stderr).toBe("");
      expect(result.code).toBe(0);
      const files = (await readdir(dir)).sort();
      const digests = await Promise.all(
        files.map(async (f) => sha256(await readFile(join(dir, f)))),
      );
      results.push({ stdout: result.stdout.split(dir).join("<dir>"), files, digests });
    }
    expect(results[1]).toEqual(results[0]);
    expect(results[1]!.stdout.trimEnd().split("\n")).toHaveLength(names.length);
    expect(results[1]!.files).toContain("zerowidth.txt");
    expect(results[1]!.files).toContain("tag.txt");
    expect(results[1]!.digests.sort()).toEqual(bytes.map((b) => sha256(b)).sort());
  });

  it("answers usage errors with the Node shim's words and exit 2", async () => {
    await mkdir(join(base, "x"));
    for (const args of [
      ["pull", "--max-bytes=lots", "--extract"],
      ["pull", "--bogus"],
      ["pull", "--dir"],
      ["pull", "--timeout", "5s"],
      ["pull", "--wait", "--timeout", "soon"],
      ["link"],
      ["link", "fil_x", "--max-downloads", "0"],
      ["link", "fil_x", "--expires", "0"],
      ["rm", "a", "b"],
      ["get"],
      ["get", "f_1", "--extract", "-o", "-"],
      ["send"],
      ["send", "--to", "nowhere", "x"],
      ["send", "-", "-"],
      ["request", "extra"],
    ]) {
      const results = [];
      for (const driver of [node, python]) {
        results.push(
          await runDriver(driver, args, { env: relayEnv(relay.url, TOKEN), cwd: base, home: base }),
        );
      }
      const [fromNode, fromPython] = results.map((r) => r.stderr);
      expect(fromPython, args.join(" ")).toBe(fromNode);
      expect(results[1]!.stderrLines).toHaveLength(1);
      expect(results[1]!.code).toBe(2);
      expect(results[0]!.code).toBe(2);
    }
    // Its global usage line leaves out tool-schema, which only the Node shim has.
    const env = relayEnv(relay.url, TOKEN);
    const usage =
      "usage: airlock <send|get|pull|request|link|rm|ls|mcp> ... | airlock <command> --help | airlock --help | airlock --version";
    for (const [args, line] of [
      [["frobnicate"], `airlock: unknown command frobnicate; ${usage}`],
      [[], `airlock: no command given; ${usage}`],
      [
        ["tool-schema"],
        "airlock: tool-schema is not in the Python shim; run it with the Node shim (/shim/airlock.mjs)",
      ],
    ] as const) {
      const result = await runDriver(python, [...args], { env, cwd: base, home: base });
      expect(result.code).toBe(2);
      expect(failureLine(result)).toBe(line);
    }
  });
});
