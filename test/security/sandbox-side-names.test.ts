// The sandbox side of the name rule, attacked through a relay that still hands out hostile
// names (a relay from before the rule, or old records; the fake relay, since the real one cleans
// them): the shim's `pull` and the POSIX shim's `pull` must keep every file inside the directory
// meant, keep each context line one line ending with the exact path, and let one bad item hold
// up nothing. Archive bombs are in sandbox-side-names-archives.test.ts, the SDK's downloads in
// sandbox-side-names-sdk.test.ts.
import { spawn, spawnSync } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { mkdir, mkdtemp, readFile, readdir } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { TOKEN, startFakeRelay, type FakeRelay } from "../shim/fake-relay";
import { RUNTIMES, relayEnv, runShim } from "../shim/run-shim";
import { shimScratchDir } from "../shim/scratch-dir";
import { HOSTILE_NAMES, allPaths, childEnv } from "./sandbox-side-names-support";

const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");
const root = shimScratchDir("airlock-sandbox-names-");

describe.each(RUNTIMES.slice(0, 2))(
  "airlock pull under $name, from a hostile relay",
  ({ node }) => {
    let relay: FakeRelay;
    let base: string;
    let dir: string;

    beforeEach(async () => {
      relay = await startFakeRelay();
      base = await mkdtemp(join(root(), "t-"));
      dir = join(base, "sandbox", "uploads");
    });

    afterEach(async () => {
      await relay.stop();
    });

    const pull = (args: string[] = []) =>
      runShim(["pull", "--dir", dir, ...args], {
        node,
        cwd: join(base),
        env: relayEnv(relay.url, TOKEN, 2),
      });

    it("writes every hostile name inside --dir, one line each ending with the exact path", async () => {
      const sent = HOSTILE_NAMES.map((name) => ({ name, bytes: randomBytes(1000) }));
      const items = sent.map(({ name, bytes }) => relay.addInboxItem(name, bytes));
      const result = await pull();
      expect(result.stderr).toBe("");
      expect(result.code).toBe(0);

      const lines = result.stdout.replace(/\n$/, "").split("\n");
      expect(lines).toHaveLength(sent.length);
      for (const [i, line] of lines.entries()) {
        const match = /^\[User uploaded: (.+) \(1000 B\) at (.+)\]$/.exec(line);
        expect(match, line).not.toBeNull();
        const path = match![2]!;
        // The path is exactly where the bytes are, directly in --dir; the line's only "]" ends it.
        expect(path.startsWith(`${dir}/`)).toBe(true);
        expect(path.slice(dir.length + 1)).not.toMatch(
          /[/\\\]\u0000-\u001f\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff\u{e0000}-\u{e007f}]/u,
        );
        expect(path.slice(dir.length + 1)).not.toMatch(/^\s|\s$/);
        expect(line.indexOf("]")).toBe(line.length - 1);
        expect(Buffer.byteLength(path.slice(dir.length + 1))).toBeLessThanOrEqual(255);
        expect(sha256(await readFile(path))).toBe(sha256(sent[i]!.bytes));
      }
      // Nothing anywhere else: only the way down to --dir and the files in it.
      const paths = await allPaths(base);
      expect(paths.filter((p) => !p.startsWith("sandbox/uploads/"))).toEqual([
        "sandbox",
        "sandbox/uploads",
      ]);
      expect(paths.filter((p) => p.startsWith("sandbox/uploads/"))).toHaveLength(sent.length);
      expect(relay.acked).toEqual(items.map((item) => item.itemId));
    });

    it("pulls past a 40 KB Content-Disposition and an oversized header: only that item fails", async () => {
      const longName = "n".repeat(20_000) + ".txt";
      const first = randomBytes(5000);
      const long = randomBytes(5000);
      const last = randomBytes(5000);
      const a = relay.addInboxItem("first.bin", first);
      // As a relay from before the name rule sent it: the name twice over, some 40 KB of header.
      const disposition = `attachment; filename="${longName}"; filename*=UTF-8''${longName}`;
      const b = relay.addInboxItem(longName, long, {
        content: { headers: { "content-disposition": disposition } },
      });
      const huge = relay.addInboxItem("huge\nheader.bin", randomBytes(100), {
        content: { headers: { "x-padding": "p".repeat(300 * 1024) } },
      });
      const c = relay.addInboxItem("last.bin", last);

      const result = await pull();
      expect(result.code).toBe(1);
      expect(result.stderrLines).toEqual([
        `airlock: could not pull item ${huge.itemId} (hugeheader.bin), it stays in the inbox: ` +
          `${relay.url} answered with headers over 256 KiB; not read`,
      ]);
      const written = "n".repeat(251) + ".txt";
      expect(result.stdout).toBe(
        `[User uploaded: first.bin (4.9 KiB) at ${join(dir, "first.bin")}]\n` +
          `[User uploaded: ${written} (4.9 KiB) at ${join(dir, written)}]\n` +
          `[User uploaded: last.bin (4.9 KiB) at ${join(dir, "last.bin")}]\n`,
      );
      expect(sha256(await readFile(join(dir, "first.bin")))).toBe(sha256(first));
      expect(sha256(await readFile(join(dir, written)))).toBe(sha256(long));
      expect(sha256(await readFile(join(dir, "last.bin")))).toBe(sha256(last));
      expect((await readdir(dir)).sort()).toEqual([written, "first.bin", "last.bin"].sort());
      expect(relay.acked).toEqual([a.itemId, b.itemId, c.itemId]);
      expect(relay.inbox.has(huge.itemId)).toBe(true);
    });
  },
);

