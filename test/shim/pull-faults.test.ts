// `airlock pull` under every Node runtime against the fake relay, for what the real relay cannot
// be made to do (test/shim/fake-relay.ts): hand out names it would clean, serve a file's bytes
// wrong, cut a connection, refuse one file, go away mid-pull, show the disk at each ack. The
// plain cases run against the real relay in pull.test.ts.
import { createHash, randomBytes } from "node:crypto";
import { existsSync, readFileSync, readdirSync } from "node:fs";
import { mkdtemp, readdir } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { TOKEN, startFakeRelay, type FakeRelay } from "./fake-relay";
import { RUNTIMES, failureLine, runShim, relayEnv } from "./run-shim";
import { shimScratchDir } from "./scratch-dir";

const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");

const root = shimScratchDir("airlock-shim-pull-faults-");

describe.each(RUNTIMES)("airlock pull from a faulty relay under $name", ({ node }) => {
  let relay: FakeRelay;
  /** A fresh directory per test, holding the --dir (so that escapes from it would show). */
  let base: string;
  let dir: string;

  beforeEach(async () => {
    relay = await startFakeRelay();
    base = await mkdtemp(join(root(), "t-"));
    dir = join(base, "sandbox", "uploads");
  });

  afterEach(async () => {
    relay.onCall(undefined);
    await relay.stop();
  });

  const pull = (args: string[] = []) =>
    runShim(["pull", "--dir", dir, ...args], {
      node,
      cwd: base,
      env: relayEnv(relay.url, TOKEN, 2),
    });

  it("acks each item only once its file is on disk, after its download", async () => {
    const first = relay.addInboxItem("report.pdf", randomBytes(42_000));
    const second = relay.addInboxItem("notes.txt", Buffer.from("remember the milk\n"));
    // What was on disk when each ack arrived.
    const onDiskAtAck = new Map<string, string[]>();
    relay.onCall((call) => {
      const itemId = /^\/v1\/inbox\/([^/]+)\/ack$/.exec(call.path)?.[1];
      if (itemId) onDiskAtAck.set(itemId, existsSync(dir) ? readdirSync(dir).sort() : []);
    });
    const result = await pull();
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    expect(relay.acked).toEqual([first.itemId, second.itemId]);
    expect(onDiskAtAck.get(first.itemId)).toEqual(["report.pdf"]);
    expect(onDiskAtAck.get(second.itemId)).toEqual(["notes.txt", "report.pdf"]);
    expect(relay.routes()).toEqual([
      "GET /v1/inbox",
      `GET /v1/files/${first.file.fileId}/content`,
      `POST /v1/inbox/${first.itemId}/ack`,
      `GET /v1/files/${second.file.fileId}/content`,
      `POST /v1/inbox/${second.itemId}/ack`,
    ]);
    expect(relay.calls.every((c) => c.headers.authorization === `Bearer ${TOKEN}`)).toBe(true);
  });

  it("keeps every hostile name inside --dir, as one safe component", async () => {
    const long = "é".repeat(148) + ".txt"; // 300 bytes of UTF-8.
    const hostile: [string, string][] = [
      ["../../etc/passwd", "passwd"],
      ["/abs/path", "path"],
      ["a\u0000b", "ab"],
      ["..", "file"],
      ["", "file (1)"],
      ["line one\nline two.txt", "line oneline two.txt"],
      ["..\\..\\win.ini", "win.ini"],
      [".bashrc", ".bashrc"],
      ["evil\u202egpj.exe", "evilgpj.exe"],
      [long, "é".repeat(125) + ".txt"],
    ];
    const items = hostile.map(([name], i) => relay.addInboxItem(name, Buffer.from(`file ${i}\n`)));

    const result = await pull();
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    const expectedNames = hostile.map(([, safe]) => safe);
    expect((await readdir(dir)).sort()).toEqual([...expectedNames].sort());
    for (const [i, [, safe]] of hostile.entries()) {
      expect(readFileSync(join(dir, safe), "utf8")).toBe(`file ${i}\n`);
    }
    expect(Buffer.byteLength(expectedNames.at(-1)!)).toBeLessThanOrEqual(255);
    // Nothing escaped: the --dir's parents hold only the way down to it.
    expect(await readdir(base)).toEqual(["sandbox"]);
    expect(await readdir(join(base, "sandbox"))).toEqual(["uploads"]);
    // One line per file, each naming it as written: no name breaks a line.
    const lines = result.stdout.replace(/\n$/, "").split("\n");
    expect(lines).toHaveLength(hostile.length);
    for (const [i, line] of lines.entries()) {
      const written = join(dir, expectedNames[i]!);
      expect(line).toMatch(/^\[User uploaded: .+ \(7 B\) at .+\]$/);
      expect(line.endsWith(` at ${written}]`)).toBe(true);
    }
    expect(lines[0]).toBe(`[User uploaded: passwd (7 B) at ${join(dir, "passwd")}]`);
    expect(lines[5]).toBe(
      `[User uploaded: line oneline two.txt (7 B) at ${join(dir, "line oneline two.txt")}]`,
    );
    expect(relay.acked).toEqual(items.map((item) => item.itemId));
  });

  it.each([
    ["bytes that do not match the ETag", { body: Buffer.from("tampered!!") }, "the ETag"],
    [
      "bytes that do not match the item, without an ETag",
      { body: Buffer.from("tampered!!"), etag: null },
      "the expected SHA-256",
    ],
  ])(
    "refuses %s: no file, no partial file, no ack, one line, exit 1; the others still arrive",
    async (_what, content, against) => {
      const good = Buffer.from("genuine\n");
      const bad = relay.addInboxItem("bad.bin", Buffer.from("original!!"), { content });
      const fine = relay.addInboxItem("fine.txt", good);
      const result = await pull();
      expect(result.code).toBe(1);
      expect(failureLine(result)).toBe(
        `airlock: could not pull item ${bad.itemId} (bad.bin), it stays in the inbox: ` +
          `the download of bad.bin is corrupt: its SHA-256 does not match ${against}`,
      );
      expect(result.stdout).toBe(`[User uploaded: fine.txt (8 B) at ${join(dir, "fine.txt")}]\n`);
      expect(await readdir(dir)).toEqual(["fine.txt"]);
      expect(relay.acked).toEqual([fine.itemId]);
      expect(relay.inbox.has(bad.itemId)).toBe(true);
      // Corrupt bytes are not retried.
      expect(relay.routes().filter((r) => r.includes(bad.file.fileId))).toHaveLength(1);
    },
  );

  it("refuses an ETag that disagrees with the item before writing anything", async () => {
    const other = randomBytes(64);
    const bad = relay.addInboxItem("swapped.bin", randomBytes(64), {
      content: { body: other, etag: sha256(other) },
    });
    const result = await pull();
    expect(result.code).toBe(1);
    expect(failureLine(result)).toBe(
      `airlock: could not pull item ${bad.itemId} (swapped.bin), it stays in the inbox: ` +
        "the download of swapped.bin is corrupt: its ETag does not match the expected SHA-256",
    );
    expect(await readdir(dir)).toEqual([]);
    expect(relay.acked).toEqual([]);
    expect(relay.inbox.has(bad.itemId)).toBe(true);
  });

  it("reports a file the relay refuses and carries on with the rest", async () => {
    const gone = relay.addInboxItem("gone.bin", randomBytes(10), {
      content: { refuse: { status: 410, code: "file_expired", message: "the file has expired" } },
    });
    const fine = relay.addInboxItem("fine.txt", Buffer.from("ok\n"));
    const result = await pull();
    expect(result.code).toBe(1);
    expect(failureLine(result)).toBe(
      `airlock: could not pull item ${gone.itemId} (gone.bin), it stays in the inbox: ` +
        "relay refused download of gone.bin: file_expired: the file has expired",
    );
    expect(await readdir(dir)).toEqual(["fine.txt"]);
    expect(relay.acked).toEqual([fine.itemId]);
  });

  it("leaves no partial file when one file's connection keeps dropping, and pulls the rest", async () => {
    const bytes = randomBytes(200_000);
    const cut = relay.addInboxItem("big.bin", bytes, { content: { cutAfter: 50_000 } });
    const later = relay.addInboxItem("later.txt", Buffer.from("later\n"));
    const result = await pull();
    expect(result.code).toBe(1);
    expect(failureLine(result)).toMatch(
      new RegExp(
        `^airlock: could not pull item ${cut.itemId} \\(big\\.bin\\), it stays in the inbox: ` +
          "cannot reach relay at http://127\\.0\\.0\\.1:\\d+: .+ \\(after 2 attempts\\)$",
      ),
    );
    expect(result.stdout).toBe(`[User uploaded: later.txt (6 B) at ${join(dir, "later.txt")}]\n`);
    expect(await readdir(dir)).toEqual(["later.txt"]);
    expect(relay.acked).toEqual([later.itemId]);
    expect(relay.inbox.has(cut.itemId)).toBe(true);
    expect(relay.routes().filter((r) => r.includes(cut.file.fileId))).toHaveLength(2);
    // The inbox was asked again, to tell one file's failure from a relay out of reach.
    expect(relay.routes().filter((r) => r === "GET /v1/inbox")).toHaveLength(2);
  });

  it("stops with one line when the relay goes out of reach for everything", async () => {
    const first = relay.addInboxItem("first.bin", randomBytes(100));
    relay.addInboxItem("second.bin", randomBytes(100));
    relay.onCall((call) => {
      if (call.path.endsWith("/content")) void relay.stop();
    });
    const result = await pull();
    expect(result.code).toBe(1);
    expect(failureLine(result)).toMatch(
      /^airlock: cannot reach relay at http:\/\/127\.0\.0\.1:\d+: .+ \(after 2 attempts\)$/,
    );
    expect(result.stdout).toBe("");
    expect(await readdir(dir)).toEqual([]);
    expect(relay.acked).toEqual([]);
    expect(relay.inbox.has(first.itemId)).toBe(true);
  });
});
