import { existsSync } from "node:fs";
import { mkdir, mkdtemp, readFile, readdir, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { USAGE } from "../../agent-shim/src/cli/help";
import { beforeEach, describe, expect, it } from "vitest";
import type { InboxRecord } from "../../src/wire-types";
import { seedInbox } from "../support/seed-inbox";
import { sharedRelay } from "../support/shared-relay";
import { RUNTIMES, runShim, relayEnv } from "./run-shim";
import { buildTree, listTree, rawTarGz, systemTar, type RawEntry } from "./tar-trees";
import { shimScratchDir } from "./scratch-dir";

// `airlock pull --extract` against the real relay (the run's shared one, a session per case),
// under every runtime: archives made by GNU tar are extracted; hostile ones are refused whole and
// stay in the inbox.

const root = shimScratchDir("airlock-shim-extract-");

describe.each(RUNTIMES)("airlock pull --extract under $name", ({ node }) => {
  const relay = sharedRelay();
  let session: { sessionId: string; token: string };
  /** A fresh directory per test, holding the --dir (so that escapes from it would show). */
  let base: string;
  let dir: string;

  beforeEach(async () => {
    session = await relay.mintSession();
    base = await mkdtemp(join(root(), "t-"));
    dir = join(base, "sandbox", "uploads");
  });

  const pull = (args: string[] = [], env = relayEnv(relay.url, session.token, 2)) =>
    runShim(["pull", "--dir", dir, "--extract", ...args], { node, cwd: base, env });

  /** Puts a file in this case's inbox (the operator's seed). */
  const seed = (name: string, bytes: Uint8Array) =>
    seedInbox(relay, session.sessionId, name, bytes);

  /** The ids of the items still in this case's inbox. */
  const inbox = async () => {
    const response = await fetch(`${relay.url}/v1/inbox`, {
      headers: { authorization: `Bearer ${session.token}` },
    });
    expect(response.status).toBe(200);
    const { items } = (await response.json()) as { items: InboxRecord[] };
    return items.map((item) => item.itemId);
  };

  /** Every path under `base`, to prove nothing landed anywhere else. */
  const allPaths = async () => Object.keys(await listTree(base));

  it("extracts a GNU tar archive into <name>/, then <name> (1)/, and writes other files as they are", async () => {
    const src = await mkdtemp(join(base, "src-"));
    const tree = await buildTree(src, "proj", true);
    systemTar(["-czf", join(base, "proj.tar.gz"), "-C", src, "proj"]);
    const archive = await readFile(join(base, "proj.tar.gz"));
    await seed("proj.tar.gz", archive);
    await seed("notes.txt", Buffer.from("not an archive\n"));
    await seed("proj.tar.gz", archive);

    const result = await pull(["--json"]);
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    const lines = result.stdout
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(lines.map((line) => [line.path, line.extracted, line.files])).toEqual([
      [join(dir, "proj"), true, 6],
      [join(dir, "notes.txt"), undefined, undefined],
      [join(dir, "proj (1)"), true, 6],
    ]);
    expect((await readdir(dir)).sort()).toEqual(["notes.txt", "proj", "proj (1)"]);
    const expected = await listTree(tree);
    expect(await listTree(join(dir, "proj"))).toEqual(expected);
    expect(await listTree(join(dir, "proj (1)"))).toEqual(expected);
    expect(await inbox()).toEqual([]);
  });

  it("puts an archive with several top-level entries in a directory of its own", async () => {
    await seed(
      "loose.tgz",
      rawTarGz([
        { name: "a.txt", body: "a" },
        { name: "./b/c.txt", body: "c", mode: 0o640 },
      ]),
    );
    const result = await pull();
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(
      /^\[User uploaded: loose\.tgz \(.+\), extracted to .+\/loose\/\]\n$/,
    );
    expect(await listTree(join(dir, "loose"), false)).toEqual({
      "a.txt": expect.stringMatching(/^file 644 /),
      b: "dir 755",
      "b/c.txt": expect.stringMatching(/^file 640 /),
    });
  });

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
    [
      "a relative symlink out of the target",
      [{ name: "h/up", type: "2", linkname: "../../../escaped-link" }],
    ],
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
    [
      "a hard link to a file outside",
      [{ name: "h/hard", type: "1", linkname: "../../../../../etc/passwd" }],
    ],
    ["a hard link to a name not in the archive", [{ name: "h/hard", type: "1", linkname: "h/x" }]],
    ["a newline in a name", [{ name: "h/ok.txt" }, { name: "h/two\nlines.txt", body: "x" }]],
    ["a NUL-free control character in a directory name", [{ name: "h/a\u001bb/c.txt" }]],
    ["a bidi override in a name", [{ name: "h/evil\u202etxt.exe", body: "x" }]],
    ["a backslash in a name", [{ name: "h/..\\..\\x.txt", body: "x" }]],
    ["a control character in a symlink target", [{ name: "h/l", type: "2", linkname: "a\rb" }]],
  ];

  it.each(hostile)(
    "refuses %s: nothing written anywhere, the item stays",
    async (_label, entries) => {
      await seed("evil.tar.gz", rawTarGz(entries));
      const result = await pull();
      expect(result.code).toBe(1);
      expect(result.stdout).toBe("");
      expect(result.stderrLines).toHaveLength(1);
      expect(result.stderrLines[0]).toMatch(
        /^airlock: could not pull item \S+ \(evil\.tar\.gz\), it stays in the inbox: refusing to extract evil\.tar\.gz: ".+" .+; nothing was extracted$/,
      );
      expect(await readdir(dir)).toEqual([]);
      expect(await allPaths()).toEqual(["sandbox", "sandbox/uploads"]);
      expect(existsSync("/tmp/airlock-escaped-abs")).toBe(false);
      expect(existsSync("/etc/airlock-escaped")).toBe(false);
      expect(await inbox()).toHaveLength(1);
    },
  );

  it("refuses an absolute name in an archive GNU tar made with -P", async () => {
    const victim = join(base, "victim.txt");
    await writeFile(victim, "original\n");
    systemTar(["--format=gnu", "-czPf", join(base, "abs.tar.gz"), victim]);
    await writeFile(victim, "changed\n");
    await seed("abs.tar.gz", await readFile(join(base, "abs.tar.gz")));
    const result = await pull();
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/"\/.*victim\.txt" is an absolute path; nothing was extracted/);
    expect(await readFile(victim, "utf8")).toBe("changed\n");
    expect(await readdir(dir)).toEqual([]);
  });

  it("refuses a corrupt archive with one line, leaving nothing", async () => {
    await seed("junk.tar.gz", Buffer.from("this is not gzip at all"));
    await mkdir(dir, { recursive: true });
    const result = await pull();
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(
      /^airlock: could not pull item \S+ \(junk\.tar\.gz\), it stays in the inbox: cannot extract junk\.tar\.gz: .+\n$/,
    );
    expect(await readdir(dir)).toEqual([]);
  });

  it("clamps directory modes: permission bits only, within the umask, always rwx for the owner", async () => {
    await seed(
      "modes.tar.gz",
      rawTarGz([
        { name: "m/", type: "5", mode: 0o7000 },
        { name: "m/locked/", type: "5", mode: 0o1000 },
        { name: "m/locked/in.txt", body: "in", mode: 0o644 },
        { name: "m/shared/", type: "5", mode: 0o2775 },
      ]),
    );
    const result = await pull();
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    expect(await listTree(join(dir, "modes"), false)).toEqual({
      locked: "dir 700",
      "locked/in.txt": expect.stringMatching(/^file 644 /),
      // The shim inherits this process's umask: 2775 in the archive is 775 under umask 002.
      shared: `dir ${((0o775 & ~process.umask()) | 0o700).toString(8)}`,
    });
    expect(((await stat(join(dir, "modes"))).mode & 0o7777).toString(8)).toBe("700");
  });

  it("refuses an archive over --max-bytes before writing the entry that crosses it", async () => {
    const body = "y".repeat(400_000);
    const entries = [0, 1, 2].map((i) => ({ name: `big/${i}.txt`, body }));
    const over = await seed("big.tar.gz", rawTarGz(entries));
    await seed("fine.tar.gz", rawTarGz(entries.slice(0, 2)));
    const result = await pull(["--max-bytes", "1M"]);
    expect(result.code).toBe(1);
    expect(result.stderrLines).toEqual([
      `airlock: could not pull item ${over.itemId} (big.tar.gz), it stays in the inbox: ` +
        'refusing to extract big.tar.gz: "big/2.txt" takes the archive over 1048576 bytes ' +
        "extracted (raise it with --max-bytes); nothing was extracted",
    ]);
    expect(result.stdout).toMatch(
      /^\[User uploaded: fine\.tar\.gz \(.+\), extracted to .+\/fine\/\]\n$/,
    );
    expect(await readdir(dir)).toEqual(["fine"]);
    expect(await inbox()).toEqual([over.itemId]);

    const raised = await pull(["--max-bytes", "2M"]);
    expect(raised.stderr).toBe("");
    expect(raised.code).toBe(0);
    expect((await readdir(join(dir, "big"))).sort()).toEqual(["0.txt", "1.txt", "2.txt"]);
  });

  it.each([["0"], ["lots"], ["-5"], ["1.5G"]])(
    "is a usage error to pass --max-bytes %s",
    async (value) => {
      // Nothing listens at port 9: a request before the check would end in another line.
      const result = await pull([`--max-bytes=${value}`], relayEnv("http://127.0.0.1:9", "t", 1));
      expect(result.code).toBe(2);
      expect(result.stderrLines).toEqual([
        `airlock: --max-bytes needs a positive number of bytes (e.g. 500M, 20G), not "${value}"; ` +
          `usage: ${USAGE.pull}`,
      ]);
    },
  );
});