describe("airlock.sh pull from a hostile relay", () => {
  let relay: FakeRelay;
  let base: string;
  let dir: string;
  const dash = spawnSync("sh", ["-c", "command -v dash"], { encoding: "utf8" }).stdout.trim();

  beforeEach(async () => {
    relay = await startFakeRelay();
    base = await mkdtemp(join(root(), "sh-"));
    dir = join(base, "sandbox", "uploads");
    await mkdir(dir, { recursive: true });
  });

  afterEach(async () => {
    await relay.stop();
  });

  const script = fileURLToPath(new URL("../../agent-shim/airlock.sh", import.meta.url));
  const pullSh = () =>
    new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
      const child = spawn(dash || "sh", [script, "pull", "--dir", dir], {
        cwd: base,
        env: childEnv({ HOME: base, TMPDIR: base, ...relayEnv(relay.url, TOKEN, 2) }),
      });
      let stdout = "";
      let stderr = "";
      child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
      child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
      child.once("error", reject);
      child.once("close", (code) => resolve({ code, stdout, stderr }));
    });

  it("cleans every hostile name, keeps each line unbreakable, and carries on past a bad item", async () => {
    const sent = HOSTILE_NAMES.map((name) => ({ name, bytes: randomBytes(1000) }));
    const items = sent.map(({ name, bytes }) => relay.addInboxItem(name, bytes));
    const bad = relay.addInboxItem("gone]\n.bin", randomBytes(10), {
      content: { refuse: { status: 410, code: "file_expired", message: "the file has expired" } },
    });
    const after = relay.addInboxItem("after.txt", Buffer.from("after\n"));

    const result = await pullSh();
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(
      `airlock: could not pull item ${bad.itemId} (gone).bin), it stays in the inbox: ` +
        "relay refused the download: file_expired: the file has expired (HTTP 410)\n",
    );
    const lines = result.stdout.replace(/\n$/, "").split("\n");
    expect(lines).toHaveLength(sent.length + 1);
    for (const [i, line] of lines.entries()) {
      const match = /^\[User uploaded: (.+) \((?:1000 B|6 B)\) at (.+)\]$/.exec(line);
      expect(match, line).not.toBeNull();
      const path = match![2]!;
      expect(path.startsWith(`${dir}/`)).toBe(true);
      const name = path.slice(dir.length + 1);
      expect(name).not.toMatch(
        /[/\\\]\u0000-\u001f\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff\u{e0000}-\u{e007f}]/u,
      );
      expect(name).not.toMatch(/^\s|\s$/);
      expect(line.indexOf("]")).toBe(line.length - 1);
      expect(Buffer.byteLength(name)).toBeLessThanOrEqual(255);
      const expected = i < sent.length ? sent[i]!.bytes : Buffer.from("after\n");
      expect(sha256(await readFile(path))).toBe(sha256(expected));
    }
    const paths = await allPaths(base);
    expect(paths.filter((p) => !p.startsWith("sandbox/uploads/"))).toEqual([
      "sandbox",
      "sandbox/uploads",
    ]);
    expect(relay.acked).toEqual([...items, after].map((item) => item.itemId));
    expect(relay.inbox.has(bad.itemId)).toBe(true);
  });
});
