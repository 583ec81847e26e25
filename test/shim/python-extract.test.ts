// The Python shim's extraction, word for word the Node shim's: both pull the same archives from
// the run's shared relay (each shim a session of its own, seeded alike) and must refuse, clamp
// and word alike; and both answer usage errors alike.
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, readdir, stat } from "node:fs/promises";
import { join } from "node:path";
import { beforeEach, describe, expect, it } from "vitest";
import type { InboxRecord } from "../../src/wire-types";
import { apiCall } from "../support/api-call";
import { seedInbox } from "../support/seed-inbox";
import { sharedRelay } from "../support/shared-relay";
import { pythonAndNode } from "./python-drivers";
import { failureLine, relayEnv } from "./run-shim";
import { runDriver } from "./shims";
import { listTree, rawTarGz, type RawEntry } from "./tar-trees";

const shims = pythonAndNode("airlock-python-extract-");

describe("the Python shim's extraction, word for word the Node shim's", () => {
  let base: string;

  beforeEach(async () => {
    base = await mkdtemp(join(shims.scratch, "extract-"));
  });

  /** Items still in a session's inbox. */
  const waiting = async (token: string) =>
    (await apiCall(sharedRelay().url, token, "GET", "/v1/inbox")).body.items as InboxRecord[];

  /**
   * Pulls with --extract under both shims, each from a session of its own seeded with `items`,
   * into a directory of its own; `said` is its stderr with the item ids made alike.
   */
  const both = async (items: [string, Buffer][], args: string[] = []) => {
    const results = [];
    for (const driver of [shims.node, shims.python]) {
      const session = await sharedRelay().mintSession();
      const ids: string[] = [];
      for (const [name, bytes] of items) {
        ids.push((await seedInbox(sharedRelay(), session.sessionId, name, bytes)).itemId);
      }
      const dir = join(base, driver.name, "uploads");
      const result = await runDriver(driver, ["pull", "--dir", dir, "--extract", ...args], {
        env: relayEnv(sharedRelay().url, session.token, 2),
        cwd: base,
        home: base,
      });
      // Each session's items have ids of their own: stderr with them written as <item n>.
      const said = ids.reduce((text, id, i) => text.split(id).join(`<item ${i}>`), result.stderr);
      results.push({ ...result, dir, token: session.token, said });
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
    const [fromNode, fromPython] = await both([["evil.tar.gz", rawTarGz(entries)]]);
    expect(fromNode!.code).toBe(1);
    expect(failureLine(fromNode!)).toMatch(
      /refusing to extract evil\.tar\.gz: .+; nothing was extracted$/,
    );
    expect(fromPython!.said).toBe(fromNode!.said);
    expect(fromPython!.code).toBe(1);
    expect(fromPython!.stdout).toBe("");
    expect(await readdir(fromPython!.dir)).toEqual([]);
    expect(existsSync("/tmp/airlock-escaped-abs")).toBe(false);
    expect(await waiting(fromPython!.token)).toHaveLength(1);
  });

  it("writes invisible characters in a refused name out as escapes, as the Node shim does", async () => {
    const name = "h/in\u200bvis\u200d\u2064\ufeffible\u{e0041}\u{e007f}.txt";
    const [fromNode, fromPython] = await both([["evil.tar.gz", rawTarGz([{ name, body: "x" }])]]);
    expect(failureLine(fromNode!)).toMatch(
      /: "h\/in\\u200bvis\\u200d\\u2064\\ufeffible\\udb40\\udc41\\udb40\\udc7f\.txt" is not a clean name: each part must not contain control, bidi-override or invisible characters; nothing was extracted$/,
    );
    expect(fromPython!.said).toBe(fromNode!.said);
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
    const [fromNode, fromPython] = await both([
      ["pax.tar.gz", header],
      ["junk.tar.gz", Buffer.from("not gzip at all")],
    ]);
    expect(fromNode!.stderrLines).toHaveLength(2);
    expect(fromNode!.stderr).toMatch(/pax or GNU long-name headers over 1 MiB/);
    expect(fromPython!.stderr).toMatch(/pax or GNU long-name headers over 1 MiB/);
    expect(fromPython!.said.split("\n")[0]).toBe(fromNode!.said.split("\n")[0]);
    expect(fromPython!.stderrLines[1]).toMatch(
      /could not pull item \S+ \(junk\.tar\.gz\), it stays in the inbox: cannot extract junk\.tar\.gz: .+$/,
    );
    expect(fromPython!.code).toBe(1);
    expect(await waiting(fromPython!.token)).toHaveLength(2);
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
    const [fromNode, fromPython] = await both(
      [
        ["modes.tar.gz", modes],
        ["big.tar.gz", big],
      ],
      ["--max-bytes", "1M"],
    );
    expect(fromNode!.code).toBe(1);
    expect(fromPython!.code).toBe(1);
    expect(fromPython!.said).toBe(fromNode!.said);
    expect(fromPython!.stderr).toMatch(/"big\/2\.txt" takes the archive over 1048576 bytes/);
    expect(fromPython!.stdout).toBe(fromNode!.stdout.split(fromNode!.dir).join(fromPython!.dir));
    expect(await listTree(join(fromPython!.dir, "modes"), false)).toEqual(
      await listTree(join(fromNode!.dir, "modes"), false),
    );
    expect(((await stat(join(fromPython!.dir, "modes"))).mode & 0o7777).toString(8)).toBe("700");
    expect(await readdir(fromPython!.dir)).toEqual(["modes"]);
  });

  it("answers usage errors with the Node shim's words and exit 2", async () => {
    await mkdir(join(base, "x"));
    const { token } = await sharedRelay().mintSession();
    const env = relayEnv(sharedRelay().url, token);
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
      for (const driver of [shims.node, shims.python]) {
        results.push(await runDriver(driver, args, { env, cwd: base, home: base }));
      }
      const [fromNode, fromPython] = results.map((r) => r.stderr);
      expect(fromPython, args.join(" ")).toBe(fromNode);
      expect(results[1]!.stderrLines).toHaveLength(1);
      expect(results[1]!.code).toBe(2);
      expect(results[0]!.code).toBe(2);
    }
    // Its global usage line leaves out tool-schema, which only the Node shim has.
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
      const result = await runDriver(shims.python, [...args], { env, cwd: base, home: base });
      expect(result.code).toBe(2);
      expect(failureLine(result)).toBe(line);
    }
  });
});
