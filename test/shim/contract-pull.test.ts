// The shim contract, pulling: every shim (node, python, posix) pulls what the operator put in
// its session's inbox on the run's shared relay (test/shim/contract-support.ts).
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdtemp, readFile, readdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { cleanFileName } from "../../src/names";
import { humanSize } from "../../src/services/human-size";
import { failureLine, relayEnv } from "./run-shim";
import { runDriver } from "./shims";
import { SHIM_NAMES, contractSuite, expectRefusal, sha256, shimSession } from "./contract-support";

const PULL_JSON_FIELDS = ["itemId", "fileId", "name", "size", "sha256", "path", "source"];

const contract = contractSuite("airlock-contract-pull-");

describe.each(SHIM_NAMES)("the %s shim pulls from the relay", (name) => {
  const s = shimSession(contract, name);

  it("pulls byte-exact with the context line, hostile names cleaned", async () => {
    await s.drainInbox();
    const report = randomBytes(150_000);
    const hostile = Buffer.from("hostile\n");
    const brackets = Buffer.from("brackets\n");
    const hostileName = "../../etc/evil\u202etxt.exe";
    const bracketName = "[x] notes].txt";
    await s.seed("report.bin", report);
    await s.seed(hostileName, hostile);
    await s.seed(bracketName, brackets);
    const dir = join(s.work, "inbox");
    const result = await s.airlock(["pull", "--dir", dir]);
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    const shown = (raw: string) =>
      cleanFileName(raw, "file").replace(/\[/g, "(").replace(/]/g, ")");
    const expected = [
      ["report.bin", report],
      [hostileName, hostile],
      [bracketName, brackets],
    ] as const;
    expect(result.stdout).toBe(
      expected
        .map(([raw, bytes]) => {
          const local = shown(raw);
          return `[User uploaded: ${local} (${humanSize(bytes.length)}) at ${join(dir, local)}]\n`;
        })
        .join(""),
    );
    for (const [raw, bytes] of expected) {
      expect(sha256(await readFile(join(dir, shown(raw))))).toBe(sha256(bytes));
    }
    expect((await readdir(dir)).sort()).toEqual(expected.map(([raw]) => shown(raw)).sort());
    expect(existsSync(join(s.work, "etc"))).toBe(false);
    // Acknowledged: a second pull finds nothing, and says so.
    const again = await s.airlock(["pull", "--dir", dir]);
    expect(again).toMatchObject({ code: 0, stdout: "", stderr: "nothing new in the inbox\n" });
  });

  it("prints pull --json and ls --json lines with the same fields (the POSIX shim: neither)", async () => {
    const bytes = randomBytes(5000);
    await writeFile(join(s.work, "fields.bin"), bytes);
    await s.drainInbox();
    await s.seed("fields.bin", bytes);
    const dir = join(s.work, "json-inbox");
    if (!s.supports("json")) {
      // The POSIX shim's --json is send's alone.
      expectRefusal(
        await s.airlock(["pull", "--json", "--dir", dir]),
        /pull --json is not supported/,
      );
      expectRefusal(await s.airlock(["ls", "--json"]), /ls is not supported/);
      expect(existsSync(dir)).toBe(false);
      return;
    }
    const pulled = await s.airlock(["pull", "--json", "--dir", dir]);
    expect(pulled.stderr).toBe("");
    const record = JSON.parse(pulled.stdout) as Record<string, unknown>;
    expect(Object.keys(record)).toEqual(PULL_JSON_FIELDS);
    expect(record).toMatchObject({
      name: "fields.bin",
      size: 5000,
      sha256: sha256(bytes),
      path: join(dir, "fields.bin"),
    });
    const sent = await s.sendJson("fields.bin");
    const listed = await s.airlock(["ls", "--json"]);
    expect(listed.code).toBe(0);
    const ids = listed.stdout
      .trimEnd()
      .split("\n")
      .map((line) => (JSON.parse(line) as { fileId: string }).fileId);
    expect(ids).toContain(sent.fileId);
  });

  it("pulls into ./uploads by default, $AIRLOCK_INBOX_DIR when set, and --dir over both", async () => {
    await s.drainInbox();
    const cwd = await mkdtemp(join(s.work, "default-dir-"));
    const fromVar = join(cwd, "from-var");
    const pullIn = (args: string[], extra: Record<string, string> = {}) =>
      runDriver(s.driver, ["pull", ...args], {
        env: { ...relayEnv(contract.suite.relay.url, s.token), ...extra },
        cwd,
        home: s.home,
      });
    const cases: { args: string[]; env: Record<string, string>; dir: string }[] = [
      { args: [], env: {}, dir: join(cwd, "uploads") },
      { args: [], env: { AIRLOCK_INBOX_DIR: fromVar }, dir: fromVar },
      { args: [], env: { AIRLOCK_INBOX_DIR: "" }, dir: join(cwd, "uploads") },
      { args: ["--dir", "chosen"], env: { AIRLOCK_INBOX_DIR: fromVar }, dir: join(cwd, "chosen") },
    ];
    for (const [i, { args, env, dir }] of cases.entries()) {
      const bytes = randomBytes(1000 + i);
      await s.seed(`case-${i}.bin`, bytes);
      const result = await pullIn(args, env);
      expect(result.stderr).toBe("");
      expect(result.code).toBe(0);
      const written = join(dir, `case-${i}.bin`);
      expect(result.stdout).toBe(
        `[User uploaded: case-${i}.bin (${humanSize(bytes.length)}) at ${written}]\n`,
      );
      expect(sha256(await readFile(written))).toBe(sha256(bytes));
    }
    expect((await readdir(cwd)).sort()).toEqual(["chosen", "from-var", "uploads"]);
    expect((await readdir(join(cwd, "uploads"))).sort()).toEqual(["case-0.bin", "case-2.bin"]);
    // Nothing waiting: one line on stderr, exit 0, no directory made.
    const empty = await pullIn([], { AIRLOCK_INBOX_DIR: join(cwd, "never") });
    expect(empty).toMatchObject({ code: 0, stdout: "", stderr: "nothing new in the inbox\n" });
    expect(existsSync(join(cwd, "never"))).toBe(false);
  });

  it("gives up pull --wait after --timeout with exit 3 (unsupported by the POSIX shim)", async () => {
    await s.drainInbox();
    const dir = join(s.work, "wait-inbox");
    const result = await s.airlock(["pull", "--wait", "--timeout", "1s", "--dir", dir]);
    if (name === "posix") {
      expectRefusal(result, /pull --wait is not supported/);
      return;
    }
    expect(result.stdout).toBe("");
    expect(failureLine(result)).toBe("airlock: nothing arrived in the inbox within 1s");
    expect(result.code).toBe(3);
    expect(existsSync(dir)).toBe(false);
  });
});
